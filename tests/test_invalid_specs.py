"""Each tests/invalid/<case>.yaml holds one mistake; <case>.expected is the exact output.

The expected text is what `clustergen validate` prints on stderr, with the
directory of the case removed from each line. Exit code 1 is required for
every case.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from support.paths import INVALID

CASES = sorted(INVALID.glob("*.yaml"))


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 25


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_invalid_spec_reports_exact_problems(case: Path, cli, update_golden: bool) -> None:  # type: ignore[no-untyped-def]
    result = cli("validate", str(case))
    output = result.err.replace(f"{case.parent}/", "")
    expected_file = case.with_suffix(".expected")
    if update_golden:
        expected_file.write_text(output, encoding="utf-8")
    assert result.code == 1, output
    assert "Traceback" not in output
    assert output == expected_file.read_text(encoding="utf-8")
