"""Blackwell and Grace (issue 24): the GPU catalog's new models, the names people write for
them, and arm64 (sbsa) nodes beside x86_64 ones, each with its own repositories."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from clustergen.render import render_all
from clustergen.resolve import ResolvedCluster
from clustergen.spec.load import LoadedSpec
from clustergen.validate import validate_cluster

from support.ci import require, tool
from support.paths import DATA

Data = dict[str, Any]
MIXED: Data = yaml.safe_load((DATA / "grace-mixed.yaml").read_text())
CUDA_REPOS = "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404"


def _validate(data: Data) -> tuple[ResolvedCluster | None, list[str]]:
    """The problems, less nccl.tests-not-built: it is true of every Ubuntu spec here (the
    catalog knows no Ubuntu Open MPI to build nccl-tests with) and is
    tests/test_test_tools.py's to check."""
    cluster, problems = validate_cluster(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))
    return cluster, [p.format() for p in problems if p.code.name != "nccl.tests-not-built"]


def _codes(data: Data) -> list[str]:
    return [line.rsplit("[", 1)[1].rstrip("]") for line in _validate(data)[1]]


def _mixed() -> Data:
    return copy.deepcopy(MIXED)


def test_the_mixed_cluster_validates_clean() -> None:
    cluster, problems = _validate(_mixed())
    assert cluster is not None and problems == []


def test_the_trays_get_sbsa_repositories_and_the_head_node_x86_64(tmp_path: Path) -> None:
    cluster, _ = _validate(_mixed())
    assert cluster is not None
    files = {path: a.text for path, a in render_all(cluster).items()}
    aarch64 = yaml.safe_load(files["inventory/group_vars/arch_aarch64.yml"])
    x86_64 = yaml.safe_load(files["inventory/group_vars/arch_x86_64.yml"])
    assert aarch64["clustergen_cpu_arch"] == "aarch64"
    assert [(r["name"], r["url"], r["key_url"]) for r in aarch64["repositories_list"]] == [
        ("cuda", f"{CUDA_REPOS}/sbsa/", f"{CUDA_REPOS}/sbsa/3bf863cc.pub"),
        ("doca-sbsa", MIXED["software"]["repositories"][2]["url"], _key("doca-sbsa")),
        ("slurm", "https://repo.grace.example.org/slurm/", _key("slurm")),
    ]
    assert [(r["name"], r["url"]) for r in x86_64["repositories_list"]] == [
        ("cuda", f"{CUDA_REPOS}/x86_64/"),
        ("doca", MIXED["software"]["repositories"][1]["url"]),
        ("slurm", "https://repo.grace.example.org/slurm/"),
    ]
    lock = yaml.safe_load(files["versions.lock"])
    assert lock["architectures"] == {"x86_64": "head1", "aarch64": "gb[1-4]"}
    # The GRES type of the common name's model, on the trays' node line.
    assert "Gres=gpu:gb200:4" in files["slurm/slurm.conf"]
    # Ansible itself resolves each host's variables: the arch group's list wins over all.yml's.
    inventory = tmp_path / "inventory"
    for path, text in files.items():
        if path.startswith("inventory/"):
            (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / path).write_text(text)
    hostvars = _host_vars(inventory)
    for host, arch, cuda in (("gb3", "aarch64", "sbsa"), ("head1", "x86_64", "x86_64")):
        shown = hostvars[host]
        assert shown["clustergen_cpu_arch"] == arch
        assert shown["repositories_list"][0]["url"] == f"{CUDA_REPOS}/{cuda}/"


def _key(name: str) -> str:
    return next(r["key_url"] for r in MIXED["software"]["repositories"] if r["name"] == name)


def _host_vars(inventory: Path) -> Data:
    """Every host's variables as Ansible merges them (group_vars precedence included)."""
    require("ansible-inventory")
    command = tool("ansible-inventory")
    assert command is not None
    shown = subprocess.run(
        [command, "-i", str(inventory), "--list"],
        capture_output=True,
        text=True,
        check=True,
    )
    result: Data = json.loads(shown.stdout)["_meta"]["hostvars"]
    return result


def test_an_all_x86_64_cluster_gets_no_architecture_groups() -> None:
    data = _mixed()
    data["hardware"]["gb200-tray"]["gpu"]["model"] = "b200"
    del data["hardware"]["gb200-tray"]["gpu"]["nvlink_domain"]
    cluster, problems = _validate(data)
    assert cluster is not None
    assert not any(g.name.startswith("arch_") for g in cluster.groups)
    # ... and says that doca-sbsa now serves no node.
    assert [p for p in problems if "repository-architecture" in p] == [
        "spec.yaml:1:1: software.repositories[2].architectures: warning: repository "
        "'doca-sbsa' is for aarch64, but no node is (the hardware profiles' cpu.arch) "
        "[software.repository-architecture]"
    ]


