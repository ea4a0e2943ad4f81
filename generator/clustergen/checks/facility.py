"""Racks, power and cabling: what would trip a breaker, fail a redundant feed or not be
wireable once the hardware is on site. The numbers come from clustergen.spec.physical_plan, which
the facility sheets print, so a message and a sheet agree."""

from __future__ import annotations

from clustergen.base import codes
from clustergen.base.errors import Problem, SpecPath
from clustergen.catalog.gpus import profile_gpu_sets
from clustergen.model.common import expand_hostlist
from clustergen.model.hardware import Power
from clustergen.resolve import ResolvedCluster
from clustergen.spec.hosts import compress
from clustergen.spec.physical_plan import (
    PHASE_IMBALANCE_FLOOR,
    PHASE_IMBALANCE_LIMIT,
    Device,
    FeedLoad,
    RackPlan,
    kilo,
    largest,
    most,
    nvlink_trays,
)


def psus(cluster: ResolvedCluster) -> list[Problem]:
    """Each profile's PSUs cover its max_watts, and max_watts covers its GPUs."""
    problems = []
    for name, profile in cluster.spec.hardware.items():
        power = profile.power
        if power is None:
            continue
        path: SpecPath = ("hardware", name, "power")
        usable = (power.psu_count or 0) - power.redundant_psus
        if power.psu_watts is not None and usable * power.psu_watts < power.max_watts:
            problems.append(
                Problem(
                    codes.HARDWARE_PSUS_BELOW_MAX_WATTS,
                    (*path, "psu_watts"),
                    f"({power.psu_count} PSUs - {power.redundant_psus} redundant) x "
                    f"{power.psu_watts} W = {usable * power.psu_watts} W does not cover "
                    f"max_watts {power.max_watts} W",
                )
            )
        # A model whose board power is unpublished (Rubin) weighs nothing here.
        known = [
            (s.count, s.model, s.model.board_watts)
            for s in profile_gpu_sets(profile)
            if s.model is not None and s.model.board_watts is not None
        ]
        gpu_watts = sum(count * watts for count, _model, watts in known)
        if known and power.max_watts < gpu_watts:
            terms = " + ".join(
                f"{count} x {model.name} at {watts} W" for count, model, watts in known
            )
            problems.append(
                Problem(
                    codes.HARDWARE_MAX_WATTS_BELOW_GPUS,
                    (*path, "max_watts"),
                    f"max_watts {power.max_watts} W is below the GPUs' board power alone: "
                    f"{terms} = {gpu_watts} W",
                )
            )
    return problems


def placement(cluster: ResolvedCluster) -> list[Problem]:
    """Every device inside its rack, and no unit holding two devices."""
    problems = []
    for rack_index, rack in enumerate(cluster.spec.racks):
        held: dict[int, int] = {}  # unit -> device index
        overlaps: dict[tuple[int, int], tuple[int, int]] = {}  # (earlier, later) -> units
        spans: list[tuple[str, int, int] | None] = []
        for index, entry in enumerate(rack.devices):
            height = _height(cluster, entry.node, entry.height_u)
            if height is None:
                spans.append(None)
                continue
            label = entry.node or entry.name or ""
            top = entry.u + height - 1
            spans.append((label, entry.u, top))
            if top > rack.height_u:
                problems.append(
                    Problem(
                        codes.RACKS_DEVICE_OUTSIDE,
                        ("racks", rack_index, "devices", index, "u"),
                        f"'{label}' is {height}U at U{entry.u}, so it reaches U{top}; rack "
                        f"'{rack.name}' has U1-U{rack.height_u}",
                    )
                )
            for unit in range(entry.u, min(top, rack.height_u) + 1):
                other = held.setdefault(unit, index)
                if other != index:
                    low, high = overlaps.get((other, index), (unit, unit))
                    overlaps[(other, index)] = (min(low, unit), max(high, unit))
        for (first, second), (low, high) in sorted(overlaps.items()):
            for this, that in ((first, second), (second, first)):
                this_span, that_span = spans[this], spans[that]
                assert this_span is not None and that_span is not None
                problems.append(
                    Problem(
                        codes.RACKS_UNITS_OVERLAP,
                        ("racks", rack_index, "devices", this, "u"),
                        f"'{this_span[0]}' ({_units(*this_span[1:])}) and '{that_span[0]}' "
                        f"({_units(*that_span[1:])}, racks[{rack_index}].devices[{that}]) "
                        f"share {_units(low, high)} of rack '{rack.name}'",
                    )
                )
    return problems


