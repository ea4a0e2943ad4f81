"""Validation: the spec's shape (pydantic), then cross-field checks, every problem at once.

Shape is judged per top-level section: a section with a shape error is left out,
and every cross-field check whose sections are all valid still runs, so one run
reports a typo in `racks` and a driver too old for its CUDA alike.
"""

from __future__ import annotations

import functools
import types
import typing
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from typing import Any, Union, cast

from pydantic import BaseModel, ValidationError, create_model
from pydantic_core import ErrorDetails

from clustergen.base import codes
from clustergen.base.codes import CODES, WARNINGS
from clustergen.base.errors import (
    NAMES_SHOWN,
    LocatedProblem,
    Problem,
    SpecPath,
    collapse_alike,
    masked,
)
from clustergen.base.suggest import did_you_mean, nearest
from clustergen.catalog.distributions import REFUSED_DISTRIBUTIONS
from clustergen.checks import InTwo, run_checks
from clustergen.model import Spec
from clustergen.model.common import HostlistBudget, StrictModel
from clustergen.resolve import ResolvedCluster
from clustergen.spec import long_form
from clustergen.spec.load import LoadedSpec
from clustergen.spec.names import element_names

# Error types that say "wrong kind of value"; a more specific error at the same
# path (from another member of a union) is preferred over them.
_GENERIC_TYPES = frozenset(
    {
        "literal_error",
        "string_type",
        "int_type",
        "bool_type",
        "float_type",
        "model_type",
        "dict_type",
        "list_type",
        "union_tag_invalid",
        "none_required",
    }
)


def validate(
    loaded: LoadedSpec, ignore: Collection[str] = (), in_two: InTwo | None = None
) -> tuple[Spec | None, list[LocatedProblem]]:
    """The model (None if the spec has errors) and every problem, sorted by position.

    Warnings whose codes are in `ignore` or in the spec's own `ignore` list are left out.
    """
    cluster, problems = validate_cluster(loaded, ignore, in_two)
    return (cluster.spec if cluster else None), problems


def validate_cluster(
    loaded: LoadedSpec, ignore: Collection[str] = (), in_two: InTwo | None = None
) -> tuple[ResolvedCluster | None, list[LocatedProblem]]:
    """The resolved cluster (None if the spec has errors) and every problem, sorted by
    position; the checks' work on the cluster is kept for the render. Every hostlist of
    the spec within one budget of names (model.common.HostlistBudget). `in_two`: how a
    command may run work in a second process (commands.parallel.in_two, which the CLI
    hands down): the walks of a large fabric then run beside the other checks
    (checks.run_checks), on two cores as the render."""
    with HostlistBudget():
        return _validate_cluster(loaded, ignore, in_two)


def _validate_cluster(
    loaded: LoadedSpec, ignore: Collection[str], in_two: InTwo | None
) -> tuple[ResolvedCluster | None, list[LocatedProblem]]:
    problems: list[Problem]
    written: list[Problem] = []  # problems of patterns, at paths as written, not expanded
    spec: Spec | None = None
    cluster: ResolvedCluster | None = None
    ignored = set(ignore)
    data: Any = loaded.data  # the long form, once patterns are expanded
    if not isinstance(loaded.data, dict):
        kind = "empty" if loaded.data is None else _kind(loaded.data)
        problems = [
            Problem(
                codes.SHAPE_NOT_A_MAPPING,
                (),
                f"a spec is a YAML mapping of sections; this file is {kind}",
            )
        ]
    else:
        expansion = long_form.expand(loaded.data)
        loaded.aliases.update(expansion.aliases)
        loaded.labels.update(expansion.labels)
        data = expansion.data
        errors: list[ErrorDetails] = []
        try:
            spec = Spec.model_validate(data)
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
        if errors or expansion.errors or expansion.problems:
            spec = None
            problems = shape_problems(errors, data, loaded.float_texts)
            written = shape_problems(expansion.errors, loaded.data, loaded.float_texts)
            written += expansion.problems
            invalid = {str(error["loc"][0]) for error in errors if error["loc"]}
            partial, valid = valid_sections(data, invalid | expansion.sections)
            problems += run_checks(ResolvedCluster(partial, loaded.name), valid)
            ignored.update(_ignored_in(data))
        else:
            assert spec is not None
            cluster = ResolvedCluster(spec, loaded.name)
            problems = run_checks(cluster, Spec.model_fields, in_two)
            # Handed to the render (the facility overview lists them), from this one run.
            cluster.warnings = tuple(p for p in problems if p.severity == "warning")
            ignored.update(spec.ignore)
    names = functools.cache(lambda: element_names(data))
    located = _once_per_pattern(
        [_located(loaded, p) for p in problems if _kept(p, ignored)]
        + [_located(loaded, p, expanded=False) for p in written if _kept(p, ignored)],
        names,
    )
    located.sort(key=lambda p: (p.position, p.severity != "error", p.message))
    has_errors = any(p.severity == "error" for p in located)
    return (None if has_errors else cluster), collapse_alike(_unique(located), names)


