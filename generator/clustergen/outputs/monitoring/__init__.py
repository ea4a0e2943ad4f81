"""monitoring: the exporters' listen settings and the scrape targets (docs/monitoring.md).

Per node a systemd drop-in (or, for the Slurm exporter, which no distribution packages,
the whole unit) that sets where the exporter listens: the node's management address and
the spec's port, or every address with `listen: all`; and monitoring/prometheus-targets.yml,
Prometheus file_sd_configs targets of every endpoint (the management addresses), for the
site's Prometheus. Nothing without the monitoring section; each exporter only with its key.

[src: catalog/monitoring.py for each exporter's unit, flag and default port; Prometheus
scrape/target.go populateLabels: a target's own __metrics_path__ label wins over the
scrape job's metrics_path, so one file_sd job scrapes every path listed here.]
"""

from __future__ import annotations

from dataclasses import dataclass

import jinja2

from clustergen.base.artifacts import Artifact, Install, NodeChange
from clustergen.catalog.groups import DCGM_EXPORTER_GROUP, NODE_EXPORTER_GROUP, SLURM_EXPORTER_GROUP
from clustergen.catalog.monitoring import (
    DCGM_EXPORTER_SERVICE,
    NODE_EXPORTER,
    SLURM_EXPORTER_BINARY,
    SLURM_EXPORTER_SERVICE,
    SLURM_METRICS_PATHS,
    SLURMCTLD_PORT,
)
from clustergen.resolve import ResolvedCluster, slurm_metrics
from clustergen.templating import render_template

# Its role includes rendered_files for it and defines the handlers it notifies.
OWN_ROLE = True

UNITS = "/etc/systemd/system"
DROP_IN = "clustergen-listen.conf"
TARGETS = "monitoring/prometheus-targets.yml"


@dataclass(frozen=True)
class Endpoint:
    """One scrape target: what serves it, on which node, at which address, port and path."""

    exporter: str  # node_exporter, dcgm_exporter, slurm_exporter, slurmctld
    node: str
    host: str  # the management address (the name where the node has none)
    port: int
    path: str

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


def _address(cluster: ResolvedCluster, node: str) -> str:
    return cluster.by_name[node].management_ip or node


def endpoints(cluster: ResolvedCluster) -> tuple[Endpoint, ...]:
    """Every endpoint, exporter by exporter, nodes in spec order."""
    monitoring = cluster.spec.monitoring
    if monitoring is None:
        return ()
    found: list[Endpoint] = []
    for group, exporter in (
        (NODE_EXPORTER_GROUP, monitoring.node_exporter),
        (DCGM_EXPORTER_GROUP, monitoring.dcgm_exporter),
    ):
        nodes = cluster.members.get(group, frozenset())
        if exporter is not None:
            found += [
                Endpoint(group, h.name, _address(cluster, h.name), exporter.port, "/metrics")
                for h in cluster.hosts
                if h.name in nodes
            ]
    kind = slurm_metrics(cluster.spec)
    for name in cluster.controllers:
        if kind == "openmetrics":
            found += [
                Endpoint("slurmctld", name, _address(cluster, name), SLURMCTLD_PORT, path)
                for path in SLURM_METRICS_PATHS
            ]
        elif kind == "exporter" and monitoring.slurm is not None:
            port = monitoring.slurm.port
            found.append(
                Endpoint(SLURM_EXPORTER_GROUP, name, _address(cluster, name), port, "/metrics")
            )
    return tuple(found)


def slurm_user(cluster: ResolvedCluster) -> str:
    """SlurmUser: slurm, or what slurm.options sets (as slurm.conf says)."""
    return cluster.spec.slurm.option("SlurmUser") or "slurm"


def listen_file(
    cluster: ResolvedCluster, env: jinja2.Environment, endpoint: Endpoint
) -> Artifact | None:
    """The file that makes this endpoint's exporter listen on its address and port: a
    drop-in for the packaged units, the whole unit for the Slurm exporter; None for
    slurmctld's own endpoints (slurm.conf's MetricsType)."""
    monitoring = cluster.spec.monitoring
    assert monitoring is not None
    host = endpoint.host if monitoring.listen == "management" else ""
    listen = f"{host}:{endpoint.port}"
    package = NODE_EXPORTER[cluster.pins.family]
    if endpoint.exporter == NODE_EXPORTER_GROUP:
        service, template, file = package.service, "node-exporter.conf.j2", DROP_IN
    elif endpoint.exporter == DCGM_EXPORTER_GROUP:
        service, template, file = DCGM_EXPORTER_SERVICE, "dcgm-exporter.conf.j2", DROP_IN
    elif endpoint.exporter == SLURM_EXPORTER_GROUP:
        service, template, file = SLURM_EXPORTER_SERVICE, "slurm-exporter.service.j2", ""
    else:
        return None
    text = render_template(
        env,
        f"monitoring/{template}",
        cluster,
        listen=listen,
        node_exporter=package.binary,
        slurm_exporter=SLURM_EXPORTER_BINARY,
        slurm_user=slurm_user(cluster),
    )
    dest = f"{UNITS}/{service}.service" + (f".d/{file}" if file else "")
    install = Install(
        dest, endpoint.exporter, NodeChange("restart", service), hosts=(endpoint.node,)
    )
    name = f"{service}.conf" if file else f"{service}.service"
    return Artifact(f"monitoring/{endpoint.node}/{name}", text, install=install)


def render(cluster: ResolvedCluster, env: jinja2.Environment) -> list[Artifact]:
    if cluster.spec.monitoring is None:
        return []
    found = endpoints(cluster)
    targets = render_template(env, "monitoring/prometheus-targets.yml.j2", cluster, endpoints=found)
    artifacts = [Artifact(TARGETS, targets)]
    for endpoint in found:
        artifact = listen_file(cluster, env, endpoint)
        if artifact is not None:
            artifacts.append(artifact)
    return artifacts
