"""The NVIDIA stack's packages: the driver's compute-only set and what is built with it
(fabric manager, IMEX, DCGM's NVSwitch libraries), NVLSM, CUDA, NCCL, cuDNN and DCGM.

Sources (as recorded in shared/reference/domain-facts.md):
- NCCL [src: NCCL packaging]: `libnccl2`/`libnccl-dev` (apt), `libnccl`/`libnccl-devel`
  (dnf) at `<nccl>-1+cuda<major>.<minor>` of the CUDA build, which is the pinned CUDA.
- CUDA toolkit: `cuda-toolkit-<major>-<minor>` at `<cuda>-1`.
- Drivers [doc, 2nd]: the compute-only (headless) set of the branch from NVIDIA's CUDA
  repository (`nvidia-headless-<branch>` and its libraries on apt, at `<driver>-0ubuntu1`
  on Ubuntu, with its GSP firmware and libnvidia-common; Debian's names on Debian:
  `nvidia-driver-cuda`, `nvidia-kernel-open-dkms`, `firmware-nvidia-gsp` at `<driver>-1`;
  `nvidia-driver-cuda` and its libraries on EL from 560). Every package of the set is
  pinned (driver_branch_packages), and on apt one preferences record holds every other
  package of the driver's build at its version (driver_sibling_pins); EL driver RPMs carry
  Epoch 3. Fabric manager [2nd]:
  `nvidia-fabricmanager-<branch>` (apt; `nvidia-fabricmanager` from branch 580) /
  `nvidia-fabric-manager` (dnf), version equal to the driver.
- DCGM: `datacenter-gpu-manager` for 3.x, `datacenter-gpu-manager-4-*` for 4.x; the
  packages carry epoch 1.
"""

from __future__ import annotations

from clustergen.catalog.distributions import PackageFamily
from clustergen.catalog.pins import OS_PACKAGE_FAMILY, Pins, el_dist
from clustergen.catalog.versions import parse_version
from clustergen.model.software import Software

# NVIDIA's driver RPMs (and the fabric manager built with them) carry `Epoch: 3`; the lock
# records it so installed and locked versions compare equal (domain-facts: version locking).
_NVIDIA_RPM_EPOCH = 3


def cuda_suffix(cuda: str) -> str:
    """The `+cudaX.Y` build tag NCCL packages carry, from the pinned CUDA version."""
    major, minor = parse_version(cuda)[:2]
    return f"+cuda{major}.{minor}"


def _branch(driver: str) -> int:
    return parse_version(driver)[0]


