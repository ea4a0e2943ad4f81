"""Package names and exact version strings of the pinned stack, per OS family.

Each concern (driver, fabric manager, CUDA, ...) maps the versions of the spec's
`software` block to the packages that carry them and the version string the
package manager must be given. The roles install exactly these and hold them.

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
  `nvidia-fabricmanager-<branch>` (apt) / `nvidia-fabric-manager` (dnf), version equal
  to the driver.
- DCGM: `datacenter-gpu-manager` for 3.x, `datacenter-gpu-manager-4-*` for 4.x; the
  packages carry epoch 1.
- Slurm (software.slurm_packages): SchedMD's own Debian packaging (`slurm-smd-*`, from
  23.11) and RPM spec (`slurm`, `slurm-slurmctld`, ...), built by the site; or the
  distribution's (`slurmctld`, `slurmd`, `slurmdbd`, `slurm-client`; EPEL's `slurm-*`),
  pinned as `<version>-*` since their revision follows the distribution's point releases.
- Lustre: Whamcloud's client packages (DKMS module on apt, kmod on EL); on servers the
  common packages, plus the OSD of each backend only on the servers of the targets that
  use it (`kmod-lustre-osd-ldiskfs`/`-zfs` on EL), and OpenZFS (software.zfs) on zfs ones.

Revision suffixes (`-1`, `-0ubuntu1`, `.el9`) are repository choices that clustergen
cannot know for certain; `software.packages` overrides any derived version string,
versions.lock shows every string before anything is installed, and `clustergen lock`
checks each against the repositories' package indexes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from clustergen.base.artifacts import NO_CHANGE, NodeChange
from clustergen.catalog.distributions import DISTRIBUTIONS
from clustergen.catalog.distributions import PackageFamily as PackageFamily
from clustergen.catalog.groups import (
    ANSIBLE_PULL_GROUP,
    DCGM_EXPORTER_GROUP,
    GPU_GROUP,
    LUSTRE_CLIENT_GROUP,
    LUSTRE_LDISKFS_GROUP,
    LUSTRE_SERVER_GROUP,
    LUSTRE_ZFS_GROUP,
    NODE_EXPORTER_GROUP,
    NVLINK_GROUP,
    NVSWITCH_GROUP,
    OPENSM_GROUP,
    RDMA_GROUP,
    SLURM_EXPORTER_GROUP,
    SLURM_GROUP,
)
from clustergen.catalog.monitoring import (
    DCGM_EXPORTER_PACKAGE,
    NODE_EXPORTER,
    SLURM_EXPORTER_PACKAGE,
    dcgm_exporter_version,
)
from clustergen.catalog.versions import parse_version
from clustergen.model.monitoring import Monitoring
from clustergen.model.software import SlurmPackaging, Software

# apt or dnf per software.os (catalog/distributions.py).
OS_PACKAGE_FAMILY: dict[str, PackageFamily] = {n: d.family for n, d in DISTRIBUTIONS.items()}


def _el_dist(s: Software) -> str:
    """RPM release suffix of packages built per EL release (Slurm, Lustre, drivers):
    `.el9`, `.el10` (catalog/distributions.py)."""
    return DISTRIBUTIONS[s.os].el_dist or ""


# NVIDIA's driver RPMs (and the fabric manager built with them) carry `Epoch: 3`; the lock
# records it so installed and locked versions compare equal (domain-facts: version locking).
_NVIDIA_RPM_EPOCH = 3

Pins = dict[str, str]  # package name -> exact version string


@dataclass(frozen=True)
class StackPins:
    """Every concern's packages for one spec, overrides applied."""

    family: PackageFamily
    by_concern: dict[str, Pins]

    def all_packages(self) -> Pins:
        merged: Pins = {}
        for pins in self.by_concern.values():
            merged.update(pins)
        return merged


def cuda_suffix(cuda: str) -> str:
    """The `+cudaX.Y` build tag NCCL packages carry, from the pinned CUDA version."""
    major, minor = parse_version(cuda)[:2]
    return f"+cuda{major}.{minor}"


