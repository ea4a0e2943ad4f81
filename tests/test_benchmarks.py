"""The benchmarks' inputs are specs clustergen accepts, so the figures measure real work."""

from __future__ import annotations

import importlib.util
from types import ModuleType

import pytest

from clustergen.load import parse_spec
from clustergen.validate import validate

from support.paths import REPO


def _large_spec_module() -> ModuleType:
    path = REPO / "benchmarks" / "large_spec.py"
    spec = importlib.util.spec_from_file_location("large_spec", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("nodes", [36, 1024])
def test_large_spec_is_valid_and_racks_every_node(nodes: int) -> None:
    large_spec = _large_spec_module().large_spec
    loaded = parse_spec(large_spec(nodes), "large.yaml", "large.yaml")
    spec, problems = validate(loaded)
    assert spec is not None, [problem.format() for problem in problems[:5]]
    assert not problems, [problem.format() for problem in problems[:5]]
    racked = [device.node for rack in spec.racks for device in rack.devices if device.node]
    assert len(racked) == nodes + 6  # the GPU nodes, the head node and the Lustre servers
    assert all(len(rack.pdus) == 2 for rack in spec.racks)
