"""Any input, no traceback: hypothesis mutates the reference specs, section by section.

Each example takes one of the reference specs (examples/*.yaml), a compact spec that
uses every pattern (racks alike, switch groups, Lustre target groups) and GPU topology
and NCCL settings at every level, or a test spec of tests/data (zfs, LNet routes,
quotas, QOS, a mixed fleet), applies one to three mutations inside one section
(a value of another type, a deleted key or item, a duplicated item, a renamed or added
key, characters spliced into a string, deep nesting, or a plausible value: a number
nudged, another string of the spec, a list one shorter), writes it as YAML and runs
`clustergen validate` on it in-process. It must exit 0 or 1, never print "internal
error", and position every problem line (`file:line:col: `). A mutant that validates
must render.

The budget is bounded and derandomized, so CI runs the same examples every time.
CLUSTERGEN_FUZZ_EXAMPLES=N raises the examples per section and draws fresh ones each run
(benchmarks/fuzz.md records a long run).
"""

from __future__ import annotations

import contextlib
import copy
import io
import os
import re
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, currently_in_test_context, event, given, note, settings
from hypothesis import strategies as st

from clustergen.cli import main
from clustergen.dev.large_spec import compact_spec
from clustergen.model.patterns import RackPattern, SwitchGroup, TargetGroup
from clustergen.render import render_all
from clustergen.spec.load import parse_spec
from clustergen.validate import allowed_keys, validate_cluster

from support.paths import DATA, REFERENCE_SPECS, REPO

# Thousands of mutants through load, validate and render: the main run has them (slow).
pytestmark = pytest.mark.slow

_LONG_RUN = os.environ.get("CLUSTERGEN_FUZZ_EXAMPLES")
FUZZ = settings(
    max_examples=int(_LONG_RUN) if _LONG_RUN else 100,
    deadline=None,
    derandomize=not _LONG_RUN,
    database=None,
    print_blob=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
        HealthCheck.filter_too_much,
    ],
)


def _patterned_spec() -> dict[str, Any]:
    """The benchmark's compact spec at 64 nodes (every pattern, GPU topology), with NCCL
    settings per profile and per partition and a storage layout, so every key has a value
    to mutate."""
    document: dict[str, Any] = yaml.safe_load(compact_spec(64))
    document["hardware"]["hgx-h100"]["nccl"] = {"debug": "INFO", "env": {"NCCL_IB_TIMEOUT": 22}}
    document["slurm"]["partitions"][1]["nccl"] = {"env": {"NCCL_ALGO": "Ring"}}
    document["nccl"]["env"] = {"NCCL_IB_TIMEOUT": 20, "NCCL_NET_GDR_LEVEL": "PHB"}
    document["storage"]["lustre"]["layouts"] = [
        {"path": "/mnt/lustre/data", "stripe_count": 4, "stripe_size": "1MiB"}
    ]
    document["storage"]["lustre"]["client_tuning"] = {"osc.*.max_rpcs_in_flight": 16}
    return document


SOURCES: dict[str, dict[str, Any]] = {
    **{path.stem: yaml.safe_load(path.read_text()) for path in REFERENCE_SPECS},
    "patterns": _patterned_spec(),
    # zfs targets, LNet networks and routes, quotas, QOS, a mixed fleet:
    **{path.stem: yaml.safe_load(path.read_text()) for path in sorted(DATA.glob("*.yaml"))},
}
SECTIONS = sorted({key for document in SOURCES.values() for key in document})

