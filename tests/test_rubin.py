"""Rubin, Vera and Spectrum-X (issue 43): the catalog's entries and their sources, the
software floors that follow from Rubin's architecture, Vera's threads in the Slurm files,
and a Spectrum-X fabric's host QoS, NCCL class and checks. The example's whole render is
in its golden tree; its Slurm files meet the real daemons in tests/test_real_slurm*.py."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from clustergen.catalog.cuda import MIN_DRIVER, minimum_driver
from clustergen.catalog.gpus import GPU_MODELS, RUBIN, gpu_model, profile_cpu_arch
from clustergen.catalog.nvidia_packages import fabric_manager_pins, imex_pins
from clustergen.catalog.switches import SWITCH_MODELS, switch_radix
from clustergen.model.software import Software
from clustergen.render import render_all
from clustergen.resolve import ResolvedCluster
from clustergen.spec.load import LoadedSpec
from clustergen.validate import validate_cluster

from support.paths import EXAMPLES, REPO

Data = dict[str, Any]
EXAMPLE = EXAMPLES / "vera-rubin-nvl72-spectrumx.yaml"
VERA_RUBIN: Data = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
EDGE: Data = yaml.safe_load((EXAMPLES / "edge-roce-2node.yaml").read_text(encoding="utf-8"))


def _validate(data: Data) -> tuple[ResolvedCluster | None, list[str]]:
    loaded = LoadedSpec(file="spec.yaml", name="spec.yaml", data=data)
    cluster, problems = validate_cluster(loaded)
    return cluster, [p.format() for p in problems]


def _codes(data: Data) -> list[str]:
    return [line.rsplit("[", 1)[1].rstrip("]") for line in _validate(data)[1]]


def _vera_rubin() -> Data:
    return copy.deepcopy(VERA_RUBIN)


# --- the catalog ---------------------------------------------------------------------------


def test_every_gpu_model_names_its_source() -> None:
    """A catalog entry without a document cannot land: each model says where its memory,
    power and host CPU come from, and a Rubin model says what is unpublished."""
    for model in GPU_MODELS.values():
        assert model.source.startswith("NVIDIA "), model
    for name in ("vr200-288gb", "rubin-hgx-288gb"):
        model = GPU_MODELS[name]
        assert "developer.nvidia.com/blog/" in model.source
        assert "unpublished" in model.source
        assert model.board_watts is None and model.pci_ids == ()


def test_rubin_is_sm_107_from_cuda_13_4_with_r615_and_nccl_2_32_3() -> None:
    assert (RUBIN.compute_capability, RUBIN.sm) == ("10.7", "sm_107")
    assert (RUBIN.first_cuda, RUBIN.production_cuda, RUBIN.first_nccl) == (
        (13, 4),
        (13, 5),
        (2, 32, 3),
    )
    # A branch, not a full version: any 615 driver meets CUDA 13.4, any 620 driver 13.5.
    assert MIN_DRIVER[(13, 4)] == (615,) and MIN_DRIVER[(13, 5)] == (620,)
    assert minimum_driver((13, 5, 0)) == ((620,), "CUDA 13.5 GA")


@pytest.mark.parametrize(
    ("written", "model", "gres", "arch"),
    [
        ("vr200", "vr200-288gb", "vr200", "aarch64"),
        ("Vera Rubin", "vr200-288gb", "vr200", "aarch64"),
        ("NVIDIA VR200", "vr200-288gb", "vr200", "aarch64"),
        ("rubin", "rubin-hgx-288gb", "rubin", "x86_64"),
        ("HGX Rubin", "rubin-hgx-288gb", "rubin", "x86_64"),
    ],
)
def test_the_names_people_write_find_one_model(
    written: str, model: str, gres: str, arch: str
) -> None:
    found = gpu_model(written)
    assert found is not None and found.name == model and found.gres_type == gres
    data = _vera_rubin()
    profile = data["hardware"]["vr-tray"]
    profile["gpu"]["model"] = written
    cluster, _ = _validate(data)
    assert cluster is not None
    assert profile_cpu_arch(cluster.spec.hardware["vr-tray"]) == arch


def test_the_spectrum_6_switch_has_its_ports_and_no_height() -> None:
    sn6810 = SWITCH_MODELS["sn6810"]
    assert sn6810.rack_units is None and sn6810.max_watts is None
    assert "sonic-buildimage" in sn6810.source and "sn6810" in sn6810.source
    assert [switch_radix("SN6810-LD", rate) for rate in ("800g", "400g", "200g", "ndr")] == [
        128,
        256,
        512,
        None,
    ]


# --- the example --------------------------------------------------------------------------


def test_the_example_validates_with_no_warning_and_installs_doca() -> None:
    cluster, problems = _validate(_vera_rubin())
    assert cluster is not None and problems == []
    assert cluster.pins.by_concern["doca"] == {"doca-ofed": "3.2.1-*"}


def test_vera_threads_and_its_sockets_reach_the_slurm_files() -> None:
    cluster, _ = _validate(_vera_rubin())
    assert cluster is not None
    tree = render_all(cluster)
    slurm_conf = tree["slurm/slurm.conf"].text
    node = next(line for line in slurm_conf.splitlines() if line.startswith("NodeName=vr["))
    for setting in ("CPUs=352", "SocketsPerBoard=2", "CoresPerSocket=88", "ThreadsPerCore=2"):
        assert f" {setting} " in node, node
    assert "Gres=gpu:vr200:4" in node
    gres = [line for line in tree["slurm/gres.conf"].text.splitlines() if " Name=gpu " in line]
    # Each superchip's two Rubin GPUs beside its own Vera's 88 cores.
    assert [line.rsplit(" Cores=", 1)[1] for line in gres] == ["0-87", "0-87", "88-175", "88-175"]


def test_the_nvlink_job_is_judged_against_nvlink_6() -> None:
    cluster, _ = _validate(_vera_rubin())
    assert cluster is not None
    job = render_all(cluster)["acceptance/gpu/nvlink-allreduce-vr1.sbatch"].text
    # 3.6 TB/s a GPU both ways: 1,800 GB/s each way, x the default fraction 0.75.
    assert "BUSBW_THRESHOLD_GBYTES=${BUSBW_THRESHOLD_GBYTES:-1350.0}" in job
    assert "NVLink 6: 3.6 TB/s per GPU" in job


# --- software floors ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cuda", "driver", "nccl", "codes"),
    [
        # CUDA 13.0 cannot target sm_107, and R580 predates Rubin (CUDA 13.4's R615).
        (
            "13.0.2",
            "580.95.05",
            "2.32.6",
            ["software.cuda-too-old-for-gpu", "software.driver-too-old-for-gpu"],
        ),
        # 13.4 is a preview for Rubin; R615 meets it.
        ("13.4.1", "615.71.09", "2.32.6", ["software.cuda-preview-for-gpu"]),
        # CUDA 13.5 needs R620: R615 is below its branch.
        ("13.5.0", "615.71.09", "2.32.6", ["software.driver-below-cuda-minimum"]),
        # NCCL before 2.32.3 knows no sm_107.
        ("13.5.0", "620.70.10", "2.30.7", ["software.nccl-too-old-for-gpu"]),
        ("13.5.0", "620.70.10", "2.32.3", []),
    ],
)
def test_rubin_asks_for_its_cuda_driver_and_nccl(
    cuda: str, driver: str, nccl: str, codes: list[str]
) -> None:
    data = _vera_rubin()
    data["software"].update(cuda=cuda, nvidia_driver=driver, nccl=nccl)
    assert sorted(_codes(data)) == sorted(codes)


def test_a_branch_row_is_said_as_a_branch() -> None:
    data = _vera_rubin()
    data["software"]["nvidia_driver"] = "615.71.09"
    message = next(line for line in _validate(data)[1] if "driver-below-cuda-minimum" in line)
    assert "older than branch 620, the minimum for CUDA 13.5.0" in message, message


def test_an_unpublished_board_power_weighs_nothing() -> None:
    """hardware.max-watts-below-gpus weighs the GPUs it knows: a Rubin profile's 1 W is not
    refused for GPUs whose power NVIDIA has not published, and a B200 beside is still
    weighed."""
    data = _vera_rubin()
    data["hardware"]["vr-tray"]["power"] = {"max_watts": 1}
    assert "hardware.max-watts-below-gpus" not in _codes(data)
    data["hardware"]["vr-tray"]["other_gpus"] = [{"model": "b200", "count": 1}]
    assert "hardware.max-watts-below-gpus" in _codes(data)


# --- Spectrum-X ---------------------------------------------------------------------------


def _spectrum_x_edge(**roce: Any) -> Data:
    """The edge spec's RoCE lab as Spectrum-X, with DOCA-OFED (mlnx_qos), its GPU nodes'
    one addressed port the only compute HCA."""
    data = copy.deepcopy(EDGE)
    data["hardware"]["l40s-4gpu"]["fabric_hcas"] = ["mlx5_0"]
    fabric = data["network"]["fabric"]
    fabric["type"] = "spectrum-x"
    fabric.pop("roce")
    if roce:
        fabric["roce"] = roce
    data["software"]["rdma"] = {"stack": "doca-ofed", "version": "3.2.1", "repository": "doca"}
    data["software"]["repositories"] = [
        {
            "name": "doca",
            "url": "https://repo.example.org/doca/3.2.1/ubuntu24.04/",
            "key_url": "https://repo.example.org/doca/3.2.1/ubuntu24.04/GPG-KEY-Mellanox.pub",
        }
    ]
    return data


def _qos(data: Data) -> str:
    cluster, problems = _validate(data)
    assert cluster is not None, problems
    return render_all(cluster)["host_network/roce-qos/l40s-4gpu.sh"].text


def _nccl(data: Data) -> str:
    cluster, problems = _validate(data)
    assert cluster is not None, problems
    return render_all(cluster)["nccl/l40s-4gpu/nccl.conf"].text


def test_spectrum_x_makes_priority_3_lossless_by_default() -> None:
    data = _spectrum_x_edge()
    assert "NCCL_IB_TC=106" in _nccl(data)
    qos = _qos(data)
    assert "mlnx_qos -i ens1f0np0 --trust dscp --pfc 0,0,0,1,0,0,0,0" in qos
    assert "echo 1 > /sys/class/net/ens1f0np0/ecn/roce_np/enable/3" in qos
    assert "cma_roce_tos -d mlx5_0 -t 106" in qos
    # RoCE without a class still asks for one; Spectrum-X does not.
    assert "nccl.roce-settings-missing" not in _codes(data)
    plain = _spectrum_x_edge()
    plain["network"]["fabric"]["type"] = "roce"
    assert "nccl.roce-settings-missing" in _codes(plain)


def test_a_class_off_priority_3_is_warned_and_another_on_it_is_not() -> None:
    assert "network.spectrum-x-priority" not in _codes(_spectrum_x_edge(traffic_class=98))
    data = _spectrum_x_edge(traffic_class=40)  # DSCP 10: priority 1
    message = next(line for line in _validate(data)[1] if "spectrum-x-priority" in line)
    assert "network.fabric.roce.traffic_class" in message
    assert "DSCP 10, priority 1" in message
    assert "--pfc 0,1,0,0,0,0,0,0" in _qos(data)  # the host still follows the spec


@pytest.mark.parametrize(
    ("model", "warned"),
    [("sn5600", False), ("SN6810", False), ("sn4700", True), ("7060dx5-64s", True), (None, False)],
)
def test_a_switch_that_is_not_spectrum_4_or_later_is_warned(
    model: str | None, warned: bool
) -> None:
    data = _spectrum_x_edge()
    switch = data["network"]["fabric"]["switches"][0]
    if model is not None:
        switch["model"] = model
    assert ("network.spectrum-x-switch" in _codes(data)) == warned


def test_spectrum_x_without_doca_is_told_its_class_is_not_lossless() -> None:
    data = _spectrum_x_edge()
    del data["software"]["rdma"]
    line = next(line for line in _validate(data)[1] if "roce-qos-without-mlnx-qos" in line)
    assert ": network.fabric.type: warning: traffic class 106 on RoCE" in line, line


@pytest.mark.parametrize(
    ("key", "value", "code"),
    [
        ("rate", "ndr", "network.fabric-rate"),
        ("subnet_manager", {"kind": "ufm"}, "network.subnet-manager-on-roce"),
    ],
)
def test_spectrum_x_is_ethernet(key: str, value: Any, code: str) -> None:
    data = _spectrum_x_edge()
    data["network"]["fabric"][key] = value
    assert code in _codes(data)


def test_spectrum_x_is_documented_and_in_the_schema() -> None:
    schema = (REPO / "schemas" / "clustergen.schema.json").read_text(encoding="utf-8")
    assert '"spectrum-x"' in schema
    fabric_doc = (REPO / "docs" / "fabric.md").read_text(encoding="utf-8")
    assert "\n## Spectrum-X Ethernet\n" in fabric_doc
    platforms = (REPO / "docs" / "platforms.md").read_text(encoding="utf-8")
    assert "\n### Rubin: what is published, and what is not\n" in platforms


@pytest.mark.parametrize(
    ("driver", "suffix"), [("570.133.20", "-570"), ("580.95.05", ""), ("620.70.10", "")]
)
def test_the_drivers_companions_lose_the_branch_from_580_on_apt(driver: str, suffix: str) -> None:
    """NVIDIA's driver container installs nvidia-fabricmanager, nvidia-imex, libnvidia-nscq
    and libnvsdm by their bare names from branch 580 (catalog/nvidia_packages.py): a
    suffixed pin there names no package. dnf's names never carried the branch."""
    software = Software.model_validate(
        {
            "os": "ubuntu-24.04",
            "nvidia_driver": driver,
            "fabric_manager": driver,
            "nvlsm": "2025.06.6",
            "cuda": "12.8.1",
            "nccl": "2.26.2",
            "dcgm": "4.1.1",
            "slurm": "25.11.2",
        }
    )
    version = f"{driver}-1"
    assert fabric_manager_pins("apt", software) == {
        f"nvidia-fabricmanager{suffix}": version,
        "nvlsm": "2025.06.6-1",
        f"libnvidia-nscq{suffix}": version,
        f"libnvsdm{suffix}": version,
    }
    assert imex_pins("apt", software) == {f"nvidia-imex{suffix}": version}
    assert imex_pins("dnf", software) == {"nvidia-imex": f"3:{version}"}
