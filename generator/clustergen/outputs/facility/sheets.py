"""The facility sheets' tables: the rows of racks.csv, the PDU sheets (feeds, devices,
phases, banks, outlets) and cables.csv, as fixed-format text from the cluster's one
physical plan (ResolvedCluster.rack_plans) and its switch ports (ResolvedCluster.switch_ports).

The CSV files are these rows under their headers (csv_text); the Markdown pages print
the same rows. A feed row carries the load bars the pages draw, made as the elevations
make theirs (elevation.bar).
"""

from __future__ import annotations

import csv
import functools
import io
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from clustergen.model.common import expand_hostlist
from clustergen.outputs.facility.elevation import Bar, bar, power_given, role_and_hardware
from clustergen.resolve import ResolvedCluster
from clustergen.spec.cable_plan import cables
from clustergen.spec.physical_plan import FEEDS, Device, FeedLoad, RackPlan, nvlink_trays


@dataclass(frozen=True)
class FeedRow:
    rack: str
    pdu: str
    feed: str
    circuit: str  # '415 V 3-phase 40 A'
    capacity: str
    limit: str
    typical: str
    normal: str
    failover: str  # '' on a rack with one feed
    headroom: str
    phase_headroom: str  # the least of its phases'; '' on a single-phase PDU
    normal_bar: Bar
    failover_bar: Bar | None
    over: bool  # the feed or one of its phases is over its limit
    worst_share: float  # the worst load (failover on two feeds) over the 80% limit, of the
    # feed or of its fullest phase, whichever is larger

    @property
    def cells(self) -> tuple[str, ...]:
        """The row of pdu-feeds.csv, in FEED_HEADER's order."""
        return (
            self.rack,
            self.pdu,
            self.feed,
            self.circuit,
            self.capacity,
            self.limit,
            self.typical,
            self.normal,
            self.failover,
            self.headroom,
            self.phase_headroom,
        )


RACK_HEADER = ("rack", "unit", "top", "device", "role", "hardware", "height_u")
RACK_HEADER_W = ("typical_watts", "max_watts")
FEED_HEADER = (
    "rack",
    "pdu",
    "feed",
    "circuit",
    "capacity_va",
    "limit_va",
    "typical_va",
    "normal_va",
    "failover_va",
    "headroom_va",
    "phase_headroom_va",
)
DEVICE_HEADER = (
    "rack",
    "device",
    "max_watts",
    "power_factor",
    "psus_a",
    "psus_b",
    "normal_watts_a",
    "normal_watts_b",
    "failover_watts_a",
    "failover_watts_b",
)
PHASE_HEADER = (
    "rack",
    "pdu",
    "phase",
    "capacity_va",
    "limit_va",
    "normal_va",
    "failover_va",
    "headroom_va",
)
BANK_HEADER = (
    "rack",
    "pdu",
    "bank",
    "phase",
    "breaker_amps",
    "capacity_va",
    "limit_va",
    "normal_va",
    "failover_va",
)
SHELF_HEADER = (
    "rack",
    "shelves",
    "shelf_kw",
    "redundancy",
    "carrying_shelves",
    "capacity_w",
    "typical_watts",
    "max_watts",
    "headroom_w",
)
HEAT_HEADER = (
    "rack",
    "cdu",
    "max_watts",
    "liquid_watts",
    "air_watts",
    "air_cooling_w",
    "air_headroom_w",
)
TRAY_HEADER = (
    "rack",
    "compute_trays",
    "compute_u",
    "compute_max_watts",
    "switch_trays",
    "switch_u",
    "switch_max_watts",
    "switch_trays_wanted",
)
CDU_HEADER = ("cdu", "racks", "capacity_w", "liquid_watts", "headroom_w")
OUTLET_HEADER = ("rack", "pdu", "device", "psu", "bank", "phase", "normal_va", "failover_va")
CABLE_HEADER = ("switch", "port", "kind", "peer", "peer_port", "note")


@functools.lru_cache(maxsize=4096)
def number(value: float) -> str:
    """A whole number of W or VA: 10200.4 -> '10200'. Racks built alike repeat the same
    few loads hundreds of thousands of times, so the strings are kept."""
    return f"{value:.0f}"


_BLOCK_ROWS = 8192


