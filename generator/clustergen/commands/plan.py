"""`clustergen plan`: what applying a spec's render to the running cluster means.

The plan compares what the spec renders with the tree on disk (the last applied
render) and says, most severe first, what each difference needs on the nodes:
nothing, `scontrol reconfigure`, a restart of a named service on named nodes, a
rolling upgrade (drain, install, reboot, resume) in batches, a remount, or a
DESTRUCTIVE reformat. It knows no family's files: every rendered artifact declares
its install metadata (group, destination, what a change needs), the old tree's
manifest keeps that metadata for files no longer rendered, and each package
concern declares what a new version needs. It writes nothing. What it reads of the
applied tree, plan_tree.py reads; plan_text.py prints the plan.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clustergen.base.artifacts import SEVERITY, Artifact, NodeChange, PlanAction
from clustergen.base.errors import ClustergenError, ExitCode
from clustergen.catalog.packages import CONCERNS, Concern
from clustergen.catalog.slurm_releases import release_name, upgrade_steps
from clustergen.catalog.versions import VersionTuple, parse_version
from clustergen.commands.plan_tree import (
    AppliedManifest,
    applied_hosts,
    applied_lock,
    lock_packages,
)
from clustergen.outputs import FAMILIES
from clustergen.resolve import ResolvedCluster
from clustergen.write.changes import FileChange, file_changes
from clustergen.write.manifest import MANIFEST, Installed, listed
from clustergen.write.tree import Tree


@dataclass
class Step:
    action: PlanAction
    service: str | None
    target: str | None  # the path a remount or reformat acts on
    nodes: set[str] = field(default_factory=set)
    reasons: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class PackageChange:
    title: str  # the concern's, e.g. "NVIDIA driver"
    package: str
    old: str | None  # None: newly pinned
    new: str | None  # None: no longer pinned

    def described(self) -> str:
        return f"{self.title}: {self.versions()}"

    def versions(self) -> str:
        if self.old is None:
            return f"{self.package} {self.new} (newly pinned)"
        return f"{self.package} {self.old} -> {self.new}"


@dataclass
class Plan:
    spec: str
    tree: str
    steps: list[Step]
    rollout: list[PackageChange]  # packages whose new version needs a reboot, node by node
    batches: list[list[str]]
    # Per batch, the NVLink domains it takes whole (empty for a batch of other GPU nodes).
    batch_domains: list[list[str]]
    added: list[str]
    removed: list[str]
    tree_only: list[str]  # files that change in the tree but need nothing on nodes
    # Repositories the spec marks trusted: true (no signature check, or plain http://),
    # said on every plan, whatever it changes and whatever warnings are ignored.
    trusted: list[str] = field(default_factory=list)
    # slurm.reboot: who rolls the batches (ansible: site.yml; slurm: scontrol reboot),
    # and in slurm mode the bound on nodes out per partition.
    reboot_mode: str = "ansible"
    max_per_partition: int | None = None

    @property
    def rolling_domains(self) -> int:
        """How many NVLink domains have trays that roll."""
        return sum(map(len, self.batch_domains))

    @property
    def destructive(self) -> bool:
        return any(step.action == "reformat" for step in self.steps)

    @property
    def exit_code(self) -> ExitCode:
        if self.destructive:
            return ExitCode.PLAN_DESTRUCTIVE
        if self.steps or self.batches or self.added or self.removed:
            return ExitCode.PLAN_CHANGES
        return ExitCode.OK


def make_plan(
    cluster: ResolvedCluster,
    files: dict[str, Artifact],
    out_dir: Path,
    batch_size: int = 1,
    domains_per_batch: int = 1,
    *,
    compared: list[FileChange] | None = None,
) -> Plan:
    """What writing files (render_all's, with their manifest) over the tree in out_dir
    means on the nodes; `compared`: `write.compare(out_dir, files)` where the caller
    has made it already."""
    order = {host.name: index for index, host in enumerate(cluster.hosts)}
    old_hosts = applied_hosts(out_dir)
    steps = _Steps(cluster, old_hosts)
    tree_only = _file_steps(steps, files, out_dir, compared)
    rollout, rolling_nodes = _package_changes(steps, cluster, out_dir, tree_only)
    rolling = sorted(rolling_nodes, key=order.__getitem__)
    batches, batch_domains = driver_batches(cluster, rolling, batch_size, domains_per_batch)
    added, removed = _membership_changes(cluster, old_hosts, order)
    reboot = cluster.spec.slurm.reboot
    return Plan(
        spec=cluster.spec_name,
        tree=str(out_dir),
        steps=steps.ordered(),
        rollout=rollout,
        batches=batches,
        batch_domains=batch_domains,
        added=added,
        removed=removed,
        tree_only=tree_only,
        trusted=_trusted_repositories(cluster),
        reboot_mode=reboot.mode if reboot else "ansible",
        max_per_partition=reboot.max_per_partition if reboot else None,
    )


def driver_batches(
    cluster: ResolvedCluster, rolling: list[str], batch_size: int, domains_per_batch: int
) -> tuple[list[list[str]], list[list[str]]]:
    """The driver roll-out's batches as site.yml's roll-out play walks them: the rolling
    trays of each NVLink domain together (domains_per_batch domains a batch, the domains
    by their inventory group's name), then the other rolling GPU nodes, batch_size at a
    time, in spec order. Returns the batches and, per batch, the domains it takes."""
    wanted = set(rolling)
    domains = [
        (domain.name, [n for n in domain.nodes if n in wanted])
        for _, domain in cluster.nvlink_domain_groups
    ]
    rolled = [(name, nodes) for name, nodes in domains if nodes]
    batches: list[list[str]] = []
    names: list[list[str]] = []
    for i in range(0, len(rolled), domains_per_batch):
        chunk = rolled[i : i + domains_per_batch]
        batches.append([n for _, nodes in chunk for n in nodes])
        names.append([name for name, _ in chunk])
    in_domains = {n for _, nodes in rolled for n in nodes}
    others = [n for n in rolling if n not in in_domains]
    for i in range(0, len(others), batch_size):
        batches.append(others[i : i + batch_size])
        names.append([])
    return batches, names


class _Steps:
    """The plan's steps as the changes call for them: one per action and service (and
    target, for a reformat), with the nodes it acts on and each change's reason."""

    def __init__(self, cluster: ResolvedCluster, old_hosts: set[str]) -> None:
        self.cluster = cluster
        self.old_hosts = old_hosts
        self.by_key: dict[tuple[str, str | None, str | None], Step] = {}
        # A service's restart or reconfigure acts on the nodes that run it, as the roles'
        # handlers do: slurmd on the compute nodes, slurmctld on the controllers, however
        # many other nodes receive the file that changed. The first concern that restarts a
        # service is the service's own (slurm_compute for slurmd); a later one installed on
        # more nodes (slurm_pmix, on every Slurm node) does not widen it.
        self.runs_on: dict[str | None, str] = {}
        for concern in CONCERNS:
            if concern.change.action == "restart":
                self.runs_on.setdefault(concern.change.service, concern.group)

    def members(self, group: str) -> frozenset[str]:
        """The group's nodes that run now: new nodes get everything at their bring-up."""
        nodes = self.cluster.members.get(group, frozenset())
        return nodes & self.old_hosts if self.old_hosts else nodes

    def add(
        self,
        action: PlanAction,
        service: str | None,
        target: str | None,
        nodes: Iterable[str],
        reason: str,
    ) -> None:
        key_target = target if action in ("reformat", "format") else None
        key = (action, service, key_target)
        entry = self.by_key.setdefault(key, Step(action, service, key_target))
        group = self.runs_on.get(service) if action in ("restart", "reconfigure") else None
        entry.nodes.update(nodes if group is None else self.members(group).intersection(nodes))
        entry.reasons.append(reason)

    def ordered(self) -> list[Step]:
        """The steps, most severe first."""
        steps = self.by_key
        # The role skips a daemon's reconfigure once it restarted: it read the new files then.
        for key, entry in list(steps.items()):
            restart = steps.get(("restart", entry.service, None))
            if entry.action == "reconfigure" and restart is not None:
                restart.nodes |= entry.nodes
                restart.reasons += [f"{r}: read as {entry.service} restarts" for r in entry.reasons]
                del steps[key]
        return sorted(
            steps.values(),
            key=lambda s: (SEVERITY.index(s.action), s.service or "", s.target or ""),
        )


def _file_steps(
    steps: _Steps, files: dict[str, Artifact], out_dir: Path, compared: list[FileChange] | None
) -> list[str]:
    """Adds the steps the tree's changed, new and removed files need; returns the lines of
    the files that need nothing on the nodes."""
    entries = listed(out_dir)  # the applied manifest, read once for both uses
    applied = AppliedManifest.of({path: entry.installed for path, entry in entries.items()})
    previous = {path: entry.digest for path, entry in entries.items()}
    tree_only = []
    changes = file_changes(
        out_dir, files, adopt=True, families=FAMILIES, previous=previous, compared=compared
    )
    for change in changes:
        if change.action == "unchanged" or change.path == MANIFEST:
            continue
        if change.action == "keep":
            tree_only.append(
                f"{change.path} (no longer rendered; left alone, as it is not what clustergen "
                "wrote there)"
            )
        elif change.action == "remove":
            _removed_file(steps, change.path, applied.manifest.get(change.path), tree_only)
        else:
            created = change.action == "create"
            _rendered_file(steps, files, out_dir, change.path, created, applied, tree_only)
    return tree_only


def _removed_file(
    steps: _Steps, path: str, installed: Installed | None, tree_only: list[str]
) -> None:
    """A file no longer rendered: its installed copy stays, and what it needed is said."""
    if installed is None:
        tree_only.append(f"{path} (removed)")
    elif installed.change.action == "nothing":
        tree_only.append(
            f"{path} (removed; the copy installed at {installed.dest} stays until removed by hand)"
        )
    else:
        change = installed.change
        steps.add(
            change.action,
            change.service,
            installed.dest,
            steps.members(installed.group),
            f"{path} is no longer rendered; the copy installed at "
            f"{installed.dest} stays until removed by hand",
        )


def _rendered_file(
    steps: _Steps,
    files: dict[str, Artifact],
    out_dir: Path,
    path: str,
    created: bool,
    applied: AppliedManifest,
    tree_only: list[str],
) -> None:
    """A new or changed file: the step its install declares, or a line where none."""
    install = files[path].install
    state = "new" if created else "changed"
    if install is None:
        tree_only.append(f"{path} ({state})")
        return
    change = install.change
    stood_for = applied.stood_for.get(change)
    if created and _recorded_for_an_unchanged_target(out_dir, files, stood_for):
        tree_only.append(
            f"{path} (new, installed at {install.dest}: what decides the format "
            "of a target that is formatted already, and whose format is unchanged)"
        )
    elif change.action == "nothing":
        tree_only.append(f"{path} ({state}, installed at {install.dest} as is)")
    else:
        action = _new_target_or_mount(change, created, stood_for, install.dest, applied)
        action = action or change.action
        # A new target is formatted on its nodes, new ones too: the reviewer sees every
        # format, where a running node's other files wait for its bring-up.
        nodes = (
            steps.cluster.members.get(install.group, frozenset())
            if action == "format"
            else steps.members(install.group)
        )
        steps.add(
            action,
            change.service,
            install.dest,
            nodes if install.hosts is None else nodes & set(install.hosts),
            f"{path} {state} (installed at {install.dest}"
            + (f"; {install.served})" if install.served else ")"),
        )


def _new_target_or_mount(
    change: NodeChange, created: bool, stood_for: str | None, dest: str, applied: AppliedManifest
) -> PlanAction | None:
    """'format' for a target no file of the applied tree stood for, 'mount' for a mount
    installed where none was: creation, not destruction. None: the change's own action."""
    if not created:
        return None
    if change.action == "reformat" and stood_for is None:
        return "format"
    if change.action == "remount" and dest not in applied.dests:
        return "mount"
    return None


def _package_changes(
    steps: _Steps, cluster: ResolvedCluster, out_dir: Path, tree_only: list[str]
) -> tuple[list[PackageChange], set[str]]:
    """Adds the steps the pinned packages' new versions need, and the lines of those that
    need nothing to tree_only; returns the roll-out's packages and its nodes."""
    old_lock = applied_lock(out_dir)
    _refuse_slurm_upgrade_skipping_releases(old_lock, cluster.spec.software.slurm)
    rollout: list[PackageChange] = []
    rolling_nodes: set[str] = set()
    others: list[tuple[Concern, list[PackageChange]]] = []
    for concern in CONCERNS:
        if not cluster.members.get(concern.group):
            continue  # no node gets it: the lock lists no group without nodes
        old_packages = lock_packages(old_lock, concern.group)
        new_packages = cluster.pins.by_concern[concern.name]
        changed = [
            PackageChange(concern.title, name, old_packages.get(name), version)
            for name, version in sorted(new_packages.items())
            if old_lock is not None and old_packages.get(name) != version
        ]
        if not changed:
            continue
        if concern.rolled_out:
            rollout += changed
            rolling_nodes |= steps.members(concern.group)
        else:
            others.append((concern, changed))
    for concern, changed in others:
        running = set(steps.members(concern.group))
        described = ", ".join(p.described() for p in changed)  # each names its concern
        # Installed in the roll-out's batches, before their reboot: nothing more there.
        rolled = running & rolling_nodes if concern.with_driver else set()
        if rolled:
            rollout += changed
            running -= rolled
        if concern.change.action != "nothing" and running:
            steps.add(concern.change.action, concern.change.service, None, running, described)
        elif running:
            # Installed by site.yml all the same: an action, with what it changes for jobs.
            for package in changed:
                steps.add("install", concern.name, None, running, package.versions())
            steps.add("install", concern.name, None, running, concern.takes_effect)
        elif not rolled:
            tree_only.append(described)
    return rollout, rolling_nodes


def _membership_changes(
    cluster: ResolvedCluster, old_hosts: set[str], order: dict[str, int]
) -> tuple[list[str], list[str]]:
    """The nodes the spec adds (in its order) and removes, against the old inventory
    (none either way where the tree has none)."""
    if not old_hosts:
        return [], []
    new_names = {host.name for host in cluster.hosts}
    return sorted(new_names - old_hosts, key=order.__getitem__), sorted(old_hosts - new_names)


def _trusted_repositories(cluster: ResolvedCluster) -> list[str]:
    """One line per trusted repository: what the nodes accept from it unchecked."""
    lines = []
    for repository in cluster.spec.software.repositories:
        if not repository.trusted:
            continue
        waived = []
        if repository.key_url is None:
            waived.append("no signature check")
        if repository.url.startswith("http://"):
            waived.append("plain http://")
        if (
            repository.key_url is not None
            and repository.key_url.startswith("http://")
            and repository.key_fingerprint is None
        ):
            waived.append("its key over plain http:// without a fingerprint")
        what = (
            ", ".join(waived) if waived else "signed and fetched securely; trusted waives nothing"
        )
        lines.append(f"`{repository.name}` ({repository.url}): {what}")
    return lines


class UpgradeRefused(ClustergenError):
    """An upgrade Slurm cannot make in one step (exit 1)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, ExitCode.INVALID_SPEC)


# The Slurm groups of versions.lock, the controller's first (its state is converted).
_SLURM_GROUPS = ("slurm_controller", "slurm_dbd", "compute", "login")


def _running_slurm(lock: Any) -> VersionTuple | None:
    """The Slurm release the old tree pinned: '23.11' of slurm-smd 23.11.10-1 (or of an
    epoch:version, or a distribution's 22.05.8-*)."""
    for group in _SLURM_GROUPS:
        for name, version in sorted(lock_packages(lock, group).items()):
            found = re.match(r"(?:\d+:)?(\d+)\.(\d+)\.", version)
            if "slurm" in name and found:
                return int(found[1]), int(found[2])
    return None


def _refuse_slurm_upgrade_skipping_releases(old_lock: Any, pinned: str) -> None:
    """slurmdbd and slurmctld convert state from the two releases before theirs (three from
    24.11 on); a wider step fails at startup and loses the running jobs and accounting
    (SchedMD's Upgrade Guide), so the plan names the releases to go through instead."""
    old = _running_slurm(old_lock)
    new = parse_version(pinned)[:2]
    if old is None or new <= old:
        return
    steps = upgrade_steps(old, new)
    if steps == [new]:
        return
    via = (
        "upgrade through "
        + " -> ".join(release_name(v) for v in [old, *steps])
        + ", applying and checking each step before the next"
        if steps
        else "no release clustergen knows converts it"
    )
    raise UpgradeRefused(
        f"Slurm {release_name(old)} -> {release_name(new)} skips more releases than "
        f"slurmdbd and slurmctld {release_name(new)} convert state from, so they would stop at "
        f"startup and the running jobs and accounting records would be lost: {via} "
        "(one spec change and plan per step; docs/slurm.md)"
    )


def _recorded_for_an_unchanged_target(
    out_dir: Path, files: dict[str, Artifact], stood_for: str | None
) -> bool:
    """Whether the file that stood for a target's reformat in the old tree (its format
    script, before the target had an identity file) is rendered again with the same
    commands: comments and headers aside, nothing that decides the format changed, so
    the new identity file records the target's format and plans no reformat."""
    if stood_for is None or stood_for not in files:
        return False
    with Tree(out_dir) as tree:
        found = tree.read(stood_for)  # a link there is refused, never followed
    if found is None:
        return False
    try:
        old = found[0].decode("utf-8")
    except UnicodeDecodeError:
        return False
    return _commands(old) == _commands(files[stood_for].text)


def _commands(script: str) -> list[str]:
    return [line for line in script.splitlines() if line.strip() and not line.startswith("#")]
