"""storage: the Lustre file system and NFS mounts as configuration."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from clustergen.model.common import Hostlist, Hostname, Int, Size, StrictModel
from clustergen.model.syntax import (
    AbsolutePath,
    BlockDevice,
    InterfaceName,
    LnetNetwork,
    LustreFsname,
    Syntax,
)

# Options handed to mkfs.lustre or mount: one word each, no quoting games.
OPTION = Syntax(r"^[A-Za-z0-9_.,:=/+@-]+$", "one option word: letters, digits and _.,:=/+@-")
Option = Annotated[str, OPTION]
POOL_NAME = Syntax(r"^[A-Za-z0-9_]{1,15}$", "1-15 letters, digits or '_'")
PoolName = Annotated[str, POOL_NAME]
NID = Syntax(r"^(?:[0-9]{1,3}\.){3}[0-9]{1,3}@(?:o2ib|tcp)[0-9]*$", "a NID such as 10.10.0.1@o2ib0")
Nid = Annotated[str, NID]
TUNING_KEY = Syntax(r"^[A-Za-z0-9_.*-]+$", "an lctl parameter such as osc.*.max_rpcs_in_flight")
TuningKey = Annotated[str, TUNING_KEY]
TUNING_VALUE = Syntax(r"^[A-Za-z0-9_.%:-]+$", "a parameter value: letters, digits and _.%:-")
TuningValue = Annotated[str, TUNING_VALUE]
MODE = Syntax(r"^0?[0-7]{3,4}$", "an octal mode such as 0775 or 2775")
Mode = Annotated[str, MODE]
OWNER = Syntax(r"^[a-z_][a-z0-9_-]*$", "a user or group name")
Owner = Annotated[str, OWNER]


class ZfsPool(StrictModel):
    """The zpool a zfs target's dataset lives in, created by the format script."""

    vdev_type: Literal["stripe", "mirror", "raidz", "raidz2", "raidz3"] = Field(
        description="Vdev layout: stripe (no redundancy), mirror, raidz, raidz2 or raidz3."
    )
    devices: list[BlockDevice] = Field(
        min_length=1,
        description="Disks of the vdev (/dev/disk/by-id/... paths; letters, digits and "
        "_.+@,:=~/- only).",
    )
    ashift: Int = Field(default=12, ge=9, le=16, description="zpool ashift (12 = 4 KiB sectors).")


class ZfsDataset(StrictModel):
    """Properties of a zfs target's dataset."""

    recordsize: Literal["128K", "256K", "512K", "1M", "2M", "4M", "8M", "16M"] | None = Field(
        default=None, description="zfs recordsize (OSTs: 1M or more)."
    )
    compression: Literal["off", "lz4", "zstd", "gzip"] | None = Field(
        default=None, description="zfs compression."
    )


class ServerTarget(StrictModel):
    """What the MGS, MDTs and OSTs share: service nodes, device and options."""

    node: Hostname = Field(description="Server node of the target (primary service node).")
    device: BlockDevice = Field(
        description="ldiskfs: block device (/dev/disk/by-id/... preferred); zfs: pool/dataset. "
        "Letters, digits and _.+@,:=~/- only.",
    )
    failover: list[Hostname] = Field(
        default_factory=list,
        description="Further service nodes that can mount the target (--servicenode); "
        "the MGS's give clients their failover MGS NIDs.",
    )
    mkfs_options: list[Option] = Field(
        default_factory=list, description="Extra mkfs.lustre options, one word each."
    )
    mount_options: list[Option] = Field(
        default_factory=list, description="Server mount options of the target."
    )
    backend: Literal["ldiskfs", "zfs"] | None = Field(
        default=None,
        description="Backing file system of this target, where it differs from the file "
        "system's backend (a file system may mix them: e.g. ldiskfs MDTs, zfs OSTs). Its "
        "servers get that backend's OSD packages (and ZFS for zfs). Default: storage.lustre."
        "backend.",
    )
    zpool: ZfsPool | None = Field(
        default=None, description="zfs: the pool to create (omit when it exists)."
    )
    dataset: ZfsDataset | None = Field(default=None, description="zfs: dataset properties.")


class LustreMgs(ServerTarget):
    """The Lustre management target."""


