"""network: management, BMC and high-speed fabric networks, and the fabric's switch tree."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from typing_extensions import Self

from clustergen.base import codes
from clustergen.base.codes import invalid
from clustergen.model.common import (
    CIDR,
    Hostlist,
    Hostname,
    Int,
    IPv4,
    StrictModel,
    keys_set,
    when_equal,
    whole_number,
)
from clustergen.model.syntax import DeviceModel, PortGuid, SlurmName

# Rails (planes) of a rail-optimised fabric: more than any node has HCAs.
MAX_RAILS = 64

# 40, 56, 100, 200, 400, 800 Gb/s: QDR and FDR for the fabrics older sites still run
# (ConnectX-3, SwitchX), which `import slurm` and audit meet.
INFINIBAND_RATES = ("qdr", "fdr", "edr", "hdr", "ndr", "xdr")
ROCE_RATES = ("100g", "200g", "400g", "800g")
# Link rate in Gb/s per fabric rate name: what a 4X HCA port at full speed shows in
# /sys/class/infiniband/<hca>/ports/<port>/rate ("200 Gb/sec (4X HDR)"): the kernel's
# rate_show (drivers/infiniband/core/sysfs.c) takes 10 Gb/s a lane for QDR, 14 for FDR,
# 25 for EDR, 50 for HDR, 100 for NDR, 200 for XDR, times the width.
LINK_GBITS = {
    "qdr": 40,
    "fdr": 56,
    "edr": 100,
    "hdr": 200,
    "ndr": 400,
    "xdr": 800,
    "100g": 100,
    "200g": 200,
    "400g": 400,
    "800g": 800,
}


# MTU bounds: IPv4 needs 576, IPv6 1280 (RFC 8200 section 5); 9216 is the largest jumbo
# frame Ethernet switches commonly take (NVIDIA Spectrum and Cumulus Linux: MTU up to 9216).
MTU_MIN, MTU_MAX = 1280, 9216
# IPoIB in datagram mode: the IB link MTU (4096) less the 4-byte IPoIB header (kernel
# Documentation/infiniband/ipoib.rst: "the default MTU in datagram mode is ... 4092 for
# 4K MTU"). Enhanced IPoIB (ConnectX-4 and later) has datagram mode only.
IPOIB_DATAGRAM_MTU = 4092
ETHERNET_JUMBO_MTU = 9000  # RoCE and Ethernet storage: the usual jumbo frame
ETHERNET_MTU = 1500
Mtu = Annotated[int, Field(ge=MTU_MIN, le=MTU_MAX), BeforeValidator(whole_number)]


class Route(StrictModel):
    """A static route of a network's interfaces (docs/networks.md#routes)."""

    to: CIDR = Field(description="Destination network, e.g. 10.40.0.0/16.")
    via: IPv4 = Field(
        description="Next hop: an address inside the network (with rail_prefix: inside one "
        "rail or storage subnet). The route goes on the node's interface in that subnet."
    )


_ROUTES = (
    "Static routes on the node's interfaces of this network, each on the interface whose "
    "subnet holds its 'via' (written by clustergen's host network files, "
    "docs/networks.md#host-network-configuration)."
)


class EthernetNetwork(StrictModel):
    """An Ethernet network (the BMCs')."""

    cidr: CIDR = Field(description="The network in CIDR notation, e.g. 10.0.1.0/24.")
    gateway: IPv4 | None = Field(default=None, description="Default gateway; inside the network.")


class HostEthernet(EthernetNetwork):
    """An Ethernet network of the nodes' own interfaces (management, front end)."""

    mtu: Mtu | None = Field(
        default=None,
        description="MTU of the nodes' interfaces on this network. Default 1500 (Ethernet).",
    )
    routes: list[Route] = Field(default_factory=list, description=_ROUTES)


