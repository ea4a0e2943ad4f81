"""The pinned stack: CUDA against the GPUs and the driver, Fabric Manager against NVSwitch."""

from __future__ import annotations

import re

from clustergen.base import codes
from clustergen.base.errors import Problem, SpecPath
from clustergen.base.suggest import did_you_mean
from clustergen.catalog.architectures import follows_architecture, is_nvidia_cuda_repository
from clustergen.catalog.cuda import MIN_DRIVER, minimum_driver
from clustergen.catalog.gpus import GpuModel, profile_cpu_arch, profile_gpu, profile_gpu_sets
from clustergen.catalog.pins import OS_PACKAGE_FAMILY
from clustergen.catalog.slurm_keys import KEY_LIST_VERSIONS, key_list_version, release_name
from clustergen.catalog.slurm_packages import DISTRIBUTION_SLURM, SCHEDMD_APT_FIRST, slurm_packaging
from clustergen.catalog.slurm_releases import BY_VERSION, RELEASES, month_name, today
from clustergen.catalog.versions import parse_version
from clustergen.model import Spec
from clustergen.model.software import Software
from clustergen.resolve import ResolvedCluster


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(str(part) for part in version)


def versions(cluster: ResolvedCluster) -> list[Problem]:
    spec = cluster.spec
    return [*_cuda_and_driver(spec), *_slurm_version(spec), *_slurm_packaging(spec)]


def repositories(cluster: ResolvedCluster) -> list[Problem]:
    """Every repository signed by a key fetched so that it can be trusted, or marked
    trusted by the spec, with a warning each time (docs/security.md)."""
    problems = []
    for index, repository in enumerate(cluster.spec.software.repositories):
        path = ("software", "repositories", index)
        name = repository.name
        waived: list[tuple[str, SpecPath, str]] = []
        if repository.key_url is None:
            waived.append(
                (
                    "no signing key",
                    path,
                    f"repository '{name}' has no signing key: apt would write Trusted: yes and "
                    "dnf gpgcheck=0, so whoever can change what the nodes download from it "
                    "installs packages as root on every node; name its key in key_url (with "
                    "key_fingerprint), or mark it trusted: true (a local test repository)",
                )
            )
        if repository.url.startswith("http://"):
            waived.append(
                (
                    "a plain http:// url",
                    (*path, "url"),
                    f"repository '{name}' is fetched over plain http://: anyone on the network "
                    "path sees what the nodes install and can hold back or replay its index "
                    "(dnf does not check a repository's metadata); use https://, or mark it "
                    "trusted: true",
                )
            )
        if (
            repository.key_url is not None
            and repository.key_url.startswith("http://")
            and repository.key_fingerprint is None
        ):
            waived.append(
                (
                    "a signing key fetched over plain http:// without key_fingerprint",
                    (*path, "key_url"),
                    f"repository '{name}' has its signing key fetched over plain http:// with "
                    "no key_fingerprint: anyone on the network path can hand the nodes their "
                    "own key; use https://, give key_fingerprint, or mark it trusted: true",
                )
            )
        if not repository.trusted:
            problems += [
                Problem(codes.SOFTWARE_REPOSITORY_UNSIGNED, where, message)
                if what == "no signing key"
                else Problem(codes.SOFTWARE_REPOSITORY_HTTP, where, message)
                for what, where, message in waived
            ]
        elif waived:
            problems.append(
                Problem(
                    codes.SOFTWARE_REPOSITORY_TRUSTED,
                    (*path, "trusted"),
                    f"repository '{name}' is trusted: true with "
                    f"{' and '.join(what for what, _, _ in waived)}: whoever can change what "
                    "the nodes download from it can install packages as root on every node "
                    "(docs/security.md); sign it and name its key (key_url over https://, "
                    "key_fingerprint) to drop trusted",
                )
            )
        else:
            problems.append(
                Problem(
                    codes.SOFTWARE_REPOSITORY_TRUSTED,
                    (*path, "trusted"),
                    f"repository '{name}' is trusted: true, but it is signed and fetched over "
                    "https:// or file://, so trusted waives nothing; remove it",
                )
            )
    return problems


