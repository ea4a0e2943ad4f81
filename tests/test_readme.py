"""The README's key table is the one the models generate, and its command table has
every command."""

from __future__ import annotations

import argparse
import re
import subprocess

import pytest

from clustergen.cli import _parser
from clustergen.dev.keyref import replace_section

from support.paths import README, REPO
from support.regen import check_current

# The repository's own files: the fast matrix leaves this to the main run.
pytestmark = pytest.mark.repository


def test_readme_key_table_is_current(update_golden: bool) -> None:
    check_current(README, replace_section(README.read_text(encoding="utf-8")), update_golden)


def test_readme_command_table_has_every_command_with_its_exit_codes() -> None:
    rows = [
        line
        for line in README.read_text(encoding="utf-8").splitlines()
        if line.startswith("| `clustergen ")
    ]
    subcommands = next(
        action for action in _parser()._actions if isinstance(action, argparse._SubParsersAction)
    )
    for name in subcommands.choices:
        documented = [row for row in rows if row.startswith(f"| `clustergen {name} ")]
        assert documented, f"README's command table has no row for `clustergen {name}`"
        last_cells = [row.rstrip(" |").rsplit(" | ", 1)[-1] for row in documented]
        assert any(cell[:1].isdigit() for cell in last_cells), f"no exit codes for {name}"


def test_readme_first_screen_says_what_each_top_level_folder_is() -> None:
    """The table under '## This repository', before the quick start, names every
    folder committed at the top, but those of the render of spec.yaml: one row says
    that every folder `.clustergen-manifest` lists is that render, so a family added or
    removed changes no row here."""
    listed = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    folders = {path.split("/")[0] for path in listed if "/" in path and not path.startswith(".")}
    manifest = (REPO / ".clustergen-manifest").read_text(encoding="utf-8").splitlines()
    rendered = {line.split("/")[0] for line in manifest if "/" in line.split("\t")[0]}
    text = README.read_text(encoding="utf-8")
    table = text[text.index("## This repository") : text.index("## Quick start")]
    assert text.index("## Quick start") < 3000, "keep the table on the README's first screen"
    render_rows = [row for row in table.splitlines() if "`.clustergen-manifest`" in row]
    assert render_rows, "the README's folder table no longer says what the render of spec.yaml is"
    missing = sorted(f for f in folders - rendered if f"`{f}/`" not in table)
    assert not missing, f"the README's folder table does not say what these are: {missing}"


_NUMBERS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6}


def test_readme_counts_and_names_every_example() -> None:
    """Each place the README counts `examples/` gives the number there is, and the
    spec-language section names each example (it once said three, then two plus one)."""
    examples = sorted(path.name for path in (REPO / "examples").glob("*.yaml"))
    text = README.read_text(encoding="utf-8")
    counts = re.findall(r"`examples/`[^.\n]*? (two|three|four|five|six) complete", text)
    counts += re.findall(r"`examples/` holds (two|three|four|five|six) complete", text)
    assert counts, "the README no longer counts its examples"
    assert {_NUMBERS[word] for word in counts} == {len(examples)}, (counts, examples)
    section = text[text.index("## The spec language") :][:3000]
    assert [name for name in examples if f"`{name}`" not in section] == []


_QUICK_START_RENDER = re.compile(
    r"^## Quick start\n.*?^```sh\n.*?clustergen render (?P<spec>\S+) -o ", re.S | re.M
)


def test_the_quick_start_renders_an_example_that_validates_with_no_warning(cli) -> None:  # type: ignore[no-untyped-def]
    """A newcomer's first render prints nothing to wonder about: the quick start's example
    validates with no problem at all (the reference specs keep theirs for the checks)."""
    found = _QUICK_START_RENDER.search(README.read_text(encoding="utf-8"))
    assert found, "the README's quick start renders no example"
    spec = REPO / found["spec"]
    assert spec.parent == REPO / "examples", spec
    result = cli("validate", "--format", "json", str(spec))
    assert (result.code, result.out.strip()) == (0, "[]"), result.out


def test_readme_says_the_storage_fabric_s_switches_are_refused() -> None:
    """The key table's storage switches row says what validate does with them (the
    shared model's description said they become topology.conf)."""
    from clustergen.base.codes import NETWORK_STORAGE_SWITCHES

    row = next(
        line
        for line in README.read_text().splitlines()
        if line.startswith("| `network.storage.switches` |")
    )
    assert f"Refused ({NETWORK_STORAGE_SWITCHES.name})" in row, row
    assert "topology.conf (topology/tree)" not in row
    assert "| `network.storage.switches[].name` |" not in README.read_text()


def test_docs_slurm_says_which_mariadb_settings_the_role_sets() -> None:
    """docs/slurm.md once said no MariaDB setting is rendered, while the slurm role sets
    innodb_snapshot_isolation OFF (Slurm 26.05 stops otherwise on MariaDB 11.6.2 and
    later) among SchedMD's recommended settings: the doc names the variable and them."""
    import yaml

    defaults = yaml.safe_load((REPO / "roles/slurm/defaults/main.yml").read_text())
    settings = defaults["slurm_database_server_settings"]
    assert settings["loose-innodb_snapshot_isolation"] == "OFF"
    doc = (REPO / "docs/slurm.md").read_text(encoding="utf-8")
    assert "slurm_database_server_settings" in doc
    assert "renders no MariaDB server settings" not in doc
