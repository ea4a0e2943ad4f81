"""Fabric switch models clustergen knows, and the cable class a link of the fabric needs.

`SWITCH_MODELS` holds one `CatalogSwitch` per model: its radix at the rates it runs
(ports counted at that rate: a Quantum-2 twin-port OSFP cage carries two NDR ports),
the in-network reduction it offers, its height and its data sheet. A
`network.fabric.switches[].model` naming a model here gives the switch its radix;
any other model string stays allowed and gives none (`ports` overrides both).

Each model's `source` is the NVIDIA, Arista or Cisco document its figures come from;
docs/fabric.md ("Switch catalog") lists them. `max_watts` stays None where the
document read gives no system maximum.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from clustergen.model.network import INFINIBAND_RATES, LINK_GBITS

Technology = Literal["infiniband", "ethernet"]


@dataclass(frozen=True)
class PortMode:
    """How many ports a switch offers at one fabric rate, and how (native or split)."""

    rate: str  # a fabric rate name: edr | hdr | ndr | xdr | 100g | 200g | 400g | 800g
    ports: int
    how: str


@dataclass(frozen=True)
class CatalogSwitch:
    key: str  # lowercase model name, as a spec writes it: "qm9700"
    name: str  # display name: "NVIDIA Quantum-2 QM9700"
    technology: Technology
    modes: tuple[PortMode, ...]  # the first is the native rate of the ports
    cages: str  # the physical connectors, and how ports are counted on them
    sharp: str | None  # in-network reduction (SHARP generation); None: none
    nccl_sharp: bool  # NCCL's SHARP plugin (CollNet) can use it: Quantum (HDR) and later
    rack_units: int | None  # None: no source read gives the height (SN6810)
    max_watts: int | None  # system maximum from the data sheet; None: not given there
    source: str  # data sheet or hardware manual: URL (title)
    aliases: tuple[str, ...] = ()  # other spellings: ordering part numbers, family names

    @property
    def rate(self) -> str:
        """The native rate of the ports."""
        return self.modes[0].rate

    @property
    def ports(self) -> int:
        """The radix at the native rate."""
        return self.modes[0].ports

    @property
    def port_gbits(self) -> int:
        return LINK_GBITS[self.rate]

    def ports_at(self, rate: str) -> int | None:
        """Ports at a fabric rate, or None when the source gives no such mode."""
        return next((mode.ports for mode in self.modes if mode.rate == rate), None)


_QM97_MANUAL = (
    "https://docs.nvidia.com/networking/display/QM97X0PUB/Interfaces (QM97XX 1U NDR 400Gbps "
    "InfiniBand Switch Systems User Manual: 'Each OSFP port consists of 2 logical InfiniBand "
    "ports'); HDR mode: https://docs.nvidia.com/networking/display/MCP7Y60HXXX400pub "
    "(MCP7Y60 2x200G HDR splitter for Quantum-2 cages)"
)
_QM87_MANUAL = (
    "https://docs.nvidia.com/networking/display/QM87XX "
    "(QM87xx 1U HDR 200Gb/s InfiniBand Switch Systems User Manual)"
)
_XDR_MANUAL = (
    "https://docs.nvidia.com/networking/display/XDRSwitchesHWUM "
    "(Q3200-RA/Q3400-RA XDR 800Gb/s InfiniBand Switch Systems User Manual)"
)
_SN5000_MANUAL = (
    "https://docs.nvidia.com/networking/display/sn5000/data+interfaces "
    "(NVIDIA Spectrum-4 SN5000 2U Switch Systems Hardware User Manual, Data Interfaces)"
)
_QM97_CAGES = "32 twin-port OSFP cages, 2 NDR ports each"
_QM87_CAGES = "40 QSFP56 cages; 80 x HDR100 with 1:2 splitter cables"
_SHARP_V2 = "SHARPv2"
_SHARP_V3 = "SHARPv3"


def _quantum2(key: str, unmanaged: bool) -> CatalogSwitch:
    return CatalogSwitch(
        key=key,
        name=f"NVIDIA Quantum-2 {key.upper()}" + (" (externally managed)" if unmanaged else ""),
        technology="infiniband",
        modes=(
            PortMode("ndr", 64, "native: 2 x NDR 400G per twin-port OSFP cage"),
            PortMode("hdr", 64, "1:2 splitter, 2 x HDR 200G (4 x 50G lanes) per cage"),
        ),
        cages=_QM97_CAGES,
        sharp=_SHARP_V3,
        nccl_sharp=True,
        rack_units=1,
        max_watts=None,
        source=_QM97_MANUAL,
        aliases=(f"m{key}",),
    )


def _quantum(key: str, unmanaged: bool) -> CatalogSwitch:
    return CatalogSwitch(
        key=key,
        name=f"NVIDIA Quantum {key.upper()}" + (" (externally managed)" if unmanaged else ""),
        technology="infiniband",
        modes=(PortMode("hdr", 40, "native: one HDR 200G port per QSFP56 cage"),),
        cages=_QM87_CAGES,
        sharp=_SHARP_V2,
        nccl_sharp=True,
        rack_units=1,
        max_watts=None,
        source=_QM87_MANUAL,
        aliases=(f"m{key}",),
    )


def _infiniband_models() -> tuple[CatalogSwitch, ...]:
    sb7800 = CatalogSwitch(
        key="sb7800",
        name="Mellanox Switch-IB 2 SB7800",
        technology="infiniband",
        modes=(PortMode("edr", 36, "native: one EDR 100G port per QSFP28 cage"),),
        cages="36 QSFP28 cages",
        # Switch-IB 2 is not in the SHARP release's device table (NVIDIA Quantum, Quantum-2,
        # Quantum-3: SHARP 3.13 'General Information'), and NCCL's SHARP plugin needs
        # 'NVIDIA Quantum HDR switch and above' (SHARP 3.9.1 'Using NVIDIA SHARP with NCCL').
        sharp=None,
        nccl_sharp=False,
        rack_units=1,
        max_watts=None,
        source=(
            "https://www.easymanua.ls/mellanox-technologies/msb7890-es2f/manual?p=42 "
            "(Mellanox SB7700/SB7790/SB7800/SB7890 1U EDR switch user manual: QSFP28 "
            "data interfaces, EDR 100Gb/s)"
        ),
        aliases=("msb7800",),
    )
    # FDR (56 Gb/s), the SwitchX-2 fabrics of ConnectX-3 sites. Mellanox's data sheet was
    # not found: the port count and rate are Mellanox's own MIB's words, the height a
    # device library's [2nd].
    sx6036 = CatalogSwitch(
        key="sx6036",
        name="Mellanox SwitchX-2 SX6036",
        technology="infiniband",
        modes=(PortMode("fdr", 36, "native: one FDR 56G port per QSFP cage"),),
        cages="36 QSFP cages",
        # SHARP came with Switch-IB 2; SwitchX-2 is in no SHARP release's device table.
        sharp=None,
        nccl_sharp=False,
        rack_units=1,
        max_watts=None,
        source=(
            "https://raw.githubusercontent.com/netdisco/netdisco-mibs/"
            "e817a0abd518ad314651ea7bf4490926b1e4cf69/mellanox/MELLANOX-PRODUCTS-MIB.mib "
            "(MELLANOX-PRODUCTS-MIB, sx6036: 'Mellanox SX6036, 36-Port FDR/FDR10 Switch "
            "System'); height [2nd]: https://github.com/netbox-community/devicetype-library/"
            "blob/4b84a3ae921f0b2b0db430845a553509ceddfcc3/device-types/Mellanox/SX6036.yml "
            "(u_height 1, 36 x 56G QSFP+)"
        ),
        aliases=("msx6036", "msx6036f"),
    )
    q3400 = CatalogSwitch(
        key="q3400",
        name="NVIDIA Quantum-X800 Q3400-RA",
        technology="infiniband",
        modes=(PortMode("xdr", 144, "native: 2 x XDR 800G per twin-port 1.6T OSFP cage"),),
        cages="72 twin-port OSFP cages, 2 XDR ports each",
        sharp="SHARPv4",
        nccl_sharp=True,
        rack_units=4,
        max_watts=None,
        source=_XDR_MANUAL,
        aliases=("q3400-ra", "quantum-x800"),
    )
    return (
        sx6036,
        sb7800,
        _quantum("qm8700", unmanaged=False),
        _quantum("qm8790", unmanaged=True),
        _quantum2("qm9700", unmanaged=False),
        _quantum2("qm9790", unmanaged=True),
        q3400,
    )


def _spectrum_models() -> tuple[CatalogSwitch, ...]:
    sn5600 = CatalogSwitch(
        key="sn5600",
        name="NVIDIA Spectrum-4 SN5600",
        technology="ethernet",
        modes=(
            PortMode("800g", 64, "native: one 800GbE port per OSFP cage (8 x 100G lanes)"),
            PortMode("400g", 128, "1:2 split, 2 x 400GbE per cage"),
            PortMode("200g", 256, "1:4 split, 4 x 200GbE per cage"),
            PortMode("100g", 256, "split, 256 x 100GbE"),
        ),
        cages="64 OSFP cages",
        sharp=None,
        nccl_sharp=False,
        rack_units=2,
        max_watts=None,
        source=_SN5000_MANUAL,
        aliases=("msn5600",),
    )
    sn5400 = CatalogSwitch(
        key="sn5400",
        name="NVIDIA Spectrum-4 SN5400",
        technology="ethernet",
        modes=(
            PortMode("400g", 64, "native: one 400GbE port per QSFP-DD cage (8 x 50G lanes)"),
            PortMode("200g", 128, "1:2 split, 2 x 200GbE per cage"),
            PortMode("100g", 256, "1:4 split, 4 x 100GbE per cage"),
        ),
        cages="64 QSFP-DD cages",
        sharp=None,
        nccl_sharp=False,
        rack_units=2,
        max_watts=None,
        source=_SN5000_MANUAL,
        aliases=("msn5400",),
    )
    sn4700 = CatalogSwitch(
        key="sn4700",
        name="NVIDIA Spectrum-3 SN4700",
        technology="ethernet",
        modes=(
            PortMode("400g", 32, "native: one 400GbE port per QSFP-DD cage"),
            PortMode("200g", 64, "1:2 split, 2 x 200GbE per cage"),
            PortMode("100g", 128, "1:4 split, 4 x 100GbE per cage"),
        ),
        cages="32 QSFP-DD cages",
        sharp=None,
        nccl_sharp=False,
        rack_units=1,
        max_watts=None,
        source=(
            "https://docs.nvidia.com/networking/display/SN4000 (NVIDIA Spectrum-3 SN4000 1U "
            "and 2U Switch Systems Hardware User Manual: SN4700, 32 x QSFP-DD 400GbE, 1U)"
        ),
        aliases=("msn4700",),
    )
    return (sn5600, sn5400, sn4700, _spectrum6_sn6810())


def _spectrum6_sn6810() -> CatalogSwitch:
    # Spectrum-6 (Spectrum-X Ethernet for Rubin): its ports from NVIDIA's own platform
    # definition in SONiC; no NVIDIA hardware manual for it was found, so its height and
    # maximum power are not given (docs/fabric.md).
    return CatalogSwitch(
        key="sn6810",
        name="NVIDIA Spectrum-6 SN6810",
        technology="ethernet",
        modes=(
            PortMode("800g", 128, "native: 128 x 800GbE (4 lanes of 200G each, 512 in all)"),
            PortMode("400g", 256, "1:2 split, 2 x 400GbE per port"),
            PortMode("200g", 512, "1:4 split, 4 x 200GbE per port"),
        ),
        cages="32 co-packaged optical ports of 4 x 800GbE (102.4 Tb/s), liquid-cooled, busbar-fed",
        sharp=None,
        nccl_sharp=False,
        rack_units=None,
        max_watts=None,
        source=(
            "https://github.com/sonic-net/sonic-buildimage/blob/6d2cc718/device/mellanox/"
            "x86_64-nvidia_sn6810_ld-r0/platform.json (NVIDIA's SONiC platform definition "
            "of the SN6810-LD: 128 interfaces of 4 lanes on 32 ports, breakouts 1x800G, "
            "2x400G, 4x200G; no fans or PSUs, a power distribution board and leak sensors)"
        ),
        aliases=("sn6810-ld", "msn6810"),
    )


def _other_ethernet_models() -> tuple[CatalogSwitch, ...]:
    arista = CatalogSwitch(
        key="7060dx5-64s",
        name="Arista 7060DX5-64S",
        technology="ethernet",
        modes=(PortMode("400g", 64, "native: one 400GbE port per QSFP-DD cage"),),
        cages="64 QSFP-DD cages (Broadcom Tomahawk 4, 25.6 Tb/s)",
        sharp=None,
        nccl_sharp=False,
        rack_units=2,
        max_watts=None,
        source=(
            "https://www.arista.com/assets/data/pdf/Datasheets/7060X5-Datasheet.pdf "
            "(Arista 7060X5 Series 400G Data Center Switches Data Sheet)"
        ),
        aliases=("dcs-7060dx5-64s", "7060x5-64"),
    )
    cisco = CatalogSwitch(
        key="n9k-c9364d-gx2a",
        name="Cisco Nexus 9364D-GX2A",
        technology="ethernet",
        modes=(PortMode("400g", 64, "native: one 400GbE port per QSFP-DD cage"),),
        cages="64 QSFP-DD cages (25.6 Tb/s)",
        sharp=None,
        nccl_sharp=False,
        rack_units=2,
        max_watts=None,
        source=(
            "https://www.cisco.com/c/en/us/products/collateral/switches/nexus-9000-series-"
            "switches/nexus-9300-gx2-series-fixed-switches-ds.html (Cisco Nexus 9300-GX2 "
            "Series Fixed Switches Data Sheet)"
        ),
        aliases=("9364d-gx2a", "nexus-9364d-gx2a"),
    )
    return (arista, cisco)


SWITCH_MODELS: Mapping[str, CatalogSwitch] = MappingProxyType(
    {
        model.key: model
        for model in _infiniband_models() + _spectrum_models() + _other_ethernet_models()
    }
)

_BY_SPELLING: Mapping[str, CatalogSwitch] = MappingProxyType(
    {spelling: model for model in SWITCH_MODELS.values() for spelling in model.aliases}
    | dict(SWITCH_MODELS)
)

# The usual switch of each InfiniBand rate, assumed when a switch names no model and
# gives no `ports`: SwitchX-2 (FDR), Switch-IB 2 (EDR), Quantum (HDR), Quantum-2 (NDR),
# Quantum-X800 (XDR). QDR has none (no source read gives a QDR switch's height), and
# Ethernet switches of one speed differ too much for a default.
USUAL_INFINIBAND_SWITCH: Mapping[str, str] = MappingProxyType(
    {"fdr": "sx6036", "edr": "sb7800", "hdr": "qm8700", "ndr": "qm9700", "xdr": "q3400"}
)
INFINIBAND_SWITCH_PORTS: dict[str, int] = {
    rate: SWITCH_MODELS[key].ports for rate, key in USUAL_INFINIBAND_SWITCH.items()
}


def catalog_switch(model: str | None) -> CatalogSwitch | None:
    """The catalog model a spec's `model` string names (any case; an NVIDIA ordering part
    number such as MQM9700-NS2F finds its model), or None."""
    if model is None:
        return None
    spelling = model.strip().lower()
    found = _BY_SPELLING.get(spelling)
    if found is None and "-" in spelling:
        found = _BY_SPELLING.get(spelling.split("-", 1)[0])
    return found


def rate_technology(rate: str) -> Technology:
    return "infiniband" if rate in INFINIBAND_RATES else "ethernet"


def switch_radix(model: str | None, fabric_rate: str) -> int | None:
    """Ports of the named catalog model at the fabric's rate (SN5600: 128 at 400g, 64 at
    800g), or None: no such model, another technology, or no mode at that rate."""
    found = catalog_switch(model)
    if found is None or found.technology != rate_technology(fabric_rate):
        return None
    return found.ports_at(fabric_rate)
