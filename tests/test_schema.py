"""The committed JSON Schema is the one the models generate, and it accepts the examples."""

from __future__ import annotations

import json

import jsonschema
import pytest
from ruamel.yaml import YAML

from clustergen.spec.schema import schema_document, schema_text

from support.paths import REFERENCE_SPECS, SCHEMA
from support.regen import check_current


def test_committed_schema_matches_models(update_golden: bool) -> None:
    # `clustergen schema -o schemas/clustergen.schema.json` writes the same text.
    check_current(SCHEMA, schema_text(), update_golden)


@pytest.mark.parametrize("spec_path", REFERENCE_SPECS, ids=lambda p: p.stem)
def test_reference_specs_satisfy_schema(spec_path) -> None:  # type: ignore[no-untyped-def]
    document = YAML(typ="safe").load(spec_path.read_text(encoding="utf-8"))
    jsonschema.validate(document, schema_document())


_CONDITIONS = frozenset({"allOf", "oneOf", "if", "then", "else", "not"})


def test_every_property_is_documented() -> None:
    undocumented = []

    def walk(node: object, where: str) -> None:
        if isinstance(node, dict):
            for name, prop in node.get("properties", {}).items():
                has_text = (
                    "description" in prop
                    or "$ref" in prop
                    or any("$ref" in option for option in prop.get("anyOf", []))
                )
                if not has_text:
                    undocumented.append(f"{where}.{name}")
            for key, value in node.items():
                if key in _CONDITIONS:
                    continue  # restate documented properties under a condition
                walk(value, f"{where}.{key}" if key not in ("properties", "$defs") else where)
        elif isinstance(node, list):
            for item in node:
                walk(item, where)

    walk(json.loads(schema_text()), "spec")
    assert not undocumented, f"schema properties without a description: {undocumented}"


def test_schema_rejects_unknown_keys() -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"version": 1, "clsuter": {}}, schema_document())