def racked(cluster: ResolvedCluster) -> list[Problem]:
    """With racks given, every node is racked, unless facility.unracked opts it out."""
    spec = cluster.spec
    known = cluster.by_name
    unracked_expr = spec.facility.unracked if spec.facility else None
    unracked = expand_hostlist(unracked_expr) if unracked_expr else []
    placed = {entry.node for rack in spec.racks for entry in rack.devices if entry.node}
    problems = [
        Problem(
            codes.FACILITY_UNKNOWN_NODE,
            ("facility", "unracked"),
            f"unknown node '{name}' in facility.unracked",
        )
        for name in unracked
        if name not in known
    ]
    both = [name for name in unracked if name in placed]
    if both:
        problems.append(
            Problem(
                codes.FACILITY_UNRACKED_NODE_PLACED,
                ("facility", "unracked"),
                f"{compress(both)} listed in facility.unracked but placed in a rack",
            )
        )
    if not spec.racks:
        return problems
    opted_out = set(unracked)
    missing: dict[int, list[str]] = {}
    for host in cluster.hosts:
        if host.name not in placed and host.name not in opted_out:
            missing.setdefault(host.group_index, []).append(host.name)
    for group_index, names in sorted(missing.items()):
        problems.append(
            Problem(
                codes.RACKS_NODE_NOT_RACKED,
                ("nodes", group_index, "names"),
                f"{compress(names)} ({len(names)} node"
                f"{'s' if len(names) > 1 else ''}) in no rack; place "
                f"{'them' if len(names) > 1 else 'it'} under racks[].devices or list "
                f"{'them' if len(names) > 1 else 'it'} in facility.unracked",
            )
        )
    return problems


def power(cluster: ResolvedCluster) -> list[Problem]:
    """Feeds, banks, outlets and phases of every rack with PDUs; a node's PSUs after the
    loss of a feed; rack weight and cooling."""
    plans = cluster.rack_plans
    problems: list[Problem] = []
    for rack in plans:
        problems += _rack_pdus(cluster, rack)
        problems += _busbar_fed(cluster, rack)
        for load in rack.loads:
            problems += _feed(rack, load)
            problems += _phases(rack, load)
            problems += _banks(rack, load)
        problems += _rack_limits(rack)
    problems += _feed_loss(cluster, plans)
    return problems


def switch_trays(cluster: ResolvedCluster) -> list[Problem]:
    """A rack that lists NVLink switch trays, but fewer than its compute trays' domains
    call for (physical_plan.nvlink_trays). A rack that lists none is only shown so on the
    rack sheet: its switch trays may simply not be described yet."""
    problems = []
    for rack in cluster.rack_plans:
        trays = nvlink_trays(rack, cluster.spec.hardware)
        listed, wanted = len(trays.switches), trays.switches_wanted
        if listed and listed < wanted:
            problems.append(
                Problem(
                    codes.RACKS_NVLINK_SWITCH_TRAYS_SHORT,
                    ("racks", rack.index, "devices"),
                    f"rack '{rack.rack.name}' lists {listed} NVLink switch tray"
                    f"{'s' if listed != 1 else ''}, but its {len(trays.compute)} compute trays' "
                    f"domains call for {wanted} (gpu.nvlink_domain switch_trays per trays): "
                    "the missing trays' units and power are on none of its sheets",
                )
            )
    return problems


