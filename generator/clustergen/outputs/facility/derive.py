"""What the facility sheets and pictures print, from the cluster's one physical plan.

Every number comes from ResolvedCluster.rack_plans (the plan the power checks judged) and every
cable from ResolvedCluster.switch_ports; here they are only turned into rows of fixed-format text
(sheets.py) and into the coordinates of the rack elevations (elevation.py), so the
templates hold no arithmetic. This module puts them together with the site's summary
and the warnings the pages repeat.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from clustergen.base.errors import collapse_alike, format_path
from clustergen.outputs.facility.elevation import Elevation, Shape, percent, shape
from clustergen.outputs.facility.sheets import (
    FeedRow,
    bank_sheet,
    cdu_sheet,
    device_sheet,
    feed_row,
    heat_sheet,
    outlet_sheet,
    phase_sheet,
    rack_sheet,
    rack_totals,
    shelf_sheet,
    tray_sheet,
)
from clustergen.resolve import ResolvedCluster
from clustergen.spec.names import element_names
from clustergen.spec.physical_plan import RackPlan, kilo


@dataclass(frozen=True, order=True)
class SpecWarning:
    path: str
    message: str
    code: str


@dataclass(frozen=True)
class FacilitySheets:
    cluster: str
    shapes: tuple[Shape, ...]  # each rack's elevation, as a Shape; spec order
    rack_rows: tuple[tuple[str, ...], ...]
    rack_totals: tuple[tuple[str, ...], ...]  # rack, units, used, free, typical W, max W
    feed_rows: tuple[FeedRow, ...]
    device_rows: tuple[tuple[str, ...], ...]
    phase_rows: tuple[tuple[str, ...], ...]
    bank_rows: tuple[tuple[str, ...], ...]
    outlet_rows: tuple[tuple[str, ...], ...]
    site: tuple[str, ...]  # summary lines
    warnings: tuple[SpecWarning, ...]
    shelf_rows: tuple[tuple[str, ...], ...] = ()  # racks on power shelves
    heat_rows: tuple[tuple[str, ...], ...] = ()  # heat to liquid and air; () where unused
    cdu_rows: tuple[tuple[str, ...], ...] = ()
    tray_rows: tuple[tuple[str, ...], ...] = ()  # NVLink compute and switch trays per rack

    @functools.cached_property
    def elevations(self) -> tuple[Elevation, ...]:
        """Each rack's elevation, names and all; the SVGs are rendered from the shapes."""
        return tuple(shape.named() for shape in self.shapes)


def derive_facility(cluster: ResolvedCluster) -> FacilitySheets | None:
    """None for a spec without racks: there is nothing for the facility team."""
    spec = cluster.spec
    if not spec.racks:
        return None
    plans = cluster.rack_plans
    fabric = spec.network.fabric
    switch_models = {s.name: s.model for s in fabric.switches} if fabric else {}
    return FacilitySheets(
        cluster=spec.cluster.name,
        shapes=tuple(shape(rack, switch_models) for rack in plans),
        rack_rows=rack_sheet(plans, switch_models),
        rack_totals=rack_totals(plans),
        feed_rows=tuple(feed_row(rack, load) for rack in plans for load in rack.loads),
        device_rows=device_sheet(plans),
        phase_rows=phase_sheet(plans),
        bank_rows=bank_sheet(plans),
        outlet_rows=outlet_sheet(plans),
        site=site_summary(cluster, plans),
        warnings=spec_warnings(cluster),
        shelf_rows=shelf_sheet(plans),
        heat_rows=heat_sheet(cluster),
        cdu_rows=cdu_sheet(cluster),
        tray_rows=tray_sheet(cluster),
    )


def site_summary(cluster: ResolvedCluster, plans: tuple[RackPlan, ...]) -> tuple[str, ...]:
    """The site's lines: its racks and draw, and its share of the power and cooling budget."""
    spec = cluster.spec
    total = sum(rack.max_watts for rack in plans)
    racks = f"{len(plans)} rack{'s' if len(plans) != 1 else ''}"
    site = [f"{racks}, {kilo(total, 'W')} at max draw"]
    if spec.facility is not None and spec.facility.power_budget_kw is not None:
        budget = spec.facility.power_budget_kw * 1000
        site.append(f"site power budget {kilo(budget, 'W')}: {percent(total, budget)} used")
    if spec.facility is not None and spec.facility.cooling_kw is not None:
        cooling = spec.facility.cooling_kw * 1000
        site.append(f"site cooling {kilo(cooling, 'W')}: {percent(total, cooling)} used")
    return tuple(site)


def spec_warnings(cluster: ResolvedCluster) -> tuple[SpecWarning, ...]:
    """The spec's warnings the pages repeat, alike ones once, as validate prints them."""
    spec = cluster.spec
    ignored = set(spec.ignore)
    # The dated warnings (end of support) are left out: the render depends on the spec and
    # clustergen alone, not on the day it is made.
    kept = [
        p
        for p in cluster.warnings
        if p.severity == "warning" and p.code.name not in ignored and not p.code.dated
    ]
    # Alike warnings once, as validate prints them: the first in the spec's order stands
    # for the others (racks[5] before racks[10]).
    kept.sort(
        key=lambda p: (
            tuple((0, part, "") if isinstance(part, int) else (1, 0, part) for part in p.path),
            p.message,
        )
    )
    names = functools.cache(lambda: element_names(spec.model_dump(exclude_none=True)))
    return tuple(
        sorted(
            SpecWarning(format_path(p.path), p.message, str(p.code))
            for p in collapse_alike(kept, names)
        )
    )
