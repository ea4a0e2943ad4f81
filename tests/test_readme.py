"""The README's key table is the one the models generate, and its command table has
every command."""

from __future__ import annotations

import argparse

from clustergen.cli import _parser
from clustergen.keyref import replace_section

from support.paths import README


def test_readme_key_table_is_current(update_golden: bool) -> None:
    text = README.read_text(encoding="utf-8")
    current = replace_section(text)
    if update_golden:
        README.write_text(current, encoding="utf-8")
        return
    assert text == current, "README key table is out of date; run pytest --update-golden"


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
