"""The rendered GPU health-check Epilog, run by bash with stand-in commands.

nvidia-smi, journalctl, systemctl, scontrol and logger are stubs on PATH; `timeout`
is the real one from coreutils. Each check is run passing and failing.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from clustergen.load import load_spec
from clustergen.outputs.slurm.derive import EPILOG_TIMEOUTS, SLURM_DEFAULTS
from clustergen.render import render_all
from clustergen.validate import validate_cluster

from support.ci import require
from support.paths import EXAMPLES

JOB_START = "1795000000"
XID_79 = "NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"


def render_epilog(spec_path: Path) -> str:
    loaded = load_spec(str(spec_path))
    cluster, _ = validate_cluster(loaded)
    assert cluster is not None
    return render_all(cluster)["slurm/health-epilog.sh"].text


@pytest.fixture(scope="module")
def epilog_text() -> str:
    return render_epilog(EXAMPLES / "ml-training-8node.yaml")


def healthy(count: int = 8, temperature: int = 45) -> str:
    return "".join(f"{i}, 0, {temperature}\n" for i in range(count))


def remaps(count: int = 8, pending: str = "0", failure: str = "0") -> str:
    return "".join(f"00000000:{i + 10:02X}:00.0, {pending}, {failure}\n" for i in range(count))


@dataclass
class Node:
    """What the stand-in commands report."""

    readings: str = field(default_factory=healthy)
    smi_status: int = 0
    smi_hangs: bool = False
    remaps: str = field(default_factory=remaps)
    remap_status: int = 0
    kernel_log: str = "NVRM: loading NVIDIA UNIX x86_64 Kernel Module\n"
    fabric_manager_active: bool = True


@dataclass
class Run:
    drains: list[str]
    logged: list[str]
    journalctl_args: list[str]
    systemctl_args: list[str]
    seconds: float


def run_epilog(
    text: str,
    tmp_path: Path,
    node: str,
    state: Node,
    *,
    job_start: str | None = JOB_START,
    smi_timeout_s: int | None = None,
) -> Run:
    """Run the Epilog as slurmd would on `node`, with stand-ins answering as `state` says."""
    stamp = tmp_path / "epilog.last"
    assert "readonly STAMP=/run/clustergen-epilog.last\n" in text
    text = text.replace("STAMP=/run/clustergen-epilog.last", f"STAMP={stamp}")
    if smi_timeout_s is not None:
        line = f"readonly SMI_TIMEOUT_S={EPILOG_TIMEOUTS.smi_s}\n"
        assert line in text
        text = text.replace(line, f"readonly SMI_TIMEOUT_S={smi_timeout_s}\n")
        text = text.replace(
            f"readonly KILL_AFTER_S={EPILOG_TIMEOUTS.kill_after_s}\n", "readonly KILL_AFTER_S=1\n"
        )
    script = tmp_path / "health-epilog.sh"
    script.write_text(text)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    files = {
        "readings": state.readings,
        "remaps": state.remaps,
        "kernel.log": state.kernel_log,
    }
    for name, content in files.items():
        (tmp_path / name).write_text(content)
    hang = "exec sleep 60\n" if state.smi_hangs else ""
    stubs = {
        "nvidia-smi": hang
        + 'case "$*" in\n'
        + f'  *--query-remapped-rows*) cat "{tmp_path}/remaps"; exit {state.remap_status} ;;\n'
        + f'  *) cat "{tmp_path}/readings"; exit {state.smi_status} ;;\n'
        + "esac\n",
        "journalctl": f'printf "%s\\n" "$*" >> "{tmp_path}/journalctl.calls"\n'
        + f'cat "{tmp_path}/kernel.log"\n',
        "systemctl": f'printf "%s\\n" "$*" >> "{tmp_path}/systemctl.calls"\n'
        + f"exit {0 if state.fabric_manager_active else 3}\n",
        "scontrol": f'printf "%s\\n" "$*" >> "{tmp_path}/scontrol.calls"\n',
        "logger": f'printf "%s\\n" "$*" >> "{tmp_path}/logger.calls"\n',
    }
    for name, body in stubs.items():
        (bin_dir / name).write_text("#!/bin/bash\n" + body)
        (bin_dir / name).chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "SLURMD_NODENAME": node}
    if job_start is not None:
        env["SLURM_JOB_START_TIME"] = job_start
    started = time.monotonic()
    proc = subprocess.run(
        ["bash", str(script)], env=env, capture_output=True, text=True, timeout=60
    )
    seconds = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""

    def lines(name: str) -> list[str]:
        path = tmp_path / name
        return path.read_text().splitlines() if path.exists() else []

    return Run(
        lines("scontrol.calls"),
        lines("logger.calls"),
        lines("journalctl.calls"),
        lines("systemctl.calls"),
        seconds,
    )


def drain(node: str, *reasons: str) -> list[str]:
    return [f"update NodeName={node} State=DRAIN Reason=clustergen health: {'; '.join(reasons)}"]


def test_healthy_node_is_left_alone(epilog_text: str, tmp_path: Path) -> None:
    run = run_epilog(epilog_text, tmp_path, "gpu03", Node())
    assert run.drains == []
    assert run.logged == []
    # The kernel log is read from the job's start; the fabric manager is asked.
    assert run.journalctl_args == [f"-k -q -o cat --no-pager --since @{JOB_START}"]
    assert run.systemctl_args == ["is-active --quiet nvidia-fabricmanager"]


def test_missing_gpu_drains_with_reason(epilog_text: str, tmp_path: Path) -> None:
    run = run_epilog(epilog_text, tmp_path, "gpu03", Node(readings=healthy(count=7)))
    assert run.drains == drain("gpu03", "found 7 GPUs, expected 8")


def test_uncorrectable_aggregate_ecc_drains(epilog_text: str, tmp_path: Path) -> None:
    assert "ecc.errors.uncorrected.aggregate.total" in epilog_text
    assert "volatile" not in epilog_text
    readings = healthy().replace("5, 0, 45", "5, 3, 45")
    run = run_epilog(epilog_text, tmp_path, "gpu01", Node(readings=readings))
    assert run.drains == drain("gpu01", "GPU 5 has 3 uncorrectable ECC errors")


def test_unreported_values_are_not_judged(epilog_text: str, tmp_path: Path) -> None:
    readings = "".join(f"{i}, [N/A], [N/A]\n" for i in range(8))
    assert run_epilog(epilog_text, tmp_path, "gpu02", Node(readings=readings)).drains == []


def test_pending_row_remap_drains(epilog_text: str, tmp_path: Path) -> None:
    state = Node(remaps=remaps(count=1) + remaps(count=1, pending="1").replace(":0A:", ":1B:"))
    run = run_epilog(epilog_text, tmp_path, "gpu04", state)
    assert run.drains == drain(
        "gpu04", "GPU 00000000:1B:00.0 has a pending row remap (needs a GPU reset)"
    )


def test_failed_row_remap_drains(epilog_text: str, tmp_path: Path) -> None:
    run = run_epilog(epilog_text, tmp_path, "gpu04", Node(remaps=remaps(count=1, failure="Yes")))
    assert run.drains == drain("gpu04", "GPU 00000000:0A:00.0 has a failed row remap")


def test_gpus_without_row_remapping_pass(epilog_text: str, tmp_path: Path) -> None:
    state = Node(remaps='Field "remapped_rows.pending" is not supported.\n', remap_status=2)
    assert run_epilog(epilog_text, tmp_path, "gpu04", state).drains == []


def test_failed_row_remap_query_drains(epilog_text: str, tmp_path: Path) -> None:
    state = Node(remaps="Unable to determine the device handle\n", remap_status=15)
    run = run_epilog(epilog_text, tmp_path, "gpu04", state)
    assert run.drains == drain(
        "gpu04", "nvidia-smi row remap query failed: Unable to determine the device handle"
    )


@pytest.mark.parametrize("xid", ["48", "79", "94", "95"])
def test_recent_xid_drains(epilog_text: str, tmp_path: Path, xid: str) -> None:
    log = "NVRM: loading\n" + XID_79.replace("): 79,", f"): {xid},")
    run = run_epilog(epilog_text, tmp_path, "gpu05", Node(kernel_log=log))
    assert run.drains == drain("gpu05", f"Xid {xid} on PCI:0000:18:00")


def test_other_xids_pass(epilog_text: str, tmp_path: Path) -> None:
    # Xid 13 and 31 are application errors (bad kernel, page fault): the job's fault.
    log = XID_79.replace("): 79,", "): 13,") + XID_79.replace("): 79,", "): 31,")
    assert run_epilog(epilog_text, tmp_path, "gpu05", Node(kernel_log=log)).drains == []


def test_without_job_start_xids_are_read_since_the_last_run(
    epilog_text: str, tmp_path: Path
) -> None:
    first = run_epilog(epilog_text, tmp_path, "gpu05", Node(), job_start=None)
    assert first.journalctl_args == ["-k -q -o cat --no-pager -b"]
    stamp = (tmp_path / "epilog.last").read_text().strip()
    assert stamp.isdigit()
    (tmp_path / "journalctl.calls").unlink()
    second = run_epilog(epilog_text, tmp_path, "gpu05", Node(), job_start=None)
    assert second.journalctl_args == [f"-k -q -o cat --no-pager --since @{stamp}"]


def test_stopped_fabric_manager_drains_an_nvswitch_node(epilog_text: str, tmp_path: Path) -> None:
    run = run_epilog(epilog_text, tmp_path, "gpu06", Node(fabric_manager_active=False))
    assert run.drains == drain("gpu06", "nvidia-fabricmanager is not active")


def test_fabric_manager_is_not_asked_without_nvswitch(tmp_path: Path) -> None:
    spec = tmp_path / "edge-roce-2node.yaml"
    text = (EXAMPLES / "edge-roce-2node.yaml").read_text()
    spec.write_text(
        text.replace(
            "  controllers: [lab-head]\n",
            "  controllers: [lab-head]\n  health_check: {epilog: true}\n",
        )
    )
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    state = Node(readings=healthy(count=4), remaps=remaps(count=4), fabric_manager_active=False)
    run = run_epilog(render_epilog(spec), run_dir, "lab2", state)
    assert run.drains == []
    assert run.systemctl_args == []


def test_hot_gpu_is_logged_never_drained(epilog_text: str, tmp_path: Path) -> None:
    readings = "0, 0, 86\n1, 0, 86\n2, 0, 85\n" + "".join(f"{i}, 0, 45\n" for i in range(3, 8))
    run = run_epilog(epilog_text, tmp_path, "gpu08", Node(readings=readings))
    assert run.drains == []
    assert len(run.logged) == 1
    assert "above 85C at job end (not drained): GPU 0 at 86C GPU 1 at 86C" in run.logged[0]


def test_nvidia_smi_failure_drains(epilog_text: str, tmp_path: Path) -> None:
    state = Node(readings="NVIDIA-SMI has failed\n", smi_status=9)
    run = run_epilog(epilog_text, tmp_path, "gpu02", state)
    assert run.drains == drain("gpu02", "nvidia-smi failed: NVIDIA-SMI has failed")


def test_hanging_nvidia_smi_is_cut_off(epilog_text: str, tmp_path: Path) -> None:
    run = run_epilog(epilog_text, tmp_path, "gpu02", Node(smi_hangs=True), smi_timeout_s=1)
    assert run.drains == drain("gpu02", "nvidia-smi did not answer within 1s")
    assert run.seconds < 10  # the stand-in sleeps 60 s


def test_several_problems_in_one_drain_never_down(epilog_text: str, tmp_path: Path) -> None:
    state = Node(readings=healthy(count=7), kernel_log=XID_79, fabric_manager_active=False)
    run = run_epilog(epilog_text, tmp_path, "gpu07", state)
    assert run.drains == drain(
        "gpu07",
        "found 7 GPUs, expected 8",
        "Xid 79 on PCI:0000:18:00",
        "nvidia-fabricmanager is not active",
    )
    assert all("DOWN" not in call for call in run.drains)
    assert "draining gpu07" in run.logged[0]


def test_node_without_gpus_is_skipped(epilog_text: str, tmp_path: Path) -> None:
    run = run_epilog(epilog_text, tmp_path, "slurm-head", Node(readings=""))
    assert (run.drains, run.journalctl_args, run.systemctl_args) == ([], [], [])


EXTERNAL = ("nvidia-smi", "journalctl", "systemctl", "scontrol", "logger", "hostname")


def test_every_external_command_runs_under_timeout(epilog_text: str) -> None:
    code = [line.split("#", 1)[0] for line in epilog_text.splitlines()]
    wrappers = [line for line in code if re.match(r"^(smi|call)\(\) \{ timeout ", line)]
    assert len(wrappers) == 2
    for line in code:
        if line in wrappers:
            continue
        for command in EXTERNAL:
            for match in re.finditer(rf"(?<![\w.-]){re.escape(command)}(?![\w-])", line):
                before = line[: match.start()]
                if command == "nvidia-smi" and ("did not answer" in line or "failed" in line):
                    continue  # inside a message
                assert before.rstrip().endswith("call"), line
    assert "smi --query-gpu" in epilog_text and "smi --query-remapped-rows" in epilog_text


def test_worst_case_fits_in_prolog_epilog_timeout() -> None:
    timeout = int(dict(SLURM_DEFAULTS)["PrologEpilogTimeout"])
    assert EPILOG_TIMEOUTS.worst_case_s < timeout


def test_shellcheck_is_clean(epilog_text: str, tmp_path: Path) -> None:
    require("shellcheck")
    path = tmp_path / "health-epilog.sh"
    path.write_text(epilog_text)
    proc = subprocess.run(
        ["shellcheck", "--severity=style", str(path)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout
    loaded = load_spec(str(EXAMPLES / "ml-training-8node.yaml"))
    cluster, _ = validate_cluster(loaded)
    assert cluster is not None
    assert render_all(cluster)["slurm/health-epilog.sh"].mode & os.X_OK


@pytest.mark.parametrize("node", ["gpu09", "gpu1", "gpu001", "gpu0x", "xgpu01", "gpu00"])
def test_names_outside_the_gpu_ranges_are_skipped(
    epilog_text: str, tmp_path: Path, node: str
) -> None:
    run = run_epilog(epilog_text, tmp_path, node, Node(readings=""))
    assert (run.drains, run.journalctl_args) == ([], [])


def test_the_node_check_grows_with_name_ranges_not_nodes(epilog_text: str) -> None:
    assert "gpu02" not in epilog_text
    assert 'if in_range "${name}" gpu 2 1 8; then echo "8 1"; return; fi' in epilog_text
