"""Every node of the spec, expanded from its group: name, profile, roles and addresses.

The checks and the resolved cluster both read this table; it is computed from the
model alone. A group's addresses are its first address plus the node's position in the group.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from clustergen.model import Spec
from clustergen.model.common import expand_hostlist
from clustergen.model.hardware import HardwareProfile

ADDRESS_KINDS = ("management_ip", "bmc_ip", "fabric_ip")


@dataclass(frozen=True)
class Host:
    name: str
    group_index: int
    position: int  # place within its group, 0-based
    hardware_name: str
    hardware: HardwareProfile
    roles: tuple[str, ...]
    management_ip: str | None
    bmc_ip: str | None
    fabric_ip: str | None

    @property
    def is_slurm_compute(self) -> bool:
        return "compute" in self.roles

    def address(self, kind: str) -> str | None:
        value: str | None = getattr(self, kind)
        return value


def nth_address(first: str, offset: int) -> str | None:
    """first + offset, or None past the end of the IPv4 space."""
    number = int(ipaddress.IPv4Address(first)) + offset
    return _dotted(number) if number <= _LAST_IPV4 else None


_LAST_IPV4 = (1 << 32) - 1


def _dotted(number: int) -> str:
    return f"{number >> 24}.{(number >> 16) & 255}.{(number >> 8) & 255}.{number & 255}"


# A node group may name a profile that does not exist; references.node_groups reports
# it and the spec is invalid, so no family ever sees such a host. While the checks
# run, its profile is one with no fields set: reading any of them fails loudly, as
# reading an invalid section does.
_UNKNOWN_PROFILE = HardwareProfile.model_construct()


def expand_hosts(spec: Spec) -> list[Host]:
    hosts = []
    for group_index, group in enumerate(spec.nodes):
        # Each group's first addresses are parsed once; the nth host adds n.
        firsts = {
            kind: int(ipaddress.IPv4Address(first))
            for kind in ADDRESS_KINDS
            if (first := getattr(group, kind))
        }
        for position, name in enumerate(expand_hostlist(group.names)):
            addresses = {
                kind: _dotted(firsts[kind] + position)
                if kind in firsts and firsts[kind] + position <= _LAST_IPV4
                else None
                for kind in ADDRESS_KINDS
            }
            hosts.append(
                Host(
                    name=name,
                    group_index=group_index,
                    position=position,
                    hardware_name=group.hardware,
                    hardware=spec.hardware.get(group.hardware, _UNKNOWN_PROFILE),
                    roles=tuple(group.roles),
                    **addresses,
                )
            )
    return hosts


def hosts_by_name(hosts: list[Host]) -> dict[str, Host]:
    """First occurrence wins; duplicates are reported by the names check."""
    table: dict[str, Host] = {}
    for host in hosts:
        table.setdefault(host.name, host)
    return table
