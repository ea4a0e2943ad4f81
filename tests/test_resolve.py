"""The resolved cluster is built once, from validation to render.

The checks and every output family read one `ResolvedCluster`; what the checks computed
(the host table, expanded hostlists, pins) the render reuses, and no hostlist
expression is expanded twice.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import hostlist
import pytest

from clustergen import resolve
from clustergen.model import common
from clustergen.render import render_all
from clustergen.spec.load import load_spec
from clustergen.validate import validate_cluster

from support.paths import REFERENCE_SPECS, WARNING_CASES


@pytest.mark.parametrize("spec_path", REFERENCE_SPECS, ids=lambda p: p.stem)
def test_validation_and_render_share_one_resolved_cluster(
    spec_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    common._expand_hostlist.cache_clear()
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

    def pins(
        software: object,
        with_nodes: frozenset[str],
        features: frozenset[str] = frozenset(),
        monitoring: object = None,
    ) -> object:
        pin_derivations.append(software)
        return real_pins(software, with_nodes, features, monitoring)  # type: ignore[arg-type]

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


def test_render_lists_the_warnings_validation_handed_over(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The facility overview prints the warnings of validation's own run of the checks:
    the resolved cluster never runs them (it sits below the checks, which read it), and
    the render runs none either."""
    from clustergen import checks

    cluster, problems = validate_cluster(load_spec(str(WARNING_CASES / "phase-imbalance.yaml")))
    assert cluster is not None, [p.format() for p in problems]
    # The dated warnings (end of support) stay out of the render.
    warned = [p for p in problems if p.severity == "warning" and not p.code.dated]
    assert "racks.phase-imbalance" in {p.code.name for p in warned}
    assert {p.code for p in warned} <= {p.code for p in cluster.warnings}

    def refuse(cluster: object) -> list[object]:
        raise AssertionError("a check ran during the render")

    monkeypatch.setattr(checks, "CHECKS", tuple(replace(c, run=refuse) for c in checks.CHECKS))
    overview = render_all(cluster)["facility/overview.html"].text
    assert all(str(p.code) in overview for p in warned)

    # A cluster no validation judged carries no warnings, and rendering it runs no check.
    bare = resolve.resolve(cluster.spec, cluster.spec_name)
    assert bare.warnings == ()
    assert "racks.phase-imbalance" not in render_all(bare)["facility/overview.html"].text
