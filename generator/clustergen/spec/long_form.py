"""Expanding patterns (model/patterns.py) to the long form, before the spec is validated.

What the rest of clustergen sees is the long form: the same data a spec that writes every
rack, switch and target out would give. For messages, each expanded element remembers the
pattern it came from (`aliases`: where in the file it stands) and its name (`labels`:
"rack g0137"), so a problem inside a pattern points at the pattern's line and names the
element.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from clustergen.base import codes
from clustergen.base.errors import Problem, SpecPath
from clustergen.model.common import expand_hostlist
from clustergen.spec.hosts import compress, fold_last_numbers

if TYPE_CHECKING:
    from clustergen.model.patterns import SwitchGroup

_PLACEHOLDER = re.compile(r"\{(rack|index|node|n|unit|rail)(?::(0?[1-9]?[dxX]))?\}")


@dataclass
class Expansion:
    data: Any
    errors: list[ErrorDetails] = field(default_factory=list)  # patterns' shape errors
    problems: list[Problem] = field(default_factory=list)
    aliases: dict[SpecPath, SpecPath] = field(default_factory=dict)
    labels: dict[SpecPath, str] = field(default_factory=dict)

    @property
    def sections(self) -> set[str]:
        """Top-level sections whose patterns could not be expanded."""
        found = {str(error["loc"][0]) for error in self.errors}
        return found | {str(problem.path[0]) for problem in self.problems}


def expand(data: dict[str, Any]) -> Expansion:
    """The long form of `data` (itself when it has no patterns; never changed in place)."""
    out = Expansion(data)
    racks = data.get("racks")
    if isinstance(racks, list) and any(_is(item, "names") for item in racks):
        out.data = {**out.data, "racks": _items(out, ("racks",), racks, _marked("names", _racks))}
    for net in FABRIC_NETWORKS:
        fabric = _at(data, ("network", net))
        switches = fabric.get("switches") if isinstance(fabric, dict) else None
        if isinstance(switches, list) and any(_switch_pattern(item) for item in switches):
            expanded = _items(out, ("network", net, "switches"), switches, _switch_pattern)
            network = {**out.data["network"], net: {**fabric, "switches": expanded}}
            out.data = {**out.data, "network": network}
    domains = _at(data, ("network", "nvlink_domains"))
    if isinstance(domains, list) and any(_is(item, "names") for item in domains):
        where: SpecPath = ("network", "nvlink_domains")
        expanded = _items(out, where, domains, _marked("names", _nvlink_domains))
        out.data = {**out.data, "network": {**out.data["network"], "nvlink_domains": expanded}}
    lustre = _at(data, ("storage", "lustre"))
    for kind in ("mdts", "osts"):
        targets = lustre.get(kind) if isinstance(lustre, dict) else None
        if isinstance(targets, list) and any(_is(item, "count") for item in targets):
            path = ("storage", "lustre", kind)
            lustre = {**lustre, kind: _items(out, path, targets, _marked("count", _targets))}
            out.data = {**out.data, "storage": {**out.data["storage"], "lustre": lustre}}
    return out


# The networks whose switches may be written as patterns: the compute fabric and the
# storage fabric.
FABRIC_NETWORKS = ("fabric", "storage")


# An expanded element, its name, and where parts of it stand in the pattern (relative).
Element = tuple[dict[str, Any], str, dict[SpecPath, SpecPath]]
Expander = Callable[[Expansion, SpecPath, Any], Iterator[Element]]
# The expander of an item that is a pattern; None for an element written out.
Picker = Callable[[Any], Expander | None]


def _marked(marker: str, expander: Expander) -> Picker:
    return lambda item: expander if _is(item, marker) else None


def _switch_pattern(item: Any) -> Expander | None:
    if _is(item, "rails"):
        return _rail_fabric
    return _switches if _is(item, "names") else None


def _items(out: Expansion, path: SpecPath, items: list[Any], pick: Picker) -> list[Any]:
    """The list with each pattern item replaced by its elements, in place."""
    result: list[Any] = []
    for index, item in enumerate(items):
        expander = pick(item)
        if expander is None:
            if len(result) != index:  # an element written out, moved by an earlier pattern
                moved: SpecPath = (*path, len(result))
                out.aliases[moved] = (*path, index)
            result.append(item)
            continue
        source = (*path, index)
        for element, label, places in expander(out, source, item):
            at = (*path, len(result))
            out.aliases[at] = source
            for part, where in places.items():
                out.aliases[at + part] = source + where
            out.labels[at] = label
            result.append(element)
    return result


def _racks(out: Expansion, path: SpecPath, item: Any) -> Iterator[Element]:
    from clustergen.model.patterns import RackPattern  # built only for a spec with patterns

    pattern = _model(out, path, RackPattern, item)
    if pattern is None:
        return
    names = expand_hostlist(pattern.names)
    nodes = expand_hostlist(pattern.nodes) if pattern.nodes else ()
    if nodes and not pattern.units:
        out.problems.append(
            Problem(codes.PATTERN_NO_ROOM, (*path, "nodes"), "a rack pattern's nodes need units")
        )
        return
    per_rack = len(pattern.units)
    if len(nodes) > len(names) * per_rack:
        out.problems.append(
            Problem(
                codes.PATTERN_NO_ROOM,
                (*path, "nodes"),
                f"{len(nodes)} nodes do not fit {len(names)} racks x {per_rack} units "
                f"({len(names) * per_rack} places)",
            )
        )
        return
    places_by_count: dict[int, dict[SpecPath, SpecPath]] = {}
    for number, name in enumerate(names):
        own = nodes[number * per_rack : (number + 1) * per_rack]
        rack: dict[str, Any] = {"name": name, "height_u": pattern.height_u}
        if pattern.pdus:
            rack["pdus"] = _fill(pattern.pdus, rack=name)
        devices = [{"u": u, "node": node} for u, node in zip(pattern.units, own, strict=False)]
        devices += _fill(pattern.devices, rack=name)
        if devices:
            rack["devices"] = devices
        for key in ("weight_kg", "cooling_kw", "power_shelves", "air_cooling_kw"):
            if getattr(pattern, key) is not None:
                rack[key] = getattr(pattern, key)
        if len(own) not in places_by_count:
            places_by_count[len(own)] = _rack_places(len(own), len(pattern.devices))
        yield rack, f"rack {name}", places_by_count[len(own)]


def _rack_places(nodes: int, templates: int) -> dict[SpecPath, SpecPath]:
    """Where each device of a rack stands in its pattern: a node at its unit, a device at
    its template. Racks of as many nodes share one (it is only read)."""
    places: dict[SpecPath, SpecPath] = {}
    for k in range(nodes):
        places[("devices", k)] = places[("devices", k, "u")] = ("units", k)
        places[("devices", k, "node")] = ("nodes",)
    places.update({("devices", nodes + k): ("devices", k) for k in range(templates)})
    return places


def _switches(out: Expansion, path: SpecPath, item: Any) -> Iterator[Element]:
    from clustergen.model.patterns import SwitchGroup  # built only for a spec with patterns

    group = _model(out, path, SwitchGroup, item)
    if group is None:
        return
    if (group.nodes is None) == (group.switches is None):
        out.problems.append(
            Problem(
                codes.NETWORK_SWITCH_LEAF_OR_SPINE,
                path,
                f"switch group '{group.names}' needs exactly one of 'nodes' (leaves) or "
                "'switches' (spines)",
            )
        )
        return
    kind = "nodes" if group.nodes is not None else "switches"
    if group.per_switch == "all" and kind == "nodes":
        out.problems.append(
            Problem(
                codes.NETWORK_SWITCH_LEAF_OR_SPINE,
                (*path, "per_switch"),
                f"switch group '{group.names}': per_switch all puts every member under every "
                "switch, which only a spine group ('switches') can have: a node hangs from "
                "one leaf (or from one leaf per rail: the rails pattern)",
            )
        )
        return
    names = expand_hostlist(group.names)
    members = expand_hostlist(getattr(group, kind))
    if group.per_switch == "all":  # every spine over every leaf: one hostlist for them all
        every = compress(members)
        for name in names:
            yield _switch(group, name, {"name": name, kind: every})
        return
    shares = _deal(len(members), len(names), group.per_switch)
    if shares is None:
        out.problems.append(
            Problem(
                codes.PATTERN_NO_ROOM,
                (*path, "per_switch"),
                f"{len(members)} {kind} do not fit {len(names)} switches x {group.per_switch}",
            )
        )
        return
    start = 0
    for name, share in zip(names, shares, strict=True):
        if share == 0:
            out.problems.append(
                Problem(
                    codes.PATTERN_NO_ROOM,
                    (*path, "names"),
                    f"switch {name}: no {kind} left for it ({len(members)} {kind} over "
                    f"{len(names)} switches)",
                )
            )
            return
        start += share
        yield _switch(group, name, {"name": name, kind: compress(members[start - share : start])})


def _switch(group: SwitchGroup, name: str, switch: dict[str, Any]) -> Element:
    """One switch of a group: its members, and the keys the group gives each switch."""
    for key in ("ports", "model"):
        if getattr(group, key) is not None:
            switch[key] = getattr(group, key)
    if group.uplinks != 1:
        switch["uplinks"] = group.uplinks
    return switch, f"switch {name}", {}


def _rail_fabric(out: Expansion, path: SpecPath, item: Any) -> Iterator[Element]:
    """A rail-optimised Clos: each unit's leaf of each rail (rail by rail within a unit),
    then the spines over their leaves, then the cores over the spines."""
    from clustergen.model.patterns import RailFabric  # built only for a spec with patterns

    fabric = _model(out, path, RailFabric, item)
    if fabric is None:
        return
    units = expand_hostlist(fabric.units)
    leaves = _rail_leaves(out, path, fabric, units)
    spines = expand_hostlist(fabric.spines) if fabric.spines else ()
    groups = _spine_groups(out, path, fabric, len(units), len(spines))
    cores = _core_groups(out, path, fabric, spines, groups)
    if leaves is None or groups is None or cores is None:
        return
    for leaf in leaves:
        yield (
            _switch_entry(leaf, fabric.leaf_model, fabric.leaf_ports, fabric.uplinks),
            (f"switch {leaf['name']}"),
            {("nodes",): ("nodes",), ("name",): ("leaf",)},
        )
    by_place: dict[tuple[int | None, int | None], list[str]] = {}
    for number, leaf in enumerate(leaves):
        pod = number // fabric.rails // fabric.units_per_pod if fabric.units_per_pod else None
        for place in ((pod, leaf["rail"]), (pod, None)):
            by_place.setdefault(place, []).append(leaf["name"])
    for spine, place in zip(spines, groups, strict=True):
        entry = {"name": spine, "switches": fold_last_numbers(by_place.get(place, []))}
        up = fabric.core_uplinks if fabric.cores else 1
        yield (
            _switch_entry(entry, fabric.spine_model, fabric.spine_ports, up),
            (f"switch {spine}"),
            {("name",): ("spines",), ("switches",): ("leaf",)},
        )
    for core, below in cores:
        entry = {"name": core, "switches": fold_last_numbers(below)}
        places: dict[SpecPath, SpecPath] = {("name",): ("cores",), ("switches",): ("spines",)}
        yield (
            _switch_entry(entry, fabric.core_model, fabric.core_ports, 1),
            f"switch {core}",
            places,
        )


def _spine_groups(
    out: Expansion, path: SpecPath, fabric: Any, units: int, spines: int
) -> list[tuple[int | None, int | None]] | None:
    """The pod and rail of each spine (None: every pod's, every rail's), spines dealt out pod
    by pod, rail by rail within a pod; None (with the problem) on a count that does not fit."""
    pods = -(-units // fabric.units_per_pod) if fabric.units_per_pod else None
    per_rail = fabric.spines_per_rail
    rails = fabric.rails if per_rail else 1
    if per_rail is None and pods is None:
        return [(None, None)] * spines
    per_pod = rails * (per_rail or 1) if per_rail else spines // (pods or 1)
    wanted = per_pod * (pods or 1)
    if spines == 0 or spines != wanted or (pods and per_rail is None and spines % pods):
        what = f"{per_rail} for each of {fabric.rails} rails" if per_rail else "as many"
        where = f" in each of {pods} pods" if pods else ""
        out.problems.append(
            Problem(
                codes.PATTERN_NO_ROOM,
                (*path, "spines"),
                f"{spines} spines are not {what}{where} ({wanted})",
            )
        )
        return None
    groups: list[tuple[int | None, int | None]] = []
    for number in range(spines):
        pod, within = divmod(number, per_pod)
        rail = 1 + within // per_rail if per_rail else None
        groups.append((pod if pods else None, rail))
    return groups


def _core_groups(
    out: Expansion,
    path: SpecPath,
    fabric: Any,
    spines: Sequence[str],
    groups: list[tuple[int | None, int | None]] | None,
) -> list[tuple[str, list[str]]] | None:
    """Each core and the spines below it: every spine; or, with pods, the cores dealt out
    over the spines' places in a pod, each core over the spine in its place in every pod."""
    cores = expand_hostlist(fabric.cores) if fabric.cores else ()
    if not cores:
        return []
    if not spines:
        out.problems.append(
            Problem(codes.PATTERN_NO_ROOM, (*path, "cores"), "cores need spines below them")
        )
        return None
    if groups is None:
        return None
    if not fabric.units_per_pod:
        return [(core, list(spines)) for core in cores]
    pods = max(pod or 0 for pod, _ in groups) + 1
    places = len(spines) // pods
    if len(cores) % places:
        out.problems.append(
            Problem(
                codes.PATTERN_NO_ROOM,
                (*path, "cores"),
                f"{len(cores)} cores do not divide over the {places} spine places of a pod",
            )
        )
        return None
    per_place = len(cores) // places
    return [
        (core, [spines[pod * places + number // per_place] for pod in range(pods)])
        for number, core in enumerate(cores)
    ]


def _switch_entry(
    entry: dict[str, Any], model: str | None, ports: int | None, uplinks: int
) -> dict[str, Any]:
    if ports is not None:
        entry["ports"] = ports
    if model is not None:
        entry["model"] = model
    if uplinks != 1:
        entry["uplinks"] = uplinks
    return entry


def _rail_leaves(
    out: Expansion, path: SpecPath, fabric: Any, units: Sequence[str]
) -> list[dict[str, Any]] | None:
    """Each unit's leaves, rail 1 first; None (with the problem) when they cannot be made."""
    for placeholder, count, what in (
        ("{unit", len(units), "units"),
        ("{rail", fabric.rails, "rails"),
    ):
        if count > 1 and placeholder not in fabric.leaf:
            out.problems.append(
                Problem(
                    codes.PATTERN_NO_ROOM,
                    (*path, "leaf"),
                    f"leaf name '{fabric.leaf}' has no {placeholder}}} placeholder, so the "
                    f"{count} {what} would give leaves of one name",
                )
            )
            return None
    nodes = expand_hostlist(fabric.nodes)
    shares = _dealt(
        out,
        path,
        (len(nodes), "nodes"),
        (len(units), "units", "a unit", "units"),
        fabric.per_unit,
        "per_unit",
    )
    if shares is None:
        return None
    leaves = []
    start = 0
    for unit, share in zip(units, shares, strict=True):
        members = compress(nodes[start : start + share])
        start += share
        for rail in range(1, fabric.rails + 1):
            name = _fill(fabric.leaf, unit=unit, rail=rail)
            leaves.append({"name": name, "nodes": members, "rail": rail})
    return leaves


def _nvlink_domains(out: Expansion, path: SpecPath, item: Any) -> Iterator[Element]:
    from clustergen.model.patterns import NvlinkDomainGroup  # only for a spec with patterns

    group = _model(out, path, NvlinkDomainGroup, item)
    if group is None:
        return
    names = expand_hostlist(group.names)
    trays = expand_hostlist(group.nodes)
    shares = _dealt(
        out,
        path,
        (len(trays), "trays"),
        (len(names), "NVLink domains", "a domain", "names"),
        group.per_domain,
        "per_domain",
    )
    if shares is None:
        return
    start = 0
    for name, share in zip(names, shares, strict=True):
        members = compress(trays[start : start + share])
        start += share
        yield {"name": name, "nodes": members}, f"NVLink domain {name}", {("nodes",): ("nodes",)}


def _targets(out: Expansion, path: SpecPath, item: Any) -> Iterator[Element]:
    from clustergen.model.patterns import TargetGroup  # built only for a spec with patterns

    group = _model(out, path, TargetGroup, item)
    if group is None:
        return
    servers = expand_hostlist(group.nodes)
    if group.count % len(servers):
        out.problems.append(
            Problem(
                codes.PATTERN_NO_ROOM,
                (*path, "count"),
                f"{group.count} targets do not divide evenly over {len(servers)} servers",
            )
        )
        return
    if group.failover == "pairs" and len(servers) % 2:
        out.problems.append(
            Problem(
                codes.PATTERN_NO_ROOM,
                (*path, "failover"),
                f"failover: pairs needs an even number of servers, not {len(servers)}",
            )
        )
        return
    if group.first_index + group.count - 1 > 65535:
        out.problems.append(
            Problem(
                codes.PATTERN_NO_ROOM,
                (*path, "count"),
                f"indices {group.first_index}-{group.first_index + group.count - 1} pass "
                "65535, the largest Lustre target index",
            )
        )
        return
    per_server = group.count // len(servers)
    for offset in range(group.count):
        server_number, n = divmod(offset, per_server)
        node = servers[server_number]
        values = {"index": group.first_index + offset, "node": node, "n": n}
        target: dict[str, Any] = {
            "index": values["index"],
            "node": node,
            "device": _fill(group.device, **values),
        }
        if group.failover == "pairs":
            target["failover"] = [servers[server_number ^ 1]]
        for key in ("mkfs_options", "mount_options"):
            if getattr(group, key):
                target[key] = _fill(getattr(group, key), **values)
        for key in ("zpool", "dataset"):
            if getattr(group, key) is not None:
                target[key] = _fill(getattr(group, key), **values)
        yield target, f"{str(path[2])[:-1].upper()} {values['index']}", {}


def long_form_text(data: Any) -> str:
    """The spec's data as YAML, in the order it was written."""
    import yaml

    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    header = "# The long form, written by `clustergen expand`.\n"
    return header + yaml.dump(
        data, Dumper=dumper, sort_keys=False, default_flow_style=False, width=100
    )


def _dealt(
    out: Expansion,
    path: SpecPath,
    members: tuple[int, str],
    holders: tuple[int, str, str, str],
    per: int | None,
    per_key: str,
) -> list[int] | None:
    """How many members each holder takes (members (count, kind) over holders (count, kind,
    'a holder', the key that names them)); None, with the problem, when they do not fit or
    a holder gets none."""
    shares = _deal(members[0], holders[0], per)
    if shares is not None and 0 not in shares:
        return shares
    out.problems.append(
        Problem(
            codes.PATTERN_NO_ROOM,
            (*path, per_key if shares is None else holders[3]),
            f"{members[0]} {members[1]} do not fill {holders[0]} {holders[1]}"
            + (f" x {per}" if per else "")
            + ("" if shares is None else f": {holders[2]} would have no {members[1][:-1]}"),
        )
    )
    return None


def _deal(members: int, switches: int, per_switch: int | None) -> list[int] | None:
    if per_switch is None:
        base, extra = divmod(members, switches)
        return [base + (1 if k < extra else 0) for k in range(switches)]
    if members > switches * per_switch:
        return None
    return [max(0, min(per_switch, members - k * per_switch)) for k in range(switches)]


def _model(out: Expansion, path: SpecPath, model: type[BaseModel], item: Any) -> Any:
    try:
        return model.model_validate(item)
    except ValidationError as exc:
        for error in exc.errors(include_url=False):
            out.errors.append({**error, "loc": (*path, *error["loc"])})
        return None


def _fill(value: Any, **values: Any) -> Any:
    """`value` with every placeholder in its strings replaced; unknown ones are left for
    the long form's checks to report."""
    if isinstance(value, str):
        if "{" not in value:  # most strings of a template have no placeholder
            return value
        return _PLACEHOLDER.sub(lambda m: _format(m, values), value)
    if isinstance(value, list):
        return [_fill(item, **values) for item in value]
    if isinstance(value, dict):
        return {key: _fill(item, **values) for key, item in value.items()}
    return value


def _format(match: re.Match[str], values: dict[str, Any]) -> str:
    name, spec = match[1], match[2]
    if name not in values:
        return match[0]
    value = values[name]
    if spec and isinstance(value, int):
        return format(value, spec)
    return str(value)


def _is(item: Any, marker: str) -> bool:
    return isinstance(item, dict) and marker in item


def _at(data: Any, path: SpecPath) -> Any:
    for part in path:
        if not isinstance(data, dict):
            return None
        data = data.get(part)
    return data
