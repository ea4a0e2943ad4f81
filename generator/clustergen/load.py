"""Read a spec file: YAML -> plain data plus a map from spec path to position.

Nothing here validates the spec; it only reads it. YAML syntax errors and
duplicate keys are spec problems (exit 1); a file that cannot be read at all
is a usage problem (exit 2).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.representer import RoundTripRepresenter
from ruamel.yaml.scalarfloat import ScalarFloat

from clustergen import codes
from clustergen.errors import LocatedProblem, Position, SpecInvalid, SpecPath, UsageError

# Specs are small; anything this large is not a spec and is refused before parsing.
MAX_SPEC_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Located:
    key: Position  # where the mapping key (or sequence item) starts
    value: Position  # where its value starts


@dataclass
class LoadedSpec:
    """A spec as read: its data, where each part of it stands, and what it was called."""

    file: str  # the path as the user gave it, used in messages
    name: str  # the file's base name, used in rendered headers (stable across machines)
    data: Any
    positions: dict[SpecPath, Located] = field(default_factory=dict)
    # Floats as written (23.10), where the number read (23.1) loses what the user typed.
    float_texts: dict[SpecPath, str] = field(default_factory=dict)

    def locate(self, path: SpecPath, at: str = "value") -> Position:
        """The position of `path`, or of its nearest ancestor that has one."""
        probe = path
        while True:
            located = self.positions.get(probe)
            if located is not None:
                return located.key if at == "key" else located.value
            if not probe:
                return Position(1, 1)
            probe = probe[:-1]


def load_spec(path: str) -> LoadedSpec:
    file = Path(path)
    try:
        size = file.stat().st_size
        if file.is_dir():
            raise UsageError(f"{path}: is a directory, not a spec file")
        if size > MAX_SPEC_BYTES:
            raise UsageError(f"{path}: {size} bytes is too large for a spec file")
        text = file.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except PermissionError:
        raise UsageError(f"{path}: permission denied") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror}") from None
    return parse_spec(text, file=path, name=file.name)


def parse_spec(text: str, file: str, name: str) -> LoadedSpec:
    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    try:
        document = yaml.load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        position = Position(mark.line + 1, mark.column + 1) if mark else Position(1, 1)
        message = _yaml_message(exc)
        code = codes.YAML_DUPLICATE_KEY if "duplicate key" in message else codes.YAML_SYNTAX
        raise SpecInvalid([LocatedProblem(file, position, (), message, code)]) from None
    except (YAMLError, RecursionError) as exc:
        message = "YAML nesting is too deep" if isinstance(exc, RecursionError) else str(exc)
        code = codes.YAML_TOO_DEEP if isinstance(exc, RecursionError) else codes.YAML_SYNTAX
        raise SpecInvalid([LocatedProblem(file, Position(1, 1), (), message, code)]) from None

    loaded = LoadedSpec(file=file, name=name, data=None)
    if isinstance(document, CommentedMap | CommentedSeq):
        # The top level itself, for problems with the whole document (after any comments).
        start = Position(document.lc.line + 1, document.lc.col + 1)
        loaded.positions[()] = Located(start, start)
    try:
        loaded.data = _plain(document, (), loaded.positions, loaded.float_texts)
    except RecursionError:
        raise SpecInvalid(
            [
                LocatedProblem(
                    file, Position(1, 1), (), "YAML nesting is too deep", codes.YAML_TOO_DEEP
                )
            ]
        ) from None
    return loaded


def _yaml_message(exc: MarkedYAMLError) -> str:
    problem = (exc.problem or "").strip()
    if "duplicate key" in problem or "found duplicate key" in str(exc):
        # ruamel words it "found duplicate key "x" with value ..."; keep it short.
        first = str(exc).splitlines()
        detail = next((ln for ln in first if "duplicate key" in ln), problem)
        return "YAML: " + detail.strip().rstrip(".")
    context = (exc.context or "").strip()
    opened = exc.context_mark
    if (
        context
        and opened is not None
        and exc.problem_mark is not None
        and ((opened.line, opened.column) != (exc.problem_mark.line, exc.problem_mark.column))
    ):
        # The problem is found where parsing failed; say where the unfinished part began.
        context += f" (started at line {opened.line + 1}, column {opened.column + 1})"
    parts = [p for p in (context, problem) if p]
    return "YAML syntax error: " + ", ".join(parts) if parts else "YAML syntax error"


def _plain(
    node: Any,
    path: SpecPath,
    positions: dict[SpecPath, Located],
    float_texts: dict[SpecPath, str],
) -> Any:
    """Turn ruamel's round-trip nodes into dicts, lists and scalars, recording positions."""
    if isinstance(node, CommentedMap):
        out: dict[Any, Any] = {}
        for key in node:
            child_path = (*path, _key_name(key))
            if key in node.lc.data:  # merged (<<) keys have no position of their own
                key_line, key_col = node.lc.key(key)
                value_line, value_col = node.lc.value(key)
                if node[key] is None:
                    # An empty value has no position of its own (ruamel gives the next
                    # token's, often on a later line); the key is where it is missing.
                    value_line, value_col = key_line, key_col
                positions[child_path] = Located(
                    Position(key_line + 1, key_col + 1),
                    Position(value_line + 1, value_col + 1),
                )
            out[_key_name(key)] = _plain(node[key], child_path, positions, float_texts)
        return out
    if isinstance(node, CommentedSeq):
        items: list[Any] = []
        for index, item in enumerate(node):
            child_path = (*path, index)
            if index in node.lc.data:
                line, col = node.lc.item(index)
                positions[child_path] = Located(
                    Position(line + 1, col + 1), Position(line + 1, col + 1)
                )
            items.append(_plain(item, child_path, positions, float_texts))
        return items
    if isinstance(node, ScalarFloat):
        float_texts[path] = (
            RoundTripRepresenter(None, None, None).represent_scalar_float(node).value
        )
    return _scalar(node)


def _key_name(key: Any) -> Any:
    return _scalar(key)


def _scalar(value: Any) -> Any:
    """ruamel's scalar subclasses -> the builtin types pydantic's strict mode expects."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return bool(value) if type(value).__name__ == "ScalarBoolean" else int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    return value
