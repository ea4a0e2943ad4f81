"""monitoring: a pinnable version for every exporter the spec asks for, DCGM 4 under
dcgm-exporter, and Slurm metrics the release can serve (catalog/monitoring.py)."""

from __future__ import annotations

from clustergen.base import codes
from clustergen.base.errors import Problem
from clustergen.catalog.distributions import DISTRIBUTIONS
from clustergen.catalog.monitoring import (
    DCGM_EXPORTER_FIRST_DCGM,
    SLURM_METRICS_FIRST,
    SLURM_METRICS_PRIVATE_FIRST,
    dcgm_exporter_version,
)
from clustergen.catalog.versions import parse_version
from clustergen.resolve import ResolvedCluster, slurm_metrics


def node_exporter(cluster: ResolvedCluster) -> list[Problem]:
    """A version to pin: the spec's, or the distribution's as the catalog knows it."""
    monitoring = cluster.spec.monitoring
    if monitoring is None or monitoring.node_exporter is None:
        return []
    os = cluster.spec.software.os
    if monitoring.node_exporter.version or DISTRIBUTIONS[os].node_exporter:
        return []
    return [
        Problem(
            codes.MONITORING_NODE_EXPORTER_VERSION,
            ("monitoring", "node_exporter"),
            f"the catalog knows no node_exporter package of {os}: set version (the upstream "
            "version the package in your repositories carries, e.g. 1.8.2)",
        )
    ]


def dcgm_exporter(cluster: ResolvedCluster) -> list[Problem]:
    """DCGM 4 pinned (NVIDIA's package depends on datacenter-gpu-manager-4-core), and an
    exporter version: the spec's or the one NVIDIA paired with that DCGM."""
    monitoring = cluster.spec.monitoring
    if monitoring is None or monitoring.dcgm_exporter is None:
        return []
    path = ("monitoring", "dcgm_exporter")
    dcgm = cluster.spec.software.dcgm
    if dcgm is None or parse_version(dcgm)[0] < DCGM_EXPORTER_FIRST_DCGM:
        pinned = f"software.dcgm is {dcgm}" if dcgm else "software.dcgm is not set"
        return [
            Problem(
                codes.MONITORING_DCGM_EXPORTER_DCGM,
                path,
                f"dcgm-exporter reads DCGM 4 (datacenter-gpu-manager-exporter depends on "
                f"datacenter-gpu-manager-4-core) and {pinned}: pin DCGM 4 or leave "
                "dcgm_exporter out",
            )
        ]
    if dcgm_exporter_version(monitoring.dcgm_exporter, dcgm) is None:
        return [
            Problem(
                codes.MONITORING_DCGM_EXPORTER_VERSION,
                path,
                f"the catalog knows no dcgm-exporter release paired with DCGM {dcgm}: set "
                "version (the exporter's own, e.g. 4.8.2 of the release 4.5.3-4.8.2)",
            )
        ]
    return []


def slurm(cluster: ResolvedCluster) -> list[Problem]:
    """openmetrics only from 25.11, and on 25.11 only without PrivateData (slurmctld
    answers 401 then); kind exporter with its package's version."""
    monitoring = cluster.spec.monitoring
    if monitoring is None or monitoring.slurm is None:
        return []
    kind = slurm_metrics(cluster.spec)
    release = parse_version(cluster.spec.software.slurm)[:2]
    path = ("monitoring", "slurm")
    if kind == "exporter" and monitoring.slurm.version is None:
        return [
            Problem(
                codes.MONITORING_SLURM_EXPORTER_VERSION,
                path,
                "Slurm's metrics come from prometheus-slurm-exporter here (Slurm "
                f"{cluster.spec.software.slurm}): set version, the exact version of the "
                "package in your repository (no distribution ships it)",
            )
        ]
    if kind != "openmetrics":
        return []
    if release < SLURM_METRICS_FIRST:
        return [
            Problem(
                codes.MONITORING_SLURM_METRICS_RELEASE,
                (*path, "kind"),
                f"slurmctld serves metrics from Slurm 25.11 (MetricsType); this is "
                f"{cluster.spec.software.slurm}: use kind exporter",
            )
        ]
    private = cluster.spec.slurm.isolation.private_data
    if private and release < SLURM_METRICS_PRIVATE_FIRST:
        return [
            Problem(
                codes.MONITORING_SLURM_METRICS_PRIVATE,
                (*path, "kind"),
                "Slurm 25.11 answers its metrics endpoints 401 while PrivateData is set "
                "(slurm.isolation.private_data): set private_data false, or use kind "
                "exporter, or Slurm 26.05 with auth_users",
            )
        ]
    if private and not monitoring.slurm.auth_users:
        return [
            Problem(
                codes.MONITORING_SLURM_METRICS_UNAUTHENTICATED,
                path,
                f"Slurm {cluster.spec.software.slurm} serves its metrics with PrivateData set "
                "(slurm.isolation.private_data) only to the accounts of MetricsAuthUsers, "
                "authenticated: name the scraper's account in auth_users (clustergen never "
                "writes MetricsParameters=ignore_private_data, which shows every user's jobs "
                "to anyone who reaches port 6817), or use kind exporter",
            )
        ]
    return []