# A network mount's setuid key: why its set-user-ID programs may run (never rendered).
SetuidReason = Annotated[str, Field(min_length=1, max_length=200)]
SETUID_DESCRIPTION = (
    "Why set-user-ID and set-group-ID programs on this file system may run (a sentence for "
    "the reviewer, never rendered). Without it the mount carries nosuid: whoever writes a "
    "set-user-ID root program to it (its server, or a user who is root on any machine that "
    "mounts it) cannot become root on the nodes that run it. Device files never work on it "
    "(nodev, always)."
)
# Mount options that are set-user-ID or device-file switches (mount(8) "FILESYSTEM-
# INDEPENDENT MOUNT OPTIONS"): the mounts' setuid key decides them, not options.
PRIVILEGE_OPTIONS = frozenset({"suid", "nosuid", "dev", "nodev"})


def protective_options(setuid: str | None) -> list[str]:
    """What keeps a network file system's programs and device files from raising anyone's
    privilege: nosuid unless the mount's `setuid` says why not, and always nodev."""
    return ["nodev"] if setuid else ["nosuid", "nodev"]


def lnet_over_ethernet(net: str) -> bool:
    """An LNet network of socklnd (tcp, tcp0, tcp1, ...: LNet over IP sockets, lnet(8)
    "networks"), which any Ethernet interface carries: a node without a fabric interface
    joins it on its management interface (docs/lustre.md)."""
    return net.startswith("tcp")


class LustreTarget(ServerTarget):
    """A Lustre MDT or OST."""

    index: Int = Field(ge=0, le=65535, description="Target index, unique per MDT and per OST.")


class LustreMount(StrictModel):
    """How clients mount the file system."""

    path: AbsolutePath = Field(
        description="Client mount point: an absolute path of letters, digits and _.+@,:=~/-."
    )
    clients: list[str] = Field(min_length=1, description="Roles whose nodes mount the file system.")
    options: list[Option] = Field(
        default_factory=list, description="Client mount options, e.g. flock, noatime."
    )
    fileset: AbsolutePath | None = Field(
        default=None,
        description="Mount only this sub-directory of the file system (letters, digits and "
        "_.+@,:=~/- only).",
    )
    method: Literal["systemd", "fstab"] = Field(
        default="systemd", description="systemd mount unit (default) or an /etc/fstab line."
    )
    setuid: SetuidReason | None = Field(default=None, description=SETUID_DESCRIPTION)


class LayoutComponent(StrictModel):
    """One component of a progressive file layout."""

    end: Size | Literal["eof"] = Field(description="End of the component (e.g. 64MiB) or eof.")
    stripe_count: Int = Field(default=1, ge=-1, le=2000, description="Stripe count; -1 = all OSTs.")
    stripe_size: Size | None = Field(default=None, description="Stripe size, multiple of 64KiB.")
    mdt: bool = Field(
        default=False, description="Data-on-MDT: the first component's data lives on the MDT."
    )
    pool: PoolName | None = Field(default=None, description="OST pool of this component.")


class LustreLayout(StrictModel):
    """Default striping, ownership and mode of one directory."""

    path: AbsolutePath = Field(
        description="Directory under the mount point (letters, digits and _.+@,:=~/- only)."
    )
    stripe_count: Int | None = Field(default=None, ge=-1, le=2000, description="lfs setstripe -c.")
    stripe_size: Size | None = Field(default=None, description="lfs setstripe -S.")
    pool: PoolName | None = Field(default=None, description="lfs setstripe -p: the OST pool.")
    components: list[LayoutComponent] | None = Field(
        default=None, description="Progressive file layout components, ascending ends."
    )
    owner: Owner | None = Field(default=None, description="Owner of the directory.")
    group: Owner | None = Field(default=None, description="Group of the directory.")
    mode: Mode | None = Field(default=None, description="Mode of the directory, e.g. 2775.")


class OstPool(StrictModel):
    """A named OST pool."""

    name: PoolName = Field(description="Pool name.")
    osts: list[Int] = Field(min_length=1, description="OST indices in the pool.")


class LnetNet(StrictModel):
    """One LNet network and the interfaces each hardware profile puts on it."""

    name: LnetNetwork = Field(description="LNet network, e.g. o2ib0 or tcp0.")
    interfaces: dict[str, list[InterfaceName]] = Field(
        description="Hardware profile -> interfaces on this network (two or more: multi-rail).",
    )