def upstream_version(package_version: str) -> str:
    """'1:3.3.6-1' -> '3.3.6': drop the epoch and the packaging revision."""
    without_epoch = package_version.split(":", 1)[1] if ":" in package_version else package_version
    return without_epoch.rsplit("-", 1)[0] if "-" in without_epoch else without_epoch


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


def _nvidia_driver(family: PackageFamily, s: Software) -> Pins:
    driver = s.nvidia_driver
    names = driver_branch_packages(family, _branch(driver), s.os, driver)
    if family == "dnf":
        version = f"{_NVIDIA_RPM_EPOCH}:{driver}-1{_el_dist(s)}"
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
# the CUDA repository, apt and dnf]. From branch 590 both keep their names unsuffixed
# (the driver installation guide's 590 renames: libnvidia-nscq and libnvsdm "no change").
def _nvswitch_monitoring(s: Software) -> Pins:
    if s.dcgm is None:
        return {}
    branch = _branch(s.nvidia_driver)
    suffix = "" if branch >= _UNSUFFIXED_BRANCH else f"-{branch}"
    pins = {f"libnvidia-nscq{suffix}": f"{s.nvidia_driver}-1"}
    if s.nvlsm is not None:
        pins[f"libnvsdm{suffix}"] = f"{s.nvidia_driver}-1"
    return pins


def _fabric_manager(family: PackageFamily, s: Software) -> Pins:
    if s.fabric_manager is None:
        return {}
    nvlsm = {NVLSM_PACKAGE: f"{s.nvlsm}-1"} if s.nvlsm is not None else {}
    monitoring = _nvswitch_monitoring(s)
    if family == "apt":
        fm = f"nvidia-fabricmanager-{_branch(s.fabric_manager)}"
        return {fm: f"{s.fabric_manager}-1", **nvlsm, **monitoring}
    fm_rpm = f"{_NVIDIA_RPM_EPOCH}:{s.fabric_manager}-1"
    return {"nvidia-fabric-manager": fm_rpm, **nvlsm, **monitoring}


# NVIDIA's IMEX service on the compute trays of NVLink domains, built with the driver and
# at its version: `nvidia-imex-<branch>` (apt) / `nvidia-imex` (dnf) [doc: NVIDIA IMEX
# Service User Guide, "Installation" (docs.nvidia.com/multi-node-nvlink-systems/imex-guide)].
def _imex(family: PackageFamily, s: Software) -> Pins:
    driver = s.nvidia_driver
    if family == "apt":
        return {f"nvidia-imex-{_branch(driver)}": f"{driver}-1"}
    return {"nvidia-imex": f"{_NVIDIA_RPM_EPOCH}:{driver}-1"}


def _cuda(family: PackageFamily, s: Software) -> Pins:
    major, minor = parse_version(s.cuda)[:2]
    return {f"cuda-toolkit-{major}-{minor}": f"{s.cuda}-1"}


def _nccl(family: PackageFamily, s: Software) -> Pins:
    version = f"{s.nccl}-1{cuda_suffix(s.cuda)}"
    if family == "apt":
        return {"libnccl2": version, "libnccl-dev": version}
    return {"libnccl": version, "libnccl-devel": version}


def _nhc(family: PackageFamily, s: Software) -> Pins:
    """LBNL NHC, at the exact version the site's repository serves (software.nhc)."""
    del family  # the same name and version string on apt and dnf
    return {} if s.nhc is None else {s.nhc.package: s.nhc.version}


def _cudnn(family: PackageFamily, s: Software) -> Pins:
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


def _dcgm(family: PackageFamily, s: Software) -> Pins:
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


# derived_pins' feature of slurm.mpi: pmix (the slurm_pmix concern).
PMIX_FEATURE = "pmix"

_SlurmKind = Literal["controller", "dbd", "compute", "login"]

# The Slurm release each distribution ships in its own archive (catalog/distributions.py,
# with sources). EL is absent: EPEL's build moves within a release (checks.software asks
# the site to confirm it).
DISTRIBUTION_SLURM: dict[str, str] = {
    n: d.slurm for n, d in DISTRIBUTIONS.items() if d.slurm is not None
}
# The first release SchedMD's own debian/ packaging (slurm-smd-*) builds.
SCHEDMD_APT_FIRST: tuple[int, int] = (23, 11)

