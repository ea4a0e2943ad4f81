"""Validation: the spec's shape (pydantic), then cross-field checks, every problem at once.

Shape errors come first because the cross-field checks need a whole model; a
spec with shape errors reports those, and the checks run once they are fixed.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Sequence
from typing import Any, Union

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from clustergen.checks import run_checks
from clustergen.errors import LocatedProblem, Problem, SpecPath
from clustergen.load import LoadedSpec
from clustergen.model import Spec
from clustergen.suggest import did_you_mean

# Error types that say "wrong kind of value"; a more specific error at the same
# path (from another member of a union) is preferred over them.
_GENERIC_TYPES = frozenset(
    {"literal_error", "string_type", "int_type", "bool_type", "float_type", "model_type",
     "dict_type", "list_type", "union_tag_invalid", "none_required"}
)


def validate(loaded: LoadedSpec) -> tuple[Spec | None, list[LocatedProblem]]:
    """The model (None if the spec's shape is wrong) and every problem, sorted by position."""
    problems: list[Problem]
    spec: Spec | None = None
    if not isinstance(loaded.data, dict):
        kind = "empty" if loaded.data is None else f"a {_kind(loaded.data)}"
        problems = [Problem((), f"a spec is a YAML mapping of sections; this file is {kind}")]
    else:
        try:
            spec = Spec.model_validate(loaded.data)
        except ValidationError as exc:
            problems = shape_problems(exc.errors(include_url=False), loaded.data)
        else:
            problems = run_checks(spec)
    located = [
        LocatedProblem(
            loaded.file, loaded.locate(p.path, p.at), p.path, p.message, p.severity
        )
        for p in problems
    ]
    located.sort(key=lambda p: (p.position, p.severity != "error", p.message))
    has_errors = any(p.severity == "error" for p in located)
    return (None if has_errors else spec), _unique(located)


def _unique(problems: list[LocatedProblem]) -> list[LocatedProblem]:
    seen: set[tuple[Any, ...]] = set()
    out = []
    for problem in problems:
        key = (problem.position, problem.path, problem.message)
        if key not in seen:
            seen.add(key)
            out.append(problem)
    return out


def shape_problems(errors: Sequence[ErrorDetails], data: Any) -> list[Problem]:
    by_path: dict[SpecPath, tuple[ErrorDetails, SpecPath]] = {}
    for error in errors:
        path = _data_path(error["loc"], data, error["type"])
        kept = by_path.get(path)
        if kept is None or (kept[0]["type"] in _GENERIC_TYPES and error["type"] not in _GENERIC_TYPES):
            by_path[path] = (error, tuple(error["loc"]))
    return [_problem(error, path, loc) for path, (error, loc) in by_path.items()]


def _data_path(loc: tuple[int | str, ...], data: Any, error_type: str) -> SpecPath:
    """Drop the parts of a pydantic location that name union members, not spec keys."""
    path: list[str | int] = []
    node = data
    for index, part in enumerate(loc):
        is_last = index == len(loc) - 1
        if isinstance(node, dict) and part in node:
            path.append(part)
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            path.append(part)
            node = node[part]
        elif is_last and error_type in ("missing", "extra_forbidden"):
            path.append(part)
    return tuple(path)


def _problem(error: ErrorDetails, path: SpecPath, loc: SpecPath) -> Problem:
    kind = error["type"]
    value = error.get("input")
    ctx = error.get("ctx") or {}
    if kind == "extra_forbidden":
        key = str(path[-1])
        hint = did_you_mean(key, allowed_keys(loc[:-1]))
        return Problem(path, f"unknown key '{key}'{hint}", at="key")
    if kind == "missing":
        return Problem(path, f"missing required key '{path[-1]}'", at="key")
    if kind == "literal_error":
        expected = ctx.get("expected", "")
        choices = [c.strip().strip("'") for c in str(expected).replace(" or ", ",").split(",")]
        hint = did_you_mean(str(value), choices) if isinstance(value, str) else ""
        return Problem(path, f"{_show(value)} is not allowed; expected {expected}{hint}")
    if kind in ("value_error", "assertion_error"):
        message = str(error["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
        return Problem(path, message)
    if kind == "string_type" and isinstance(value, int | float) and not isinstance(value, bool):
        return Problem(
            path,
            f"expected a string, but YAML read {value!r} as a number; quote it, e.g. "
            f"'{value}' (a version like 23.10 must be quoted to keep its last zero)",
        )
    if kind == "int_type" and isinstance(value, str):
        return Problem(path, f"expected a whole number, got the string {_show(value)}")
    if kind == "bool_type":
        return Problem(path, f"expected true or false, got {_show(value)}")
    if kind in ("dict_type", "model_type"):
        return Problem(path, f"expected a mapping of keys, got {_kind(value)} {_show(value)}")
    if kind == "list_type":
        return Problem(path, f"expected a list, got {_kind(value)} {_show(value)}")
    if kind == "string_pattern_mismatch":
        return Problem(path, f"{_show(value)} does not have the required form {ctx.get('pattern')}")
    if kind in ("too_short", "too_long"):
        return Problem(path, str(error["msg"]).replace("List", "the list").replace("Dictionary", "the mapping"))
    return Problem(path, f"{_show(value)}: {str(error['msg'])[0].lower()}{str(error['msg'])[1:]}")


def _show(value: Any) -> str:
    if isinstance(value, str):
        return f"'{value}'"
    if isinstance(value, dict | list):
        return ""
    if value is None:
        return "nothing (null)"
    return repr(value)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, int | float):
        return "a number"
    return "a string"


def allowed_keys(loc: SpecPath) -> list[str]:
    """The keys the model accepts at a pydantic location (for 'did you mean')."""
    current: Any = Spec
    for part in loc:
        current = _step(current, part)
        if current is None:
            return []
    model = _model_in(current)
    return list(model.model_fields) if model else []


def _step(annotation: Any, part: str | int) -> Any:
    model = _model_in(annotation)
    if model is not None:
        field = model.model_fields.get(str(part))
        return field.annotation if field else None
    for candidate in _members(annotation):
        origin = typing.get_origin(candidate)
        if origin is list and isinstance(part, int):
            return typing.get_args(candidate)[0]
        if origin is dict:
            return typing.get_args(candidate)[1]
    return None


def _members(annotation: Any) -> list[Any]:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _members(typing.get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in _members(arg)]
    return [annotation]


def _model_in(annotation: Any) -> type[BaseModel] | None:
    for member in _members(annotation):
        if isinstance(member, type) and issubclass(member, BaseModel):
            return member
    return None
