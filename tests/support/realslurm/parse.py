"""Parsing what the real Slurm tools print, and the reports built from it. Pure."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from clustergen.commands.twin.conf import SkippedLine

# Log lines caused by the test machine, not by the rendered files: pattern -> why. Every
# other line with error, fatal or WARNING that a daemon logs fails the test.
# Slurm's daemons time 1000 gettimeofday() calls as they start and log this above a
# threshold; on a loaded CI machine the host's Slurm sees it as the chroots' does.
MACHINE_NOISE: dict[str, str] = {
    "High latency for 1000 calls to gettimeofday()": "the test machine's CPUs are shared and busy",
}
ENVIRONMENT_NOISE: dict[str, str] = {
    "Configured MailProg is invalid": "no /bin/mail on the test machine",
    "mpi/pmix": "Debian's mpi/pmix plugin is loaded without libpmix installed",
    "Could not open job state file": "a fresh StateSaveLocation",
    "Trying backup state save file": "a fresh StateSaveLocation",
    "Could not open reservation state file": "a fresh StateSaveLocation",
    "No fed_mgr state file": "a fresh StateSaveLocation",
    **MACHINE_NOISE,
    # A real site's cluster is registered once.
    "update cluster: Connection refused": "slurmdbd pushes the new cluster's TRES to "
    "slurmctld before (or after) slurmctld listens",
}
# Further noise when the test removed accounting (accounting="remove") from a slurm.conf
# rendered with it: what the rendered file asks of slurmdbd is then logged as missing.
ACCOUNTING_REMOVED_NOISE: dict[str, str] = {
    "Job accounting information gathered, but not stored": "no slurmdbd in this test",
    "you have asked for it not to be stored": "no slurmdbd in this test",
    "PriorityWeightAge can only be used with SlurmDBD, ignoring": "rendered for the "
    "slurmdbd this test removed",
    "PriorityWeightFairshare can only be used with SlurmDBD, ignoring": "rendered for the "
    "slurmdbd this test removed",
}


def parse_oneliner(line: str) -> dict[str, str]:
    """`Key=value Key2=a b` -> dict; words without '=' belong to the previous value."""
    fields: dict[str, str] = {}
    last_key: str | None = None
    for token in line.split():
        key, sep, value = token.partition("=")
        if sep and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_:]*", key):
            fields[key] = value
            last_key = key
        elif last_key is not None:
            fields[last_key] += " " + token
    return fields


def nullable(value: str | None) -> str:
    return "" if value in (None, "(null)", "N/A") else str(value)


def _split_list(value: str | None) -> tuple[str, ...]:
    text = nullable(value)
    return tuple(item for item in text.split(",") if item)


@dataclass(frozen=True)
class NodeInfo:
    name: str
    cpus: int
    boards: int
    sockets: int  # total, as scontrol reports it (Boards x SocketsPerBoard)
    cores_per_socket: int
    threads_per_core: int
    real_memory_mib: int
    gres: str  # e.g. "gpu:h100:8", "" when none
    features: tuple[str, ...]
    state: str
    partitions: tuple[str, ...]
    fields: dict[str, str]

    @classmethod
    def from_fields(cls, fields: dict[str, str]) -> NodeInfo:
        return cls(
            name=fields["NodeName"],
            cpus=int(fields["CPUTot"]),
            boards=int(fields["Boards"]),
            sockets=int(fields["Sockets"]),
            cores_per_socket=int(fields["CoresPerSocket"]),
            threads_per_core=int(fields["ThreadsPerCore"]),
            real_memory_mib=int(fields["RealMemory"]),
            gres=nullable(fields.get("Gres")),
            features=_split_list(fields.get("AvailableFeatures")),
            state=fields.get("State", ""),
            partitions=_split_list(fields.get("Partitions")),
            fields=fields,
        )


@dataclass(frozen=True)
class PartitionInfo:
    name: str
    nodes: tuple[str, ...]  # expanded by Slurm itself
    nodes_expr: str  # as Slurm prints it, e.g. "gpu[01-08]"
    default: bool
    max_time: str
    default_time: str
    priority_tier: int
    state: str
    fields: dict[str, str]


@dataclass(frozen=True)
class SwitchInfo:
    name: str
    level: int
    nodes: tuple[str, ...]  # expanded; for upper levels every node below
    switches: tuple[str, ...]  # expanded child switch names
    fields: dict[str, str]


@dataclass(frozen=True)
class SinfoRow:
    node: str
    gres: str
    cpus: int
    memory_mib: int
    features: tuple[str, ...]


SINFO_FORMAT = "%N %G %c %m %f"


def parse_sinfo(output: str) -> dict[str, SinfoRow]:
    """`sinfo -h -N -o "%N %G %c %m %f"`; a node in two partitions prints twice."""
    rows: dict[str, SinfoRow] = {}
    for line in output.splitlines():
        parts = line.split()
        if len(parts) != 5:
            continue
        node, gres, cpus, memory, features = parts
        rows[node] = SinfoRow(node, nullable(gres), int(cpus), int(memory), _split_list(features))
    return rows


def parse_nodes(output: str) -> dict[str, NodeInfo]:
    """`scontrol show nodes -o`: one node per line."""
    nodes = [
        NodeInfo.from_fields(parse_oneliner(line)) for line in output.splitlines() if line.strip()
    ]
    return {node.name: node for node in nodes}


def parse_partitions(
    output: str, expand_hostlist: Callable[[str], tuple[str, ...]]
) -> dict[str, PartitionInfo]:
    """`scontrol show partition -o`; expand_hostlist turns Slurm's node expressions into names."""
    partitions = {}
    for line in output.splitlines():
        if not line.strip():
            continue
        fields = parse_oneliner(line)
        partitions[fields["PartitionName"]] = PartitionInfo(
            name=fields["PartitionName"],
            nodes=expand_hostlist(fields.get("Nodes", "")),
            nodes_expr=nullable(fields.get("Nodes")),
            default=fields.get("Default") == "YES",
            max_time=fields.get("MaxTime", ""),
            default_time=fields.get("DefaultTime", ""),
            priority_tier=int(fields.get("PriorityTier", "0")),
            state=fields.get("State", ""),
            fields=fields,
        )
    return partitions


