"""A Slurm configuration directory to a spec (as plain data), with every line the spec
cannot hold reported and every value an admin must fill in listed."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clustergen.base.errors import UsageError
from clustergen.catalog.gpus import GpuModel, gpu_model
from clustergen.catalog.versions import parse_version
from clustergen.importer.partitions import read_partitions
from clustergen.importer.profiles import (
    GroupRun,
    ImportedNode,
    controller_profile,
    imported_groups,
    make_profiles,
    profile_spec,
    read_nodes,
)
from clustergen.importer.qos import qos_entries
from clustergen.importer.reader import CONFIG_FOLDERS, ConfError, read_conf
from clustergen.importer.records import (
    Imported,
    ImportNotes,
    SlurmConf,
    Unrepresented,
    bad_hostlists,
    expand_names,
    sort_lines,
)
from clustergen.importer.settings import PINNED_SLURM, ControllerHosts, global_settings
from clustergen.importer.shapes import NetworkShape, NodeGroupShape, SpecShape, SwitchShape
from clustergen.importer.side_files import read_side_files

# The values an admin must review: the Slurm files do not hold them. Addresses come from
# 198.18.0.0/15, the range RFC 2544 sets aside for benchmarks, so none is a real
# network; the domain ends in .invalid (RFC 2606).
MANAGEMENT_CIDR = "198.18.0.0/16"
FABRIC_CIDR = "198.19.0.0/16"
SOFTWARE = {
    "os": "ubuntu-24.04",
    "nvidia_driver": "570.133.20",
    "cuda": "12.8.1",
    "nccl": "2.26.2",
    "dcgm": "4.1.1",
    "slurm": PINNED_SLURM,
}
# The placeholder's NVIDIA stack where an imported GPU needs a later one than SOFTWARE's
# (Rubin, sm_107: CUDA 13.5 on R620 with NCCL 2.32.6, docs/platforms.md), so that the
# imported spec validates as it stands.
LATER_STACKS: tuple[dict[str, str], ...] = (
    {"nvidia_driver": "620.70.10", "cuda": "13.5.0", "nccl": "2.32.6"},
)


def _software(hardware: dict[str, Any]) -> dict[str, str]:
    """The placeholder stack: SOFTWARE's, or the first of LATER_STACKS that targets every
    imported GPU model the catalog knows."""
    models = [
        found
        for profile in hardware.values()
        for gpu in [profile.get("gpu"), *profile.get("other_gpus", [])]
        if gpu and (found := gpu_model(str(gpu.get("model", "")))) is not None
    ]
    software = dict(SOFTWARE)
    for stack in LATER_STACKS:
        if all(_runs(model, software) for model in models):
            break
        software |= stack
    return software


def _runs(model: GpuModel, software: dict[str, str]) -> bool:
    arch = model.architecture
    cuda, nccl = parse_version(software["cuda"]), parse_version(software["nccl"])
    return arch.targeted_by(cuda) and arch.supported_by_nccl(nccl)


REVIEW = (
    "cluster.domain (a placeholder under .invalid)",
    "software (a placeholder stack: pin what the cluster runs)",
    "hardware.*: rack_units, interfaces, power, and each GPU model (gpu, other_gpus) where "
    "its GRES type names several models or none the catalog knows",
    f"network.management ({MANAGEMENT_CIDR}, a placeholder) and each node group's management_ip",
    "nodes: the controller and slurmdbd hosts' hardware profile 'controller' (a placeholder)",
    "racks (none imported: validate warns where power and rack positions are missing)",
)


def import_slurm(
    directory: Path, config_folders: tuple[str, ...] = (), qos_file: Path | None = None
) -> Imported:
    """The spec of the cluster whose Slurm files DIR holds. An absolute Include in
    `config_folders` (where the cluster keeps its configuration, beside the usual
    reader.CONFIG_FOLDERS) names the same file of DIR; `qos_file` is slurmdbd's QOS as
    `sacctmgr show qos --parsable2` prints them (importer/qos.py)."""
    folders = CONFIG_FOLDERS + tuple(config_folders)
    if not directory.is_dir():
        raise UsageError(f"{directory}: not a directory")
    if not (directory / "slurm.conf").is_file():
        raise UsageError(f"{directory}: no slurm.conf there")
    try:
        main = read_conf(directory, "slurm.conf", folders)
    except ConfError as exc:
        raise UsageError(str(exc)) from exc
    notes = ImportNotes()
    report = notes.unrepresented.append
    for where, why in main.unreadable:
        report(Unrepresented(where, "line", why))
    conf = sort_lines(main.lines)
    bad = bad_hostlists(conf, directory)
    if bad:
        raise UsageError("\n".join(bad))
    try:
        spec = _build(directory, conf, notes, report, folders, qos_file)
    except ConfError as exc:  # a side file's unreadable hostlist
        raise UsageError(str(exc)) from exc
    return Imported(
        spec=spec,
        unrepresented=notes.unrepresented,
        changes=notes.changes,
        option_sources=notes.option_sources,
    )


def _nodesets(conf: SlurmConf, nodes: list[ImportedNode]) -> dict[str, list[str]]:
    sets: dict[str, list[str]] = {}
    for record in conf.nodesets:
        feature, members = record.get("Feature"), record.get("Nodes")
        if members:
            sets[record.name] = expand_names(members)
        elif feature:
            sets[record.name] = [n.name for n in nodes if feature in n.features]
    return sets


def _cluster_name(conf: SlurmConf, directory: Path) -> str:
    raw = conf.value("ClusterName") or directory.resolve().name or "imported"
    name = re.sub(r"[^a-z0-9_-]", "-", raw.lower()).lstrip("0123456789_-")[:40]
    return name or "imported"


def _domain(name: str) -> str:
    """A placeholder DNS domain from the cluster's name: no underscore (RFC 1123)."""
    return name.replace("_", "-").strip("-") + ".invalid"