# Strings that have broken parsers, hostlists, templates and formats before.
_HOSTILE = [
    "",
    " ",
    "gpu[01-",
    "gpu[1-99999999999]",
    "gpu[0-9999999]",
    "x[1-2]y[1-2]",
    "10.0.1.999",
    "10.0.0.0/0",
    "#",
    "a\nb",
    "a\rb",
    "../../etc/passwd",
    "/",
    "{rack}{rack}",
    "{index:099999999d}",
    "{index:x}{node}{n}{0}{}",
    "{__class__}",
    "{index.__class__}",
    "%s%n%(x)s",
    "{{ lookup('pipe', 'id') }}",
    "$(id)`id`;id",
    "'\"\\",
    "\u202e\u0000\ufeff",
    "1e999",
    "-0",
    "0x10",
    "UNLIMITED",
    "eof",
    "pairs",
    "1MiB",
    "-1",
]
_LONG_STRINGS = st.sampled_from(["x", "gpu", "é"]).map(lambda c: c * 5000)
_KEYS = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["name", "names", "nodes", "count", "device", "index", "u", "<<"]),
    st.integers(-3, 3),
    st.none(),
    st.booleans(),
)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    # Huge numbers, built when drawn (so that hypothesis' statistics stay readable).
    st.sampled_from([30, 63, 64, 4000]).map(lambda e: 10**e) | st.just(-(2**63) - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(st.characters(exclude_categories=("Cs",)), max_size=40),
    st.sampled_from(_HOSTILE),
    _LONG_STRINGS,
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=10,
)


