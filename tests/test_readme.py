"""The README's key table is the one the models generate, and its command table has
every command."""

from __future__ import annotations

import argparse
import subprocess

from clustergen.cli import _parser
from clustergen.keyref import replace_section

from support.paths import README, REPO
from support.regen import check_current


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
    folder committed at the top."""
    listed = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    folders = {path.split("/")[0] for path in listed if "/" in path and not path.startswith(".")}
    text = README.read_text(encoding="utf-8")
    table = text[text.index("## This repository") : text.index("## Quick start")]
    assert text.index("## Quick start") < 3000, "keep the table on the README's first screen"
    missing = sorted(f for f in folders if f"`{f}/`" not in table)
    assert not missing, f"the README's folder table does not say what these are: {missing}"