# Package names per packaging and family. Debian/Ubuntu split Slurm into slurmctld,
# slurmd, slurmdbd and slurm-client; SchedMD's debian/ packaging into slurm-smd-*;
# SchedMD's slurm.spec and EPEL's build (derived from it) into slurm-<daemon>.
_APT_DISTRIBUTION_SLURM: dict[_SlurmKind, list[str]] = {
    "controller": ["slurm-client", "slurmctld"],
    "dbd": ["slurmdbd"],
    "compute": ["libpam-slurm-adopt", "slurm-client", "slurmd"],
    "login": ["slurm-client"],
}
_APT_SCHEDMD_SLURM: dict[_SlurmKind, list[str]] = {
    "controller": ["slurm-smd", "slurm-smd-client", "slurm-smd-slurmctld"],
    "dbd": ["slurm-smd", "slurm-smd-slurmdbd"],
    "compute": [
        "slurm-smd",
        "slurm-smd-client",
        "slurm-smd-libpam-slurm-adopt",
        "slurm-smd-slurmd",
    ],
    "login": ["slurm-smd", "slurm-smd-client"],
}
_DNF_SLURM: dict[_SlurmKind, list[str]] = {
    "controller": ["slurm", "slurm-slurmctld"],
    "dbd": ["slurm", "slurm-slurmdbd"],
    "compute": ["slurm", "slurm-pam_slurm", "slurm-slurmd"],
    "login": ["slurm"],
}


def slurm_packaging(software: Software) -> SlurmPackaging:
    """software.slurm_packages, or where the packages of this version come from by default:
    the distribution's on apt before SchedMD packaged for Debian, SchedMD's otherwise."""
    if software.slurm_packages is not None:
        return software.slurm_packages
    family = OS_PACKAGE_FAMILY[software.os]
    if family == "apt" and parse_version(software.slurm)[:2] < SCHEDMD_APT_FIRST:
        return "distribution"
    return "schedmd"


def distribution_version_pin(version: str) -> str:
    """A distribution's package at an upstream version, whatever its packaging revision
    (Debian's 22.05.8-4+deb12u3 moves with point releases): a glob that apt preferences,
    Ansible's apt module (`name=22.05.8-*`), dnf and the drift report all match."""
    return f"{version}-*"


def _slurm(kind: _SlurmKind) -> Callable[[PackageFamily, Software], Pins]:
    def pins(family: PackageFamily, s: Software) -> Pins:
        packaging = slurm_packaging(s)
        if packaging == "distribution":
            names = (_APT_DISTRIBUTION_SLURM if family == "apt" else _DNF_SLURM)[kind]
            return dict.fromkeys(names, distribution_version_pin(s.slurm))
        if family == "dnf":
            return dict.fromkeys(_DNF_SLURM[kind], f"{s.slurm}-1{_el_dist(s)}")
        return dict.fromkeys(_APT_SCHEDMD_SLURM[kind], f"{s.slurm}-1")

    return pins


# Slurm's mpi/pmix plugin and the PMIx it loads (slurm.mpi: pmix). Debian's Slurm ships
# mpi_pmix.so in slurm-wlm-basic-plugins, which slurmd depends on at its own version:
# bookworm's 22.05.8 as mpi_pmix_v4.so, trixie's 24.11.5 as mpi_pmix_v5.so [src: dpkg -c of
# slurm-wlm-basic-plugins 22.05.8-4+deb12u3 and 24.11.5-4+deb13u1]; it is pinned with the
# PMIx runtime so both move together. The plugin dlopens the library rather than linking
# it, so no package depends on the runtime: Slurm before 23.02.5 opens the unversioned
# libpmix.so, which Debian ships only in libpmix-dev; from 23.02.5 libpmix.so.2, in the
# runtime package [src: SchedMD/slurm src/plugins/mpi/pmix/mpi_pmix.c _libpmix_open at
# slurm-22-05-8-1 and slurm-24-11-5-1; commit 5d35aa58ad "Fix runtime linking", first in
# slurm-23-02-5-1]. SchedMD's packages (slurm-smd) carry the plugin themselves when built
# with PMIx. EL: neither is known here (checks.nccl warns).
PMIX_SONAME_FROM: tuple[int, ...] = (23, 2, 5)
DEBIAN_SLURM_PLUGINS = "slurm-wlm-basic-plugins"