# The compute-only ("headless") set of a driver branch, per family: a GPU node of a cluster
# drives no display, so no X server driver, no OpenGL/Vulkan, no frame-buffer capture and
# no video codec libraries. Every package of the set is pinned [2nd: NVIDIA's driver
# installation guide, "Version locking" (lock every package of the branch, not only the
# meta package)].
# apt [doc: NVIDIA Driver Installation Guide, "Compute-only and Desktop Installation"
# (docs.nvidia.com/datacenter/tesla/driver-installation-guide/compute-only-and-desktop-
# installation.html); the nvidia-graphics-drivers-<branch> source package's binaries as
# listed on packages.ubuntu.com]: the meta package `nvidia-headless-<branch>` (`-open` for
# the open kernel modules) depends on libnvidia-cfg1, libnvidia-compute, nvidia-compute-utils,
# nvidia-kernel-common, nvidia-kernel-source and nvidia-dkms of its branch; nvidia-utils
# carries nvidia-smi. Left out: nvidia-driver-<branch>/cuda-drivers-<branch>/nvidia-open-<branch>
# (desktop metas), xserver-xorg-video-nvidia, libnvidia-gl, libnvidia-fbc1, libnvidia-decode,
# libnvidia-encode, libnvidia-extra. `{b}` is the branch, `{open}` is `-open` where the
# branch installs the open kernel modules (570 on). From branch 590 the branch suffix leaves
# the apt package names (`{b}` is then empty) and the set is pinned without a meta package.
_APT_DRIVER_COMPUTE_ONLY: tuple[str, ...] = (
    "libnvidia-cfg1{b}",
    "libnvidia-compute{b}",
    "nvidia-compute-utils{b}",  # ships nvidia-persistenced
    "nvidia-dkms{b}{open}",
    "nvidia-kernel-common{b}",
    "nvidia-kernel-source{b}{open}",
    "nvidia-utils{b}",  # ships nvidia-smi
)
# EL [doc: the same page]: from branch 560 a compute-only system installs nvidia-driver-cuda
# and the kernel module, without nvidia-driver (the X driver) and nvidia-driver-libs
# (OpenGL/Vulkan/EGL). Before 560 there is no compute-only form: the whole branch.
_DNF_DRIVER_COMPUTE_ONLY: tuple[str, ...] = (
    "libnvidia-cfg",
    "libnvidia-ml",
    "nvidia-driver-cuda",
    "nvidia-driver-cuda-libs",
    "nvidia-kmod-common",
    "nvidia-modprobe",
    "nvidia-persistenced",
)
_DNF_DRIVER_DESKTOP: tuple[str, ...] = ("nvidia-driver", "nvidia-driver-libs")
# Debian [doc: NVIDIA Driver Installation Guide, "Debian", compute-only system: `apt install
# nvidia-driver-cuda nvidia-kernel-open-dkms` (`nvidia-kernel-dkms` for the proprietary
# modules)]: NVIDIA's debian12 and debian13 repositories name the driver as Debian's own
# packaging does (packages.debian.org, source nvidia-graphics-drivers), not as Ubuntu's:
# no branch in the names and no `nvidia-headless-*`. The kernel module's package depends
# on the GSP firmware of its exact version [src: packages.debian.org trixie/
# nvidia-kernel-dkms 550.163.01-2: "dep: firmware-nvidia-gsp (= 550.163.01)"];
# nvidia-persistenced ships the unit the role enables. Before 560 there is no compute-only
# form: `nvidia-driver` in place of nvidia-driver-cuda.
_DEBIAN_DRIVER_COMPUTE_ONLY: tuple[str, ...] = (
    "firmware-nvidia-gsp",
    "nvidia-driver-cuda",
    "nvidia-persistenced",
)
# Ubuntu's siblings of the set, pinned and held with it [src: packages.ubuntu.com noble/
# nvidia-kernel-common-580 580.159.03-0ubuntu0.24.04.1: "dep: nvidia-firmware-580-580.159.03";
# the 590 renames in the driver installation guide's "Recent updates": libnvidia-common-580
# becomes libnvidia-common]: the GSP firmware, one package per driver version (from branch
# 525), and libnvidia-common (application profiles).
_APT_DRIVER_FIRMWARE_FIRST = 525
# The branch that first drops the branch suffix from apt package names.
_UNSUFFIXED_BRANCH = 590
_OPEN_MODULES_BRANCH = 570
# The first branch with a compute-only installation (nvidia-driver-cuda) on EL and Debian,
# and with kmod-nvidia-open-dkms.
_EL_COMPUTE_ONLY_BRANCH = 560

# The packaging revision of the per-branch driver packages in NVIDIA's CUDA repository for
# Ubuntu: `nvidia-utils-550_550.90.07-0ubuntu1_amd64.deb`, `libnvidia-compute-550=
# 550.90.07-0ubuntu1`, while cuda-drivers-<branch> and the fabric manager carry `-1`
# [shared/reference/domain-facts.md, "NVIDIA's CUDA apt repository for Ubuntu 22.04"].
# `clustergen lock` checks every pin against the repository's index.
_UBUNTU_DRIVER_REVISION = "0ubuntu1"
_NVIDIA_REVISION = "1"


def driver_branch_packages(
    family: PackageFamily, branch: int, os: str = "", driver: str = ""
) -> tuple[str, ...]:
    """The compute-only packages of one driver branch, the meta package first (if any).
    On apt, `os` picks Debian's naming or Ubuntu's, and `driver` (the exact version) names
    Ubuntu's per-version firmware package."""
    open_suffix = "-open" if branch >= _OPEN_MODULES_BRANCH else ""
    if family == "apt" and os.startswith("debian-"):
        module = "nvidia-kernel-open-dkms" if open_suffix else "nvidia-kernel-dkms"
        names = {*_DEBIAN_DRIVER_COMPUTE_ONLY, module}
        if branch < _EL_COMPUTE_ONLY_BRANCH:
            # No compute-only form before 560: the whole driver (nvidia-driver), whose
            # CUDA library and nvidia-smi Debian's packaging only recommends.
            names = (names - {"nvidia-driver-cuda"}) | {"libcuda1", "nvidia-driver", "nvidia-smi"}
        return tuple(sorted(names))
    if family == "apt":
        if branch >= _UNSUFFIXED_BRANCH:
            unsuffixed = [n.format(b="", open=open_suffix) for n in _APT_DRIVER_COMPUTE_ONLY]
            return tuple(sorted((*unsuffixed, "libnvidia-common")))
        suffix = f"-{branch}"
        siblings = [f"libnvidia-common{suffix}"]
        if driver and branch >= _APT_DRIVER_FIRMWARE_FIRST:
            siblings.append(f"nvidia-firmware{suffix}-{driver}")
        return (
            f"nvidia-headless-{branch}{open_suffix}",
            *sorted(
                (
                    *(n.format(b=suffix, open=open_suffix) for n in _APT_DRIVER_COMPUTE_ONLY),
                    *siblings,
                )
            ),
        )
    # EL: the user space and its kernel module, pinned directly (module streams cannot
    # pin an exact driver).
    if branch >= _EL_COMPUTE_ONLY_BRANCH:
        return ("kmod-nvidia-open-dkms", *_DNF_DRIVER_COMPUTE_ONLY)
    return (
        "kmod-nvidia-latest-dkms",
        *sorted((*_DNF_DRIVER_COMPUTE_ONLY, *_DNF_DRIVER_DESKTOP)),
    )


