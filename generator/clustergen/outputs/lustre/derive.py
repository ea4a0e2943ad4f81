"""What the Lustre family renders, derived from the resolved cluster: one entry per
server target (format command, mount), per hardware profile (LNet), and the
client mount, tuning and layouts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from clustergen.base.systemd import unit_name, unit_word
from clustergen.catalog.groups import hardware_group, role_group
from clustergen.catalog.lustre import networks
from clustergen.model.common import parse_size
from clustergen.model.storage import (
    LayoutComponent,
    Lustre,
    LustreLayout,
    ServerTarget,
    protective_options,
)
from clustergen.resolve import ResolvedCluster
from clustergen.spec.hosts import Host

SBIN = "/usr/local/sbin"
UNITS = "/etc/systemd/system"
IDENTITIES = "/etc/clustergen/lustre-targets"  # each target's format identity
SERVER_MOUNTS = "/lustre"  # server targets mount at /lustre/<fsname>/<target>
KIND_ROLE = {"mgs": "lustre_mgs", "mdt": "lustre_mds", "ost": "lustre_oss"}
# The order targets start in (Lustre manual, "Starting Lustre"): the MGS, then the MDTs,
# then the OSTs.
KIND_ORDER = {"mgs": 0, "mdt": 1, "ost": 2}
LNET_UNIT = "lnet.service"
# ZFS on Linux imports pools (zfs-import-cache or -scan) before this target. A dataset
# is no device path, so systemd orders its mount after nothing (systemd.mount(5) adds
# device dependencies only for block devices).
ZFS_IMPORT_UNIT = "zfs-import.target"
ANY = "*"  # a layout field the spec leaves to the file system's default


def shq(value: object) -> str:
    """One shell word in single quotes, whatever it contains."""
    return "'" + str(value).replace("'", "'\\''") + "'"


@dataclass(frozen=True)
class Target:
    kind: str  # mgs, mdt, ost
    label: str  # training-OST0003, MGS
    slug: str  # file names: mgs, mdt0000, ost0003
    nodes: tuple[str, ...]  # primary service node first
    device: str
    backend: str
    pool: str | None  # zfs pool of the dataset
    vdev_type: str | None  # zpool create: present when the spec gives the pool
    vdevs: tuple[str, ...]
    ashift: int | None
    mkfs: tuple[str, ...]  # the mkfs.lustre argv without --reformat and the device
    # What decides the format, as `key=value` lines (see format_identity).
    identity: tuple[tuple[str, str], ...]
    mount_point: str
    mount_options: tuple[str, ...]
    # The mount unit's Requires= and After= (set by derive_lustre, which sees every target).
    requires: tuple[str, ...] = ()
    after: tuple[str, ...] = ()

    @property
    def group(self) -> str:
        return role_group(KIND_ROLE[self.kind])

    @property
    def script(self) -> str:
        return f"{SBIN}/lustre-format-{self.slug}"

    @property
    def identity_file(self) -> str:
        """Where a service node keeps the target's format identity."""
        return f"{IDENTITIES}/{self.slug}.format"

    @property
    def mount_unit(self) -> str:
        return unit_name(self.mount_point, "mount")


@dataclass(frozen=True)
class LnetProfile:
    profile: str
    group: str
    nets: tuple[tuple[str, tuple[str, ...]], ...]  # (network, interfaces)
    routes: tuple[tuple[str, str, int], ...]
    lnd: str | None  # ko2iblnd or ksocklnd, when tunables are set
    tunables: tuple[tuple[str, int], ...]  # the module options

    @property
    def ni_tunables(self) -> tuple[tuple[str, int], ...]:
        """lnetctl's per-NI `tunables` (credits)."""
        return tuple((k, v) for k, v in self.tunables if k in ("peer_credits", "credits"))

    @property
    def lnd_tunables(self) -> tuple[tuple[str, int], ...]:
        """lnetctl's per-NI `lnd tunables`."""
        return tuple((k, v) for k, v in self.tunables if k == "conns_per_peer")


