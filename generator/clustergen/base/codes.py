"""Every problem code, registered once: its severity and a one-line summary.

A code names one kind of mistake, section (or stage) first, in kebab-case:
`software.driver-below-cuda-minimum`. Codes are stable: tools filter on them,
specs silence warnings by them, and docs/errors.md lists them. A Problem takes a
Code, never a string, and only the Codes defined here exist (see CODES).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from pydantic_core import PydanticCustomError

from clustergen.base.suggest import did_you_mean

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Code:
    name: str
    severity: Severity
    summary: str
    # The answer depends on today's date (catalog.slurm_releases.today): rendered files
    # leave such a problem out, so a render stays a function of the spec and clustergen.
    dated: bool = False

    def __str__(self) -> str:
        return self.name

    def __reduce__(self) -> tuple[Callable[[str], Code], tuple[str]]:
        """Pickled by name, so a problem sent from a second process (commands/parallel)
        carries the registered Code itself, and `is` still tells codes apart."""
        return (registered, (self.name,))


def invalid(code: Code, message: str) -> PydanticCustomError:
    """The error a model validator raises: pydantic reports `code` as the error's type."""
    return PydanticCustomError(code.name, message)


# yaml
YAML_SYNTAX = Code("yaml.syntax", "error", "the file is not valid YAML")
YAML_DUPLICATE_KEY = Code("yaml.duplicate-key", "error", "a mapping names the same key twice")
YAML_TOO_DEEP = Code("yaml.too-deep", "error", "the YAML is nested too deeply to read")
YAML_TAG = Code("yaml.tag", "error", "a YAML tag other than the core ones (a spec is plain data)")
YAML_ALIAS = Code(
    "yaml.alias", "error", "an alias that contains itself or multiplies the document's size"
)

# shape
SHAPE_NOT_A_MAPPING = Code(
    "shape.not-a-mapping", "error", "the file is empty or not a mapping of sections"
)
SHAPE_UNKNOWN_KEY = Code(
    "shape.unknown-key", "error", "a key the spec language does not have (often a misspelling)"
)
SHAPE_MISSING_KEY = Code("shape.missing-key", "error", "a required key is absent")
SHAPE_NULL_VALUE = Code("shape.null-value", "error", "a key is given with no value (YAML null)")
SHAPE_WRONG_TYPE = Code(
    "shape.wrong-type",
    "error",
    "a value of the wrong kind: a string for a number, a list for a mapping",
)
SHAPE_NOT_ALLOWED = Code("shape.not-allowed", "error", "a value outside the fixed set of choices")
SHAPE_OUT_OF_RANGE = Code(
    "shape.out-of-range", "error", "a number below the minimum or above the maximum"
)
SHAPE_WRONG_LENGTH = Code(
    "shape.wrong-length", "error", "a list or mapping with too few or too many entries"
)
SHAPE_INVALID = Code("shape.invalid", "error", "a value the model rejects for another reason")

# syntax
SYNTAX_INVALID = Code(
    "syntax.invalid", "error", "a string that does not follow the syntax of its key"
)
SYNTAX_HOSTNAME = Code(
    "syntax.hostname",
    "error",
    "not a valid host name (labels of letters, digits, - and _, joined by dots)",
)
SYNTAX_HOSTLIST = Code(
    "syntax.hostlist", "error", "not a Slurm hostlist expression Slurm reads the same way"
)
SYNTAX_IP_ADDRESS = Code("syntax.ip-address", "error", "not an IPv4 address")
SYNTAX_CIDR = Code(
    "syntax.cidr", "error", "not an IPv4 network in CIDR notation with room for hosts"
)
SYNTAX_VERSION = Code("syntax.version", "error", "not a dotted version number")
SYNTAX_IDENTIFIER = Code("syntax.identifier", "error", "not a lowercase identifier")
SYNTAX_SLURM_TIME = Code("syntax.slurm-time", "error", "not a Slurm time")
SYNTAX_SIZE = Code("syntax.size", "error", "not a size with a binary unit")
SYNTAX_CONF_VALUE = Code(
    "syntax.conf-value", "error", "a configuration value with a line break or a '#'"
)
SYNTAX_KEY_FINGERPRINT = Code(
    "syntax.key-fingerprint",
    "error",
    "not a full OpenPGP v4 key fingerprint (40 hex digits; a short key id is not one)",
)
SYNTAX_PATH_SEGMENT = Code(
    "syntax.path-segment",
    "error",
    "an absolute path with a '.', '..' or empty segment (it leads elsewhere than it reads)",
)
SYNTAX_CONF_BOOLEAN = Code(
    "syntax.conf-boolean", "error", "a YAML boolean where Slurm expects a word such as YES or NO"
)

# hardware
HARDWARE_UNKNOWN_PROFILE = Code(
    "hardware.unknown-profile", "error", "a node group names a hardware profile that does not exist"
)
HARDWARE_UNUSED_PROFILE = Code(
    "hardware.unused-profile", "warning", "a hardware profile no node group uses"
)
HARDWARE_UNKNOWN_GPU_MODEL = Code(
    "hardware.unknown-gpu-model", "error", "a GPU model not in clustergen's GPU catalog"
)
HARDWARE_OTHER_GPUS_WITHOUT_GPU = Code(
    "hardware.other-gpus-without-gpu", "error", "other_gpus in a profile without gpu"
)
HARDWARE_GPU_TYPE_REPEATED = Code(
    "hardware.gpu-type-repeated",
    "error",
    "two GPU models of one profile (gpu, other_gpus) with the same GRES type",
)
HARDWARE_CPU_ARCH_MISMATCH = Code(
    "hardware.cpu-arch-mismatch",
    "error",
    "cpu.arch differs from the CPU the profile's GPU model comes with (Grace: aarch64)",
)
HARDWARE_RESERVED_MEMORY_MISSING = Code(
    "hardware.reserved-memory-missing",
    "error",
    "a Slurm compute profile without reserved_memory_gib",
)
HARDWARE_RESERVED_MEMORY_TOO_LARGE = Code(
    "hardware.reserved-memory-too-large", "error", "reserved_memory_gib is not below memory_gib"
)
HARDWARE_SYSTEM_RESERVE_TOO_LARGE = Code(
    "hardware.system-reserve-too-large",
    "error",
    "system_reserved leaves a node no cores or no memory for jobs",
)
HARDWARE_REDUNDANT_PSUS = Code(
    "hardware.redundant-psus", "error", "redundant_psus is not below psu_count"
)

# ignore
IGNORE_UNKNOWN_CODE = Code(
    "ignore.unknown-code", "error", "ignore lists a code clustergen does not have"
)
IGNORE_NOT_A_WARNING = Code(
    "ignore.not-a-warning", "error", "ignore lists an error's code; only warnings can be silenced"
)

# nodes
NODES_DUPLICATE_NAME = Code("nodes.duplicate-name", "error", "two node groups define the same node")
NODES_HOSTNAME_NOT_DNS = Code(
    "nodes.hostname-not-dns",
    "warning",
    "a node name with '_': Slurm, Ansible and /etc/hosts take it, DNS and systemd do not",
)
NODES_UNKNOWN_ROLE = Code(
    "nodes.unknown-role", "error", "a role neither built in nor declared in cluster.extra_roles"
)
NODES_DUPLICATE_ROLE = Code("nodes.duplicate-role", "error", "a node group lists a role twice")
NODES_ADDRESS_WITHOUT_NETWORK = Code(
    "nodes.address-without-network",
    "error",
    "a node address for a network the spec does not define",
)
NODES_ADDRESS_NOT_HOST = Code(
    "nodes.address-not-host", "error", "a node address that is not a host address of its network"
)
NODES_ADDRESS_RANGE_PAST_NETWORK = Code(
    "nodes.address-range-past-network",
    "error",
    "a node group's addresses run past the end of its network",
)
NODES_ADDRESS_REUSED = Code(
    "nodes.address-reused", "error", "one address given to two nodes, or to a node and a gateway"
)
NODES_ADDRESS_WITHOUT_INTERFACE = Code(
    "nodes.address-without-interface",
    "error",
    "storage_ip or frontend_ip on a node group whose profile has no such interface",
)
NODES_INTERFACES_WITHOUT_NETWORK = Code(
    "nodes.interfaces-without-network",
    "error",
    "a node group's profile has storage or front-end interfaces, but that network is not defined",
)
NODES_INTERFACES_WITHOUT_ADDRESS = Code(
    "nodes.interfaces-without-address",
    "error",
    "a node group's storage or front-end interfaces get no address: storage_ip or frontend_ip "
    "is missing",
)

