"""PartitionName lines to slurm.partitions: the keys the spec models become partition
keys, every other key goes to the partition's `options` as written (slurm.conf(5)
"PARTITION CONFIGURATION")."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal

from clustergen.importer.records import Record, Unrepresented, expand_names
from clustergen.importer.shapes import PartitionShape
from clustergen.model.common import hostlist_parts
from clustergen.spec.hosts import compress

LIST_KEYS: dict[str, Literal["allow_accounts", "allow_groups", "allow_qos"]] = {
    "allowaccounts": "allow_accounts",
    "allowgroups": "allow_groups",
    "allowqos": "allow_qos",
}
PLAIN_KEYS: dict[str, Literal["max_time", "default_time", "qos"]] = {
    "maxtime": "max_time",
    "defaulttime": "default_time",
    "qos": "qos",
}
INT_KEYS: dict[str, Literal["priority_tier", "def_cpu_per_gpu", "def_mem_per_gpu_mib"]] = {
    "prioritytier": "priority_tier",
    "defcpupergpu": "def_cpu_per_gpu",
    "defmempergpu": "def_mem_per_gpu_mib",
}
STATES = ("UP", "DOWN", "DRAIN", "INACTIVE")
OVERSUBSCRIBE = ("NO", "YES", "EXCLUSIVE", "FORCE")
PREEMPT_MODES = ("OFF", "CANCEL", "REQUEUE", "SUSPEND")
WEIGHT = re.compile(r"^(CPU|Mem|GRES/gpu)=([0-9.]+)(G?)$", re.IGNORECASE)
WEIGHT_KEYS = {"cpu": "cpu", "mem": "mem_per_gib", "gres/gpu": "gpu"}


def partition_nodes(value: str, nodesets: dict[str, list[str]], every: list[str]) -> list[str]:
    """Nodes= as slurmctld reads it: ALL, node set names and hostlists, comma separated."""
    names: list[str] = []
    for item in filter(None, hostlist_parts(value)):
        if item.upper() == "ALL":
            names += every
        elif item in nodesets:
            names += nodesets[item]
        else:
            names += expand_names(item)
    return list(dict.fromkeys(names))


def _weights(value: str) -> dict[str, float] | None:
    weights: dict[str, float] = {}
    for item in value.split(","):
        match = WEIGHT.match(item)
        if match is None or (match[1].lower() == "mem") != (match[3] == "G"):
            return None
        weights[WEIGHT_KEYS[match[1].lower()]] = float(match[2])
    return weights


def _modelled(key: str, value: str, spec: PartitionShape) -> bool:
    """Put a modelled key into the partition's spec; False when its value is not one the
    spec language takes (it then goes to options)."""
    upper = value.upper()
    if key == "default":
        spec["default"] = upper == "YES"
    elif key in PLAIN_KEYS:
        spec[PLAIN_KEYS[key]] = value
    elif key in INT_KEYS and value.isdigit():
        spec[INT_KEYS[key]] = int(value)
    elif key in LIST_KEYS:
        if upper != "ALL":
            spec[LIST_KEYS[key]] = value.split(",")
    elif key == "state" and upper in STATES:
        spec["state"] = upper
    elif key == "oversubscribe" and upper in OVERSUBSCRIBE:
        spec["oversubscribe"] = upper
    elif key == "preemptmode" and upper in PREEMPT_MODES:
        spec["preempt_mode"] = upper
    elif key == "tresbillingweights" and (weights := _weights(value)) is not None:
        spec["billing_weights"] = weights
    else:
        return False
    return True


def read_partitions(
    records: list[Record],
    nodesets: dict[str, list[str]],
    every: list[str],
    report: Callable[[Unrepresented], None],
) -> list[PartitionShape]:
    partitions: list[PartitionShape] = []
    lines: list[str] = []  # each partition's line
    for record in records:
        nodes_value = record.get("Nodes")
        if not nodes_value:
            report(Unrepresented(record.line.where, f"PartitionName={record.name}", "no Nodes="))
            continue
        names = partition_nodes(nodes_value, nodesets, every)
        if not names:
            why = "names no node (the files have no NodeName line it takes)"
            report(Unrepresented(record.line.where, f"Nodes={nodes_value}", why))
            continue
        spec: PartitionShape = {"name": record.name, "nodes": compress(names)}
        options: dict[str, str] = {}
        for key, (written, value) in record.keys.items():
            if key == "nodes":
                continue
            if not _modelled(key, value, spec):
                options[written] = value
        if options:
            spec["options"] = options
        partitions.append(spec)
        lines.append(record.line.where)
    _one_default(partitions, lines, report)
    return partitions


def _one_default(
    partitions: list[PartitionShape], lines: list[str], report: Callable[[Unrepresented], None]
) -> None:
    """Of several Default=YES partitions the last is the default, as slurmctld reads them
    (read_config.c: "_parse_part_spec: changing default partition from A to B")."""
    defaults = [i for i, spec in enumerate(partitions) if spec.get("default") is True]
    for index in defaults[:-1]:
        partitions[index]["default"] = False
        report(
            Unrepresented(
                lines[index],
                "Default=YES",
                f"slurmctld makes the last Default=YES partition the default "
                f"({partitions[defaults[-1]]['name']}), as the spec does",
            )
        )
