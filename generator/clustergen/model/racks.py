"""racks and facility: the physical layer."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator, ConfigDict, Field, model_validator
from typing_extensions import Self

from clustergen import codes
from clustergen.codes import invalid
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


class RackDevice(StrictModel):
    """Something mounted in a rack: a node, or another device with its own height and power."""

    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                keys_set(
                    "node", unset=("name", "height_u", "max_watts", "typical_watts", "weight_kg")
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
        own = (self.height_u, self.max_watts, self.typical_watts, self.weight_kg)
        if self.node is not None and any(value is not None for value in own):
            raise invalid(
                codes.RACKS_NODE_WITH_SIZE,
                f"node '{self.node}' takes height_u, max_watts, typical_watts and weight_kg "
                "from its hardware profile",
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


class Facility(StrictModel):
    """Site-wide limits."""

    power_budget_kw: float | None = Field(
        default=None, gt=0, description="Power the site can deliver to all racks, kW."
    )
    cooling_kw: float | None = Field(
        default=None, gt=0, description="Heat the site's cooling removes from all racks, kW."
    )
    unracked: Hostlist | None = Field(
        default=None,
        description="Nodes deliberately in no rack of this spec (virtual machines, nodes in "
        "another site's racks); every other node must be racked once when 'racks' is given.",
    )