# network
NETWORK_OVERLAP = Code("network.overlap", "error", "two networks overlap")
NETWORK_GATEWAY_NOT_HOST = Code(
    "network.gateway-not-host", "error", "a gateway that is not a host address of its network"
)
NETWORK_FABRIC_RATE = Code(
    "network.fabric-rate", "error", "a fabric rate that the fabric type does not have"
)
NETWORK_ROCE_ON_INFINIBAND = Code(
    "network.roce-on-infiniband", "error", "roce settings on a fabric that is not RoCE"
)
NETWORK_RAIL_SUBNETS_PAST_CIDR = Code(
    "network.rail-subnets-past-cidr",
    "error",
    "the rail subnets of rail_prefix (one per rail or storage interface) do not fit in the cidr",
)
NETWORK_STORAGE_NEEDS_RAIL_PREFIX = Code(
    "network.storage-needs-rail-prefix",
    "error",
    "a profile with several storage interfaces on a storage network without rail_prefix",
)
NETWORK_RAIL_INTERFACES = Code(
    "network.rail-interfaces",
    "error",
    "with rail_prefix, a profile's interfaces.rails do not match its compute HCAs",
)
NETWORK_SWITCH_LEAF_OR_SPINE = Code(
    "network.switch-leaf-or-spine", "error", "a switch that is not exactly one of a leaf or a spine"
)
NETWORK_DUPLICATE_SWITCH = Code(
    "network.duplicate-switch", "error", "two switches with the same name"
)
NETWORK_UNKNOWN_SWITCH = Code(
    "network.unknown-switch", "error", "a spine lists a switch that is not defined"
)
NETWORK_SWITCH_OWN_CHILD = Code(
    "network.switch-own-child", "error", "a switch lists itself under 'switches'"
)
NETWORK_SWITCH_CYCLE = Code("network.switch-cycle", "error", "the switches form a cycle")
NETWORK_SWITCH_FOREST = Code(
    "network.switch-forest",
    "error",
    "the leaves of one plane (a rail, or the fabric) are not joined by the switches above them",
)
NETWORK_RAILS_NOT_JOINED = Code(
    "network.rails-not-joined",
    "warning",
    "a rail-optimised fabric whose rails no switch joins: each rail is a fabric of its own",
)
NETWORK_UNKNOWN_NODE = Code(
    "network.unknown-node", "error", "a leaf switch lists a node that is not defined"
)
NETWORK_NODE_TWO_LEAVES = Code(
    "network.node-two-leaves",
    "error",
    "an HCA of a node is cabled to two leaf switches (a node under two leaves without rails, "
    "or under two leaves of one rail)",
)
NETWORK_RAIL_WITHOUT_HCA = Code(
    "network.rail-without-hca", "error", "a rail leaf lists a node that has no HCA of that rail"
)
NETWORK_HCA_UNCABLED = Code(
    "network.hca-uncabled",
    "error",
    "a node on rail leaves has a compute HCA that no leaf takes",
)
NETWORK_UPLINKS_UNEVEN = Code(
    "network.uplinks-uneven",
    "warning",
    "the switches of one tier send different numbers of cables up",
)
NETWORK_SPINE_OVERSUBSCRIBED = Code(
    "network.spine-oversubscribed",
    "warning",
    "a spine's cables down exceed its cables up by more than the max_blocking of a partition "
    "below it",
)
NETWORK_COMPUTE_NODE_NO_LEAF = Code(
    "network.compute-node-no-leaf", "error", "a Slurm compute node hangs from no leaf switch"
)
NETWORK_LEAF_OVERSUBSCRIBED = Code(
    "network.leaf-oversubscribed",
    "warning",
    "a leaf's HCA ports exceed its uplinks by more than the max_blocking of a partition on it",
)

NETWORK_MTU_PAST_LINK = Code(
    "network.mtu-past-link",
    "error",
    "an MTU past what the link carries (IPoIB datagram mode: 4092)",
)
NETWORK_SHARED_INTERFACE_MTU = Code(
    "network.shared-interface-mtu",
    "error",
    "one interface carries networks whose MTUs the spec sets differently",
)
NETWORK_LINK_LAYER = Code(
    "network.link-layer",
    "error",
    "a fabric or storage interface named for one link layer (en*, eth*: Ethernet; ib*: "
    "InfiniBand) on a network of the other",
)
NETWORK_SPECTRUM_X_PRIORITY = Code(
    "network.spectrum-x-priority",
    "warning",
    "a Spectrum-X fabric's RDMA traffic class is not on priority 3, its lossless priority",
)
NETWORK_SPECTRUM_X_SWITCH = Code(
    "network.spectrum-x-switch",
    "warning",
    "a Spectrum-X fabric's switch is a catalog model that is not NVIDIA Spectrum-4 or later",
)
NETWORK_ROCE_HCA_WITHOUT_ADDRESS = Code(
    "network.roce-hca-without-address",
    "warning",
    "a RoCE fabric's compute HCAs outnumber the fabric netdevs that get an address",
)
NETWORK_ROUTE_VIA_OUTSIDE = Code(
    "network.route-via-outside",
    "error",
    "a route's next hop lies in no subnet of its network's interfaces",
)
NETWORK_STORAGE_SWITCHES = Code(
    "network.storage-switches",
    "error",
    "switches under network.storage, whose cabling clustergen does not model",
)
NETWORK_NVLINK_DOMAIN_DUPLICATE = Code(
    "network.nvlink-domain-duplicate", "error", "two NVLink domains with the same name"
)
NETWORK_NVLINK_UNKNOWN_NODE = Code(
    "network.nvlink-unknown-node", "error", "an NVLink domain lists a node that is not defined"
)
NETWORK_NVLINK_NOT_A_TRAY = Code(
    "network.nvlink-not-a-tray",
    "error",
    "an NVLink domain lists a node whose profile has no gpu.nvlink_domain",
)
NETWORK_NVLINK_TWO_DOMAINS = Code(
    "network.nvlink-two-domains", "error", "a tray is listed in two NVLink domains"
)
NETWORK_NVLINK_DOMAIN_TOO_BIG = Code(
    "network.nvlink-domain-too-big",
    "error",
    "an NVLink domain has more trays than its profile's gpu.nvlink_domain.trays",
)
NETWORK_NVLINK_TRAY_WITHOUT_DOMAIN = Code(
    "network.nvlink-tray-without-domain",
    "error",
    "a compute tray of an NVLink system (gpu.nvlink_domain) is in no NVLink domain",
)
SLURM_PARTITION_NVLINK_SIZES_DIFFER = Code(
    "slurm.partition-nvlink-sizes-differ",
    "warning",
    "a partition's nodes lie in NVLink domains of different sizes",
)
SLURM_NVLINK_DOMAINS_NOT_GIVEN = Code(
    "slurm.nvlink-domains-not-given",
    "warning",
    "the NVLink domains are not given to Slurm as topology/block (Slurm before 23.11, no "
    "partition within them, or partitions outside them before Slurm 25.05's topology.yaml)",
)
SLURM_BLOCK_SIZES_INVALID = Code(
    "slurm.block-sizes-invalid",
    "error",
    "slurm.topology.block_sizes is not the base block's node count followed by larger "
    "power-of-two multiples of it",
)
SLURM_BLOCK_SIZES_UNSUPPORTED = Code(
    "slurm.block-sizes-unsupported",
    "error",
    "slurm.topology.block_sizes with a Slurm before 24.05, whose topology/block does not read "
    "BlockSizes",
)
SLURM_BLOCK_SIZES_UNUSED = Code(
    "slurm.block-sizes-unused",
    "warning",
    "slurm.topology.block_sizes while Slurm is given no topology/block",
)
SLURM_BLOCK_TOO_SMALL = Code(
    "slurm.block-too-small",
    "error",
    "an NVLink domain's block has fewer Slurm nodes than the base block (or, on 23.11, another "
    "count), which the pinned slurmctld refuses",
)