class Switch(StrictModel):
    """A fabric switch: a leaf lists nodes, a spine (or core) lists the switches below it."""

    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                keys_set("nodes", unset=("switches",)),
                keys_set("switches", unset=("nodes",)),
            ]
        }
    )

    name: Hostname = Field(description="Switch name (Slurm SwitchName).")
    nodes: Hostlist | None = Field(
        default=None,
        description="Hostlist of the nodes cabled to this leaf switch. Nodes that are not Slurm "
        "compute nodes may be listed; they are left out of topology.conf.",
    )
    switches: Hostlist | None = Field(
        default=None, description="Hostlist of the child switches of this spine switch."
    )
    ports: Int | None = Field(
        default=None,
        ge=1,
        le=4096,
        description="Ports of the switch, checked against the HCAs and uplinks cabled to it. "
        "Default: the ports at the fabric's rate of the catalog model named in 'model' "
        "(docs/fabric.md); else on InfiniBand the usual switch of the rate (edr 36, hdr 40, "
        "ndr 64, xdr 144 ports), and then an overflow is a warning; on RoCE, and on QDR and "
        "FDR, whose switches the catalog lacks, ports are not checked unless given.",
    )
    model: DeviceModel | None = Field(
        default=None,
        description="Switch model, printed on the cable sheet and the elevations; a model of "
        "the switch catalog (docs/fabric.md, e.g. qm9700, sn5600) also gives the ports.",
    )
    uplinks: Int = Field(
        default=1,
        ge=1,
        le=1024,
        description="Cables from this switch to each switch that lists it under 'switches' "
        "(a switch may hang from several: a leaf under every spine of its plane).",
    )
    rail: Int | None = Field(
        default=None,
        ge=1,
        le=MAX_RAILS,
        description="Leaves of a rail-optimised fabric: the rail (plane) this leaf carries. "
        "Compute HCA number 'rail' of each listed node (1 is the first compute HCA in the "
        "profile's order, mlx5_0 on HGX) is cabled here, and nothing else of it, so a node "
        "hangs from one leaf per rail. Without it every fabric HCA of the listed nodes is "
        "cabled to this leaf.",
    )

    @model_validator(mode="after")
    def _has_children(self) -> Self:
        if (self.nodes is None) == (self.switches is None):
            raise invalid(
                codes.NETWORK_SWITCH_LEAF_OR_SPINE,
                f"switch '{self.name}' needs exactly one of 'nodes' (a leaf) or 'switches' "
                "(a spine)",
            )
        if self.rail is not None and self.nodes is None:
            raise invalid(
                codes.NETWORK_SWITCH_LEAF_OR_SPINE,
                f"switch '{self.name}': only a leaf (one with 'nodes') carries a rail",
            )
        return self


FabricType = Literal["infiniband", "roce", "spectrum-x"]
# Spectrum-X's lossless class: NVIDIA's Spectrum-X host configuration makes priority 3
# lossless with DSCP trust ("Configure pfc (Priority Flow Control) for priority 3, set
# trust to dscp on each PF": NVIDIA Network Operator 26.10, "NIC Configuration Operator,
# Configuration Details", docs.nvidia.com/networking/display/kubernetes26100). Under
# mlx5's default dscp2prio (DSCP 8p..8p+7 on priority p) DSCP 26 is priority 3, and the
# traffic class is the ToS byte: DSCP 26 << 2, with ECN's ECT(0) bit, 106.
SPECTRUM_X_PRIORITY = 3
SPECTRUM_X_TRAFFIC_CLASS = 106
# The fabric types that are Ethernet, carrying RDMA as RoCE v2.
ETHERNET_FABRICS: tuple[str, ...] = ("roce", "spectrum-x")


class Roce(StrictModel):
    """RoCE settings for NCCL."""

    gid_index: Int | None = Field(
        default=None,
        ge=-1,
        le=255,
        description="NCCL_IB_GID_INDEX; 3 is RoCE v2 over IPv4 on most NICs, -1 is auto "
        "(NCCL >= 2.21). Default: unset from NCCL 2.21, which then chooses the GID of the "
        "netdev's address itself (a set index is used unchecked), else 3.",
    )
    traffic_class: Int | None = Field(
        default=None, ge=0, le=255, description="NCCL_IB_TC, the traffic class for RDMA traffic."
    )


