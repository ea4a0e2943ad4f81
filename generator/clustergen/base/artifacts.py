"""Artifacts: the files an output family renders, each with how it is installed.

A family returns artifacts; it never hands files to another family. The Ansible
family installs every artifact that has an `Install` on the nodes of its inventory
group, and the review plan and drift report read the same metadata, so none of
them knows which family rendered what.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

# What applying a changed file needs (SEVERITY orders them).
NodeAction = Literal[
    "nothing", "set_param", "reconfigure", "restart", "reboot", "remount", "reformat"
]
# What `plan` asks of the nodes: a file's NodeAction, or one it tells apart where a file
# or a package is new: a target new in the spec is formatted (never DESTRUCTIVE), a new
# mount is mounted, and a pinned package's new version is installed.
PlanAction = Literal[NodeAction, "format", "mount", "install"]
# The one order of the actions, most disruptive first: plan lists its steps in it, and
# "nothing" is no step. tests/test_plan.py holds that it names every action once.
SEVERITY: tuple[PlanAction, ...] = (
    "reformat",
    "reboot",
    "restart",
    "remount",
    "format",
    "mount",
    "install",
    "set_param",
    "reconfigure",
)


@dataclass(frozen=True)
class NodeChange:
    """What a change to an installed file requires, and of what: `restart` names the
    service, `reconfigure` the daemon told to reread its configuration, `remount`
    the file system whose mounts are remounted, `set_param` the file system whose
    settings are applied again (lctl set_param), `reformat` the one target that
    must be destroyed and formatted again (DESTRUCTIVE; never done by a handler)."""

    action: NodeAction
    service: str | None = None

    def __post_init__(self) -> None:
        needs_service = self.action not in ("nothing", "reboot")
        if needs_service != (self.service is not None):
            raise ValueError(
                f"a {self.action} change {'needs' if needs_service else 'takes no'} service"
            )

    def describe(self) -> str:
        """'restart slurmd', 'reconfigure slurmctld', 'nothing': what the manifest records."""
        return f"{self.action} {self.service}" if self.service else self.action

    @classmethod
    def read(cls, described: str) -> NodeChange:
        """The change `describe` wrote; one it cannot have written (a hand edit, an
        older clustergen's word) means nothing is known to be needed."""
        action, _, service = described.partition(" ")
        if action not in get_args(NodeAction):
            return cls("nothing")
        try:
            return cls(action, service or None)  # type: ignore[arg-type]
        except ValueError:
            return cls("nothing")


NO_CHANGE = NodeChange("nothing")

# Where the units a site's own files define go (systemd.unit(5): the local
# administrator's folder), and the kinds of unit an install may start.
SYSTEMD_UNITS = "/etc/systemd/system"
STARTED_UNIT_SUFFIXES = (".service", ".timer", ".socket", ".path")


@dataclass(frozen=True)
class Secret:
    """A `KEY=value` line appended at install time from an Ansible (vault) variable,
    so the secret never appears in a rendered file."""

    key: str
    variable: str


@dataclass(frozen=True)
class Install:
    """Where an artifact goes on the nodes, and what a change to it needs."""

    dest: str  # absolute path on the node
    group: str  # the inventory group whose nodes receive it
    change: NodeChange
    owner: str = "root"
    file_group: str = "root"
    mode: int = 0o644
    secret: Secret | None = None
    # Only these nodes of the group (a Lustre target's service nodes); None: all of them.
    # Keeps a node from carrying thousands of files meant for its peers at scale.
    hosts: tuple[str, ...] | None = None
    # Other nodes get it from a daemon instead of a copy (configless Slurm): what `plan`
    # says of a change to it; None: every node that uses it receives it.
    served: str | None = None
    # Paths a node that receives this file must not have, unless another of its files
    # installs them (the copies of what a daemon now serves): the rendered_files role
    # removes them and the converge check reports one that is there.
    absent: tuple[str, ...] = ()
    # The file is a systemd unit the node enables and starts (after a daemon-reload when
    # it changed): the rendered_files role does so, and the converge check then requires
    # it enabled and active. Its change names what a later change to it restarts.
    start: bool = False

    def __post_init__(self) -> None:
        if self.hosts is not None and not self.hosts:
            raise ValueError("an install limited to hosts names at least one")
        if self.start:
            folder, _, unit = self.dest.rpartition("/")
            if folder != SYSTEMD_UNITS or not unit.endswith(STARTED_UNIT_SUFFIXES):
                raise ValueError(
                    f"{self.dest}: a unit to start goes in {SYSTEMD_UNITS} with one of the "
                    f"suffixes {', '.join(STARTED_UNIT_SUFFIXES)}"
                )


@dataclass(frozen=True)
class Artifact:
    """One rendered file: its path in the output tree, its text and, if it is
    installed on nodes, how."""

    path: str
    text: str
    mode: int = 0o644  # mode in the rendered tree
    install: Install | None = None
