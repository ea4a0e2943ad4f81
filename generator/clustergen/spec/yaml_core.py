"""YAML 1.2's core schema, as the spec reader applies it: the tag of an untagged scalar, and
the value of an integer or float text. It reads the plain scalars as ruamel.yaml does
(clustergen's reader until 2026-11, and check-jsonschema's today), not as PyYAML's YAML 1.1
resolver does: `yes` and `on` are strings, `012` is 12."""

from __future__ import annotations

import re

from yaml.nodes import Node, ScalarNode, SequenceNode

TAG_PREFIX = "tag:yaml.org,2002:"
TAG_STR, TAG_INT, TAG_FLOAT, TAG_BOOL, TAG_NULL = (
    TAG_PREFIX + kind for kind in ("str", "int", "float", "bool", "null")
)
TAG_SEQ, TAG_MAP, TAG_MERGE = TAG_PREFIX + "seq", TAG_PREFIX + "map", TAG_PREFIX + "merge"

# The plain scalars YAML 1.2 reads as something other than a string: underscores may
# separate digits, 0o17 and 0x1F and 0b11 are numbers, and a leading zero does not make
# a number octal.
_BOOLEANS = frozenset({"true", "True", "TRUE", "false", "False", "FALSE"})
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_INT_TEXT = re.compile(
    r"[-+]?(?:0b_*[01][01_]*|0o?_*[0-7][0-7_]*|[0-9_]*[0-9][0-9_]*|0x_*[0-9a-fA-F][0-9a-fA-F_]*)"
)
_FLOAT_TEXT = re.compile(
    r"""[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
    |[-+]?\.[0-9_]+(?:[eE][-+][0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN)""",
    re.VERBOSE,
)
_NUMBER_START = frozenset("-+0123456789.")
# Python refuses longer integer texts (CVE-2020-10735); no spec number comes near.
_MAX_INT_DIGITS = 4300


class CoreResolver:
    """The tag of an untagged node: YAML 1.2's core schema, as ruamel.yaml reads it."""

    def resolve(self, kind: type[Node], value: str | None, implicit: tuple[bool, bool]) -> str:
        if kind is ScalarNode:
            if not implicit[0] or value is None:  # quoted, or a block scalar
                return TAG_STR
            if value in _NULLS:
                return TAG_NULL
            first = value[0]
            if first in _NUMBER_START:
                if _INT_TEXT.fullmatch(value):
                    return TAG_INT if len(value) <= _MAX_INT_DIGITS else TAG_STR
                if _FLOAT_TEXT.fullmatch(value):
                    return TAG_FLOAT
            elif value in _BOOLEANS:
                return TAG_BOOL
            elif value == "<<":
                return TAG_MERGE
            return TAG_STR
        return TAG_SEQ if kind is SequenceNode else TAG_MAP


def int_value(text: str) -> int | None:
    """An integer's value as ruamel.yaml reads YAML 1.2; None if the text holds no digits."""
    digits = text.replace("_", "")
    sign = -1 if digits[:1] == "-" else 1
    digits = digits.lstrip("+-")
    base = {"0b": 2, "0o": 8, "0x": 16}.get(digits[:2], 10)
    if base != 10:
        digits = digits[2:]
    if not digits or len(digits) > _MAX_INT_DIGITS:
        return None
    try:
        return sign * int(digits, base)
    except ValueError:
        return None


def float_value(text: str) -> float | None:
    """A float's value (`.inf`, `-.Inf` and `.NaN` included); None if Python reads none."""
    plain = text.replace("_", "").lower()
    if plain.lstrip("+-") in (".inf", ".nan"):
        plain = plain.replace(".", "")
    try:
        return float(plain)
    except ValueError:
        return None


def tag_message(tag: str, kind: str) -> str:
    """Why a node with `tag` is refused where `kind` ("a list", "a single value") stands."""
    shown = "!!" + tag.removeprefix(TAG_PREFIX) if tag.startswith(TAG_PREFIX) else tag
    if not shown.startswith("!"):
        shown = f"!<{tag}>"
    if tag in (TAG_STR, TAG_INT, TAG_FLOAT, TAG_BOOL, TAG_NULL, TAG_SEQ, TAG_MAP):
        return f"YAML: tag '{shown}' does not fit {kind}"
    return (
        f"YAML: tag '{shown}' is not allowed in a spec; a spec is plain YAML: mappings, "
        "lists, strings, numbers, true/false and null"
    )