def _build(
    directory: Path,
    conf: SlurmConf,
    notes: ImportNotes,
    report: Callable[[Unrepresented], None],
    folders: tuple[str, ...],
    qos_file: Path | None,
) -> SpecShape:
    nodes = read_nodes(conf.nodes, report)
    every = [n.name for n in nodes]
    for record in conf.downnodes:
        report(
            Unrepresented(
                record.line.where,
                record.line.text,
                "node states are not spec: set them with scontrol update",
            )
        )
    for line in conf.other:
        report(Unrepresented(line.where, line.text, "not modelled"))
    nodesets = _nodesets(conf, nodes)
    partitions = read_partitions(conf.partitions, nodesets, every, report)
    profiles = make_profiles(nodes)
    slurm, hosts = global_settings(conf, notes, report)
    side = read_side_files(directory, nodes, slurm.get("accounting"), report, folders)
    fabric = side.switches is not None
    slurm["partitions"] = partitions
    if qos := qos_entries("accounting" in slurm, partitions, notes, qos_file):
        slurm["qos"] = qos
    slurm["keep_imported"] = True
    hardware = {p.name: profile_spec(p, fabric) for p in profiles.values()}
    if hosts.needs_controller_profile:
        hardware["controller"] = controller_profile(fabric)
    name = _cluster_name(conf, directory)
    return {
        "version": 1,
        "cluster": {"name": name, "domain": _domain(name)},
        "software": _software(hardware),
        "hardware": hardware,
        "network": _network(side.switches),
        "nodes": _node_groups(imported_groups(nodes, profiles), hosts, fabric),
        "slurm": slurm,
    }


def _network(switches: list[SwitchShape] | None) -> NetworkShape:
    network: NetworkShape = {"management": {"cidr": MANAGEMENT_CIDR}}
    if switches is not None:
        network["fabric"] = {
            "type": "infiniband",
            "rate": "hdr",
            "cidr": FABRIC_CIDR,
            "switches": switches,
        }
    return network


def _address(index: int, base: int) -> str:
    return f"198.{base}.{index // 256}.{index % 256}"


def _node_groups(
    runs: list[GroupRun], hosts: ControllerHosts, fabric: bool
) -> list[NodeGroupShape]:
    """The compute node groups, then one group per controller or slurmdbd host that is no
    compute node; addresses in file order, one per node."""
    entries = [
        (run.names, run.profile, _compute_roles(run, hosts), run.features, run.weight)
        for run in runs
    ]
    entries += [
        (name, "controller", roles, (), None) for name, roles in hosts.service_hosts.items()
    ]
    groups: list[NodeGroupShape] = []
    index = 1
    for names, profile, roles, features, weight in entries:
        group: NodeGroupShape = {
            "names": names,
            "hardware": profile,
            "roles": roles,
            "management_ip": _address(index, 18),
        }
        if fabric:
            group["fabric_ip"] = _address(index, 19)
        if features:
            group["features"] = list(features)
        if weight is not None:
            group["weight"] = weight
        groups.append(group)
        index += len(expand_names(names))
    return groups


def _compute_roles(run: GroupRun, hosts: ControllerHosts) -> list[str]:
    """compute, and the controller or slurmdbd roles slurm.conf gives one of the run's nodes."""
    members = set(expand_names(run.names))
    roles = ["compute"] + [role for name, role in hosts.roles_on_compute if name in members]
    return list(dict.fromkeys(roles))
