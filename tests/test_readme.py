"""The README's key table is the one the models generate."""

from __future__ import annotations

from clustergen.keyref import replace_section

from support.paths import README


def test_readme_key_table_is_current(update_golden: bool) -> None:
    text = README.read_text(encoding="utf-8")
    current = replace_section(text)
    if update_golden:
        README.write_text(current, encoding="utf-8")
        return
    assert text == current, "README key table is out of date; run pytest --update-golden"
