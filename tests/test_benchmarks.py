"""The benchmarks' inputs are specs clustergen accepts, so the figures measure real work."""

from __future__ import annotations

import pytest

from clustergen.dev import large_spec as large_spec_module
from clustergen.load import parse_spec
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
