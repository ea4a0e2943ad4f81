"""`ibnetdiscover` (rdma-core, infiniband-diags/ibnetdiscover.c), run from one node: the
fabric as it is cabled. A switch block starts

    Switch\t40 "S-0c42a10300a4b2c0"\t\t# "ib-leaf01" base port 0 lid 3 lmc 0

and lists its connected ports, one a line:

    [1]\t"H-b8cef603001a2b3c"[1](b8cef603001a2b3c) \t\t# "gpu01 mlx5_0" lid 11 4xHDR

The quoted text after `#` is the peer's node description: for an HCA the kernel's
default (mlx5_ib: the host name and the device, "gpu01 mlx5_0"), for a managed switch
its configured name. Only switch blocks are read: each HCA's cable is seen from the
switch end.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SWITCH = re.compile(r'^Switch\s+\d+\s+"[^"]*"\s*#\s*"([^"]*)"')
_PORT = re.compile(r'^\[(\d+)\]\s+"([^"]*)"\[(\d+)\][^#]*#\s*"([^"]*)"')


@dataclass(frozen=True)
class SeenCable:
    switch: str
    port: int
    peer: str  # the peer's node description's first word (the host or switch name)
    peer_device: str  # its second word (the HCA), or ""


def parse_ibnetdiscover(text: str) -> list[SeenCable]:
    cables: list[SeenCable] = []
    switch: str | None = None
    for line in text.splitlines():
        if line.startswith(("Switch", "Ca", "Rt")):
            match = _SWITCH.match(line)
            switch = match[1].split()[0] if match and match[1].split() else None
            continue
        if switch is None or not line.startswith("["):
            continue
        port = _PORT.match(line)
        if port is None:
            continue
        words = port[4].split()
        cables.append(
            SeenCable(
                switch,
                int(port[1]),
                words[0] if words else port[2],
                words[1] if len(words) > 1 else "",
            )
        )
    return cables
