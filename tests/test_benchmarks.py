"""The benchmarks' inputs are specs clustergen accepts, so the figures measure real work."""

from __future__ import annotations

import sys

import pytest

from clustergen.dev import large_spec as large_spec_module
from clustergen.spec.load import parse_spec
from clustergen.validate import validate


@pytest.mark.parametrize("nodes", [64, 1024])
@pytest.mark.parametrize("form", ["compact_spec", "large_spec"])
def test_generated_spec_is_valid_and_racks_every_node(form: str, nodes: int) -> None:
    text = getattr(large_spec_module, form)(nodes)
    loaded = parse_spec(text, "large.yaml", "large.yaml")
    spec, problems = validate(loaded)
    assert spec is not None, [problem.format() for problem in problems[:5]]
    assert not [p for p in problems if p.severity == "error"], problems[:5]
    racked = [device.node for rack in spec.racks for device in rack.devices if device.node]
    osses = max(2, nodes // 64)
    assert sorted(racked) == sorted(h for g in spec.nodes for h in _names(g.names))
    assert len(racked) == nodes + 3 + osses  # GPU nodes, the head node, 2 MDS, the OSSes
    assert all(len(rack.pdus) == 2 for rack in spec.racks)
    assert spec.storage is not None and spec.storage.lustre is not None
    assert len(spec.storage.lustre.osts) == nodes // 8


def _names(expression: str) -> tuple[str, ...]:
    from clustergen.model.common import expand_hostlist

    return expand_hostlist(expression)


@pytest.mark.parametrize("form", ["compact_rail_spec", "large_rail_spec"])
def test_the_rail_optimised_form_is_valid_non_blocking_and_cables_every_hca(form: str) -> None:
    from clustergen.resolve.fabric import blocking
    from clustergen.validate import validate_cluster

    text = getattr(large_spec_module, form)(1024)
    cluster, problems = validate_cluster(parse_spec(text, "large.yaml", "large.yaml"))
    assert cluster is not None, [problem.format() for problem in problems[:5]]
    # Its 8 rails are separate planes by choice (each rail's spines and cores its own, as
    # at sites of this size that run a subnet per plane), which validate says, and UFM
    # must run an SM on each: nothing else about the network.
    meant = {"network.rails-not-joined", "network.subnet-manager-planes"}
    network = [p for p in problems if p.code.name.startswith("network.")]
    assert {p.code.name for p in network} == meant, network[:5]
    # 32 units x 8 rails of leaves, 2 pods x 8 rails x 16 spines, 8 x 16 x 16 cores.
    tiers = [row for row in cluster.switch_ports if not row.name.startswith("ib-svc")]
    assert len(tiers) == 256 + 256 + 2048
    factors = {b.factor for b in blocking(cluster) if not b.name.startswith("ib-svc")}
    assert factors == {1.0}
    hcas = sum(n for row in cluster.switch_ports for _, n in row.hcas if row.rail)
    assert hcas == 1024 * 8


def test_the_pull_benchmark_spec_renders_pull_mode() -> None:
    """benchmarks/bench_pull.py measures a tree with pull mode in it: its spec (the
    compact spec on Debian 13 with ansible.pull) is valid and renders the pull family."""
    from clustergen.render import render_all
    from clustergen.validate import validate_cluster

    bench = _bench_module("bench_pull")
    text = bench.pull_spec(64)
    cluster, problems = validate_cluster(parse_spec(text, "pull.yaml", "pull.yaml"))
    assert cluster is not None, [problem.format() for problem in problems[:5]]
    assert "pull/clustergen-pull.timer" in render_all(cluster)


@pytest.mark.slow
def test_the_floor_benchmark_runs_each_target_at_a_small_size(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """benchmarks/bench_floor.py (issue 42's targets at 1k, 16k and 65,536 nodes) at 512
    nodes, both forms: every command it times runs under the open-files limit, the
    one-node change plans as changes to apply, audit finds nothing on every node's healthy
    facts, and the table has each ratio."""
    bench = _bench_module("bench_floor")
    results = {(512, form): bench.measure(tmp_path, 512, form) for form in ("compact", "rails")}
    for figures in results.values():
        assert figures["files"] > 512 * 4 and figures["floor"] > 0
        assert figures["render"] > 0 and figures["plan"] > 0 and figures["check"] > 0
        assert figures["audit"] > 0 and figures["audit_rss"] > 0
    rows = bench.table(results)
    assert rows[2].startswith("| 512 | compact |") and rows[3].startswith("| 512 | rails |")
    assert "- 512 nodes: rail form / tree form render time" in "\n".join(rows)


def _bench_module(name: str):  # type: ignore[no-untyped-def]
    """benchmarks/NAME.py as a module (the scripts import their neighbours by name)."""
    import importlib.util

    from support.paths import REPO

    benchmarks = str(REPO / "benchmarks")
    sys.path.insert(0, benchmarks)
    try:
        found = importlib.util.spec_from_file_location(name, REPO / f"benchmarks/{name}.py")
        assert found is not None and found.loader is not None
        bench = importlib.util.module_from_spec(found)
        sys.modules[name] = bench  # a dataclass of the module looks its module up
        found.loader.exec_module(bench)
    finally:
        sys.path.remove(benchmarks)
    return bench
