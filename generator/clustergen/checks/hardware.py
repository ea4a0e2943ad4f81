"""Hardware profiles: GPUs from the catalog, memory held back for the OS on Slurm nodes."""

from __future__ import annotations

from clustergen.base import codes
from clustergen.base.errors import Problem
from clustergen.base.suggest import did_you_mean
from clustergen.catalog.gpus import (
    GPU_ALIASES,
    GPU_MODELS,
    gpu_model,
    gpu_model_candidates,
    profile_gpu,
    profile_gpu_sets,
)
from clustergen.model.hardware import HardwareProfile
from clustergen.resolve import ResolvedCluster
from clustergen.spec.hosts import compress


def check(cluster: ResolvedCluster) -> list[Problem]:
    spec = cluster.spec
    hosts = cluster.hosts
    problems = []
    for name, profile in spec.hardware.items():
        problems += _gpu_models(name, profile) + _cpu_arch(name, profile) + _numa(name, profile)
    compute_nodes: dict[str, list[str]] = {}
    for host in hosts:
        if host.is_slurm_compute:
            compute_nodes.setdefault(host.hardware_name, []).append(host.name)
    for name in sorted(compute_nodes.keys() & set(spec.hardware)):
        profile = spec.hardware[name]
        # real_memory_mib is RealMemory itself (an imported cluster's), so nothing to reserve.
        if profile.reserved_memory_gib is None and profile.real_memory_mib is None:
            problems.append(
                Problem(
                    codes.HARDWARE_RESERVED_MEMORY_MISSING,
                    ("hardware", name),
                    f"'{name}' is the profile of Slurm compute nodes "
                    f"{compress(compute_nodes[name])}, so it needs "
                    "reserved_memory_gib: the OS sees less than the installed memory, and a "
                    "node reporting less than RealMemory is drained as INVAL",
                    at="key",
                )
            )
    return problems


def _numa(name: str, profile: HardwareProfile) -> list[Problem]:
    """NPS2/NPS4 and SNC split a socket's cores evenly between its NUMA nodes; a count that
    does not divide cores_per_socket is a typo, and gres.conf's Cores= would be wrong."""
    cpu = profile.cpu
    if cpu.cores_per_socket % cpu.numa_per_socket == 0:
        return []
    return [
        Problem(
            codes.HARDWARE_NUMA_UNEVEN,
            ("hardware", name, "cpu", "numa_per_socket"),
            f"{cpu.numa_per_socket} NUMA nodes per socket do not divide its "
            f"{cpu.cores_per_socket} cores: NPS and SNC split a socket's cores evenly",
        )
    ]


def _gpu_models(name: str, profile: HardwareProfile) -> list[Problem]:
    """Each GPU model the catalog does not know (gpu's and other_gpus'); other_gpus without
    gpu; a GRES type two of them share."""
    entries: list[tuple[tuple[str | int, ...], str]] = []
    if profile.gpu is not None:
        entries.append((("gpu",), profile.gpu.model))
    entries += [(("other_gpus", i), other.model) for i, other in enumerate(profile.other_gpus)]
    problems = [
        Problem(codes.HARDWARE_UNKNOWN_GPU_MODEL, ("hardware", name, *where, "model"), message)
        for where, written in entries
        if (message := _unknown_model(written)) is not None
    ]
    if profile.other_gpus and profile.gpu is None:
        problems.append(
            Problem(
                codes.HARDWARE_OTHER_GPUS_WITHOUT_GPU,
                ("hardware", name, "other_gpus"),
                "other_gpus are GPUs beside the profile's gpu, which is missing: write the "
                "nodes' main GPUs (those NCCL and the acceptance jobs use) as gpu",
                at="key",
            )
        )
    seen: dict[str, str] = {}
    for index, gpus in enumerate(profile_gpu_sets(profile)):
        label = "gpu" if index == 0 else f"other_gpus[{index - 1}]"
        if gpus.gres_type in seen:
            problems.append(
                Problem(
                    codes.HARDWARE_GPU_TYPE_REPEATED,
                    ("hardware", name, "other_gpus", index - 1),
                    f"GRES type '{gpus.gres_type}' is already {seen[gpus.gres_type]}'s: Slurm "
                    "tells GPU models apart only by type, so a job asking for one could get "
                    "the other; give each model its own gres_type",
                )
            )
        seen.setdefault(gpus.gres_type, label)
    return problems


def _unknown_model(written: str) -> str | None:
    """Why a GPU model is not the catalog's: the models a family name could mean, or the
    nearest catalog or common name; None for a model it knows."""
    if gpu_model(written) is not None:
        return None
    candidates = gpu_model_candidates(written)
    if candidates:
        return (
            f"GPU model '{written}' could be any of {', '.join(candidates)}: write the one "
            "the nodes have"
        )
    return (
        f"unknown GPU model '{written}'{did_you_mean(written, [*GPU_MODELS, *GPU_ALIASES])}"
        "; known models: " + ", ".join(GPU_MODELS)
    )


def _cpu_arch(name: str, profile: HardwareProfile) -> list[Problem]:
    """cpu.arch against a GPU that only comes beside one kind of CPU (Grace: aarch64)."""
    model = profile_gpu(profile)
    arch = profile.cpu.arch
    if model is None or model.host_cpu_arch is None or arch in (None, model.host_cpu_arch):
        return []
    return [
        Problem(
            codes.HARDWARE_CPU_ARCH_MISMATCH,
            ("hardware", name, "cpu", "arch"),
            f"cpu.arch is {arch}, but {model.name} GPUs sit beside NVIDIA Grace or Vera CPUs, "
            f"which are {model.host_cpu_arch}: write {model.host_cpu_arch} or leave cpu.arch out",
        )
    ]