def site(cluster: ResolvedCluster) -> list[Problem]:
    """The racks together within facility.power_budget_kw and cooling_kw."""
    facility = cluster.spec.facility
    if facility is None:
        return []
    plans = cluster.rack_plans
    total = sum(rack.max_watts for rack in plans)
    contributors = largest(((rack.rack.name, rack.max_watts) for rack in plans), "W")
    problems = []
    for key, limit, code, what in (
        ("power_budget_kw", facility.power_budget_kw, codes.FACILITY_POWER_OVER_BUDGET, "budget"),
        ("cooling_kw", facility.cooling_kw, codes.FACILITY_COOLING_EXCEEDED, "cooling"),
    ):
        if limit is not None and total > limit * 1000:
            problems.append(
                Problem(
                    code,
                    ("facility", key),
                    f"the racks draw {kilo(total, 'W')} at max_watts, above the site's {what} "
                    f"of {limit:g} kW; largest racks: {contributors}",
                )
            )
    return problems


def ports(cluster: ResolvedCluster) -> list[Problem]:
    """HCAs and uplinks cabled to each switch fit its ports."""
    switches = cluster.switch_ports
    fabric = cluster.spec.network.fabric
    problems = []
    for switch in switches:
        if switch.ports is None or switch.used <= switch.ports:
            continue
        hcas = sum(n for _, n in switch.hcas)
        links = sum(n for _, n in switch.down) + sum(n for _, n in switch.up)
        parts = [f"{hcas} HCA port{'s' if hcas != 1 else ''}"] if switch.hcas else []
        if links:
            parts.append(f"{links} switch link{'s' if links != 1 else ''}")
        contributors = most([*switch.hcas, *switch.down, *switch.up])
        if switch.assumed:
            assert fabric is not None
            where = (
                f"the {switch.ports} ports of the usual {fabric.rate.upper()} switch (set "
                "'ports' if this one has more)"
            )
            code = codes.NETWORK_SWITCH_PORTS_ASSUMED_EXCEEDED
        else:
            where = f"its {switch.ports} ports"
            code = codes.NETWORK_SWITCH_PORTS_EXCEEDED
        problems.append(
            Problem(
                code,
                ("network", "fabric", "switches", switch.index),
                f"switch '{switch.name}' has {switch.used} cables ({' + '.join(parts)}), more "
                f"than {where}; most ports: {contributors}",
            )
        )
    return problems


def _units(low: int, high: int) -> str:
    return f"U{low}" if low == high else f"U{low}-U{high}"


def _height(cluster: ResolvedCluster, node: str | None, height_u: int | None) -> int | None:
    if node is None:
        return height_u
    host = cluster.by_name.get(node)
    return host.hardware.rack_units if host is not None and host.profiled else None


def _rack_pdus(cluster: ResolvedCluster, rack: RackPlan) -> list[Problem]:
    problems = []
    first: dict[str, str] = {}
    for index, pdu in enumerate(rack.rack.pdus):
        earlier = first.setdefault(pdu.feed, pdu.name)
        if earlier != pdu.name:
            problems.append(
                Problem(
                    codes.RACKS_TWO_PDUS_ON_FEED,
                    ("racks", rack.index, "pdus", index, "feed"),
                    f"rack '{rack.rack.name}' already has PDU '{earlier}' on feed {pdu.feed}; "
                    "clustergen plans one PDU per feed (use 'banks' for its outlet groups)",
                )
            )
    if not rack.rack.pdus:
        return problems
    for device in rack.devices:
        path: SpecPath = ("racks", rack.index, "devices", device.index, "node")
        host = cluster.by_name[device.name] if device.node else None
        profile = host.hardware if host is not None and host.profiled else None
        if profile is not None and profile.power is None:
            problems.append(
                Problem(
                    codes.RACKS_NODE_POWER_UNKNOWN,
                    path,
                    f"'{device.name}' is in rack '{rack.rack.name}', which has PDUs, but its "
                    f"hardware profile '{device.hardware}' has no 'power'",
                )
            )
        elif device.unplugged_psus:
            split = profile.power.psus_per_feed if profile and profile.power else None
            missing = sorted(set(split or ()) - set(rack.feeds))
            problems.append(
                Problem(
                    codes.RACKS_PSU_FEED_MISSING,
                    path,
                    f"'{device.name}' cables {device.unplugged_psus} PSUs to feed "
                    f"{', '.join(missing)} (psus_per_feed of '{device.hardware}'), but rack "
                    f"'{rack.rack.name}' has PDUs on feed {', '.join(rack.feeds)} only",
                )
            )
    return problems


