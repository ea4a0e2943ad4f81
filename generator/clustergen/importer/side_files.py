"""The files beside slurm.conf: topology.conf (SwitchName lines to network.fabric.switches),
gres.conf (checked against the nodes' Gres=), slurmdbd.conf (the database behind
slurm.accounting) and cgroup.conf (clustergen writes its own: every key is reported)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from clustergen.importer.profiles import ImportedNode
from clustergen.importer.reader import ConfError, ConfFile, ConfLine, read_conf
from clustergen.importer.records import (
    MAX_IMPORTED_NAMES,
    Unrepresented,
    conf_number,
    expand_names,
)
from clustergen.importer.shapes import AccountingShape, SwitchShape
from clustergen.model.common import hostlist_size
from clustergen.spec.hosts import compress

# slurmdbd.conf keys that become slurm.accounting.database keys (slurmdbd.conf(5));
# DbdPort becomes slurm.accounting.port.
DATABASE_KEYS: dict[str, Literal["host", "name", "user"]] = {
    "storagehost": "host",
    "storageloc": "name",
    "storageuser": "user",
}
# slurmdbd.conf keys clustergen writes itself (templates/slurm/slurmdbd.conf.j2): reported
# only where the original's value would change.
DBD_WRITTEN = frozenset(
    {
        "authtype",
        "dbdhost",
        "dbdaddr",
        "slurmuser",
        "storagetype",
        "logfile",
        "pidfile",
        "storagepass",
    }
)


@dataclass
class SideFiles:
    switches: list[SwitchShape] | None = None


def _read(
    directory: Path,
    name: str,
    report: Callable[[Unrepresented], None],
    folders: tuple[str, ...],
) -> list[ConfLine]:
    if not (directory / name).is_file():
        return []
    try:
        conf: ConfFile = read_conf(directory, name, folders)
    except ConfError as exc:
        report(Unrepresented(name, "file", str(exc)))
        return []
    for where, why in conf.unreadable:
        report(Unrepresented(where, "line", why))
    return conf.lines


def _node_names(nodes: list[ImportedNode]) -> dict[str, str]:
    """Each name a topology.conf line may give a node by, to its NodeName: the NodeName
    itself, and its NodeHostname, as slurmctld takes either (find_node_record looks a
    name up as NodeName, then as the NodeHostname of one, src/common/node_conf.c)."""
    names = {node.name: node.name for node in nodes}
    records: dict[int, list[ImportedNode]] = {}
    for node in nodes:
        records.setdefault(id(node.record), []).append(node)
    for group in records.values():
        given = group[0].record.get("NodeHostname")
        if not given:
            continue
        try:
            hostnames = expand_names(given)
        except ConfError:
            continue
        # The n-th name is the n-th host; a list of another length is slurmctld's to refuse.
        for node, hostname in zip(group, hostnames, strict=False):
            names.setdefault(hostname, node.name)
    return names


def _endings(names: dict[str, str]) -> dict[str, str]:
    """Each ending of a NodeName after a '-' or '.' (`n019` of `site-n019`), to the first
    NodeName (in order) that ends so: the node a topology.conf name may stand for."""
    endings: dict[str, str] = {}
    for name in sorted(set(names.values())):
        for index, char in enumerate(name):
            if char in "-.":
                endings.setdefault(name[index + 1 :], name)
    return endings


def _switch_nodes(
    line: ConfLine,
    nodes: str,
    names: dict[str, str],
    endings: dict[str, str],
    report: Callable[[Unrepresented], None],
) -> str | None:
    """A switch's Nodes= as NodeNames: a NodeHostname becomes its node's NodeName; a name
    that is neither is left out, said with the NodeName it may stand for."""
    if hostlist_size(nodes) > MAX_IMPORTED_NAMES:
        why = f"more than the {MAX_IMPORTED_NAMES:,} names one import expands"
        report(Unrepresented(line.where, f"Nodes={nodes}", why))
        return None
    try:
        given = expand_names(nodes)
    except ConfError as exc:
        report(Unrepresented(line.where, f"Nodes={nodes}", str(exc)))
        return None
    kept = []
    for name in given:
        if name in names:
            kept.append(names[name])
            continue
        near = endings.get(name)
        hint = f" (NodeName {near} ends with it: give the node that name)" if near else ""
        report(
            Unrepresented(
                line.where,
                f"Nodes={name}",
                f"no NodeName or NodeHostname of slurm.conf; slurmctld finds no such node "
                f"either{hint}",
            )
        )
    return compress(list(dict.fromkeys(kept))) if kept else None


def _switches(
    lines: list[ConfLine], imported: list[ImportedNode], report: Callable[[Unrepresented], None]
) -> list[SwitchShape] | None:
    if not lines:
        return None
    names = _node_names(imported)
    endings = _endings(names)
    switches: list[SwitchShape] = []
    for line in lines:
        if line.key != "switchname":
            report(Unrepresented(line.where, line.text, "only SwitchName lines are modelled"))
            continue
        nodes, below = line.get("Nodes"), line.get("Switches")
        extra = [k for k, _ in line.pairs[1:] if k.lower() not in ("nodes", "switches")]
        if extra or (nodes and below) or not (nodes or below):
            report(
                Unrepresented(
                    line.where, line.text, "a switch lists either Nodes= or Switches=, nothing else"
                )
            )
        switch: SwitchShape = {"name": line.value}
        if nodes:
            members = _switch_nodes(line, nodes, names, endings, report)
            if members is None:
                continue
            switch["nodes"] = members
        elif below:
            switch["switches"] = below
        else:
            continue
        switches.append(switch)
    return switches or None


def _gres(
    lines: list[ConfLine], nodes: list[ImportedNode], report: Callable[[Unrepresented], None]
) -> None:
    by_name = {n.name: n for n in nodes}
    for line in lines:
        if line.key == "autodetect" or (line.get("AutoDetect") and not line.get("Name")):
            report(
                Unrepresented(
                    line.where, line.text, "clustergen writes File= lines from the hardware profile"
                )
            )
            continue
        if (line.get("Name") or "").lower() != "gpu":
            report(Unrepresented(line.where, line.text, "only gpu GRES is modelled"))
            continue
        targets = (
            expand_names(line.get("NodeName") or "") if line.get("NodeName") else list(by_name)
        )
        kinds = {
            kind
            for node in (by_name[t] for t in targets if t in by_name)
            if node.gpu_count
            for kind in (node.gpu_type, *(t for t, _ in node.other_gpus))
        }
        kind = line.get("Type")
        if kind is not None and kinds and kind not in kinds:
            report(
                Unrepresented(line.where, line.text, f"Type={kind} differs from the nodes' Gres=")
            )
        for key in ("Cores", "CPUs", "Links", "Flags", "Count", "MultipleFiles"):
            if line.get(key) is not None:
                report(
                    Unrepresented(
                        line.where,
                        f"{key}={line.get(key)}",
                        "rendered from the hardware profile's topology table, not imported",
                    )
                )


def _slurmdbd(
    lines: list[ConfLine],
    accounting: AccountingShape | None,
    report: Callable[[Unrepresented], None],
) -> None:
    """slurm.accounting completed from slurmdbd.conf, where slurm.conf has slurmdbd."""
    for line in lines:
        for key, value in line.pairs:
            lower = key.lower()
            if accounting is not None and lower == "dbdport":
                accounting["port"] = conf_number(line.where, key, value)
            elif accounting is not None and lower == "storageport":
                accounting.setdefault("database", {})["port"] = conf_number(line.where, key, value)
            elif accounting is not None and lower in DATABASE_KEYS:
                accounting.setdefault("database", {})[DATABASE_KEYS[lower]] = value
            elif lower == "storagepass":
                report(
                    Unrepresented(
                        line.where,
                        f"{key}=...",
                        "the password goes into the vault variable "
                        "slurm.accounting.database.password_variable names",
                    )
                )
            elif lower not in DBD_WRITTEN:
                report(Unrepresented(line.where, f"{key}={value}", "not modelled"))


def read_side_files(
    directory: Path,
    nodes: list[ImportedNode],
    accounting: AccountingShape | None,
    report: Callable[[Unrepresented], None],
    folders: tuple[str, ...],
) -> SideFiles:
    """topology.conf's switches; gres.conf checked against the nodes; slurmdbd.conf's
    database and port into `accounting` (slurm.conf's, None without slurmdbd); every line
    none of them holds reported."""
    side = SideFiles()
    topology = _read(directory, "topology.conf", report, folders)
    side.switches = _switches(topology, nodes, report)
    _gres(_read(directory, "gres.conf", report, folders), nodes, report)
    _slurmdbd(_read(directory, "slurmdbd.conf", report, folders), accounting, report)
    for line in _read(directory, "cgroup.conf", report, folders):
        report(
            Unrepresented(
                line.where, line.text, "clustergen writes its own cgroup.conf (review the render's)"
            )
        )
    return side
