"""The JSON Schema of the spec language, generated from the models (never edited by hand)."""

from __future__ import annotations

import json

from clustergen.model import Spec

SCHEMA_ID = "https://clustergen.example.org/schemas/clustergen.schema.json"


def schema_document() -> dict[str, object]:
    document = Spec.model_json_schema(mode="validation")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **document}


def schema_text() -> str:
    return json.dumps(schema_document(), indent=2, sort_keys=True) + "\n"