@dataclass(frozen=True)
class Component:
    args: tuple[str, ...]  # lfs setstripe arguments of this component
    canonical: str  # "end count size pattern pool", * for defaults


@dataclass(frozen=True)
class Layout:
    path: str
    args: tuple[str, ...]
    canonical: tuple[str, ...]
    owner: str | None
    group: str | None
    mode: str | None


@dataclass(frozen=True)
class QuotaLine:
    flag: str  # -u, -g, -p
    id: str
    path: str | None  # project: the directory
    limits: tuple[int, int, int, int]  # block soft, block hard (KiB), inode soft, hard; 0 = none


@dataclass(frozen=True)
class LustreContext:
    fsname: str
    mgs_nids: tuple[str, ...]  # one per MGS service node
    targets: tuple[Target, ...]
    lnet: tuple[LnetProfile, ...]
    source: str  # mount source: nid[:nid]:/fsname[/fileset]
    mount_path: str
    mount_options: str
    mount_method: str
    client_unit: str
    client_params: tuple[tuple[str, str], ...]
    client_set_param: str  # the client tuning unit's ExecStart, escaped for systemd
    persistent_params: tuple[tuple[str, str], ...]
    pools: tuple[tuple[str, tuple[str, ...]], ...]  # name, OST names
    layouts: tuple[Layout, ...]
    quotas: tuple[QuotaLine, ...]


def nid(host: Host, net: str) -> str:
    """The node's NID on `net`: its storage address when it has storage interfaces, else
    its fabric address, else on tcp its management address (Host.lnet_address)."""
    return f"{host.lnet_address(net)}@{net}"


def derive_lustre(cluster: ResolvedCluster) -> LustreContext | None:
    lustre = cluster.spec.storage.lustre if cluster.spec.storage else None
    if lustre is None:
        return None
    hosts = cluster.by_name
    mgs_nodes = (lustre.mgs.node, *lustre.mgs.failover)
    mgs_nids = tuple(nid(hosts[n], lustre.lnet) for n in mgs_nodes)
    targets = [_target(lustre, "mgs", None, lustre.mgs, mgs_nids, hosts)]
    targets += [_target(lustre, "mdt", t.index, t, mgs_nids, hosts) for t in lustre.mdts]
    targets += [_target(lustre, "ost", t.index, t, mgs_nids, hosts) for t in lustre.osts]
    targets = [_ordered(t, targets) for t in targets]
    fileset = lustre.mount.fileset or ""
    client_params = [(k, str(v)) for k, v in lustre.client_tuning.items()]
    persistent = [(k, str(v)) for k, v in lustre.persistent_tuning.items()]
    if lustre.job_stats is not None:
        stats = [
            ("jobid_var", lustre.job_stats.jobid_var),
            ("jobid_name", lustre.job_stats.jobid_name),
        ]
        client_params += stats
        persistent += stats
    options = [
        "_netdev",
        "x-systemd.requires=lnet.service",
        *lustre.mount.options,
        *protective_options(lustre.mount.setuid),  # last: mount(8) takes the last one
    ]
    return LustreContext(
        fsname=lustre.fsname,
        mgs_nids=mgs_nids,
        targets=tuple(targets),
        lnet=_lnet(cluster, lustre),
        source=":".join(mgs_nids) + f":/{lustre.fsname}{fileset}",
        mount_path=lustre.mount.path,
        mount_options=",".join(dict.fromkeys(options)),
        mount_method=lustre.mount.method,
        client_unit=unit_name(lustre.mount.path, "mount"),
        client_params=tuple(client_params),
        client_set_param=" ".join(
            ["/usr/sbin/lctl", "set_param", *(unit_word(f"{k}={v}") for k, v in client_params)]
        ),
        persistent_params=tuple(persistent),
        pools=tuple(
            (p.name, tuple(f"{lustre.fsname}-OST{i:04x}_UUID" for i in sorted(set(p.osts))))
            for p in lustre.pools
        ),
        layouts=tuple(_layout(layout) for layout in lustre.layouts),
        quotas=tuple(
            QuotaLine(
                {"user": "-u", "group": "-g", "project": "-p"}[q.type],
                str(q.id),
                q.path,
                (
                    _kib(q.block_soft),
                    _kib(q.block_hard),
                    q.inode_soft or 0,
                    q.inode_hard or 0,
                ),
            )
            for q in lustre.quotas
        ),
    )


