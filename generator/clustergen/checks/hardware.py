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
)
from clustergen.model.hardware import HardwareProfile
from clustergen.resolve import ResolvedCluster
from clustergen.spec.hosts import compress


def check(cluster: ResolvedCluster) -> list[Problem]:
    spec = cluster.spec
    hosts = cluster.hosts
    problems = []
    for name, profile in spec.hardware.items():
        problems += _gpu_model(name, profile) + _cpu_arch(name, profile) + _numa(name, profile)
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


def _gpu_model(name: str, profile: HardwareProfile) -> list[Problem]:
    """A GPU model the catalog does not know: the models a family name could mean, or the
    nearest catalog or common name."""
    if profile.gpu is None or gpu_model(profile.gpu.model) is not None:
        return []
    written = profile.gpu.model
    candidates = gpu_model_candidates(written)
    if candidates:
        message = (
            f"GPU model '{written}' could be any of {', '.join(candidates)}: write the one "
            "the nodes have"
        )
    else:
        message = (
            f"unknown GPU model '{written}'{did_you_mean(written, [*GPU_MODELS, *GPU_ALIASES])}"
            "; known models: " + ", ".join(GPU_MODELS)
        )
    return [Problem(codes.HARDWARE_UNKNOWN_GPU_MODEL, ("hardware", name, "gpu", "model"), message)]


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
            f"cpu.arch is {arch}, but {model.name} GPUs sit beside NVIDIA Grace CPUs, which "
            f"are {model.host_cpu_arch}: write {model.host_cpu_arch} or leave cpu.arch out",
        )
    ]