class CsvSheet:
    """A CSV file of a table, as csv.writer writes it (minimal quoting, "\\n" lines),
    made a block of rows at a time so that no sheet's rows need to exist at once: a
    65,536-node rail fabric's cable and port sheets are 1.6 and 2.6 million rows.

    Sheet cells are names and numbers, which need no quoting, so a block's rows are joined
    as they stand (a 16k-node site's cable and outlet sheets hold a quarter million rows,
    and csv.writer takes four times as long); csv.writer writes the block instead when
    any cell would need quoting: one holding a comma, a quote or a line break (the commas
    and line breaks are counted, so one inside a cell shows), and for a row of fewer than
    two cells (one empty cell is written ""). csv.writer quotes each row on its own, so
    a block written either way is the same text.
    """

    def __init__(self, header: Sequence[str]) -> None:
        self._blocks = [csv_block([header])]
        self._rows: list[Sequence[str]] = []

    def add(self, row: Sequence[str]) -> None:
        self._rows.append(row)
        if len(self._rows) == _BLOCK_ROWS:
            self._blocks.append(csv_block(self._rows))
            self._rows = []

    def passing(self, rows: Iterable[Sequence[str]]) -> Iterator[Sequence[str]]:
        """Each row, added to the sheet as it goes by to the reader that needs it next."""
        for row in rows:
            self.add(row)
            yield row

    def text(self) -> str:
        if self._rows:
            self._blocks.append(csv_block(self._rows))
            self._rows = []
        text = "".join(self._blocks)
        self._blocks = [text]
        return text


