"""Slurm-driven reboots (slurm.reboot mode slurm): Slurm, not Ansible, rolls a driver
change through the running GPU nodes.

- RebootProgram (slurm.conf(5)): slurmd runs it once `scontrol reboot` finds the node
  idle; it logs and calls `systemctl reboot`.
- The boot step: a oneshot unit that slurmd's drop-in requires and starts after, so it
  runs before slurmd at every boot. It installs, holds and (where needed) downgrades
  to the node's pinned packages of the driver concerns, from the lists rendered per
  inventory group (exact versions of versions.lock). Pulled in on a running node (a
  slurmd restart), it changes nothing: only a boot installs.
- The roll-out script on the primary controller: `scontrol reboot ASAP
  nextstate=RESUME` over the batches `clustergen plan` prints, never more than
  max_per_partition nodes of a partition out at once, waiting for each node to return
  and stopping at one that comes back DOWN. A batch's trays of one NVLink domain are
  handed over together, in one call, once the bound has room for all of them.

Ansible mode (the default) renders none of these: site.yml's rolling play drains,
upgrades, reboots and resumes (roles/nvidia_driver).
"""

from __future__ import annotations

import jinja2

from clustergen.base.artifacts import NO_CHANGE, Artifact, Install
from clustergen.catalog.packages import CONCERNS, Concern
from clustergen.outputs.slurm.derive import REBOOT_PROGRAM, SLURM_ETC
from clustergen.resolve import ResolvedCluster
from clustergen.spec.hosts import compress
from clustergen.templating import render_template

BOOT_LISTS = "/etc/clustergen/boot-packages"  # <group>.list, one per inventory group
BOOT_SCRIPT = "/usr/local/sbin/clustergen-boot-packages"
BOOT_UNIT = "clustergen-boot-packages.service"
BOOT_DROPIN = "/etc/systemd/system/slurmd.service.d/clustergen-boot-packages.conf"
ROLLOUT_SCRIPT = f"{SLURM_ETC}/clustergen-reboot-rollout.sh"


def boot_concerns() -> list[Concern]:
    """The concerns whose change needs the reboot Slurm rolls: the NVIDIA driver and what
    moves with it (the fabric manager, IMEX). Lustre servers are no Slurm nodes."""
    return [c for c in CONCERNS if c.name == "nvidia_driver" or c.with_driver]


def render(cluster: ResolvedCluster, env: jinja2.Environment) -> list[Artifact]:
    """The RebootProgram, the boot step (script, unit, slurmd's drop-in, the package
    lists) and the roll-out script; nothing in ansible mode."""
    reboot = cluster.spec.slurm.reboot
    if reboot is None or reboot.mode != "slurm":
        return []
    family = cluster.pins.family
    artifacts = []
    for name, dest, mode in (
        ("clustergen-reboot.sh", REBOOT_PROGRAM, 0o755),
        ("clustergen-boot-packages", BOOT_SCRIPT, 0o755),
        (BOOT_UNIT, f"/etc/systemd/system/{BOOT_UNIT}", 0o644),
        ("slurmd-boot-packages.conf", BOOT_DROPIN, 0o644),
    ):
        text = render_template(
            env,
            f"slurm/{name}.j2",
            cluster,
            family=family,
            lists=BOOT_LISTS,
            script=BOOT_SCRIPT,
            unit=BOOT_UNIT,
        )
        # A new boot step acts at the next boot, which the roll-out brings: nothing now.
        install = Install(dest, "compute", NO_CHANGE, mode=mode)
        artifacts.append(Artifact(f"slurm/{name}", text, mode=mode, install=install))
    artifacts += _package_lists(cluster, env)
    text = render_template(
        env,
        "slurm/reboot-rollout.sh.j2",
        cluster,
        bound=reboot.max_per_partition,
        driver=cluster.spec.software.nvidia_driver,
        timeout_s=reboot.timeout_s,
        domains=[(d.name, compress(list(d.nodes))) for _, d in cluster.nvlink_domain_groups],
    )
    install = Install(ROLLOUT_SCRIPT, "slurm_controller", NO_CHANGE, mode=0o750)
    artifacts.append(Artifact("slurm/reboot-rollout.sh", text, mode=0o755, install=install))
    return artifacts


def _package_lists(cluster: ResolvedCluster, env: jinja2.Environment) -> list[Artifact]:
    """One list per inventory group of the driver concerns: `name version` lines, the
    exact versions of versions.lock, sorted."""
    by_group: dict[str, dict[str, str]] = {}
    for concern in boot_concerns():
        pins = cluster.pins.by_concern.get(concern.name) or {}
        if pins:
            by_group.setdefault(concern.group, {}).update(pins)
    artifacts = []
    for group, pins in sorted(by_group.items()):
        member_set = cluster.members.get(group, frozenset())
        members = [h.name for h in cluster.hosts if h.name in member_set]
        text = render_template(
            env,
            "slurm/boot-packages.list.j2",
            cluster,
            group=group,
            nodes=compress(members) if members else "",
            packages=sorted(pins.items()),
        )
        install = Install(f"{BOOT_LISTS}/{group}.list", group, NO_CHANGE)
        artifacts.append(Artifact(f"slurm/boot-packages/{group}.list", text, install=install))
    return artifacts