# racks
PATTERN_NO_ROOM = Code(
    "pattern.no-room",
    "error",
    "a pattern's members do not fit the elements it makes (nodes over racks x units, "
    "over switches x per_switch, targets unevenly over servers)",
)
RACKS_UNKNOWN_NODE = Code("racks.unknown-node", "error", "a rack places a node that is not defined")
RACKS_NODE_PLACED_TWICE = Code(
    "racks.node-placed-twice", "error", "a node is placed in two rack positions"
)
RACKS_DEVICE_NODE_OR_NAME = Code(
    "racks.device-node-or-name",
    "error",
    "a rack device that has both or neither of 'node' and 'name'",
)
RACKS_DEVICE_NEEDS_SIZE = Code(
    "racks.device-needs-size", "error", "a non-node rack device without height_u and max_watts"
)
RACKS_NODE_WITH_SIZE = Code(
    "racks.node-with-size", "error", "a rack node with height_u or max_watts of its own"
)

# storage
STORAGE_LUSTRE_RELEASE_FOR_OS = Code(
    "storage.lustre-release-for-os",
    "error",
    "a Lustre release that does not build for the OS (Ubuntu 24.04 before Lustre 2.16)",
)
STORAGE_LUSTRE_CLIENT_ARCHITECTURE = Code(
    "storage.lustre-client-architecture",
    "error",
    "Lustre clients on arm64 nodes with a Lustre whose DKMS client has no arm64 build "
    "(before 2.16)",
)
STORAGE_LNET_SUBNET_UNREACHABLE = Code(
    "storage.lnet-subnet-unreachable",
    "warning",
    "Lustre nodes on an LNet network with none of their ports in a subnet where the "
    "servers have NIDs: discovery hands them NIDs they cannot reach",
)
STORAGE_LUSTRE_SERVER_MODULES_UNPINNED = Code(
    "storage.lustre-server-modules-unpinned",
    "warning",
    "Lustre servers on apt without software.lustre_server_kernel: Lustre builds no DKMS "
    "package of its server modules, so none is installed",
)
STORAGE_UNKNOWN_NODE = Code(
    "storage.unknown-node", "error", "a storage server that is not a defined node"
)
STORAGE_UNKNOWN_ROLE = Code(
    "storage.unknown-role", "error", "a Lustre client role that is not known"
)
STORAGE_DUPLICATE_INDEX = Code(
    "storage.duplicate-index", "error", "two MDTs or two OSTs share an index"
)
STORAGE_TARGET_ROLE = Code(
    "storage.target-role",
    "error",
    "a target's node or failover node lacks the role (lustre_mgs, lustre_mds, lustre_oss)",
)
STORAGE_NID_NETWORK = Code(
    "storage.nid-network",
    "error",
    "a server has no interface on the LNet network of its NID, or no fabric address",
)
STORAGE_DEVICE_NOT_ABSOLUTE = Code(
    "storage.device-not-absolute", "error", "an ldiskfs target's device is not a /dev path"
)
STORAGE_DEVICE_KERNEL_NAME = Code(
    "storage.device-kernel-name",
    "warning",
    "a device named like /dev/sdX, which can change at boot; use /dev/disk/by-id/",
)
STORAGE_ZFS_DATASET = Code(
    "storage.zfs-dataset", "error", "a zfs target's device is not pool/dataset"
)
STORAGE_ZFS_ON_LDISKFS = Code(
    "storage.zfs-on-ldiskfs", "error", "zpool or dataset settings on an ldiskfs file system"
)
STORAGE_MOUNT_UNIT_NAME = Code(
    "storage.mount-unit-name",
    "error",
    "a mount point whose systemd unit name is longer than systemd allows",
)
STORAGE_MOUNT_OVER_SYSTEM_FOLDER = Code(
    "storage.mount-over-system-folder",
    "error",
    "an NFS or Lustre mount point in or at a system folder (/etc, /usr, /opt, /var/lib ...), "
    "covering what root runs or reads",
)
STORAGE_NFS_EXPORT_SYSTEM_FOLDER = Code(
    "storage.nfs-export-system-folder",
    "error",
    "a node of the spec exports a system folder (/, /etc, /root, /var/lib ...) over NFS",
)
STORAGE_NFS_EXPORT_TRUSTS_CLIENTS = Code(
    "storage.nfs-export-trusts-clients",
    "error",
    "a node of the spec exports with no_root_squash or insecure (root on a client, or any "
    "user through a port above 1023, is trusted as root or as any user), which the mount's "
    "trusted_clients key must say why",
)
STORAGE_MOUNT_SETUID = Code(
    "storage.mount-setuid",
    "error",
    "an NFS or Lustre mount whose options allow set-user-ID programs or device files "
    "(suid, dev), which the spec's setuid key must say why",
)
STORAGE_LAYOUT_OUTSIDE_MOUNT = Code(
    "storage.layout-outside-mount", "error", "a layout directory that is not under the mount"
)
STORAGE_STRIPE_COUNT = Code(
    "storage.stripe-count", "error", "a stripe count above the OSTs there are (or in the pool)"
)
STORAGE_STRIPE_ALIGN = Code(
    "storage.stripe-align",
    "error",
    "a stripe size or component end that is not a multiple of 64 KiB (or not below 4 GiB)",
)
STORAGE_COMPONENT_ORDER = Code(
    "storage.component-order", "error", "layout component ends that do not ascend"
)
STORAGE_LAST_COMPONENT = Code(
    "storage.last-component", "error", "a layout whose last component does not end at eof"
)
STORAGE_DOM_PLACEMENT = Code(
    "storage.dom-placement",
    "error",
    "a Data-on-MDT component that is not the first or exceeds the MDT's DoM limit",
)
STORAGE_UNKNOWN_POOL = Code(
    "storage.unknown-pool", "error", "a layout names an OST pool that is not defined"
)
STORAGE_POOL_OST = Code("storage.pool-ost", "error", "an OST pool lists an OST index not defined")
STORAGE_UNKNOWN_PROFILE = Code(
    "storage.unknown-profile", "error", "LNet interfaces for a hardware profile not defined"
)
STORAGE_TUNING_UNKNOWN = Code(
    "storage.tuning-unknown",
    "warning",
    "a tuning parameter clustergen does not know; it is applied unchecked",
)
STORAGE_TUNING_RANGE = Code(
    "storage.tuning-range", "error", "a tuning value outside the parameter's range"
)
STORAGE_TUNING_PLACE = Code(
    "storage.tuning-place",
    "error",
    "a server parameter in client_tuning (set it in persistent_tuning)",
)
STORAGE_QUOTA_PROJECT = Code(
    "storage.quota-project",
    "error",
    "a project quota without a numeric id and a directory under the mount, or a path on "
    "a user or group quota",
)
STORAGE_NFS_MOUNT_POINT = Code(
    "storage.nfs-mount-point",
    "error",
    "two NFS mounts, or an NFS mount and Lustre, share a mount point",
)
STORAGE_NFS_UNKNOWN_ROLE = Code(
    "storage.nfs-unknown-role", "error", "an NFS mount selects a role that is not known"
)
STORAGE_NFS_UNKNOWN_NODE = Code(
    "storage.nfs-unknown-node", "error", "an NFS mount selects a node that is not defined"
)
STORAGE_NFS_NO_NODES = Code(
    "storage.nfs-no-nodes", "error", "an NFS mount that selects no node (no roles or nodes)"
)
STORAGE_NFS_OPTION = Code(
    "storage.nfs-option",
    "error",
    "an NFS mount option that a key of the mount sets (vers, proto, port, nconnect)",
)
STORAGE_NFS_RDMA_DEVICE = Code(
    "storage.nfs-rdma-device",
    "warning",
    "NFS over RDMA on a node whose hardware profile lists no RDMA device (fabric_hcas)",
)
STORAGE_PAGES_PER_RPC = Code(
    "storage.pages-per-rpc",
    "error",
    "osc max_pages_per_rpc above the servers' obdfilter brw_size",
)

