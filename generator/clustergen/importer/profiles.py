"""Nodes of slurm.conf to hardware profiles and node groups: nodes with identical
hardware lines share one profile, named from the GPU model, else from the features all
its nodes share, else profileN; runs of nodes with the same profile, features and
Weight become one node group."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from clustergen.catalog.gpus import GPU_MODELS
from clustergen.importer.records import (
    NodeHardware,
    Record,
    Unrepresented,
    conf_number,
    expand_names,
    node_hardware,
)
from clustergen.importer.shapes import GpuShape, InterfacesShape, ProfileShape
from clustergen.model.hardware import MAX_SOCKETS
from clustergen.spec.hosts import compress

# NodeName keys the spec holds (hardware profile, node group); slurm.conf(5) "NODE
# CONFIGURATION". Every other key of a NodeName line is reported.
NODE_KEYS = frozenset(
    {
        "nodename",
        "cpus",
        "procs",
        "boards",
        "sockets",
        "socketsperboard",
        "corespersocket",
        "threadspercore",
        "realmemory",
        "gres",
        "feature",
        "features",
        "weight",
        "state",
        "corespeccount",
        "memspeclimit",
    }
)
# Gres=gpu[:type]:count[(S:sockets)] (slurm.conf(5) Gres; the socket list is what
# scontrol prints and some sites copy back).
GPU_GRES = re.compile(r"^gpu(?::([A-Za-z0-9_]+))?:(\d+)(\(S:[0-9,-]+\))?$")
# State= values a rendered NodeName line keeps (it writes State=UNKNOWN).
PLAIN_STATES = frozenset({"unknown", "idle"})


@dataclass(frozen=True)
class ImportedNode:
    name: str
    hardware: NodeHardware
    gpu_type: str | None
    gpu_count: int
    other_gpus: tuple[tuple[str, int], ...]  # (type, count) of each further GPU type
    features: tuple[str, ...]
    weight: int | None
    record: Record


@dataclass
class Profile:
    name: str
    node: ImportedNode  # the first node with this hardware


def _gpus(
    record: Record, report: Callable[[Unrepresented], None]
) -> tuple[str | None, int, tuple[tuple[str, int], ...]]:
    """The node's first GPU type and count (its profile's gpu), and each further typed one
    (other_gpus), in the order of Gres=, as slurmd numbers their device files."""
    where = record.line.where
    kind, count = None, 0
    others: list[tuple[str, int]] = []
    for item in filter(None, re.split(r",(?![^()]*\))", record.get("Gres") or "")):
        match = GPU_GRES.match(item)
        if match is None:
            report(Unrepresented(where, f"Gres={item}", "only gpu GRES is modelled"))
            continue
        if match[3]:
            why = "the socket list is dropped: gres.conf Cores= sets GPU affinity"
            report(Unrepresented(where, f"Gres={item}", why))
        if not count:
            kind, count = match[1], int(match[2])
            if kind is None:
                why = (
                    "a GPU without a type is rendered with the catalog type of its model "
                    "(gpu:<type>:<count>)"
                )
                report(Unrepresented(where, f"Gres={item}", why))
        elif match[1] not in (None, kind, *(t for t, _ in others)) and int(match[2]):
            others.append((match[1], int(match[2])))
        else:
            why = "a further GPU entry needs a type of its own (other_gpus): imported without it"
            report(Unrepresented(where, f"Gres={item}", why))
    return kind, count, tuple(others)


def read_nodes(
    records: list[Record], report: Callable[[Unrepresented], None]
) -> list[ImportedNode]:
    nodes = []
    for record in records:
        for key, (written, value) in record.keys.items():
            if key not in NODE_KEYS:
                report(Unrepresented(record.line.where, f"{written}={value}", "not modelled"))
        state = record.get("State")
        if state is not None and state.lower() not in PLAIN_STATES:
            report(
                Unrepresented(
                    record.line.where,
                    f"State={state}",
                    "rendered as State=UNKNOWN; set it with scontrol",
                )
            )
        kind, count, others = _gpus(record, report)
        features = record.get("Features") or record.get("Feature") or ""
        weight = record.get("Weight")
        hardware = node_hardware(record)
        cores = hardware.boards * hardware.sockets_per_board * hardware.cores_per_socket
        if hardware.boards * hardware.sockets_per_board > MAX_SOCKETS:
            report(
                Unrepresented(
                    record.line.where,
                    f"CPUs={hardware.cpus}",
                    f"slurmctld counts {hardware.boards * hardware.sockets_per_board} "
                    "sockets of one core (no Sockets= or CoresPerSocket= given); the spec "
                    f"holds at most {MAX_SOCKETS}: rendered as 1 socket of {cores} cores",
                )
            )
        if hardware.cpus != cores * hardware.threads_per_core:
            report(
                Unrepresented(
                    record.line.where,
                    f"CPUs={hardware.cpus}",
                    "rendered as Sockets x CoresPerSocket x ThreadsPerCore "
                    f"= {cores * hardware.threads_per_core}",
                )
            )
        for name in expand_names(record.name):
            nodes.append(
                ImportedNode(
                    name,
                    hardware,
                    kind,
                    count,
                    others,
                    tuple(f for f in features.split(",") if f),
                    conf_number(record.line.where, "Weight", weight) if weight else None,
                    record,
                )
            )
    return nodes


def _hardware_key(node: ImportedNode) -> tuple[object, ...]:
    return (node.hardware, node.gpu_type, node.gpu_count, node.other_gpus)


def _base_name(node: ImportedNode, members: list[ImportedNode], index: int) -> str:
    if node.gpu_count:
        return f"{node.gpu_type or 'gpu'}-{node.gpu_count}gpu"
    shared = [f for f in node.features if all(f in m.features for m in members)]
    if shared:
        return shared[0].lower()
    return f"profile{index}"


def make_profiles(nodes: list[ImportedNode]) -> dict[tuple[object, ...], Profile]:
    """One profile per distinct hardware, in order of first appearance; names unique."""
    by_key: dict[tuple[object, ...], list[ImportedNode]] = {}
    for node in nodes:
        by_key.setdefault(_hardware_key(node), []).append(node)
    profiles: dict[tuple[object, ...], Profile] = {}
    taken: set[str] = set()
    for index, (key, members) in enumerate(by_key.items(), start=1):
        base = re.sub(r"[^a-z0-9_.-]", "-", _base_name(members[0], members, index).lower())
        name, suffix = base, 2
        while name in taken or name == "controller":
            name, suffix = f"{base}-{suffix}", suffix + 1
        taken.add(name)
        profiles[key] = Profile(name, members[0])
    return profiles


def gpu_model_for(gres_type: str | None) -> str:
    """A catalog model whose GRES type is this one (the first listed); else one whose GRES
    type begins a site's own type (`A100SXM4`, `a100_80gb`), the one whose form factor and
    memory words the type holds most of; else h100-sxm5-80gb. The admin reviews it (the
    spec's REVIEW lines); the GRES type itself is kept as gpu.gres_type."""
    for model in GPU_MODELS.values():
        if model.gres_type == gres_type:
            return model.name
    word = re.sub(r"[^a-z0-9]", "", (gres_type or "").lower())
    scored = [
        (sum(part in word for part in model.name.split("-")[1:]), -index, model.name)
        for index, model in enumerate(GPU_MODELS.values())
        if word.startswith(model.gres_type)
    ]
    return max(scored)[2] if scored else "h100-sxm5-80gb"


def profile_spec(profile: Profile, fabric: bool) -> ProfileShape:
    """The hardware profile of the profile's nodes; `fabric` when topology.conf gives the
    cluster a fabric (each node's port: ib0, for the admin to review)."""
    node, hw = profile.node, profile.node.hardware
    sockets, cores = hw.boards * hw.sockets_per_board, hw.cores_per_socket
    if sockets > MAX_SOCKETS:  # CPUs= alone: one socket of all the cores (reported)
        sockets, cores = 1, sockets * cores
    spec: ProfileShape = {
        "rack_units": 1,
        "cpu": {
            "sockets": sockets,
            "cores_per_socket": cores,
            "threads_per_core": hw.threads_per_core,
        },
        "memory_gib": max(1, -(-hw.real_memory_mib // 1024)),
        "real_memory_mib": hw.real_memory_mib,
    }
    if hw.core_spec_count or hw.mem_spec_limit_mib:
        spec["system_reserved"] = {
            "cores": hw.core_spec_count,
            "memory_gib": -(-hw.mem_spec_limit_mib // 1024),
        }
    if node.gpu_count:
        gpu: GpuShape = {"model": gpu_model_for(node.gpu_type), "count": node.gpu_count}
        if node.gpu_type:
            gpu["gres_type"] = node.gpu_type
        spec["gpu"] = gpu
    if node.other_gpus:
        spec["other_gpus"] = [
            {"model": gpu_model_for(kind), "count": count, "gres_type": kind}
            for kind, count in node.other_gpus
        ]
    spec["interfaces"] = _interfaces(fabric)
    return spec


def controller_profile(fabric: bool) -> ProfileShape:
    """The placeholder profile of the controller and slurmdbd hosts, which slurm.conf does
    not describe (a REVIEW line says so)."""
    return {
        "rack_units": 1,
        "cpu": {"sockets": 1, "cores_per_socket": 4, "threads_per_core": 1},
        "memory_gib": 16,
        "interfaces": _interfaces(fabric),
    }


def _interfaces(fabric: bool) -> InterfacesShape:
    return {"management": "eth0", "fabric": "ib0"} if fabric else {"management": "eth0"}


@dataclass(frozen=True)
class GroupRun:
    """A run of like nodes, in file order: one node group of the spec."""

    names: str  # a hostlist
    profile: str
    features: tuple[str, ...]
    weight: int | None


def imported_groups(
    nodes: list[ImportedNode], profiles: dict[tuple[object, ...], Profile]
) -> list[GroupRun]:
    runs: list[tuple[tuple[str, tuple[str, ...], int | None], list[str]]] = []
    for node in nodes:
        key = (profiles[_hardware_key(node)].name, node.features, node.weight)
        if runs and runs[-1][0] == key:
            runs[-1][1].append(node.name)
        else:
            runs.append((key, [node.name]))
    return [GroupRun(compress(names), *key) for key, names in runs]


def profile_of(node: ImportedNode, profiles: dict[tuple[object, ...], Profile]) -> Profile:
    return profiles[_hardware_key(node)]