def _slurm_pmix(family: PackageFamily, s: Software) -> Pins:
    runtime = DISTRIBUTIONS[s.os].pmix
    if family != "apt" or runtime is None:
        return {}
    name, version = runtime
    pins = {name: distribution_version_pin(version)}
    if parse_version(s.slurm) < PMIX_SONAME_FROM:
        pins["libpmix-dev"] = distribution_version_pin(version)
    if slurm_packaging(s) == "distribution":
        pins[DEBIAN_SLURM_PLUGINS] = distribution_version_pin(s.slurm)
    return pins


def _lustre_client(family: PackageFamily, s: Software) -> Pins:
    if s.lustre is None:
        return {}
    if family == "apt":
        version = f"{s.lustre}-1"
        return {"lustre-client-utils": version, "lustre-client-modules-dkms": version}
    version = f"{s.lustre}-1{_el_dist(s)}"
    return {"lustre-client": version, "kmod-lustre-client": version}


# Lustre's server modules on apt, built for one kernel: no DKMS package (catalog/lustre.py).
SERVER_MODULES_PACKAGE = "lustre-server-modules-{kernel}"


def _lustre_server(family: PackageFamily, s: Software) -> Pins:
    """What every Lustre server runs, whatever its targets' backend: Whamcloud's el9 server
    RPMs `lustre` and `kmod-lustre`; on apt the utilities and the server modules the site
    built for its kernel (software.lustre_server_kernel; catalog/lustre.py: Lustre builds
    no DKMS package for servers), the OSDs it was configured with inside them."""
    if s.lustre is None:
        return {}
    if family == "apt":
        version = f"{s.lustre}-1"
        pins = {"lustre-server-utils": version}
        if s.lustre_server_kernel is not None:
            pins[SERVER_MODULES_PACKAGE.format(kernel=s.lustre_server_kernel)] = version
        return pins
    version = f"{s.lustre}-1{_el_dist(s)}"
    return dict.fromkeys(("lustre", "kmod-lustre"), version)


# The object storage device (OSD) of each backend, on the servers of the targets that use
# it [src: lustre-release lustre.spec.in, subpackages osd-ldiskfs, osd-ldiskfs-mount,
# osd-zfs and osd-zfs-mount of kmod-lustre / lustre; Whamcloud's lustre-ldiskfs-zfs meta
# package, which requires kmod-lustre-osd-ldiskfs for ldiskfs and zfs for ZFS].
def _lustre_ldiskfs(family: PackageFamily, s: Software) -> Pins:
    if s.lustre is None or family == "apt":
        return {}
    version = f"{s.lustre}-1{_el_dist(s)}"
    return dict.fromkeys(("kmod-lustre-osd-ldiskfs", "lustre-osd-ldiskfs-mount"), version)


def _lustre_zfs(family: PackageFamily, s: Software) -> Pins:
    """The zfs OSD and OpenZFS itself, at software.zfs [doc: OpenZFS "Getting Started":
    RHEL-based distributions install `zfs` with the kABI-tracking `kmod-zfs` from the
    zfs-release repository; Debian `zfsutils-linux` and `zfs-dkms` (contrib), Ubuntu the
    same two (universe)]. On apt `zfs-dkms` also carries the ZFS source tree Lustre's DKMS
    server modules build their zfs OSD against, even where the kernel ships a zfs module
    (Ubuntu). The distributions' ZFS packages are pinned as their upstream version with any
    revision, as the distribution's Slurm is."""
    if s.lustre is None:
        return {}
    pins: Pins = {}
    if family == "dnf":
        version = f"{s.lustre}-1{_el_dist(s)}"
        pins.update(dict.fromkeys(("kmod-lustre-osd-zfs", "lustre-osd-zfs-mount"), version))
    if s.zfs is None:
        return pins  # checks.packages reports the missing version
    if family == "dnf":
        pins.update(dict.fromkeys(("kmod-zfs", "zfs"), f"{s.zfs}-1{_el_dist(s)}"))
    else:
        pins.update(dict.fromkeys(("zfs-dkms", "zfsutils-linux"), distribution_version_pin(s.zfs)))
    return pins