def gpus(cluster: ResolvedCluster) -> list[Problem]:
    """The stack against the GPUs the hardware profiles have."""
    spec = cluster.spec
    return [*_gpu_architectures(spec), *_fabric_manager(spec), *_nvlsm(spec)]


def _cuda_and_driver(spec: Spec) -> list[Problem]:
    software = spec.software
    cuda = parse_version(software.cuda)
    if cuda[:2] == (12, 7):
        return [
            Problem(
                codes.SOFTWARE_NO_CUDA_12_7,
                ("software", "cuda"),
                "there is no CUDA 12.7 release (12.6 is followed by 12.8)",
            )
        ]
    needed = minimum_driver(cuda)
    if needed is None:
        known = ", ".join(_dotted(v) for v in MIN_DRIVER)
        return [
            Problem(
                codes.SOFTWARE_CUDA_NOT_IN_DRIVER_TABLE,
                ("software", "cuda"),
                f"CUDA {software.cuda} is not in the driver table ({known}); its driver "
                "requirement is not checked",
            )
        ]
    minimum, rule = needed
    driver = parse_version(software.nvidia_driver)
    if driver < minimum:
        return [
            Problem(
                codes.SOFTWARE_DRIVER_BELOW_CUDA_MINIMUM,
                ("software", "nvidia_driver"),
                f"driver {software.nvidia_driver} is older than {_driver_floor(minimum)}, "
                "the minimum for "
                f"CUDA {software.cuda} ({rule} {_row_source(minimum)})",
            )
        ]
    return []


def _driver_floor(minimum: tuple[int, ...]) -> str:
    """A driver table row as said: a full version, or a branch (CUDA 13.4 on)."""
    return f"branch {minimum[0]}" if len(minimum) == 1 else _dotted(minimum)


def _row_source(minimum: tuple[int, ...]) -> str:
    return "branch: catalog/cuda.py" if len(minimum) == 1 else "row of the CUDA release notes"


def _gpu_architectures(spec: Spec) -> list[Problem]:
    cuda = parse_version(spec.software.cuda)[:2]
    problems = []
    models = [
        (name, gpus.model)
        for name, profile in spec.hardware.items()
        for gpus in profile_gpu_sets(profile)
        if gpus.model is not None
    ]
    for name, model in models:
        arch = model.architecture
        if not arch.targeted_by(cuda):
            problems.append(
                Problem(
                    codes.SOFTWARE_CUDA_TOO_OLD_FOR_GPU,
                    ("software", "cuda"),
                    f"CUDA {spec.software.cuda} cannot target {model.name} ({arch.sm}, "
                    f"hardware.{name}); it needs CUDA {_dotted(arch.first_cuda)} or newer",
                )
            )
        elif arch.production_cuda and cuda < arch.production_cuda:
            problems.append(
                Problem(
                    codes.SOFTWARE_CUDA_PREVIEW_FOR_GPU,
                    ("software", "cuda"),
                    f"CUDA {spec.software.cuda} supports {model.name} ({arch.sm}, "
                    f"hardware.{name}) as a preview only; CUDA "
                    f"{_dotted(arch.production_cuda)} is the first with production support",
                )
            )
        elif arch.last_cuda_exclusive and cuda >= arch.last_cuda_exclusive:
            problems.append(
                Problem(
                    codes.SOFTWARE_CUDA_TOO_NEW_FOR_GPU,
                    ("software", "cuda"),
                    f"CUDA {spec.software.cuda} no longer supports {model.name} ({arch.sm}, "
                    f"hardware.{name}); the last CUDA for it is below "
                    f"{_dotted(arch.last_cuda_exclusive)}",
                )
            )
        problems += _driver_for_gpu(spec, name, model)
        problems += _nccl_for_gpu(spec, name, model)
    return problems