def test_a_one_architecture_repository_for_every_node_is_a_warning() -> None:
    """A site's mirror whose path names one architecture, given to every node, is warned;
    NVIDIA's own DOCA (and CUDA) repository is not: each architecture gets its build
    (tests/test_rdma.py)."""
    data = _mixed()
    doca = data["software"]["repositories"][1]
    del doca["architectures"]
    assert _codes(data) == []
    doca["url"] = "https://mirror.hpc.example.org/doca/2.9.1/ubuntu24.04/x86_64/"
    assert _codes(data) == ["software.repository-architecture"]


@pytest.mark.parametrize(
    ("written", "message"),
    [
        ("gb-200", "unknown GPU model 'gb-200' (did you mean 'gb200'?)"),
        ("b300-sxm-288", "unknown GPU model 'b300-sxm-288' (did you mean 'b300-sxm-288gb'?)"),
        ("gh200", "GPU model 'gh200' could be any of gh200-96gb, gh200-144gb"),
    ],
)
def test_a_near_miss_gets_a_suggestion(written: str, message: str) -> None:
    data = _mixed()
    data["hardware"]["gb200-tray"]["gpu"]["model"] = written
    problems = [p for p in _validate(data)[1] if "unknown-gpu-model" in p]
    assert len(problems) == 1 and message in problems[0], problems


def test_grace_gpus_make_the_node_aarch64_and_x86_64_beside_them_is_refused() -> None:
    data = _mixed()
    data["hardware"]["gb200-tray"]["cpu"]["arch"] = "x86_64"
    # (Taken at its word, no node is aarch64 then, so doca-sbsa serves none.)
    assert _codes(data) == ["hardware.cpu-arch-mismatch", "software.repository-architecture"]
    # A profile may say aarch64 on its own (an Arm head node): then no node is x86_64.
    data["hardware"]["gb200-tray"]["cpu"]["arch"] = "aarch64"
    data["hardware"]["head"]["cpu"]["arch"] = "aarch64"
    cluster, problems = _validate(data)
    assert cluster is not None
    assert [p.split(": ")[1] for p in problems] == ["software.repositories[1].architectures"]
    arch_groups = [g.name for g in cluster.groups if g.name.startswith("arch_")]
    assert [name for name in arch_groups if cluster.members.get(name)] == ["arch_aarch64"]


def test_cuda_and_driver_minimums_follow_from_the_architecture() -> None:
    data = _mixed()
    data["hardware"]["gb200-tray"]["gpu"]["model"] = "gb300"  # Blackwell Ultra, sm_103
    # CUDA 12.8 targets sm_100, not sm_103; and driver 570 predates 575.51.03, CUDA 12.9's.
    assert _codes(data) == ["software.cuda-too-old-for-gpu", "software.driver-too-old-for-gpu"]
    data["software"]["cuda"] = "12.9.1"
    assert _codes(data) == ["software.driver-below-cuda-minimum"]  # 12.9 needs 575.51.03
    data["software"]["nvidia_driver"] = "575.57.08"
    assert _codes(data) == []
    # A CUDA the driver table lacks checks no driver; the GPU's own minimum still holds.
    data["software"]["cuda"] = "13.1.0"
    data["software"]["nvidia_driver"] = "560.35.05"
    assert sorted(_codes(data)) == [
        "software.cuda-not-in-driver-table",
        "software.driver-too-old-for-gpu",
    ]


def _gres(data: Data) -> list[str]:
    cluster, _ = _validate(data)
    assert cluster is not None
    text = render_all(cluster)["slurm/gres.conf"].text
    return [line.split(" Name=gpu ")[1] for line in text.splitlines() if " Name=gpu " in line]


def test_each_grace_gpu_is_bound_to_its_own_superchips_cpu() -> None:
    # GB200 tray: GPUs 0-1 with the first Grace CPU, 2-3 with the second (whole sockets).
    assert _gres(_mixed()) == [
        "Type=gb200 File=/dev/nvidia0 Cores=0-71",
        "Type=gb200 File=/dev/nvidia1 Cores=0-71",
        "Type=gb200 File=/dev/nvidia2 Cores=72-143",
        "Type=gb200 File=/dev/nvidia3 Cores=72-143",
    ]
    # A GH200 node: one Grace CPU, one GPU.
    data = _mixed()
    data["hardware"]["gb200-tray"]["gpu"] = {"model": "gh200-144gb", "count": 1}
    data["hardware"]["gb200-tray"]["cpu"]["sockets"] = 1
    assert _gres(data) == ["Type=gh200 File=/dev/nvidia0 Cores=0-71"]
    # GPUs that do not split evenly over the sockets: no superchip to follow, no Cores=.
    data["hardware"]["gb200-tray"]["cpu"]["sockets"] = 2
    data["hardware"]["gb200-tray"]["gpu"]["count"] = 3
    assert _gres(data) == ["Type=gh200 File=/dev/nvidia[0-2]"]