class LnetRoute(StrictModel):
    """A route to a remote LNet network through a router NID."""

    net: LnetNetwork = Field(description="Remote network.")
    gateway: Nid = Field(description="Router NID on a local network.")
    hops: Int = Field(default=1, ge=1, le=255, description="Hop count.")


class LndTunables(StrictModel):
    """ko2iblnd / ksocklnd tunables."""

    peer_credits: Int | None = Field(default=None, ge=1, le=255, description="peer_credits.")
    credits: Int | None = Field(default=None, ge=1, le=65535, description="credits.")
    conns_per_peer: Int | None = Field(default=None, ge=1, le=127, description="conns_per_peer.")


class JobStats(StrictModel):
    """Tag I/O with the Slurm job ID (lctl jobid_var / jobid_name)."""

    jobid_var: Literal["SLURM_JOB_ID", "procname_uid", "nodelocal", "disable"] = Field(
        default="SLURM_JOB_ID", description="jobid_var: where the job ID comes from."
    )
    jobid_name: TuningValue = Field(
        default="%j", description="jobid_name, used when jobid_var is nodelocal or unset."
    )


class Quota(StrictModel):
    """One quota: a user's or group's on the file system, or a project's on a
    directory tree (the directory gets the project ID, inherited below it)."""

    type: Literal["user", "group", "project"] = Field(description="user, group or project.")
    id: Owner | Int = Field(description="User or group name (or number); project: its number.")
    path: AbsolutePath | None = Field(
        default=None,
        description="project: the directory under the mount it covers (letters, digits and "
        "_.+@,:=~/- only).",
    )
    block_soft: Size | None = Field(default=None, description="Soft block limit, e.g. 900GiB.")
    block_hard: Size | None = Field(default=None, description="Hard block limit, e.g. 1TiB.")
    inode_soft: Int | None = Field(default=None, ge=0, description="Soft limit on files.")
    inode_hard: Int | None = Field(default=None, ge=0, description="Hard limit on files.")


class Lustre(StrictModel):
    """A Lustre file system: targets, NIDs, client mounts, striping and tuning."""

    fsname: LustreFsname = Field(description="File system name, 1-8 of [A-Za-z0-9_-].")
    lnet: LnetNetwork = Field(
        default="tcp0",
        description="LNet network of the servers' NIDs, e.g. o2ib0: storage_ip@lnet on nodes "
        "with storage interfaces (network.storage), else fabric_ip@lnet; on a tcp network, "
        "management_ip@lnet on nodes without a fabric interface (LNet over the management "
        "Ethernet).",
    )
    backend: Literal["ldiskfs", "zfs"] = Field(
        default="ldiskfs",
        description="Backing file system of every target that sets no backend of its own.",
    )
    mgs: LustreMgs = Field(description="Management server target.")
    mdts: list[LustreTarget] = Field(min_length=1, description="Metadata targets.")
    osts: list[LustreTarget] = Field(min_length=1, description="Object storage targets.")
    mount: LustreMount = Field(description="Where and on which roles clients mount it.")
    networks: list[LnetNet] = Field(
        default_factory=list,
        description="LNet networks; default: the lnet network on each profile's storage "
        "interfaces (multi-rail over several), else on its fabric interface, else (tcp only) "
        "on its management interface.",
    )
    routes: list[LnetRoute] = Field(default_factory=list, description="LNet routes.")
    lnd_tunables: LndTunables | None = Field(
        default=None, description="ko2iblnd (o2ib) or ksocklnd (tcp) tunables."
    )
    dom_limit: Size = Field(
        default="1MiB", description="The MDTs' Data-on-MDT limit (lod.*.dom_stripesize)."
    )
    pools: list[OstPool] = Field(default_factory=list, description="OST pools.")
    layouts: list[LustreLayout] = Field(
        default_factory=list, description="Default striping per directory."
    )
    client_tuning: dict[TuningKey, int | TuningValue] = Field(
        default_factory=dict, description="lctl set_param values applied on clients."
    )
    persistent_tuning: dict[TuningKey, int | TuningValue] = Field(
        default_factory=dict, description="lctl set_param -P values, set once on the MGS."
    )
    job_stats: JobStats | None = Field(
        default=None, description="Tag I/O with Slurm job IDs (job stats)."
    )
    quotas: list[Quota] = Field(
        default_factory=list, description="User, group and project (per directory) quotas."
    )

    def targets(self) -> tuple[ServerTarget, ...]:
        """The MGS, every MDT and every OST."""
        return (self.mgs, *self.mdts, *self.osts)

    def backend_of(self, target: ServerTarget) -> Literal["ldiskfs", "zfs"]:
        """The target's own backend, else the file system's."""
        return target.backend or self.backend