# The RDMA user space of the distribution (software.rdma, docs/rdma.md): rdma-core with its
# verbs tools (ibv_devinfo: ibverbs-utils on apt, libibverbs-utils on EL) and diagnostics
# (ibstat: infiniband-diags), all binaries of the rdma-core source package and so of its
# version [src: rdma-core debian/control and redhat/rdma-core.spec]; perftest (ib_write_bw,
# which the acceptance jobs run) is its own source package.
_RDMA_CORE_PACKAGES: dict[PackageFamily, tuple[str, ...]] = {
    "apt": ("ibverbs-utils", "infiniband-diags", "rdma-core"),
    "dnf": ("infiniband-diags", "libibverbs-utils", "rdma-core"),
}


def rdma_versions(s: Software) -> tuple[str | None, str | None]:
    """(rdma-core upstream version, perftest package version) of the distribution stack:
    software.rdma's, else the catalog's for the OS; (None, None) with stack doca-ofed."""
    if s.rdma is not None and s.rdma.stack == "doca-ofed":
        return None, None
    given = s.rdma
    distribution = DISTRIBUTIONS[s.os]
    core = given.version if given and given.version else distribution.rdma_core
    perftest = given.perftest if given and given.perftest else distribution.perftest
    return core, perftest


def _rdma(family: PackageFamily, s: Software) -> Pins:
    core, perftest = rdma_versions(s)
    if core is None:
        return {}  # checks.software warns: nothing of the stack is installed
    pins = dict.fromkeys(_RDMA_CORE_PACKAGES[family], distribution_version_pin(core))
    if perftest is not None:
        pins["perftest"] = perftest
    return pins


def _opensm(family: PackageFamily, s: Software) -> Pins:
    """The distribution's OpenSM at the catalog's version for the OS (its own source
    package, not rdma-core's); none where the catalog knows no version."""
    version = DISTRIBUTIONS[s.os].opensm
    return {"opensm": version} if version is not None else {}


# Open MPI for nccl-tests (software.nccl_tests, roles/nccl_tests): the distribution's
# `mpicc` and headers (libopenmpi-dev) and its launcher and runtime (openmpi-bin) [src:
# Debian's openmpi source package; on Debian libopenmpi-dev installs MPI_HOME
# /usr/lib/<multiarch>/openmpi with include/mpi.h and lib/libmpi.so, the layout nccl-tests'
# src/Makefile reads with MPI=1 (-I$(MPI_HOME)/include -L$(MPI_HOME)/lib)]. On EL the
# headers sit outside MPI_HOME (/usr/include/openmpi-<arch>) and no version is known here:
# nothing is pinned (checks.nccl_tests warns).
_OPENMPI_PACKAGES = ("libopenmpi-dev", "openmpi-bin")


def openmpi_version(s: Software) -> str | None:
    """The Open MPI nccl-tests is built with: the catalog's for the OS, apt only."""
    if OS_PACKAGE_FAMILY[s.os] != "apt":
        return None
    return DISTRIBUTIONS[s.os].openmpi


def _nccl_tests(family: PackageFamily, s: Software) -> Pins:
    version = openmpi_version(s)
    if s.nccl_tests is None or version is None:
        return {}
    return dict.fromkeys(_OPENMPI_PACKAGES, distribution_version_pin(version))


# The exporters (monitoring:, catalog/monitoring.py). Their pins read the monitoring
# section; checks.monitoring reports a version it cannot find.
def _node_exporter(family: PackageFamily, s: Software, m: Monitoring) -> Pins:
    if m.node_exporter is None:
        return {}
    version = m.node_exporter.version or DISTRIBUTIONS[s.os].node_exporter
    if version is None:
        return {}
    return {NODE_EXPORTER[family].package: distribution_version_pin(version)}


def _dcgm_exporter(family: PackageFamily, s: Software, m: Monitoring) -> Pins:
    if m.dcgm_exporter is None:
        return {}
    version = dcgm_exporter_version(m.dcgm_exporter, s.dcgm)
    return {DCGM_EXPORTER_PACKAGE: f"{version}-1"} if version is not None else {}


