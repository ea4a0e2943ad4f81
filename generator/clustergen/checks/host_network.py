"""Host network configuration (network.*.routes): each route reaches its next hop over
an interface of its own network (docs/networks.md#routes)."""

from __future__ import annotations

import ipaddress

from clustergen import codes
from clustergen.errors import Problem
from clustergen.resolve import ResolvedCluster

_ROUTED = ("management", "fabric", "storage", "frontend")


def routes(cluster: ResolvedCluster) -> list[Problem]:
    """A route's `via` lies inside its network's cidr (then in one rail or storage
    subnet of it): only an interface in the next hop's subnet can reach it."""
    network = cluster.spec.network
    problems = []
    for name in _ROUTED:
        section = getattr(network, name)
        if section is None:
            continue
        cidr = ipaddress.IPv4Network(section.cidr)
        for index, route in enumerate(section.routes):
            if ipaddress.IPv4Address(route.via) in cidr:
                continue
            problems.append(
                Problem(
                    codes.NETWORK_ROUTE_VIA_OUTSIDE,
                    ("network", name, "routes", index, "via"),
                    f"route to {route.to} via {route.via}: {route.via} is outside "
                    f"network.{name} ({section.cidr}), so no interface of that network "
                    "reaches it; give a next hop inside the network",
                )
            )
    return problems