def _kept(problem: Problem, ignored: set[str]) -> bool:
    return problem.severity == "error" or problem.code.name not in ignored


def _located(
    loaded: LoadedSpec, problem: Problem, *, expanded: bool = True
) -> tuple[LocatedProblem, str | None]:
    """Where the problem is written, and the pattern element it lies in (None outside
    patterns, and for a pattern's own problems, which stand at paths as written)."""
    if not expanded:
        position = loaded.locate(problem.path, problem.at, expanded=False)
        located = LocatedProblem(loaded.file, position, problem.path, problem.message, problem.code)
        return located, None
    path, label = loaded.source(problem.path)
    position = loaded.locate(problem.path, problem.at)
    return LocatedProblem(loaded.file, position, path, problem.message, problem.code), label


def _once_per_pattern(
    problems: list[tuple[LocatedProblem, str | None]],
    names: Callable[[], Collection[str]],
) -> list[LocatedProblem]:
    """Problems inside a pattern are named after their element ("rack g0137: ..."); one a
    pattern repeats for each of its elements (a PDU template over its rated amps, each
    rack's feed over its limit, its own names in the message) is shown once, with how many
    more elements it hits and the first few of them."""
    groups: dict[tuple[Any, ...], list[tuple[LocatedProblem, str]]] = {}
    out: list[LocatedProblem] = []
    seen: dict[tuple[Any, ...], int] = {}  # how often a key has come from one element
    for problem, label in problems:
        if label is None:
            out.append(problem)
        else:
            text = masked(problem.message, names())[0]
            key = (problem.position, problem.path, problem.code, text)
            # An element's second problem alike goes with the other elements' second ones.
            own = (*key, label)
            nth = seen[own] = seen.get(own, -1) + 1
            groups.setdefault((*key, nth), []).append((problem, label))
    for same in groups.values():
        first, label = same[0]
        message = f"{label}: {first.message}"
        if len(same) > 1:
            kind = label.split(" ", 1)[0]
            kinds = kind + ("es" if kind.endswith(("s", "sh", "ch", "x")) else "s")
            others = [other.split(" ", 1)[-1] for _, other in same[1 : NAMES_SHOWN + 1]]
            more = ", ..." if len(same) > NAMES_SHOWN + 1 else ""
            message += (
                f" (and {len(same) - 1} more {kinds} of this pattern: {', '.join(others)}{more})"
            )
        out.append(replace(first, message=message))
    return out


def _ignored_in(data: dict[Any, Any]) -> list[str]:
    """The spec's `ignore` entries that are warnings' codes, even if other entries are wrong."""
    entries = data.get("ignore")
    return [e for e in entries if e in WARNINGS] if isinstance(entries, list) else []


def valid_sections(data: dict[Any, Any], invalid: set[str]) -> tuple[Spec, set[str]]:
    """A Spec holding only the sections outside `invalid` (the others are absent, not
    defaulted, so a check that reads one fails loudly), and their names."""
    sections: dict[str, Any] = {}
    for name, field in Spec.model_fields.items():
        if name in invalid:
            continue
        if name in data:
            try:
                validated = _section_model(name).model_validate({"value": data[name]})
                sections[name] = validated.value  # type: ignore[attr-defined]
            except ValidationError:  # only if a section's validity depended on another
                continue
        elif not field.is_required():
            sections[name] = field.get_default(call_default_factory=True)
    spec = Spec.model_construct(**sections)
    for name in Spec.model_fields.keys() - sections.keys():
        spec.__dict__.pop(name, None)
    return spec, set(sections)


@functools.cache
def _section_model(name: str) -> type[StrictModel]:
    """A model whose one field `value` is the Spec's field `name` (type, constraints and
    strictness alike), to validate that section alone."""
    field = Spec.model_fields[name]
    model: type[StrictModel] = create_model(
        f"{name.title()}Section", __base__=StrictModel, value=(cast(Any, field.annotation), field)
    )
    return model