NETWORK_SUBNET_MANAGER_ON_ROCE = Code(
    "network.subnet-manager-on-roce",
    "error",
    "a subnet_manager on a RoCE fabric (Ethernet has no InfiniBand subnet manager)",
)
NETWORK_SUBNET_MANAGER_KEYS = Code(
    "network.subnet-manager-keys",
    "error",
    "subnet_manager keys that do not fit its kind (opensm needs nodes; ufm and switch take "
    "none of the OpenSM settings)",
)
NETWORK_SUBNET_MANAGER_UNSET = Code(
    "network.subnet-manager-unset",
    "warning",
    "an InfiniBand fabric that does not say what runs its subnet manager",
)
NETWORK_SUBNET_MANAGER_PLANE = Code(
    "network.subnet-manager-plane",
    "error",
    "a plane of the InfiniBand fabric that no OpenSM node has a port on",
)
NETWORK_SUBNET_MANAGER_PLANES = Code(
    "network.subnet-manager-planes",
    "warning",
    "an InfiniBand fabric of several planes managed by UFM or the switches: each plane "
    "needs a subnet manager of its own",
)
NETWORK_SUBNET_MANAGER_NODE = Code(
    "network.subnet-manager-node",
    "error",
    "a subnet_manager node that is not in the spec, or has no fabric HCA",
)

# software
SOFTWARE_RDMA_STACK = Code(
    "software.rdma-stack",
    "error",
    "software.rdma keys that do not fit its stack (doca-ofed needs version and repository)",
)
RDMA_ROCE_QOS_WITHOUT_MLNX_QOS = Code(
    "rdma.roce-qos-without-mlnx-qos",
    "warning",
    "a RoCE traffic class the host cannot set up: mlnx_qos is not in the distribution's RDMA stack",
)
SOFTWARE_NVIDIA_REPOSITORY_MISSING = Code(
    "software.nvidia-repository-missing",
    "warning",
    "GPU nodes pin NVIDIA's packages, and no repository of the spec is NVIDIA's CUDA repository",
)
SOFTWARE_RDMA_UNPINNED = Code(
    "software.rdma-unpinned",
    "warning",
    "nodes with fabric HCAs whose RDMA packages clustergen does not install: an OS whose "
    "rdma-core version the catalog does not know, and no software.rdma.version",
)
SOFTWARE_RDMA_RELEASE_NOT_SERVED = Code(
    "software.rdma-release-not-served",
    "error",
    "software.rdma.version names another DOCA release than its repository's path serves",
)
SOFTWARE_RDMA_REPOSITORY_UNKNOWN = Code(
    "software.rdma-repository-unknown",
    "error",
    "software.rdma.repository names no entry of software.repositories",
)
SOFTWARE_FLAT_REPOSITORY_COMPONENTS = Code(
    "software.repository-suite",
    "error",
    "an apt repository with components on a flat path, or a named suite without components",
)
SOFTWARE_REPOSITORY_FINGERPRINT_WITHOUT_KEY = Code(
    "software.repository-fingerprint-without-key",
    "error",
    "a repository's key_fingerprint without the key_url it is the fingerprint of",
)
SOFTWARE_REPOSITORY_UNSIGNED = Code(
    "software.repository-unsigned",
    "error",
    "a repository without a signing key (key_url) that the spec does not mark trusted",
)
SOFTWARE_REPOSITORY_HTTP = Code(
    "software.repository-http",
    "error",
    "a repository or unfingerprinted key fetched over plain http:// and not marked trusted",
)
SOFTWARE_REPOSITORY_TRUSTED = Code(
    "software.repository-trusted",
    "warning",
    "a repository marked trusted: its packages are installed as root without a signature "
    "check, or fetched over plain http://",
)
SOFTWARE_REPOSITORY_ARCHITECTURE = Code(
    "software.repository-architecture",
    "warning",
    "a repository whose path names one CPU architecture reaches nodes of another, or whose "
    "architectures no node has",
)
SOFTWARE_NO_CUDA_12_7 = Code("software.no-cuda-12-7", "error", "CUDA 12.7 was never released")
SOFTWARE_CUDA_NOT_IN_DRIVER_TABLE = Code(
    "software.cuda-not-in-driver-table",
    "warning",
    "a CUDA release the driver table does not know; the driver is not checked",
)
SOFTWARE_DRIVER_BELOW_CUDA_MINIMUM = Code(
    "software.driver-below-cuda-minimum",
    "error",
    "the NVIDIA driver is older than the pinned CUDA needs",
)
SOFTWARE_DRIVER_TOO_OLD_FOR_OS = Code(
    "software.driver-too-old-for-os",
    "error",
    "a driver branch NVIDIA publishes no packages of for the operating system",
)
SOFTWARE_NVIDIA_REPOSITORY_OTHER_OS = Code(
    "software.nvidia-repository-other-os",
    "error",
    "NVIDIA's CUDA repository of another operating system than software.os",
)
SOFTWARE_CUDA_TOO_OLD_FOR_GPU = Code(
    "software.cuda-too-old-for-gpu", "error", "the pinned CUDA cannot target a GPU the hardware has"
)
SOFTWARE_DRIVER_TOO_OLD_FOR_GPU = Code(
    "software.driver-too-old-for-gpu",
    "error",
    "an NVIDIA driver older than the first driver for a hardware profile's GPU architecture",
)
SOFTWARE_CUDA_PREVIEW_FOR_GPU = Code(
    "software.cuda-preview-for-gpu",
    "warning",
    "the pinned CUDA supports a GPU the hardware has only as a preview (Rubin on CUDA 13.4)",
)
SOFTWARE_NCCL_TOO_OLD_FOR_GPU = Code(
    "software.nccl-too-old-for-gpu",
    "error",
    "the pinned NCCL predates the first release that supports a GPU the hardware has",
)
SOFTWARE_CUDA_TOO_NEW_FOR_GPU = Code(
    "software.cuda-too-new-for-gpu",
    "error",
    "the pinned CUDA no longer supports a GPU the hardware has",
)
SOFTWARE_FABRIC_MANAGER_MISSING = Code(
    "software.fabric-manager-missing", "error", "NVSwitch hardware without fabric_manager"
)
SOFTWARE_FABRIC_MANAGER_DIFFERS = Code(
    "software.fabric-manager-differs", "error", "fabric_manager is not exactly the driver version"
)
SOFTWARE_FABRIC_MANAGER_WITHOUT_NVSWITCH = Code(
    "software.fabric-manager-without-nvswitch",
    "error",
    "fabric_manager set but no hardware has NVSwitch",
)
SOFTWARE_NVLSM_MISSING = Code(
    "software.nvlsm-missing",
    "error",
    "fourth-generation NVSwitch hardware (HGX B200/B300) without nvlsm",
)
SOFTWARE_NVLSM_WITHOUT_NVSWITCH = Code(
    "software.nvlsm-without-nvswitch",
    "error",
    "nvlsm set but no hardware has fourth-generation NVSwitch",
)
SOFTWARE_OS_REFUSED = Code(
    "software.os-refused",
    "error",
    "an operating system clustergen knows and does not render for (RHEL 8, Rocky Linux 8)",
)
SOFTWARE_SLURM_TOO_OLD = Code(
    "software.slurm-too-old", "error", "a Slurm release older than clustergen supports"
)
SOFTWARE_SLURM_NEWER_THAN_KEY_LISTS = Code(
    "software.slurm-newer-than-key-lists",
    "warning",
    "a Slurm release newer than clustergen's newest slurm.conf key list (checked against it)",
)
SOFTWARE_SLURM_END_OF_SUPPORT = Code(
    "software.slurm-end-of-support",
    "warning",
    "a Slurm release SchedMD no longer supports (18 months after its release)",
    dated=True,
)
SOFTWARE_SLURM_NOT_DISTRIBUTION_VERSION = Code(
    "software.slurm-not-distribution-version",
    "error",
    "the distribution's Slurm packages are another version than software.slurm",
)
SOFTWARE_SLURM_SCHEDMD_APT_TOO_OLD = Code(
    "software.slurm-schedmd-apt-too-old",
    "error",
    "SchedMD's Debian packaging for a Slurm release before it existed (23.11)",
)
SOFTWARE_SLURM_SCHEDMD_WITHOUT_REPOSITORY = Code(
    "software.slurm-schedmd-without-repository",
    "warning",
    "SchedMD's Slurm packages by default, and no repository named that serves them",
)
SOFTWARE_SLURM_REPOSITORY_MISSING = Code(
    "software.slurm-repository-missing",
    "error",
    "slurm_packages: schedmd without slurm_repository, the repository that serves them",
)
SOFTWARE_SLURM_REPOSITORY_UNKNOWN = Code(
    "software.slurm-repository-unknown",
    "error",
    "slurm_repository names no repository of software.repositories",
)
SOFTWARE_SLURM_REPOSITORY_NOT_SCHEDMD = Code(
    "software.slurm-repository-not-schedmd",
    "error",
    "slurm_repository set while the Slurm packages are the distribution's",
)
SOFTWARE_SLURM_EPEL_VERSION_UNCONFIRMED = Code(
    "software.slurm-epel-version-unconfirmed",
    "warning",
    "EPEL's Slurm chosen: clustergen cannot know which version EPEL carries",
)

