"""Each tests/warnings/<case>.yaml is a valid spec with one kind of warning; <case>.expected
is the exact output of `clustergen validate`, with the case's directory removed. Exit code 0
is required: a warning never fails validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.paths import WARNING_CASES
from support.regen import check_current

CASES = sorted(WARNING_CASES.glob("*.yaml"))


def test_there_are_warning_cases() -> None:
    assert len(CASES) >= 3


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_warning_spec_reports_exact_warnings(case: Path, cli, update_golden: bool) -> None:  # type: ignore[no-untyped-def]
    result = cli("validate", str(case))
    output = (result.out + result.err).replace(f"{case.parent}/", "")
    assert result.code == 0, output
    assert "warning: " in output
    check_current(case.with_suffix(".expected"), output, update_golden)