def _unique(problems: list[LocatedProblem]) -> list[LocatedProblem]:
    seen: set[tuple[Any, ...]] = set()
    out = []
    for problem in problems:
        key = (problem.position, problem.path, problem.message)
        if key not in seen:
            seen.add(key)
            out.append(problem)
    return out


def shape_problems(
    errors: Sequence[ErrorDetails], data: Any, float_texts: dict[SpecPath, str] | None = None
) -> list[Problem]:
    by_path: dict[SpecPath, tuple[ErrorDetails, SpecPath]] = {}
    for error in errors:
        path = _data_path(error["loc"], data, error["type"])
        kept = by_path.get(path)
        if kept is None or (
            kept[0]["type"] in _GENERIC_TYPES and error["type"] not in _GENERIC_TYPES
        ):
            by_path[path] = (error, tuple(error["loc"]))
    # A misspelt required key is one mistake: report the unknown key (which suggests the
    # right name), not also the required key as missing.
    for path, (error, loc) in list(by_path.items()):
        if error["type"] == "extra_forbidden":
            meant = nearest(str(path[-1]), allowed_keys(loc[:-1]))
            if meant is None:
                continue
            meant_path = (*path[:-1], meant)
            missing = by_path.get(meant_path)
            if missing is not None and missing[0]["type"] == "missing":
                del by_path[meant_path]
    texts = float_texts or {}
    return [_problem(error, path, loc, texts.get(path)) for path, (error, loc) in by_path.items()]


def _data_path(loc: tuple[int | str, ...], data: Any, error_type: str) -> SpecPath:
    """Drop the parts of a pydantic location that name union members, not spec keys."""
    path: list[str | int] = []
    node = data
    for index, part in enumerate(loc):
        is_last = index == len(loc) - 1
        in_mapping = isinstance(node, dict) and part in node
        in_list = isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        if in_mapping or in_list:
            path.append(part)
            node = node[part]
        elif is_last and error_type in ("missing", "extra_forbidden"):
            path.append(part)
    return tuple(path)


