"""The rendered GPU health-check Epilog, run by bash with stand-in nvidia-smi and scontrol."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from clustergen.load import load_spec
from clustergen.render import render_all
from clustergen.validate import validate_cluster

from support.ci import require
from support.paths import EXAMPLES


@pytest.fixture(scope="module")
def epilog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    loaded = load_spec(str(EXAMPLES / "ml-training-8node.yaml"))
    cluster, _ = validate_cluster(loaded)
    assert cluster is not None
    path = tmp_path_factory.mktemp("epilog") / "health-epilog.sh"
    path.write_text(render_all(cluster)["slurm/health-epilog.sh"].text)
    path.chmod(0o755)
    return path


def run_epilog(
    epilog: Path, tmp_path: Path, node: str, readings: str, smi_status: int = 0
) -> list[str]:
    """Run the Epilog on `node`; returns the scontrol command lines it issued."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    calls = tmp_path / "scontrol.calls"
    (tmp_path / "readings").write_text(readings)
    stubs = {
        "nvidia-smi": f'cat "{tmp_path}/readings"\nexit {smi_status}\n',
        "scontrol": f'printf "%s\\n" "$*" >> "{calls}"\n',
        "logger": "exit 0\n",
    }
    for name, body in stubs.items():
        (bin_dir / name).write_text("#!/bin/bash\n" + body)
        (bin_dir / name).chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "SLURMD_NODENAME": node}
    proc = subprocess.run(
        ["bash", str(epilog)], env=env, capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 0, proc.stderr
    return calls.read_text().splitlines() if calls.exists() else []


def healthy(count: int = 8, temperature: int = 45) -> str:
    return "".join(f"{i}, 0, {temperature}\n" for i in range(count))


def test_healthy_node_is_left_alone(epilog: Path, tmp_path: Path) -> None:
    assert run_epilog(epilog, tmp_path, "gpu03", healthy()) == []


def test_missing_gpu_drains_with_reason(epilog: Path, tmp_path: Path) -> None:
    calls = run_epilog(epilog, tmp_path, "gpu03", healthy(count=7))
    assert calls == [
        "update NodeName=gpu03 State=DRAIN Reason=clustergen health: found 7 GPUs, expected 8"
    ]


def test_ecc_errors_drain(epilog: Path, tmp_path: Path) -> None:
    readings = healthy().replace("5, 0, 45", "5, 3, 45")
    calls = run_epilog(epilog, tmp_path, "gpu01", readings)
    assert calls == [
        "update NodeName=gpu01 State=DRAIN Reason=clustergen health: "
        "GPU 5 has 3 uncorrected ECC errors"
    ]


def test_hot_gpu_drains_and_never_sets_down(epilog: Path, tmp_path: Path) -> None:
    calls = run_epilog(epilog, tmp_path, "gpu08", healthy(temperature=86))
    assert len(calls) == 1
    assert "GPU 0 is at 86C, above the 85C limit" in calls[0]
    assert "DOWN" not in calls[0]


def test_at_the_limit_is_healthy(epilog: Path, tmp_path: Path) -> None:
    assert run_epilog(epilog, tmp_path, "gpu08", healthy(temperature=85)) == []


def test_unreported_values_are_not_judged(epilog: Path, tmp_path: Path) -> None:
    readings = "".join(f"{i}, [N/A], 40\n" for i in range(8))
    assert run_epilog(epilog, tmp_path, "gpu02", readings) == []


def test_nvidia_smi_failure_drains(epilog: Path, tmp_path: Path) -> None:
    calls = run_epilog(epilog, tmp_path, "gpu02", "NVIDIA-SMI has failed\n", smi_status=9)
    assert calls == [
        "update NodeName=gpu02 State=DRAIN Reason=clustergen health: nvidia-smi failed: "
        "NVIDIA-SMI has failed"
    ]


def test_node_without_gpus_is_skipped(epilog: Path, tmp_path: Path) -> None:
    assert run_epilog(epilog, tmp_path, "slurm-head", "") == []


def test_shellcheck_is_clean(epilog: Path) -> None:
    require("shellcheck")
    proc = subprocess.run(
        ["shellcheck", "--severity=style", str(epilog)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout
    assert os.access(epilog, os.X_OK)
