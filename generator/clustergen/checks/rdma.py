"""The RDMA stack (software.rdma) against the nodes with fabric HCAs (docs/rdma.md)."""

from __future__ import annotations

import re

from clustergen.base import codes
from clustergen.base.errors import Problem, SpecPath
from clustergen.catalog.distributions import DISTRIBUTIONS
from clustergen.catalog.fabric_packages import rdma_versions
from clustergen.catalog.switches import catalog_switch
from clustergen.model.network import SPECTRUM_X_PRIORITY, Fabric
from clustergen.model.software import Software
from clustergen.resolve import ResolvedCluster, opensm_nodes, rdma_profiles
from clustergen.resolve.fabric import SwitchPlane, planes
from clustergen.spec.hosts import compress


def stack(cluster: ResolvedCluster) -> list[Problem]:
    """A repository named that exists; a warning wherever nodes with fabric HCAs get no
    RDMA packages from clustergen (DOCA-OFED, or an rdma-core version it does not know)."""
    spec = cluster.spec
    software = spec.software
    rdma = software.rdma
    problems = []
    names = {repository.name for repository in software.repositories}
    if rdma is not None and rdma.repository is not None and rdma.repository not in names:
        problems.append(
            Problem(
                codes.SOFTWARE_RDMA_REPOSITORY_UNKNOWN,
                ("software", "rdma", "repository"),
                f"software.rdma.repository '{rdma.repository}' is not in software.repositories"
                f" ({', '.join(sorted(names)) or 'none listed'})",
            )
        )
    problems += _doca_release(software)
    profiles = rdma_profiles(spec.hardware, spec.network)
    if not profiles:
        return problems
    core, _ = rdma_versions(software)
    where = ("software", "rdma") if rdma is not None else ("software", "os")
    if rdma is not None and rdma.stack == "doca-ofed":
        return problems  # concern doca installs DOCA-OFED from its repository
    if core is None:
        message = (
            f"the nodes of {', '.join(profiles)} have fabric HCAs, but clustergen knows no "
            f"rdma-core version of {DISTRIBUTIONS[software.os].title}: no RDMA package "
            "(rdma-core, perftest) is installed; set software.rdma.version (and perftest)"
        )
    else:
        return problems
    problems.append(Problem(codes.SOFTWARE_RDMA_UNPINNED, where, message))
    return problems


# A DOCA repository's path names its release: NVIDIA's is
# linux.mellanox.com/public/repo/doca/<release>/<distro>/<arch>/ (docs/rdma.md), and a
# mirror that keeps the layout keeps the segment.
_DOCA_RELEASE_IN_URL = re.compile(r"/doca/(?P<release>\d+\.\d+(?:\.\d+)?)/")


def _doca_release(software: Software) -> list[Problem]:
    """stack doca-ofed from a repository whose path names another DOCA release than
    software.rdma.version: the pin `doca-ofed <version>-*` finds no package there."""
    rdma = software.rdma
    if rdma is None or rdma.stack != "doca-ofed" or rdma.version is None:
        return []
    served = next((r for r in software.repositories if r.name == rdma.repository), None)
    if served is None:
        return []  # stack() reports the unknown name
    found = _DOCA_RELEASE_IN_URL.search(served.url)
    if found is None or found["release"] == rdma.version:
        return []
    return [
        Problem(
            codes.SOFTWARE_RDMA_RELEASE_NOT_SERVED,
            ("software", "rdma", "version"),
            f"DOCA {rdma.version} is pinned, but repository '{served.name}' "
            f"({found.string}) serves DOCA {found['release']}: the pin doca-ofed "
            f"{rdma.version}-* finds no package there; pin {found['release']} or name the "
            f"repository of {rdma.version}",
        )
    ]