def _places(node: Any, path: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """Every path under `node` (itself included)."""
    found = [path]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _places(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _places(value, (*path, index))
    return found


def _get(document: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        document = document[part]
    return document


def _mutate(
    draw: st.DrawFn,
    document: dict[str, Any],
    section: str,
    known_keys: Any = allowed_keys,
) -> str:
    """One mutation inside `section` of `document`, in place; says what it did.
    `known_keys(path)` names the keys the spec language accepts at a path."""
    path = draw(st.sampled_from(_places(document[section], (section,))))
    parent_path, last = path[:-1], path[-1]
    parent = _get(document, parent_path)
    target = _get(document, path)
    kinds = ["replace", "splice", "nest", "add", "perturb", "perturb"]
    if path != (section,):
        kinds.append("delete")
        kinds.append("duplicate" if isinstance(parent, list) else "rename")
    kind = draw(st.sampled_from(kinds))
    if kind == "replace":
        parent[last] = draw(_VALUES)
    elif kind == "perturb":  # a plausible value, so that more mutants stay valid
        if isinstance(target, bool):
            parent[last] = not target
        elif isinstance(target, int):
            parent[last] = target + draw(st.integers(-2, 2)) * draw(st.sampled_from([1, 8, 1024]))
        elif isinstance(target, str):
            parent[last] = draw(st.sampled_from(_strings(document)))
        else:
            parent[last] = copy.deepcopy(target)[:-1] if isinstance(target, list) else target
    elif kind == "delete":
        del parent[last]
    elif kind == "duplicate":
        parent.insert(last, copy.deepcopy(target))
    elif kind == "rename":
        new_key = draw(_KEYS)
        parent[new_key] = parent.pop(last)
    elif kind == "splice":
        text = target if isinstance(target, str) else str(target)
        at = draw(st.integers(0, len(text)))
        piece = draw(st.text(max_size=6) | st.sampled_from(_HOSTILE))
        parent[last] = text[:at] + piece + text[at:]
    elif kind == "nest":
        depth = draw(st.integers(1, 120))
        value = target
        for _ in range(depth):
            value = [value] if draw(st.booleans()) else {"k": value}
        parent[last] = value
    else:  # add a key the model knows at that place, or any key
        if not isinstance(target, dict):
            parent[last] = target = {}
        known = known_keys(path)
        key = draw(st.sampled_from(known) if known else _KEYS)
        target[key] = draw(_VALUES)
    return f"{kind} at {path}"


def _strings(node: Any) -> list[str]:
    """Every string value in `node`, in document order."""
    if isinstance(node, dict):
        return [s for value in node.values() for s in _strings(value)]
    if isinstance(node, list):
        return [s for value in node for s in _strings(value)]
    return [node] if isinstance(node, str) else []


def _dump(document: dict[str, Any]) -> str | None:
    try:
        return yaml.safe_dump(document, allow_unicode=True, sort_keys=False, width=10**6)
    except (RecursionError, yaml.YAMLError):
        return None


def _line_is_positioned(line: str, spec: str) -> bool:
    if re.fullmatch(rf"{re.escape(spec)}: (valid.*|\d+ error\(s\), \d+ warning\(s\))", line):
        return True
    return re.match(rf"{re.escape(spec)}:\d+:\d+: ", line) is not None


def check_mutant(text: str, spec: Path) -> None:
    """The properties every mutant has: see the module's docstring."""
    spec.write_text(text, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["validate", str(spec)])
    report = err.getvalue()
    assert code in (0, 1), report
    assert "internal error" not in report, report
    assert "Traceback" not in report, report
    for line in report.splitlines():
        assert _line_is_positioned(line, str(spec)), f"unpositioned line {line!r} in\n{report}"
    if currently_in_test_context():
        event("exit 0: validates and renders" if code == 0 else "exit 1: invalid")
    if code == 0:
        cluster, _ = validate_cluster(parse_spec(text, str(spec), spec.name))
        assert cluster is not None
        files = render_all(cluster)
        assert files
        for name in files:
            path = PurePosixPath(name)
            assert not path.is_absolute() and ".." not in path.parts, name


@pytest.mark.parametrize("section", SECTIONS)
@FUZZ
@given(data=st.data())
def test_mutants_of_every_section(section: str, data: st.DataObject, tmp_path: Path) -> None:
    names = [name for name, document in SOURCES.items() if section in document]
    name = data.draw(st.sampled_from(names), label="source")
    document = copy.deepcopy(SOURCES[name])
    done: list[str] = []
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        if section not in document:
            break
        done.append(_mutate(data.draw, document, section))
    note(f"{name}: {done}")
    text = _dump(document)
    if text is not None:
        check_mutant(text, tmp_path / "mutant.yaml")


# The pattern items: where they stand in the patterned source, and their models.
PATTERN_ITEMS = {
    "racks alike": (("racks", 0), RackPattern),
    "switch group": (("network", "fabric", "switches", 0), SwitchGroup),
    "spine group": (("network", "fabric", "switches", 2), SwitchGroup),
    "lustre target group": (("storage", "lustre", "osts", 0), TargetGroup),
}


@pytest.mark.parametrize("item", sorted(PATTERN_ITEMS))
@FUZZ
@given(data=st.data())
def test_mutants_of_pattern_items(item: str, data: st.DataObject, tmp_path: Path) -> None:
    document = copy.deepcopy(SOURCES["patterns"])
    where, model = PATTERN_ITEMS[item]
    parent = _get(document, where[:-1])

    def known_keys(path: tuple[Any, ...]) -> list[str]:
        if path == ("item",):
            return list(model.model_fields)
        return allowed_keys((*where, *path[1:]))

    # Mutate the item as if it were a section of its own, then put it back.
    holder = {"item": parent[where[-1]]}
    done = [_mutate(data.draw, holder, "item", known_keys)]
    if data.draw(st.booleans()) and "item" in holder:
        done.append(_mutate(data.draw, holder, "item", known_keys))
    if "item" in holder:
        parent[where[-1]] = holder["item"]
    else:
        del parent[where[-1]]
    note(str(done))
    text = _dump(document)
    if text is not None:
        check_mutant(text, tmp_path / "mutant.yaml")


def _reference_with(old: str, new: str, spec: str = "edge-roce-2node") -> str:
    text = (REPO / "examples" / f"{spec}.yaml").read_text()
    assert old in text
    return text.replace(old, new, 1)


# What the fuzz test found, each kept as the input that triggered it.
REGRESSIONS = {
    # A quoted value holding U+001E (or a newline, U+2028...) split the problem line in
    # two: the second half had no position. Problem lines now escape such characters.
    "control character in a quoted value": _reference_with(
        "  name: edge-lab\n", '  name: "\\x1Eedge\\nlab\\u2028x\\u202e"\n'
    ),
    # A Lustre target's failover node that is no node of the spec validated, and the
    # render then failed with an internal error (KeyError) looking up its NID.
    "failover to an unknown node": _reference_with(
        "mdt0}\n", "mdt0, failover: [ml-training]}\n", "ml-training-8node"
    ),
}


@pytest.mark.parametrize("case", sorted(REGRESSIONS))
def test_what_the_fuzz_test_found(case: str, tmp_path: Path) -> None:
    check_mutant(REGRESSIONS[case], tmp_path / "mutant.yaml")
