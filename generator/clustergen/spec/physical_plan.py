"""The physical layer, derived once: what sits where in each rack, which PSU is cabled to
which feed, bank and phase, and what each feed carries in normal operation and on failover.

The power checks and the facility sheets and pictures read the same plan, so a number on
a sheet is the number a check judged. Loads on circuits are in VA (watts / power factor);
the 80% limit is the continuous-load rule for breakers.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from clustergen.model import Spec
from clustergen.model.hardware import HardwareProfile, NvlinkTrays
from clustergen.model.racks import Pdu, Rack
from clustergen.spec.hosts import Host

SQRT3 = math.sqrt(3)
CONTINUOUS_LOAD_LIMIT = 0.8  # a breaker carries at most 80% of its rating continuously
PHASE_IMBALANCE_LIMIT = 0.2  # largest deviation of a phase from the mean, over the mean
# Imbalance is reported only where it amounts to something: the phase furthest from the
# mean is off by at least this share of a phase's continuous limit (80% of its pole).
# Below it the capacity the imbalance strands is under a tenth of a pole's limit (767 VA
# of a 415 V 40 A PDU's 7667 VA), and a nearly empty PDU (a service rack's switches and
# a head node, one PSU each) is always uneven; the per-phase limit check covers the rest.
PHASE_IMBALANCE_FLOOR = 0.1
FEEDS = ("A", "B")

# Node roles in the order one is chosen for a node's colour and label: a node with
# several roles is drawn as the first of these it has.
ROLE_ORDER = (
    ("slurm_controller", "controller"),
    ("slurm_dbd", "controller"),
    ("lustre_mgs", "storage"),
    ("lustre_mds", "storage"),
    ("lustre_oss", "storage"),
    ("compute", "compute"),
    ("login", "login"),
)


# The role of a rack device that is an NVLink switch tray (racks[].devices[].nvlink_switch_tray).
NVLINK_SWITCH_ROLE = "nvlink-switch"


@dataclass(frozen=True)
class Psu:
    """One power supply of a device, and the load it carries (VA)."""

    number: int  # 1-based within its device; feed A takes the first numbers
    feed: str
    typical_va: float
    normal_va: float  # at max draw, every feed up
    failover_va: float  # at max draw, the rack's other feed lost (normal_va on one feed)


@dataclass(frozen=True)
class Device:
    rack_index: int
    index: int  # in rack.devices
    name: str
    node: bool
    hardware: str  # the node's profile; "" for what is not a node
    role: str  # compute, controller, storage, login, service; nvlink-switch or device if no node
    u: int
    height: int
    typical_watts: int
    max_watts: int
    power_factor: float
    weight_kg: float | None
    psus: tuple[Psu, ...]
    unplugged_psus: int  # PSUs cabled to a feed the rack does not have
    liquid_share: float = 0.0  # of its heat, to liquid; the rest to air

    @property
    def liquid_watts(self) -> float:
        return self.max_watts * self.liquid_share

    @property
    def top(self) -> int:
        return self.u + self.height - 1

    def psus_on(self, feed: str) -> int:
        return sum(1 for psu in self.psus if psu.feed == feed)


class Outlet(NamedTuple):
    """A PSU plugged into a PDU: its bank and phase. A tuple: a 16k-node plan holds
    hundreds of thousands of them."""

    device: str
    psu: int
    bank: int  # 1-based
    phase: str  # L1, L2, L3; "" on a single-phase PDU
    typical_va: float
    normal_va: float
    failover_va: float


@dataclass(frozen=True)
class Bank:
    number: int
    phase: str
    capacity_va: float
    limit_va: float
    normal_va: float
    failover_va: float


@dataclass(frozen=True)
class Phase:
    """One phase (pole) of a 3-phase PDU: its capacity line to neutral, and its load."""

    name: str
    capacity_va: float
    limit_va: float
    normal_va: float
    failover_va: float


@dataclass(frozen=True)
class _Circuit:
    """What a PDU's circuit carries, which depends only on the PDU's rating and the PSUs
    plugged into it in order: racks built alike share one (see _loads)."""

    banks_of: tuple[int, ...]  # the bank (1-based) of each plugged PSU, in plug order
    phases_of: tuple[str, ...]  # its phase
    banks: tuple[Bank, ...]
    phases: tuple[Phase, ...]
    typical_va: float
    normal_va: float
    failover_va: float


@dataclass(frozen=True)
class FeedLoad:
    """A PDU and what its circuit carries."""

    rack_index: int
    pdu_index: int
    pdu: Pdu
    capacity_va: float
    limit_va: float
    typical_va: float
    normal_va: float
    failover_va: float | None  # None on a rack with one feed
    banks: tuple[Bank, ...]  # the PDU's banks when it gives a count
    phases: tuple[Phase, ...]  # L1-L3 of a 3-phase PDU
    devices: tuple[Device, ...] = field(repr=False)  # the rack's, whose PSUs it may carry
    circuit: _Circuit = field(repr=False)

    @property
    def plugged(self) -> tuple[tuple[str, Psu], ...]:
        """(device, PSU) on this feed, by device then PSU."""
        feed = self.pdu.feed
        return tuple((d.name, psu) for d in self.devices for psu in d.psus if psu.feed == feed)

    @functools.cached_property
    def outlets(self) -> tuple[Outlet, ...]:
        """Every PSU on this PDU with its bank and phase, by device, then PSU; made when
        a sheet or a failing check asks (a 16k-node plan has a quarter million)."""
        return tuple(
            Outlet(name, psu.number, bank, phase, psu.typical_va, psu.normal_va, psu.failover_va)
            for (name, psu), bank, phase in zip(
                self.plugged, self.circuit.banks_of, self.circuit.phases_of, strict=True
            )
        )

    @property
    def worst_va(self) -> float:
        return self.normal_va if self.failover_va is None else self.failover_va

    @property
    def headroom_va(self) -> float:
        return self.limit_va - self.worst_va

    def phase_worst_va(self, phase: Phase) -> float:
        """What the phase carries at worst: on failover where the rack has two feeds."""
        return phase.normal_va if self.failover_va is None else phase.failover_va

    @property
    def phase_headroom_va(self) -> float | None:
        """The least headroom of the PDU's phases (None on a single-phase PDU): what may
        still be added to the rack, plugged onto its fullest phase, within 80% of its pole."""
        if not self.phases:
            return None
        return min(phase.limit_va - self.phase_worst_va(phase) for phase in self.phases)

    @property
    def mean_phase_va(self) -> float:
        return sum(phase.normal_va for phase in self.phases) / len(self.phases)

    @property
    def most_unbalanced_phase(self) -> Phase:
        """The phase whose normal load is furthest from the mean (the lowest on a tie)."""
        mean = self.mean_phase_va
        return max(self.phases, key=lambda phase: abs(phase.normal_va - mean))

    @property
    def phase_imbalance(self) -> float:
        """Largest deviation of a phase's normal load from the mean, over the mean."""
        if not self.phases:
            return 0.0
        mean = self.mean_phase_va
        return abs(self.most_unbalanced_phase.normal_va - mean) / mean if mean else 0.0


