"""Each check declares the sections it reads, and reads no other.

A check runs whenever its sections are valid, however broken the rest of the
spec is; it is handed a cluster over a spec that holds its sections only, so a check that reads
an undeclared section fails here rather than on a user's half-valid spec.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from clustergen.checks import CHECKS, Check
from clustergen.resolve import ResolvedCluster
from clustergen.spec.load import load_spec
from clustergen.spec.long_form import expand
from clustergen.validate import valid_sections

from support.paths import REFERENCE_SPECS


@pytest.mark.parametrize("spec_file", REFERENCE_SPECS, ids=lambda p: p.stem)
@pytest.mark.parametrize("check", CHECKS, ids=lambda c: f"{c.run.__module__}.{c.run.__name__}")
def test_check_reads_only_the_sections_it_needs(spec_file: Path, check: Check) -> None:
    data = expand(load_spec(str(spec_file)).data).data  # the long form, as checks see it
    others = {str(name) for name in data} - check.needs
    spec, valid = valid_sections(data, others)
    assert check.needs <= valid
    assert not valid & others
    # Reading an absent section, even through the cluster's host table, raises here.
    check.run(ResolvedCluster(spec, spec_file.name))
