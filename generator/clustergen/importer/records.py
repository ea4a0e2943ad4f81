"""slurm.conf's lines sorted into what they describe: global keys, nodes (with
NodeName=DEFAULT applied as slurmctld applies it: to the lines after it), node sets,
partitions (PartitionName=DEFAULT likewise), DownNodes; and the hardware slurmctld
computes for each node (src/common/read_config.c: a missing CPUs is Boards x Sockets x
CoresPerSocket x ThreadsPerCore; missing Sockets is CPUs / (CoresPerSocket x
ThreadsPerCore); CoresPerSocket and ThreadsPerCore default to 1, RealMemory to 1 MiB)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import hostlist

from clustergen.base.errors import printable
from clustergen.importer.reader import ConfError, ConfLine
from clustergen.importer.shapes import SpecShape
from clustergen.model.common import hostlist_parts


@dataclass(frozen=True)
class Unrepresented:
    """A line, or a key of a line, that the spec cannot hold."""

    where: str  # file:line
    text: str
    why: str

    def format(self) -> str:
        return printable(f"{self.where}: {self.text}: {self.why}")


@dataclass
class ImportNotes:
    """What an import says beside the spec, gathered as the files are read."""

    unrepresented: list[Unrepresented] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)  # what render writes otherwise
    option_sources: dict[str, str] = field(default_factory=dict)  # slurm.options key -> file:line


@dataclass(kw_only=True)
class Imported(ImportNotes):
    spec: SpecShape


@dataclass
class Record:
    """A NodeName, PartitionName, NodeSet or DownNodes line with its DEFAULT keys
    folded in: keys lower case -> (key as written, value)."""

    name: str
    line: ConfLine
    keys: dict[str, tuple[str, str]]

    def get(self, key: str) -> str | None:
        found = self.keys.get(key.lower())
        return found[1] if found else None


@dataclass
class SlurmConf:
    globals: list[tuple[ConfLine, str, str]] = field(default_factory=list)  # line, key, value
    nodes: list[Record] = field(default_factory=list)
    nodesets: list[Record] = field(default_factory=list)
    partitions: list[Record] = field(default_factory=list)
    downnodes: list[Record] = field(default_factory=list)
    other: list[ConfLine] = field(default_factory=list)  # FrontendName, SlurmctldParameters...

    def value(self, key: str) -> str | None:
        """The last value of a global key (any case), as slurmctld keeps the last."""
        found = None
        for _, name, value in self.globals:
            if name.lower() == key.lower():
                found = value
        return found

    def lines_of(self, key: str) -> list[tuple[ConfLine, str]]:
        return [(line, value) for line, name, value in self.globals if name.lower() == key.lower()]


RECORD_KEYS = ("nodename", "partitionname", "nodeset", "downnodes")


def sort_lines(lines: list[ConfLine]) -> SlurmConf:
    conf = SlurmConf()
    defaults: dict[str, dict[str, tuple[str, str]]] = {"nodename": {}, "partitionname": {}}
    for line in lines:
        kind = line.key
        if kind not in RECORD_KEYS:
            if kind == "frontendname":
                conf.other.append(line)
                continue
            conf.globals += [(line, key, value) for key, value in line.pairs]
            continue
        own = {key.lower(): (key, value) for key, value in line.pairs[1:]}
        if kind in defaults and line.value.upper() == "DEFAULT":
            defaults[kind].update(own)
            continue
        keys = {**defaults.get(kind, {}), **own}
        record = Record(line.value, line, keys)
        {
            "nodename": conf.nodes,
            "partitionname": conf.partitions,
            "nodeset": conf.nodesets,
            "downnodes": conf.downnodes,
        }[kind].append(record)
    return conf


def expand_names(expression: str) -> list[str]:
    """A Slurm hostlist (python-hostlist reads every form Slurm accepts: gpu[01-08,10],
    rack[1-2]-n[1-4], a,b)."""
    try:
        return list(hostlist.expand_hostlist(expression))
    except hostlist.BadHostlist as exc:
        raise ConfError(f"hostlist '{expression}' is not one Slurm reads: {exc}") from exc


# What one import expands at most (every NodeName, NodeSet, Nodes= and DownNodes list
# together): four times the largest cluster clustergen renders, so a few lines of
# 65,536-node hostlists cannot run the import out of memory.
MAX_IMPORTED_NAMES = 262_144


def bad_hostlists(conf: SlurmConf, directory: Path) -> list[str]:
    """`file:line:col: message` for each record whose names or Nodes= slurmctld would
    refuse (it stops at the first): import reports them all and writes nothing."""
    sets = {record.name for record in conf.nodesets}
    found: list[str] = []
    total = 0
    for record in [*conf.nodes, *conf.nodesets, *conf.partitions, *conf.downnodes]:
        if total > MAX_IMPORTED_NAMES:
            where = f"{directory / record.line.file}:{record.line.line}:1"
            return [
                *found,
                f"{where}: the files name more than {MAX_IMPORTED_NAMES} nodes, more than any "
                "cluster clustergen renders: not imported",
            ]
        named = [] if record in conf.nodesets or record in conf.partitions else [record.name]
        listed = list(filter(None, hostlist_parts(record.get("Nodes") or "")))
        for expression in [*named, *listed]:
            if expression.upper() == "ALL" or expression in sets:
                continue
            try:
                total += len(hostlist.expand_hostlist(expression))
            except hostlist.BadHostlist as exc:
                where = f"{directory / record.line.file}:{record.line.line}:1"
                found.append(f"{where}: hostlist '{expression}' is not one Slurm reads: {exc}")
    return found


@dataclass(frozen=True)
class NodeHardware:
    """What slurmctld makes of a NodeName line's hardware keys."""

    cpus: int
    boards: int
    sockets_per_board: int
    cores_per_socket: int
    threads_per_core: int
    real_memory_mib: int
    gres: str  # as written, without socket affinity
    core_spec_count: int
    mem_spec_limit_mib: int


