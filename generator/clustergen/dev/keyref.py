"""The spec-language key reference (a Markdown table), generated from the models.

The README embeds it between markers; a test fails when it drifts, and
`pytest --update-golden` rewrites it.
"""

from __future__ import annotations

import types
import typing
from typing import Any, Literal, Union

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from clustergen.model import Spec
from clustergen.model.patterns import (
    NvlinkDomainGroup,
    RackPattern,
    RailFabric,
    SwitchGroup,
    TargetGroup,
)

PATTERNS = (
    ("racks[]", RackPattern),
    ("network.fabric.switches[]", SwitchGroup),
    ("network.fabric.switches[]", RailFabric),
    ("network.nvlink_domains[]", NvlinkDomainGroup),
    ("storage.lustre.mdts[]", TargetGroup),
    ("storage.lustre.osts[]", TargetGroup),
)

# Keys a shared model has where a check refuses them (the storage fabric has the compute
# fabric's shape): their row says so, and the keys under them are not listed.
REFUSED = {
    "network.storage.switches": "Refused (network.storage-switches): the storage fabric's "
    "switches are not modelled; cabling, ports and topology.conf come from "
    "network.fabric.switches only (docs/networks.md).",
}

START = "<!-- spec-keys:start (generated from the models; do not edit) -->"
END = "<!-- spec-keys:end -->"


def key_table() -> str:
    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    rows += [
        f"| `{path}` | {kind} | {default} | {text} |"
        for path, kind, default, text in _rows(Spec, "")
    ]
    # A pattern stands where its elements would (clustergen.spec.long_form, docs/patterns.md).
    for place, model in PATTERNS:
        rows += [
            f"| `{path}` | {kind} | {default} | {text} |"
            for path, kind, default, text in _rows(model, f"{place}(pattern).")
        ]
    return "\n".join(rows) + "\n"


def _rows(model: type[BaseModel], prefix: str) -> list[tuple[str, str, str, str]]:
    rows = []
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        annotation = field.annotation
        nested, suffix = _nested_model(annotation)
        required = field.is_required()
        if field.default_factory is not None:
            default = "empty"
        elif field.default is PydanticUndefined or field.default is None:
            default = "required" if required else "none"
        elif isinstance(field.default, bool):
            default = f"`{str(field.default).lower()}`"
        else:
            default = f"`{field.default}`"
        description = (field.description or (nested.__doc__ if nested else "") or "").replace(
            "|", "\\|"
        )
        if path in REFUSED:
            rows.append((path, _type_name(annotation), default, REFUSED[path]))
            continue
        rows.append((path, _type_name(annotation), default, " ".join(description.split())))
        if nested is not None:
            rows += _rows(nested, f"{path}{suffix}.")
    return rows


def _nested_model(annotation: Any) -> tuple[type[BaseModel] | None, str]:
    for member in _members(annotation):
        if isinstance(member, type) and issubclass(member, BaseModel):
            return member, ""
        origin = typing.get_origin(member)
        if origin is list:
            inner, _ = _nested_model(typing.get_args(member)[0])
            if inner:
                return inner, "[]"
        if origin is dict:
            inner, _ = _nested_model(typing.get_args(member)[1])
            if inner:
                return inner, ".<name>"
    return None, ""


def _members(annotation: Any) -> list[Any]:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _members(typing.get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return [
            m for arg in typing.get_args(annotation) if arg is not type(None) for m in _members(arg)
        ]
    return [annotation]


def _type_name(annotation: Any) -> str:
    names = []
    for member in _members(annotation):
        origin = typing.get_origin(member)
        if origin is Literal:
            names.append(" \\| ".join(f"`{v}`" for v in typing.get_args(member)))
        elif origin is list:
            names.append(f"list of {_type_name(typing.get_args(member)[0])}")
        elif origin is dict and typing.get_args(member)[1] is Any:
            names.append("mapping")  # typing.Any prints differently across Pythons
        elif origin is dict:
            names.append(f"mapping to {_type_name(typing.get_args(member)[1])}")
        elif isinstance(member, type) and issubclass(member, BaseModel):
            names.append("mapping")
        elif isinstance(member, type):
            names.append(
                {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}.get(
                    member.__name__, member.__name__
                )
            )
        else:
            names.append(str(member))
    return " or ".join(dict.fromkeys(names))


def replace_section(readme: str) -> str:
    before, _, rest = readme.partition(START)
    _, _, after = rest.partition(END)
    return f"{before}{START}\n{key_table()}{END}{after}"