def subnet_manager(cluster: ResolvedCluster) -> list[Problem]:
    """Every InfiniBand fabric says what runs its subnet manager; OpenSM's nodes exist,
    have a fabric HCA and are named once (docs/subnet-manager.md)."""
    spec = cluster.spec
    problems = []
    for key in ("fabric", "storage"):
        fabric = getattr(spec.network, key)
        if fabric is None or fabric.type != "infiniband":
            continue
        manager = fabric.subnet_manager
        if manager is None:
            problems.append(
                Problem(
                    codes.NETWORK_SUBNET_MANAGER_UNSET,
                    ("network", key, "type"),
                    f"InfiniBand network.{key} does not say what runs its subnet manager, and "
                    "its links stay down without one: set subnet_manager (kind opensm with "
                    "the nodes that run it, or ufm or switch when those manage the fabric)",
                )
            )
        elif key == "storage" and manager.kind == "opensm":
            problems.append(
                Problem(
                    codes.NETWORK_SUBNET_MANAGER_KEYS,
                    ("network", key, "subnet_manager", "kind"),
                    "OpenSM is rendered for network.fabric only; run the storage fabric's "
                    "subnet manager on its switches or UFM (kind switch or ufm)",
                )
            )
    return problems + _opensm_nodes(cluster) + _planes_managed(cluster)


def _planes_managed(cluster: ResolvedCluster) -> list[Problem]:
    """Every plane of an InfiniBand fabric (a connected set of its switches: one per rail
    where no switch joins the rails) is a subnet of its own, and its links stay down
    without a subnet manager on it (opensm(8)): OpenSM's nodes must have a port on each
    (clustergen-opensm-start runs one SM per fabric port); with UFM or the switches, the
    site must run one on each."""
    fabric = cluster.spec.network.fabric
    if fabric is None or fabric.type != "infiniband" or fabric.subnet_manager is None:
        return []
    found = planes(cluster)
    if len(found) < 2:
        return []
    path = ("network", "fabric", "subnet_manager")
    if fabric.subnet_manager.kind != "opensm":
        return [
            Problem(
                codes.NETWORK_SUBNET_MANAGER_PLANES,
                (*path, "kind"),
                f"the fabric is {len(found)} planes that no switch joins "
                f"({'; '.join(_plane_name(plane) for plane in found)}), each a subnet of its "
                f"own: {fabric.subnet_manager.kind} must run a subnet manager on every one, "
                "or that plane's links stay down",
            )
        ]
    managers = set(opensm_nodes(cluster.spec.network))
    missing = [plane for plane in found if not plane.nodes & managers]
    return [
        Problem(
            codes.NETWORK_SUBNET_MANAGER_PLANE,
            (*path, "nodes"),
            f"{_plane_name(plane)} has no OpenSM node cabled to it, so no subnet manager runs "
            "there and its links stay down: add a node with a port on it to "
            "subnet_manager.nodes, or join the planes",
        )
        for plane in missing
    ]


def _plane_name(plane: SwitchPlane) -> str:
    rails = sorted(plane.rails)
    if rails:
        return f"the plane of rail{'s' if len(rails) > 1 else ''} {', '.join(map(str, rails))}"
    return f"the plane of {compress(sorted(plane.switches))}"


def _opensm_nodes(cluster: ResolvedCluster) -> list[Problem]:
    spec = cluster.spec
    nodes = opensm_nodes(spec.network)
    with_hcas = set(rdma_profiles(spec.hardware, spec.network))
    problems = []
    for index, name in enumerate(nodes):
        host = cluster.by_name.get(name)
        reason = (
            "is named twice"
            if nodes.index(name) != index
            else "is not a node of the spec"
            if host is None
            else f"has no fabric HCA (hardware '{host.hardware_name}')"
            if host.hardware_name not in with_hcas
            else None
        )
        if reason is not None:
            problems.append(
                Problem(
                    codes.NETWORK_SUBNET_MANAGER_NODE,
                    ("network", "fabric", "subnet_manager", "nodes", index),
                    f"subnet_manager node '{name}' {reason}",
                )
            )
    if nodes and DISTRIBUTIONS[spec.software.os].opensm is None:
        problems.append(
            Problem(
                codes.SOFTWARE_RDMA_UNPINNED,
                ("network", "fabric", "subnet_manager"),
                f"clustergen knows no opensm version of "
                f"{DISTRIBUTIONS[spec.software.os].title}: the opensm role configures and "
                "starts OpenSM but installs no package: install opensm on "
                f"{', '.join(nodes)} before site.yml",
            )
        )
    return problems


