"""NFS mounts (storage.nfs): mount points, the nodes each selects, options the keys
already set, and NFS over RDMA on nodes without an RDMA device."""

from __future__ import annotations

from clustergen.base import codes
from clustergen.base.errors import Problem, SpecPath
from clustergen.base.suggest import did_you_mean
from clustergen.base.systemd import UNIT_NAME_MAX, unit_name
from clustergen.model.common import expand_hostlist
from clustergen.model.nodes import KNOWN_ROLES
from clustergen.model.storage import NfsMount
from clustergen.resolve import ResolvedCluster
from clustergen.spec.hosts import compress

BASE: SpecPath = ("storage", "nfs")
# Mount options a key of the mount sets (nfs(5)): given again in options they would
# contradict it, and mount.nfs takes the last one silently.
KEYED_OPTIONS = {
    "vers": "version",
    "nfsvers": "version",
    "proto": "transport",
    "rdma": "transport",
    "tcp": "transport",
    "udp": "transport",
    "port": "transport",
    "nconnect": "nconnect",
}


def _mounts(cluster: ResolvedCluster) -> list[NfsMount]:
    storage = cluster.spec.storage
    return storage.nfs if storage else []


def mount_points(cluster: ResolvedCluster) -> list[Problem]:
    """Each mount point once, apart from Lustre's; a unit name systemd accepts."""
    storage = cluster.spec.storage
    if storage is None:
        return []
    taken: dict[str, str] = {}
    if storage.lustre is not None:
        taken[storage.lustre.mount.path.rstrip("/")] = "storage.lustre.mount.path"
    problems = []
    for i, mount in enumerate(storage.nfs):
        where = mount.path.rstrip("/") or "/"
        if where in taken:
            problems.append(
                Problem(
                    codes.STORAGE_NFS_MOUNT_POINT,
                    (*BASE, i, "path"),
                    f"mount point {mount.path} is also {taken[where]}",
                )
            )
        else:
            taken[where] = f"storage.nfs[{i}].path"
        unit = unit_name(mount.path, "mount")
        if len(unit) > UNIT_NAME_MAX:
            problems.append(
                Problem(
                    codes.STORAGE_MOUNT_UNIT_NAME,
                    (*BASE, i, "path"),
                    f"the mount unit of this path is named with {len(unit)} characters "
                    f"(systemd-escape --path), more than systemd's {UNIT_NAME_MAX}",
                )
            )
    return problems


def selection(cluster: ResolvedCluster) -> list[Problem]:
    """Known roles, defined nodes, and at least one node per mount."""
    roles = (*KNOWN_ROLES, *cluster.spec.cluster.extra_roles)
    known = cluster.by_name
    problems = []
    for i, (mount, nodes) in enumerate(zip(_mounts(cluster), cluster.nfs_clients, strict=True)):
        problems += [
            Problem(
                codes.STORAGE_NFS_UNKNOWN_ROLE,
                (*BASE, i, "roles", j),
                f"unknown role '{role}'{did_you_mean(role, roles)}",
            )
            for j, role in enumerate(mount.roles)
            if role not in roles
        ]
        missing = [n for n in expand_hostlist(mount.nodes) if n not in known] if mount.nodes else []
        if missing:
            problems.append(
                Problem(
                    codes.STORAGE_NFS_UNKNOWN_NODE,
                    (*BASE, i, "nodes"),
                    f"{compress(missing)}: not defined in nodes" + did_you_mean(missing[0], known),
                )
            )
        if not nodes:
            problems.append(
                Problem(
                    codes.STORAGE_NFS_NO_NODES,
                    (*BASE, i),
                    f"the mount of {mount.server}:{mount.export} selects no node: "
                    "give roles or nodes that exist",
                )
            )
    return problems


def keyed_options(cluster: ResolvedCluster) -> list[Problem]:
    """No option that a key of the mount sets."""
    problems = []
    for i, mount in enumerate(_mounts(cluster)):
        for j, option in enumerate(mount.options):
            name = option.split("=", 1)[0]
            if name in KEYED_OPTIONS:
                problems.append(
                    Problem(
                        codes.STORAGE_NFS_OPTION,
                        (*BASE, i, "options", j),
                        f"'{option}' is set by the mount's key '{KEYED_OPTIONS[name]}'; "
                        "use that key",
                    )
                )
    return problems


def rdma(cluster: ResolvedCluster) -> list[Problem]:
    """NFS over RDMA where the nodes' hardware profiles list an RDMA device."""
    problems = []
    hosts = cluster.by_name
    for i, (mount, nodes) in enumerate(zip(_mounts(cluster), cluster.nfs_clients, strict=True)):
        if mount.transport != "rdma":
            continue
        without = [n for n in nodes if not hosts[n].hardware.fabric_hcas]
        if without:
            problems.append(
                Problem(
                    codes.STORAGE_NFS_RDMA_DEVICE,
                    (*BASE, i, "transport"),
                    f"{compress(without)}: no RDMA device in the hardware profile "
                    "(fabric_hcas), so proto=rdma may not mount there; RoCE or InfiniBand "
                    "storage NICs count only when listed as fabric_hcas",
                )
            )
    return problems
