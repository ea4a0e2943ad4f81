"""A spec opened in a real editor server (yaml-language-server, as VS Code's YAML
extension runs it) gets the schema's diagnostics on the lines that are wrong.

The server comes from npm (.ci/install-node-tools puts it in .ci-node/); the test
skips locally without it and node, and runs in CI.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from support.ci import skip_or_fail, tool
from support.lsp import LanguageServer
from support.paths import REFERENCE_SPECS, REPO, SCHEMA

SERVER = REPO / ".ci-node" / "node_modules" / ".bin" / "yaml-language-server"

# (what the spec says, what the broken spec says instead): syntax mistakes only the
# validator used to catch.
BREAKS = [
    ('nodes: "gpu[01-02]"', 'nodes: "gpu[01-02"'),
    ('max_time: "01:00:00"', 'max_time: "01:60:00"'),
    ("rate: hdr", "rate: 400g"),
    ("nvidia_driver: 550.90.07", "nvidia_driver: 550.90.07-1"),
]


def _server() -> list[str]:
    command = str(SERVER) if SERVER.exists() else tool("yaml-language-server")
    if command is None or tool("node") is None:
        skip_or_fail("needs node and yaml-language-server (.ci/install-node-tools)")
    return [command, "--stdio"]


def test_language_server_flags_syntax_mistakes_on_their_lines(tmp_path: Path) -> None:
    command = _server()
    spec = next(p for p in REFERENCE_SPECS if p.name == "ml-training-8node.yaml")
    text = spec.read_text(encoding="utf-8")
    expected_lines = []
    for good, bad in BREAKS:
        assert text.count(good) == 1, f"the reference spec should say {good!r} once"
        text = text.replace(good, bad)
    # As the README tells users: the first line points at the schema, relative to the spec.
    text = "# yaml-language-server: $schema=../schemas/clustergen.schema.json\n" + text
    lines = text.splitlines()
    for _, bad in BREAKS:
        expected_lines.append(next(i for i, line in enumerate(lines) if bad in line))

    (tmp_path / "schemas").mkdir()
    shutil.copy(SCHEMA, tmp_path / "schemas")
    broken = tmp_path / "examples" / "broken.yaml"
    broken.parent.mkdir()
    broken.write_text(text, encoding="utf-8")

    settings = {"yaml": {"validate": True, "schemaStore": {"enable": False}}}
    with LanguageServer(command, tmp_path, settings) as server:
        diagnostics = server.diagnostics(server.open(broken))

    flagged = {d["range"]["start"]["line"] for d in diagnostics}
    shown = [(d["range"]["start"]["line"] + 1, d["message"]) for d in diagnostics]
    missing = [lines[i].strip() for i in expected_lines if i not in flagged]
    assert not missing, f"no diagnostic on {missing}; the server said {shown}"
    assert flagged <= set(expected_lines), f"diagnostics on lines nothing broke: {shown}"


def test_language_server_finds_nothing_wrong_in_the_reference_specs(tmp_path: Path) -> None:
    command = _server()
    (tmp_path / "schemas").mkdir()
    shutil.copy(SCHEMA, tmp_path / "schemas")
    (tmp_path / "examples").mkdir()
    marker = "# yaml-language-server: $schema=../schemas/clustergen.schema.json\n"
    settings = {"yaml": {"validate": True, "schemaStore": {"enable": False}}}
    with LanguageServer(command, tmp_path, settings) as server:
        for spec in REFERENCE_SPECS:
            copy = tmp_path / "examples" / spec.name
            # One broken key per spec proves the schema was applied: its diagnostics
            # must be the only ones.
            copy.write_text(
                marker + spec.read_text(encoding="utf-8") + "clustre: {}\n", encoding="utf-8"
            )
            diagnostics = server.diagnostics(server.open(copy))
            shown = [(d["range"]["start"]["line"] + 1, d["message"]) for d in diagnostics]
            last = len(copy.read_text(encoding="utf-8").splitlines()) - 1
            assert {d["range"]["start"]["line"] for d in diagnostics} == {last}, shown