def _problem(
    error: ErrorDetails, path: SpecPath, loc: SpecPath, written: str | None = None
) -> Problem:
    """One pydantic error as a message; `written` is a float's text as the user typed it."""
    kind = error["type"]
    value = error.get("input")
    ctx = error.get("ctx") or {}
    if kind == "extra_forbidden":
        return _unknown_key(path, loc)
    if kind == "missing":
        return Problem(
            codes.SHAPE_MISSING_KEY, path, f"missing required key '{path[-1]}'", at="key"
        )
    if value is None and kind not in ("missing", "extra_forbidden"):
        return Problem(
            codes.SHAPE_NULL_VALUE,
            path,
            "the value is empty (YAML null); give a value or remove the key",
        )
    if kind == "literal_error":
        return _not_allowed(path, value, ctx)
    if kind in CODES:  # a model validator's error, raised with its code (codes.invalid)
        return Problem(CODES[kind], path, str(error["msg"]))
    if kind in ("value_error", "assertion_error"):
        message = str(error["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
        return Problem(codes.SHAPE_INVALID, path, message)
    found = _wrong_type(kind, path, value, written) or _wrong_size(kind, path, value, ctx)
    if found is not None:
        return found
    subject = _show(value) or _got(value)
    return Problem(
        codes.SHAPE_INVALID,
        path,
        f"{subject}: {str(error['msg'])[0].lower()}{str(error['msg'])[1:]}",
    )


def _unknown_key(path: SpecPath, loc: SpecPath) -> Problem:
    """A key the model does not have, and the nearest it has (or all of them)."""
    key = str(path[-1])
    allowed = allowed_keys(loc[:-1])
    hint = did_you_mean(key, allowed)
    if not hint and allowed:
        hint = "; expected one of " + ", ".join(allowed)
    return Problem(codes.SHAPE_UNKNOWN_KEY, path, f"unknown key '{key}'{hint}", at="key")


def _not_allowed(path: SpecPath, value: Any, ctx: dict[str, Any]) -> Problem:
    """A value not among a Literal's choices (or one of them, quoted)."""
    expected = ctx.get("expected", "")
    choices = [c.strip().strip("'") for c in str(expected).replace(" or ", ",").split(",")]
    if isinstance(value, str) and value in choices:
        # e.g. version: '1' where the number 1 is meant
        return Problem(
            codes.SHAPE_NOT_ALLOWED,
            path,
            f"{_show(value)} is a string here; write {value} without quotes",
        )
    os_name = isinstance(value, str) and path == ("software", "os")
    refused = REFUSED_DISTRIBUTIONS.get(value) if os_name else None
    if refused is not None:
        return Problem(codes.SOFTWARE_OS_REFUSED, path, f"{_show(value)} is refused: {refused}")
    hint = did_you_mean(str(value), choices) if isinstance(value, str) else ""
    subject = _show(value) if isinstance(value, str) else _got(value)
    return Problem(
        codes.SHAPE_NOT_ALLOWED, path, f"{subject} is not allowed; expected {expected}{hint}"
    )


def _wrong_type(kind: str, path: SpecPath, value: Any, written: str | None) -> Problem | None:
    """A value of the wrong type, or None for an error of another kind."""
    if kind == "string_type" and isinstance(value, int | float) and not isinstance(value, bool):
        text = written or str(value)
        if text != str(value):
            return Problem(
                codes.SHAPE_WRONG_TYPE,
                path,
                f"expected a string, but YAML read {text} as the number {value!r}; quote it "
                f"('{text}') to keep it as written",
            )
        return Problem(
            codes.SHAPE_WRONG_TYPE,
            path,
            f"expected a string, but YAML read {text} as a number; quote it: '{text}'",
        )
    if kind == "string_type":
        return Problem(codes.SHAPE_WRONG_TYPE, path, f"expected a string, got {_got(value)}")
    if kind == "int_type":
        return Problem(codes.SHAPE_WRONG_TYPE, path, f"expected a whole number, got {_got(value)}")
    if kind in ("float_type", "float_parsing"):
        return Problem(codes.SHAPE_WRONG_TYPE, path, f"expected a number, got {_got(value)}")
    if kind == "bool_type":
        hint = ""
        if isinstance(value, str) and value.lower() in _YAML11_BOOLEANS:
            hint = (
                f"; write {_YAML11_BOOLEANS[value.lower()]} (YAML 1.2 reads {value} as a "
                "string, not a boolean)"
            )
        return Problem(
            codes.SHAPE_WRONG_TYPE, path, f"expected true or false, got {_got(value)}{hint}"
        )
    if kind in ("dict_type", "model_type"):
        return Problem(
            codes.SHAPE_WRONG_TYPE, path, f"expected a mapping of keys, got {_got(value)}"
        )
    if kind == "list_type":
        return Problem(codes.SHAPE_WRONG_TYPE, path, f"expected a list, got {_got(value)}")
    return None


def _wrong_size(kind: str, path: SpecPath, value: Any, ctx: dict[str, Any]) -> Problem | None:
    """A value out of its range, not matching its pattern or of the wrong length, or None
    for an error of another kind."""
    bound = _BOUNDS.get(kind)
    if bound is not None:
        phrase, ctx_key = bound
        return Problem(codes.SHAPE_OUT_OF_RANGE, path, f"{_got(value)} {phrase} {ctx.get(ctx_key)}")
    if kind == "string_pattern_mismatch":
        return Problem(
            codes.SYNTAX_INVALID,
            path,
            f"{_show(value)} is not valid here; use text matching {ctx.get('pattern')}",
        )
    if kind in ("too_short", "too_long"):
        container = "mapping" if isinstance(value, dict) else "list"
        if kind == "too_short":
            limit = f"at least {ctx.get('min_length')}"
        else:
            limit = f"at most {ctx.get('max_length')}"
        items = "entry" if isinstance(value, dict) else "item"
        count = ctx.get("actual_length", len(value) if isinstance(value, dict | list) else "?")
        return Problem(
            codes.SHAPE_WRONG_LENGTH,
            path,
            f"the {container} needs {limit} {items}(s); it has {count}",
        )
    return None


# Words YAML 1.1 read as booleans; YAML 1.2 (and so clustergen) reads them as strings.
_YAML11_BOOLEANS = {
    "yes": "true",
    "no": "false",
    "on": "true",
    "off": "false",
    "y": "true",
    "n": "false",
    "true": "true",
    "false": "false",
}

# Pydantic's bound errors: (phrase, ctx key), read as "<value> <phrase> <bound>".
_BOUNDS = {
    "greater_than_equal": ("is below the minimum", "ge"),
    "greater_than": ("must be greater than", "gt"),
    "less_than_equal": ("is above the maximum", "le"),
    "less_than": ("must be less than", "lt"),
}


def _got(value: Any) -> str:
    """How a wrong value is named in a message: 'the string 'x'', 'a list'..."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"the string '{value}'"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    return _kind(value)


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
