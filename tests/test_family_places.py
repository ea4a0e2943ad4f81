"""The places a family's installed files need beyond its own module, checked from the
family's declarations (each artifact's `Install`), each failure naming the place.

An installed artifact of family F, for inventory group G, whose change notifies H:
- a role includes rendered_files with `rendered_files_family: F` (roles/<role>/tasks/);
- a play of site.yml runs that role on every node of G, narrowed to clustergen_converge;
- where F converges alone (clustergen_state_partial_families), every play that runs that
  role also takes the nodes of clustergen_family_F, or a release that changes only F's
  files would record the node without it;
- a role of that play defines the handler H (roles/<role>/handlers/main.yml);
- a service it restarts is in the converge check's `clustergen_state_services`
  (roles/clustergen_state/vars/main.yml), or a stopped one goes unnoticed;
- F is in `UNINSTALLED` exactly when none of its files is installed.
docs/architecture.md ("Adding an output family") lists what stays hand-written.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from clustergen.base.artifacts import Artifact, Install, NodeChange
from clustergen.catalog.packages import CONCERNS, PIN_PLAYS
from clustergen.outputs import FAMILIES, OWN_ROLE, UNINSTALLED
from clustergen.outputs.ansible.files import FAMILIES_HANDLER, FAMILIES_ROLE, handler_name
from clustergen.render import render_families
from clustergen.spec.load import load_spec
from clustergen.templating import environment
from clustergen.validate import validate_cluster

from support.paths import DATA, EXAMPLES, REFERENCE_SPECS, REPO

# The repository's own files: the fast matrix leaves this to the main run.
pytestmark = pytest.mark.repository

ROLES = REPO / "roles"
CONVERGE_VARS = "roles/clustergen_state/vars/main.yml"
_GROUP = re.compile(r"groups\['([^']+)'\]")
_FAMILY_GROUP = "clustergen_family_"
_CONVERGE_GROUPS = ("clustergen_converge", "clustergen_partial", "clustergen_partial_families")
_FAMILY = re.compile(r"^\s*rendered_files_family:\s*(\S+)\s*$", re.MULTILINE)
# Services a rendered file restarts that no role starts, each with why the converge check
# need not watch it.
NOT_STARTED = {
    # The node's own ssh daemon (ssh on Debian and Ubuntu, where 24.04 starts it from
    # ssh.socket, sshd on EL): the slurm role restarts it for its UsePAM drop-in but
    # neither enables nor starts it, and Ansible reaches the node through it, so a
    # stopped one is loud, not silent drift.
    "sshd": "the operating system's",
}
_SERVICE = re.compile(r"'name': '([^']+)'")
_TASK_LISTS = ("pre_tasks", "tasks", "post_tasks")


@dataclass(frozen=True)
class Play:
    name: str
    group: str | None  # the inventory group its hosts come from; None: every node
    converge_only: bool  # its hosts are narrowed to clustergen_converge
    roles: tuple[str, ...]  # every role it imports (their handlers are the play's)
    runs: tuple[str, ...]  # the roles whose main tasks it runs (not `tasks_from` another file)
    families: frozenset[str] = frozenset()  # F of each clustergen_family_F its hosts take
    partial_families: bool = False  # its hosts take clustergen_partial_families


@dataclass(frozen=True)
class Site:
    plays: tuple[Play, ...]
    installs: Mapping[str, frozenset[str]]  # role -> the families it installs
    handlers: Mapping[str, frozenset[str]]  # role -> its handlers' names and listen topics
    services: frozenset[str]  # clustergen_state_services
    partial: frozenset[str] = frozenset()  # clustergen_state_partial_role_families


def _play_roles(play: Mapping[str, Any], main_only: bool) -> tuple[str, ...]:
    names = [r["role"] if isinstance(r, dict) else r for r in play.get("roles", [])]
    for key in _TASK_LISTS:
        for task in play.get(key, []):
            for module in ("ansible.builtin.import_role", "ansible.builtin.include_role"):
                role = task.get(module)
                if role is not None and not (
                    main_only and role.get("tasks_from", "main") != "main"
                ):
                    names.append(role["name"])
    return tuple(names)


def _play(play: Mapping[str, Any]) -> Play:
    hosts = str(play["hosts"])
    found = _GROUP.findall(hosts)
    groups = [g for g in found if g not in _CONVERGE_GROUPS and not g.startswith(_FAMILY_GROUP)]
    return Play(
        play["name"],
        groups[0] if groups else None,
        "clustergen_converge" in hosts,
        _play_roles(play, main_only=False),
        _play_roles(play, main_only=True),
        frozenset(g.removeprefix(_FAMILY_GROUP) for g in found if g.startswith(_FAMILY_GROUP)),
        "clustergen_partial_families" in found,
    )


def _role_handlers(role: Path) -> frozenset[str]:
    path = role / "handlers" / "main.yml"
    handlers = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else None
    names = set()
    for handler in handlers or []:
        names.add(handler["name"])
        listen = handler.get("listen", [])
        names.update([listen] if isinstance(listen, str) else listen)
    return frozenset(names)


@cache
def site(root: Path = REPO) -> Site:
    roles = [path for path in sorted((root / "roles").iterdir()) if path.is_dir()]
    installs = {
        role.name: frozenset(
            family
            for tasks in sorted((role / "tasks").glob("*.yml"))
            for family in _FAMILY.findall(tasks.read_text(encoding="utf-8"))
        )
        for role in roles
    }
    playbook = yaml.safe_load((root / "site.yml").read_text(encoding="utf-8"))
    converge = (root / CONVERGE_VARS).read_text(encoding="utf-8")
    services_text = converge.split("clustergen_state_services:", 1)[1].split("\n\n", 1)[0]
    return Site(
        tuple(_play(play) for play in playbook),
        installs,
        {role.name: _role_handlers(role) for role in roles},
        frozenset(_SERVICE.findall(services_text)),
        frozenset(yaml.safe_load(converge)["clustergen_state_partial_role_families"]),
    )


def partial_problems(the_site: Site, pin_plays: Mapping[str, str] = PIN_PLAYS) -> list[str]:
    """Where a partial converge (a release that changes only some families' files or
    some concerns' pins) would skip a play it needs, or names a family no play
    converges."""
    problems = []
    for role, family in sorted(pin_plays.items()):
        if family not in the_site.partial:
            problems.append(
                f"PIN_PLAYS names family {family} for role {role}'s pins, but "
                f"clustergen_state_partial_role_families in {CONVERGE_VARS} does not"
            )
        for play in the_site.plays:
            if role in play.runs and play.converge_only and family not in play.families:
                problems.append(
                    f"play {play.name!r} of site.yml runs role {role}, whose pins converge "
                    f"with family {family} (PIN_PLAYS), but its hosts do not take "
                    f"groups['{_FAMILY_GROUP}{family}']: a release that changes only those "
                    "pins would record its nodes without the play"
                )
    installed = frozenset().union(*the_site.installs.values())
    for family in sorted(the_site.partial - installed):
        problems.append(
            f"clustergen_state_partial_role_families in {CONVERGE_VARS} names {family}, "
            "which no role installs (rendered_files_family)"
        )
    # The driver role asserts that the plan (its tasks_from plan.yml, a play of its own
    # before the roll-out) ran on the node: a play that runs it for a family's files
    # needs the plan's play to take that family's nodes too.
    plans = [p for p in the_site.plays if "nvidia_driver" in p.roles and not p.runs]
    planned = frozenset().union(*(p.families for p in plans)) if plans else frozenset()
    for play in the_site.plays:
        if "nvidia_driver" in play.runs:
            for family in sorted(play.families - planned):
                problems.append(
                    f"play {play.name!r} of site.yml runs role nvidia_driver for family "
                    f"{family}'s files, but the driver plan's play does not take "
                    f"groups['{_FAMILY_GROUP}{family}']: the role's check that the plan ran "
                    "would fail the node"
                )
    for play in the_site.plays:
        for family in sorted(play.families - the_site.partial):
            problems.append(
                f"play {play.name!r} of site.yml takes clustergen_family_{family}, but "
                f"clustergen_state_partial_role_families in {CONVERGE_VARS} does not name "
                f"{family}"
            )
        for role in play.runs:
            for family in sorted(the_site.installs.get(role, frozenset()) & the_site.partial):
                if family not in play.families:
                    problems.append(
                        f"play {play.name!r} of site.yml runs role {role}, which installs "
                        f"family {family}, but its hosts do not take "
                        f"groups['{_FAMILY_GROUP}{family}']: a release that changes only "
                        f"{family}'s files would record its nodes without the play"
                    )
    return problems


def _covered(
    play: Play, members: Mapping[str, frozenset[str]], every: frozenset[str]
) -> frozenset[str]:
    return every if play.group is None else members.get(play.group, frozenset())


def _started(artifacts: Sequence[Artifact]) -> frozenset[str]:
    """The units the artifacts start, by unit name and, for a service, also without
    its suffix (as a change names it)."""
    units = {a.install.dest.rpartition("/")[2] for a in artifacts if a.install and a.install.start}
    return frozenset(units | {u.removesuffix(".service") for u in units})


def _service_problems(
    what: str, change: NodeChange, the_site: Site, started: frozenset[str]
) -> list[str]:
    if (
        change.action == "restart"
        and change.service not in the_site.services
        and change.service not in NOT_STARTED
        and change.service not in started
    ):
        return [
            f"{what} restarts service {change.service}, but clustergen_state_services in "
            f"{CONVERGE_VARS} does not list it, so a no-op run would miss it stopped"
        ]
    return []


def _roleless_problems(
    family: str, what: str, install: Install, the_site: Site, started: frozenset[str]
) -> list[str]:
    """A family without a role of its own: the families role installs it, on every
    node that converges, and defines its one handler."""
    problems = [
        f"{what}: family {family} has no role of its own (OWN_ROLE), but "
        f"roles/{role}/tasks/ include rendered_files with `rendered_files_family: {family}`: "
        "declare OWN_ROLE = True in its module, or remove the include"
        for role, families in sorted(the_site.installs.items())
        if family in families
    ]
    plays = [p for p in the_site.plays if FAMILIES_ROLE in p.runs]
    if not any(p.group is None and p.converge_only and p.partial_families for p in plays):
        problems.append(
            f"{what}: no play of site.yml runs role {FAMILIES_ROLE} on every node that "
            "converges and every node whose files of such a family changed (hosts: "
            "groups['clustergen_converge'] + groups['clustergen_partial_families'])"
        )
    if handler_name(install, own_role=False) and FAMILIES_HANDLER not in the_site.handlers.get(
        FAMILIES_ROLE, ()
    ):
        problems.append(
            f"{what} notifies {FAMILIES_HANDLER!r}, which roles/{FAMILIES_ROLE}/handlers/main.yml "
            "does not define"
        )
    return problems + _service_problems(what, install.change, the_site, started)


def _artifact_problems(
    family: str,
    artifact: Artifact,
    install: Install,
    the_site: Site,
    members: Mapping[str, frozenset[str]],
    started: frozenset[str] = frozenset(),
    own_role: bool = True,
) -> list[str]:
    what = f"{artifact.path} (family {family}, group {install.group})"
    if not own_role:
        return _roleless_problems(family, what, install, the_site, started)
    roles = sorted(role for role, families in the_site.installs.items() if family in families)
    if not roles:
        return [
            f"{what} is installed, but no role includes rendered_files with "
            f"`rendered_files_family: {family}` (roles/<role>/tasks/main.yml)"
        ]
    every = frozenset().union(*members.values())
    plays = [p for p in the_site.plays if set(p.runs) & set(roles)]
    problems = [
        f"{what}: play {p.name!r} of site.yml runs role {', '.join(roles)} on hosts not "
        "narrowed to clustergen_converge (select('in', groups['clustergen_converge'] ...))"
        for p in plays
        if not p.converge_only
    ]
    wanted = members.get(install.group, frozenset())
    if install.hosts is not None:
        wanted &= frozenset(install.hosts)
    missed = wanted - frozenset().union(*(_covered(p, members, every) for p in plays))
    if missed:
        problems.append(
            f"{what}: no play of site.yml runs role {' or '.join(roles)} on "
            f"{', '.join(sorted(missed))} (a play whose hosts are groups['{install.group}'])"
        )
    handler = handler_name(install)
    for play in plays:
        if handler is None or not _covered(play, members, every) & wanted:
            continue
        if not any(handler in the_site.handlers.get(role, ()) for role in play.roles):
            problems.append(
                f"{what} notifies {handler!r}, but no role of play {play.name!r} in site.yml "
                f"({', '.join(play.roles)}) defines it: add a {handler!r} handler to "
                f"roles/{roles[0]}/handlers/main.yml"
            )
    return problems + _service_problems(what, install.change, the_site, started)


def place_problems(
    by_family: Mapping[str, Sequence[Artifact]],
    members: Mapping[str, frozenset[str]],
    the_site: Site,
    uninstalled: frozenset[str] = UNINSTALLED,
    own_role: frozenset[str] = OWN_ROLE,
) -> list[str]:
    """Every place an installed artifact needs and the site lacks, named."""
    problems = []
    for family, artifacts in sorted(by_family.items()):
        started = _started(artifacts)
        for artifact in artifacts:
            install = artifact.install
            if install is None:
                continue
            if family in uninstalled:
                problems.append(
                    f"{artifact.path} is installed, but family {family} is in UNINSTALLED "
                    "(generator/clustergen/outputs/__init__.py)"
                )
                continue
            problems += _artifact_problems(
                family, artifact, install, the_site, members, started, family in own_role
            )
    return sorted(set(problems))


# The golden specs: between them every family that installs files (test below).
SPECS = [*REFERENCE_SPECS, DATA / "mixed-fleet.yaml", DATA / "nvlink-2domain.yaml"]


@cache
def _rendered(spec: Path) -> tuple[Mapping[str, Sequence[Artifact]], Mapping[str, frozenset[str]]]:
    cluster, problems = validate_cluster(load_spec(str(spec)))
    assert cluster is not None, [p.format() for p in problems]
    return render_families(cluster, environment(), FAMILIES), cluster.members


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.stem)
def test_every_installed_file_has_its_role_play_handler_and_service(spec: Path) -> None:
    by_family, members = _rendered(spec)
    problems = place_problems(by_family, members, site())
    assert not problems, "\n".join(problems)


def test_every_installed_family_is_rendered_by_a_spec_here() -> None:
    """So the test above sees every family that installs files."""
    seen = {
        family
        for spec in SPECS
        for family, a in _rendered(spec)[0].items()
        if any(x.install for x in a)
    }
    assert seen == set(FAMILIES) - UNINSTALLED


# --- and back: a place without its family ---------------------------------------------

_NOTIFY_KEYS = ("notify", "pinned_packages_notify")


def _notified_in(data: Any, found: set[str]) -> None:
    if isinstance(data, dict):
        for key, value in data.items():
            if key in _NOTIFY_KEYS:
                found.update([value] if isinstance(value, str) else value)
            else:
                _notified_in(value, found)
    elif isinstance(data, list):
        for item in data:
            _notified_in(item, found)


def _code_changes(root: Path) -> list[NodeChange]:
    """Every NodeChange the code writes with literal arguments (a family's constants,
    the package concerns'): the changes a render can name, whatever the spec."""
    changes = []
    for path in sorted((root / "generator" / "clustergen").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "NodeChange"):
                continue
            args = [a.value for a in node.args if isinstance(a, ast.Constant)]
            if len(args) == len(node.args) and args:
                changes.append(NodeChange(*args))
    return changes


def notified(root: Path = REPO, rendered: Sequence[Artifact] = ()) -> frozenset[str]:
    """What anything notifies: the roles' tasks, vars and handlers (`notify`, and the
    pinned_packages role's `pinned_packages_notify`), every change the code names, the
    rendered artifacts', and the families role's handler."""
    found: set[str] = {FAMILIES_HANDLER}
    for path in sorted((root / "roles").glob("*/*/*.yml")):
        _notified_in(yaml.safe_load(path.read_text(encoding="utf-8")), found)
    installs = [Install("/x", "g", c) for c in _code_changes(root)]
    installs += [a.install for a in rendered if a.install is not None]
    found.update(h for h in map(handler_name, installs) if h is not None)
    return frozenset(found)


def stale_places(
    the_site: Site, root: Path = REPO, live: frozenset[str] | None = None
) -> list[str]:
    """Every place that names a family, handler or service nothing has any more."""
    live = notified(root) if live is None else live
    problems = [
        f"roles/{role}/tasks/ include rendered_files with `rendered_files_family: {family}`, "
        "but no family of generator/clustergen/outputs/ with OWN_ROLE = True has that name"
        for role, families in sorted(the_site.installs.items())
        for family in sorted(families - OWN_ROLE)
    ]
    for path in sorted((root / "roles").glob("*/handlers/main.yml")):
        for handler in yaml.safe_load(path.read_text(encoding="utf-8")) or []:
            listen = handler.get("listen", [])
            names = {handler["name"], *([listen] if isinstance(listen, str) else listen)}
            if not names & live:
                problems.append(
                    f"{path.relative_to(root)}: handler {handler['name']!r} is notified by "
                    "nothing (no role, no change a family names): remove it"
                )
    for service in sorted(the_site.services):
        if not any(
            service in path.read_text(encoding="utf-8")
            for path in sorted((root / "roles").glob("*/*/*"))
            if path.is_file() and not path.is_relative_to(root / "roles" / "clustergen_state")
        ):
            problems.append(
                f"clustergen_state_services in {CONVERGE_VARS} lists {service}, which no role "
                "names: remove it, or the converge check waits for a service nothing starts"
            )
    return problems


def _golden_artifacts() -> list[Artifact]:
    return [a for spec in SPECS for arts in _rendered(spec)[0].values() for a in arts]


def test_no_place_names_a_family_handler_or_service_that_is_gone() -> None:
    problems = stale_places(site(), REPO, notified(REPO, _golden_artifacts()))
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize(
    ("path", "old", "new", "named"),
    [
        (
            "roles/nccl/tasks/main.yml",
            "rendered_files_family: nccl",
            "rendered_files_family: toyd_files",
            "roles/nccl/tasks/ include rendered_files with `rendered_files_family: toyd_files`",
        ),
        (
            "roles/opensm/handlers/main.yml",
            "- name: Restart opensm\n",
            "- name: Restart opensm\n  ansible.builtin.debug:\n    msg: x\n"
            "- name: Restart clustergen-toyd\n",
            "handler 'Restart clustergen-toyd' is notified by nothing",
        ),
        (
            CONVERGE_VARS,
            "+ ([{'name': 'opensm'}] if 'opensm' in group_names else [])",
            "+ ([{'name': 'opensm'}] if 'opensm' in group_names else [])\n"
            "     + ([{'name': 'clustergen-toyd'}] if 'compute' in group_names else [])",
            "lists clustergen-toyd, which no role names",
        ),
    ],
    ids=["include", "handler", "converge-service"],
)
def test_a_place_left_after_its_family_is_gone_is_named(
    tmp_path: Path, path: str, old: str, new: str, named: str
) -> None:
    the_site = _site_copy(tmp_path, path, old, new)
    problems = stale_places(the_site, tmp_path, notified(REPO, _golden_artifacts()))
    assert any(named in problem for problem in problems), problems


# --- each place, missing: the problem names it ----------------------------------------


def _toy(
    change: NodeChange, group: str = "compute", family: str = "toy_health"
) -> dict[str, list[Artifact]]:
    install = Install("/etc/clustergen/health.conf", group, change)
    return {family: [Artifact(f"{family}/gpu/health.conf", "x\n", install=install)]}


def _places(
    by_family: Mapping[str, Sequence[Artifact]],
    members: Mapping[str, frozenset[str]],
    the_site: Site,
) -> list[str]:
    """The problems of a toy family with a role of its own."""
    return place_problems(by_family, members, the_site, own_role=OWN_ROLE | {"toy_health"})


def _with(**changes: Any) -> Site:
    return dataclasses.replace(site(), **changes)


MEMBERS = {"compute": frozenset({"gpu01", "gpu02"}), "slurm": frozenset({"gpu01", "gpu02", "ctl"})}


def test_a_family_no_role_installs_names_rendered_files_family() -> None:
    (problem,) = _places(_toy(NodeChange("restart", "slurmd")), MEMBERS, site())
    assert "no role includes rendered_files with `rendered_files_family: toy_health`" in problem


def test_a_families_play_that_misses_a_partial_converge_is_named() -> None:
    """A family without a role of its own, on the real site, lacks nothing; with the
    families play's hosts every partial node (a MaxTime edit would run it) or none of
    them (a change to its own files would never be installed), the place is named."""
    toy = _toy(NodeChange("nothing"))

    def problems(the_site: Site) -> list[str]:
        return place_problems(toy, MEMBERS, the_site, own_role=OWN_ROLE)

    assert problems(site()) == []
    plays = tuple(
        dataclasses.replace(p, partial_families=False) if FAMILIES_ROLE in p.runs else p
        for p in site().plays
    )
    assert problems(_with(plays=plays)) == [
        "toy_health/gpu/health.conf (family toy_health, group compute): no play of "
        f"site.yml runs role {FAMILIES_ROLE} on every node that converges and every node "
        "whose files of such a family changed (hosts: groups['clustergen_converge'] + "
        "groups['clustergen_partial_families'])"
    ]


def test_a_restart_no_role_of_the_play_handles_names_the_handlers_file() -> None:
    installs = {**site().installs, "slurm": site().installs["slurm"] | {"toy_health"}}
    problems = _places(_toy(NodeChange("restart", "toyd")), MEMBERS, _with(installs=installs))
    assert any(
        "notifies 'Restart toyd', but no role of play 'Slurm' in site.yml (munge, slurm) "
        "defines it: add a 'Restart toyd' handler to roles/slurm/handlers/main.yml" in p
        for p in problems
    ), problems


def test_a_restarted_service_the_converge_check_lacks_names_its_list() -> None:
    installs = {**site().installs, "slurm": site().installs["slurm"] | {"toy_health"}}
    handlers = {**site().handlers, "slurm": site().handlers["slurm"] | {"Restart toyd"}}
    problems = _places(
        _toy(NodeChange("restart", "toyd")), MEMBERS, _with(installs=installs, handlers=handlers)
    )
    assert problems == [
        "toy_health/gpu/health.conf (family toy_health, group compute) restarts service toyd, but "
        f"clustergen_state_services in {CONVERGE_VARS} does not list it, so a no-op run "
        "would miss it stopped"
    ]


def test_a_group_no_play_reaches_names_the_group() -> None:
    installs = {**site().installs, "nccl": site().installs["nccl"] | {"toy_health"}}
    members = {**MEMBERS, "nvidia_gpu": frozenset({"gpu01"})}
    problems = _places(_toy(NodeChange("nothing")), members, _with(installs=installs))
    assert problems == [
        "toy_health/gpu/health.conf (family toy_health, group compute): no play of site.yml runs "
        "role nccl on gpu02 (a play whose hosts are groups['compute'])"
    ]


def test_a_play_not_narrowed_to_the_converge_group_is_named() -> None:
    installs = {**site().installs, "slurm": site().installs["slurm"] | {"toy_health"}}
    plays = tuple(
        Play(p.name, p.group, False, p.roles, p.runs) if p.name == "Slurm" else p
        for p in site().plays
    )
    problems = _places(
        _toy(NodeChange("restart", "slurmd")), MEMBERS, _with(installs=installs, plays=plays)
    )
    assert any(
        "play 'Slurm' of site.yml runs role slurm on hosts not narrowed" in p for p in problems
    )


def test_an_installed_file_of_an_uninstalled_family_names_the_set() -> None:
    (problem,) = _places(_toy(NodeChange("nothing"), family="facility"), MEMBERS, site())
    assert "family facility is in UNINSTALLED" in problem


def test_the_site_reading_finds_what_the_places_hold() -> None:
    """The parser reads the real site: a regression here would make every check vacuous."""
    the_site = site()
    assert "slurm" in the_site.installs["slurm"]
    assert "lustre" in the_site.installs["lustre_client"]
    assert "Restart slurmd" in the_site.handlers["slurm"]
    assert {"slurmd", "slurmctld", "slurmdbd", "munge"} <= the_site.services
    slurm = next(p for p in the_site.plays if p.name == "Slurm")
    assert (slurm.group, slurm.converge_only, slurm.runs) == ("slurm", True, ("munge", "slurm"))
    check = the_site.plays[0]  # imports clustergen_state's check.yml alone
    assert (check.group, check.roles, check.runs) == (None, ("clustergen_state",), ())


def _site_copy(tmp_path: Path, path: str, old: str, new: str) -> Site:
    """The repository's site.yml and roles/ with one place edited."""
    (tmp_path / "roles").mkdir()
    (tmp_path / "site.yml").write_text((REPO / "site.yml").read_text(encoding="utf-8"))
    for source in sorted((REPO / "roles").rglob("*.yml")):
        target = tmp_path / source.relative_to(REPO)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    edited = tmp_path / path
    text = edited.read_text(encoding="utf-8")
    assert old in text
    edited.write_text(text.replace(old, new), encoding="utf-8")
    return site(tmp_path)


@pytest.mark.parametrize(
    ("path", "old", "new", "named"),
    [
        (
            "roles/slurm/handlers/main.yml",
            "- name: Restart slurmd\n",
            "- name: Restart the Slurm node daemon\n",
            "notifies 'Restart slurmd', but no role of play 'Slurm' in site.yml (munge, slurm) "
            "defines it: add a 'Restart slurmd' handler to roles/slurm/handlers/main.yml",
        ),
        (
            "roles/nccl/tasks/main.yml",
            "rendered_files_family: nccl",
            "rendered_files_family: nccl_files",
            "no role includes rendered_files with `rendered_files_family: nccl`",
        ),
        (
            CONVERGE_VARS,
            "+ ([{'name': 'slurmctld'}] if 'slurm_controller' in group_names else [])",
            "",
            f"restarts service slurmctld, but clustergen_state_services in {CONVERGE_VARS}",
        ),
        (
            "site.yml",
            "    {{ groups['slurm'] | default([])\n       | select(",
            "    {{ groups['slurm_controller'] | default([])\n       | select(",
            "no play of site.yml runs role slurm on gpu",
        ),
    ],
    ids=["handler", "role", "converge-services", "play-hosts"],
)
def test_the_real_site_missing_a_place_names_it(
    tmp_path: Path, path: str, old: str, new: str, named: str
) -> None:
    by_family, members = _rendered(EXAMPLES / "ml-training-8node.yaml")
    problems = place_problems(by_family, members, _site_copy(tmp_path, path, old, new))
    assert any(named in problem for problem in problems), problems


# --- partial converges ----------------------------------------------------------------


def test_every_play_of_a_partial_family_takes_its_nodes() -> None:
    assert partial_problems(site()) == []
    slurm = next(p for p in site().plays if p.name == "Slurm")
    assert slurm.families == {"slurm"}
    assert {"slurm", "host_network", "nccl"} <= site().partial


def test_every_role_of_a_concern_converges_its_pins_alone_or_says_why_not() -> None:
    """Each role that installs a concern's pins is in PIN_PLAYS, but rdma, whose play
    takes no family (its pins converge the node in full); a PIN_PLAYS family that a
    play running its role does not take is named."""
    assert {c.role for c in CONCERNS} - set(PIN_PLAYS) == {"rdma"}
    problems = partial_problems(site(), {**PIN_PLAYS, "rdma": "nhc"})
    assert problems == [
        "play 'RDMA stack' of site.yml runs role rdma, whose pins converge with family nhc "
        "(PIN_PLAYS), but its hosts do not take groups['clustergen_family_nhc']: a release "
        "that changes only those pins would record its nodes without the play"
    ], problems
    assert partial_problems(site(), {"rdma": "rdma"})[0].startswith(
        "PIN_PLAYS names family rdma for role rdma's pins, but"
    )


@pytest.mark.parametrize(
    ("path", "old", "new", "named"),
    [
        (
            "site.yml",
            "\n                      + (groups['clustergen_family_slurm'] | default([])))\n"
            "       | list }}\n  become: true\n  gather_facts: false\n  roles:\n    - role: munge",
            ")\n       | list }}\n  become: true\n  gather_facts: false\n  roles:\n"
            "    - role: munge",
            "play 'Slurm' of site.yml runs role slurm, which installs family slurm, but its "
            "hosts do not take groups['clustergen_family_slurm']",
        ),
        (
            CONVERGE_VARS,
            "  - opensm\n",
            "",
            "play 'InfiniBand subnet manager' of site.yml takes clustergen_family_opensm, but "
            "clustergen_state_partial_role_families",
        ),
        (
            CONVERGE_VARS,
            "  - host_network\n",
            "  - host_network\n  - toy_health\n",
            "names toy_health, which no role installs",
        ),
        (
            "site.yml",
            "\n                      + (groups['clustergen_family_nccl'] | default([])))\n"
            "       | list }}\n  become: true\n  gather_facts: false\n  tasks:\n"
            "    - name: Plan the driver roll-out",
            ")\n       | list }}\n  become: true\n  gather_facts: false\n  tasks:\n"
            "    - name: Plan the driver roll-out",
            "runs role nvidia_driver for family nccl's files, but the driver plan's play",
        ),
    ],
    ids=["play-without-family", "family-not-partial", "family-not-installed", "driver-plan"],
)
def test_a_partial_converge_that_would_skip_a_play_is_named(
    tmp_path: Path, path: str, old: str, new: str, named: str
) -> None:
    problems = partial_problems(_site_copy(tmp_path, path, old, new))
    assert any(named in problem for problem in problems), problems
