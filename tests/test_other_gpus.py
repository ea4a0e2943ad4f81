"""A node with GPUs of several models (hardware.<profile>.other_gpus): each type its own
Gres= entry and gres.conf File= lines in device order, every GPU counted by the health
checks, the power check and the GPU defaults; real slurmctld and `slurmd -G` take the
rendered files. Import (tests/test_import.py, the mixed-gpu-nodes site set) and audit
(tests/test_audit_corpus.py) have their own tests."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from clustergen.catalog.gpus import profile_gpu_sets
from clustergen.outputs.slurm.derive import derive_slurm
from clustergen.render import render_all
from clustergen.resolve import ResolvedCluster
from clustergen.spec.load import LoadedSpec
from clustergen.validate import validate_cluster

from support.paths import DATA, EXAMPLES
from support.realslurm.expect import assert_report_matches
from support.realslurm.testbed import SlurmTestbed, require_real_slurm

Data = dict[str, Any]
EXAMPLE: Data = yaml.safe_load((EXAMPLES / "ml-training-8node.yaml").read_text())
FLEET: Data = yaml.safe_load((DATA / "mixed-fleet.yaml").read_text())


def _with_other_gpus(data: Data, profile: str, others: list[Data]) -> Data:
    """`data` with other_gpus on `profile`, and its topology table, where it has one,
    listing them (each beside the last GPU's cores and HCA)."""
    data = copy.deepcopy(data)
    data["hardware"][profile]["other_gpus"] = others
    table = data["hardware"][profile].get("topology")
    for _ in range(sum(other["count"] for other in others) if table else 0):
        table["gpus"].append(dict(table["gpus"][-1], index=len(table["gpus"])))
    return data


def _codes(data: Data) -> list[str]:
    _, problems = validate_cluster(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))
    return [p.code.name for p in problems]


def _cluster(data: Data) -> tuple[ResolvedCluster, list[str]]:
    cluster, problems = validate_cluster(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))
    assert cluster is not None, [p.format() for p in problems]
    return cluster, [p.code.name for p in problems]


def _lines(text: str, start: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(start)]


def test_each_gpu_type_has_its_gres_entry_and_device_files_after_gpus() -> None:
    data = _with_other_gpus(
        EXAMPLE,
        "hgx-h100",
        [{"model": "l40s", "count": 2}, {"model": "a100-pcie-80gb", "count": 1}],
    )
    cluster, codes = _cluster(data)
    assert not [c for c in codes if "gpu" in c]
    files = render_all(cluster)
    slurm_conf, gres_conf = files["slurm/slurm.conf"].text, files["slurm/gres.conf"].text
    (node_line,) = _lines(slurm_conf, "NodeName=gpu")
    assert " Gres=gpu:h100:8,gpu:l40s:2,gpu:a100:1 " in node_line
    # Each type is a feature, as the main one is, so --constraint=l40s finds the nodes.
    assert " Features=hgx-h100,h100,l40s,a100 " in node_line
    assert _lines(gres_conf, "NodeName=gpu") == [
        "NodeName=gpu[01-08] Name=gpu Type=h100 File=/dev/nvidia[0-7]",
        "NodeName=gpu[01-08] Name=gpu Type=l40s File=/dev/nvidia[8-9]",
        "NodeName=gpu[01-08] Name=gpu Type=a100 File=/dev/nvidia10",
    ]
    # The health epilog expects every GPU nvidia-smi lists, of every type.
    assert "hgx-h100) gpus=11;" in files["slurm/health-epilog.sh"].text


def test_a_node_without_other_gpus_renders_as_before() -> None:
    cluster, _ = _cluster(copy.deepcopy(EXAMPLE))
    (gpus,) = profile_gpu_sets(cluster.spec.hardware["hgx-h100"])
    assert (gpus.gres_type, gpus.count, gpus.first) == ("h100", 8, 0)
    (node_line,) = _lines(render_all(cluster)["slurm/slurm.conf"].text, "NodeName=gpu")
    assert " Gres=gpu:h100:8 " in node_line


def test_nhc_counts_every_gpu() -> None:
    profile = next(n for n, p in FLEET["hardware"].items() if p.get("gpu"))
    data = _with_other_gpus(FLEET, profile, [{"model": "l40s", "count": 1}])
    count = data["hardware"][profile]["gpu"]["count"]
    cluster, _ = _cluster(data)
    nhc = render_all(cluster)["nhc/nhc.conf"].text
    assert f"check_clustergen_gpu {count + 1}" in nhc


