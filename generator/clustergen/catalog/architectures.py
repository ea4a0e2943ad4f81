"""CPU architectures of the nodes: their inventory groups, and each one's repositories.

A node group's architecture follows from its hardware profile (catalog.gpus.
profile_cpu_arch). Where any node is aarch64, every node is in one architecture group
(`arch_x86_64`, `arch_aarch64`), and each group's `repositories_list` overrides the one of
group_vars/all.yml: a repository limited by `architectures` serves only those, and NVIDIA's
CUDA repository is given the build of the node's architecture.

Source: NVIDIA CUDA Installation Guide for Linux, "Network Repository Installation": the
repository is `https://developer.download.nvidia.com/compute/cuda/repos/$distro/$arch/`,
where $arch is `x86_64` for x86_64 servers and `sbsa` for Arm64 servers (Server Base
System Architecture: Grace, the Arm server CPUs); the signing key lies beside the index
in each (`3bf863cc.pub` for ubuntu2204/ubuntu2404). Package names and versions are the
same in both builds (cuda-toolkit-12-8, libnccl2, the driver branch), so the pins of
versions.lock hold for both architectures and only the repository differs.

NVIDIA's DOCA repository (DOCA-OFED, software.rdma stack doca-ofed) is per architecture
too: `https://linux.mellanox.com/public/repo/doca/<release>/<distro>/<arch>/`, where <arch>
is `x86_64` or `arm64-sbsa` (NVIDIA's hpc-container-maker, building block doca_ofed:
"archlabel: ... x86_64 for x86_64 processors and arm64-sbsa for aarch64 processors"), and
is given the build of each node's architecture the same way.
"""

from __future__ import annotations

import re

from clustergen.model.hardware import CpuArch
from clustergen.model.software import Repository

CPU_ARCHES: tuple[CpuArch, ...] = ("x86_64", "aarch64")
# NVIDIA's name for each architecture in its CUDA repository paths.
NVIDIA_REPOSITORY_ARCH: dict[CpuArch, str] = {"x86_64": "x86_64", "aarch64": "sbsa"}
ARCH_GROUP_TITLES: dict[CpuArch, str] = {
    "x86_64": "x86_64 nodes: their repositories",
    "aarch64": "aarch64 (Arm, NVIDIA sbsa) nodes: their repositories",
}

# developer.download.nvidia.com/compute/cuda/repos/<distro>/<arch>/..., as written in a
# spec's url or key_url; the architecture segment is the one that changes.
_NVIDIA_CUDA_REPOSITORY = re.compile(
    r"^(?P<head>https://developer\.download\.nvidia\.com/compute/cuda/repos/[^/]+/)"
    r"(?P<arch>x86_64|sbsa)(?P<tail>/.*)?$"
)
# NVIDIA's name for each architecture in its DOCA repository paths, and those paths.
DOCA_REPOSITORY_ARCH: dict[CpuArch, str] = {"x86_64": "x86_64", "aarch64": "arm64-sbsa"}
_NVIDIA_DOCA_REPOSITORY = re.compile(
    r"^(?P<head>https://linux\.mellanox\.com/public/repo/doca/[^/]+/[^/]+/)"
    r"(?P<arch>x86_64|arm64-sbsa)(?P<tail>/.*)?$"
)
_PER_ARCHITECTURE = (
    (_NVIDIA_CUDA_REPOSITORY, NVIDIA_REPOSITORY_ARCH),
    (_NVIDIA_DOCA_REPOSITORY, DOCA_REPOSITORY_ARCH),
)


def arch_group(arch: CpuArch) -> str:
    """The inventory group of the nodes of one CPU architecture."""
    return f"arch_{arch}"


ARCH_GROUPS: tuple[str, ...] = tuple(arch_group(arch) for arch in CPU_ARCHES)


def nvidia_repository_url(url: str, arch: CpuArch) -> str:
    """NVIDIA's CUDA or DOCA repository URL (or its key's) for `arch`; any other URL as
    it is."""
    for pattern, names in _PER_ARCHITECTURE:
        match = pattern.match(url)
        if match is not None:
            return match["head"] + names[arch] + (match["tail"] or "")
    return url


def follows_architecture(url: str) -> bool:
    """A repository clustergen gives each architecture's nodes their own build of (NVIDIA's
    CUDA and DOCA repositories)."""
    return any(pattern.match(url) is not None for pattern, _names in _PER_ARCHITECTURE)


def is_nvidia_cuda_repository(url: str) -> bool:
    return _NVIDIA_CUDA_REPOSITORY.match(url) is not None


def serves(repository: Repository, arch: CpuArch) -> bool:
    """Whether the nodes of `arch` get this repository (all do unless architectures says)."""
    return repository.architectures is None or arch in repository.architectures