SubnetManagerKind = Literal["opensm", "ufm", "switch"]
RoutingEngine = Literal["ftree", "updn", "minhop"]
# OpenSM's priority range (opensm(8), -p/--priority: 0 lowest to 15 highest).
SM_PRIORITY_MAX = 15


class SubnetManager(StrictModel):
    """What runs the InfiniBand subnet manager (docs/subnet-manager.md)."""

    model_config = ConfigDict(
        json_schema_extra={
            "allOf": [
                when_equal("kind", "opensm", {"required": ["nodes"]}),
                {
                    "if": {"properties": {"kind": {"enum": ["ufm", "switch"]}}},
                    "then": {
                        "properties": {
                            "nodes": {"maxItems": 0},
                            "routing_engine": {"type": "null"},
                            "root_guids": {"maxItems": 0},
                        }
                    },
                },
            ]
        }
    )

    kind: SubnetManagerKind = Field(
        description="opensm: the distribution's OpenSM on the nodes listed, installed, "
        "configured and started by the opensm role. ufm: NVIDIA UFM manages the fabric; "
        "switch: the managed switches' embedded SM does. With ufm or switch clustergen "
        "installs and configures no subnet manager."
    )
    nodes: list[Hostname] = Field(
        default_factory=list,
        max_length=SM_PRIORITY_MAX + 1,
        description="opensm: the nodes that run OpenSM, primary first: each gets sm_priority "
        "15, 14, ... in this order (the highest priority is master; the rest are standbys "
        "that take over). Each must have a fabric HCA.",
    )
    routing_engine: RoutingEngine | None = Field(
        default=None,
        description="opensm: OpenSM's routing engine. Default: 'ftree,updn' (fat-tree "
        "routing, falling back to up/down where the fabric is not a pure fat tree) when "
        "the fabric has spine switches, else updn.",
    )
    root_guids: list[PortGuid] = Field(
        default_factory=list,
        description="opensm: port GUIDs of the root (top-level) switches, as ibstat prints "
        "them, written to root_guid_file for ftree and updn. The spec cannot know them from "
        "its switch names; without them both engines find the roots themselves.",
    )

    @model_validator(mode="after")
    def _fits_the_kind(self) -> Self:
        if self.kind == "opensm" and not self.nodes:
            raise invalid(
                codes.NETWORK_SUBNET_MANAGER_KEYS,
                "subnet_manager kind opensm needs 'nodes': where OpenSM runs, primary first",
            )
        if self.kind != "opensm" and (self.nodes or self.routing_engine or self.root_guids):
            raise invalid(
                codes.NETWORK_SUBNET_MANAGER_KEYS,
                f"subnet_manager kind {self.kind} runs outside clustergen: 'nodes', "
                "'routing_engine' and 'root_guids' are OpenSM's (kind opensm)",
            )
        return self


