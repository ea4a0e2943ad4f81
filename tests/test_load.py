"""The spec reader: libyaml's speed, ruamel.yaml's readings and positions, no hostile YAML.

ruamel.yaml's round-trip loader was clustergen's reader before libyaml; it stays here
as the reference. Every YAML file in the repository, and a set of scalars YAML
versions disagree on, must read to the same data, positions and floats as written,
except where ruamel.yaml read something that is not plain data (listed below).
"""

from __future__ import annotations

import contextlib
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError
from ruamel.yaml.representer import RoundTripRepresenter
from ruamel.yaml.scalarfloat import ScalarFloat

from clustergen.base.errors import Position, SpecInvalid, SpecPath, UsageError
from clustergen.spec import load
from clustergen.spec.load import Located, load_spec, parse_spec
from clustergen.validate import validate

from support.paths import EXAMPLES, REFERENCE_SPECS, REPO, TESTS

YAML_FILES = sorted(
    # The top's inventory is the 8-node reference's golden tree (tests/golden has the others).
    {
        *EXAMPLES.rglob("*.yaml"),
        *TESTS.rglob("*.yaml"),
        *TESTS.rglob("*.yml"),
        *(REPO / "inventory").rglob("*.yml"),
    },
    key=lambda p: str(p),
)
# Invalid cases the old reader could not read at all: it expanded the alias bomb (9^9
# nodes) and failed on the tag with an internal error. tests/invalid checks them.
NOT_FOR_RUAMEL = {"alias-bomb.yaml", "python-tag.yaml"}

Reading = tuple[Any, dict[SpecPath, Located], dict[SpecPath, str]]


# --- The reference: clustergen's reader before libyaml -------------------------------


def ruamel_reading(text: str) -> Reading:
    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    document = yaml.load(text)
    positions: dict[SpecPath, Located] = {}
    float_texts: dict[SpecPath, str] = {}
    if isinstance(document, CommentedMap | CommentedSeq):
        start = Position(document.lc.line + 1, document.lc.col + 1)
        positions[()] = Located(start, start)
    return _plain(document, (), positions, float_texts), positions, float_texts


def _plain(node: Any, path: SpecPath, positions: dict, float_texts: dict) -> Any:
    if isinstance(node, CommentedMap):
        out = {}
        for key in node:
            child = (*path, _builtin(key))
            if key in node.lc.data:
                key_line, key_col = node.lc.key(key)
                value_line, value_col = node.lc.value(key)
                if node[key] is None:
                    value_line, value_col = key_line, key_col
                positions[child] = Located(
                    Position(key_line + 1, key_col + 1), Position(value_line + 1, value_col + 1)
                )
            out[_builtin(key)] = _plain(node[key], child, positions, float_texts)
        return out
    if isinstance(node, CommentedSeq):
        items = []
        for index, item in enumerate(node):
            line, col = node.lc.item(index)
            positions[(*path, index)] = Located(
                Position(line + 1, col + 1), Position(line + 1, col + 1)
            )
            items.append(_plain(item, (*path, index), positions, float_texts))
        return items
    if isinstance(node, ScalarFloat):
        float_texts[path] = (
            RoundTripRepresenter(None, None, None).represent_scalar_float(node).value
        )
    return _builtin(node)


def _builtin(value: Any) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return bool(value) if type(value).__name__ == "ScalarBoolean" else int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    return value


# --- Helpers ------------------------------------------------------------------------


def reading(text: str) -> Reading:
    loaded = parse_spec(text, "spec.yaml", "spec.yaml")
    return loaded.data, loaded.positions, loaded.float_texts


