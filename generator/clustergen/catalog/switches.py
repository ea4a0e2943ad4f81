"""Ports of the usual InfiniBand switch of each rate, assumed when a switch gives no `ports`.

Sources: NVIDIA (Mellanox) switch data sheets: SB7800 (EDR, 36 ports), QM8700/QM8790
(HDR, 40 ports), QM9700/QM9790 (NDR, 64 ports on 32 twin-port OSFP cages), Q3400
(XDR, 144 ports). Ethernet switches of one speed differ too much for a default.
"""

from __future__ import annotations

INFINIBAND_SWITCH_PORTS: dict[str, int] = {"edr": 36, "hdr": 40, "ndr": 64, "xdr": 144}