def _kib(size: str | None) -> int:
    return 0 if size is None else parse_size(size) // 1024


def _target(
    lustre: Lustre,
    kind: str,
    index: int | None,
    spec: ServerTarget,
    mgs_nids: tuple[str, ...],
    hosts: dict[str, Host],
) -> Target:
    nodes = (spec.node, *spec.failover)
    label = "MGS" if index is None else f"{lustre.fsname}-{kind.upper()}{index:04x}"
    slug = "mgs" if index is None else f"{kind}{index:04x}"
    if index is not None:
        slug = f"{lustre.fsname}-{slug}"
    argv = ["mkfs.lustre"]
    if kind == "mgs":
        argv.append("--mgs")
    else:
        argv += [f"--fsname={lustre.fsname}", f"--{kind}", f"--index={index}"]
        argv += [f"--mgsnode={n}" for n in mgs_nids]
    if spec.failover:
        argv += [f"--servicenode={nid(hosts[n], lustre.lnet)}" for n in nodes]
    backend = lustre.backend_of(spec)
    argv.append(f"--backfstype={backend}")
    props = []
    if spec.dataset is not None:
        props = [f"-o {k}={v}" for k, v in spec.dataset.model_dump().items() if v is not None]
        if props:
            argv.append("--mkfsoptions=" + " ".join(props))
    argv += spec.mkfs_options
    zfs = backend == "zfs"
    pool = spec.zpool
    identity = format_identity(lustre, kind, index, label, spec, props)
    return Target(
        kind=kind,
        label=label,
        slug=slug,
        nodes=nodes,
        device=spec.device,
        backend=backend,
        pool=spec.device.split("/", 1)[0] if zfs else None,
        vdev_type=pool.vdev_type if pool else None,
        vdevs=tuple(pool.devices) if pool else (),
        ashift=pool.ashift if pool else None,
        mkfs=tuple(argv),
        identity=identity,
        mount_point=f"{SERVER_MOUNTS}/{lustre.fsname}/{slug.removeprefix(lustre.fsname + '-')}",
        mount_options=tuple(spec.mount_options),
    )


def format_identity(
    lustre: Lustre,
    kind: str,
    index: int | None,
    label: str,
    spec: ServerTarget,
    dataset_properties: list[str],
) -> tuple[tuple[str, str], ...]:
    """What decides how a target is formatted, and nothing else: the target (kind, file
    system, index), its device, the backend, the mkfs options and the ZFS pool and
    dataset settings the format script creates. A change to any of them means the
    target is formatted anew; the script's comments and header never do, and neither
    do the MGS and failover NIDs the script passes (tunefs.lustre changes those on a
    formatted target, Lustre Operations Manual, "Changing a Server NID")."""
    pairs = [("target", label), ("kind", kind)]
    if index is not None:
        pairs += [("fsname", lustre.fsname), ("index", str(index))]
    backend = lustre.backend_of(spec)
    pairs += [("device", spec.device), ("backend", backend)]
    pairs.append(("mkfs_options", " ".join(spec.mkfs_options)))
    if backend == "zfs":
        pairs.append(("dataset", " ".join(dataset_properties)))
        pool = spec.zpool
        if pool is not None:
            pairs += [
                ("zpool_vdev_type", pool.vdev_type),
                ("zpool_devices", " ".join(pool.devices)),
                ("zpool_ashift", str(pool.ashift)),
            ]
    return tuple(pairs)


