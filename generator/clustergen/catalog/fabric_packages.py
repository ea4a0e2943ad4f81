"""The distribution's packages of the fabric's user space: rdma-core and perftest
(software.rdma), the OpenSM subnet manager, and the Open MPI that nccl-tests is built with
to run across the fabric."""

from __future__ import annotations

from clustergen.catalog.distributions import DISTRIBUTIONS, PackageFamily
from clustergen.catalog.pins import OS_PACKAGE_FAMILY, Pins, distribution_version_pin
from clustergen.model.software import Software

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


def rdma_pins(family: PackageFamily, s: Software) -> Pins:
    core, perftest = rdma_versions(s)
    if core is None:
        return {}  # checks.software warns: nothing of the stack is installed
    pins = dict.fromkeys(_RDMA_CORE_PACKAGES[family], distribution_version_pin(core))
    if perftest is not None:
        pins["perftest"] = perftest
    return pins


# DOCA-OFED (software.rdma stack doca-ofed): NVIDIA's RDMA stack for ConnectX and BlueField
# (drivers through DKMS, its own rdma-core, perftest and mlnx-tools with mlnx_qos), installed
# as the `doca-ofed` profile's meta package from the DOCA repository the spec names
# [doc: NVIDIA DOCA-Host Installation and Upgrade (docs.nvidia.com/doca/sdk/doca-host+
# installation+and+upgrade): "apt-get install doca-ofed" / "dnf install doca-ofed" after
# the repository of the DOCA release; NVIDIA's hpc-container-maker doca_ofed building block:
# linux.mellanox.com/public/repo/doca/<version>/<distro>/<arch>/]. The meta package's
# version is the DOCA release and a build number (3.2.1-044413...), so the pin holds the
# release, whatever its build: `<version>-*`, as for a distribution's package.
DOCA_OFED_PACKAGE = "doca-ofed"


def doca_pins(family: PackageFamily, s: Software) -> Pins:
    if s.rdma is None or s.rdma.stack != "doca-ofed" or s.rdma.version is None:
        return {}
    return {DOCA_OFED_PACKAGE: distribution_version_pin(s.rdma.version)}


def opensm_pins(family: PackageFamily, s: Software) -> Pins:
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


def nccl_tests_pins(family: PackageFamily, s: Software) -> Pins:
    version = openmpi_version(s)
    if s.nccl_tests is None or version is None:
        return {}
    return dict.fromkeys(_OPENMPI_PACKAGES, distribution_version_pin(version))
