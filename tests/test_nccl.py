"""NCCL settings derived from the hardware, the known-variable table, and the overrides."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from clustergen.catalog.nccl_vars import (
    NCCL_VARIABLE_SINCE,
    NCCL_VARIABLES,
    parse_interface_list,
    value_problem,
)
from clustergen.outputs.nccl.derive import derive_nccl
from clustergen.resolve import ResolvedCluster
from clustergen.spec.load import load_spec
from clustergen.validate import validate_cluster

from support.paths import DATA, EXAMPLES


def _cluster(name: str) -> ResolvedCluster:
    cluster, problems = validate_cluster(load_spec(str(name)))
    assert cluster is not None, [p.format() for p in problems]
    return cluster


def _values(cluster: ResolvedCluster, profile: str) -> dict[str, str]:
    entry = next(e for e in derive_nccl(cluster) if e.profile == profile)
    return {s.name: s.value for s in entry.settings}


def test_eight_node_spec_lists_its_eight_compute_hcas_exactly() -> None:
    values = _values(_cluster(str(EXAMPLES / "ml-training-8node.yaml")), "hgx-h100")
    assert values["NCCL_IB_HCA"] == "=" + ",".join(f"mlx5_{i}:1" for i in range(8))
    assert values["NCCL_SOCKET_IFNAME"] == "=ib0"
    assert "NCCL_IB_GID_INDEX" not in values and "NCCL_IB_TC" not in values


def test_roce_spec_sets_gid_index_and_traffic_class() -> None:
    values = _values(_cluster(str(EXAMPLES / "edge-roce-2node.yaml")), "l40s-4gpu")
    assert values["NCCL_IB_GID_INDEX"] == "3"
    assert values["NCCL_IB_TC"] == "106"
    assert values["NCCL_IB_HCA"] == "=mlx5_0:1,mlx5_1:1"
    assert values["NCCL_DEBUG"] == "WARN"


@pytest.mark.parametrize(
    ("nccl", "gid_index", "written"),
    [("2.26.2", None, None), ("2.21.5", None, None), ("2.20.5", None, "3"), ("2.26.2", 5, "5")],
)
def test_the_gid_index_is_nccls_own_choice_from_2_21_unless_the_spec_sets_one(
    tmp_path: Path, nccl: str, gid_index: int | None, written: str | None
) -> None:
    """NCCL >= 2.21 picks the GID of the netdev's address itself (RoCE GIDs exist per
    address); before, it took GID 0 (RoCE v1), so clustergen writes 3 there."""
    data = yaml.safe_load((EXAMPLES / "edge-roce-2node.yaml").read_text())
    data["software"]["nccl"] = nccl
    data["network"]["fabric"]["roce"] = {"traffic_class": 106}
    if gid_index is not None:
        data["network"]["fabric"]["roce"]["gid_index"] = gid_index
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(data))
    values = _values(_cluster(str(spec)), "l40s-4gpu")
    assert values.get("NCCL_IB_GID_INDEX") == written
    assert values["NCCL_IB_TC"] == "106"


def test_mixed_fleet_has_one_hca_list_per_profile_and_leaves_storage_hcas_out() -> None:
    cluster = _cluster(str(DATA / "mixed-fleet.yaml"))
    h100, a100 = _values(cluster, "hgx-h100"), _values(cluster, "dgx-a100")
    assert "mlx5_8" not in h100["NCCL_IB_HCA"]  # role storage in the topology table
    assert h100["NCCL_IB_HCA"].count(":1") == 8
    assert a100["NCCL_IB_HCA"] == "=mlx5_0:1,mlx5_2:1,mlx5_6:1,mlx5_8:1"
    assert a100["NCCL_IB_QPS_PER_CONNECTION"] == "2"  # the profile's own env
    assert "NCCL_IB_QPS_PER_CONNECTION" not in h100


def test_every_line_names_its_source() -> None:
    cluster = _cluster(str(DATA / "mixed-fleet.yaml"))
    entry = next(e for e in derive_nccl(cluster) if e.profile == "hgx-h100")
    sources = {s.name: s.source for s in entry.settings}
    assert sources == {
        "NCCL_DEBUG": "nccl.debug",
        "NCCL_IB_HCA": "hardware.hgx-h100.topology.hcas (role compute); "
        "'=' matches these names exactly",
        "NCCL_SOCKET_IFNAME": "hardware.hgx-h100.interfaces.fabric",
        "NCCL_IB_TIMEOUT": "nccl.env.NCCL_IB_TIMEOUT",
    }


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("NCCL_IB_TIMEOUT", 20, None),
        ("NCCL_IB_TIMEOUT", 0, "0 is outside 1-31"),
        ("NCCL_IB_TIMEOUT", "fast", "'fast' is not an integer"),
        ("NCCL_DEBUG", "INFO", None),
        ("NCCL_NET_GDR_LEVEL", "PHB", None),
        ("NCCL_NET_GDR_LEVEL", "NEAR", "'NEAR' is not one of"),
        ("NCCL_IB_HCA", "=mlx5_0:1,mlx5_1:1", None),
        ("NCCL_IB_HCA", "^=mlx5_4", None),
        ("NCCL_IB_HCA", "mlx5_0,^mlx5_1", "'^mlx5_1' is not a name"),
        ("NCCL_IB_HCA", "mlx5_0:x", "'mlx5_0:x' is not a name"),
        ("NCCL_SOCKET_IFNAME", "^lo,docker", None),
        ("NCCL_SOCKET_IFNAME", "=ib0:1", "interface names take no ':port'"),
        ("NCCL_CROSS_NIC", 0, None),
        ("NCCL_CROSS_NIC", 3, "3 is outside 0-2"),
        ("NCCL_MNNVL_ENABLE", 2, None),
        ("NCCL_MNNVL_ENABLE", 3, "3 is outside 0-2"),
        ("NCCL_NVLS_ENABLE", -1, "-1 is outside 0-2"),
        ("NCCL_COLLNET_ENABLE", 2, "2 is outside 0-1"),
        ("NCCL_COLLNET_NODE_THRESHOLD", 0, "0 is outside 1-"),
        ("NCCL_IBEXT_DISABLE", 1, None),
    ],
)
def test_value_syntax(name: str, value: str | int, problem: str | None) -> None:
    found = value_problem(NCCL_VARIABLES[name], value)
    if problem is None:
        assert found is None
    else:
        assert found is not None and found.startswith(problem), found


def test_interface_list_prefixes_apply_to_the_whole_list() -> None:
    assert parse_interface_list("^=mlx5_0:1,mlx5_1") == (
        True,
        True,
        [("mlx5_0", 1), ("mlx5_1", None)],
    )


def test_the_release_that_brought_each_fabric_variable() -> None:
    """Every dated variable is one the table knows, dated by a release that exists, and the
    rail / SHARP / NVLink variables clustergen derives are dated (docs/nccl.md)."""
    for name in ("NCCL_CROSS_NIC", "NCCL_COLLNET_ENABLE", "NCCL_NVLS_ENABLE", "NCCL_MNNVL_ENABLE"):
        assert name in NCCL_VARIABLE_SINCE
    for name, since in NCCL_VARIABLE_SINCE.items():
        assert name in NCCL_VARIABLES, name
        assert (2, 3) <= since[:2] <= (2, 30), (name, since)
    # NVLink SHARP (2.17) came before multi-node NVLink (2.21)
    assert NCCL_VARIABLE_SINCE["NCCL_NVLS_ENABLE"] < NCCL_VARIABLE_SINCE["NCCL_MNNVL_ENABLE"]
