"""The JSON Schema of the spec language, generated from the models (never edited by hand)."""

from __future__ import annotations

import json
from typing import Any

from pydantic.json_schema import models_json_schema

from clustergen.model import Spec
from clustergen.model.patterns import (
    NvlinkDomainGroup,
    RackPattern,
    RailFabric,
    SwitchGroup,
    TargetGroup,
)

SCHEMA_ID = "https://clustergen.example.org/schemas/clustergen.schema.json"


# Where a pattern may stand in for the elements it expands to (clustergen.spec.long_form).
PATTERN_PLACES = (
    (("properties", "racks"), RackPattern),
    (("$defs", "Fabric", "properties", "switches"), SwitchGroup),
    (("$defs", "Fabric", "properties", "switches"), RailFabric),
    (("$defs", "Network", "properties", "nvlink_domains"), NvlinkDomainGroup),
    (("$defs", "Lustre", "properties", "mdts"), TargetGroup),
    (("$defs", "Lustre", "properties", "osts"), TargetGroup),
)


def schema_document() -> dict[str, Any]:
    document = Spec.model_json_schema(mode="validation")
    models = sorted({model for _, model in PATTERN_PLACES}, key=lambda m: m.__name__)
    _, patterns = models_json_schema([(m, "validation") for m in models])
    document["$defs"].update(patterns["$defs"])
    for place, model in PATTERN_PLACES:
        node = document
        for key in place:
            node = node[key]
        node["items"] = {"anyOf": [node["items"], {"$ref": f"#/$defs/{model.__name__}"}]}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **document}


def schema_text() -> str:
    return json.dumps(schema_document(), indent=2, sort_keys=True) + "\n"