def parse_switches(
    output: str, expand_hostlist: Callable[[str], tuple[str, ...]]
) -> dict[str, SwitchInfo]:
    """`scontrol show topology`; expand_hostlist turns node and switch expressions into names."""
    switches = {}
    for line in output.splitlines():
        if not line.startswith("SwitchName="):
            continue
        fields = parse_oneliner(line)
        switches[fields["SwitchName"]] = SwitchInfo(
            name=fields["SwitchName"],
            level=int(fields.get("Level", "0")),
            nodes=expand_hostlist(fields.get("Nodes", "")),
            switches=expand_hostlist(fields.get("Switches", "")),
            fields=fields,
        )
    return switches


def problem_lines(text: str, noise: Sequence[str] = ()) -> list[str]:
    """Lines with `error`, `fatal`, `WARNING` or `warning:`, minus noise.

    Case-sensitive, as Slurm writes them and as testbed.md asks. Slurm's warning() writes
    "warning: " (src/common/log.c); 26.05 logs its deprecations that way ("warning:
    JobContainerType has been replaced with NamespaceType").
    """
    return [
        line
        for line in text.splitlines()
        if re.search(r"\berror\b|\bfatal\b|\bWARNING\b|\bwarning:", line)
        and not any(pattern in line for pattern in noise)
    ]


# --------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class ControllerReport:
    """What the real slurmctld understood of the rendered files."""

    nodes: dict[str, NodeInfo]
    partitions: dict[str, PartitionInfo]
    sinfo: dict[str, SinfoRow]
    switches: dict[str, SwitchInfo]  # empty without topology/tree
    skipped: list[SkippedLine]  # rendered lines this test removed, with the reason
    overridden: list[str]  # rendered lines replaced/dropped as site-specific
    accounting: Literal["slurmdbd", "removed", "none"]
    slurm_version: str
    slurmctld_log: str
    slurmdbd_log: str
    raw: dict[str, str]  # command -> output
    # Further lines the sandbox causes (pattern -> why), e.g. a chroot's (realslurm.chroot).
    sandbox_noise: dict[str, str] = field(default_factory=dict)

    def _noise(self) -> dict[str, str]:
        noise = {**ENVIRONMENT_NOISE, **self.sandbox_noise}
        if self.accounting == "removed":
            noise.update(ACCOUNTING_REMOVED_NOISE)
        return noise

    def _logs(self) -> tuple[tuple[str, str], ...]:
        return (("slurmctld", self.slurmctld_log), ("slurmdbd", self.slurmdbd_log))

    def config_problems(self) -> list[str]:
        """error/fatal/WARNING lines of slurmctld and slurmdbd not caused by the test machine."""
        noise = tuple(self._noise())
        logs = self._logs()
        return [f"{daemon}: {line}" for daemon, log in logs for line in problem_lines(log, noise)]

    def explained_lines(self) -> list[str]:
        """error/fatal/WARNING lines the test machine causes, each with its reason."""
        found = []
        for daemon, log in self._logs():
            for line in problem_lines(log):
                reasons = [why for pattern, why in self._noise().items() if pattern in line]
                if reasons:
                    found.append(f"{daemon}: {line}  ({reasons[0]})")
        return found

    def summary(self) -> str:
        """Human-readable account for test output: what was skipped and what Slurm saw."""
        lines = [f"Slurm {self.slurm_version}, accounting: {self.accounting}"]
        lines += [f"skipped: {item}" for item in self.skipped] or ["skipped: nothing"]
        lines += [self.raw.get(f'sinfo -h -N -o "{SINFO_FORMAT}"', "")]
        return "\n".join(lines)


@dataclass(frozen=True)
class SlurmdGresReport:
    """`slurmd -G` output for one node."""

    node: str
    returncode: int
    output: str
    gres: list[dict[str, str]]  # one dict per "Gres Name=... Type=... Count=..." line
    problems: list[str] = field(default_factory=list)  # error/fatal/WARNING lines

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.problems

    def gpu_count(self, gres_type: str | None = None) -> int:
        return sum(
            int(line.get("Count", "0"))
            for line in self.gres
            if line.get("Name") == "gpu" and (gres_type is None or line.get("Type") == gres_type)
        )


def parse_slurmd_gres(node: str, returncode: int, output: str) -> SlurmdGresReport:
    gres = []
    for line in output.splitlines():
        _, sep, rest = line.partition("Gres Name=")
        if sep:
            # 22.05 ends the line with the Links value without its key: "(null)".
            gres.append(parse_oneliner("Name=" + rest.removesuffix(" (null)")))
    return SlurmdGresReport(node, returncode, output, gres, problem_lines(output))
