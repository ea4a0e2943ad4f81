"""The files beside slurm.conf: topology.conf (SwitchName lines to network.fabric.switches),
gres.conf (checked against the nodes' Gres=), slurmdbd.conf (the database behind
slurm.accounting) and cgroup.conf (clustergen writes its own: every key is reported)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from clustergen.importer.profiles import ImportedNode
from clustergen.importer.reader import ConfError, ConfFile, ConfLine, read_conf
from clustergen.importer.records import Unrepresented, conf_number, expand_names

# slurmdbd.conf keys that become slurm.accounting keys (slurmdbd.conf(5)).
DBD_KEYS = {
    "storagehost": ("database", "host"),
    "storageport": ("database", "port"),
    "storageloc": ("database", "name"),
    "storageuser": ("database", "user"),
    "dbdport": (None, "port"),
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
    switches: list[dict[str, str]] | None = None


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


def _switches(
    lines: list[ConfLine], report: Callable[[Unrepresented], None]
) -> list[dict[str, str]] | None:
    switches = []
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
        switch = {"name": line.value}
        if nodes:
            switch["nodes"] = nodes
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
        kinds = {by_name[t].gpu_type for t in targets if t in by_name and by_name[t].gpu_count}
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
    lines: list[ConfLine], slurm: dict[str, object], report: Callable[[Unrepresented], None]
) -> None:
    accounting = slurm.get("accounting")
    for line in lines:
        for key, value in line.pairs:
            lower = key.lower()
            if lower in DBD_KEYS and isinstance(accounting, dict):
                section, name = DBD_KEYS[lower]
                target = accounting.setdefault(section, {}) if section else accounting
                target[name] = conf_number(line.where, key, value) if name == "port" else value
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
    slurm: dict[str, object],
    report: Callable[[Unrepresented], None],
    folders: tuple[str, ...],
) -> SideFiles:
    side = SideFiles()
    side.switches = _switches(_read(directory, "topology.conf", report, folders), report)
    _gres(_read(directory, "gres.conf", report, folders), nodes, report)
    _slurmdbd(_read(directory, "slurmdbd.conf", report, folders), slurm, report)
    for line in _read(directory, "cgroup.conf", report, folders):
        report(
            Unrepresented(
                line.where, line.text, "clustergen writes its own cgroup.conf (review the render's)"
            )
        )
    return side
