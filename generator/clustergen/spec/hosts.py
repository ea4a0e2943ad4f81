"""Every node of the spec, expanded from its group: name, profile, roles and addresses.

The checks and the resolved cluster both read this table; it is computed from the
model alone. A group's addresses are its first address plus the node's position in the group.
The addresses of a node's further interfaces (one per rail, per storage HCA) are its
first address on that network plus a whole rail subnet per interface
(`Host.rail_addresses`, `Host.storage_addresses`; docs/networks.md): they need the
network's rail_prefix, so they are computed from it on demand, never stored per host.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import hostlist

from clustergen.model import Spec
from clustergen.model.common import expand_hostlist
from clustergen.model.hardware import HardwareProfile
from clustergen.model.network import EthernetNetwork, Fabric
from clustergen.model.storage import lnet_over_ethernet

ADDRESS_KINDS = ("management_ip", "bmc_ip", "fabric_ip", "storage_ip", "frontend_ip")


class InterfaceAddress(NamedTuple):
    """One interface's address: its netdev, the address and the prefix length of its
    (rail) subnet, as `ip address` writes it: 10.20.0.11/19. (A named tuple: a 16k-node
    cluster has 131,072 rail addresses, and a tuple is the cheapest record to make.)"""

    netdev: str
    address: str
    prefix: int

    def __str__(self) -> str:
        return f"{self.address}/{self.prefix}"


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
    storage_ip: str | None
    frontend_ip: str | None

    @property
    def profiled(self) -> bool:
        """Whether the node names a hardware profile the spec defines (the checks report
        one that it does not; until then the node has an empty stand-in profile)."""
        return self.hardware is not _UNKNOWN_PROFILE

    @property
    def is_slurm_compute(self) -> bool:
        return "compute" in self.roles

    def lnet_address(self, net: str) -> str | None:
        """The address of the node's NID on LNet network `net`: its storage_ip (the first
        storage interface) when its profile has storage interfaces, else its fabric_ip;
        on a tcp network, a node whose profile has no fabric interface takes its
        management_ip (LNet over the management Ethernet; docs/lustre.md). LNet's discovery
        finds a multi-rail peer's other NIDs from it."""
        if self.storage_netdevs:
            return self.storage_ip
        fabric = self.hardware.interfaces.fabric if self.profiled else None
        if fabric is None and self.fabric_ip is None and lnet_over_ethernet(net):
            return self.management_ip
        return self.fabric_ip

    @property
    def storage_netdevs(self) -> list[str]:
        """The profile's interfaces.storage (none while the profile is unknown)."""
        return self.hardware.interfaces.storage if self.profiled else []

    def address(self, kind: str) -> str | None:
        value: str | None = getattr(self, kind)
        return value

    def rail_addresses(self, fabric: Fabric | None) -> tuple[InterfaceAddress, ...]:
        """Each of interfaces.rails with its address, in rail order, when the fabric has a
        rail_prefix: rail r is fabric_ip + (r - 1) x 2^(32 - rail_prefix). Without one, or
        without fabric_ip, none (the node's one fabric_ip is on interfaces.fabric)."""
        if fabric is None or fabric.rail_prefix is None or not self.profiled:
            return ()
        return _per_subnet(self.fabric_ip, self.hardware.interfaces.rails, fabric.rail_prefix)

    def fabric_addresses(self, fabric: Fabric | None) -> tuple[InterfaceAddress, ...]:
        """Every compute-fabric interface with its address: each rail's (rail_addresses),
        else the one fabric_ip on interfaces.fabric, in rail 1's subnet (the cidr without
        rail_prefix)."""
        rails = self.rail_addresses(fabric)
        netdev = self.hardware.interfaces.fabric if self.profiled else None
        if rails or fabric is None or netdev is None:
            return rails
        prefix = fabric.rail_prefix or _prefix_of(fabric.cidr)
        return _per_subnet(self.fabric_ip, [netdev], prefix)

    def storage_addresses(self, storage: Fabric | None) -> tuple[InterfaceAddress, ...]:
        """Each of interfaces.storage with its address: the first at storage_ip, storage
        interface j (0-based) at storage_ip + j x 2^(32 - rail_prefix). Without a
        rail_prefix only the first has one (the checks refuse several storage interfaces
        then: network.storage-needs-rail-prefix)."""
        netdevs = self.storage_netdevs
        if storage is None:
            return ()
        if storage.rail_prefix is None:
            return _per_subnet(self.storage_ip, netdevs[:1], _prefix_of(storage.cidr))
        return _per_subnet(self.storage_ip, netdevs, storage.rail_prefix)

    def frontend_address(self, frontend: EthernetNetwork | None) -> InterfaceAddress | None:
        """interfaces.frontend with frontend_ip, when the node has both."""
        netdev = self.hardware.interfaces.frontend if self.profiled else None
        if frontend is None or netdev is None or self.frontend_ip is None:
            return None
        return InterfaceAddress(netdev, self.frontend_ip, _prefix_of(frontend.cidr))