def _traffic_class_path(fabric: Fabric) -> SpecPath:
    """Where the traffic class was written: roce.traffic_class, or Spectrum-X's type."""
    if fabric.traffic_class_written:
        return ("network", "fabric", "roce", "traffic_class")
    return ("network", "fabric", "type")


def roce_host_qos(cluster: ResolvedCluster) -> list[Problem]:
    """A RoCE traffic class with the distribution's RDMA stack: the host half of the
    lossless class (DSCP trust, PFC on its priority) is set by mlnx_qos, which comes with
    NVIDIA's mlnx-tools (DOCA-OFED) and not with the distribution's rdma-core, so the
    QoS unit's condition skips it on every node and NCCL marks traffic for a class the
    NIC does not treat as lossless."""
    spec = cluster.spec
    fabric = spec.network.fabric
    rdma = spec.software.rdma
    if fabric is None or fabric.traffic_class is None:
        return []
    if rdma is not None and rdma.stack == "doca-ofed":
        return []
    return [
        Problem(
            codes.RDMA_ROCE_QOS_WITHOUT_MLNX_QOS,
            _traffic_class_path(fabric),
            f"traffic class {fabric.traffic_class} on RoCE with the distribution's RDMA "
            "stack: clustergen-roce-qos sets the NIC's DSCP trust and PFC with mlnx_qos, "
            "which comes with NVIDIA's mlnx-tools (DOCA-OFED), not with rdma-core, so it is "
            "skipped on every node and the class is not lossless on the host; use "
            "software.rdma.stack doca-ofed, or set the NICs' QoS with the site's own tools "
            "(docs/rdma.md)",
        )
    ]


# The switches Spectrum-X runs on. NVIDIA: Spectrum-X "combines NVIDIA Spectrum switches
# with the BlueField-3 SuperNIC, ConnectX-7 NIC, and ConnectX-8 and ConnectX-9 SuperNIC
# families" (Network Operator 26.10, "NVIDIA Spectrum-X Ethernet Networking Platform",
# docs.nvidia.com/networking/display/kubernetes26100/spectrum-x/spectrum-x.html); of the
# Spectrum generations, NetQ monitors adaptive routing on Spectrum-4 alone (NetQ 4.11,
# "Spectrum Support": Spectrum-1 to -3 "No"). Spectrum-6 is Spectrum-X's for Rubin.
SPECTRUM_X_ASICS = ("Spectrum-4", "Spectrum-6")


def spectrum_x(cluster: ResolvedCluster) -> list[Problem]:
    """A Spectrum-X fabric whose lossless class is not on priority 3, the one NVIDIA's
    Spectrum-X host configuration makes lossless, and switches of a catalog model that is
    not a Spectrum-4 or later (an SN4700, an Arista): the adaptive routing and congestion
    control of Spectrum-X live in those switches."""
    fabric = cluster.spec.network.fabric
    if fabric is None or not fabric.spectrum_x or fabric.traffic_class is None:
        return []
    problems = []
    priority = (fabric.traffic_class >> 2) >> 3
    if priority != SPECTRUM_X_PRIORITY:
        problems.append(
            Problem(
                codes.NETWORK_SPECTRUM_X_PRIORITY,
                _traffic_class_path(fabric),
                f"traffic class {fabric.traffic_class} is DSCP {fabric.traffic_class >> 2}, "
                f"priority {priority} under the NIC's default DSCP map; NVIDIA's Spectrum-X "
                f"configuration makes priority {SPECTRUM_X_PRIORITY} lossless (PFC, DSCP "
                "trust), so RDMA would run in a lossy class: use a DSCP of 24-31 (traffic "
                "class 96-127, 106 by default) or leave roce.traffic_class out",
            )
        )
    for index, switch in enumerate(fabric.switches):
        model = catalog_switch(switch.model)
        if model is None or any(asic in model.name for asic in SPECTRUM_X_ASICS):
            continue
        problems.append(
            Problem(
                codes.NETWORK_SPECTRUM_X_SWITCH,
                ("network", "fabric", "switches", index, "model"),
                f"switch '{switch.name}' ({model.name}) is not a Spectrum-4 or later: "
                "Spectrum-X's adaptive routing and congestion control run in NVIDIA "
                "Spectrum-4/6 switches (sn5600, sn6810); use one, or type roce",
            )
        )
    return problems
