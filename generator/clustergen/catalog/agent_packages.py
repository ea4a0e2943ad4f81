"""The packages of the agents clustergen runs on the nodes beside the workload: the
Prometheus exporters (monitoring:, catalog/monitoring.py) and pull mode's Ansible, git and
gpgv (ansible.pull)."""

from __future__ import annotations

from clustergen.catalog.distributions import DISTRIBUTIONS, PackageFamily
from clustergen.catalog.monitoring import (
    DCGM_EXPORTER_PACKAGE,
    NODE_EXPORTER,
    SLURM_EXPORTER_PACKAGE,
    dcgm_exporter_version,
)
from clustergen.catalog.pins import Pins, distribution_version_pin
from clustergen.model.monitoring import Monitoring
from clustergen.model.software import Software


# The exporters (monitoring:, catalog/monitoring.py). Their pins read the monitoring
# section; checks.monitoring reports a version it cannot find.
def node_exporter_pins(family: PackageFamily, s: Software, m: Monitoring) -> Pins:
    if m.node_exporter is None:
        return {}
    version = m.node_exporter.version or DISTRIBUTIONS[s.os].node_exporter
    if version is None:
        return {}
    return {NODE_EXPORTER[family].package: distribution_version_pin(version)}


def dcgm_exporter_pins(family: PackageFamily, s: Software, m: Monitoring) -> Pins:
    if m.dcgm_exporter is None:
        return {}
    version = dcgm_exporter_version(m.dcgm_exporter, s.dcgm)
    return {DCGM_EXPORTER_PACKAGE: f"{version}-1"} if version is not None else {}


def slurm_exporter_pins(family: PackageFamily, s: Software, m: Monitoring) -> Pins:
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


def ansible_pull_pins(family: PackageFamily, s: Software) -> Pins:
    distribution = DISTRIBUTIONS[s.os]
    versions = {name: getattr(distribution, field) for name, field in PULL_PACKAGES.items()}
    if any(version is None for version in versions.values()):
        return {}
    return {name: distribution_version_pin(version) for name, version in versions.items()}
