"""racks and facility: the physical layer."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator, ConfigDict, Field, model_validator
from typing_extensions import Self

from clustergen.base import codes
from clustergen.base.codes import invalid
from clustergen.model.common import Hostlist, Hostname, Int, StrictModel, keys_set, whole_number


class Pdu(StrictModel):
    """A power distribution unit and the circuit it hangs on."""

    name: Hostname = Field(description="PDU name.")
    feed: Literal["A", "B"] = Field(description="Power feed the PDU hangs on (A/B for 2N).")
    volts: Int = Field(ge=100, le=480, description="Line voltage (line-to-line for 3-phase).")
    phases: Annotated[Literal[1, 3], BeforeValidator(whole_number)] = Field(
        description="1 or 3 phases."
    )
    amps: Int = Field(ge=1, le=400, description="Breaker rating of the PDU's circuit in amps.")
    outlets: Int | None = Field(
        default=None, ge=1, le=256, description="Outlets of the PDU; checked against the PSUs."
    )
    banks: Int | None = Field(
        default=None,
        ge=1,
        le=48,
        description="Outlet banks, each behind its own breaker; on a 3-phase PDU bank n is on "
        "phase L1, L2, L3, L1, ... Each bank's load is checked against bank_amps.",
    )
    bank_amps: Int | None = Field(
        default=None,
        ge=1,
        le=400,
        description="Breaker rating of each bank where it differs from 'amps'. A bank is fed "
        "phase-to-neutral on a 3-phase PDU (volts / 1.732).",
    )

    @model_validator(mode="after")
    def _bank_amps_with_banks(self) -> Self:
        if self.bank_amps is not None and self.banks is None:
            raise invalid(
                codes.RACKS_BANK_AMPS_WITHOUT_BANKS,
                f"PDU '{self.name}' gives bank_amps but no 'banks' count",
            )
        return self


# Rack-scale systems (GB200/GB300 NVL72) take power from shelves of rectifiers on a DC
# busbar, not from PDUs. NVIDIA's reference GB200 rack has 8 shelves, each of 6 PSUs of
# 5.5 kW, 33 kW a shelf (NVIDIA Base Command Manager manual, "BCM Power Shelf Integration",
# docs.nvidia.com/base-command-manager/product-manuals/nvidia-mission-control/powershelf);
# the rack draws about 120-132 kW (Supermicro's GB200 NVL72 data, as quoted at
# introl.com/blog/why-nvidia-gb300-nvl72-blackwell-ultra-matters: 8 shelves, 132 kW), so
# 8 x 33 kW in N+N carries it on 4 shelves. docs/facility.md, "Power shelves".


class PowerShelves(StrictModel):
    """Power shelves on the rack's busbar, in place of PDUs: count shelves of shelf_kw each,
    of which the redundancy leaves count / 2 (N+N), count - 1 (N+1) or count (N) to carry
    the rack."""

    count: Int = Field(ge=1, le=32, description="Power shelves on the rack's busbar.")
    shelf_kw: float = Field(
        gt=0, le=200, description="Output rating of one shelf in kW (GB200 NVL72: 33 kW)."
    )
    redundancy: Literal["N", "N+1", "N+N"] = Field(
        default="N+N",
        description="What the site keeps in reserve: N+N (half the shelves, one feed's, may "
        "be lost; the default), N+1 (one shelf) or N (none). The rack's max draw must fit on "
        "the shelves left.",
    )

    @model_validator(mode="after")
    def _redundancy_leaves_shelves(self) -> Self:
        if (self.redundancy == "N+N" and self.count % 2) or (
            self.redundancy == "N+1" and self.count < 2
        ):
            raise invalid(
                codes.RACKS_SHELF_COUNT_REDUNDANCY,
                f"{self.count} power shel{'f' if self.count == 1 else 'ves'} cannot be "
                f"{self.redundancy}: N+N needs an even count, N+1 at least 2",
            )
        return self

    @property
    def carrying(self) -> int:
        """The shelves left to carry the rack when the redundancy is spent."""
        if self.redundancy == "N+N":
            return self.count // 2
        return self.count - 1 if self.redundancy == "N+1" else self.count


LiquidShare = Annotated[
    float,
    Field(
        ge=0,
        le=1,
        description="Share of the heat carried away by liquid (cold plates), 0-1; the rest "
        "goes to air.",
    ),
]


class RackDevice(StrictModel):
    """Something mounted in a rack: a node, or another device with its own height and power."""

    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                keys_set(
                    "node",
                    unset=(
                        "name",
                        "height_u",
                        "max_watts",
                        "typical_watts",
                        "weight_kg",
                        "liquid_share",
                        "nvlink_switch_tray",
                    ),
                ),
                keys_set("name", "height_u", "max_watts", unset=("node",)),
            ]
        }
    )

    u: Int = Field(ge=1, description="Lowest rack unit the device occupies (1 = bottom).")
    node: Hostname | None = Field(
        default=None, description="A node from 'nodes'; its height and power come from its profile."
    )
    name: Hostname | None = Field(
        default=None, description="Name of a device that is not a node (switch, patch panel)."
    )
    height_u: Int | None = Field(default=None, ge=1, description="Height of a non-node device.")
    max_watts: Int | None = Field(
        default=None,
        ge=0,
        description="Power draw of a non-node device; it has one PSU on each feed of the rack.",
    )
    typical_watts: Int | None = Field(
        default=None,
        ge=0,
        description="Typical power draw of a non-node device; defaults to max_watts.",
    )
    weight_kg: float | None = Field(
        default=None, gt=0, description="Weight of a non-node device in kg."
    )
    liquid_share: LiquidShare | None = Field(
        default=None,
        description="Share of a non-node device's heat carried away by liquid (an NVLink "
        "switch tray's cold plates), 0-1; default 0, all to air.",
    )

    nvlink_switch_tray: bool | None = Field(
        default=None,
        description="True for an NVLink switch tray of a rack-scale NVLink system (GB200/GB300 "
        "NVL72: 9 per rack beside 18 compute trays). It is not a node; the rack sheet counts "
        "it beside the rack's compute trays (docs/facility.md, 'NVLink trays').",
    )

    @model_validator(mode="after")
    def _node_or_device(self) -> Self:
        if (self.node is None) == (self.name is None):
            raise invalid(
                codes.RACKS_DEVICE_NODE_OR_NAME, "a rack device has either 'node' or 'name'"
            )
        if self.name is not None and (self.height_u is None or self.max_watts is None):
            raise invalid(
                codes.RACKS_DEVICE_NEEDS_SIZE, f"device '{self.name}' needs height_u and max_watts"
            )
        own = (
            self.height_u,
            self.max_watts,
            self.typical_watts,
            self.weight_kg,
            self.liquid_share,
        )
        if self.node is not None and self.nvlink_switch_tray is not None:
            raise invalid(
                codes.RACKS_NODE_WITH_SIZE,
                f"node '{self.node}' is a node, not an NVLink switch tray: nvlink_switch_tray "
                "is for the switch trays, which are no nodes",
            )
        if self.node is not None and any(value is not None for value in own):
            raise invalid(
                codes.RACKS_NODE_WITH_SIZE,
                f"node '{self.node}' takes height_u, max_watts, typical_watts, weight_kg and "
                "liquid_share from its hardware profile",
            )
        if (
            self.max_watts is not None
            and self.typical_watts is not None
            and self.typical_watts > self.max_watts
        ):
            raise invalid(
                codes.HARDWARE_TYPICAL_ABOVE_MAX,
                f"typical_watts ({self.typical_watts}) is above max_watts ({self.max_watts})",
            )
        return self


class Rack(StrictModel):
    """A rack, its PDUs and its devices."""

    name: Hostname = Field(description="Rack name.")
    height_u: Int = Field(ge=1, le=60, description="Usable rack units.")
    pdus: list[Pdu] = Field(
        default_factory=list,
        description="PDUs in the rack, at most one per feed. A rack without PDUs is not "
        "checked for power.",
    )
    devices: list[RackDevice] = Field(default_factory=list, description="What is mounted where.")
    weight_kg: float | None = Field(
        default=None, gt=0, description="Load the rack may carry in kg (devices only)."
    )
    cooling_kw: float | None = Field(
        default=None, gt=0, description="Heat the rack's cooling removes, kW (max draw)."
    )
    power_shelves: PowerShelves | None = Field(
        default=None,
        description="Power shelves on a busbar feeding the rack, in place of PDUs (a GB200 "
        "NVL72 rack); a rack has PDUs or power shelves, not both.",
    )
    air_cooling_kw: float | None = Field(
        default=None,
        gt=0,
        description="Heat the rack's air cooling removes, kW: checked against the air share "
        "of its devices' max draw (what liquid_share leaves to air).",
    )

    @model_validator(mode="after")
    def _pdus_or_shelves(self) -> Self:
        if self.pdus and self.power_shelves is not None:
            raise invalid(
                codes.RACKS_PDUS_AND_SHELVES,
                f"rack '{self.name}' has both PDUs and power_shelves; describe one",
            )
        return self


class Cdu(StrictModel):
    """A coolant distribution unit and the racks whose liquid loops it serves (a row)."""

    name: Hostname = Field(description="CDU name.")
    capacity_kw: float = Field(
        gt=0, le=10_000, description="Heat the CDU moves to the facility water, kW."
    )
    racks: Hostlist = Field(description="The racks it serves, e.g. nvl[1-4].")


class Facility(StrictModel):
    """Site-wide limits."""

    power_budget_kw: float | None = Field(
        default=None, gt=0, description="Power the site can deliver to all racks, kW."
    )
    cooling_kw: float | None = Field(
        default=None, gt=0, description="Heat the site's cooling removes from all racks, kW."
    )
    cdus: list[Cdu] = Field(
        default_factory=list,
        description="Coolant distribution units, each with the racks it serves: the liquid "
        "share of those racks' max draw must fit its capacity_kw. Without any, liquid heat "
        "is shown but not checked.",
    )
    unracked: Hostlist | None = Field(
        default=None,
        description="Nodes deliberately in no rack of this spec (virtual machines, nodes in "
        "another site's racks); every other node must be racked once when 'racks' is given.",
    )