def _nccl_for_gpu(spec: Spec, profile: str, model: GpuModel) -> list[Problem]:
    """An NCCL older than the first release that supports the GPU's architecture (Rubin:
    2.32.3, catalog/gpus.py)."""
    first = model.architecture.first_nccl
    if first is None or model.architecture.supported_by_nccl(parse_version(spec.software.nccl)):
        return []
    return [
        Problem(
            codes.SOFTWARE_NCCL_TOO_OLD_FOR_GPU,
            ("software", "nccl"),
            f"NCCL {spec.software.nccl} predates {model.name} ({model.architecture.sm}, "
            f"hardware.{profile}): NCCL {_dotted(first)} is the first release that supports it",
        )
    ]


def _driver_for_gpu(spec: Spec, profile: str, model: GpuModel) -> list[Problem]:
    """A driver older than the one of the first CUDA that targets the GPU's architecture
    does not know the GPU, whatever CUDA is pinned (the driver table of catalog/cuda.py).
    Said only where the pinned CUDA's own row does not already ask for as much."""
    arch = model.architecture
    needed = minimum_driver(arch.first_cuda)
    pinned = minimum_driver(parse_version(spec.software.cuda))
    driver = parse_version(spec.software.nvidia_driver)
    if needed is None or driver >= needed[0] or (pinned and pinned[0] >= needed[0]):
        return []
    return [
        Problem(
            codes.SOFTWARE_DRIVER_TOO_OLD_FOR_GPU,
            ("software", "nvidia_driver"),
            f"driver {spec.software.nvidia_driver} predates {model.name} ({arch.sm}, "
            f"hardware.{profile}): it needs {_driver_floor(needed[0])} or newer, the driver of "
            f"CUDA {_dotted(arch.first_cuda)}, the first CUDA for {arch.sm}",
        )
    ]


def _fabric_manager(spec: Spec) -> list[Problem]:
    # Every defined profile counts, used or not: a mistyped reference must not make the
    # fabric manager look unneeded.
    nvswitch = sorted(name for name, p in spec.hardware.items() if p.gpu and p.gpu.nvswitch)
    software = spec.software
    if nvswitch and software.fabric_manager is None:
        return [
            Problem(
                codes.SOFTWARE_FABRIC_MANAGER_MISSING,
                ("software",),
                f"fabric_manager is required: hardware {', '.join(nvswitch)} has NVSwitch; "
                f"set it to the driver version {software.nvidia_driver}",
                at="key",
            )
        ]
    if nvswitch and software.fabric_manager != software.nvidia_driver:
        return [
            Problem(
                codes.SOFTWARE_FABRIC_MANAGER_DIFFERS,
                ("software", "fabric_manager"),
                f"fabric_manager {software.fabric_manager} must equal nvidia_driver "
                f"{software.nvidia_driver} exactly, or nvidia-fabricmanager will not start",
            )
        ]
    if not nvswitch and software.fabric_manager is not None:
        return [
            Problem(
                codes.SOFTWARE_FABRIC_MANAGER_WITHOUT_NVSWITCH,
                ("software", "fabric_manager"),
                "fabric_manager is set but no node's hardware has NVSwitch (gpu.nvswitch: true); "
                "remove it",
            )
        ]
    return []


# Blackwell (compute capability 10.x, and every later architecture) is the first with
# fourth-generation NVSwitch on HGX baseboards [Fabric Manager User Guide 2.3, 1.6.4
# "NVIDIA HGX B200/B100 GPU Baseboard"].
NVLSM_FROM_CC_MAJOR = 10