def _busbar_fed(cluster: ResolvedCluster, rack: RackPlan) -> list[Problem]:
    """A node without PSUs of its own (no psu_count) takes DC from a busbar: only a rack
    on power shelves has one. A rack with PDUs would plan it on no outlet and no feed."""
    if rack.rack.power_shelves is not None:
        return []
    has = "PDUs" if rack.rack.pdus else "neither PDUs nor power_shelves"
    problems = []
    for device in rack.devices:
        power = _power(cluster, device)
        if power is None or power.psu_count is not None:
            continue
        problems.append(
            Problem(
                codes.RACKS_NODE_WITHOUT_PSUS,
                ("racks", rack.index, "devices", device.index, "node"),
                f"'{device.name}' is in rack '{rack.rack.name}', which has {has}, but its "
                f"hardware profile '{device.hardware}' has no PSUs (no psu_count): a device "
                "fed from a busbar goes in a rack with power_shelves; give the profile "
                "psu_count and psu_watts to plug it into PDUs",
            )
        )
    return problems


def _circuit(load: FeedLoad) -> str:
    pdu = load.pdu
    phases = "3-phase" if pdu.phases == 3 else "1-phase"
    return (
        f"{pdu.name}: {pdu.volts} V {phases} {pdu.amps} A = {kilo(load.capacity_va, 'VA')}, "
        f"80% = {kilo(load.limit_va, 'VA')}"
    )


def _feed(rack: RackPlan, load: FeedLoad) -> list[Problem]:
    if load.worst_va <= load.limit_va:
        return []
    failover = load.failover_va is not None
    contributions: dict[str, float] = {}
    for outlet in load.outlets:
        share = outlet.failover_va if failover else outlet.normal_va
        contributions[outlet.device] = contributions.get(outlet.device, 0.0) + share
    when = (
        f"alone, when the other feed is lost, it carries {kilo(load.worst_va, 'VA')}"
        if failover
        else f"it carries the whole rack, {kilo(load.worst_va, 'VA')}"
    )
    return [
        Problem(
            codes.RACKS_FEED_OVER_LIMIT,
            ("racks", rack.index, "pdus", load.pdu_index, "amps"),
            f"feed {load.pdu.feed} of rack '{rack.rack.name}' ({_circuit(load)}): {when}, "
            f"{kilo(load.worst_va - load.limit_va, 'VA')} over the limit; largest: "
            f"{largest(contributions.items(), 'VA')}",
        )
    ]


