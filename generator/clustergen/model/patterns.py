"""Patterns for repeated structure: racks alike, switch groups and Lustre target groups.

A pattern stands where the elements it expands to would stand (an item of `racks`, of
`network.fabric.switches`, of `storage.lustre.mdts`/`osts`); clustergen.spec.long_form
expands it before anything else reads the spec, so its meaning is exactly the long
form's. In the strings of a pattern's templates `{rack}`, `{index}`, `{node}` and `{n}`
stand for the expanded element's values; an integer may carry a format, e.g.
`{index:04x}`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from clustergen.model.common import Hostlist, Int, StrictModel
from clustergen.model.syntax import DeviceModel


class RackPattern(StrictModel):
    """Racks alike: one rack per name, the nodes dealt out in order, one per unit in
    'units' (the last racks may hold fewer)."""

    names: Hostlist = Field(description="The racks' names, e.g. g[0001-4096].")
    height_u: Int = Field(ge=1, le=60, description="Usable rack units of each rack.")
    nodes: Hostlist | None = Field(
        default=None, description="The nodes to place, in order, len(units) to a rack."
    )
    units: list[Int] = Field(
        default_factory=list,
        max_length=60,
        description="The unit of each rack's 1st, 2nd, ... node, e.g. [1, 9, 17, 25].",
    )
    pdus: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Each rack's PDUs, as racks[].pdus[]; {rack} in a string is the rack's "
        "name, e.g. '{rack}-pdu-a'.",
    )
    devices: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Devices every rack has besides its nodes (a switch, a patch panel), as "
        "racks[].devices[]; {rack} in a string is the rack's name.",
    )
    weight_kg: float | None = Field(
        default=None, gt=0, description="Load each rack may carry in kg (devices only)."
    )
    cooling_kw: float | None = Field(
        default=None, gt=0, description="Heat each rack's cooling removes, kW (max draw)."
    )
    power_shelves: dict[str, Any] | None = Field(
        default=None,
        description="Each rack's power shelves, as racks[].power_shelves (in place of pdus).",
    )
    air_cooling_kw: float | None = Field(
        default=None, gt=0, description="Heat each rack's air cooling removes, kW."
    )


class SwitchGroup(StrictModel):
    """Switches alike: one switch per name, the nodes (leaves) or switches (spines) dealt out
    in order, 'per_switch' to each."""

    names: Hostlist = Field(description="The switches' names, e.g. leaf[001-512].")
    nodes: Hostlist | None = Field(
        default=None, description="Leaves: the nodes to deal out, e.g. gpu[00001-16384]."
    )
    switches: Hostlist | None = Field(
        default=None, description="Spines: the child switches to deal out."
    )
    per_switch: Annotated[Int, Field(ge=1)] | Literal["all"] | None = Field(
        default=None,
        description="Members per switch; default: as evenly as they go (the first switches "
        "take one more). all (a spine group only): every spine over every switch of "
        "'switches', the two tiers of a fat tree fully meshed.",
    )
    ports: Int | None = Field(
        default=None, ge=1, le=4096, description="Ports of each switch, as switches[].ports."
    )
    model: DeviceModel | None = Field(
        default=None, description="Switch model, printed on the cable sheet and the elevations."
    )
    uplinks: Int = Field(
        default=1, ge=1, le=1024, description="Cables from each switch to each of its parents."
    )


class TargetGroup(StrictModel):
    """Lustre targets alike: 'count' targets from index 'first_index', dealt out in order
    over 'nodes', count / len(nodes) to each."""

    first_index: Int = Field(default=0, ge=0, le=65535, description="Index of the first target.")
    count: Int = Field(ge=1, le=65536, description="Number of targets.")
    nodes: Hostlist = Field(description="The primary servers, e.g. oss[001-256].")
    failover: Literal["none", "pairs"] = Field(
        default="none",
        description="pairs: each server's targets fail over to its partner (1st and 2nd "
        "server of 'nodes', 3rd and 4th, ...).",
    )
    device: str = Field(
        description="Device template, e.g. /dev/disk/by-id/dm-name-ost{index:04x}: {index} is "
        "the target's index, {node} its server, {n} its number on that server from 0."
    )
    mkfs_options: list[str] = Field(default_factory=list, description="As osts[].mkfs_options.")
    mount_options: list[str] = Field(default_factory=list, description="As osts[].mount_options.")
    zpool: dict[str, Any] | None = Field(
        default=None, description="As osts[].zpool; templates as in 'device'."
    )
    dataset: dict[str, Any] | None = Field(default=None, description="As osts[].dataset.")


class RailFabric(StrictModel):
    """A rail-optimised Clos fabric: every scalable unit has one leaf per rail, compute HCA
    k of each of its nodes goes to its rail-k leaf, the leaves go up to the spines (all of
    them, or their rail's) and the spines to the cores."""

    rails: Int = Field(
        ge=1,
        le=64,
        description="Rails (planes): compute HCA k (1-based, in the profile's order) of every "
        "node goes to its unit's rail-k leaf.",
    )
    units: Hostlist = Field(description="The scalable units' names, e.g. su[1-4].")
    nodes: Hostlist = Field(
        description="The nodes, dealt out to the units in order, e.g. gpu[001-128]."
    )
    per_unit: Int | None = Field(
        default=None,
        ge=1,
        description="Nodes per unit; default: as evenly as they go (the first units take one "
        "more).",
    )
    leaf: str = Field(
        description="Name of each unit's leaf of each rail: {unit} is the unit's name, {rail} "
        "the rail from 1 (an integer format is allowed: {rail:02d}), e.g. '{unit}-leaf{rail}'."
    )
    leaf_model: DeviceModel | None = Field(default=None, description="Model of the leaves.")
    leaf_ports: Int | None = Field(
        default=None, ge=1, le=4096, description="Ports of each leaf, as switches[].ports."
    )
    spines: Hostlist | None = Field(
        default=None,
        description="The spine switches, e.g. spine[01-16]; without them each rail's leaves "
        "are not connected to each other (a rail-only fabric).",
    )
    spines_per_rail: Int | None = Field(
        default=None,
        ge=1,
        description="Spines of each rail: the spines are dealt out in order, this many to rail "
        "1, then to rail 2, ...; each leaf goes up to its rail's spines only. Default: every "
        "leaf goes up to every spine.",
    )
    units_per_pod: Int | None = Field(
        default=None,
        ge=1,
        description="Pods of a three-tier fabric: this many units share their own spines (the "
        "spines are dealt out pod by pod), and the cores join the pods: the cores are dealt "
        "out over a pod's spine places, and each goes up from the spine in its place in every "
        "pod. Default: one pod, every spine up to every core.",
    )
    uplinks: Int = Field(
        default=1, ge=1, le=1024, description="Cables from each leaf to each of its spines."
    )
    spine_model: DeviceModel | None = Field(default=None, description="Model of the spines.")
    spine_ports: Int | None = Field(
        default=None, ge=1, le=4096, description="Ports of each spine, as switches[].ports."
    )
    cores: Hostlist | None = Field(
        default=None,
        description="A third tier: every spine goes up to every core, e.g. core[01-08].",
    )
    core_uplinks: Int = Field(
        default=1, ge=1, le=1024, description="Cables from each spine to each core."
    )
    core_model: DeviceModel | None = Field(default=None, description="Model of the cores.")
    core_ports: Int | None = Field(
        default=None, ge=1, le=4096, description="Ports of each core, as switches[].ports."
    )


class NvlinkDomainGroup(StrictModel):
    """NVLink domains alike: one domain per name, the trays dealt out in order, 'per_domain'
    to each."""

    names: Hostlist = Field(description="The domains' names, e.g. nvl[01-04].")
    nodes: Hostlist = Field(description="The trays to deal out, e.g. gb[001-072].")
    per_domain: Int | None = Field(
        default=None,
        ge=1,
        description="Trays per domain; default: as evenly as they go (the first take one more).",
    )