def ordered(value: Any) -> Any:
    """Data with every mapping as a list of its items, so key order counts too."""
    if isinstance(value, dict):
        return [(key, ordered(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [ordered(item) for item in value]
    return (type(value).__name__, value) if value == value else ("nan",)


def refusal(text: str) -> tuple[Position, str]:
    with pytest.raises(SpecInvalid) as caught:
        parse_spec(text, "spec.yaml", "spec.yaml")
    [problem] = caught.value.problems
    return problem.position, problem.message


def assert_same_as_ruamel(text: str) -> None:
    expected_data, expected_positions, expected_floats = ruamel_reading(text)
    data, positions, floats = reading(text)
    assert ordered(data) == ordered(expected_data)
    assert positions == expected_positions
    assert floats == expected_floats


# --- Same readings as before --------------------------------------------------------


def test_there_are_files_to_compare() -> None:
    assert len(YAML_FILES) > 80 and set(REFERENCE_SPECS) <= set(YAML_FILES)


@pytest.mark.sweep
@pytest.mark.parametrize(
    "path",
    [path for path in YAML_FILES if path.name not in NOT_FOR_RUAMEL],
    ids=lambda p: str(p.relative_to(REPO)),
)
def test_every_file_reads_as_ruamel_read_it(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    try:
        ruamel_reading(text)
    except MarkedYAMLError as exc:  # the invalid cases of broken YAML: refused at the same place
        mark = exc.problem_mark or exc.context_mark
        assert refusal(text)[0] == Position(mark.line + 1, mark.column + 1)
        return
    assert_same_as_ruamel(text)


# Scalars YAML 1.1 and 1.2 (and PyYAML and ruamel.yaml) read differently.
TRICKY_SCALARS = [
    "yes", "no", "on", "off", "y", "n", "Yes", "NO",
    "true", "True", "TRUE", "false", "False", "FALSE", "tRue",
    "~", "null", "Null", "NULL", "nULL", "''", '""',
    "0", "-0", "+1", "012", "-012", "08", "0017", "0o17", "0o8", "0x1F", "0X1F", "+0x1F",
    "0b101", "1_000", "0_1", "1__", "+_1", "0o", "0x", "0b", "+", "-1",
    "99999999999999999999999",
    "1e3", "1E3", "1e+3", "1.5e3", "1.0E+3", "6.02e+23", "0e0", "0.1e-2", "7e", ".5e3",
    ".5", "+.5", "-.5", "1.", "23.10", "-0.0", "0.0", "09.5",
    ".inf", "-.inf", "+.inf", ".Inf", ".INF", ".nan", ".NaN", ".NAN", "inf", "nan",
    '"23.10"', "'012'", "'yes'", '"~"', '"true"', "'<<'",
    "1:20", "1:20:30", "190:20:30", "2-00:00:00", "01:00:00", "2001-1-1",
    "10.0.1.11", "550.90.07", "12.4", "12.4.1", "10.10.0.0/16", "1MiB", "<<x", "x<<",
    "'multi word'", "plain words here",
]  # fmt: skip


def tricky_document() -> str:
    def entries(prefix: str) -> list[tuple[str, str]]:
        return [(f"{prefix}{index}", scalar) for index, scalar in enumerate(TRICKY_SCALARS)]

    block = "".join(f"{key}: {scalar}  # a comment\n" for key, scalar in entries("k"))
    listed = "".join(f"  - {scalar}\n" for scalar in TRICKY_SCALARS)
    flow = ", ".join(TRICKY_SCALARS)
    flow_map = ", ".join(f"{key}: {scalar}" for key, scalar in entries("f"))
    return (
        "# a comment before the document start\n"
        "---\n"
        f"{block}"
        f"sequence:\n{listed}"
        f"flow: [{flow}]\n"
        f"flow_map: {{{flow_map}}}\n"
        "empty:\n"
        "empty_in_flow: {a: , b: ~, c: }\n"
        "literal: |\n  line one\n    indented\n  line three\n"
        "folded: >-\n  folded\n  onto one line\n\n  and a paragraph\n"
        "plain_multi: this plain scalar\n  goes on\n  for three lines\n"
        'double: "tab\\there\\nnewline \\u00e9 and a\n  folded line"\n'
        "single: 'it''s\n  folded'\n"
        "2: int key\n"
        "0x10: hex key\n"
        "true: bool key\n"
        "1.5: float key\n"
        "~: null key\n"
        '"quoted key": q\n'
        "? explicit key\n"
        ": explicit value\n"
        "nested:\n  - [1, [2, [3]]]\n  - {a: {b: {c: [x, y]}}}\n  -\n    - indentless\n"
        "  - - compact\n    - sequence\n  - key: in a sequence\n    other: 2.50\n"
        "unicode: héllo wörld ✓ 𝄞\n"
        "after_unicode: {ключ: значение, 𝄞: 1.50}\n"
        "crlf: [a, b]\r\nafter_crlf: 1.250\r\n"
        "...\n"
    )


def test_tricky_scalars_read_as_ruamel_read_them() -> None:
    assert_same_as_ruamel(tricky_document())


def test_the_documents_top_level_is_where_its_content_starts() -> None:
    _, positions, _ = reading("# comment\n\n---\n  - a\n  - b\n")
    assert positions[()] == Located(Position(4, 3), Position(4, 3))
    assert reading("just text\n") == ("just text", {}, {})
    assert reading("") == (None, {}, {})
    assert reading("# only a comment\n") == (None, {}, {})


# What ruamel.yaml read as something other than plain data (or crashed on), and what
# clustergen reads now. YAML 1.2's core schema has no timestamps.
READ_OTHERWISE = {
    "2001-12-14": "2001-12-14",  # ruamel.yaml: datetime.date
    "2001-12-14 10:00:00": "2001-12-14 10:00:00",  # ruamel.yaml: datetime.datetime
    "=": "=",  # ruamel.yaml: TaggedScalar (YAML 1.1's value key)
    "<<": "<<",  # ruamel.yaml: TaggedScalar (a merge key anywhere but as a key)
    "0x_": "0x_",  # ruamel.yaml: IndexError
    "!!str": "",  # ruamel.yaml: TaggedScalar
}


@pytest.mark.parametrize("scalar", READ_OTHERWISE)
def test_what_ruamel_read_as_objects_reads_as_strings(scalar: str) -> None:
    assert reading(f"a: {scalar}\n")[0] == {"a": READ_OTHERWISE[scalar]}
    assert reading(f"- {scalar}\n")[0] == [READ_OTHERWISE[scalar]]


def test_floats_keep_the_text_as_written() -> None:
    """ruamel.yaml rebuilt the text from the number, losing underscores ('1_000.5' came back
    as '01000.5'); the reader now keeps the text itself."""
    _, _, floats = reading("a: 1_000.5\nb: [1.0_, 23.10]\nc: !!float 7\nd: .inf\ne: '1.5'\n")
    assert floats == {("a",): "1_000.5", ("b", 0): "1.0_", ("b", 1): "23.10", ("c",): "7"}


MERGES = """\
defaults: &defaults
  a: 1
  b: {p: 2}
  empty:
other: &other
  z: 9
  a: 7
x:
  c: 4
  <<: [*defaults, *other]
  b: 3
y:
  <<: *defaults
  q: ~
z: *defaults
w:
  - *defaults
  - &pair [1, 2.50]
  - *pair
v: {<<: {k: 1}, m: 2}
chained: &chained {<<: *defaults, c: 3}
again: {<<: *chained, d: 4}
"""


def test_merge_keys_and_aliases_read_as_ruamel_read_them() -> None:
    """Own keys first, then merged ones, the first merged winning; merged keys have no
    position of their own (a problem there is shown at the mapping that merges them)."""
    assert_same_as_ruamel(MERGES)
    data, positions, _ = reading(MERGES)
    assert list(data["x"]) == ["c", "b", "a", "empty", "z"]
    assert data["again"] == {"d": 4, "c": 3, "a": 1, "b": {"p": 2}, "empty": None}
    assert ("x", "a") not in positions and ("y", "b", "p") in positions


# --- Refusals -----------------------------------------------------------------------


def test_duplicate_keys_name_both_places() -> None:
    text = "software:\n  cuda: 12.4.1\n  nccl: 2.21.5\n  cuda: 12.8.1\n"
    assert refusal(text) == (
        Position(4, 3),
        "YAML: duplicate key 'cuda' (first at line 2, column 3)",
    )
    # Keys are compared as the values they read as: 1 and 0x1 are one key.
    assert refusal("1: a\n0x1: b\n")[1] == "YAML: duplicate key '0x1' (first at line 1, column 1)"
    assert refusal("{<<: {a: 1}, b: 2, <<: {c: 3}}\n") == (
        Position(1, 20),
        "YAML: duplicate key '<<' (first at line 1, column 2)",
    )


def test_a_merged_key_may_be_set_again() -> None:
    assert reading("d: &d {a: 1}\nx: {<<: *d, a: 2}\n")[0]["x"] == {"a": 2}


def billion_laughs(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels):
        aliases = ", ".join([f"*a{level - 1}"] * 9)
        lines.append(f"a{level}: &a{level} [{aliases}]")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_at_the_alias_that_crosses_the_allowance() -> None:
    text = billion_laughs()
    position, message = refusal(text)
    # Each a<n> holds nine a<n-1>: a1 to a3 add 8,289 nodes through aliases, and the first
    # *a3 in a4 (7,381 more) takes them past 10,000.
    line = text.splitlines()[position.line - 1]
    assert line.startswith("a4: ") and position.col == line.index("*a3") + 1
    assert message.startswith("YAML: alias '*a3' expands the document past ")
    assert "aliases may repeat part of a spec, not multiply it" in message


def test_a_long_chain_of_doubling_aliases_is_refused() -> None:
    """2^3000 nodes: refused at the alias that crosses, before any number grows large."""
    lines = ["a0: &a0 [x]"] + [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}]" for i in range(1, 3000)]
    position, message = refusal("\n".join(lines) + "\n")
    assert position.line < 20 and "expands the document past" in message


def test_aliases_may_repeat_parts_of_a_spec() -> None:
    """A profile reused by name on every one of a few thousand items is fine; only growth
    past ten times the nodes written is refused."""
    items = "".join(f"  - {{<<: *device, u: {u}}}\n" for u in range(3000))
    data, _, _ = reading(f"device: &device {{height_u: 1, max_watts: 300}}\ndevices:\n{items}")
    assert len(data["devices"]) == 3000 and data["devices"][7]["max_watts"] == 300


@pytest.mark.parametrize(
    "text", ["&a [*a]\n", "a: &x {b: *x}\n", "a: &x\n  - b: [1, *x]\n"], ids=range(3)
)
def test_an_alias_inside_its_own_anchor_is_refused(text: str) -> None:
    position, message = refusal(text)
    assert message.endswith("points into the node it is part of; a spec cannot contain itself")
    assert text.splitlines()[position.line - 1][position.col - 1] == "*"


def test_an_anchor_may_be_defined_again() -> None:
    """YAML 1.2: an alias names the latest node with its anchor (ruamel.yaml agreed)."""
    assert reading("a: &x 1\nb: &x 2\nc: *x\n")[0] == {"a": 1, "b": 2, "c": 2}


def test_an_undefined_alias_is_a_syntax_error() -> None:
    assert refusal("a: 1\nb: *nope\n") == (
        Position(2, 4),
        "YAML syntax error: found undefined alias 'nope'",
    )


TAGGED = {
    'x: !!python/object/apply:os.system ["echo hi"]\n': "!!python/object/apply:os.system",
    "x: !!python/name:os.system\n": "!!python/name:os.system",
    "x: !!binary aGk=\n": "!!binary",
    "x: !!timestamp 2001-12-14\n": "!!timestamp",
    "x: !!set {a, b}\n": "!!set",
    "x: !!omap [a: 1]\n": "!!omap",
    "x: !foo bar\n": "!foo",
    "x: !foo {a: 1}\n": "!foo",
    "x: !<tag:example.com,2000:thing> 1\n": "!<tag:example.com,2000:thing>",
    "%TAG !! tag:example.com,2000:\n---\nx: !!str 1\n": "!<tag:example.com,2000:str>",
    "x:\n  !!binary key: 1\n": "!!binary",
}


@pytest.mark.parametrize("text", TAGGED, ids=range(len(TAGGED)))
def test_tags_are_refused_where_they_stand(text: str, cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    position, message = refusal(text)
    assert message == (
        f"YAML: tag '{TAGGED[text]}' is not allowed in a spec; a spec is plain YAML: "
        "mappings, lists, strings, numbers, true/false and null"
    )
    tag = TAGGED[text].removeprefix("!<tag:example.com,2000:").rstrip(">")
    assert text.splitlines()[position.line - 1][position.col - 1 :].startswith("!")
    assert tag.lstrip("!") in text
    spec = tmp_path / "spec.yaml"
    spec.write_text(text, encoding="utf-8")
    result = cli("validate", str(spec))
    assert result.code == 1 and "internal error" not in result.err


def test_core_tags_read_as_their_type() -> None:
    text = (
        "s: !!str 12\ni: !!int '0x1F'\nf: !!float 1\nb: !!bool 'true'\nn: !!null ''\n"
        "m: !!map {a: 1}\nq: !!seq [1]\nnon_specific: ! 12\n"
    )
    # `!` asks for the tag a plain scalar would get (PyYAML, libyaml and ruamel.yaml agree).
    assert reading(text)[0] == {
        "s": "12", "i": 31, "f": 1.0, "b": True, "n": None, "m": {"a": 1}, "q": [1],
        "non_specific": 12,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: !!int abc\n", "YAML: 'abc' is not a whole number (tag '!!int')"),
        ("a: !!float x1\n", "YAML: 'x1' is not a number (tag '!!float')"),
        ("a: !!bool yes\n", "YAML: 'yes' is not true or false (tag '!!bool')"),
        ("a: !!map [1]\n", "YAML: tag '!!map' does not fit a list"),
        ("a: !!seq {b: 1}\n", "YAML: tag '!!seq' does not fit a mapping"),
        ("a: !!str [1]\n", "YAML: tag '!!str' does not fit a list"),
        ("a: !!seq x\n", "YAML: tag '!!seq' does not fit a single value"),
    ],
)
def test_a_core_tag_on_a_value_it_does_not_fit_is_refused(text: str, message: str) -> None:
    assert refusal(text) == (Position(1, 4), message)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("? [a, b]\n: 1\n", "YAML: a mapping key must be a single value, not a list"),
        ("? {a: 1}\n: 1\n", "YAML: a mapping key must be a single value, not a mapping"),
        ("<<: 1\n", "YAML: a merge key '<<' takes a mapping, or a list of mappings, to merge"),
        (
            "<<: [{a: 1}, 2]\n",
            "YAML: a merge key '<<' takes a mapping, or a list of mappings, to merge",
        ),
    ],
)
def test_keys_and_merges_that_are_not_plain_data_are_refused(text: str, message: str) -> None:
    assert refusal(text)[1] == message


# --- Limits -------------------------------------------------------------------------


def test_nesting_past_the_limit_is_refused_where_it_passes() -> None:
    depth = load.MAX_NESTING_DEPTH
    assert reading("[" * depth + "]" * depth)[0] is not None
    position, message = refusal("a:\n  " + "[" * (depth + 50) + "]" * (depth + 50) + "\n")
    assert message == f"YAML nesting is too deep (more than {depth} levels)"
    assert position == Position(2, 3 + depth - 1)


def test_very_deep_nesting_is_refused_not_a_crash() -> None:
    """PyYAML's own libyaml composer recurses in C and crashes the interpreter on this
    (yaml.load with CSafeLoader: a segmentation fault); the reader stops at the limit."""
    deep = 200_000
    depth = load.MAX_NESTING_DEPTH
    assert refusal("[" * deep + "]" * deep) == (
        Position(1, depth + 1),
        f"YAML nesting is too deep (more than {depth} levels)",
    )


@pytest.mark.parametrize(
    "text",
    [
        "a:\n  b: " + "[" * 1500,  # flow: libyaml 0.2.6 scans ahead past its own limit
        "x: 1\n" + "".join(" " * i + f"k{i}:\n" for i in range(1200)),  # block
        "- " * 1500 + "x\n",
    ],
    ids=["flow", "block", "sequences"],
)
def test_deep_nesting_is_too_deep_whichever_libyaml_refuses_it(text: str) -> None:
    """PyYAML 6.0.4 bundles a libyaml that refuses nesting past 1,000 levels itself, with
    its own message ('while increasing flow level, exceeded maximum nesting depth');
    earlier ones leave it to clustergen. Either way the spec gets clustergen's refusal,
    code, message and position, as PyYAML's pure-Python parser reads it."""
    with pytest.raises(SpecInvalid) as caught:
        parse_spec(text, "spec.yaml", "spec.yaml")
    [problem] = caught.value.problems
    assert problem.code.name == "yaml.too-deep"
    assert (
        problem.message == f"YAML nesting is too deep (more than {load.MAX_NESTING_DEPTH} levels)"
    )
    with pytest.raises(load._Refused) as pure:
        load._PurePythonLoader(text).get_single_node()
    assert problem.position == pure.value.position


def test_nesting_past_libyaml_limit_in_a_large_file_keeps_code_and_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past REWORD_MAX_CHARS the pure-Python parse is not made: the refusal stands where
    the parser stopped, with the same code and message."""
    monkeypatch.setattr(load, "REWORD_MAX_CHARS", 10)
    with pytest.raises(SpecInvalid) as caught:
        parse_spec("a: " + "[" * 5000, "spec.yaml", "spec.yaml")
    [problem] = caught.value.problems
    assert (problem.code.name, problem.message) == (
        "yaml.too-deep",
        f"YAML nesting is too deep (more than {load.MAX_NESTING_DEPTH} levels)",
    )


def test_nesting_through_aliases_is_bounded_too() -> None:
    """Each anchor nests 60 levels and holds the one before: within the limit as written,
    past it once the aliases are followed."""
    lines = ["a0: &a0 " + "[" * 60 + "]" * 60]
    lines += [f"a{i}: &a{i} " + "[" * 60 + f"*a{i - 1}" + "]" * 60 for i in range(1, 4)]
    assert refusal("\n".join(lines) + "\n")[1].startswith("YAML nesting is too deep")


def test_a_character_yaml_does_not_allow_is_refused_where_it_stands() -> None:
    assert refusal("a: 1\nb: x\x00y\n") == (
        Position(2, 5),
        "YAML: character #x0000 is not allowed in a YAML file (is this a binary file?)",
    )


def test_a_file_past_the_size_limit_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("a: " + "x" * 100 + "\n")
    monkeypatch.setattr(load, "MAX_SPEC_BYTES", 100)
    with pytest.raises(UsageError, match="104 bytes is too large for a spec file"):
        load_spec(str(spec))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "not UTF-8 text (byte 0)"),
        (b"a: caf\xe9\n", "not UTF-8 text (byte 6)"),
    ],
    ids=["binary", "latin-1"],
)
def test_a_file_that_is_not_utf8_text_is_not_read(
    tmp_path: Path, content: bytes, message: str
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_bytes(content)
    with pytest.raises(UsageError, match=re.escape(message)):
        load_spec(str(spec))


def test_a_directory_is_not_read(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is a directory"):
        load_spec(str(tmp_path))


# --- With or without libyaml --------------------------------------------------------


def outcome(text: str) -> Reading | list[str]:
    """What reading `text` gives: its data, positions and floats, or the problems."""
    try:
        loaded = parse_spec(text, "spec.yaml", "spec.yaml")
    except SpecInvalid as exc:
        return [problem.format() for problem in exc.problems]
    return ordered(loaded.data), loaded.positions, loaded.float_texts


def pure_python_outcome(text: str, monkeypatch: pytest.MonkeyPatch) -> Reading | list[str]:
    with monkeypatch.context() as patch:
        patch.setattr(load, "_LibyamlLoader", None)
        return outcome(text)


def test_libyaml_is_there() -> None:
    """PyYAML's wheels carry libyaml; without it every spec reads five times slower."""
    assert load._LibyamlLoader is not None


@pytest.mark.sweep
@pytest.mark.parametrize("path", YAML_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_without_libyaml_every_file_reads_the_same(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = path.read_text(encoding="utf-8")
    assert pure_python_outcome(text, monkeypatch) == outcome(text)


@pytest.mark.parametrize(
    "text",
    [tricky_document(), MERGES, billion_laughs(), "&a [*a]\n", *TAGGED],
    ids=["tricky", "merges", "bomb", "recursive", *(f"tag{i}" for i in range(len(TAGGED)))],
)
def test_without_libyaml_documents_and_refusals_read_the_same(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert pure_python_outcome(text, monkeypatch) == outcome(text)


def test_syntax_errors_are_worded_by_the_pure_python_parser(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """libyaml finds the error; the pure-Python parser says what it found there."""
    text = "a: 1\n\t- x\n"
    python_words = "found character '\\t' that cannot start any token"
    assert python_words in outcome(text)[0]  # type: ignore[index]
    monkeypatch.setattr(load, "REWORD_MAX_CHARS", len(text) - 1)  # too long to parse twice
    assert outcome(text) == [
        "spec.yaml:2:1: YAML syntax error: while scanning a plain scalar (started at line 1, "
        "column 4), found a tab character that violates indentation [yaml.syntax]"
    ]


# --- Fuzzing ------------------------------------------------------------------------

_YAML_BYTES = b":-[]{},#&*!|>'\"%@`?~<= \t\n\r\\0aZ9."


def mutant(source: bytes, rng: random.Random) -> bytes:
    """`source` with one to four random byte-level edits."""
    data = bytearray(source)
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(data))
        byte = rng.choice(_YAML_BYTES) if rng.random() < 0.8 else rng.randrange(256)
        edit = rng.randrange(4)
        if edit == 0:
            data[at] = byte
        elif edit == 1:
            data.insert(at, byte)
        elif edit == 2:
            del data[at : at + rng.randint(1, 8)]
        else:  # repeat a stretch, as a pasted line would
            stretch = data[at : at + rng.randint(1, 80)]
            data[at:at] = stretch
    return bytes(data)


@pytest.mark.sweep
@pytest.mark.parametrize("spec", REFERENCE_SPECS, ids=lambda p: p.stem)
def test_mutated_specs_never_raise_past_the_cli(spec: Path, cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Hundreds of byte-level mutations of each reference spec: load and validate raise
    nothing but SpecInvalid or UsageError, and the CLI exits 0, 1 or 2 without a
    traceback."""
    rng = random.Random(20261123)
    source = spec.read_bytes()
    target = tmp_path / "mutant.yaml"
    exits: Counter[int] = Counter()
    for round_number in range(300):
        target.write_bytes(mutant(source, rng))
        with contextlib.suppress(SpecInvalid, UsageError):
            validate(load_spec(str(target)))
        result = cli("validate", str(target))
        assert result.code in (0, 1, 2), (round_number, result.err)
        assert "internal error" not in result.err, (round_number, result.err)
        assert "Traceback" not in result.err
        exits[result.code] += 1
    assert exits[0] > 10 and exits[1] > 100 and exits[2] > 0, exits


@pytest.mark.sweep
@pytest.mark.parametrize("spec", REFERENCE_SPECS, ids=lambda p: p.stem)
def test_mutated_specs_read_the_same_without_libyaml(
    spec: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where both parsers read a mutant, they read the same data at the same positions;
    where both refuse it at the same place, with the same message. (They do not always
    agree on whether a text is YAML: libyaml takes a tab between tokens, as YAML 1.2
    does, where PyYAML's pure-Python scanner refuses it.)"""
    rng = random.Random(20261124)
    source = spec.read_bytes()
    compared = 0
    for round_number in range(150):
        try:
            text = mutant(source, rng).decode("utf-8")
        except UnicodeDecodeError:
            continue
        fast, slow = outcome(text), pure_python_outcome(text, monkeypatch)
        if isinstance(fast, list) and isinstance(slow, list):
            if fast[0].split(": ")[0] == slow[0].split(": ")[0]:
                assert fast == slow, (round_number, text)
                compared += 1
        elif not isinstance(fast, list) and not isinstance(slow, list):
            assert fast == slow, (round_number, text)
            compared += 1
    assert compared > 100