def test_the_topology_table_overrides_the_superchips_and_x86_gpus_get_none() -> None:
    data = _mixed()
    data["hardware"]["gb200-tray"]["topology"] = {
        "hcas": [{"name": "mlx5_0", "numa_node": 0, "role": "compute"}],
        "gpus": [{"index": i, "numa_node": 0, "cores": "0-35", "hca": "mlx5_0"} for i in range(4)],
    }
    # All four on the first Grace, as the table says (the superchips would put GPUs 2-3 on
    # the second), and each as its whole socket: Slurm binds GPUs to sockets (gres.conf(5)).
    assert {line.split(" Cores=")[1] for line in _gres(data)} == {"0-71"}
    data = _mixed()
    data["hardware"]["gb200-tray"]["gpu"] = {"model": "b200", "count": 4}
    assert _gres(data) == ["Type=b200 File=/dev/nvidia[0-3]"]


def test_without_a_table_a_grace_profile_loses_only_the_rails() -> None:
    data = _mixed()
    data["nccl"] = {"debug": "WARN"}
    problems = [p for p in _validate(data)[1] if "topology-missing" in p]
    assert len(problems) == 1 and "gres.conf" not in problems[0], problems
    assert "NCCL_IB_HCA and the ib-rails job" in problems[0]


def _with_switch_trays(data: Data) -> Data:
    """gb[1-4] with the 2 NVLink switch trays their domain calls for, at U 5-6."""
    data["racks"][0]["devices"] += [
        {
            "u": u,
            "name": f"nvsw{u - 4}",
            "height_u": 1,
            "max_watts": 1500,
            "nvlink_switch_tray": True,
        }
        for u in (5, 6)
    ]
    return data


def test_the_rack_sheet_counts_compute_and_switch_trays() -> None:
    cluster, problems = _validate(_with_switch_trays(_mixed()))
    assert cluster is not None and problems == []
    files = {path: a.text for path, a in render_all(cluster).items()}
    rows = [line.split(",") for line in files["facility/racks.csv"].splitlines()]
    assert [r[3:5] for r in rows if r[1] in ("4", "5", "6")] == [
        ["gb4", "compute"],
        ["nvsw1", "nvlink-switch"],
        ["nvsw2", "nvlink-switch"],
    ]
    racks_md = files["facility/racks.md"]
    # 4 compute trays (no power in their profile) and 2 switch trays of 1500 W; the domain
    # (2 switch trays per 4 compute trays) wants 2.
    assert "| nvl1 | 4 | 4 |  | 2 | 2 | 3000 | 2 |" in racks_md
    assert "| nvl1 | 48 | 7 | 41 | 3000 | 3000 |" in racks_md  # the rack's totals
    assert "nvlink-switch" in files["facility/racks/nvl1.svg"]
    # Without the switch trays the sheet says what the domain wants and none is there.
    cluster, _ = _validate(_mixed())
    assert cluster is not None
    assert "| nvl1 | 4 | 4 |  | 0 | 0 |  | 2 |" in render_all(cluster)["facility/racks.md"].text


def test_a_node_is_no_switch_tray() -> None:
    data = _mixed()
    data["racks"][0]["devices"][0]["nvlink_switch_tray"] = True
    problems = _validate(data)[1]
    assert len(problems) == 1 and "is a node, not an NVLink switch tray" in problems[0]


def test_an_nccl_before_2_25_2_warns_only_where_trays_of_a_domain_are() -> None:
    data = _mixed()
    data["software"]["nccl"] = "2.25.1"
    assert _codes(data) == ["nccl.too-old-for-mnnvl"]
    data["software"]["nccl"] = "2.25.2"  # the first NVIDIA supports GB200 MNNVL with
    assert _codes(data) == []
    data["software"]["nccl"] = "2.25.1"
    del data["hardware"]["gb200-tray"]["gpu"]["nvlink_domain"]  # GB200 trays, no domain given
    assert _codes(data) == []


def test_a_rack_short_of_the_switch_trays_it_lists_warns() -> None:
    data = _with_switch_trays(_mixed())
    assert _codes(data) == []
    del data["racks"][0]["devices"][-1]  # one of the two switch trays
    assert _codes(data) == ["racks.nvlink-switch-trays-short"]
    del data["racks"][0]["devices"][-1]  # none listed: shown on the sheet, not warned
    assert _codes(data) == []