class Fabric(StrictModel):
    """A high-speed fabric (InfiniBand or RoCE): network.fabric, the one NCCL uses, or
    network.storage."""

    model_config = ConfigDict(
        json_schema_extra={
            "allOf": [
                when_equal(
                    "type",
                    "infiniband",
                    {
                        "properties": {
                            "rate": {"enum": list(INFINIBAND_RATES)},
                            "roce": {"type": "null"},
                            "mtu": {"maximum": IPOIB_DATAGRAM_MTU},
                        }
                    },
                ),
                *(
                    when_equal(
                        "type",
                        kind,
                        {
                            "properties": {
                                "rate": {"enum": list(ROCE_RATES)},
                                "subnet_manager": {"type": "null"},
                            }
                        },
                    )
                    for kind in ETHERNET_FABRICS
                ),
            ]
        }
    )

    type: FabricType = Field(
        description="Fabric technology: infiniband; roce (RDMA over Converged Ethernet); "
        "spectrum-x, NVIDIA Spectrum-X Ethernet: RoCE on Spectrum-4/6 switches and SuperNICs, "
        "whose hosts get NVIDIA's Spectrum-X QoS (DSCP trust, lossless priority 3: traffic "
        "class 106 unless roce.traffic_class says otherwise) and NCCL settings (docs/fabric.md"
        "#spectrum-x-ethernet)."
    )
    rate: str = Field(
        json_schema_extra={"enum": [*INFINIBAND_RATES, *ROCE_RATES]},
        description="Link rate: infiniband qdr | fdr | edr | hdr | ndr | xdr (40, 56, 100, 200, "
        "400, 800 Gb/s); roce 100g | 200g | 400g | 800g.",
    )
    cidr: CIDR = Field(description="Network of the fabric addresses (IPoIB or RoCE).")
    rail_prefix: Int | None = Field(
        default=None,
        ge=1,
        le=30,
        description="Split cidr into subnets of this prefix length, one per rail (subnet 0 is "
        "rail 1): a node's first address (fabric_ip, storage_ip) is its rail-1 address, and "
        "rail r's is that plus (r - 1) x 2^(32 - rail_prefix). Without it every node has one "
        "address on this network (docs/networks.md).",
    )
    roce: Roce | None = Field(
        default=None, description="RoCE settings; only with type roce or spectrum-x."
    )
    mtu: Mtu | None = Field(
        default=None,
        description="MTU of the nodes' interfaces on this fabric. Default: 4092 on "
        "InfiniBand (IPoIB datagram mode: the 4096-byte IB MTU less the IPoIB header, and "
        "its largest), 9000 on RoCE. At most 4092 on InfiniBand.",
    )
    routes: list[Route] = Field(default_factory=list, description=_ROUTES)
    switches: list[Switch] = Field(
        default_factory=list,
        description="Fabric switches; becomes Slurm topology.conf (topology/tree).",
    )
    sharp: bool = Field(
        default=False,
        description="The fabric's switches run SHARP reductions for NCCL (CollNet, through "
        "the NCCL-RDMA-SHARP plugin and an Aggregation Manager): NCCL_COLLNET_ENABLE=1. Needs "
        "InfiniBand, rail leaves, and a catalog model with NCCL SHARP support on every switch "
        "(docs/nccl.md).",
    )

    subnet_manager: SubnetManager | None = Field(
        default=None,
        description="InfiniBand only: what runs the subnet manager (docs/subnet-manager.md): "
        "OpenSM on named nodes, or UFM or the switches, which clustergen leaves alone. "
        "Without it validate warns that nothing in the spec runs one.",
    )

    @property
    def ethernet(self) -> bool:
        """RoCE on Ethernet (roce, spectrum-x), not InfiniBand."""
        return self.type in ETHERNET_FABRICS

    @property
    def spectrum_x(self) -> bool:
        return self.type == "spectrum-x"

    @property
    def traffic_class_written(self) -> bool:
        """Whether roce.traffic_class sets the traffic class (not Spectrum-X's default)."""
        return self.roce is not None and self.roce.traffic_class is not None

    @property
    def traffic_class(self) -> int | None:
        """The RDMA traffic class (NCCL_IB_TC): roce.traffic_class, else on Spectrum-X
        SPECTRUM_X_TRAFFIC_CLASS; None on InfiniBand or a RoCE fabric that does not say."""
        if self.roce is not None and self.roce.traffic_class is not None:
            return self.roce.traffic_class
        return SPECTRUM_X_TRAFFIC_CLASS if self.spectrum_x else None

    @field_validator("rate")
    @classmethod
    def _rate_fits_type(cls, rate: str, info: ValidationInfo) -> str:
        fabric_type = info.data.get("type")
        if fabric_type is None:
            return rate
        rates, label = (
            (INFINIBAND_RATES, "an InfiniBand")
            if fabric_type == "infiniband"
            else (ROCE_RATES, "a RoCE")
        )
        if rate not in rates:
            raise invalid(
                codes.NETWORK_FABRIC_RATE,
                f"'{rate}' is not {label} rate (expected one of {', '.join(rates)})",
            )
        return rate

    @field_validator("mtu")
    @classmethod
    def _mtu_fits_type(cls, mtu: int | None, info: ValidationInfo) -> int | None:
        if mtu is not None and info.data.get("type") == "infiniband" and mtu > IPOIB_DATAGRAM_MTU:
            raise invalid(
                codes.NETWORK_MTU_PAST_LINK,
                f"MTU {mtu} is past IPoIB datagram mode's {IPOIB_DATAGRAM_MTU} (the 4096-byte "
                "InfiniBand MTU less the IPoIB header); clustergen configures datagram mode",
            )
        return mtu

    @field_validator("roce")
    @classmethod
    def _roce_only_on_roce(cls, roce: Roce | None, info: ValidationInfo) -> Roce | None:
        if roce is not None and info.data.get("type") == "infiniband":
            raise invalid(
                codes.NETWORK_ROCE_ON_INFINIBAND,
                "'roce' settings apply only to a fabric of type roce or spectrum-x",
            )
        return roce

    @field_validator("subnet_manager")
    @classmethod
    def _no_subnet_manager_on_roce(
        cls, manager: SubnetManager | None, info: ValidationInfo
    ) -> SubnetManager | None:
        if manager is not None and info.data.get("type") in ETHERNET_FABRICS:
            raise invalid(
                codes.NETWORK_SUBNET_MANAGER_ON_ROCE,
                "a RoCE fabric is Ethernet and has no subnet manager; remove subnet_manager",
            )
        return manager