def _slurm_exporter(family: PackageFamily, s: Software, m: Monitoring) -> Pins:
    if m.slurm is None or m.slurm.version is None:
        return {}
    return {SLURM_EXPORTER_PACKAGE: m.slurm.version}


# Pull mode (ansible.pull, roles/ansible_pull): the distribution's ansible bundle (the
# collections the roles use), the ansible-core it depends on (ansible-pull), git, and gpgv
# (OpenPGP-signed releases; catalog/distributions.py); checks.ansible reports an OS the
# catalog has none for.
PULL_PACKAGES: dict[str, str] = {
    "ansible": "ansible",
    "ansible-core": "ansible_core",
    "git": "git",
    "gpgv": "gpgv",
}


def _ansible_pull(family: PackageFamily, s: Software) -> Pins:
    distribution = DISTRIBUTIONS[s.os]
    versions = {name: getattr(distribution, field) for name, field in PULL_PACKAGES.items()}
    if any(version is None for version in versions.values()):
        return {}
    return {name: distribution_version_pin(version) for name, version in versions.items()}


def _from_monitoring(family: PackageFamily, s: Software) -> Pins:
    return {}  # a monitoring concern's pins come from Concern.monitoring


MonitoringPins = Callable[[PackageFamily, Software, Monitoring], Pins]


@dataclass(frozen=True)
class Concern:
    """One part of the pinned stack: its packages, who gets them and which role
    installs them (the role's variable is `<name>_packages`)."""

    name: str
    title: str  # for the comments of rendered files
    group: str  # the inventory group whose nodes get the packages
    role: str
    packages: Callable[[PackageFamily, Software], Pins]
    # The software field whose version the role checks on the running node; it
    # becomes the variable `<name>_version`.
    reports: str | None = None
    # What installing a new version on a running node needs (`clustergen plan`).
    change: NodeChange = NO_CHANGE
    # What the running nodes see once a new version is installed (`clustergen plan`).
    takes_effect: str = (
        "programs started after the install use it; running jobs keep what they loaded"
    )
    # What the group_vars say where the concern derives no packages.
    without_packages: str = "not in the spec's software block, nothing installed"
    # Installed in each batch of the driver roll-out too (site.yml's roll-out play runs
    # its role), before the batch reboots: its nodes in the batches need nothing more.
    with_driver: bool = False
    # Derived only where the spec has its group (IMEX: only clusters with NVLink trays).
    only_with_nodes: bool = False
    # Derived only where the spec asks for the feature (derived_pins' `features`).
    only_with_feature: str | None = None
    # An exporter's pins, from the software and the monitoring section (none without it).
    monitoring: MonitoringPins | None = None


# The family whose group (clustergen_family_<family>) the plays of site.yml that run each
# concern's role take: a release whose only difference on a node is a concern's pins (or
# a package moved from its pin) converges that family's plays alone there
# (roles/clustergen_state; tests/test_family_places.py keeps this and site.yml in step).
# The NVIDIA stack's roles run in the play that NCCL's files converge alone, behind the
# driver's plan. A role that is not here (rdma: its play takes no family) converges the
# node in full when its pins change.
PIN_PLAYS: dict[str, str] = {
    "nvidia_driver": "nccl",
    "fabric_manager": "nccl",
    "imex": "imex",
    "cuda": "nccl",
    "nccl": "nccl",
    "cudnn": "nccl",
    "nccl_tests": "nccl",
    "dcgm": "nccl",
    "slurm": "slurm",
    "lustre_client": "lustre",
    "lustre_server": "lustre",
    "opensm": "opensm",
    "nhc": "nhc",
    "monitoring": "monitoring",
    "ansible_pull": "pull",
}


