"""Each tests/invalid/<case>.yaml holds one mistake; <case>.expected is the exact output.

The expected text is what `clustergen validate` prints on stderr, with the
directory of the case removed from each line. Exit code 1 is required for
every case.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from support.paths import INVALID
from support.regen import check_current

CASES = sorted(INVALID.glob("*.yaml"))


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 25


def test_cases_are_named_for_their_mistake_alone() -> None:
    """One naming scheme: the mistake in words, lower case, no number (numbers only
    said in which order cases were added, and two branches adding cases at once took
    the same ones); a topic word first where it helps: lustre-, nccl-, facility-."""
    misnamed = [c.name for c in CASES if not re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", c.stem)]
    assert not misnamed, f"rename without the number (git mv): {misnamed}"
    unpaired = sorted(
        {p.stem for p in INVALID.glob("*.yaml")} ^ {p.stem for p in INVALID.glob("*.expected")}
    )
    assert not unpaired, f"each case is a .yaml beside its .expected: {unpaired}"


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_invalid_spec_reports_exact_problems(case: Path, cli, update_golden: bool) -> None:  # type: ignore[no-untyped-def]
    result = cli("validate", str(case))
    output = result.err.replace(f"{case.parent}/", "")
    assert result.code == 1, output
    assert "Traceback" not in output
    check_current(case.with_suffix(".expected"), output, update_golden)
