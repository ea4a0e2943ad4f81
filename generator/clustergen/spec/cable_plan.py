"""The fabric's cabling, derived once: which node HCAs and switch uplinks each fabric switch
takes, port by port. The cable sheet, the fabric drawing, the port checks and the fabric's
resolved facts (resolve/fabric.py) read the same rows, so a port on a sheet is the port a
check judged."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from clustergen.model import Spec
from clustergen.spec.hosts import Host


class Cable(NamedTuple):
    """One fabric cable: a switch port to a node's HCA, or to another switch's port."""

    switch: str
    port: int
    peer: str
    peer_port: str  # the HCA, or the other switch's port number
    kind: str  # "node" or "uplink"
    beyond: bool  # the port number is past the switch's port count


@dataclass(frozen=True)
class SwitchPorts:
    index: int  # in network.fabric.switches
    name: str
    model: str | None
    ports: int | None  # given, or the usual switch of the rate's; None when unknown
    assumed: bool  # ports come from the rate's default
    hcas: tuple[tuple[str, int], ...]  # node -> HCAs cabled here, member order
    down: tuple[tuple[str, int], ...]  # child switch -> cables from it
    up: tuple[tuple[str, int], ...]  # parent switch -> cables to it
    rail: int | None = None  # a rail leaf's rail: one HCA of each node, that rail's

    @property
    def used(self) -> int:
        return (
            sum(n for _, n in self.hcas) + sum(n for _, n in self.down) + sum(n for _, n in self.up)
        )


def switch_ports(
    spec: Spec,
    radix_of: Callable[[str | None, str], int | None],
    hosts: Mapping[str, Host],
    switch_nodes: tuple[tuple[str, ...], ...],
    switch_children: tuple[tuple[str, ...], ...],
    default_ports: Mapping[str, int],
) -> tuple[SwitchPorts, ...]:
    """What each fabric switch has cabled to it: every fabric HCA of its nodes (a node that
    lists none has one), the uplinks of its child switches, and its own uplinks."""
    fabric = spec.network.fabric
    if fabric is None:
        return ()
    by_name = {switch.name: switch for switch in fabric.switches}
    parents: dict[str, list[str]] = {}
    for switch, children in zip(fabric.switches, switch_children, strict=True):
        for child in children:
            parents.setdefault(child, []).append(switch.name)
    default = default_ports.get(fabric.rate) if fabric.type == "infiniband" else None
    out = []
    for index, (switch, nodes, children) in enumerate(
        zip(fabric.switches, switch_nodes, switch_children, strict=True)
    ):
        hcas = tuple(
            (name, 1 if switch.rail is not None else max(1, len(host.hardware.fabric_hcas)))
            for name in nodes
            if (host := hosts.get(name)) is not None and host.profiled
        )
        down = tuple((child, by_name[child].uplinks) for child in children if child in by_name)
        up = tuple((parent, switch.uplinks) for parent in parents.get(switch.name, ()))
        out.append(
            SwitchPorts(
                index=index,
                name=switch.name,
                model=switch.model,
                ports=switch.ports or radix_of(switch.model, fabric.rate) or default,
                assumed=switch.ports is None
                and radix_of(switch.model, fabric.rate) is None
                and default is not None,
                hcas=hcas,
                down=down,
                up=up,
                rail=switch.rail,
            )
        )
    return tuple(out)


def cabled_hcas(host: Host, rail: int | None) -> list[str]:
    """The HCAs of `host` a leaf takes: its rail's compute HCA (named "railN" when the node
    has none of that number: a check reports it), or every fabric HCA."""
    profile = host.hardware
    if rail is not None:
        rails = profile.compute_hcas()
        return [rails[rail - 1][0] if rail <= len(rails) else f"rail{rail}"]
    return profile.fabric_hcas or [profile.interfaces.fabric or "fabric"]


def cables(
    spec: Spec, hosts: Mapping[str, Host], ports: tuple[SwitchPorts, ...]
) -> Iterator[Cable]:
    """Every cable once, by switch: its nodes' HCAs from port 1 in member and HCA order, then
    its child switches' uplinks, then its own uplinks; a switch-to-switch cable is listed at
    the child, with the parent's port it lands on. Each is made as it is read: a 65,536-node
    rail fabric has 1.6 million."""
    parent_port: dict[tuple[str, str, int], int] = {}
    for switch in ports:
        port = sum(n for _, n in switch.hcas)
        for child, count in switch.down:
            for k in range(count):
                port += 1
                parent_port[(child, switch.name, k)] = port
    cabled: dict[tuple[str, int | None], list[str]] = {}  # the HCAs, once per profile
    for switch in ports:
        # The switch's last port; with none known, no cable is beyond it.
        last = switch.ports if switch.ports is not None else math.inf
        port = 0
        for node, _count in switch.hcas:
            host = hosts[node]
            key = (host.hardware_name, switch.rail)
            if key not in cabled:
                cabled[key] = cabled_hcas(host, switch.rail)
            for hca in cabled[key]:
                port += 1
                yield Cable(switch.name, port, node, hca, "node", port > last)
        port += sum(n for _, n in switch.down)
        for parent, count in switch.up:
            for k in range(count):
                port += 1
                landing = parent_port[(switch.name, parent, k)]
                yield Cable(switch.name, port, parent, str(landing), "uplink", port > last)