def _nvlsm(spec: Spec) -> list[Problem]:
    """HGX B200/B300 (fourth-generation NVSwitch) need the NVLink Subnet Manager beside the
    fabric manager; nothing earlier runs it [NVIDIA Fabric Manager User Guide, release 2.3,
    1.3.2 "Systems Using Fourth Generation NVSwitches" and 1.5 "What is NVLink Subnet
    Manager?"]."""
    needing = sorted(
        name
        for name, p in spec.hardware.items()
        if p.gpu
        and p.gpu.nvswitch
        and (model := profile_gpu(p)) is not None
        and parse_version(model.architecture.compute_capability)[0] >= NVLSM_FROM_CC_MAJOR
    )
    nvlsm = spec.software.nvlsm
    if needing and nvlsm is None:
        return [
            Problem(
                codes.SOFTWARE_NVLSM_MISSING,
                ("software",),
                f"nvlsm is required: hardware {', '.join(needing)} has fourth-generation "
                "NVSwitch (Blackwell HGX), which the fabric manager brings up only with NVIDIA's "
                "NVLink Subnet Manager; set it to the NVLSM version of driver branch "
                f"{parse_version(spec.software.nvidia_driver)[0]}",
                at="key",
            )
        ]
    if not needing and nvlsm is not None:
        return [
            Problem(
                codes.SOFTWARE_NVLSM_WITHOUT_NVSWITCH,
                ("software", "nvlsm"),
                "nvlsm is set but no hardware has fourth-generation NVSwitch (gpu.nvswitch with "
                "Blackwell GPUs); remove it",
            )
        ]
    return []


def _slurm_version(spec: Spec) -> list[Problem]:
    pinned = spec.software.slurm
    path = ("software", "slurm")
    list_version = key_list_version(pinned)
    if list_version is None:
        oldest = release_name(KEY_LIST_VERSIONS[0])
        return [
            Problem(
                codes.SOFTWARE_SLURM_TOO_OLD,
                path,
                f"Slurm {pinned} is older than {oldest}, the oldest version clustergen supports",
            )
        ]
    problems = []
    major = parse_version(pinned)[:2]
    if major > KEY_LIST_VERSIONS[-1]:
        problems.append(
            Problem(
                codes.SOFTWARE_SLURM_NEWER_THAN_KEY_LISTS,
                path,
                f"Slurm {pinned} is newer than clustergen's newest slurm.conf key list "
                f"({release_name(list_version)}): slurm.options are checked against the "
                f"{release_name(list_version)} keys, so a key {release_name(major)} added, "
                "removed or made defunct is not known",
            )
        )
    release = BY_VERSION.get(major)
    now = today()
    if release is not None and (now.year, now.month) >= release.end_of_support:
        ended = "ended" if (now.year, now.month) > release.end_of_support else "ends"
        supported = [
            release_name(r.version)
            for r in RELEASES
            if r.released <= now and r.end_of_support > (now.year, now.month)
        ]
        newer = f"; SchedMD supports {', '.join(supported)}" if supported else ""
        released = (release.released.year, release.released.month)
        months = (release.end_of_support[0] - released[0]) * 12 + (
            release.end_of_support[1] - released[1]
        )
        problems.append(
            Problem(
                codes.SOFTWARE_SLURM_END_OF_SUPPORT,
                path,
                f"SchedMD's support for Slurm {release_name(major)} {ended} in "
                f"{month_name(release.end_of_support)}, {months} months after its release "
                f"({month_name(released)}): no more "
                f"bug or security fixes{newer} (`clustergen plan` names the upgrade steps; "
                "docs/slurm.md)",
            )
        )
    return problems