# packages
PACKAGES_ZFS_VERSION_MISSING = Code(
    "packages.zfs-version-missing",
    "error",
    "Lustre targets on zfs, and no software.zfs to pin OpenZFS at on their servers",
)
PACKAGES_UNKNOWN_NAME = Code(
    "packages.unknown-name", "error", "an override for a package the stack does not install"
)
PACKAGES_MALFORMED_VERSION = Code(
    "packages.malformed-version", "error", "an override that is not a package version string"
)
PACKAGES_VERSION_DISAGREES = Code(
    "packages.version-disagrees", "error", "an override whose upstream version differs from the pin"
)
PACKAGES_NCCL_CUDA_SUFFIX = Code(
    "packages.nccl-cuda-suffix",
    "error",
    "an NCCL package built for another CUDA than the pinned one",
)
PACKAGES_CUDNN8_CUDA_SUFFIX = Code(
    "packages.cudnn8-cuda-suffix",
    "warning",
    "cuDNN 8 packages whose CUDA suffix clustergen assumed",
)
PACKAGES_GROUP_NAME_CLASH = Code(
    "packages.group-name-clash", "error", "two things become the same Ansible group"
)

# slurm
SLURM_NO_COMPUTE_NODES = Code(
    "slurm.no-compute-nodes", "error", "no node group has the compute role"
)
SLURM_UNKNOWN_NODE = Code(
    "slurm.unknown-node",
    "error",
    "a controller, accounting host or partition node that is not defined",
)
SLURM_CONTROLLER_WITHOUT_ROLE = Code(
    "slurm.controller-without-role", "error", "a controller without the slurm_controller role"
)
SLURM_CONTROLLER_LISTED_TWICE = Code(
    "slurm.controller-listed-twice", "error", "a controller listed twice"
)
SLURM_CONTROLLER_NOT_LISTED = Code(
    "slurm.controller-not-listed",
    "warning",
    "a node with the slurm_controller role that is not a controller",
)
SLURM_STATE_SAVE_UNMOUNTED = Code(
    "slurm.state-save-unmounted",
    "warning",
    "slurm.state_save.shared, and the state folder lies on none of the spec's mounts: the "
    "site must mount one file system there on every controller",
)
SLURM_STATE_SAVE_NOT_ON_CONTROLLERS = Code(
    "slurm.state-save-not-on-controllers",
    "error",
    "slurm.state_save.shared, and a controller does not mount the file system that holds "
    "the state folder",
)
SLURM_DBD_ROLE_ELSEWHERE = Code(
    "slurm.dbd-role-elsewhere",
    "error",
    "a node with the slurm_dbd role that is not slurm.accounting.host: it would run a "
    "second slurmdbd",
)
SLURM_DBD_WITHOUT_ACCOUNTING = Code(
    "slurm.dbd-without-accounting",
    "warning",
    "a node with the slurm_dbd role but no slurm.accounting",
)
SLURM_ACCOUNTING_HOST_WITHOUT_ROLE = Code(
    "slurm.accounting-host-without-role", "error", "the accounting host lacks the slurm_dbd role"
)
SLURM_DUPLICATE_PARTITION = Code(
    "slurm.duplicate-partition", "error", "two partitions with the same name"
)
SLURM_TWO_DEFAULT_PARTITIONS = Code(
    "slurm.two-default-partitions", "error", "more than one default partition"
)
SLURM_PARTITION_NON_COMPUTE_NODE = Code(
    "slurm.partition-non-compute-node", "error", "a partition lists a node without the compute role"
)
SLURM_DEFAULT_TIME_EXCEEDS_MAX = Code(
    "slurm.default-time-exceeds-max", "error", "a partition's default_time is above its max_time"
)
SLURM_DEF_MEM_CONFLICT = Code(
    "slurm.def-mem-conflict",
    "error",
    "def_mem_per_gpu_mib together with DefMemPerCPU or DefMemPerNode",
)
SLURM_GPU_DEFAULTS_EXCEED_NODE = Code(
    "slurm.gpu-defaults-exceed-node",
    "error",
    "def_cpu_per_gpu or def_mem_per_gpu_mib times a node's GPUs is more than the node has for "
    "jobs, so a job asking for all its GPUs is refused",
)
SLURM_NODE_IN_NO_PARTITION = Code(
    "slurm.node-in-no-partition", "warning", "a compute node in no partition"
)
SLURM_OPTION_DUPLICATE = Code(
    "slurm.option-duplicate", "error", "a slurm.options key given twice, in different case"
)
SLURM_OPTION_DEPRECATED = Code(
    "slurm.option-deprecated", "error", "a slurm.conf key that is deprecated"
)
SLURM_PMIX_UNPINNED = Code(
    "slurm.pmix-unpinned",
    "warning",
    "slurm.mpi pmix on an OS whose PMIx packages the catalog does not know: none is installed",
)
SLURM_OPTION_DERIVED = Code(
    "slurm.option-derived", "error", "a slurm.conf key clustergen writes itself"
)
SLURM_OPTION_DEFUNCT = Code(
    "slurm.option-defunct", "error", "a slurm.conf key the pinned Slurm ignores"
)
SLURM_OPTION_SECRET = Code(
    "slurm.option-secret",
    "error",
    "a slurm.conf key that holds a password, or a value with a credential in it (a URL's "
    "user:password@, a token=)",
)
PATH_USERS_CAN_WRITE = Code(
    "path.users-can-write",
    "error",
    "a path that root or every job runs, loads, reads keys from or builds in (an NCCL plugin, "
    "the job tmpfs base, a file:// repository or its key) lies where users can write",
)
SLURM_OPTION_WEAKENS_SECURITY = Code(
    "slurm.option-weakens-security",
    "error",
    "a slurm.options value that weakens authentication, keeps users less inside their jobs "
    "than slurm.isolation says, or has root or SlurmUser run, load or trust a path users can "
    "write",
)
SLURM_SRUN_PORTS_FIREWALLED = Code(
    "slurm.srun-ports-firewalled",
    "warning",
    "EL nodes (firewalld) without SrunPortRange: srun listens on ports the firewall drops",
)
SLURM_CONFIGLESS_NODE_NAME_IN_PATH = Code(
    "slurm.configless-node-name-in-path",
    "error",
    "slurm.configless with %n in SlurmdSpoolDir or SlurmdPidFile, which slurmd cannot expand "
    "before it has fetched the configuration",
)
SLURM_CONFIGLESS_TOPOLOGY_YAML = Code(
    "slurm.configless-topology-yaml",
    "error",
    "slurm.configless with topology.yaml on a Slurm whose slurmctld does not serve it "
    "(before 25.05.2)",
)
SLURM_REBOOT_BOUND = Code(
    "slurm.reboot-bound",
    "error",
    "slurm.reboot.max_per_partition below 1: no node could ever reboot",
)
SLURM_REBOOT_BOUND_BELOW_DOMAIN = Code(
    "slurm.reboot-bound-below-domain",
    "warning",
    "slurm.reboot.mode slurm with an NVLink domain that has more trays in one partition "
    "than max_per_partition lets out at once: the roll-out, which hands a domain's trays "
    "to Slurm together, stops at it",
)
SLURM_REBOOT_NODE_OUTSIDE_SLURM = Code(
    "slurm.reboot-node-outside-slurm",
    "error",
    "slurm.reboot.mode slurm with a GPU node that is no Slurm compute node, which "
    "`scontrol reboot` cannot reboot",
)
SLURM_OPTION_UNKNOWN = Code(
    "slurm.option-unknown", "error", "not a slurm.conf key of the pinned Slurm"
)
SLURM_PRIORITY_NEEDS_MULTIFACTOR = Code(
    "slurm.priority-needs-multifactor",
    "error",
    "priority weights or decay without type multifactor",
)
SLURM_PREEMPT_QOS_WITHOUT_ACCOUNTING = Code(
    "slurm.preempt-qos-without-accounting", "error", "preempt/qos without slurm.accounting"
)
SLURM_FAIRSHARE_WITHOUT_ACCOUNTING = Code(
    "slurm.fairshare-without-accounting",
    "warning",
    "a fairshare weight without slurm.accounting (not written: slurmctld ignores it)",
)
SLURM_AGE_WITHOUT_ACCOUNTING = Code(
    "slurm.age-without-accounting",
    "warning",
    "an age weight without slurm.accounting (not written: slurmctld ignores it)",
)
SLURM_PREEMPT_QOS_WITHOUT_QOS = Code(
    "slurm.preempt-qos-without-qos",
    "warning",
    "preempt/qos but no QOS in slurm.qos preempts another, so nothing is ever preempted",
)
SLURM_QOS_WITHOUT_ACCOUNTING = Code(
    "slurm.qos-without-accounting", "error", "slurm.qos without slurm.accounting"
)
SLURM_DUPLICATE_QOS = Code("slurm.duplicate-qos", "error", "two QOS with the same name")
SLURM_UNKNOWN_QOS = Code(
    "slurm.unknown-qos", "error", "a preempt list or partition names a QOS slurm.qos lacks"
)
SLURM_QOS_PREEMPTS_ITSELF = Code(
    "slurm.qos-preempts-itself", "error", "a QOS lists itself in its preempt list"
)
SLURM_ENFORCE_WITHOUT_QOS = Code(
    "slurm.enforce-without-qos",
    "error",
    "slurm.options AccountingStorageEnforce leaves out qos while QOS are used",
)
SLURM_BILLING_WITHOUT_ACCOUNTING = Code(
    "slurm.billing-without-accounting",
    "error",
    "billing_weights without slurm.accounting (slurmctld refuses the gres/gpu weight)",
)
SLURM_SYSTEM_FOLDER = Code(
    "slurm.system-folder",
    "error",
    "a folder the slurm role creates and gives to a daemon (StateSaveLocation, SlurmdSpoolDir, "
    "a log file's folder) is a system folder such as /etc or /var/log",
)
SLURM_KEEPS_IMPORTED_VALUES = Code(
    "slurm.keeps-imported-values",
    "warning",
    "slurm.keep_imported: the render keeps the imported node features and partition defaults "
    "instead of deriving clustergen's own (docs/adopt.md)",
)
SLURM_PARTITION_OPTION_MODELLED = Code(
    "slurm.partition-option-modelled",
    "error",
    "a partition's options set a key that clustergen writes from a partition key (Nodes, "
    "MaxTime, State...): use the partition key",
)
SLURM_HA_STATE_NOT_SHARED = Code(
    "slurm.ha-state-not-shared",
    "error",
    "two or more controllers without slurm.state_save.shared",
)
SLURM_BACKFILL_WINDOW_SHORT = Code(
    "slurm.backfill-window-short",
    "warning",
    "slurm.options SchedulerParameters sets a bf_window (or leaves Slurm's 1440) shorter than "
    "the longest MaxTime",
)
SLURM_UNKILLABLE_BELOW_MESSAGE_TIMEOUT = Code(
    "slurm.unkillable-below-message-timeout",
    "warning",
    "UnkillableStepTimeout below 5 x MessageTimeout, so nodes go down with KillTaskFailed",
)
SLURM_HEALTH_CHECK_WITHOUT_NHC = Code(
    "slurm.health-check-without-nhc",
    "warning",
    "slurm.health_check without software.nhc: no HealthCheckProgram, the nodes are checked "
    "only after jobs",
)
SLURM_HEALTH_CHECK_STATE_UNSUPPORTED = Code(
    "slurm.health-check-state-unsupported",
    "error",
    "a slurm.health_check.node_state word the pinned Slurm's parser does not know",
)
SOFTWARE_NHC_REPOSITORY_UNKNOWN = Code(
    "software.nhc-repository-unknown",
    "error",
    "software.nhc.repository names no repository of software.repositories",
)


