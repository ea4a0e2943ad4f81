"""What a set of Slurm files means, read by clustergen's own reader (Include, DEFAULT
lines, continuations: importer/reader.py) with Slurm's defaults applied: each node's CPUs,
sockets, cores, threads, memory, GPUs by type and features, and each partition's nodes,
keys and whether it is the default. tests/test_import_corpus.py compares an original's
meaning with the render of its import; every difference must be a "not imported" line."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from clustergen.importer.reader import CONFIG_FOLDERS, read_conf
from clustergen.importer.records import expand_names, node_hardware, sort_lines

_GPU = re.compile(r"^gpu(?::([^:(]+))?(?::(\d+))?")
_TOP_COMMA = re.compile(r",(?![^\[]*\])")
# Partition keys whose absence means this value (slurm.conf(5), PartitionName):
# State=UP, AllowGroups=ALL, AllowAccounts=ALL, AllowQos=ALL.
_PARTITION_DEFAULTS = {
    "state": "up",
    "allowgroups": "all",
    "allowaccounts": "all",
    "allowqos": "all",
}


@dataclass(frozen=True)
class Meaning:
    nodes: dict[str, dict[str, object]]
    where: dict[str, str]  # node or partition name -> the file:line of its line
    partitions: dict[str, dict[str, object]]


def _gpus(gres: str) -> dict[str, int]:
    """GPUs by type ('-' for none given) of a Gres= value."""
    found: dict[str, int] = {}
    for item in filter(None, re.split(r",(?![^()]*\))", gres)):
        match = _GPU.match(item)
        if match is None:
            continue
        kind, count = match[1], match[2]
        if kind and kind.isdigit() and count is None:  # gpu:2
            kind, count = None, kind
        found[kind or "-"] = found.get(kind or "-", 0) + int(count or 1)
    return found


def meaning(directory: Path, folders: tuple[str, ...] = CONFIG_FOLDERS) -> Meaning:
    conf = sort_lines(read_conf(directory, "slurm.conf", folders).lines)
    nodes: dict[str, dict[str, object]] = {}
    where: dict[str, str] = {}
    for record in conf.nodes:
        hardware = node_hardware(record)
        features = (record.get("Features") or record.get("Feature") or "").split(",")
        for name in expand_names(record.name):
            nodes[name] = {
                "cpus": hardware.cpus,
                "sockets": hardware.boards * hardware.sockets_per_board,
                "cores": hardware.cores_per_socket,
                "threads": hardware.threads_per_core,
                "memory": hardware.real_memory_mib,
                "gpus": _gpus(hardware.gres),
                "features": tuple(sorted(f for f in features if f)),
            }
            where[name] = record.line.where
    sets = {r.name: expand_names(r.get("Nodes") or "") for r in conf.nodesets if r.get("Nodes")}
    partitions: dict[str, dict[str, object]] = {}
    default = None
    for record in conf.partitions:
        members: list[str] = []
        for part in filter(None, _TOP_COMMA.split(record.get("Nodes") or "")):
            members += (
                list(nodes) if part.upper() == "ALL" else sets.get(part) or expand_names(part)
            )
        fields: dict[str, object] = {
            key: value.lower()
            for key, (_, value) in record.keys.items()
            if key not in ("nodes", "partitionname", "default")
            and value.lower() != _PARTITION_DEFAULTS.get(key)
        }
        fields["nodes"] = tuple(sorted(set(members)))
        partitions[record.name] = fields
        where[f"partition {record.name}"] = record.line.where
        if (record.get("Default") or "").upper() == "YES":
            default = record.name  # slurmctld takes the last Default=YES
    if default is not None:
        partitions[default]["default"] = True
    return Meaning(nodes, where, partitions)


# Which key of a NodeName line a "not imported" line names for a node difference.
NODE_KEYS = {
    "cpus": ("CPUs=", "Procs="),
    "sockets": ("CPUs=", "Procs=", "Sockets="),
    "cores": ("CPUs=", "Procs=", "CoresPerSocket="),
    "threads": ("ThreadsPerCore=",),
    "memory": ("RealMemory=",),
    "gpus": ("Gres=",),
    "features": ("Feature=", "Features="),
}


def unexplained(original: Meaning, rendered: Meaning, left_out: list[str]) -> list[str]:
    """Each difference between the two meanings that no "not imported" line (`file:line:
    Key=...: why`, as import prints them) names."""
    found = []
    for name in sorted(original.nodes.keys() | rendered.nodes.keys()):
        before, after = original.nodes.get(name), rendered.nodes.get(name)
        if before is None or after is None:
            found.append(f"node {name} is only in the {'render' if before is None else 'original'}")
            continue
        for key, value in before.items():
            if after[key] == value:
                continue
            prefixes = tuple(f"{original.where[name]}: {k}" for k in NODE_KEYS[key])
            if not any(line.startswith(prefixes) for line in left_out):
                found.append(f"node {name}: {key} {value} became {after[key]}")
    lowered = [line.lower() for line in left_out]
    for name in sorted(original.partitions.keys() | rendered.partitions.keys()):
        before_p, after_p = original.partitions.get(name), rendered.partitions.get(name)
        if before_p is None or after_p is None:
            found.append(
                f"partition {name} is only in the {'render' if before_p is None else 'original'}"
            )
            continue
        line = original.where[f"partition {name}"]
        for key in sorted(before_p.keys() | after_p.keys()):
            if before_p.get(key) == after_p.get(key):
                continue
            if not any(said.startswith(f"{line}: {key}=") for said in lowered):
                found.append(
                    f"partition {name}: {key} {before_p.get(key)} became {after_p.get(key)}"
                )
    return found
