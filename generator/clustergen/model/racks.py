"""racks and facility: the physical layer."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator, ConfigDict, Field, model_validator
from typing_extensions import Self

from clustergen import codes
from clustergen.codes import invalid
from clustergen.model.common import Hostname, Int, StrictModel, keys_set, whole_number


class Pdu(StrictModel):
    """A power distribution unit and the circuit it hangs on."""

    name: Hostname = Field(description="PDU name.")
    feed: Literal["A", "B"] = Field(description="Power feed the PDU hangs on (A/B for 2N).")
    volts: Int = Field(ge=100, le=480, description="Line voltage (line-to-line for 3-phase).")
    phases: Annotated[Literal[1, 3], BeforeValidator(whole_number)] = Field(
        description="1 or 3 phases."
    )
    amps: Int = Field(ge=1, le=400, description="Breaker rating of the PDU's circuit in amps.")


class RackDevice(StrictModel):
    """Something mounted in a rack: a node, or another device with its own height and power."""

    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                keys_set("node", unset=("name", "height_u", "max_watts")),
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
        default=None, ge=0, description="Power draw of a non-node device."
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
        if self.node is not None and (self.height_u is not None or self.max_watts is not None):
            raise invalid(
                codes.RACKS_NODE_WITH_SIZE,
                f"node '{self.node}' takes height_u and max_watts from its hardware profile",
            )
        return self


class Rack(StrictModel):
    """A rack, its PDUs and its devices."""

    name: Hostname = Field(description="Rack name.")
    height_u: Int = Field(ge=1, le=60, description="Usable rack units.")
    pdus: list[Pdu] = Field(default_factory=list, description="PDUs in the rack.")
    devices: list[RackDevice] = Field(default_factory=list, description="What is mounted where.")


class Facility(StrictModel):
    """Site-wide limits."""

    power_budget_kw: float = Field(gt=0, description="Power the site can deliver to all racks, kW.")