# hardware topology and nccl
HARDWARE_TOPOLOGY_MISSING = Code(
    "hardware.topology-missing",
    "warning",
    "a GPU compute profile without a topology table: no gres.conf Cores= (GPU-CPU affinity; "
    "a Grace superchip's GPUs take their own CPU's) and no rails told from storage HCAs",
)
HARDWARE_TOPOLOGY_GPU_INDEX = Code(
    "hardware.topology-gpu-index",
    "error",
    "the topology table does not list every GPU index from 0 to count-1 exactly once",
)
HARDWARE_TOPOLOGY_CORES = Code(
    "hardware.topology-cores", "error", "a GPU's cores lie outside the profile's CPU cores"
)
HARDWARE_NUMA_UNEVEN = Code(
    "hardware.numa-uneven",
    "error",
    "cpu.numa_per_socket that does not divide the socket's cores",
)
HARDWARE_TOPOLOGY_NUMA = Code(
    "hardware.topology-numa",
    "error",
    "a NUMA node outside the range of the profile's sockets (x cpu.numa_per_socket)",
)
HARDWARE_TOPOLOGY_UNKNOWN_HCA = Code(
    "hardware.topology-unknown-hca", "error", "a GPU's nearest HCA is not in the topology's HCAs"
)
HARDWARE_TOPOLOGY_HCAS_DIFFER = Code(
    "hardware.topology-hcas-differ",
    "error",
    "fabric_hcas and the topology table's compute HCAs name different devices",
)
NCCL_TESTS_NOT_BUILT = Code(
    "nccl.tests-not-built",
    "warning",
    "GPU nodes on which nothing installs nccl-tests: software.nccl_tests names no release, "
    "or the catalog knows no Open MPI of the OS to build it with",
)
NCCL_TESTS_WITHOUT_PMIX = Code(
    "nccl.tests-without-pmix",
    "warning",
    "GPU nodes with slurm.mpi none: the acceptance all-reduce jobs stop with NOT RUN, as "
    "nccl-tests starts its MPI ranks under srun only through PMIx",
)
NCCL_UNKNOWN_VARIABLE = Code(
    "nccl.unknown-variable", "warning", "an NCCL_* name NCCL's documentation does not list"
)
NCCL_NOT_NCCL_VARIABLE = Code(
    "nccl.not-nccl-variable", "error", "an nccl env entry whose name does not start with NCCL_"
)
NCCL_BAD_VALUE = Code(
    "nccl.bad-value", "error", "an NCCL value outside the variable's documented syntax or range"
)
NCCL_UNKNOWN_HCA = Code(
    "nccl.unknown-hca", "error", "NCCL settings name an HCA the hardware profile does not have"
)
NCCL_ROCE_SETTINGS_MISSING = Code(
    "nccl.roce-settings-missing",
    "error",
    "a RoCE fabric without network.fabric.roce traffic_class",
)
NCCL_ROCE_SETTING_ON_INFINIBAND = Code(
    "nccl.roce-setting-on-infiniband", "warning", "a RoCE-only NCCL setting on an InfiniBand fabric"
)
NCCL_SHARP_UNSUPPORTED = Code(
    "nccl.sharp-unsupported",
    "error",
    "network.fabric.sharp on a fabric whose switches, technology or cabling NCCL's SHARP "
    "plugin cannot use",
)
NCCL_NVLS_WITHOUT_NVSWITCH = Code(
    "nccl.nvls-without-nvswitch",
    "warning",
    "NCCL_NVLS_ENABLE=1 on GPUs without NVSwitch or an NVLink domain",
)
NCCL_TOO_OLD_FOR_MNNVL = Code(
    "nccl.too-old-for-mnnvl",
    "warning",
    "software.nccl older than 2.25.2, the first NCCL NVIDIA supports multi-node NVLink on "
    "GB200 with, on the trays of an NVLink domain",
)
NCCL_MNNVL_OFF = Code(
    "nccl.nvlink-domain-off",
    "warning",
    "an NCCL setting that keeps jobs of a multi-node NVLink domain off its NVLink",
)