def csv_block(rows: Sequence[Sequence[str]]) -> str:
    """Rows as csv.writer writes them (CsvSheet)."""
    text = "".join(",".join(row) + "\n" for row in rows)
    commas = sum(map(len, rows)) - len(rows)
    if (
        min(map(len, rows)) > 1
        and '"' not in text
        and "\r" not in text
        and text.count(",") == commas
        and text.count("\n") == len(rows)
    ):
        return text
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def csv_text(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """The CSV file of a table (CsvSheet)."""
    sheet = CsvSheet(header)
    for row in rows:
        sheet.add(row)
    return sheet.text()


def circuit(load: FeedLoad) -> str:
    pdu = load.pdu
    return f"{pdu.volts} V {pdu.phases}-phase {pdu.amps} A"


def feed_row(rack: RackPlan, load: FeedLoad) -> FeedRow:
    phase_headroom = load.phase_headroom_va
    return FeedRow(
        rack=rack.rack.name,
        pdu=load.pdu.name,
        feed=load.pdu.feed,
        circuit=circuit(load),
        capacity=number(load.capacity_va),
        limit=number(load.limit_va),
        typical=number(load.typical_va),
        normal=number(load.normal_va),
        failover="" if load.failover_va is None else number(load.failover_va),
        headroom=number(load.headroom_va),
        phase_headroom="" if phase_headroom is None else number(phase_headroom),
        normal_bar=bar(0, 0, 200, 12, load.normal_va, load.limit_va),
        failover_bar=(
            None
            if load.failover_va is None
            else bar(0, 0, 200, 12, load.failover_va, load.limit_va)
        ),
        over=load.headroom_va < 0 or (phase_headroom is not None and phase_headroom < 0),
        worst_share=max(
            (
                worst / limit
                for worst, limit in (
                    (load.worst_va, load.limit_va),
                    *((load.phase_worst_va(p), p.limit_va) for p in load.phases),
                )
                if limit
            ),
            default=0.0,
        ),
    )


def device_sheet(plans: Sequence[RackPlan]) -> tuple[tuple[str, ...], ...]:
    """The rows of pdu-devices.csv: each device of a rack with PDUs, from the bottom up.

    A device's cells but its name follow from its PSUs, power factor and max_watts and
    its rack's feeds; the plan makes the PSUs once per kind of device (facility._psus),
    so the cells are made once per kind and feeds, not for each of 16k nodes."""
    cells: dict[tuple[int, float, int, tuple[str, ...]], tuple[str, ...]] = {}
    rows = []
    for rack in plans:
        if not rack.loads:
            continue
        for device in sorted(rack.devices, key=lambda d: (d.u, d.index)):
            # By identity: every PSU tuple is alive in the plan while this runs.
            kind = (id(device.psus), device.power_factor, device.max_watts, rack.feeds)
            own = cells.get(kind)
            if own is None:
                own = cells[kind] = device_cells(rack, device)
            rows.append((rack.rack.name, device.name, *own))
    return tuple(rows)


def device_cells(rack: RackPlan, device: Device) -> tuple[str, ...]:
    """Watts a device draws from each feed at max_watts: every feed up, and alone."""
    two_feeds = len(rack.feeds) > 1
    normal = {feed: 0.0 for feed in FEEDS}
    failover = {feed: 0.0 for feed in FEEDS}
    for psu in device.psus:
        normal[psu.feed] += psu.normal_va * device.power_factor
        failover[psu.feed] += psu.failover_va * device.power_factor

    def on(feed: str, watts: dict[str, float]) -> str:
        return number(watts[feed]) if feed in rack.feeds else ""

    return (
        str(device.max_watts),
        f"{device.power_factor:.2f}",
        str(device.psus_on("A")),
        str(device.psus_on("B")),
        on("A", normal),
        on("B", normal),
        on("A", failover) if two_feeds else "",
        on("B", failover) if two_feeds else "",
    )


def outlet_sheet(plans: Sequence[RackPlan]) -> tuple[tuple[str, ...], ...]:
    """The rows of pdu-outlets.csv: rack, PDU, device, then the outlet's own cells.

    A 16k-node site has a hundred thousand outlets on a few kinds of circuit: the plan
    gives racks built alike one _Circuit (facility._loads), with the same PSUs plugged
    in the same order, so an outlet's own cells are made from the first PDU on each
    circuit (and feed count) and only the names come from each PDU's own."""
    cells: dict[tuple[int, bool], list[tuple[str, ...]]] = {}
    rows: list[tuple[str, ...]] = []
    for rack in plans:
        for load in rack.loads:
            two_feeds = load.failover_va is not None
            # By identity: every circuit is alive in the plan while this runs.
            own = cells.get((id(load.circuit), two_feeds))
            if own is None:
                own = cells[(id(load.circuit), two_feeds)] = [
                    (
                        str(outlet.psu),
                        str(outlet.bank),
                        outlet.phase,
                        number(outlet.normal_va),
                        number(outlet.failover_va) if two_feeds else "",
                    )
                    for outlet in load.outlets
                ]
            rows.extend(
                (rack.rack.name, load.pdu.name, device, *outlet)
                for (device, _), outlet in zip(load.plugged, own, strict=True)
            )
    return tuple(rows)


def rack_sheet(
    plans: Sequence[RackPlan], switch_models: dict[str, str | None]
) -> tuple[tuple[str, ...], ...]:
    """The rows of racks.csv: each device of each rack, from the bottom up."""
    return tuple(
        (
            rack.rack.name,
            str(device.u),
            str(device.top),
            device.name,
            *role_and_hardware(device, switch_models),
            str(device.height),
            str(device.typical_watts) if power_given(device) else "",
            str(device.max_watts) if power_given(device) else "",
        )
        for rack in plans
        for device in sorted(rack.devices, key=lambda d: (d.u, d.index))
    )


def rack_totals(plans: Sequence[RackPlan]) -> tuple[tuple[str, ...], ...]:
    """Each rack's units, used and free, and its typical and max watts (racks.md)."""
    return tuple(
        (
            rack.rack.name,
            str(rack.rack.height_u),
            str(used := sum(d.height for d in rack.devices)),
            str(rack.rack.height_u - used),
            str(rack.typical_watts),
            str(rack.max_watts),
        )
        for rack in plans
    )


def tray_sheet(cluster: ResolvedCluster) -> tuple[tuple[str, ...], ...]:
    """The NVLink trays of each rack (racks.md; physical_plan.nvlink_trays): its compute
    and switch trays, each with the units and max draw they take, and the switch trays the
    compute trays' domains call for. None where no rack holds a tray."""
    rows = []
    for rack in cluster.rack_plans:
        trays = nvlink_trays(rack, cluster.spec.hardware)
        if trays.compute or trays.switches:
            rows.append(
                (
                    rack.rack.name,
                    *_trays(trays.compute),
                    *_trays(trays.switches),
                    str(trays.switches_wanted),
                )
            )
    return tuple(rows)


def _trays(devices: Sequence[Device]) -> tuple[str, str, str]:
    """A kind of tray's count, units and max draw ('' for the draw where none is given)."""
    watts = sum(d.max_watts for d in devices)
    given = any(power_given(d) for d in devices)
    return str(len(devices)), str(sum(d.height for d in devices)), str(watts) if given else ""


def phase_sheet(plans: Sequence[RackPlan]) -> tuple[tuple[str, ...], ...]:
    """The rows of pdu-phases.csv: each phase of each PDU, and its headroom."""
    return tuple(
        (
            rack.rack.name,
            load.pdu.name,
            phase.name,
            number(phase.capacity_va),
            number(phase.limit_va),
            number(phase.normal_va),
            "" if load.failover_va is None else number(phase.failover_va),
            number(phase.limit_va - load.phase_worst_va(phase)),
        )
        for rack in plans
        for load in rack.loads
        for phase in load.phases
    )


def bank_sheet(plans: Sequence[RackPlan]) -> tuple[tuple[str, ...], ...]:
    """The rows of pdu-banks.csv: each breaker bank of each PDU."""
    return tuple(
        (
            rack.rack.name,
            load.pdu.name,
            str(bank.number),
            bank.phase,
            str(load.pdu.bank_amps or load.pdu.amps),
            number(bank.capacity_va),
            number(bank.limit_va),
            number(bank.normal_va),
            "" if load.failover_va is None else number(bank.failover_va),
        )
        for rack in plans
        for load in rack.loads
        for bank in load.banks
    )


def shelf_sheet(plans: Sequence[RackPlan]) -> tuple[tuple[str, ...], ...]:
    """The rows of power-shelves.csv: each rack on power shelves, what the shelves left
    when the redundancy is spent carry, and the headroom at max draw."""
    rows = []
    for rack in plans:
        shelves, capacity = rack.rack.power_shelves, rack.shelf_capacity_w
        if shelves is None or capacity is None:
            continue
        rows.append(
            (
                rack.rack.name,
                str(shelves.count),
                f"{shelves.shelf_kw:g}",
                shelves.redundancy,
                str(shelves.carrying),
                number(capacity),
                str(rack.typical_watts),
                str(rack.max_watts),
                number(capacity - rack.max_watts),
            )
        )
    return tuple(rows)


def rack_cdus(cluster: ResolvedCluster) -> dict[str, str]:
    """Each rack's CDU by the rack's name (the first that lists it)."""
    facility = cluster.spec.facility
    served: dict[str, str] = {}
    for cdu in facility.cdus if facility is not None else ():
        for name in expand_hostlist(cdu.racks):
            served.setdefault(name, cdu.name)
    return served


def heat_sheet(cluster: ResolvedCluster) -> tuple[tuple[str, ...], ...]:
    """The rows of cooling.csv: each rack's heat at max draw split to liquid and to air,
    and its air cooling's headroom; none where no rack sends heat to liquid, gives
    air_cooling_kw or is on a CDU."""
    plans = cluster.rack_plans
    served = rack_cdus(cluster)
    if not served and not any(
        rack.liquid_watts or rack.rack.air_cooling_kw is not None for rack in plans
    ):
        return ()
    rows = []
    for rack in plans:
        air_kw = rack.rack.air_cooling_kw
        rows.append(
            (
                rack.rack.name,
                served.get(rack.rack.name, ""),
                str(rack.max_watts),
                number(rack.liquid_watts),
                number(rack.air_watts),
                "" if air_kw is None else number(air_kw * 1000),
                "" if air_kw is None else number(air_kw * 1000 - rack.air_watts),
            )
        )
    return tuple(rows)


def cdu_sheet(cluster: ResolvedCluster) -> tuple[tuple[str, ...], ...]:
    """The rows of cdus.csv: each CDU, its racks' heat to liquid and its headroom."""
    facility = cluster.spec.facility
    liquid = {rack.rack.name: rack.liquid_watts for rack in cluster.rack_plans}
    rows = []
    for cdu in facility.cdus if facility is not None else ():
        heat = sum(liquid.get(name, 0.0) for name in expand_hostlist(cdu.racks))
        capacity = cdu.capacity_kw * 1000
        rows.append((cdu.name, cdu.racks, number(capacity), number(heat), number(capacity - heat)))
    return tuple(rows)


@functools.lru_cache(maxsize=4096)
def port_text(port: int) -> str:
    """A switch port number as the sheets write it, one string per number: a 16k-node
    rail fabric's sheets name ports 1-64 close to a million times."""
    return str(port)


def cable_sheet(cluster: ResolvedCluster) -> Iterator[tuple[str, ...]]:
    """The rows of cables.csv, each made as it is read: each switch port's cable and its
    peer."""
    return (
        (
            cable.switch,
            port_text(cable.port),
            cable.kind,
            cable.peer,
            cable.peer_port,
            "beyond the switch's ports" if cable.beyond else "",
        )
        for cable in cables(cluster.spec, cluster.by_name, cluster.switch_ports)
    )