@dataclass(frozen=True)
class RackPlan:
    index: int
    rack: Rack
    feeds: tuple[str, ...]  # the feeds of its PDUs, A before B
    devices: tuple[Device, ...]  # spec order
    loads: tuple[FeedLoad, ...]  # one per PDU, spec order

    @property
    def max_watts(self) -> int:
        return sum(device.max_watts for device in self.devices)

    @property
    def typical_watts(self) -> int:
        return sum(device.typical_watts for device in self.devices)

    @property
    def weight_kg(self) -> float:
        return sum(device.weight_kg or 0.0 for device in self.devices)

    @property
    def liquid_watts(self) -> float:
        """Heat to liquid at max draw: each device's max_watts x its liquid_share."""
        return sum(device.liquid_watts for device in self.devices)

    @property
    def air_watts(self) -> float:
        """Heat to air at max draw: what liquid does not take."""
        return self.max_watts - self.liquid_watts

    @property
    def shelf_capacity_w(self) -> float | None:
        """What the rack's power shelves carry with the redundancy spent; None without."""
        shelves = self.rack.power_shelves
        return None if shelves is None else shelves.carrying * shelves.shelf_kw * 1000

    @property
    def limit_va(self) -> float:
        """What the rack may draw: the smallest feed's 80% (each feed must carry it alone)."""
        return min((load.limit_va for load in self.loads), default=0.0)


class NvlinkTrayCount(NamedTuple):
    compute: tuple[Device, ...]  # nodes whose profile has gpu.nvlink_domain
    switches: tuple[Device, ...]  # devices with nvlink_switch_tray
    switches_wanted: int  # what the compute trays' domains call for