def _slurm_packaging(spec: Spec) -> list[Problem]:
    """Where the Slurm packages come from against the version and the repositories."""
    software = spec.software
    packaging = slurm_packaging(software)
    family = OS_PACKAGE_FAMILY[software.os]
    # Said on the key when the spec states it, on the version when it is the default.
    path = ("software", "slurm_packages" if software.slurm_packages else "slurm")
    if packaging == "distribution" and software.slurm_repository is not None:
        return [
            Problem(
                codes.SOFTWARE_SLURM_REPOSITORY_NOT_SCHEDMD,
                ("software", "slurm_repository"),
                f"slurm_repository names where SchedMD-built packages come from, but the Slurm "
                f"packages are the distribution's (slurm_packages: distribution"
                f"{'' if software.slurm_packages else ', the default before 23.11 on apt'}); "
                "remove it, or set slurm_packages: schedmd",
            )
        ]
    if packaging == "distribution" and family == "dnf":
        return [
            Problem(
                codes.SOFTWARE_SLURM_EPEL_VERSION_UNCONFIRMED,
                path,
                f"{software.os} has no Slurm of its own and EPEL's moves within a release: "
                f"confirm that EPEL offers Slurm {software.slurm} (dnf list --showduplicates "
                "slurm) before applying, or build SchedMD's packages (slurm_packages: schedmd)",
            )
        ]
    if packaging == "distribution":
        shipped = DISTRIBUTION_SLURM[software.os]
        if software.slurm == shipped:
            return []
        default = "" if software.slurm_packages else " (the default before 23.11 on apt)"
        # Unset, the key follows the version: the shipped one may itself select schedmd.
        stated = "" if software.slurm_packages else " with slurm_packages: distribution"
        too_old = (
            ", older than clustergen supports"
            if key_list_version(shipped) is None
            else f"; set software.slurm: {shipped}{stated}"
        )
        return [
            Problem(
                codes.SOFTWARE_SLURM_NOT_DISTRIBUTION_VERSION,
                ("software", "slurm"),
                f"the distribution's Slurm packages{default} are {shipped} on {software.os}, "
                f"not {software.slurm}{too_old}, or build SchedMD's packages "
                "(slurm_packages: schedmd, from 23.11)",
            )
        ]
    problems = []
    if family == "apt" and parse_version(software.slurm)[:2] < SCHEDMD_APT_FIRST:
        problems.append(
            Problem(
                codes.SOFTWARE_SLURM_SCHEDMD_APT_TOO_OLD,
                ("software", "slurm_packages"),
                f"SchedMD's Debian packaging (slurm-smd) starts with "
                f"{_dotted(SCHEDMD_APT_FIRST)}, so it builds no Slurm {software.slurm}: pin "
                f"{_dotted(SCHEDMD_APT_FIRST)} or newer, or the version {software.os} ships "
                "with slurm_packages: distribution",
            )
        )
    return [*problems, *_slurm_source(software)]


def _slurm_source(software: Software) -> list[Problem]:
    """SchedMD publishes no package repository: the spec names the one that serves the
    site's builds. Only the stated choice must: the default keeps the specs written before
    the key valid (the reference specs among them), with a warning."""
    names = [repository.name for repository in software.repositories]
    named = software.slurm_repository
    if named is not None and named not in names:
        offered = f"; it has {', '.join(names)}" if names else ", which lists none"
        return [
            Problem(
                codes.SOFTWARE_SLURM_REPOSITORY_UNKNOWN,
                ("software", "slurm_repository"),
                f"'{named}' is not a repository of software.repositories"
                f"{did_you_mean(named, names)}{offered}",
            )
        ]
    if named is not None:
        return []
    built = "slurm-smd-*" if OS_PACKAGE_FAMILY[software.os] == "apt" else "slurm-*"
    if software.slurm_packages == "schedmd":
        return [
            Problem(
                codes.SOFTWARE_SLURM_REPOSITORY_MISSING,
                ("software", "slurm_packages"),
                f"SchedMD publishes no package repository: the site builds its {built} "
                "packages and serves them from its own; name it in software.slurm_repository "
                "(a repository of software.repositories), or use the distribution's packages "
                "(slurm_packages: distribution)",
            )
        ]
    return [
        Problem(
            codes.SOFTWARE_SLURM_SCHEDMD_WITHOUT_REPOSITORY,
            ("software", "slurm"),
            f"Slurm {software.slurm} on {software.os} is pinned as SchedMD's {built} packages "
            "(the default), and no repository is named that serves them (SchedMD publishes "
            "none): name the site's repository in software.slurm_repository, or use the "
            "distribution's packages (slurm_packages: distribution)",
        )
    ]