# A GRES's socket list (slurm.conf(5) Gres=gpu:h100:8(S:0-1)): affinity, not hardware.
_SOCKETS = re.compile(r"\(S:[^)]*\)")


def conf_number(where: str, key: str, value: str) -> int:
    """A count, size or port as slurm.conf(5) writes it; a value slurmctld would refuse
    to start with (empty, a word) refuses the import, at its line."""
    if not value.strip().isdigit():
        raise ConfError(
            f"{where}: {key}={value} is not a whole number, which slurmctld refuses too "
            "(slurm.conf(5)): correct the line and import again"
        )
    return int(value)


def _int(record: Record, key: str, default: int) -> int:
    value = record.get(key)
    return conf_number(record.line.where, key, value) if value is not None else default


def node_hardware(record: Record) -> NodeHardware:
    """A node's CPUs, sockets, cores, threads and memory as slurmctld computes them."""
    boards = _int(record, "Boards", 1)
    cores = _int(record, "CoresPerSocket", 1)
    threads = _int(record, "ThreadsPerCore", 1)
    sockets_key = "SocketsPerBoard" if record.get("SocketsPerBoard") else "Sockets"
    cpus_key = "CPUs" if record.get("CPUs") else "Procs"
    sockets_given = _int(record, sockets_key, 0) or None
    cpus_given = _int(record, cpus_key, 0) or None
    if sockets_given is not None:
        sockets = sockets_given
        if sockets_key == "Sockets":
            sockets = max(1, sockets_given // boards)
    elif cpus_given is not None:
        sockets = max(1, cpus_given // (boards * cores * threads))
    else:
        sockets = 1
    cpus = cpus_given if cpus_given is not None else boards * sockets * cores * threads
    return NodeHardware(
        cpus=cpus,
        boards=boards,
        sockets_per_board=sockets,
        cores_per_socket=cores,
        threads_per_core=threads,
        real_memory_mib=_int(record, "RealMemory", 1),
        gres=_SOCKETS.sub("", record.get("Gres") or ""),
        core_spec_count=_int(record, "CoreSpecCount", 0),
        mem_spec_limit_mib=_int(record, "MemSpecLimit", 0),
    )