def nvlink_trays(rack: RackPlan, hardware: Mapping[str, HardwareProfile]) -> NvlinkTrayCount:
    """A rack's NVLink compute and switch trays, and the switch trays its compute trays'
    domains call for: switch_trays per trays of each profile's gpu.nvlink_domain, rounded
    up (9 for the 18 trays of a GB200 NVL72 rack)."""
    domains: dict[str, NvlinkTrays] = {}  # by profile
    counts: dict[str, int] = {}
    compute, switches = [], []
    for device in rack.devices:
        profile = hardware.get(device.hardware) if device.node else None
        domain = profile.gpu.nvlink_domain if profile and profile.gpu else None
        if domain is not None:
            compute.append(device)
            domains[device.hardware] = domain
            counts[device.hardware] = counts.get(device.hardware, 0) + 1
        elif device.role == NVLINK_SWITCH_ROLE:
            switches.append(device)
    wanted = sum(-(-n * domains[p].switch_trays // domains[p].trays) for p, n in counts.items())
    return NvlinkTrayCount(tuple(compute), tuple(switches), wanted)


def feed_capacity_va(pdu: Pdu) -> float:
    return pdu.volts * pdu.amps * (SQRT3 if pdu.phases == 3 else 1.0)


def bank_capacity_va(pdu: Pdu) -> float:
    """A bank is fed phase-to-neutral on a 3-phase PDU."""
    volts = pdu.volts / SQRT3 if pdu.phases == 3 else pdu.volts
    return volts * (pdu.bank_amps or pdu.amps)


@functools.cache
def role_of(roles: tuple[str, ...]) -> str:
    return next((label for role, label in ROLE_ORDER if role in roles), "service")


def even_split(psu_count: int, feeds: tuple[str, ...]) -> dict[str, int]:
    """psu_count PSUs evenly over feeds; the first feeds take the odd ones."""
    if not feeds:
        return {}
    base, extra = divmod(psu_count, len(feeds))
    return {feed: base + (1 if i < extra else 0) for i, feed in enumerate(feeds)}


def rack_plans(spec: Spec, hosts: Mapping[str, Host]) -> tuple[RackPlan, ...]:
    """Every rack's devices, PSUs and feed loads. Nodes that are unknown, placed a second
    time or without a profile are left out (the reference checks report them); a node whose
    profile has no power draws nothing."""
    placed: set[str] = set()
    circuits: dict[tuple[object, ...], _Circuit] = {}
    kinds: dict[tuple[str, tuple[str, ...]], _NodeKind] = {}  # by profile and feeds
    plans = []
    for rack_index, rack in enumerate(spec.racks):
        feeds = tuple(feed for feed in FEEDS if any(pdu.feed == feed for pdu in rack.pdus))
        devices = []
        for index, entry in enumerate(rack.devices):
            if entry.node is not None:
                host = hosts.get(entry.node)
                if host is None or not host.profiled or entry.node in placed:
                    continue
                placed.add(entry.node)
                kind = kinds.get((host.hardware_name, feeds))
                if kind is None:
                    kind = kinds[host.hardware_name, feeds] = _node_kind(host.hardware, feeds)
                devices.append(_node_device(rack_index, index, entry.u, host, kind))
            else:
                assert entry.name is not None and entry.height_u is not None
                assert entry.max_watts is not None
                devices.append(
                    _other_device(
                        rack_index,
                        index,
                        entry.name,
                        entry.u,
                        entry.height_u,
                        entry.max_watts,
                        entry.max_watts if entry.typical_watts is None else entry.typical_watts,
                        entry.weight_kg,
                        feeds,
                        entry.liquid_share or 0.0,
                        NVLINK_SWITCH_ROLE if entry.nvlink_switch_tray else "device",
                    )
                )
        placed_devices = tuple(devices)
        loads = _loads(rack_index, rack, placed_devices, len(feeds) > 1, circuits)
        plans.append(RackPlan(rack_index, rack, feeds, placed_devices, loads))
    return tuple(plans)


class _NodeKind(NamedTuple):
    """What a node's device takes from its profile and its rack's feeds, alike for every
    node of the profile in racks of those feeds: made once for all of them."""

    height: int
    weight_kg: float | None
    typical_watts: int
    max_watts: int
    power_factor: float
    psus: tuple[Psu, ...]
    unplugged_psus: int
    liquid_share: float


def _node_kind(profile: HardwareProfile, feeds: tuple[str, ...]) -> _NodeKind:
    power = profile.power
    if power is None:
        return _NodeKind(
            profile.rack_units, profile.weight_kg, 0, 0, 1.0, (), 0, profile.liquid_share or 0.0
        )
    # Without psu_count the device is fed from its rack's busbar and plugs into no PDU
    # (in a rack with PDUs, checks.facility says racks.node-without-psus).
    split: dict[str, int] = (
        {str(feed): count for feed, count in power.psus_per_feed.items()}
        if power.psus_per_feed is not None
        else even_split(power.psu_count or 0, feeds)
    )
    plugged = {feed: count for feed in feeds if (count := split.get(feed, 0))}
    typical = power.max_watts if power.typical_watts is None else power.typical_watts
    psus = _psus(power.max_watts, typical, power.power_factor, tuple(plugged.items()))
    return _NodeKind(
        height=profile.rack_units,
        weight_kg=profile.weight_kg,
        typical_watts=typical,
        max_watts=power.max_watts,
        power_factor=power.power_factor,
        psus=psus,
        unplugged_psus=(power.psu_count or 0) - len(psus) if feeds else 0,
        liquid_share=profile.liquid_share or 0.0,
    )


def _node_device(rack_index: int, index: int, u: int, host: Host, kind: _NodeKind) -> Device:
    return Device(
        rack_index=rack_index,
        index=index,
        name=host.name,
        node=True,
        hardware=host.hardware_name,
        role=role_of(host.roles),
        u=u,
        height=kind.height,
        typical_watts=kind.typical_watts,
        max_watts=kind.max_watts,
        power_factor=kind.power_factor,
        weight_kg=kind.weight_kg,
        psus=kind.psus,
        unplugged_psus=kind.unplugged_psus,
        liquid_share=kind.liquid_share,
    )


def _other_device(
    rack_index: int,
    index: int,
    name: str,
    u: int,
    height: int,
    max_watts: int,
    typical_watts: int,
    weight_kg: float | None,
    feeds: tuple[str, ...],
    liquid_share: float,
    role: str,
) -> Device:
    return Device(
        rack_index=rack_index,
        index=index,
        name=name,
        node=False,
        hardware="",
        role=role,
        u=u,
        height=height,
        typical_watts=typical_watts,
        max_watts=max_watts,
        power_factor=1.0,
        weight_kg=weight_kg,
        psus=_psus(max_watts, typical_watts, 1.0, tuple((feed, 1) for feed in feeds)),
        unplugged_psus=0,
        liquid_share=liquid_share,
    )


@functools.cache
def _psus(
    max_watts: int, typical_watts: int, power_factor: float, per_feed: tuple[tuple[str, int], ...]
) -> tuple[Psu, ...]:
    """The PSUs, feed A's first: every PSU shares the draw equally, and on failover the
    PSUs of the remaining feed carry it all. Made once per kind of device and feeds."""
    total = sum(count for _, count in per_feed)
    if total == 0:
        return ()
    two_feeds = len(per_feed) > 1
    psus: list[Psu] = []
    for feed, count in per_feed:
        failover = max_watts / count if two_feeds and count else max_watts / total
        for _ in range(count):
            psus.append(
                Psu(
                    number=len(psus) + 1,
                    feed=feed,
                    typical_va=typical_watts / total / power_factor,
                    normal_va=max_watts / total / power_factor,
                    failover_va=failover / power_factor,
                )
            )
    return tuple(psus)


def _loads(
    rack_index: int,
    rack: Rack,
    devices: tuple[Device, ...],
    two_feeds: bool,
    circuits: dict[tuple[object, ...], _Circuit],
) -> tuple[FeedLoad, ...]:
    seen: set[str] = set()
    loads = []
    for pdu_index, pdu in enumerate(rack.pdus):
        if pdu.feed in seen:
            continue  # a second PDU on a feed is an error; the first carries the feed
        seen.add(pdu.feed)
        psus = [psu for d in devices for psu in d.psus if psu.feed == pdu.feed]
        # PSUs are made once per kind of device (_psus), and the plan holds them all
        # while it is made, so their identities name the plug order exactly.
        key = (pdu.phases, pdu.volts, pdu.amps, pdu.banks, pdu.bank_amps, *map(id, psus))
        circuit = circuits.get(key)
        if circuit is None:
            circuit = circuits[key] = _circuit(pdu, psus)
        capacity = feed_capacity_va(pdu)
        loads.append(
            FeedLoad(
                rack_index=rack_index,
                pdu_index=pdu_index,
                pdu=pdu,
                capacity_va=capacity,
                limit_va=capacity * CONTINUOUS_LOAD_LIMIT,
                typical_va=circuit.typical_va,
                normal_va=circuit.normal_va,
                failover_va=circuit.failover_va if two_feeds else None,
                banks=circuit.banks,
                phases=circuit.phases,
                devices=devices,
                circuit=circuit,
            )
        )
    return tuple(loads)


def _circuit(pdu: Pdu, psus: list[Psu]) -> _Circuit:
    """PSUs to banks as they are plugged: in order (the rack's devices as the spec lists
    them, each device's PSUs by number) into consecutive outlets, and consecutive outlets
    alternate across the banks, 1, 2, ..., n, 1, ... A 3-phase PDU without a bank count
    has one bank per phase, so its outlets alternate L1, L2, L3 as on an alternating-phase
    PDU (docs/facility.md). A device's PSUs on a feed land on different banks, and a
    device added at the end of a rack moves no PSU already plugged."""
    bank_count = pdu.banks or (3 if pdu.phases == 3 else 1)

    def phase_of(bank: int) -> str:
        return f"L{bank % 3 + 1}" if pdu.phases == 3 else ""

    bank_of = [i % bank_count for i in range(len(psus))]
    on_bank: dict[int, list[Psu]] = {bank: [] for bank in range(bank_count)}
    for psu, bank in zip(psus, bank_of, strict=True):
        on_bank[bank].append(psu)
    banks: tuple[Bank, ...] = ()
    if pdu.banks is not None:
        capacity = bank_capacity_va(pdu)
        banks = tuple(
            Bank(
                number=b + 1,
                phase=phase_of(b),
                capacity_va=capacity,
                limit_va=capacity * CONTINUOUS_LOAD_LIMIT,
                normal_va=sum(psu.normal_va for psu in on_bank[b]),
                failover_va=sum(psu.failover_va for psu in on_bank[b]),
            )
            for b in range(bank_count)
        )
    phase_names = tuple(phase_of(bank) for bank in bank_of)
    phases: tuple[Phase, ...] = ()
    if pdu.phases == 3:
        per_phase = pdu.volts / SQRT3 * pdu.amps
        on_phase: dict[str, list[Psu]] = {name: [] for name in ("L1", "L2", "L3")}
        for psu, name in zip(psus, phase_names, strict=True):
            on_phase[name].append(psu)
        phases = tuple(
            Phase(
                name=name,
                capacity_va=per_phase,
                limit_va=per_phase * CONTINUOUS_LOAD_LIMIT,
                normal_va=sum(psu.normal_va for psu in on),
                failover_va=sum(psu.failover_va for psu in on),
            )
            for name, on in on_phase.items()
        )
    return _Circuit(
        banks_of=tuple(bank + 1 for bank in bank_of),
        phases_of=phase_names,
        banks=banks,
        phases=phases,
        typical_va=sum(psu.typical_va for psu in psus),
        normal_va=sum(psu.normal_va for psu in psus),
        failover_va=sum(psu.failover_va for psu in psus),
    )


def largest(contributions: Iterable[tuple[str, float]], unit: str, shown: int = 3) -> str:
    """'gpu01 10.20 kVA, gpu02 10.20 kVA, ib-leaf01 1.72 kVA and 2 more', largest first."""
    ordered = sorted(contributions, key=lambda item: (-item[1], item[0]))
    named = ", ".join(f"{name} {kilo(value, unit)}" for name, value in ordered[:shown])
    rest = len(ordered) - shown
    return f"{named} and {rest} more" if rest > 0 else named


def most(counts: Iterable[tuple[str, int]], shown: int = 3) -> str:
    """'gpu05 8, gpu06 8, gpu07 8 and 6 more', largest first."""
    ordered = sorted(counts, key=lambda item: (-item[1], item[0]))
    named = ", ".join(f"{name} {count}" for name, count in ordered[:shown])
    rest = len(ordered) - shown
    return f"{named} and {rest} more" if rest > 0 else named


def kilo(value: float, unit: str) -> str:
    """10200 -> '10.20 kW'."""
    return f"{value / 1000:.2f} k{unit}"
