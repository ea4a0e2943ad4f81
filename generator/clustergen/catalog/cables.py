"""The cable class a fabric link needs: copper (passive DAC, active ACC) or optical.

The reach of copper at each rate comes from NVIDIA LinkX product specifications (the
cables are dual protocol: the same part serves InfiniBand and Ethernet of one lane
speed, "The DAC firmware supports both InfiniBand and Ethernet"):

- NDR / 400GbE to a node: MCP7Y00-Nxxx twin-port OSFP to 2x400G passive DAC splitter,
  1 to 3 m (ordering information); Active Copper Cables for 4 and 5 m (use cases).
  https://docs.nvidia.com/networking/display/mcp7y00nxxx800pub/ordering+information
- NDR / 400GbE between switches: MCP4Y10-Nxxx twin-port OSFP passive DAC, "0.5, 1, 1.5,
  and 2-meter lengths", to "link together two twin-port OSFP-based Quantum-2 InfiniBand
  or Spectrum-4 Ethernet switches ... up to 2-meters".
  https://docs.nvidia.com/networking/display/mcp4y10nxxx2x400pub
- HDR / 200GbE: MCP7Y60-Hxxx twin-port 2x200G to 2x QSFP56 DAC, "30AWG ... for 1 and
  1.5-meter lengths and thicker 26AWG for 2-meters" (no longer passive part).
  https://docs.nvidia.com/networking/display/MCP7Y60HXXX400pub
- EDR, XDR and 800GbE: no copper reach found in the documents read, so those links are
  given the optical class, the one that always works.

Past copper reach a link is optical: an active optical cable or a transceiver at each
end and fiber between (LinkX twin-port transceivers reach 50 m multimode and 100 m
single mode, MMA4Z00-NS / MMS4X00-NS). A leaf to spine or spine to core link leaves
the rack, so it is optical unless a length within switch-to-switch DAC reach is given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

Tier = Literal["node-leaf", "leaf-spine", "spine-core"]
TIERS: tuple[Tier, ...] = ("node-leaf", "leaf-spine", "spine-core")

DAC = "DAC"  # passive direct-attach copper
ACC = "ACC"  # active copper cable
OPTICAL = "optical"  # active optical cable, or transceivers and fiber

# Run from a node to a leaf in its own rack, assumed when no length is given: within
# the 2 m every rate with sourced copper reach allows.
IN_RACK_RUN_M = 2.0


@dataclass(frozen=True)
class CopperReach:
    node_passive_m: float  # passive DAC from a switch port to an HCA
    node_active_m: float | None  # active copper (ACC) to an HCA; None: none sourced
    switch_passive_m: float | None  # passive DAC between two switches; None: none sourced


_NDR = CopperReach(node_passive_m=3.0, node_active_m=5.0, switch_passive_m=2.0)
_HDR = CopperReach(node_passive_m=2.0, node_active_m=None, switch_passive_m=None)

COPPER_REACH: Mapping[str, CopperReach] = MappingProxyType(
    {"ndr": _NDR, "400g": _NDR, "hdr": _HDR, "200g": _HDR}
)


def cable_class(rate: str, tier: Tier, length_m: float | None = None) -> str:
    """DAC, ACC or optical for a link of the fabric rate on this tier. Without a length a
    node-leaf link is taken to run within the rack (IN_RACK_RUN_M) and a switch-switch
    link to leave it."""
    if tier not in TIERS:
        raise ValueError(f"tier '{tier}' is not one of {', '.join(TIERS)}")
    reach = COPPER_REACH.get(rate)
    if reach is None:
        return OPTICAL
    if tier != "node-leaf":
        switch_reach = reach.switch_passive_m
        if length_m is None or switch_reach is None or length_m > switch_reach:
            return OPTICAL
        return DAC
    run = IN_RACK_RUN_M if length_m is None else length_m
    if run <= reach.node_passive_m:
        return DAC
    if reach.node_active_m is not None and run <= reach.node_active_m:
        return ACC
    return OPTICAL