# A path segment that names one CPU architecture: Debian's (amd64, arm64), the kernel's
# (x86_64, aarch64) and NVIDIA's (sbsa, arm64-sbsa: the DOCA and CUDA repositories).
_ARCH_SEGMENT = re.compile(r"/(x86_64|amd64|aarch64|arm64|sbsa|arm64-sbsa)(?:/|$)")


def repository_architectures(cluster: ResolvedCluster) -> list[Problem]:
    """Repositories against the nodes' CPU architectures (catalog/architectures.py)."""
    arches = {name: profile_cpu_arch(p) for name, p in cluster.spec.hardware.items()}
    nodes: dict[str, list[str]] = {}
    for host in cluster.hosts:
        if host.hardware_name in arches:
            nodes.setdefault(arches[host.hardware_name], []).append(host.name)
    problems = []
    for index, repository in enumerate(cluster.spec.software.repositories):
        path = ("software", "repositories", index)
        if repository.architectures is not None:
            unused = [a for a in repository.architectures if a not in nodes]
            if unused:
                problems.append(
                    Problem(
                        codes.SOFTWARE_REPOSITORY_ARCHITECTURE,
                        (*path, "architectures"),
                        f"repository '{repository.name}' is for {', '.join(unused)}, but no "
                        "node is (the hardware profiles' cpu.arch)",
                    )
                )
            continue
        named = _ARCH_SEGMENT.search(repository.url)
        if len(nodes) > 1 and named and not follows_architecture(repository.url):
            problems.append(
                Problem(
                    codes.SOFTWARE_REPOSITORY_ARCHITECTURE,
                    (*path, "url"),
                    f"repository '{repository.name}' serves {named[1]} (its path says so), "
                    f"but every node gets it, the {' and '.join(sorted(nodes))} ones alike: "
                    "say which in architectures, with a repository for the others",
                )
            )
    return problems


def nvidia_repository_listed(cluster: ResolvedCluster) -> list[Problem]:
    """GPU nodes pin NVIDIA's packages (the driver's -0ubuntu1 / .el builds, cuda-toolkit-X-Y,
    libnccl2's +cudaX.Y builds, datacenter-gpu-manager-4), which NVIDIA's CUDA repository
    for the OS serves and no distribution archive does: with none of software.repositories
    NVIDIA's, say so, naming the site's repositories that would have to mirror it."""
    spec = cluster.spec
    if not any(host.hardware.gpu is not None for host in cluster.hosts):
        return []
    repositories = spec.software.repositories
    if any(is_nvidia_cuda_repository(repository.url) for repository in repositories):
        return []
    others = ", ".join(f"'{r.name}'" for r in repositories)
    mirror = f"unless {others} mirrors it, " if others else "and software.repositories lists none, "
    return [
        Problem(
            codes.SOFTWARE_NVIDIA_REPOSITORY_MISSING,
            ("software", "repositories") if repositories else ("software", "nvidia_driver"),
            f"the GPU nodes pin NVIDIA's driver {spec.software.nvidia_driver}, CUDA "
            f"{spec.software.cuda} and NCCL {spec.software.nccl} builds, which NVIDIA's CUDA "
            f"repository for {spec.software.os} serves and no distribution archive does; "
            f"no repository of software.repositories is NVIDIA's, {mirror}so apt or dnf "
            "finds none of them: add NVIDIA's CUDA repository (its url and key_url, "
            "docs/ansible.md)",
        )
    ]