def _ordered(target: Target, targets: Sequence[Target]) -> Target:
    """The target's mount unit after LNet, after the ZFS pools are imported, and after the
    targets that start before it on its primary node (the MGS and the MDTs of a combined
    MGS/MDS node). It requires the MGS there: a target registers with the MGS when it
    mounts. Targets on other nodes cannot be ordered by systemd; they wait for the MGS."""
    requires = [LNET_UNIT]
    after = [LNET_UNIT]
    if target.backend == "zfs":
        requires.append(ZFS_IMPORT_UNIT)
        after.append(ZFS_IMPORT_UNIT)
    if target.kind != "mgs":
        after.append("network-online.target")  # it reaches the MGS over the network
    for earlier in targets:
        if (
            earlier.nodes[0] == target.nodes[0]
            and KIND_ORDER[earlier.kind] < KIND_ORDER[target.kind]
        ):
            after.append(earlier.mount_unit)
            if earlier.kind == "mgs":
                requires.append(earlier.mount_unit)
    return replace(target, requires=tuple(requires), after=tuple(after))


def _lnet(cluster: ResolvedCluster, lustre: Lustre) -> tuple[LnetProfile, ...]:
    """One LNet configuration per hardware profile whose nodes serve or mount Lustre."""
    servers = {lustre.mgs.node, *lustre.mgs.failover}
    for t in (*lustre.mdts, *lustre.osts):
        servers |= {t.node, *t.failover}
    mounting = servers | cluster.lustre_clients
    profiles = sorted({h.hardware_name for h in cluster.hosts if h.name in mounting})
    nets = networks(cluster.spec, lustre)
    tunables = lustre.lnd_tunables
    pairs = tuple(
        (k, v) for k, v in (tunables.model_dump() if tunables else {}).items() if v is not None
    )
    lnd = ("ko2iblnd" if lustre.lnet.startswith("o2ib") else "ksocklnd") if pairs else None
    return tuple(
        LnetProfile(
            profile=name,
            group=hardware_group(name),
            nets=tuple((n.name, tuple(n.interfaces[name])) for n in nets if n.interfaces.get(name)),
            routes=tuple((r.net, r.gateway, r.hops) for r in lustre.routes),
            lnd=lnd,
            tunables=pairs,
        )
        for name in profiles
    )


def _size_bytes(size: str | None) -> str:
    return ANY if size is None else str(parse_size(size))


def _component(c: LayoutComponent) -> Component:
    end = "EOF" if c.end == "eof" else str(parse_size(c.end))
    args = ["-E", "-1" if c.end == "eof" else str(parse_size(c.end))]
    if c.mdt:
        args += ["-L", "mdt"]
        return Component(tuple(args), f"{end} {ANY} {ANY} mdt -")
    args += ["-c", str(c.stripe_count)]
    if c.stripe_size is not None:
        args += ["-S", str(parse_size(c.stripe_size))]
    if c.pool is not None:
        args += ["-p", c.pool]
    return Component(
        tuple(args), f"{end} {c.stripe_count} {_size_bytes(c.stripe_size)} {ANY} {c.pool or '-'}"
    )


def _layout(layout: LustreLayout) -> Layout:
    if layout.components:
        parts = [_component(c) for c in layout.components]
        args = tuple(a for p in parts for a in p.args)
        canonical = tuple(p.canonical for p in parts)
    else:
        argv: list[str] = []
        count = ANY
        if layout.stripe_count is not None:
            argv += ["-c", str(layout.stripe_count)]
            count = str(layout.stripe_count)
        if layout.stripe_size is not None:
            argv += ["-S", str(parse_size(layout.stripe_size))]
        if layout.pool is not None:
            argv += ["-p", layout.pool]
        args = tuple(argv)
        canonical = (f"{ANY} {count} {_size_bytes(layout.stripe_size)} {ANY} {layout.pool or '-'}",)
    return Layout(layout.path, args, canonical, layout.owner, layout.group, layout.mode)
