"""What the spec and the rendered tree say each node has: the reference audit compares
the nodes' reports with. The spec gives the hardware (GPUs, HCAs, the topology table,
CPUs and memory), the addresses and the LNet interfaces; the tree gives what was applied:
versions.lock's pins and facility/cables.csv's cables."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import yaml

from clustergen.base.errors import UsageError
from clustergen.base.yaml_loader import SAFE_LOADER
from clustergen.catalog.gpus import GpuModel, profile_gpu_sets
from clustergen.catalog.groups import ANSIBLE_PULL_GROUP
from clustergen.model.common import expand_hostlist
from clustergen.model.gpu_topology import Topology
from clustergen.model.network import LINK_GBITS
from clustergen.outputs.lustre.derive import derive_lustre
from clustergen.resolve import ResolvedCluster
from clustergen.spec.hosts import Host, InterfaceAddress

LOCK = "versions.lock"
CABLES = "facility/cables.csv"


class PlannedCable(NamedTuple):
    """A switch port an HCA's cable lands on (a tuple: a 65,536-node tree plans half a
    million)."""

    switch: str
    port: int


@dataclass
class NodeExpectation:
    host: Host
    gpu_count: int = 0
    # Each GPU's catalog model by device number (/dev/nvidiaN): gpu's, then other_gpus'.
    gpu_models: tuple[GpuModel | None, ...] = ()
    driver: str | None = None
    hcas: tuple[str, ...] = ()  # every RDMA device the profile names
    fabric_hcas: frozenset[str] = frozenset()  # those on the compute fabric (rate, layer)
    rate_gbits: int | None = None
    link_layer: str | None = None
    topology: Topology | None = None
    cpus: int | None = None  # Slurm compute nodes: what slurm.conf says
    real_memory_mib: int | None = None
    package_family: str = "apt"
    packages: dict[str, str] = field(default_factory=dict)
    addresses: tuple[InterfaceAddress, ...] = ()
    lnet: tuple[tuple[str, str], ...] = ()  # (net, interface)
    cables: dict[str, PlannedCable] = field(default_factory=dict)  # HCA -> its switch port
    pull: bool = False  # pull mode (ansible.pull): the node records each run


@dataclass(frozen=True)
class AppliedTree:
    """What audit reads of the rendered tree."""

    package_family: str
    pins: Mapping[str, dict[str, str]]  # node -> package -> pinned version
    cables: Mapping[tuple[str, str], PlannedCable]  # (node, HCA) -> switch port


def read_tree(out_dir: Path) -> AppliedTree:
    """versions.lock and facility/cables.csv of the tree in `out_dir`; a tree without a
    cabling plan (no facility sheets) has no cable to check."""
    lock_path, cables_path = out_dir / LOCK, out_dir / CABLES
    try:
        lock_text = lock_path.read_text(encoding="utf-8")
        cables_text = cables_path.read_text(encoding="utf-8") if cables_path.exists() else ""
    except OSError as exc:
        where = exc.filename or lock_path
        raise UsageError(
            f"{where}: cannot read it ({exc.strerror or exc}); -o names the rendered tree"
        ) from None
    return applied_tree(lock_text, cables_text, str(lock_path))


def applied_tree(lock_text: str, cables_text: str, origin: str = LOCK) -> AppliedTree:
    try:
        lock = yaml.load(lock_text, Loader=SAFE_LOADER)
    except yaml.YAMLError as exc:
        raise UsageError(f"{origin}: not readable YAML ({exc})") from None
    if not isinstance(lock, dict) or not isinstance(lock.get("groups"), dict):
        raise UsageError(f"{origin}: not a versions.lock of clustergen (no groups)")
    pins: dict[str, dict[str, str]] = {}
    for group in lock["groups"].values():
        packages = {str(k): str(v) for k, v in (group.get("packages") or {}).items()}
        for node in expand_hostlist(str(group.get("nodes", ""))):
            pins.setdefault(node, {}).update(packages)
    family = str(lock.get("package_family", "apt"))
    return AppliedTree(family, pins, _cables(cables_text))


def _cables(text: str) -> dict[tuple[str, str], PlannedCable]:
    """Each node's HCA's planned switch port, from cables.csv's rows, its columns found by
    the header's names (the last of a name written twice), as csv.DictReader finds them;
    a row short of a column has none there. (Rows as lists: 131,072 of them at 16k
    nodes, where a dict a row was most of audit's reading of the tree.)"""
    rows = csv.reader(io.StringIO(text))
    at = {name: k for k, name in enumerate(next(rows, []))}
    columns = [at.get(name, -1) for name in ("kind", "port", "peer", "peer_port", "switch")]
    if min(columns) < 0:
        return {}
    kind, port, peer, peer_port, switch = columns
    last = max(columns)
    cables = {}
    for row in rows:
        if len(row) > last and row[kind] == "node" and row[port].isdigit():
            cables[(row[peer], row[peer_port])] = PlannedCable(row[switch], int(row[port]))
    return cables


def expectations(cluster: ResolvedCluster, tree: AppliedTree) -> dict[str, NodeExpectation]:
    spec = cluster.spec
    network = spec.network
    fabric = network.fabric if network else None
    lnet = _lnet_by_profile(cluster)
    pulling = cluster.members.get(ANSIBLE_PULL_GROUP, frozenset())
    # Each GPU's model by device number, once a profile (gpu's, then other_gpus').
    models = {
        name: tuple(s.model for s in profile_gpu_sets(profile) for _ in s.indexes)
        for name, profile in spec.hardware.items()
    }
    expected = {}
    for host in cluster.hosts:
        if not host.profiled:
            continue
        profile = host.hardware
        topology = profile.topology
        hcas = list(profile.fabric_hcas)
        hcas += [h.name for h in topology.hcas if h.name not in hcas] if topology else []
        compute_hcas = {h.name for h in topology.hcas if h.role == "compute"} if topology else set()
        node = NodeExpectation(
            host,
            hcas=tuple(hcas),
            fabric_hcas=frozenset(profile.fabric_hcas) | compute_hcas,
            topology=topology if topology and topology.gpus else None,
            package_family=tree.package_family,
            packages=tree.pins.get(host.name, {}),
            addresses=_addresses(cluster, host),
            lnet=lnet.get(host.hardware_name, ()),
            pull=host.name in pulling,
        )
        if profile.gpu is not None:
            node.gpu_models = models[host.hardware_name]
            node.gpu_count = len(node.gpu_models)
            node.driver = spec.software.nvidia_driver
        if fabric is not None and node.fabric_hcas:
            node.rate_gbits = LINK_GBITS.get(fabric.rate)
            node.link_layer = "InfiniBand" if fabric.type == "infiniband" else "Ethernet"
        if host.is_slurm_compute:
            cpu = profile.cpu
            node.cpus = cpu.sockets * cpu.cores_per_socket * cpu.threads_per_core
            node.real_memory_mib = profile.slurm_real_memory_mib()
        node.cables = {
            hca: tree.cables[(host.name, hca)] for hca in hcas if (host.name, hca) in tree.cables
        }
        expected[host.name] = node
    return expected


def _addresses(cluster: ResolvedCluster, host: Host) -> tuple[InterfaceAddress, ...]:
    network = cluster.spec.network
    if network is None:
        return ()
    found = []
    if host.management_ip:
        prefix = int(network.management.cidr.rpartition("/")[2])
        found.append(
            InterfaceAddress(host.hardware.interfaces.management, host.management_ip, prefix)
        )
    found += host.fabric_addresses(network.fabric)
    found += host.storage_addresses(network.storage)
    frontend = host.frontend_address(network.frontend)
    return tuple(found + ([frontend] if frontend else []))


def _lnet_by_profile(cluster: ResolvedCluster) -> dict[str, tuple[tuple[str, str], ...]]:
    """Hardware profile -> the (net, interface) pairs its LNet configuration sets up."""
    lustre = derive_lustre(cluster)
    if lustre is None:
        return {}
    return {
        p.profile: tuple((net, interface) for net, interfaces in p.nets for interface in interfaces)
        for p in lustre.lnet
    }
