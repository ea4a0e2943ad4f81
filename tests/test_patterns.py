"""Patterns (racks alike, switch groups, Lustre target groups): a compact spec means exactly
what its long form says, and a problem inside a pattern points at the pattern's line and
names the element it hits."""

from __future__ import annotations

import filecmp
import re
from pathlib import Path

from ruamel.yaml import YAML

from clustergen.dev.large_spec import compact_spec


def _same_trees(left: Path, right: Path) -> list[str]:
    """Paths that differ between two trees (missing on one side, or other bytes)."""
    differ: list[str] = []
    compared = filecmp.dircmp(left, right)
    stack = [("", compared)]
    while stack:
        prefix, node = stack.pop()
        differ += [prefix + name for name in node.left_only + node.right_only]
        _, mismatch, errors = filecmp.cmpfiles(
            left / prefix, right / prefix, node.common_files, shallow=False
        )
        differ += [prefix + name for name in mismatch + errors]
        stack += [(f"{prefix}{name}/", sub) for name, sub in node.subdirs.items()]
    return sorted(differ)


def test_compact_and_long_form_render_the_same_bytes(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    compact = compact_spec(128)
    (tmp_path / "compact").mkdir()
    (tmp_path / "long").mkdir()
    short = tmp_path / "compact/spec.yaml"
    short.write_text(compact)
    long = tmp_path / "long/spec.yaml"
    expanded = cli("expand", str(short), "-o", str(long))
    assert expanded.code == 0, expanded.err
    text = long.read_text()
    # written out: one rack per name, each node on a line of its own, each OST its own
    assert len(re.findall(r"^- name: g\d+$", text, re.M)) == 32
    assert len(re.findall(r"^  - u: \d+\n    node: gpu\d+$", text, re.M)) == 128
    assert "device: /dev/disk/by-id/dm-name-ost000f" in text
    assert len(compact.splitlines()) < 200 < len(text.splitlines())
    for spec in (short, long):
        result = cli("render", str(spec), "-o", str(spec.parent / "out"))
        assert result.code == 0, result.err
    assert _same_trees(tmp_path / "compact/out", tmp_path / "long/out") == []
    # and expanding the long form again changes nothing
    again = cli("expand", str(long))
    assert again.code == 0 and again.out == text


def test_what_the_patterns_expand_to(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spec = tmp_path / "spec.yaml"
    spec.write_text(compact_spec(64))
    result = cli("expand", str(spec))
    assert result.code == 0, result.err
    data = YAML(typ="safe").load(result.out)
    racks = {rack["name"]: rack for rack in data["racks"]}
    assert racks["g05"]["devices"] == [
        {"u": 3, "node": "gpu17"},
        {"u": 9, "node": "gpu18"},
        {"u": 15, "node": "gpu19"},
        {"u": 21, "node": "gpu20"},
    ]
    assert [pdu["name"] for pdu in racks["g05"]["pdus"]] == ["g05-pdu-a", "g05-pdu-b"]
    switches = {s["name"]: s for s in data["network"]["fabric"]["switches"]}
    assert switches["ib-leaf2"]["nodes"] == "gpu[33-64]"
    assert switches["ib-spine1"]["switches"] == "ib-leaf[1-2]"
    osts = data["storage"]["lustre"]["osts"]
    assert [(t["index"], t["node"], t["failover"]) for t in osts[3:5]] == [
        (3, "oss1", ["oss2"]),
        (4, "oss2", ["oss1"]),
    ]
    assert osts[4]["device"] == "/dev/disk/by-id/dm-name-ost0004"


def _compact_with(tmp_path: Path, old: str, new: str) -> Path:
    text = compact_spec(64)
    assert old in text
    spec = tmp_path / "spec.yaml"
    spec.write_text(text.replace(old, new, 1))
    return spec


def _line_of(spec: Path, needle: str) -> int:
    return next(n for n, line in enumerate(spec.read_text().splitlines(), 1) if needle in line)


def test_a_problem_in_a_pattern_points_at_it_and_names_the_element(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spec = _compact_with(tmp_path, "units: [3, 9, 15, 21]", "units: [3, 9, 15, 40]")
    result = cli("validate", str(spec))
    assert result.code == 1
    lines = [line for line in result.err.splitlines() if "racks.device-outside" in line]
    # Each rack's own node is too tall at U40: the same problem in every rack the pattern
    # makes, but for the names, is one line (issue 20), naming the first rack and its node.
    assert len(lines) == 1, result.err
    line = _line_of(spec, "units: [3, 9, 15, 40]")
    assert lines[0].startswith(f"{spec}:{line}:"), lines[0]
    assert ": racks[0].devices[3]" not in lines[0]
    assert "racks[0].units[3]: rack g01: 'gpu04' is 6U at U40" in lines[0]
    assert "(and 15 more racks of this pattern: g02, g03, g04, ...)" in lines[0]


def test_a_problem_the_elements_of_a_pattern_have_alike_is_one_line(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Issue 20: eight (here sixteen) racks of one pattern over their feeds' limits gave a
    # line per rack and feed, each naming its own rack, PDU and nodes; docs/patterns.md
    # promises one line per template "(and N more ...)": one per PDU of the pattern.
    spec = _compact_with(tmp_path, "phases: 3, amps: 80}", "phases: 3, amps: 20}")
    spec.write_text(spec.read_text().replace("phases: 3, amps: 80}", "phases: 3, amps: 20}"))
    result = cli("validate", str(spec))
    assert result.code == 1
    lines = [line for line in result.err.splitlines() if "racks.feed-over-limit" in line]
    assert len(lines) == 2, result.err
    assert "racks[0].pdus[0].amps: rack g01: feed A of rack 'g01' (g01-pdu-a:" in lines[0]
    assert "racks[0].pdus[1].amps: rack g01: feed B of rack 'g01' (g01-pdu-b:" in lines[1]
    assert all("(and 15 more racks of this pattern: g02, g03, g04, ...)" in x for x in lines)


def test_a_template_problem_is_reported_once_for_all_its_elements(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spec = _compact_with(tmp_path, "phases: 3, amps: 80}", "phases: 3, amps: 800}")
    result = cli("validate", str(spec))
    assert result.code == 1
    amps = [line for line in result.err.splitlines() if ".amps" in line]
    assert len(amps) == 1, result.err
    assert f"{spec}:{_line_of(spec, 'amps: 800')}:" in amps[0]
    assert "racks[0].pdus[0].amps: rack g01: " in amps[0]
    assert "(and 15 more racks of this pattern: g02, g03, g04, ...)" in amps[0]


def test_members_that_do_not_fit_are_an_error_at_the_pattern(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spec = _compact_with(tmp_path, 'names: "g[01-16]"', 'names: "g[01-15]"')
    result = cli("validate", str(spec))
    assert result.code == 1
    assert "64 nodes do not fit 15 racks x 4 units (60 places) [pattern.no-room]" in result.err
    # the racks are not checked further, so no node is reported unracked for it
    assert "node-not-racked" not in result.err


def test_uneven_targets_and_odd_failover_pairs(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spec = _compact_with(tmp_path, "count: 8\n", "count: 7\n")
    result = cli("validate", str(spec))
    assert "7 targets do not divide evenly over 2 servers [pattern.no-room]" in result.err
    spec = _compact_with(
        tmp_path,
        'count: 8\n        nodes: "oss[1-2]"\n',
        'count: 6\n        nodes: "oss[1-2],mds01"\n',
    )
    result = cli("validate", str(spec))
    assert "failover: pairs needs an even number of servers, not 3" in result.err


def test_a_pattern_with_a_wrong_key_is_a_shape_error_at_its_key(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spec = _compact_with(tmp_path, "per_switch: 32}", "per_switch: 32, port: 64}")
    result = cli("validate", str(spec))
    assert result.code == 1
    assert "network.fabric.switches[0].port" in result.err
    assert "[shape.unknown-key]" in result.err


def test_every_spine_over_every_leaf_is_one_line(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The usual two-level fat tree: `per_switch: all` puts every leaf under every spine
    (dealing them out failed with pattern.no-room, issue 40); it renders as its long form."""
    spec = _compact_with(
        tmp_path,
        '      - {names: "ib-spine[1-1]", switches: "ib-leaf[1-2]",\n         per_switch: 32}\n'
        '      - {name: ib-core, switches: "ib-spine[1-1],ib-svc[1-1]"}\n',
        '      - {names: "ib-spine[1-2]", switches: "ib-leaf[1-2],ib-svc1", per_switch: all}\n',
    )
    result = cli("expand", str(spec))
    assert result.code == 0, result.err
    switches = YAML(typ="safe").load(result.out)["network"]["fabric"]["switches"]
    assert switches[-2:] == [
        {"name": "ib-spine1", "switches": "ib-leaf[1-2],ib-svc1"},
        {"name": "ib-spine2", "switches": "ib-leaf[1-2],ib-svc1"},
    ]
    long_form = tmp_path / "long.yaml"
    long_form.write_text(result.out)
    assert cli("render", str(spec), "-o", str(tmp_path / "compact")).code == 0
    assert cli("render", str(long_form), "-o", str(tmp_path / "long")).code == 0
    assert _same_trees(tmp_path / "compact", tmp_path / "long") == []
    leaves = _compact_with(
        tmp_path, 'nodes: "gpu[01-64]", per_switch: 32}', 'nodes: "gpu[01-64]", per_switch: all}'
    )
    refused = cli("validate", str(leaves))
    assert refused.code == 1
    assert "per_switch all puts every member under every switch" in refused.err, refused.err