# An NFS server: a host name (a node of the spec, or outside it), a DNS name or an address.
NFS_SERVER = Syntax(
    r"^(?:[0-9]{1,3}(?:\.[0-9]{1,3}){3}|[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*)$",
    "a host name, DNS name or IPv4 address",
)
NfsServer = Annotated[str, NFS_SERVER]
# nfs(5): nconnect "can be set to a number from 1 to 16".
NCONNECT_MAX = 16


class NfsMount(StrictModel):
    """One NFS mount: a server's export, mounted at a path on the nodes it selects."""

    server: NfsServer = Field(
        description="The NFS server: a host name, DNS name or IPv4 address. A node of the spec "
        "exports the path itself (its /etc/exports.d entry is rendered, for the nodes that "
        "mount it); any other server (a filer, VAST, Weka's NFS) is the site's to export."
    )
    export: AbsolutePath = Field(
        description="The exported path on the server (letters, digits and _.+@,:=~/- only)."
    )
    path: AbsolutePath = Field(
        description="Mount point on the nodes (letters, digits and _.+@,:=~/- only)."
    )
    roles: list[str] = Field(
        default_factory=list,
        description="Roles whose nodes mount it (as storage.lustre.mount.clients).",
    )
    nodes: Hostlist | None = Field(
        default=None,
        description="Further nodes that mount it, as a hostlist (with roles: their union).",
    )
    version: Literal["3", "4.0", "4.1", "4.2"] = Field(
        default="4.2",
        description="NFS version (vers=): 4.2 by default, the newest the Linux client and "
        "knfsd speak (server-side copy, sparse files); 3 for filers that serve v3 only.",
    )
    transport: Literal["tcp", "rdma"] = Field(
        default="tcp",
        description="tcp, or rdma: NFS over RDMA (proto=rdma,port=20049; nfs(5) and the "
        "kernel's nfs-rdma documentation) on nodes with an RDMA device.",
    )
    nconnect: Int | None = Field(
        default=None,
        ge=1,
        le=NCONNECT_MAX,
        description="Connections to the server (nconnect=, 1-16, nfs(5)); default: the "
        "client's (one).",
    )
    options: list[Option] = Field(
        default_factory=list,
        description="Further mount options, one word each (e.g. hard, noatime, "
        "rsize=1048576); they come after the derived ones.",
    )
    export_options: list[Option] = Field(
        default=["rw", "sync", "no_subtree_check"],
        description="exports(5) options of the export, where a node of the spec serves it. "
        "no_root_squash and insecure need trusted_clients.",
    )
    trusted_clients: SetuidReason | None = Field(
        default=None,
        description="Why this export may trust its clients (a sentence for the reviewer, never "
        "rendered): export_options may then hold no_root_squash (root on any client that "
        "mounts it is root on the export: it can plant set-user-ID programs on the server, "
        "where nosuid does not apply) and insecure (requests from ports above 1023, which any "
        "user of a client can send with any uid under AUTH_SYS). exports(5).",
    )
    required: bool = Field(
        default=True,
        description="Jobs need it: its unit is RequiredBy= remote-fs.target, which slurmd "
        "starts after, and a node without the mount is unhealthy (for health checks). false: "
        "only WantedBy= it, as nofail makes an fstab line.",
    )
    setuid: SetuidReason | None = Field(default=None, description=SETUID_DESCRIPTION)


class Storage(StrictModel):
    """Shared storage."""

    lustre: Lustre | None = Field(default=None, description="A Lustre file system.")
    nfs: list[NfsMount] = Field(
        default_factory=list,
        description="NFS mounts (plain NFS, NFS over RDMA, VAST and Weka over NFS), each a "
        "systemd mount unit on the nodes it selects (docs/storage.md).",
    )
