"""monitoring: the Prometheus endpoints of the cluster, for a Prometheus the site runs.

Each exporter is installed only where its key is present; `monitoring: {}` installs
nothing. docs/monitoring.md lists every endpoint.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from clustergen.model.common import Int, StrictModel, Version
from clustergen.model.syntax import PackageVersion, UnixName

ListenOn = Literal["management", "all"]
SlurmMetricsKind = Literal["openmetrics", "exporter"]


class NodeExporter(StrictModel):
    """Prometheus node_exporter (machine metrics) on every node of the spec."""

    port: Int = Field(
        default=9100, ge=1, le=65535, description="Listen port (node_exporter's default 9100)."
    )
    version: Version | None = Field(
        default=None,
        description="Upstream version of the package, pinned with any packaging revision "
        "(1.5.0 -> 1.5.0-*). Default: the version the distribution ships "
        "(prometheus-node-exporter on Debian and Ubuntu); required on EL, where the package "
        "node_exporter comes from a repository the site names in software.repositories.",
    )


class DcgmExporter(StrictModel):
    """NVIDIA dcgm-exporter (GPU metrics from DCGM) on every GPU node; needs software.dcgm 4.x."""

    port: Int = Field(
        default=9400, ge=1, le=65535, description="Listen port (dcgm-exporter's default 9400)."
    )
    version: Version | None = Field(
        default=None,
        description="dcgm-exporter's own version (4.8.2 of the release 4.5.3-4.8.2), pinned "
        "as NVIDIA's package datacenter-gpu-manager-exporter <version>-1 from the CUDA "
        "repository. Default: the newest exporter NVIDIA released for software.dcgm.",
    )


class SlurmMetrics(StrictModel):
    """Slurm's metrics: slurmctld's own OpenMetrics endpoints, or an exporter on the controllers."""

    kind: SlurmMetricsKind | None = Field(
        default=None,
        description="openmetrics: slurmctld serves /metrics/* on its own port "
        "(MetricsType=metrics/openmetrics, Slurm 25.11 and later); exporter: "
        "prometheus-slurm-exporter on each controller, from the site's repository. Default: "
        "openmetrics where the Slurm release allows it (26.05 and later, or 25.11 with "
        "slurm.isolation.private_data false), else exporter.",
    )
    version: PackageVersion | None = Field(
        default=None,
        description="kind exporter: the exact version of the package prometheus-slurm-exporter "
        "in the site's repository (required: no distribution ships it).",
    )
    port: Int = Field(
        default=8080,
        ge=1,
        le=65535,
        description="kind exporter: its listen port (the exporter's default 8080). openmetrics "
        "is served on slurmctld's port (SlurmctldPort, 6817).",
    )
    auth_users: list[UnixName] = Field(
        default_factory=list,
        description="kind openmetrics with slurm.isolation.private_data on (Slurm 26.05 and "
        "later): the accounts that may read the metrics (MetricsAuthUsers; SlurmUser and root "
        "always may), each authenticating to slurmctld (a token from `scontrol token`, kept in "
        "the scraper's vault). Required then: without it slurmctld would answer only "
        "SlurmUser and root, and MetricsParameters=ignore_private_data would show every "
        "user's jobs to anyone who reaches its port.",
    )


class Monitoring(StrictModel):
    """Prometheus endpoints: what runs where, on which address and port."""

    listen: ListenOn = Field(
        default="management",
        description="Where the exporters listen: management (the node's management address, "
        "so only the management network reaches them) or all (every address, 0.0.0.0). "
        "Prometheus scrapes the management addresses either way.",
    )
    node_exporter: NodeExporter | None = Field(
        default=None, description="node_exporter on every node; absent: not installed."
    )
    dcgm_exporter: DcgmExporter | None = Field(
        default=None,
        description="dcgm-exporter on every GPU node (needs software.dcgm 4.x); absent: not "
        "installed.",
    )
    slurm: SlurmMetrics | None = Field(
        default=None, description="Slurm's metrics; absent: none (no MetricsType, no exporter)."
    )
