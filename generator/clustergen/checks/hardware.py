"""Hardware profiles: GPUs from the catalog, memory held back for the OS on Slurm nodes."""

from __future__ import annotations

from clustergen import codes
from clustergen.catalog.gpus import GPU_MODELS
from clustergen.errors import Problem
from clustergen.hosts import compress
from clustergen.resolve import ResolvedCluster
from clustergen.suggest import did_you_mean


def check(cluster: ResolvedCluster) -> list[Problem]:
    spec = cluster.spec
    hosts = cluster.hosts
    problems = []
    for name, profile in spec.hardware.items():
        if profile.gpu is not None and profile.gpu.model not in GPU_MODELS:
            problems.append(
                Problem(
                    codes.HARDWARE_UNKNOWN_GPU_MODEL,
                    ("hardware", name, "gpu", "model"),
                    f"unknown GPU model '{profile.gpu.model}'"
                    f"{did_you_mean(profile.gpu.model, GPU_MODELS)}; known models: "
                    + ", ".join(GPU_MODELS),
                )
            )
    compute_nodes: dict[str, list[str]] = {}
    for host in hosts:
        if host.is_slurm_compute:
            compute_nodes.setdefault(host.hardware_name, []).append(host.name)
    for name in sorted(compute_nodes.keys() & set(spec.hardware)):
        if spec.hardware[name].reserved_memory_gib is None:
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