# In the order versions.lock lists them.
CONCERNS: tuple[Concern, ...] = (
    Concern(
        "nvidia_driver",
        "NVIDIA driver",
        GPU_GROUP,
        "nvidia_driver",
        _nvidia_driver,
        reports="nvidia_driver",
        change=NodeChange("reboot"),  # rolled out node by node: drain, install, reboot, resume
    ),
    Concern(
        "fabric_manager",
        "NVIDIA fabric manager",
        NVSWITCH_GROUP,
        "fabric_manager",
        _fabric_manager,
        change=NodeChange("restart", "nvidia-fabricmanager"),
        with_driver=True,
    ),
    Concern(
        "imex",
        "NVIDIA IMEX",
        NVLINK_GROUP,
        "imex",
        _imex,
        # In each batch of the roll-out (roles/imex/tasks/packages.yml), before its reboot;
        # its node lists come with the NVIDIA stack play, on every tray of the domain.
        change=NodeChange("restart", "nvidia-imex"),
        with_driver=True,
        only_with_nodes=True,
    ),
    Concern("cuda", "CUDA toolkit", GPU_GROUP, "cuda", _cuda),
    Concern(
        "nccl",
        "NCCL runtime and headers",
        GPU_GROUP,
        "nccl",
        _nccl,
        takes_effect="jobs started after the install load it (and the acceptance jobs "
        "test it); running jobs keep the NCCL they loaded",
    ),
    Concern("cudnn", "cuDNN", GPU_GROUP, "cudnn", _cudnn),
    Concern(
        "nccl_tests",
        "Open MPI for nccl-tests",
        GPU_GROUP,
        "nccl_tests",
        _nccl_tests,
        without_packages="none: software.nccl_tests is not set, or clustergen knows no Open "
        "MPI of the OS (nccl-tests is then not built)",
    ),
    Concern("dcgm", "DCGM", GPU_GROUP, "dcgm", _dcgm, change=NodeChange("restart", "nvidia-dcgm")),
    Concern(
        "slurm_controller",
        "Slurm controller (slurmctld)",
        "slurm_controller",
        "slurm",
        _slurm("controller"),
        change=NodeChange("restart", "slurmctld"),
    ),
    Concern(
        "slurm_dbd",
        "Slurm accounting (slurmdbd)",
        "slurm_dbd",
        "slurm",
        _slurm("dbd"),
        change=NodeChange("restart", "slurmdbd"),
    ),
    Concern(
        "slurm_compute",
        "Slurm compute (slurmd)",
        "compute",
        "slurm",
        _slurm("compute"),
        change=NodeChange("restart", "slurmd"),
    ),
    Concern(
        "slurm_login",
        "Slurm client commands",
        "login",
        "slurm",
        _slurm("login"),
        takes_effect="each command run after the install is the new one",
    ),
    Concern(
        "slurm_pmix",
        "PMIx and Slurm's mpi/pmix plugin",
        # Every process that loads the plugin opens libpmix when it loads it (mpi_pmix.c
        # init()): slurmd and slurmstepd, and srun wherever a user runs it.
        SLURM_GROUP,
        "slurm",
        _slurm_pmix,
        change=NodeChange("restart", "slurmd"),
        without_packages="none: slurm.mpi is none, or clustergen knows no PMIx package for "
        "the OS (SchedMD's slurm-smd carries the plugin itself)",
        only_with_feature=PMIX_FEATURE,
    ),
    Concern(
        "lustre_client",
        "Lustre client",
        LUSTRE_CLIENT_GROUP,
        "lustre_client",
        _lustre_client,
        change=NodeChange("remount", "lustre"),  # new client modules load on the next mount
    ),
    Concern(
        "lustre_server",
        "Lustre server",
        LUSTRE_SERVER_GROUP,
        "lustre_server",
        _lustre_server,
        change=NodeChange("reboot"),  # new server modules load once the targets restart
    ),
    Concern(
        "lustre_ldiskfs",
        "Lustre ldiskfs OSD",
        LUSTRE_LDISKFS_GROUP,
        "lustre_server",
        _lustre_ldiskfs,
        change=NodeChange("reboot"),
        without_packages="nothing of its own on apt (the server modules carry the OSDs), "
        "or no Lustre in the spec's software block",
    ),
    Concern(
        "lustre_zfs",
        "Lustre zfs OSD and OpenZFS",
        LUSTRE_ZFS_GROUP,
        "lustre_server",
        _lustre_zfs,
        change=NodeChange("reboot"),
    ),
    Concern(
        "rdma",
        "RDMA user space (rdma-core, perftest)",
        RDMA_GROUP,
        "rdma",
        _rdma,
        without_packages="none: software.rdma says doca-ofed (the site installs it), or the "
        "catalog knows no rdma-core version for the OS and software.rdma.version is not set",
        only_with_nodes=True,
    ),
    Concern(
        "opensm",
        "OpenSM subnet manager",
        OPENSM_GROUP,
        "opensm",
        _opensm,
        change=NodeChange("restart", "opensm"),
        without_packages="none: the catalog knows no opensm version for the OS",
        only_with_nodes=True,
    ),
    Concern(
        "nhc",
        "LBNL Node Health Check (slurmd's HealthCheckProgram)",
        "compute",
        "nhc",
        _nhc,
        takes_effect="slurmd's next health check runs the new one",
        without_packages="not pinned (software.nhc): no HealthCheckProgram",
    ),
    Concern(
        "node_exporter",
        "Prometheus node_exporter",
        NODE_EXPORTER_GROUP,
        "monitoring",
        _from_monitoring,
        change=NodeChange("restart", NODE_EXPORTER["apt"].service),
        without_packages="none: monitoring.node_exporter is not set",
        only_with_nodes=True,
        monitoring=_node_exporter,
    ),
    Concern(
        "dcgm_exporter",
        "NVIDIA dcgm-exporter",
        DCGM_EXPORTER_GROUP,
        "monitoring",
        _from_monitoring,
        change=NodeChange("restart", "nvidia-dcgm-exporter"),
        without_packages="none: monitoring.dcgm_exporter is not set",
        only_with_nodes=True,
        monitoring=_dcgm_exporter,
    ),
    Concern(
        "slurm_exporter",
        "prometheus-slurm-exporter",
        SLURM_EXPORTER_GROUP,
        "monitoring",
        _from_monitoring,
        change=NodeChange("restart", "prometheus-slurm-exporter"),
        without_packages="none: monitoring.slurm is not kind exporter",
        only_with_nodes=True,
        monitoring=_slurm_exporter,
    ),
    Concern(
        "ansible_pull",
        "Ansible and git for pull mode",
        ANSIBLE_PULL_GROUP,
        "ansible_pull",
        _ansible_pull,
        takes_effect="the node's next pull runs with it",
        without_packages="none: ansible.pull is not set",
        only_with_nodes=True,
    ),
)