def test_the_gpu_defaults_share_the_node_among_every_gpu() -> None:
    """DefCpuPerGPU and DefMemPerGPU x every GPU of the node must still fit it: a job may
    ask for all of them, of every type."""
    plain = derive_slurm(_cluster(copy.deepcopy(EXAMPLE))[0])
    data = _with_other_gpus(EXAMPLE, "hgx-h100", [{"model": "l40s", "count": 8}])
    mixed = derive_slurm(_cluster(data)[0])
    assert _partition_value(mixed, "DefCpuPerGPU") * 2 <= _partition_value(plain, "DefCpuPerGPU")
    assert _partition_value(mixed, "DefMemPerGPU") * 2 <= _partition_value(plain, "DefMemPerGPU")


def _partition_value(slurm: Any, key: str) -> int:
    values = {
        int(value)
        for partition in slurm.partitions
        for name, value in partition.settings
        if name == key
    }
    assert len(values) == 1, values
    return values.pop()


def test_the_board_power_of_every_gpu_is_held_against_max_watts() -> None:
    data = _with_other_gpus(EXAMPLE, "hgx-h100", [{"model": "b200-sxm-180gb", "count": 8}])
    data["hardware"]["hgx-h100"]["power"]["max_watts"] = 12000
    _, problems = validate_cluster(LoadedSpec(file="s.yaml", name="s.yaml", data=data))
    (power,) = [p for p in problems if p.code.name == "hardware.max-watts-below-gpus"]
    assert power.message.endswith(
        "8 x h100-sxm5-80gb at 700 W + 8 x b200-sxm-180gb at 1000 W = 13600 W"
    ), power.message


@pytest.mark.parametrize(
    ("others", "code"),
    [
        ([{"model": "l40s", "count": 1, "gres_type": "h100"}], "hardware.gpu-type-repeated"),
        (
            [{"model": "a100-sxm4-80gb", "count": 1}, {"model": "a100-pcie-40gb", "count": 1}],
            "hardware.gpu-type-repeated",
        ),
        ([{"model": "t4", "count": 1}], "hardware.unknown-gpu-model"),
    ],
)
def test_other_gpus_slurm_could_not_tell_apart_are_refused(others: list[Data], code: str) -> None:
    data = _with_other_gpus(EXAMPLE, "hgx-h100", others)
    _, problems = validate_cluster(LoadedSpec(file="s.yaml", name="s.yaml", data=data))
    errors = [p for p in problems if p.severity == "error"]
    assert [p.code.name for p in errors] == [code], [p.format() for p in errors]
    assert errors[0].path[:3] == ("hardware", "hgx-h100", "other_gpus")


def test_a_topology_table_lists_every_gpu_of_every_type() -> None:
    """gres.conf takes each GPU's Cores= from the table, so it lists the other types'
    GPUs too; each keeps the type of its device number."""
    profile = next(n for n, p in FLEET["hardware"].items() if p.get("topology"))
    data = _with_other_gpus(FLEET, profile, [{"model": "l40s", "count": 1}])
    index = data["hardware"][profile]["gpu"]["count"]  # the L40S: after gpu's
    cluster, codes = _cluster(data)
    assert "hardware.topology-gpu-index" not in codes
    gres = render_all(cluster)["slurm/gres.conf"].text
    (line,) = [line for line in gres.splitlines() if f"File=/dev/nvidia{index} " in line]
    assert " Type=l40s " in line
    # A table that lists gpu's GPUs alone is one GPU short.
    data["hardware"][profile]["topology"]["gpus"].pop()
    assert "hardware.topology-gpu-index" in _codes(data)


@pytest.mark.daemons
def test_slurmctld_and_slurmd_take_a_node_of_several_gpu_types(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    require_real_slurm()
    data = _with_other_gpus(
        EXAMPLE,
        "hgx-h100",
        [{"model": "l40s", "count": 2}, {"model": "a100-pcie-80gb", "count": 1}],
    )
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    result = cli("render", str(spec), "-o", str(tmp_path / "out"))
    assert result.code == 0, result.err
    cluster, _ = _cluster(data)
    with SlurmTestbed(tmp_path / "out", tmp_path / "bed") as bed:
        report = bed.start_controller()
        assert report.config_problems() == []
        assert_report_matches(report, cluster, derive_slurm(cluster))
        gres = bed.slurmd_gres("gpu01", gpu_count=11)
    assert gres.ok, gres.output
    counts = {kind: gres.gpu_count(kind) for kind in ("h100", "l40s", "a100")}
    assert counts == {"h100": 8, "l40s": 2, "a100": 1}, gres.output