def _phases(rack: RackPlan, load: FeedLoad) -> list[Problem]:
    """Each pole of a 3-phase PDU within 80% of its rating: with every feed up (an error
    otherwise, as for a feed), and on failover, where above 80% but within the rating is a
    warning (the breaker holds; the continuous-load rule is for loads that last, a feed
    loss lasts until it is repaired) and above the rating an error (the breaker trips and
    the rack loses its second feed too). A feed over its own limit is reported as that,
    and a phase that is one bank as that bank (racks.bank-over-limit)."""
    if not load.phases or load.worst_va > load.limit_va:
        return []
    failover = load.failover_va is not None
    problems = []
    for phase in load.phases:
        banks = [bank for bank in load.banks if bank.phase == phase.name]
        if len(banks) == 1 and banks[0].limit_va <= phase.limit_va:
            continue  # its one bank carries it all, behind a breaker no larger: _banks judges
        if phase.normal_va > phase.limit_va:
            code, worst, when = codes.RACKS_PHASE_OVER_LIMIT, phase.normal_va, "in normal operation"
            beyond = f"above 80% of it ({kilo(phase.limit_va, 'VA')})"
            shares = [(f"{o.device} PSU{o.psu}", o.normal_va) for o in load.outlets]
        elif failover and phase.failover_va > phase.limit_va:
            worst, when = phase.failover_va, "with the other feed lost"
            shares = [(f"{o.device} PSU{o.psu}", o.failover_va) for o in load.outlets]
            if worst > phase.capacity_va:
                code = codes.RACKS_PHASE_OVER_LIMIT
                beyond = f"above its full rating ({kilo(phase.capacity_va, 'VA')}): it trips"
            else:
                code = codes.RACKS_PHASE_OVER_LIMIT_ON_FAILOVER
                beyond = (
                    f"{worst / phase.capacity_va:.0%} of its rating, above the 80% continuous "
                    f"limit ({kilo(phase.limit_va, 'VA')})"
                )
        else:
            continue
        on_phase = [
            share
            for share, outlet in zip(shares, load.outlets, strict=True)
            if outlet.phase == phase.name
        ]
        amps = worst / (phase.capacity_va / load.pdu.amps)
        problems.append(
            Problem(
                code,
                ("racks", rack.index, "pdus", load.pdu_index, "amps"),
                f"phase {phase.name} of PDU '{load.pdu.name}' (rack '{rack.rack.name}', "
                f"{load.pdu.volts} V 3-phase {load.pdu.amps} A) carries {kilo(worst, 'VA')} "
                f"{when}: {amps:.1f} A on its {load.pdu.amps} A pole, {beyond}; "
                f"largest: {largest(on_phase, 'VA')}",
            )
        )
    return problems


def _banks(rack: RackPlan, load: FeedLoad) -> list[Problem]:
    problems = []
    pdu = load.pdu
    if pdu.outlets is not None and len(load.outlets) > pdu.outlets:
        per_device: dict[str, int] = {}
        for outlet in load.outlets:
            per_device[outlet.device] = per_device.get(outlet.device, 0) + 1
        problems.append(
            Problem(
                codes.RACKS_OUTLETS_EXCEEDED,
                ("racks", rack.index, "pdus", load.pdu_index, "outlets"),
                f"{len(load.outlets)} PSUs are cabled to PDU '{pdu.name}', which has "
                f"{pdu.outlets} outlets; most PSUs: " + most(per_device.items()),
            )
        )
    failover = load.failover_va is not None
    for bank in load.banks:
        worst = bank.failover_va if failover else bank.normal_va
        if worst <= bank.limit_va:
            continue
        on_bank = [
            (f"{o.device} PSU{o.psu}", o.failover_va if failover else o.normal_va)
            for o in load.outlets
            if o.bank == bank.number
        ]
        phase = f" ({bank.phase})" if bank.phase else ""
        problems.append(
            Problem(
                codes.RACKS_BANK_OVER_LIMIT,
                ("racks", rack.index, "pdus", load.pdu_index, "banks"),
                f"bank {bank.number}{phase} of PDU '{pdu.name}' carries {kilo(worst, 'VA')}"
                f"{' on failover' if failover else ''}, above 80% of its "
                f"{pdu.bank_amps or pdu.amps} A breaker ({kilo(bank.limit_va, 'VA')}); "
                f"largest: {largest(on_bank, 'VA')}",
            )
        )
    if load.phases and load.phase_imbalance > PHASE_IMBALANCE_LIMIT:
        off = load.most_unbalanced_phase
        mean = load.mean_phase_va
        if abs(off.normal_va - mean) >= PHASE_IMBALANCE_FLOOR * off.limit_va:
            loads = ", ".join(f"{p.name} {kilo(p.normal_va, 'VA')}" for p in load.phases)
            on_phase = [
                (f"{o.device} PSU{o.psu}", o.normal_va) for o in load.outlets if o.phase == off.name
            ]
            carries = f"carries {largest(on_phase, 'VA')}" if on_phase else "carries nothing"
            problems.append(
                Problem(
                    codes.RACKS_PHASE_IMBALANCE,
                    ("racks", rack.index, "pdus", load.pdu_index, "phases"),
                    f"phases of PDU '{pdu.name}' are {load.phase_imbalance:.0%} off their mean "
                    f"({loads}), above {PHASE_IMBALANCE_LIMIT:.0%}: {off.name} is "
                    f"{kilo(abs(off.normal_va - mean), 'VA')} "
                    f"{'above' if off.normal_va > mean else 'below'} the mean "
                    f"{kilo(mean, 'VA')} and {carries}",
                )
            )
    return problems


