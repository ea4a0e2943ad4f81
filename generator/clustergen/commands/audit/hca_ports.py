"""The node's RDMA ports: `ibstat` or `ibv_devinfo -v`.

ibstat (rdma-core, infiniband-diags/ibstat.c) prints per device `CA 'mlx5_0'`, then per
port `\tPort 1:` with `\t\tState: Active`, `\t\tPhysical state: LinkUp`, `\t\tRate: 200`
(Gb/s) and `\t\tLink layer: InfiniBand` (or Ethernet).

ibv_devinfo -v (rdma-core, libibverbs/examples/devinfo.c) prints per device
`hca_id:\tmlx5_0`, then per port `\t\tport:\t1` with `state:\t\t\tPORT_ACTIVE (4)`,
`link_layer:\t\tInfiniBand`, `active_width:\t\t4X (2)` and `active_speed:\t\t50.0 Gbps (64)`:
the rate is width x lane speed (4 x 50 = HDR 200).

ibstatus (infiniband-diags' script, reading /sys/class/infiniband) prints per port
`Infiniband device 'mlx5_0' port 1 status:` then `\tstate:\t\t 4: ACTIVE`,
`\trate:\t\t 200 Gb/sec (4X HDR)` and `\tlink_layer:\t InfiniBand`; it reads sysfs
alone, so it reports ports where ibstat fails (on some virtual HCAs ibstat exits 255).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_WIDTH = re.compile(r"^(\d+)X")
_SPEED = re.compile(r"^([0-9.]+)\s*Gbps")
_PORT = re.compile(r"Port (\d+):")
_IBSTATUS_PORT = re.compile(r"^Infiniband device '([^']+)' port (\d+) status:")
_IBSTATUS_RATE = re.compile(r"^([0-9.]+) Gb/sec")


@dataclass(frozen=True)
class RdmaPort:
    device: str
    port: int
    state: str  # active, down, init, armed (lower case, as either tool names it)
    rate_gbits: float | None
    link_layer: str  # InfiniBand or Ethernet


def parse_ibstat(text: str) -> list[RdmaPort]:
    ports: list[RdmaPort] = []
    device, port = "", 0
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("CA '"):
            _add_ibstat(ports, device, port, fields)
            device, port, fields = line[4:].rstrip().rstrip("'"), 0, {}
            continue
        # What is before the first ':' of the line; a "Port N:" line is one too.
        key, colon, value = line.partition(":")
        if not colon:
            continue
        key = key.strip()
        if key.startswith("Port ") and (match := _PORT.fullmatch(line.strip())):
            _add_ibstat(ports, device, port, fields)
            port, fields = int(match[1]), {}
        elif port:
            fields[key] = value.strip()
    _add_ibstat(ports, device, port, fields)
    return ports


def _add_ibstat(ports: list[RdmaPort], device: str, port: int, fields: dict[str, str]) -> None:
    if not device or not port:
        return
    state = fields.get("State", "").lower()
    state = "init" if state.startswith("init") else state
    try:
        rate = float(fields.get("Rate", ""))
    except ValueError:
        rate = None
    ports.append(RdmaPort(device, port, state, rate, fields.get("Link layer", "InfiniBand")))


def parse_ibv_devinfo(text: str) -> list[RdmaPort]:
    ports: list[RdmaPort] = []
    device, port = "", 0
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.strip().partition(":")
        key, value = key.strip(), value.strip()
        if key == "hca_id":
            _add_devinfo(ports, device, port, fields)
            device, port, fields = value, 0, {}
        elif key == "port" and value.isdigit():
            _add_devinfo(ports, device, port, fields)
            port, fields = int(value), {}
        elif port:
            fields[key] = value
    _add_devinfo(ports, device, port, fields)
    return ports


def _add_devinfo(ports: list[RdmaPort], device: str, port: int, fields: dict[str, str]) -> None:
    if not device or not port:
        return
    state = fields.get("state", "").split()[0:1]
    name = state[0].removeprefix("PORT_").lower() if state else ""
    width = _WIDTH.match(fields.get("active_width", ""))
    speed = _SPEED.match(fields.get("active_speed", ""))
    rate = int(width[1]) * float(speed[1]) if width and speed else None
    ports.append(RdmaPort(device, port, name, rate, fields.get("link_layer", "InfiniBand")))


def parse_ibstatus(text: str) -> list[RdmaPort]:
    ports: list[RdmaPort] = []
    device, port = "", 0
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if match := _IBSTATUS_PORT.match(line):
            _add_ibstatus(ports, device, port, fields)
            device, port, fields = match[1], int(match[2]), {}
        elif port and ":" in line:
            key, _, value = line.strip().partition(":")
            fields[key.strip()] = value.strip()
    _add_ibstatus(ports, device, port, fields)
    return ports


def _add_ibstatus(ports: list[RdmaPort], device: str, port: int, fields: dict[str, str]) -> None:
    if not device or not port:
        return
    state = fields.get("state", "").partition(":")[2].strip().lower()  # "4: ACTIVE"
    rate = _IBSTATUS_RATE.match(fields.get("rate", ""))
    ports.append(
        RdmaPort(
            device,
            port,
            state,
            float(rate[1]) if rate else None,
            fields.get("link_layer", "InfiniBand"),
        )
    )
