"""The Prometheus exporters clustergen installs (monitoring:, docs/monitoring.md).

Sources:
- node_exporter: Debian and Ubuntu package it as `prometheus-node-exporter` (binary
  /usr/bin/prometheus-node-exporter, unit prometheus-node-exporter.service running
  `$ARGS` from /etc/default/prometheus-node-exporter, user prometheus) [src: Debian 12's
  prometheus-node-exporter_1.5.0-1+b6_amd64.deb, its lib/systemd/system unit and
  etc/default file; `apt-cache policy prometheus-node-exporter` on Debian 12: 1.5.0-1+b6].
  No EL release ships it: the site's repository carries `node_exporter` (binary
  /usr/bin/node_exporter, unit node_exporter.service), the name the common RPM builds of
  upstream's release use. Listen flag --web.listen-address, default :9100 [src:
  node_exporter --help; the Prometheus default port allocations wiki: 9100].
- dcgm-exporter: NVIDIA's package `datacenter-gpu-manager-exporter` from the CUDA
  repository, depending on datacenter-gpu-manager-4-core, so DCGM 4 [doc: NVIDIA DCGM
  documentation, "Install DCGM Exporter": package versions identify the exporter version,
  each exporter release is paired with one DCGM release, "Run DCGM Exporter with the DCGM
  version paired with that exporter release"]. Unit nvidia-dcgm-exporter.service (After
  nvidia-dcgm.service) running `dcgm-exporter -f /etc/dcgm-exporter/default-counters.csv`;
  the listen address from DCGM_EXPORTER_LISTEN (flag --address, default :9400), the host
  engine from DCGM_REMOTE_HOSTENGINE_INFO (default localhost:5555) [src: NVIDIA/dcgm-exporter
  packaging/config-files/systemd/nvidia-dcgm-exporter.service and pkg/cmd/app.go].
- Slurm: from 25.11 slurmctld serves OpenMetrics on its own port with
  MetricsType=metrics/openmetrics: /metrics (the index), /metrics/jobs, /metrics/nodes,
  /metrics/partitions, /metrics/scheduler and /metrics/jobs-users-accts [src: SchedMD
  doc/html/metrics.shtml and src/slurmctld/http.c at slurm-25-11-0-1]. 25.11 answers 401
  while PrivateData is set (http.c _check_metrics_authorized); 26.05 answers only
  SlurmUser and root then, anyone with MetricsParameters=ignore_private_data, and with
  MetricsAuthUsers only those accounts (plus SlurmUser and root), authenticated,
  whatever PrivateData and MetricsParameters say [src: src/common/read_config.c and
  doc/man/man5/slurm.conf.5 at slurm-26-05-0-1; NEWS of 26.05, "Authentication is now
  available for querying any /metrics endpoints"].
  Before 25.11: prometheus-slurm-exporter (github.com/vpenso/prometheus-slurm-exporter),
  which runs sinfo, squeue and sdiag; flag -listen-address, default :8080 [src: its
  README, as openSUSE's README.SUSE of golang-github-vpenso-prometheus_slurm_exporter
  quotes it]. No Debian, Ubuntu or EL release ships it: the site's repository does.
"""

from __future__ import annotations

from dataclasses import dataclass

from clustergen.catalog.distributions import PackageFamily
from clustergen.catalog.versions import VersionTuple
from clustergen.model.monitoring import DcgmExporter, SlurmMetrics, SlurmMetricsKind

# The release that first has slurmctld's metrics (MetricsType), and the first that serves
# them while PrivateData is set (to MetricsAuthUsers, authenticated).
SLURM_METRICS_FIRST: tuple[int, int] = (25, 11)
SLURM_METRICS_PRIVATE_FIRST: tuple[int, int] = (26, 5)
SLURMCTLD_PORT = 6817  # slurm.conf(5) SlurmctldPort default; clustergen writes none
# The endpoints a Prometheus scrapes; /metrics/jobs-users-accts is left out: one series
# per user and account, which SchedMD's guide advises not to store.
SLURM_METRICS_PATHS: tuple[str, ...] = (
    "/metrics/jobs",
    "/metrics/nodes",
    "/metrics/partitions",
    "/metrics/scheduler",
)

DCGM_EXPORTER_PACKAGE = "datacenter-gpu-manager-exporter"
DCGM_EXPORTER_SERVICE = "nvidia-dcgm-exporter"
DCGM_EXPORTER_FIRST_DCGM = 4  # the package depends on datacenter-gpu-manager-4-core
SLURM_EXPORTER_PACKAGE = "prometheus-slurm-exporter"
SLURM_EXPORTER_SERVICE = "prometheus-slurm-exporter"
SLURM_EXPORTER_BINARY = "/usr/bin/prometheus-slurm-exporter"

# DCGM release -> the newest dcgm-exporter release NVIDIA paired with it [src: the tags
# <dcgm>-<exporter> of github.com/NVIDIA/dcgm-exporter, 4.0.0-4.0.1 to 4.5.3-4.8.2].
DCGM_EXPORTER_FOR_DCGM: dict[str, str] = {
    "4.0.0": "4.0.1",
    "4.1.1": "4.0.4",
    "4.2.0": "4.1.0",
    "4.2.3": "4.2.0",
    "4.3.1": "4.4.0",
    "4.4.0": "4.5.0",
    "4.4.1": "4.6.0",
    "4.4.2": "4.7.1",
    "4.5.1": "4.8.0",
    "4.5.2": "4.8.1",
    "4.5.3": "4.8.2",
}


@dataclass(frozen=True)
class NodeExporterPackage:
    package: str
    service: str
    binary: str


NODE_EXPORTER: dict[PackageFamily, NodeExporterPackage] = {
    "apt": NodeExporterPackage(
        "prometheus-node-exporter",
        "prometheus-node-exporter",
        "/usr/bin/prometheus-node-exporter $ARGS",
    ),
    "dnf": NodeExporterPackage("node_exporter", "node_exporter", "/usr/bin/node_exporter"),
}


def slurm_metrics_kind(
    metrics: SlurmMetrics | None, slurm: VersionTuple, private_data: bool
) -> SlurmMetricsKind | None:
    """monitoring.slurm's kind, or its default: slurmctld's own metrics where the release
    serves them to Prometheus (26.05 on, or 25.11 without PrivateData), else the exporter;
    None without monitoring.slurm."""
    if metrics is None:
        return None
    if metrics.kind is not None:
        return metrics.kind
    if slurm[:2] >= SLURM_METRICS_PRIVATE_FIRST:
        return "openmetrics"
    if slurm[:2] >= SLURM_METRICS_FIRST and not private_data:
        return "openmetrics"
    return "exporter"


def dcgm_exporter_version(exporter: DcgmExporter, dcgm: str | None) -> str | None:
    """monitoring.dcgm_exporter.version, else the exporter NVIDIA paired with the DCGM."""
    if exporter.version is not None:
        return exporter.version
    return DCGM_EXPORTER_FOR_DCGM.get(dcgm) if dcgm is not None else None