def _rack_limits(rack: RackPlan) -> list[Problem]:
    problems = []
    spec_rack = rack.rack
    if spec_rack.weight_kg is not None and rack.weight_kg > spec_rack.weight_kg:
        weights = [(d.name, d.weight_kg or 0.0) for d in rack.devices]
        problems.append(
            Problem(
                codes.RACKS_WEIGHT_EXCEEDED,
                ("racks", rack.index, "weight_kg"),
                f"the devices of rack '{spec_rack.name}' weigh {rack.weight_kg:g} kg, above its "
                f"{spec_rack.weight_kg:g} kg; heaviest: "
                + ", ".join(
                    f"{name} {kg:g} kg"
                    for name, kg in sorted(weights, key=lambda item: (-item[1], item[0]))[:3]
                ),
            )
        )
    if spec_rack.cooling_kw is not None and rack.max_watts > spec_rack.cooling_kw * 1000:
        problems.append(
            Problem(
                codes.RACKS_COOLING_EXCEEDED,
                ("racks", rack.index, "cooling_kw"),
                f"rack '{spec_rack.name}' draws {kilo(rack.max_watts, 'W')} at max_watts, above "
                f"its cooling of {spec_rack.cooling_kw:g} kW; largest: "
                + largest(((d.name, d.max_watts) for d in rack.devices), "W"),
            )
        )
    return problems


def _feed_loss(cluster: ResolvedCluster, plans: tuple[RackPlan, ...]) -> list[Problem]:
    """One warning per profile: the nodes that cannot run on the PSUs left after a feed loss."""
    short: dict[str, dict[tuple[int, str], list[str]]] = {}
    # Devices of a kind share one tuple of PSUs (facility._psus): count each once.
    kept: dict[tuple[int, str], int] = {}
    for rack in plans:
        if len(rack.feeds) < 2:
            continue
        for device in rack.devices:
            power = _power(cluster, device)
            if power is None or power.psu_watts is None:
                continue  # no power, or no PSUs: racks.node-power-unknown, -without-psus
            for lost in rack.feeds:
                left = kept.get((id(device.psus), lost), -1)
                if left < 0:
                    left = kept[id(device.psus), lost] = sum(
                        1 for psu in device.psus if psu.feed != lost
                    )
                if left * power.psu_watts < power.max_watts:
                    short.setdefault(device.hardware, {}).setdefault((left, lost), []).append(
                        device.name
                    )
                    break
    problems = []
    for name, cases in sorted(short.items()):
        power = cluster.spec.hardware[name].power
        assert power is not None and power.psu_watts is not None
        detail = "; ".join(
            f"{compress(nodes)} keep {left} of {power.psu_count} PSUs when "
            f"feed {lost} is lost: {left} x {power.psu_watts} W = {left * power.psu_watts} W"
            for (left, lost), nodes in sorted(cases.items())
        )
        problems.append(
            Problem(
                codes.HARDWARE_FEED_LOSS_UNDERPOWERS,
                ("hardware", name, "power"),
                f"{detail}, below max_watts {power.max_watts} W: on a feed loss these nodes "
                "throttle or power off (redundant_psus does not help when a whole feed goes)",
            )
        )
    return problems


def _power(cluster: ResolvedCluster, device: Device) -> Power | None:
    if not device.node:
        return None
    host = cluster.by_name[device.name]
    return host.hardware.power if host.profiled else None
