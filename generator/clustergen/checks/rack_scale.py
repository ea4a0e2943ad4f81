"""Power shelves and liquid cooling of rack-scale systems (GB200/GB300 NVL72): the rack's
max draw on the shelves its redundancy leaves, the air share of its heat against its air
cooling, and the liquid share of a row's racks against their CDU. The numbers come from
clustergen.spec.physical_plan, which the facility sheets print (docs/facility.md)."""

from __future__ import annotations

from clustergen.base import codes
from clustergen.base.errors import Problem, SpecPath
from clustergen.model.common import expand_hostlist
from clustergen.resolve import ResolvedCluster
from clustergen.spec.physical_plan import RackPlan, kilo, largest


def shelves(cluster: ResolvedCluster) -> list[Problem]:
    """Each rack on power shelves: its max draw fits on the shelves left when the
    redundancy is spent (N+N: half of them, one feed's), and every node has a power."""
    problems: list[Problem] = []
    for rack in cluster.rack_plans:
        spec_shelves = rack.rack.power_shelves
        capacity = rack.shelf_capacity_w
        if spec_shelves is None or capacity is None:
            continue
        problems += _unpowered(cluster, rack)
        if rack.max_watts <= capacity:
            continue
        total = spec_shelves.count * spec_shelves.shelf_kw * 1000
        lost = spec_shelves.count - spec_shelves.carrying
        beyond = (
            f"above even all {spec_shelves.count} together ({kilo(total, 'W')})"
            if rack.max_watts > total
            else f"so the rack is not {spec_shelves.redundancy}: the "
            f"{_shelves(spec_shelves.carrying)} left cannot carry it"
        )
        problems.append(
            Problem(
                codes.RACKS_SHELVES_OVER_CAPACITY,
                ("racks", rack.index, "power_shelves", "count"),
                f"rack '{rack.rack.name}' draws {kilo(rack.max_watts, 'W')} at max_watts; its "
                f"{spec_shelves.count} power shelves of {spec_shelves.shelf_kw:g} kW in "
                f"{spec_shelves.redundancy} carry {kilo(capacity, 'W')} "
                f"({spec_shelves.carrying} x {spec_shelves.shelf_kw:g} kW) with {_shelves(lost)} "
                f"lost, {beyond}; "
                "largest: " + largest(((d.name, d.max_watts) for d in rack.devices), "W"),
            )
        )
    return problems


def _shelves(count: int) -> str:
    return f"{count} shel{'f' if count == 1 else 'ves'}"


def _unpowered(cluster: ResolvedCluster, rack: RackPlan) -> list[Problem]:
    problems = []
    for device in rack.devices:
        host = cluster.by_name[device.name] if device.node else None
        if host is not None and host.profiled and host.hardware.power is None:
            problems.append(
                Problem(
                    codes.RACKS_NODE_POWER_UNKNOWN,
                    ("racks", rack.index, "devices", device.index, "node"),
                    f"'{device.name}' is in rack '{rack.rack.name}', which has power shelves, "
                    f"but its hardware profile '{device.hardware}' has no 'power'",
                )
            )
    return problems


def air(cluster: ResolvedCluster) -> list[Problem]:
    """Each rack's heat to air (its max draw less what liquid takes) within air_cooling_kw."""
    problems = []
    for rack in cluster.rack_plans:
        limit = rack.rack.air_cooling_kw
        if limit is None or rack.air_watts <= limit * 1000:
            continue
        problems.append(
            Problem(
                codes.RACKS_AIR_COOLING_EXCEEDED,
                ("racks", rack.index, "air_cooling_kw"),
                f"rack '{rack.rack.name}' sends {kilo(rack.air_watts, 'W')} to air at max_watts "
                f"({kilo(rack.max_watts, 'W')} less {kilo(rack.liquid_watts, 'W')} to liquid), "
                f"above its air cooling of {limit:g} kW; most to air: "
                + largest(((d.name, d.max_watts - d.liquid_watts) for d in rack.devices), "W"),
            )
        )
    return problems


def cdus(cluster: ResolvedCluster) -> list[Problem]:
    """Each CDU's racks are known and on it alone, and their heat to liquid fits its
    capacity; a rack that sends heat to liquid is on a CDU where the site lists any."""
    facility = cluster.spec.facility
    if facility is None or not facility.cdus:
        return []
    plans = {rack.rack.name: rack for rack in cluster.rack_plans}
    served: dict[str, str] = {}
    problems = []
    for index, cdu in enumerate(facility.cdus):
        path: SpecPath = ("facility", "cdus", index)
        names = expand_hostlist(cdu.racks)
        for name in names:
            if name not in plans:
                problems.append(
                    Problem(
                        codes.FACILITY_CDU_UNKNOWN_RACK,
                        (*path, "racks"),
                        f"CDU '{cdu.name}' serves rack '{name}', which is not defined",
                    )
                )
            elif served.setdefault(name, cdu.name) != cdu.name:
                problems.append(
                    Problem(
                        codes.FACILITY_RACK_ON_TWO_CDUS,
                        (*path, "racks"),
                        f"rack '{name}' is served by CDU '{served[name]}' already; a rack's "
                        "liquid loop is on one CDU",
                    )
                )
        liquid = [(name, plans[name].liquid_watts) for name in names if name in plans]
        heat = sum(watts for _, watts in liquid)
        if heat > cdu.capacity_kw * 1000:
            problems.append(
                Problem(
                    codes.FACILITY_CDU_OVER_CAPACITY,
                    (*path, "capacity_kw"),
                    f"the racks of CDU '{cdu.name}' send {kilo(heat, 'W')} to liquid at "
                    f"max_watts, above its {cdu.capacity_kw:g} kW; largest: "
                    + largest(liquid, "W"),
                )
            )
    for rack in cluster.rack_plans:
        if rack.liquid_watts > 0 and rack.rack.name not in served:
            problems.append(
                Problem(
                    codes.FACILITY_LIQUID_RACK_WITHOUT_CDU,
                    ("racks", rack.index, "name"),
                    f"rack '{rack.rack.name}' sends {kilo(rack.liquid_watts, 'W')} to liquid, "
                    "but no CDU in facility.cdus serves it: that heat is not checked",
                )
            )
    return problems
