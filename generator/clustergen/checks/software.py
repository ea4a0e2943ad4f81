"""The pinned stack: CUDA against the GPUs and the driver, Fabric Manager against NVSwitch."""

from __future__ import annotations

from clustergen import codes
from clustergen.catalog.cuda import MIN_DRIVER, minimum_driver
from clustergen.catalog.gpus import GPU_MODELS
from clustergen.catalog.slurm_keys import KEY_LIST_VERSIONS, key_list_version, release_name
from clustergen.catalog.versions import parse_version
from clustergen.errors import Problem
from clustergen.model import Spec
from clustergen.resolve import Cluster


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(str(part) for part in version)


def versions(cluster: Cluster) -> list[Problem]:
    spec = cluster.spec
    return [*_cuda_and_driver(spec), *_slurm_version(spec)]


def gpus(cluster: Cluster) -> list[Problem]:
    """The stack against the GPUs the hardware profiles have."""
    spec = cluster.spec
    return [*_gpu_architectures(spec), *_fabric_manager(spec)]


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
                f"driver {software.nvidia_driver} is older than {_dotted(minimum)}, "
                "the minimum for "
                f"CUDA {software.cuda} ({rule} row of the CUDA release notes)",
            )
        ]
    return []


def _gpu_architectures(spec: Spec) -> list[Problem]:
    cuda = parse_version(spec.software.cuda)[:2]
    problems = []
    for name, profile in spec.hardware.items():
        if profile.gpu is None or profile.gpu.model not in GPU_MODELS:
            continue
        model = GPU_MODELS[profile.gpu.model]
        arch = model.architecture
        if cuda < arch.first_cuda:
            problems.append(
                Problem(
                    codes.SOFTWARE_CUDA_TOO_OLD_FOR_GPU,
                    ("software", "cuda"),
                    f"CUDA {spec.software.cuda} cannot target {model.name} ({arch.sm}, "
                    f"hardware.{name}); it needs CUDA {_dotted(arch.first_cuda)} or newer",
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
    return problems


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


def _slurm_version(spec: Spec) -> list[Problem]:
    if key_list_version(spec.software.slurm) is None:
        oldest = release_name(KEY_LIST_VERSIONS[0])
        return [
            Problem(
                codes.SOFTWARE_SLURM_TOO_OLD,
                ("software", "slurm"),
                f"Slurm {spec.software.slurm} is older than {oldest}, the oldest version "
                "clustergen supports",
            )
        ]
    return []
