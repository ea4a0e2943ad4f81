"""The resolved cluster is built once, from validation to render.

The checks and every output family read one `Cluster`; what the checks computed
(the host table, expanded hostlists, pins) the render reuses, and no hostlist
expression is expanded twice.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import hostlist
import pytest

from clustergen import resolve
from clustergen.load import load_spec
from clustergen.model import common
from clustergen.render import render_all
from clustergen.validate import validate_cluster

from support.paths import REFERENCE_SPECS


@pytest.mark.parametrize("spec_path", REFERENCE_SPECS, ids=lambda p: p.stem)
def test_validation_and_render_share_one_resolved_cluster(
    spec_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    common.expand_hostlist.cache_clear()
    expansions: Counter[str] = Counter()
    host_tables: list[object] = []
    pin_derivations: list[object] = []
    real_expand, real_hosts, real_pins = (
        hostlist.expand_hostlist,
        resolve.expand_hosts,
        resolve.derived_pins,
    )

    def expand(expression: str) -> list[str]:
        expansions[expression] += 1
        names: list[str] = real_expand(expression)
        return names

    def hosts(spec: object) -> object:
        host_tables.append(spec)
        return real_hosts(spec)  # type: ignore[arg-type]

    def pins(software: object) -> object:
        pin_derivations.append(software)
        return real_pins(software)  # type: ignore[arg-type]

    monkeypatch.setattr(common.hostlist, "expand_hostlist", expand)
    monkeypatch.setattr(resolve, "expand_hosts", hosts)
    monkeypatch.setattr(resolve, "derived_pins", pins)

    cluster, problems = validate_cluster(load_spec(str(spec_path)))
    assert cluster is not None, [p.format() for p in problems]
    files = render_all(cluster)

    assert files["slurm/slurm.conf"].text
    assert len(host_tables) == 1
    assert len(pin_derivations) == 1
    assert expansions, "the spec has hostlists; the counter saw none"
    assert [e for e, count in expansions.items() if count > 1] == []