def nvidia_driver_pins(family: PackageFamily, s: Software) -> Pins:
    driver = s.nvidia_driver
    names = driver_branch_packages(family, _branch(driver), s.os, driver)
    if family == "dnf":
        version = f"{_NVIDIA_RPM_EPOCH}:{driver}-1{el_dist(s)}"
    elif s.os.startswith("ubuntu-"):
        version = f"{driver}-{_UBUNTU_DRIVER_REVISION}"
    else:
        version = f"{driver}-{_NVIDIA_REVISION}"
    return dict.fromkeys(names, version)


# Every other binary package of the driver's build, whatever its name (a sibling pulled
# in by a dependency: libnvidia-gl-*, libcuda1, libnvidia-ml1 on Debian, a renamed
# firmware package), is held at the driver packages' exact version string by one apt
# preferences record [man: apt_preferences(5), "Matching packages in the Package field":
# a glob or a /regular expression/ per name; a version pin raises only the versions it
# matches]. Exact, not `<driver>-*`: a glob would raise another build of the same driver
# (`-0ubuntu2` beside `-0ubuntu1`) to 1001 too, and apt would take it over the pinned one.
# NVIDIA's other packages (container toolkit, DCGM, NCCL) carry versions of their own and
# are untouched by it.
# Debian's binaries of nvidia-graphics-drivers without "nvidia" in their names are listed.
DRIVER_SIBLING_NAMES = "/nvidia/ libcuda1 libcudadebugger1 libnvcuvid1 libnvoptix1"


def driver_sibling_pins(s: Software, driver_pins: Pins) -> list[dict[str, str]]:
    """The apt preferences records that hold every package of the driver's build at the
    version of its pinned packages (software.packages overrides included: the version most
    of them carry); none on dnf, where the compute-only set is the whole branch."""
    if OS_PACKAGE_FAMILY[s.os] != "apt" or not driver_pins:
        return []
    versions = list(driver_pins.values())
    version = max(sorted(set(versions)), key=versions.count)
    return [{"packages": DRIVER_SIBLING_NAMES, "version": version}]


# NVIDIA's NVLink Subnet Manager, beside the fabric manager on fourth-generation NVSwitch
# (HGX B200/B300) [doc: NVIDIA Fabric Manager User Guide, release 2.3, 1.5 "What is NVLink
# Subnet Manager?" and the installation chapter: package `nvlsm` from the CUDA repository].
# Its version is its own (software.nvlsm), not the driver's; `clustergen lock` checks it
# against the repository's index.
NVLSM_PACKAGE = "nvlsm"


# DCGM's NVSwitch libraries, at the driver's version, on the NVSwitch nodes where DCGM is
# pinned. NSCQ: "NVIDIA NVSwitch Configuration and Query (NSCQ) library provides a stable
# driver API used by DCGM for monitoring NVSwitch devices ... the version of
# libnvidia-nscq must match the NVIDIA driver installed" [src: NVIDIA/apt-packaging-
# libnvidia-nscq README: `libnvidia-nscq-<branch>_<driver>-1`; NVIDIA/yum-packaging-
# libnvidia-nscq libnvidia_nscq.spec: Name libnvidia-nscq-%{branch}, Release 1, no Epoch].
# NVSDM, with NVLSM on fourth-generation NVSwitch: "a library designed for monitoring
# NVSwitch-based systems on NVIDIA Blackwell platforms" [doc: NVSDM API Reference,
# docs.nvidia.com/datacenter/tesla/nvsdm; "Installation": `libnvsdm-<driver-branch>` from
# the CUDA repository, apt and dnf]. From branch 580 the apt names of NSCQ, NVSDM, the
# fabric manager and IMEX carry no branch (_NVSWITCH_UNSUFFIXED_BRANCH below); the driver
# installation guide's 590 renames list libnvidia-nscq and libnvsdm as "no change".
def _nvswitch_monitoring(s: Software) -> Pins:
    if s.dcgm is None:
        return {}
    driver = s.nvidia_driver
    pins = {_with_branch("libnvidia-nscq", driver): f"{driver}-1"}
    if s.nvlsm is not None:
        pins[_with_branch("libnvsdm", driver)] = f"{driver}-1"
    return pins