# facility: racks, power and cabling (docs/facility.md)
HARDWARE_TYPICAL_ABOVE_MAX = Code(
    "hardware.typical-above-max", "error", "typical_watts above max_watts"
)
HARDWARE_PSU_SPLIT = Code(
    "hardware.psu-split", "error", "psus_per_feed does not add up to psu_count"
)
HARDWARE_PSUS_INCOMPLETE = Code(
    "hardware.psus-incomplete",
    "error",
    "psu_count without psu_watts (or the reverse), or redundant_psus or psus_per_feed "
    "without psu_count",
)
HARDWARE_PSUS_BELOW_MAX_WATTS = Code(
    "hardware.psus-below-max-watts",
    "error",
    "(psu_count - redundant_psus) x psu_watts does not cover max_watts",
)
HARDWARE_MAX_WATTS_BELOW_GPUS = Code(
    "hardware.max-watts-below-gpus", "error", "max_watts below the GPUs' board power alone"
)
HARDWARE_FEED_LOSS_UNDERPOWERS = Code(
    "hardware.feed-loss-underpowers",
    "warning",
    "the PSUs left after losing one feed do not cover max_watts: the node throttles or powers off",
)
RACKS_BANK_AMPS_WITHOUT_BANKS = Code(
    "racks.bank-amps-without-banks", "error", "a PDU gives bank_amps but no banks"
)
RACKS_DEVICE_OUTSIDE = Code(
    "racks.device-outside", "error", "a device reaches above the top unit of its rack"
)
RACKS_UNITS_OVERLAP = Code("racks.units-overlap", "error", "two devices share a rack unit")
RACKS_NODE_NOT_RACKED = Code(
    "racks.node-not-racked", "error", "a node is in no rack and not listed in facility.unracked"
)
RACKS_TWO_PDUS_ON_FEED = Code("racks.two-pdus-on-feed", "error", "a rack has two PDUs on a feed")
RACKS_NODE_WITHOUT_PSUS = Code(
    "racks.node-without-psus",
    "error",
    "a node whose hardware profile has no PSUs (busbar-fed) in a rack without power shelves",
)
RACKS_NODE_POWER_UNKNOWN = Code(
    "racks.node-power-unknown",
    "error",
    "a node in a rack with PDUs or power shelves has a hardware profile without power",
)
RACKS_PDUS_AND_SHELVES = Code(
    "racks.pdus-and-shelves", "error", "a rack has both PDUs and power shelves"
)
RACKS_SHELF_COUNT_REDUNDANCY = Code(
    "racks.shelf-count-redundancy",
    "error",
    "the count of power shelves cannot have the redundancy given (N+N odd, N+1 below 2)",
)
RACKS_SHELVES_OVER_CAPACITY = Code(
    "racks.shelves-over-capacity",
    "error",
    "the rack's max draw is above what its power shelves carry with the redundancy spent",
)
RACKS_NVLINK_SWITCH_TRAYS_SHORT = Code(
    "racks.nvlink-switch-trays-short",
    "warning",
    "a rack lists fewer NVLink switch trays than its compute trays' NVLink domains call for",
)
RACKS_AIR_COOLING_EXCEEDED = Code(
    "racks.air-cooling-exceeded",
    "error",
    "the air share of the rack's max draw is above its air_cooling_kw",
)
FACILITY_CDU_OVER_CAPACITY = Code(
    "facility.cdu-over-capacity",
    "error",
    "the liquid share of the max draw of a CDU's racks is above its capacity_kw",
)
FACILITY_CDU_UNKNOWN_RACK = Code(
    "facility.cdu-unknown-rack", "error", "a CDU names a rack that is not defined"
)
FACILITY_RACK_ON_TWO_CDUS = Code(
    "facility.rack-on-two-cdus", "error", "a rack is listed under two CDUs"
)
FACILITY_LIQUID_RACK_WITHOUT_CDU = Code(
    "facility.liquid-rack-without-cdu",
    "warning",
    "a rack sends heat to liquid but no CDU lists it, so that heat is not checked",
)
RACKS_PSU_FEED_MISSING = Code(
    "racks.psu-feed-missing", "error", "a node cables PSUs to a feed its rack does not have"
)
RACKS_FEED_OVER_LIMIT = Code(
    "racks.feed-over-limit",
    "error",
    "a feed (alone, on failover) carries more than 80% of its circuit's rating",
)
RACKS_BANK_OVER_LIMIT = Code(
    "racks.bank-over-limit", "error", "a PDU bank carries more than 80% of its breaker"
)
RACKS_PHASE_OVER_LIMIT = Code(
    "racks.phase-over-limit",
    "error",
    "a phase of a 3-phase PDU carries more than 80% of its pole with every feed up, or more "
    "than its full rating on failover",
)
RACKS_PHASE_OVER_LIMIT_ON_FAILOVER = Code(
    "racks.phase-over-limit-on-failover",
    "warning",
    "on failover a phase of a 3-phase PDU carries more than 80% of its pole, within its rating",
)
RACKS_OUTLETS_EXCEEDED = Code(
    "racks.outlets-exceeded", "error", "more PSUs are cabled to a PDU than it has outlets"
)
RACKS_PHASE_IMBALANCE = Code(
    "racks.phase-imbalance", "warning", "a 3-phase PDU's phases differ by more than 20%"
)
RACKS_WEIGHT_EXCEEDED = Code(
    "racks.weight-exceeded", "error", "the devices weigh more than the rack's weight_kg"
)
RACKS_COOLING_EXCEEDED = Code(
    "racks.cooling-exceeded", "error", "the rack draws more than its cooling_kw removes"
)
FACILITY_POWER_OVER_BUDGET = Code(
    "facility.power-over-budget", "error", "the racks draw more than facility.power_budget_kw"
)
FACILITY_COOLING_EXCEEDED = Code(
    "facility.cooling-exceeded", "error", "the racks draw more than facility.cooling_kw removes"
)
FACILITY_UNKNOWN_NODE = Code(
    "facility.unknown-node", "error", "facility.unracked names a node that is not defined"
)
FACILITY_UNRACKED_NODE_PLACED = Code(
    "facility.unracked-node-placed", "error", "a node listed in facility.unracked is in a rack"
)
NETWORK_SWITCH_PORTS_EXCEEDED = Code(
    "network.switch-ports-exceeded",
    "error",
    "more HCAs and uplinks are cabled to a switch than its ports",
)
NETWORK_SWITCH_PORTS_ASSUMED_EXCEEDED = Code(
    "network.switch-ports-assumed-exceeded",
    "warning",
    "more HCAs and uplinks are cabled to a switch than the usual switch of the rate has",
)