def _prefix_of(cidr: str) -> int:
    return int(cidr.rpartition("/")[2])


def _per_subnet(
    first: str | None, netdevs: Sequence[str], prefix: int
) -> tuple[InterfaceAddress, ...]:
    """netdev j at first + j x 2^(32 - prefix), for the netdevs whose address exists."""
    if first is None or not netdevs:
        return ()
    a, b, c, d = first.split(".")  # an IPv4 address: the spec's syntax checked it
    start, step = (int(a) << 24) | (int(b) << 16) | (int(c) << 8) | int(d), 1 << (32 - prefix)
    fits = min(len(netdevs), (_LAST_IPV4 - start) // step + 1)
    return tuple(
        [InterfaceAddress(netdevs[j], _dotted(start + j * step), prefix) for j in range(fits)]
    )


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
        hardware = spec.hardware.get(group.hardware, _UNKNOWN_PROFILE)
        roles = tuple(group.roles)
        for position, name in enumerate(expand_hostlist(group.names)):
            addresses: dict[str, str | None] = dict.fromkeys(ADDRESS_KINDS)
            for kind, first in firsts.items():
                if first + position <= _LAST_IPV4:
                    addresses[kind] = _dotted(first + position)
            hosts.append(
                Host(
                    name=name,
                    group_index=group_index,
                    position=position,
                    hardware_name=group.hardware,
                    hardware=hardware,
                    roles=roles,
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


# A name ending in a number: its head and the digits (gpu08 -> gpu, 08).
NUMBERED_NAME = re.compile(r"^(.*?)([0-9]+)$")


@dataclass(frozen=True)
class NameRange:
    """Names `prefix` + a `width`-digit number from low to high: gpu[01-08]."""

    prefix: str
    width: int
    low: int
    high: int


def name_ranges(names: Sequence[str]) -> tuple[list[NameRange], list[str]]:
    """Numbered names as ranges of consecutive numbers per prefix and width, in order of
    first appearance; the names without a trailing number apart."""
    numbers: dict[tuple[str, int], list[int]] = {}
    plain = []
    for name in names:
        match = NUMBERED_NAME.match(name)
        if match is None:
            plain.append(name)
        else:
            numbers.setdefault((match[1], len(match[2])), []).append(int(match[2]))
    ranges = []
    for (prefix, width), found in numbers.items():
        ordered = sorted(set(found))
        start = previous = ordered[0]
        for number in [*ordered[1:], None]:
            if number is not None and number == previous + 1:
                previous = number
                continue
            ranges.append(NameRange(prefix, width, start, previous))
            if number is not None:
                start = previous = number
    return ranges, plain


def compress(names: Sequence[str]) -> str:
    """Slurm hostlist of names, e.g. gpu[01-08], exactly as python-hostlist writes it.

    The common cases are folded here in one pass: names of one prefix and one number
    width, or several such prefixes with no digit in them plus names with no digit at
    all (gpu[00001-16384],slurm-head). python-hostlist is slow on thousands of names
    and handles every other case.
    """
    pieces = _fold(names)
    if pieces is None:
        folded = str(hostlist.collect_hostlist(list(names)))
        if _INNER_RANGE.search(folded) is None:
            return folded
        # python-hostlist folds numbers inside a name (su[1-4]-leaf1), which Slurm reads
        # otherwise: fold only each name's last number, one prefix and width at a time.
        return fold_last_numbers(names)
    # python-hostlist's second pass sees every piece as a name without a number
    # (no prefix has a digit) and sorts them as strings.
    return ",".join(sorted(pieces))


def fold_last_numbers(names: Sequence[str]) -> str:
    """A Slurm hostlist of names that differ only in their last number, fast: each prefix
    and number width's names folded on their last number, in the order the prefixes first
    come (gpu[01-03,07],su001-r1; a name without a number as it is). Unlike compress, it
    never sorts prefixes as python-hostlist does."""
    groups: dict[tuple[str, int], set[int]] = {}
    for name in names:
        match = _PREFIX_AND_NUMBER.fullmatch(name)
        if match is None:
            groups.setdefault((name, -1), set())
        else:
            groups.setdefault((match[1], len(match[2])), set()).add(int(match[2]))
    pieces = []
    for (prefix, width), numbers in groups.items():
        if width < 0:
            pieces.append(prefix)
            continue
        pieces.append(_fold_numbers(prefix, sorted(numbers), width))
    return ",".join(pieces)


_INNER_RANGE = re.compile(r"\][^,\[]")  # a range that does not end its name
_DIGIT = re.compile(r"[0-9]")
_PREFIX_AND_NUMBER = re.compile(r"(.*?)([0-9]+)")  # fullmatch: no newline slips in
_NOT_A_PLAIN_NAME = re.compile(r"[][,]|^\s|\s$|^$")


def _fold(names: Sequence[str]) -> list[str] | None:
    """Each prefix's numbers folded into one piece (gpu[01-03,07] or gpu05), names
    without a digit as they are; None where python-hostlist might write otherwise:
    duplicates, names it strips or rejects, a number inside a name, a prefix with
    numbers of two widths, and a prefix with a digit beside any other piece (its
    second pass would fold the prefix's own number across pieces)."""
    if len(names) < 2 or len(set(names)) != len(names):
        return None
    numbers: dict[str, list[int]] = {}
    widths: dict[str, int] = {}
    plain: list[str] = []
    for name in names:
        match = _PREFIX_AND_NUMBER.fullmatch(name)
        if match is None:
            if _DIGIT.search(name) or _NOT_A_PLAIN_NAME.search(name):
                return None
            plain.append(name)
            continue
        prefix, digits = match[1], match[2]
        if widths.setdefault(prefix, len(digits)) != len(digits):
            return None
        numbers.setdefault(prefix, []).append(int(digits))
    # A numbered name ends in a digit, so what python-hostlist strips or rejects in
    # one is in its prefix.
    if any(_NOT_A_PLAIN_NAME.search(prefix + "0") for prefix in numbers):
        return None
    if len(numbers) + len(plain) > 1 and any(_DIGIT.search(prefix) for prefix in numbers):
        return None
    return plain + [
        _fold_numbers(prefix, sorted(found), widths[prefix]) for prefix, found in numbers.items()
    ]


def _fold_numbers(prefix: str, numbers: list[int], width: int) -> str:
    """prefix[low-high,...] of distinct sorted numbers; prefix<number> for one number."""
    if len(numbers) == 1:
        return f"{prefix}{numbers[0]:0{width}d}"
    ranges = []
    start = previous = numbers[0]
    for number in [*numbers[1:], None]:
        if number is not None and number == previous + 1:
            previous = number
            continue
        low, high = f"{start:0{width}d}", f"{previous:0{width}d}"
        ranges.append(low if start == previous else f"{low}-{high}")
        if number is not None:
            start = previous = number
    return f"{prefix}[{','.join(ranges)}]"
