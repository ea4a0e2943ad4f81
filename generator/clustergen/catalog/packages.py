"""Package names and exact version strings of the pinned stack, per OS family.

Each concern (driver, fabric manager, CUDA, ...) maps the versions of the spec's
`software` block to the packages that carry them and the version string the
package manager must be given. The roles install exactly these and hold them.

The derivations live with their subjects (nvidia_packages.py, slurm_packages.py,
lustre_packages.py, fabric_packages.py, agent_packages.py, with what they share in
pins.py); this module holds the table of concerns that combines them, and the pins of one
spec, derived and with software.packages applied.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from clustergen.base.artifacts import NO_CHANGE, NodeChange
from clustergen.catalog.agent_packages import (
    ansible_pull_pins,
    dcgm_exporter_pins,
    node_exporter_pins,
    slurm_exporter_pins,
)
from clustergen.catalog.distributions import PackageFamily
from clustergen.catalog.fabric_packages import (
    doca_pins,
    nccl_tests_pins,
    opensm_pins,
    rdma_pins,
)
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
from clustergen.catalog.lustre_packages import (
    lustre_client_pins,
    lustre_ldiskfs_pins,
    lustre_server_pins,
    lustre_zfs_pins,
)
from clustergen.catalog.monitoring import NODE_EXPORTER
from clustergen.catalog.nvidia_packages import (
    cuda_pins,
    cudnn_pins,
    dcgm_pins,
    fabric_manager_pins,
    imex_pins,
    nccl_pins,
    nvidia_driver_pins,
)
from clustergen.catalog.pins import OS_PACKAGE_FAMILY, Pins, upstream_version
from clustergen.catalog.slurm_packages import nhc_pins, slurm_pins, slurm_pmix_pins
from clustergen.model.monitoring import Monitoring
from clustergen.model.software import Software

# derived_pins' feature of slurm.mpi: pmix (the slurm_pmix concern).
PMIX_FEATURE = "pmix"


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
    # Rolled out by site.yml's driver roll-out (drain, install, reboot, resume in batches):
    # the NVIDIA driver alone. Another concern whose change is a reboot is installed by its
    # play on every node, and the node loads it at the reboot the site schedules.
    rolled_out: bool = False
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
        nvidia_driver_pins,
        reports="nvidia_driver",
        rolled_out=True,
        change=NodeChange("reboot"),  # rolled out node by node: drain, install, reboot, resume
    ),
    Concern(
        "fabric_manager",
        "NVIDIA fabric manager",
        NVSWITCH_GROUP,
        "fabric_manager",
        fabric_manager_pins,
        change=NodeChange("restart", "nvidia-fabricmanager"),
        with_driver=True,
    ),
    Concern(
        "imex",
        "NVIDIA IMEX",
        NVLINK_GROUP,
        "imex",
        imex_pins,
        # In each batch of the roll-out (roles/imex/tasks/packages.yml), before its reboot;
        # its node lists come with the NVIDIA stack play, on every tray of the domain.
        change=NodeChange("restart", "nvidia-imex"),
        with_driver=True,
        only_with_nodes=True,
    ),
    Concern("cuda", "CUDA toolkit", GPU_GROUP, "cuda", cuda_pins),
    Concern(
        "nccl",
        "NCCL runtime and headers",
        GPU_GROUP,
        "nccl",
        nccl_pins,
        takes_effect="jobs started after the install load it (and the acceptance jobs "
        "test it); running jobs keep the NCCL they loaded",
    ),
    Concern("cudnn", "cuDNN", GPU_GROUP, "cudnn", cudnn_pins),
    Concern(
        "nccl_tests",
        "Open MPI for nccl-tests",
        GPU_GROUP,
        "nccl_tests",
        nccl_tests_pins,
        without_packages="none: software.nccl_tests is not set, or clustergen knows no Open "
        "MPI of the OS (nccl-tests is then not built)",
    ),
    Concern(
        "dcgm", "DCGM", GPU_GROUP, "dcgm", dcgm_pins, change=NodeChange("restart", "nvidia-dcgm")
    ),
    Concern(
        "slurm_controller",
        "Slurm controller (slurmctld)",
        "slurm_controller",
        "slurm",
        slurm_pins("controller"),
        change=NodeChange("restart", "slurmctld"),
    ),
    Concern(
        "slurm_dbd",
        "Slurm accounting (slurmdbd)",
        "slurm_dbd",
        "slurm",
        slurm_pins("dbd"),
        change=NodeChange("restart", "slurmdbd"),
    ),
    Concern(
        "slurm_compute",
        "Slurm compute (slurmd)",
        "compute",
        "slurm",
        slurm_pins("compute"),
        change=NodeChange("restart", "slurmd"),
    ),
    Concern(
        "slurm_login",
        "Slurm client commands",
        "login",
        "slurm",
        slurm_pins("login"),
        takes_effect="each command run after the install is the new one",
    ),
    Concern(
        "slurm_pmix",
        "PMIx and Slurm's mpi/pmix plugin",
        # Every process that loads the plugin opens libpmix when it loads it (mpi_pmix.c
        # init()): slurmd and slurmstepd, and srun wherever a user runs it.
        SLURM_GROUP,
        "slurm",
        slurm_pmix_pins,
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
        lustre_client_pins,
        change=NodeChange("remount", "lustre"),  # new client modules load on the next mount
    ),
    Concern(
        "lustre_server",
        "Lustre server",
        LUSTRE_SERVER_GROUP,
        "lustre_server",
        lustre_server_pins,
        change=NodeChange("reboot"),  # new server modules load once the targets restart
    ),
    Concern(
        "lustre_ldiskfs",
        "Lustre ldiskfs OSD",
        LUSTRE_LDISKFS_GROUP,
        "lustre_server",
        lustre_ldiskfs_pins,
        change=NodeChange("reboot"),
        without_packages="nothing of its own on apt (the server modules carry the OSDs), "
        "or no Lustre in the spec's software block",
    ),
    Concern(
        "lustre_zfs",
        "Lustre zfs OSD and OpenZFS",
        LUSTRE_ZFS_GROUP,
        "lustre_server",
        lustre_zfs_pins,
        change=NodeChange("reboot"),
    ),
    Concern(
        "rdma",
        "RDMA user space (rdma-core, perftest)",
        RDMA_GROUP,
        "rdma",
        rdma_pins,
        without_packages="none: software.rdma says doca-ofed (concern doca installs it), or "
        "the catalog knows no rdma-core version for the OS and software.rdma.version is not set",
        only_with_nodes=True,
    ),
    Concern(
        "doca",
        "DOCA-OFED, NVIDIA's RDMA stack (drivers, rdma-core, perftest, mlnx-tools)",
        RDMA_GROUP,
        "rdma",
        doca_pins,
        # Its DKMS modules (mlx5_core, mlx5_ib, ib_core) replace the running ones: a new
        # release is loaded by a reboot (docs/rdma.md).
        change=NodeChange("reboot"),
        takes_effect="its kernel modules once the node reboots; its tools for programs "
        "started after the install",
        without_packages="none: software.rdma says the distribution's stack (concern rdma)",
        only_with_nodes=True,
    ),
    Concern(
        "opensm",
        "OpenSM subnet manager",
        OPENSM_GROUP,
        "opensm",
        opensm_pins,
        change=NodeChange("restart", "opensm"),
        without_packages="none: the catalog knows no opensm version for the OS",
        only_with_nodes=True,
    ),
    Concern(
        "nhc",
        "LBNL Node Health Check (slurmd's HealthCheckProgram)",
        "compute",
        "nhc",
        nhc_pins,
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
        monitoring=node_exporter_pins,
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
        monitoring=dcgm_exporter_pins,
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
        monitoring=slurm_exporter_pins,
    ),
    Concern(
        "ansible_pull",
        "Ansible and git for pull mode",
        ANSIBLE_PULL_GROUP,
        "ansible_pull",
        ansible_pull_pins,
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