# The apt names of the packages built with the driver beside it (the fabric manager, IMEX,
# NSCQ, NVSDM) drop the branch from 580 on: NVIDIA's own driver container installs
# `nvidia-fabricmanager=<driver>-1`, `libnvidia-nscq=`, `libnvsdm=` and `nvidia-imex=` from
# branch 580 and `nvidia-fabricmanager-<branch>=<driver>-1` and alike before it [src:
# NVIDIA/gpu-driver-container ubuntu22.04/install.sh at 8cbaa514, fabricmanager_install,
# nscq_install, nvsdm_install, imex_install: `if [ "$DRIVER_BRANCH" -ge "580" ]`].
_NVSWITCH_UNSUFFIXED_BRANCH = 580


def _with_branch(name: str, driver: str) -> str:
    """An apt name of the driver's companions: `<name>-<branch>` before 580, `<name>` on."""
    branch = _branch(driver)
    return name if branch >= _NVSWITCH_UNSUFFIXED_BRANCH else f"{name}-{branch}"


def fabric_manager_pins(family: PackageFamily, s: Software) -> Pins:
    if s.fabric_manager is None:
        return {}
    nvlsm = {NVLSM_PACKAGE: f"{s.nvlsm}-1"} if s.nvlsm is not None else {}
    monitoring = _nvswitch_monitoring(s)
    if family == "apt":
        fm = _with_branch("nvidia-fabricmanager", s.fabric_manager)
        return {fm: f"{s.fabric_manager}-1", **nvlsm, **monitoring}
    fm_rpm = f"{_NVIDIA_RPM_EPOCH}:{s.fabric_manager}-1"
    return {"nvidia-fabric-manager": fm_rpm, **nvlsm, **monitoring}


# NVIDIA's IMEX service on the compute trays of NVLink domains, built with the driver and
# at its version: `nvidia-imex-<branch>` (apt, `nvidia-imex` from branch 580) / `nvidia-imex`
# (dnf) [doc: NVIDIA IMEX Service User Guide, "Installation"
# (docs.nvidia.com/multi-node-nvlink-systems/imex-guide); _NVSWITCH_UNSUFFIXED_BRANCH].
def imex_pins(family: PackageFamily, s: Software) -> Pins:
    driver = s.nvidia_driver
    if family == "apt":
        return {_with_branch("nvidia-imex", driver): f"{driver}-1"}
    return {"nvidia-imex": f"{_NVIDIA_RPM_EPOCH}:{driver}-1"}


def cuda_pins(family: PackageFamily, s: Software) -> Pins:
    major, minor = parse_version(s.cuda)[:2]
    return {f"cuda-toolkit-{major}-{minor}": f"{s.cuda}-1"}


def nccl_pins(family: PackageFamily, s: Software) -> Pins:
    version = f"{s.nccl}-1{cuda_suffix(s.cuda)}"
    if family == "apt":
        return {"libnccl2": version, "libnccl-dev": version}
    return {"libnccl": version, "libnccl-devel": version}


def cudnn_pins(family: PackageFamily, s: Software) -> Pins:
    if s.cudnn is None:
        return {}
    cudnn_major = parse_version(s.cudnn)[0]
    cuda_major = parse_version(s.cuda)[0]
    dev = "dev" if family == "apt" else "devel"
    if cudnn_major >= 9:
        # cuDNN 9 ships one package per CUDA major version.
        version = f"{s.cudnn}-1"
        return {
            f"libcudnn{cudnn_major}-cuda-{cuda_major}": version,
            f"libcudnn{cudnn_major}-{dev}-cuda-{cuda_major}": version,
        }
    # cuDNN 8 carries the CUDA it was built with, which need not be the pinned one
    # (checks.packages warns unless software.packages sets it).
    version = f"{s.cudnn}-1{cuda_suffix(s.cuda)}"
    return {f"libcudnn{cudnn_major}": version, f"libcudnn{cudnn_major}-{dev}": version}


def dcgm_pins(family: PackageFamily, s: Software) -> Pins:
    if s.dcgm is None:
        return {}
    dcgm_major = parse_version(s.dcgm)[0]
    if dcgm_major <= 3:
        version = f"1:{s.dcgm}" if family == "apt" else f"1:{s.dcgm}-1"
        return {"datacenter-gpu-manager": version}
    # DCGM 4 splits into a core package and one per CUDA major version.
    cuda_major = parse_version(s.cuda)[0]
    version = f"1:{s.dcgm}-1"
    return {
        f"datacenter-gpu-manager-{dcgm_major}-core": version,
        f"datacenter-gpu-manager-{dcgm_major}-cuda{cuda_major}": version,
    }