class NvlinkDomain(StrictModel):
    """A multi-node NVLink domain: the compute trays one NVLink switch fabric joins (a GB200
    NVL72 rack's 18 trays). A job's GPUs talk over NVLink only within its domain."""

    name: SlurmName = Field(description="Domain name (Slurm BlockName), e.g. nvl01.")
    nodes: Hostlist = Field(
        description="The compute trays of the domain, e.g. gb[001-018]; their hardware "
        "profile has gpu.nvlink_domain."
    )


class HostNetworking(StrictModel):
    """What clustergen's host network configuration covers (roles/host_network;
    docs/networks.md#host-network-configuration)."""

    configure: bool = Field(
        default=True,
        description="Write and apply each node's interface configuration (address, MTU, "
        "routes) for the fabric, storage and front-end interfaces the spec names, in the "
        "OS's own format (systemd-networkd on Debian, netplan on Ubuntu, NetworkManager on "
        "EL). false: clustergen writes none, as before; the inventory still lists the "
        "addresses.",
    )
    management: bool = Field(
        default=False,
        description="Also configure interfaces.management (management_ip, the network's "
        "gateway as default route, MTU). Off by default: Ansible reaches the node over it, "
        "and the site's installer already set it up.",
    )


class Network(StrictModel):
    """The cluster's networks; node addresses must lie inside them."""

    management: HostEthernet = Field(description="Management network (node management_ip).")
    bmc: EthernetNetwork | None = Field(default=None, description="BMC network (node bmc_ip).")
    fabric: Fabric | None = Field(
        default=None,
        description="High-speed compute fabric (node fabric_ip; per rail with rail_prefix).",
    )
    storage: Fabric | None = Field(
        default=None,
        description="A separate storage fabric, of the same shape as fabric: the address of "
        "each interface in hardware.<profile>.interfaces.storage (node storage_ip), and LNet's "
        "interfaces and NIDs (docs/networks.md, docs/lustre.md).",
    )
    frontend: HostEthernet | None = Field(
        default=None,
        description="Ethernet front-end network (node frontend_ip on interfaces.frontend).",
    )
    nvlink_domains: list[NvlinkDomain] = Field(
        default_factory=list,
        description="Multi-node NVLink domains (GB200/GB300 NVL72 and alike): which trays each "
        "joins. Default (none listed): one domain per rack, of the trays in it whose profile has "
        "gpu.nvlink_domain, named after the rack. A pattern {names, nodes, per_domain} deals "
        "nodes out in order.",
    )
    hosts: HostNetworking = Field(
        default_factory=HostNetworking,
        description="Host network configuration: whether clustergen configures the nodes' "
        "interfaces, and whether the management interface too.",
    )
