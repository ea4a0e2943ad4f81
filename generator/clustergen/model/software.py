"""software: the one pinned stack, identical on every node that runs it."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, model_validator
from typing_extensions import Self

from clustergen.base import codes
from clustergen.base.codes import invalid
from clustergen.model.common import Identifier, StrictModel, Version
from clustergen.model.hardware import CpuArch
from clustergen.model.syntax import (
    KERNEL_RELEASE,
    NVLSM_VERSION,
    AptComponent,
    AptSuite,
    KeyFingerprint,
    PackageVersion,
    Sha256,
    Url,
)

# Every one has a record in catalog/distributions.py (packaging, NVIDIA's repository, the
# distribution's Slurm); tests/test_distributions.py keeps the two the same.
OperatingSystem = Literal[
    "ubuntu-22.04",
    "ubuntu-24.04",
    "ubuntu-26.04",
    "debian-12",
    "debian-13",
    "rocky-9",
    "rhel-9",
    "rocky-10",
    "rhel-10",
]
SlurmPackaging = Literal["distribution", "schedmd"]


# The rules of checks/software.py:repositories and the model's own, for editors: a key
# unless trusted, no plain http:// unless trusted (a key over http:// with its fingerprint).
_REPOSITORY_RULES: dict[str, Any] = {
    "dependentRequired": {"key_fingerprint": ["key_url"]},
    "if": {"required": ["trusted"], "properties": {"trusted": {"const": True}}},
    "else": {
        "required": ["key_url"],
        "properties": {"url": {"not": {"pattern": "^http://"}}},
        "if": {"required": ["key_url"], "properties": {"key_url": {"pattern": "^http://"}}},
        "then": {"required": ["key_fingerprint"]},
    },
}


class Repository(StrictModel):
    """A package repository."""

    model_config = ConfigDict(json_schema_extra=_REPOSITORY_RULES)

    name: Identifier = Field(
        description="Short name of the package repository, used in file names."
    )
    url: Url = Field(
        description="Base URL of the repository: http://, https:// or file://, of letters, "
        "digits and ._~:/?@&+,=%[]- (percent-encode anything else)."
    )
    key_url: Url | None = Field(
        default=None,
        description="URL of the repository's signing key (armoured), written as url is: "
        "https:// or file:// (http:// only with key_fingerprint, or trusted). apt and dnf "
        "accept only packages this key signed. Required unless trusted.",
    )
    key_fingerprint: KeyFingerprint | None = Field(
        default=None,
        description="Full OpenPGP v4 fingerprint of the key at key_url (40 hex digits; "
        "spaces allowed, as gpg prints it). The node downloads the key, checks that it is "
        "this one key and installs it only then; a different key fails the play. Without it "
        "the key is taken as downloaded (trusted on first use over https).",
    )
    trusted: bool = Field(
        default=False,
        description="Accept this repository without a signing key, or over http://: apt "
        "writes Trusted: yes (dnf gpgcheck=0) when it has no key. Anyone who can change what "
        "the nodes download can then install packages as root on every node, so every "
        "validate and plan repeats a warning for it; for a local test repository only.",
    )
    suite: AptSuite = Field(
        default="/",
        description="apt: the suite, e.g. bookworm; default '/', a flat repository such as "
        "NVIDIA's CUDA repository (an exact path, ending in '/', takes no components). "
        "Ignored on dnf.",
    )
    components: list[AptComponent] = Field(
        default_factory=list,
        description="apt: the components of a suite, e.g. [main, contrib]; none for a flat "
        "repository.",
    )
    architectures: list[CpuArch] | None = Field(
        default=None,
        min_length=1,
        description="The CPU architectures (x86_64, aarch64) whose nodes get this repository; "
        "default: every node. NVIDIA's CUDA repository (developer.download.nvidia.com/compute/"
        "cuda/repos/<distro>/x86_64/ or .../sbsa/) needs none: each node gets the build of its "
        "own architecture (sbsa on aarch64). Name it for a mirror or another repository "
        "that serves one architecture.",
    )

    @model_validator(mode="after")
    def _fingerprint_needs_a_key(self) -> Self:
        if self.key_fingerprint is not None and self.key_url is None:
            raise invalid(
                codes.SOFTWARE_REPOSITORY_FINGERPRINT_WITHOUT_KEY,
                f"repository '{self.name}' has a key_fingerprint but no key_url: name the URL "
                "of the key the fingerprint is of",
            )
        return self

    @model_validator(mode="after")
    def _components_need_a_suite(self) -> Self:
        if self.suite.endswith("/") and self.components:
            raise invalid(
                codes.SOFTWARE_FLAT_REPOSITORY_COMPONENTS,
                f"repository '{self.name}' has the exact path '{self.suite}' for a suite, which "
                "takes no components (apt); name a suite, e.g. bookworm, or drop the components",
            )
        if not self.suite.endswith("/") and not self.components:
            raise invalid(
                codes.SOFTWARE_FLAT_REPOSITORY_COMPONENTS,
                f"repository '{self.name}' names the suite '{self.suite}' without components "
                "(apt needs at least one, e.g. [main])",
            )
        return self


RdmaStackKind = Literal["distribution", "doca-ofed"]


# The rules of Rdma._fits_the_stack, for editors.
_RDMA_RULES: dict[str, Any] = {
    "if": {"required": ["stack"], "properties": {"stack": {"const": "doca-ofed"}}},
    "then": {
        "required": ["version", "repository"],
        "properties": {
            "version": {"not": {"type": "null"}},
            "repository": {"not": {"type": "null"}},
            "perftest": {"type": "null"},
        },
    },
    "else": {"properties": {"repository": {"type": "null"}}},
}


class Rdma(StrictModel):
    """The RDMA user space on the nodes with fabric HCAs (docs/rdma.md)."""

    model_config = ConfigDict(json_schema_extra=_RDMA_RULES)

    stack: RdmaStackKind = Field(
        default="distribution",
        description="distribution: the OS's own rdma-core, its diagnostics (ibverbs-utils, "
        "infiniband-diags) and perftest (ib_write_bw), installed, pinned and held by the rdma "
        "role on every node with fabric HCAs. doca-ofed: NVIDIA DOCA-OFED in their place "
        "(its drivers, rdma-core, perftest and mlnx-tools), the `doca-ofed` meta package at "
        "the DOCA release of 'version' from 'repository', installed and held by the rdma "
        "role, which also loads nvidia-peermem on GPU nodes (docs/rdma.md).",
    )
    version: Version | None = Field(
        default=None,
        description="stack distribution: the upstream rdma-core version the OS ships (e.g. "
        "50.0), pinned with any packaging revision (50.0-*). Default: the version of the "
        "catalog for software.os (docs/rdma.md), where it has one. stack doca-ofed: the DOCA "
        "release (e.g. 3.2.1), pinned as doca-ofed <version>-* (any build of the release).",
    )
    perftest: PackageVersion | None = Field(
        default=None,
        description="stack distribution: perftest's exact package version (e.g. "
        "24.01.0+0.38-1build2). Default: the catalog's for software.os, where it has one.",
    )
    repository: Identifier | None = Field(
        default=None,
        description="stack doca-ofed: the software.repositories entry that serves DOCA "
        "(NVIDIA's linux.mellanox.com/public/repo/doca/<version>/<distro>/<arch>/, or the "
        "site's mirror of it), from which the rdma role installs DOCA-OFED; required with "
        "doca-ofed.",
    )

    @model_validator(mode="after")
    def _fits_the_stack(self) -> Self:
        if self.stack == "doca-ofed" and (self.version is None or self.repository is None):
            raise invalid(
                codes.SOFTWARE_RDMA_STACK,
                "rdma stack doca-ofed needs 'version' (the DOCA release) and 'repository' "
                "(the software.repositories entry that serves it)",
            )
        if self.stack == "distribution" and self.repository is not None:
            raise invalid(
                codes.SOFTWARE_RDMA_STACK,
                "rdma stack distribution takes no 'repository': the OS's archive serves it",
            )
        if self.stack == "doca-ofed" and self.perftest is not None:
            raise invalid(
                codes.SOFTWARE_RDMA_STACK,
                "rdma stack doca-ofed takes no 'perftest': DOCA ships its own",
            )
        return self


class Nhc(StrictModel):
    """LBNL Node Health Check (github.com/mej/nhc), run by slurmd as its HealthCheckProgram.
    NHC's README names no distribution package (RPMs on its GitHub releases only): the site
    serves the package built from NHC's own spec file (lbnl-nhc.spec.in) from a repository
    of its own (docs/health.md)."""

    version: PackageVersion = Field(
        description="Exact package version, as the repository lists it (e.g. 1.4.3-1.el9; "
        "NHC's last release is 1.4.3), installed and held."
    )
    repository: Identifier = Field(
        description="The software.repositories entry that serves the package."
    )
    package: Identifier = Field(
        default="lbnl-nhc",
        description="Package name. Default lbnl-nhc, the name NHC's spec file builds.",
    )


class NcclTests(StrictModel):
    """nccl-tests (github.com/NVIDIA/nccl-tests), built on the GPU nodes by the nccl_tests
    role against the pinned CUDA, NCCL and the distribution's Open MPI, into
    nccl.acceptance.nccl_tests_dir (docs/acceptance.md "The test tools")."""

    version: Version = Field(
        description="The nccl-tests release the tarball holds, e.g. 2.13.13: recorded with "
        "the build, which is redone when it, the CUDA, the NCCL or the MPI changes."
    )
    url: Url = Field(
        description="Where the nodes download the release tarball from: NVIDIA's "
        "(https://github.com/NVIDIA/nccl-tests/archive/refs/tags/v<version>.tar.gz) or the "
        "site's mirror of it."
    )
    sha256: Sha256 = Field(
        description="The tarball's sha256 (sha256sum): a download that differs fails the "
        "play before anything is built."
    )


class Software(StrictModel):
    """The pinned software stack, identical on every node that runs it."""

    os: OperatingSystem = Field(
        description="Operating system of every node; selects apt or dnf packaging."
    )
    nvidia_driver: Version = Field(description="Exact NVIDIA driver version, e.g. 550.90.07.")
    fabric_manager: Version | None = Field(
        default=None,
        description="NVIDIA Fabric Manager version. Required, and equal to nvidia_driver, when any "
        "hardware profile has NVSwitch; must be absent otherwise.",
    )
    nvlsm: Annotated[str, NVLSM_VERSION] | None = Field(
        default=None,
        description="NVIDIA NVLink Subnet Manager (NVLSM) version, as NVIDIA's repository lists "
        "it for the driver branch: its release date YEAR.MONTH.N (e.g. 2025.01.5), never the "
        "driver's version. Required when a hardware profile has NVSwitch and Blackwell "
        "GPUs (HGX B200/B300: fourth-generation NVSwitch), installed beside the fabric manager; "
        "must be absent otherwise.",
    )
    cuda: Version = Field(
        description="CUDA toolkit version, e.g. 12.4.1. Checked against the driver."
    )
    nccl: Version = Field(
        description="NCCL version, e.g. 2.21.5; packaged with the CUDA build suffix."
    )
    cudnn: Version | None = Field(default=None, description="cuDNN version, e.g. 9.1.0.70.")
    dcgm: Version | None = Field(default=None, description="NVIDIA DCGM version, e.g. 3.3.6.")
    slurm: Version = Field(
        description="Slurm version, e.g. 23.11.10. slurm.options keys are checked against this "
        "version's parser."
    )
    slurm_packages: SlurmPackaging | None = Field(
        default=None,
        description="Where the Slurm packages come from. distribution: the OS's own "
        "(slurmctld, slurmd, slurmdbd, slurm-client on apt; EPEL's slurm-* on EL), pinned to "
        "the version with any packaging revision (22.05.8-*); software.slurm must be the "
        "version the OS ships. schedmd: packages the site builds from SchedMD's packaging "
        "(slurm-smd-* on apt, from 23.11; slurm, slurm-slurmctld, ... on EL), served from the "
        "repository slurm_repository names. Default: schedmd, except on apt before 23.11 "
        "(distribution).",
    )
    slurm_repository: Identifier | None = Field(
        default=None,
        description="The repository (its name in software.repositories) that serves the "
        "site's SchedMD-built Slurm packages. SchedMD publishes sources, not a repository, so "
        "with slurm_packages: schedmd this says where the packages come from: required when "
        "slurm_packages says schedmd, a warning when schedmd is only the default. Not set "
        "with slurm_packages: distribution (the distribution's archive serves those).",
    )
    lustre: Version | None = Field(default=None, description="Lustre client/server version.")
    lustre_server_kernel: Annotated[str, KERNEL_RELEASE] | None = Field(
        default=None,
        description="On apt: the kernel (uname -r) that the site's build of Lustre's server "
        "modules is for. Lustre's Debian packaging has no DKMS package for servers: it "
        "builds lustre-server-modules-<kernel> for one kernel (debian/control.modules.in), "
        "which is pinned with lustre-server-utils. Without it the servers get only the "
        "utilities, and validate warns (storage.lustre-server-modules-unpinned).",
    )
    zfs: Version | None = Field(
        default=None,
        description="OpenZFS version on the Lustre servers of zfs targets, e.g. 2.1.11: the "
        "zfs utilities and kernel module are pinned to it (the version the site's Lustre "
        "server packages are built against). Required when a Lustre target uses zfs.",
    )
    rdma: Rdma | None = Field(
        default=None,
        description="The RDMA stack of the nodes with fabric HCAs (docs/rdma.md). Default: "
        "stack distribution at the catalog's versions for software.os; ignored without "
        "network.fabric or network.storage.",
    )
    nhc: Nhc | None = Field(
        default=None,
        description="LBNL NHC, pinned: slurmd runs it as HealthCheckProgram on the compute "
        "nodes with checks derived from the spec (slurm.health_check; docs/health.md). "
        "Without it no HealthCheckProgram is written, and a spec with slurm.health_check "
        "warns (slurm.health-check-without-nhc).",
    )
    nccl_tests: NcclTests | None = Field(
        default=None,
        description="nccl-tests, which the acceptance jobs' all-reduce runs: built on every "
        "GPU node from this release tarball with the distribution's Open MPI (installed, "
        "pinned and held with it) into nccl.acceptance.nccl_tests_dir. Without it nothing "
        "installs nccl-tests: validate warns, and the all-reduce jobs say so when they start.",
    )
    repositories: list[Repository] = Field(
        default_factory=list, description="Extra package repositories configured on every node."
    )
    packages: dict[str, PackageVersion] = Field(
        default_factory=dict,
        description="Exact package version strings that override the derived ones, by package "
        "name (e.g. libnccl2: 2.21.5-1+cuda12.4). Use when a repository adds a revision suffix.",
    )