MONITORING_NODE_EXPORTER_VERSION = Code(
    "monitoring.node-exporter-version",
    "error",
    "node_exporter without a version on an OS whose package version the catalog does not know",
)
MONITORING_DCGM_EXPORTER_DCGM = Code(
    "monitoring.dcgm-exporter-dcgm",
    "error",
    "dcgm-exporter without software.dcgm 4 or later (NVIDIA's package needs DCGM 4)",
)
MONITORING_DCGM_EXPORTER_VERSION = Code(
    "monitoring.dcgm-exporter-version",
    "error",
    "dcgm-exporter without a version, for a DCGM release the catalog pairs no exporter with",
)
MONITORING_SLURM_METRICS_RELEASE = Code(
    "monitoring.slurm-metrics-release",
    "error",
    "slurmctld's own metrics (kind openmetrics) with a Slurm release before 25.11",
)
MONITORING_SLURM_METRICS_PRIVATE = Code(
    "monitoring.slurm-metrics-private",
    "error",
    "slurmctld's metrics on Slurm 25.11 with PrivateData set: it answers them 401",
)
MONITORING_SLURM_METRICS_UNAUTHENTICATED = Code(
    "monitoring.slurm-metrics-unauthenticated",
    "error",
    "slurmctld's metrics with PrivateData set and no monitoring.slurm.auth_users: only "
    "MetricsAuthUsers keeps them private and open to the scraper",
)
MONITORING_SLURM_EXPORTER_VERSION = Code(
    "monitoring.slurm-exporter-version",
    "error",
    "the Slurm exporter (kind exporter) without the version of its package",
)

ANSIBLE_PULL_REF = Code(
    "ansible.pull-ref",
    "error",
    "ansible.pull names what the nodes apply by ref (a branch or a tag), or by more than one "
    "of branch, tag and commit",
)
ANSIBLE_PULL_UNSIGNED = Code(
    "ansible.pull-unsigned",
    "error",
    "pull mode without signers and not marked unsigned: the nodes would apply any commit",
)
ANSIBLE_PULL_SIGNER_KEY = Code(
    "ansible.pull-signer-key",
    "error",
    "a pull signer without exactly one key (SSH, or OpenPGP fingerprint and key), or an "
    "OpenPGP key whose primary key is not the fingerprint given",
)
ANSIBLE_PULL_UNSIGNED_ALLOWED = Code(
    "ansible.pull-unsigned-allowed",
    "warning",
    "pull mode marked unsigned: whoever can push to the repository is root on every node",
)
ANSIBLE_PULL_HOST_KEYS = Code(
    "ansible.pull-host-keys",
    "error",
    "an ssh pull repository without the server's host keys",
)
ANSIBLE_PULL_NO_PACKAGE = Code(
    "ansible.pull-no-package",
    "error",
    "pull mode on an OS whose ansible and git packages the catalog does not know",
)
ANSIBLE_PULL_CORE_TOO_OLD = Code(
    "ansible.pull-core-too-old",
    "error",
    "pull mode with the OS's ansible-core older than the roles' min_ansible_version",
)
ANSIBLE_PULL_CORE_UNTESTED = Code(
    "ansible.pull-core-untested",
    "warning",
    "pull mode with the OS's ansible-core older than every ansible-core the roles are tested on",
)


# audit: what the nodes report against the spec and the rendered tree (docs/audit.md)
AUDIT_UNKNOWN_NODE = Code(
    "audit.unknown-node", "error", "a fact file names a node the spec does not have"
)
AUDIT_REPORT_MISSING = Code(
    "audit.report-missing",
    "error",
    "the spec says the node has a component but the tool that reports it is not installed",
)
AUDIT_REPORT_UNREADABLE = Code(
    "audit.report-unreadable",
    "error",
    "a tool the node needs failed or printed something other than its report",
)
AUDIT_REPORT_PARTIAL = Code(
    "audit.report-partial",
    "warning",
    "a tool's report is incomplete (it failed after printing, or lists fewer items than it "
    "counts): what it holds is checked, the rest is not",
)
AUDIT_GPU_MISSING = Code("audit.gpu-missing", "error", "a node reports fewer GPUs than its profile")
AUDIT_GPU_MODEL = Code(
    "audit.gpu-model", "error", "a GPU of another model (or memory size) than the profile's"
)
AUDIT_GPU_DRIVER = Code(
    "audit.gpu-driver", "error", "the loaded NVIDIA driver is not software.nvidia_driver"
)
AUDIT_HCA_MISSING = Code("audit.hca-missing", "error", "an HCA the profile names is not there")
AUDIT_HCA_DOWN = Code("audit.hca-down", "error", "an HCA port is not Active")
AUDIT_HCA_RATE = Code(
    "audit.hca-rate", "error", "a fabric HCA port runs at another rate than the fabric's"
)
AUDIT_HCA_LINK_LAYER = Code(
    "audit.hca-link-layer",
    "error",
    "a fabric HCA port's link layer is not the fabric's (InfiniBand, or Ethernet for RoCE)",
)
AUDIT_CABLE_ELSEWHERE = Code(
    "audit.cable-elsewhere",
    "error",
    "ibnetdiscover sees an HCA on another switch or port than facility/cables.csv says",
)
AUDIT_CABLE_NOT_SEEN = Code(
    "audit.cable-not-seen",
    "warning",
    "an HCA cable of facility/cables.csv that ibnetdiscover does not see (unplugged or down)",
)
AUDIT_GPU_NUMA = Code(
    "audit.gpu-numa", "error", "a GPU's NUMA node (nvidia-smi topo -m) is not the topology table's"
)
AUDIT_GPU_HCA = Code(
    "audit.gpu-hca",
    "error",
    "the HCA nearest a GPU (nvidia-smi topo -m) is not the topology table's",
)
AUDIT_CPUS_BELOW_PROFILE = Code(
    "audit.cpus-below-profile",
    "error",
    "slurmd finds fewer CPUs than the profile gives Slurm (slurmctld drains such a node)",
)
AUDIT_MEMORY_BELOW_PROFILE = Code(
    "audit.memory-below-profile",
    "error",
    "slurmd finds less memory than the profile's RealMemory (slurmctld drains such a node)",
)
AUDIT_PACKAGE_VERSION = Code(
    "audit.package-version", "error", "an installed package version is not versions.lock's pin"
)
AUDIT_PACKAGE_MISSING = Code(
    "audit.package-missing", "error", "a package versions.lock pins for the node is not installed"
)
AUDIT_ADDRESS_MISSING = Code(
    "audit.address-missing", "error", "an interface lacks the address the spec gives it"
)
AUDIT_LNET_MISSING = Code(
    "audit.lnet-missing", "error", "an LNet interface of the rendered configuration is not up"
)
AUDIT_PULL_FAILED = Code(
    "audit.pull-failed", "error", "the node's last pull-mode run (ansible.pull) failed"
)
AUDIT_PULL_MISSING = Code(
    "audit.pull-missing", "warning", "a node of pull mode (ansible.pull) has no pull run recorded"
)


CODES: Mapping[str, Code] = MappingProxyType(
    {value.name: value for value in list(globals().values()) if isinstance(value, Code)}
)


def registered(name: str) -> Code:
    return CODES[name]


def is_registered(code: Code) -> bool:
    return CODES.get(code.name) is code


WARNINGS: tuple[str, ...] = tuple(sorted(n for n, c in CODES.items() if c.severity == "warning"))


def ignorable(name: str) -> str:
    """`name` if it is a warning's code; otherwise why it cannot be ignored (PydanticCustomError,
    a ValueError, so the command line reports it too)."""
    code = CODES.get(name)
    if code is None:
        raise invalid(
            IGNORE_UNKNOWN_CODE, f"'{name}' is not a clustergen code{did_you_mean(name, CODES)}"
        )
    if code.severity != "warning":
        raise invalid(
            IGNORE_NOT_A_WARNING,
            f"'{name}' is an error; errors cannot be ignored, only warnings (docs/errors.md "
            f"lists the {len(WARNINGS)} warning codes)",
        )
    return name