def derived_pins(
    software: Software,
    with_nodes: frozenset[str],
    features: frozenset[str] = frozenset(),
    monitoring: Monitoring | None = None,
) -> StackPins:
    """The catalog's packages and versions, before software.packages overrides;
    `with_nodes`: the groups of the concerns derived only where the spec has them;
    `features`: what the spec asks for beyond software (PMIX_FEATURE: slurm.mpi pmix);
    `monitoring`: the spec's monitoring section, for the exporters' pins."""
    family = OS_PACKAGE_FAMILY[software.os]
    return StackPins(
        family,
        {
            c.name: _concern_pins(c, family, software, with_nodes, features, monitoring)
            for c in CONCERNS
        },
    )


def _concern_pins(
    concern: Concern,
    family: PackageFamily,
    software: Software,
    with_nodes: frozenset[str],
    features: frozenset[str],
    monitoring: Monitoring | None,
) -> Pins:
    if concern.only_with_nodes and concern.group not in with_nodes:
        return {}
    if concern.only_with_feature is not None and concern.only_with_feature not in features:
        return {}
    if concern.monitoring is not None:
        return concern.monitoring(family, software, monitoring) if monitoring is not None else {}
    return concern.packages(family, software)


def with_overrides(derived: StackPins, overrides: Mapping[str, str]) -> StackPins:
    """The derived pins with software.packages applied.

    An override names a package the catalog derives; unknown names are reported by
    checks.packages, so here they are simply not installed.
    """
    by_concern = {
        concern: {name: overrides.get(name, version) for name, version in sorted(pins.items())}
        for concern, pins in derived.by_concern.items()
    }
    return StackPins(derived.family, by_concern)


def pinned_upstream(derived: StackPins) -> dict[str, str]:
    """Package name -> the spec version it must carry (for checking overrides)."""
    return {name: upstream_version(version) for name, version in derived.all_packages().items()}
