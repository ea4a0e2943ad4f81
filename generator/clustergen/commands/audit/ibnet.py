"""`ibnetdiscover` (rdma-core, infiniband-diags/ibnetdiscover.c), run from one node: the
fabric as it is cabled. A switch block starts

    Switch\t40 "S-0c42a10300a4b2c0"\t\t# "ib-leaf01" base port 0 lid 3 lmc 0

and lists its connected ports, one a line:

    [1]\t"H-b8cef603001a2b3c"[1](b8cef603001a2b3c) \t\t# "gpu01 mlx5_0" lid 11 4xHDR

The quoted text after `#` is the peer's node description: for an HCA the kernel's
default (mlx5_ib: the host name and the device, "gpu01 mlx5_0"), for a managed switch
its configured name. Only switch blocks are read: each HCA's cable is seen from the
switch end.

A node description names a node in one of these forms, which map to a name and a device:
`gpu01 mlx5_0` (rdma-core's rdma-ndd, "%h %d"), `gpu01 HCA-1` (MLNX_OFED's openibd: the
host and the HCA's number, not its device name), `gpu01` (a site's own), a managed
switch's `MF0;ib-leaf01:MQM8700/U1`. A description of several other words is a vendor's
default (`SwitchIB Mellanox Technologies`, `Sun DCS 36 QDR switch localhost`, a SHARP
`Mellanox Technologies Aggregation Node`): it names no node, so the node is named by its
GUID as ibnetdiscover quotes it (`S-e41d2d030003e470`), and two such switches stay two.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SWITCH = re.compile(r'^Switch\s+\d+\s+"([^"]*)"\s*#\s*"([^"]*)"')
_PORT = re.compile(r'^\[(\d+)\]\s+"([^"]*)"\[(\d+)\][^#]*#\s*"([^"]*)"')
# The RDMA device names of rdma-core's providers (mlx5_0, mlx5_bond_0, irdma0, bnxt_re0,
# hfi1_0, qib0, mthca0, efa_0, erdma_0, ionic_0, rxe0, siw0), and MLNX_OFED's HCA-N.
_DEVICE = re.compile(
    r"(?:mlx\d+_(?:bond_)?\d+|irdma\d+|bnxt_re\d+|hfi1_\d+|qib\d+|mthca\d+|efa_\d+"
    r"|erdma_\d+|ionic_\d+|rxe\w*|siw\w*|HCA-\d+)"
)


@dataclass(frozen=True)
class SeenCable:
    switch: str  # the switch's name, or its GUID where its description names none
    port: int
    peer: str  # the peer's name (a host or a switch), or its GUID
    peer_device: str  # the peer's RDMA device as its description names it, or ""


def node_name(description: str, guid: str) -> tuple[str, str]:
    """A node description's node name and device ("" where it names none)."""
    if description.startswith("MF0;"):
        name = description[4:].split(":", 1)[0]
        return (name or guid), ""
    words = description.split()
    if len(words) == 1:
        return words[0], ""
    if len(words) == 2 and _DEVICE.fullmatch(words[1]):
        return words[0], words[1]
    return guid, ""


def parse_ibnetdiscover(text: str) -> list[SeenCable]:
    cables: list[SeenCable] = []
    switch: str | None = None
    for line in text.splitlines():
        if line.startswith(("Switch", "Ca", "Rt")):
            match = _SWITCH.match(line)
            switch = node_name(match[2], match[1])[0] if match else None
            continue
        if switch is None or not line.startswith("["):
            continue
        port = _PORT.match(line)
        if port is None:
            continue
        peer, device = node_name(port[4], port[2])
        cables.append(SeenCable(switch, int(port[1]), peer, device))
    return cables
