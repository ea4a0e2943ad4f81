"""software: the one pinned stack, identical on every node that runs it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator
from typing_extensions import Self

from clustergen import codes
from clustergen.codes import invalid
from clustergen.model.common import Identifier, StrictModel, Version
from clustergen.model.syntax import AptComponent, AptSuite, PackageVersion, Url

OperatingSystem = Literal["ubuntu-22.04", "ubuntu-24.04", "debian-12", "rocky-9", "rhel-9"]
SlurmPackaging = Literal["distribution", "schedmd"]


class Repository(StrictModel):
    """A package repository."""

    name: Identifier = Field(
        description="Short name of the package repository, used in file names."
    )
    url: Url = Field(
        description="Base URL of the repository: http://, https:// or file://, of letters, "
        "digits and ._~:/?@&+,=%[]- (percent-encode anything else)."
    )
    key_url: Url | None = Field(
        default=None,
        description="URL of the repository's signing key (armoured), written as url is; omit "
        "for a trusted local repository.",
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
    zfs: Version | None = Field(
        default=None,
        description="OpenZFS version on the Lustre servers of zfs targets, e.g. 2.1.11: the "
        "zfs utilities and kernel module are pinned to it (the version the site's Lustre "
        "server packages are built against). Required when a Lustre target uses zfs.",
    )
    repositories: list[Repository] = Field(
        default_factory=list, description="Extra package repositories configured on every node."
    )
    packages: dict[str, PackageVersion] = Field(
        default_factory=dict,
        description="Exact package version strings that override the derived ones, by package "
        "name (e.g. libnccl2: 2.21.5-1+cuda12.4). Use when a repository adds a revision suffix.",
    )
