"""NFS: a systemd mount unit per storage.nfs mount on the nodes it selects, and the
exports of the mounts whose server is a node of the spec.

Each mount is a native `.mount` unit (named by systemd-escape's path rules), ordered
after network-online.target (and after the RDMA stack's rdma-hw.target for NFS over
RDMA), and part of remote-fs.target as an fstab line would be (systemd.mount(5)): a
required mount is RequiredBy= it, one with `required: false` only WantedBy= it, as
`nofail` makes an fstab line. slurmd starts after remote-fs.target (SchedMD's
etc/slurmd.service.in: After=... remote-fs.target), so jobs find the mounts. No
automount: a node boots with its mounts, or the failed unit is there for the admin and
the health check to see, not at a job's first access. A server of the spec gets
/etc/exports.d/clustergen.exports, one line per exported path with the nodes that mount
it (exports(5)).
"""

from __future__ import annotations

from dataclasses import dataclass

import jinja2

from clustergen.base.artifacts import Artifact, Install, NodeChange
from clustergen.base.systemd import unit_name
from clustergen.catalog.groups import NFS_CLIENT_GROUP, NFS_SERVER_GROUP
from clustergen.model.storage import NfsMount, protective_options
from clustergen.resolve import ResolvedCluster
from clustergen.templating import render_template

# Its role includes rendered_files for it and defines the handlers it notifies.
OWN_ROLE = True

UNITS = "/etc/systemd/system"
EXPORTS = "/etc/exports.d/clustergen.exports"  # exports(5): exportfs reads /etc/exports.d/*.exports
REMOUNT = NodeChange("remount", "nfs")
REEXPORT = NodeChange("reconfigure", "nfs-server")
# Linux's NFS/RDMA port (IANA nfsrdma 20049): the kernel's nfs-rdma documentation mounts
# with `-o rdma,port=20049`; nfs(5) proto=rdma. NFSv4 uses no rpcbind to find it.
RDMA_PORT = 20049
# rdma-core's target, pulled in by udev when an RDMA device appears (kernel-boot/
# rdma-ulp-modules.rules: ENV{SYSTEMD_WANTS}+="rdma-hw.target").
RDMA_TARGET = "rdma-hw.target"


@dataclass(frozen=True)
class NfsUnit:
    unit: str  # mnt-data.mount
    what: str  # server:/export
    where: str
    options: str
    after: tuple[str, ...]
    install: str  # RequiredBy (required) or WantedBy, of remote-fs.target
    nodes: tuple[str, ...]


@dataclass(frozen=True)
class ExportLine:
    path: str
    clients: tuple[tuple[str, str], ...]  # (node, options), in spec order


def mount_options(mount: NfsMount) -> str:
    """_netdev, the keys' options (vers, proto and port for rdma, nconnect), the spec's
    own, then nosuid (unless the mount's setuid key says why not) and nodev, each once, in
    that order: mount(8) takes the last of contradicting options, so no option before them
    (defaults, say) turns them off."""
    options = ["_netdev", f"vers={mount.version}"]
    if mount.transport == "rdma":
        options += ["proto=rdma", f"port={RDMA_PORT}"]
    if mount.nconnect is not None:
        options.append(f"nconnect={mount.nconnect}")
    return ",".join(dict.fromkeys([*options, *mount.options, *protective_options(mount.setuid)]))


def nfs_units(cluster: ResolvedCluster) -> tuple[NfsUnit, ...]:
    mounts = cluster.spec.storage.nfs if cluster.spec.storage else []
    units = []
    for mount, nodes in zip(mounts, cluster.nfs_clients, strict=True):
        if not nodes:
            continue  # checks.nfs reports a mount that selects no node
        after = ["network-online.target"]
        if mount.transport == "rdma":
            after.append(RDMA_TARGET)
        units.append(
            NfsUnit(
                unit_name(mount.path, "mount"),
                f"{mount.server}:{mount.export}",
                mount.path,
                mount_options(mount),
                tuple(after),
                "RequiredBy" if mount.required else "WantedBy",
                nodes,
            )
        )
    return tuple(units)


def nfs_exports(cluster: ResolvedCluster) -> dict[str, tuple[ExportLine, ...]]:
    """Server node -> its export lines: each path once, each client with the options of
    the first mount that gives it the path."""
    mounts = cluster.spec.storage.nfs if cluster.spec.storage else []
    by_server: dict[str, dict[str, dict[str, str]]] = {}
    for mount, nodes in zip(mounts, cluster.nfs_clients, strict=True):
        if mount.server not in cluster.by_name or not nodes:
            continue
        clients = by_server.setdefault(mount.server, {}).setdefault(mount.export, {})
        for node in nodes:
            clients.setdefault(node, ",".join(mount.export_options))
    return {
        server: tuple(ExportLine(path, tuple(clients.items())) for path, clients in paths.items())
        for server, paths in by_server.items()
    }


def render(cluster: ResolvedCluster, env: jinja2.Environment) -> list[Artifact]:
    artifacts = [
        Artifact(
            f"nfs/client/{u.unit}",
            render_template(env, "nfs/client.mount.j2", cluster, u=u),
            install=Install(f"{UNITS}/{u.unit}", NFS_CLIENT_GROUP, REMOUNT, hosts=u.nodes),
        )
        for u in nfs_units(cluster)
    ]
    for server, lines in sorted(nfs_exports(cluster).items()):
        artifacts.append(
            Artifact(
                f"nfs/server/{server}.exports",
                render_template(env, "nfs/exports.j2", cluster, server=server, lines=lines),
                install=Install(EXPORTS, NFS_SERVER_GROUP, REEXPORT, hosts=(server,)),
            )
        )
    return artifacts
