"""The rendered GPU health-check Epilog, run by bash with stand-in commands.

nvidia-smi, journalctl, systemctl, scontrol and logger are stubs on PATH; `timeout`
is the real one from coreutils. Each check is run passing and failing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from clustergen.catalog.xids import DRAIN_XIDS
from clustergen.outputs.slurm.derive import SLURM_DEFAULTS
from clustergen.outputs.slurm.epilog import EPILOG_TIMEOUTS
from clustergen.render import render_all
from clustergen.spec.load import load_spec
from clustergen.validate import validate_cluster

from support.ci import require, skip_or_fail
from support.paths import DATA, EXAMPLES

XID_79 = "NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
HDR = "200 Gb/sec (4X HDR)"
CURSOR = "readonly CURSOR=/run/clustergen-epilog.cursor\n"
SYSFS_IB = "readonly SYSFS_IB=/sys/class/infiniband\n"


def render_epilog(spec_path: Path) -> str:
    loaded = load_spec(str(spec_path))
    cluster, _ = validate_cluster(loaded)
    assert cluster is not None
    return render_all(cluster)["slurm/health-epilog.sh"].text


@pytest.fixture(scope="module")
def epilog_text() -> str:
    return render_epilog(EXAMPLES / "ml-training-8node.yaml")


def gpu(index: int, **fields: str) -> dict[str, str]:
    """One GPU as nvidia-smi --query-gpu reports it; an H100 in good health by default."""
    values = {
        "index": str(index),
        "ecc.errors.uncorrected.volatile.total": "0",
        "ecc.errors.uncorrected.aggregate.total": "0",
        "remapped_rows.pending": "No",
        "remapped_rows.failure": "No",
        "temperature.gpu": "45",
    }
    values.update({name.replace("__", "."): value for name, value in fields.items()})
    return values


def gpus(count: int = 8, **changes: dict[str, str]) -> list[dict[str, str]]:
    """`count` healthy GPUs; changes["gpu5"] = {field: value} alters GPU 5."""
    return [gpu(i, **changes.get(f"gpu{i}", {})) for i in range(count)]


def rails(count: int = 8, rate: str = HDR) -> dict[str, tuple[str, str]]:
    """HCA name -> (port 1 state, rate) as /sys/class/infiniband shows them."""
    return {f"mlx5_{i}": ("4: ACTIVE", rate) for i in range(count)}


# The stand-in nvidia-smi answers --query-gpu field by field, as the real one does,
# and refuses a field it does not know.
FAKE_SMI = """
import json, sys
args = sys.argv[1:]
with open(sys.argv[0] + ".calls", "a") as calls:
    calls.write(" ".join(args) + "\\n")
state = json.load(open(sys.argv[0] + ".json"))
if state["hangs"]:
    import time
    time.sleep(60)
if state["fails"]:
    print(state["fails"])
    sys.exit(9)
if args == ["-q"]:
    print(state["q"])
    sys.exit(0)
query = next(a for a in args if a.startswith("--query-gpu="))[len("--query-gpu="):]
for gpu in state["gpus"]:
    missing = [f for f in query.split(",") if f not in gpu]
    if missing:
        print(f'Field "{missing[0]}" is not a valid field to query.')
        sys.exit(2)
    print(", ".join(gpu[f] for f in query.split(",")))
"""

# The stand-in journalctl keeps its place as the real --cursor-file does: it shows
# the lines after the cursor in the file, then writes the cursor of the last one.
FAKE_JOURNALCTL = """
printf "%s\\n" "$*" >> "{dir}/journalctl.calls"
{fail}
file=""
for arg in "$@"; do
    case "$arg" in --cursor-file=*) file=${{arg#--cursor-file=}} ;; esac
done
seen=0
if [[ -n "$file" && -s "$file" ]]; then read -r seen < "$file"; fi
total=$(wc -l < "{dir}/kernel.log")
tail -n "+$((seen + 1))" "{dir}/kernel.log"
if [[ -n "$file" ]] && (( total > seen )); then echo "$total" > "$file"; fi
"""


@dataclass
class Node:
    """What the stand-in commands report."""

    gpus: list[dict[str, str]] = field(default_factory=gpus)
    smi_fails: str = ""
    smi_hangs: bool = False
    kernel_log: str = "NVRM: loading NVIDIA UNIX x86_64 Kernel Module\n"
    journalctl_fails: bool = False
    ports: dict[str, tuple[str, str]] = field(default_factory=rails)
    fabric_manager_active: bool = True
    # Each GPU's NVLink fabric (State, Status) as `nvidia-smi -q` shows them.
    fabric: list[tuple[str, str]] = field(default_factory=list)
    imex_active: bool = True


def smi_q(fabric: list[tuple[str, str]]) -> str:
    """`nvidia-smi -q` as a GB200 tray prints it, the sections the Epilog does not read
    shortened: a header per GPU, 4-space sections, 8-space fields, deeper subsections."""
    lines = ["==============NVSMI LOG==============", "", "Driver Version : 570.133.20", ""]
    for index, (state, status) in enumerate(fabric):
        lines += [
            f"GPU 00000009:0{index}:00.0",
            "    Product Name                          : NVIDIA GB200",
            "    Fabric",
            f"        State                             : {state}",
            f"        Status                            : {status}",
            "        CliqueId                          : 32766",
            "        ClusterUUID                       : 2a1f4b6e-0000-0000-0000-000000000001",
            "        Health",
            "            Bandwidth                     : Full",
            "            State                         : Degraded in a subsection",
            "    Temperature",
            "        State                             : not the fabric's",
            "",
        ]
    return "\n".join(lines)


@dataclass
class Run:
    drains: list[str]
    logged: list[str]
    smi_args: list[str]
    journalctl_args: list[str]
    systemctl_args: list[str]
    seconds: float


def run_epilog(
    text: str,
    tmp_path: Path,
    node: str,
    state: Node,
    *,
    smi_timeout_s: int | None = None,
) -> Run:
    """Run the Epilog as slurmd would on `node`, with stand-ins answering as `state` says.
    Files a run leaves (the journal cursor, the calls) stay for the next run in tmp_path."""
    cursor = tmp_path / "epilog.cursor"
    sysfs = tmp_path / "sys-class-infiniband"
    if SYSFS_IB in text:
        text = text.replace(SYSFS_IB, f"readonly SYSFS_IB={sysfs}\n")
    assert CURSOR in text
    text = text.replace(CURSOR, f"readonly CURSOR={cursor}\n")
    if smi_timeout_s is not None:
        line = f"readonly SMI_TIMEOUT_S={EPILOG_TIMEOUTS.smi_s}\n"
        assert line in text
        text = text.replace(line, f"readonly SMI_TIMEOUT_S={smi_timeout_s}\n")
        text = text.replace(
            f"readonly KILL_AFTER_S={EPILOG_TIMEOUTS.kill_after_s}\n", "readonly KILL_AFTER_S=1\n"
        )
    tmp_path.mkdir(exist_ok=True)
    script = tmp_path / "health-epilog.sh"
    script.write_text(text)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (tmp_path / "kernel.log").write_text(state.kernel_log)
    shutil.rmtree(sysfs, ignore_errors=True)
    for hca, (port_state, rate) in state.ports.items():
        port = sysfs / hca / "ports" / "1"
        port.mkdir(parents=True)
        (port / "state").write_text(port_state + "\n")
        (port / "rate").write_text(rate + "\n")
    smi = bin_dir / "nvidia-smi"
    smi.write_text(f"#!{sys.executable}\n" + FAKE_SMI)
    smi.chmod(0o755)
    (bin_dir / "nvidia-smi.json").write_text(
        json.dumps(
            {
                "gpus": state.gpus,
                "hangs": state.smi_hangs,
                "fails": state.smi_fails,
                "q": smi_q(state.fabric),
            }
        )
    )
    journal_fail = (
        'echo "Failed to seek to cursor: Invalid argument" >&2; exit 1'
        if state.journalctl_fails
        else ""
    )
    stubs = {
        "journalctl": FAKE_JOURNALCTL.format(dir=tmp_path, fail=journal_fail),
        "systemctl": f'printf "%s\\n" "$*" >> "{tmp_path}/systemctl.calls"\n'
        + f'case "$*" in *nvidia-imex*) exit {0 if state.imex_active else 3} ;; esac\n'
        + f"exit {0 if state.fabric_manager_active else 3}\n",
        "scontrol": f'printf "%s\\n" "$*" >> "{tmp_path}/scontrol.calls"\n',
        "logger": f'printf "%s\\n" "$*" >> "{tmp_path}/logger.calls"\n',
    }
    for name, body in stubs.items():
        (bin_dir / name).write_text("#!/bin/bash\n" + body)
        (bin_dir / name).chmod(0o755)
    for name in ("scontrol.calls", "logger.calls", "journalctl.calls", "systemctl.calls"):
        (tmp_path / name).unlink(missing_ok=True)
    (bin_dir / "nvidia-smi.calls").unlink(missing_ok=True)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "SLURMD_NODENAME": node}
    started = time.monotonic()
    proc = subprocess.run(
        ["bash", str(script)], env=env, capture_output=True, text=True, timeout=60
    )
    seconds = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""

    def lines(path: Path) -> list[str]:
        return path.read_text().splitlines() if path.exists() else []

    return Run(
        lines(tmp_path / "scontrol.calls"),
        lines(tmp_path / "logger.calls"),
        lines(bin_dir / "nvidia-smi.calls"),
        lines(tmp_path / "journalctl.calls"),
        lines(tmp_path / "systemctl.calls"),
        seconds,
    )


def drain(node: str, *reasons: str) -> list[str]:
    return [f"update NodeName={node} State=DRAIN Reason=clustergen health: {'; '.join(reasons)}"]


def test_healthy_node_is_left_alone(epilog_text: str, tmp_path: Path) -> None:
    run = run_epilog(epilog_text, tmp_path, "gpu03", Node())
    assert run.drains == []
    assert run.logged == []
    # One nvidia-smi call; the kernel log from the journal cursor; the fabric manager.
    assert len(run.smi_args) == 1
    assert run.journalctl_args == [
        f"-k -q -o cat --no-pager --cursor-file={tmp_path / 'epilog.cursor'}"
    ]
    assert run.systemctl_args == ["is-active --quiet nvidia-fabricmanager"]


def test_missing_gpu_drains_with_reason(epilog_text: str, tmp_path: Path) -> None:
    run = run_epilog(epilog_text, tmp_path, "gpu03", Node(gpus=gpus(count=7)))
    assert run.drains == drain("gpu03", "found 7 GPUs, expected 8")


def test_volatile_uncorrectable_ecc_drains(epilog_text: str, tmp_path: Path) -> None:
    state = Node(gpus=gpus(gpu5={"ecc__errors__uncorrected__volatile__total": "3"}))
    run = run_epilog(epilog_text, tmp_path, "gpu01", state)
    assert run.drains == drain(
        "gpu01", "GPU 5 has 3 uncorrectable ECC errors since the driver loaded"
    )


def test_old_aggregate_ecc_error_without_a_volatile_one_passes(
    epilog_text: str, tmp_path: Path
) -> None:
    # The aggregate counter keeps an error for the life of the GPU, also after row
    # remapping repaired it: judging it would drain the node after every job.
    state = Node(gpus=gpus(gpu2={"ecc__errors__uncorrected__aggregate__total": "1"}))
    run = run_epilog(epilog_text, tmp_path, "gpu01", state)
    assert run.drains == []
    (query,) = run.smi_args
    assert "ecc.errors.uncorrected.volatile.total" in query
    assert "aggregate" not in query


def test_unreported_values_are_not_judged(epilog_text: str, tmp_path: Path) -> None:
    na = {f: "[N/A]" for f in gpu(0) if f != "index"}
    state = Node(gpus=[{**gpu(i), **na} for i in range(8)])
    assert run_epilog(epilog_text, tmp_path, "gpu02", state).drains == []


def test_pending_row_remap_drains(epilog_text: str, tmp_path: Path) -> None:
    state = Node(gpus=gpus(gpu3={"remapped_rows__pending": "Yes"}))
    run = run_epilog(epilog_text, tmp_path, "gpu04", state)
    assert run.drains == drain("gpu04", "GPU 3 has a pending row remap (needs a GPU reset)")


def test_failed_row_remap_drains(epilog_text: str, tmp_path: Path) -> None:
    state = Node(gpus=gpus(gpu0={"remapped_rows__failure": "Yes"}))
    run = run_epilog(epilog_text, tmp_path, "gpu04", state)
    assert run.drains == drain("gpu04", "GPU 0 has a failed row remap")


def test_gpus_without_row_remapping_pass(epilog_text: str, tmp_path: Path) -> None:
    # Before Ampere there is no row remapper: nvidia-smi reports [N/A] for its fields.
    na = {"remapped_rows__pending": "[N/A]", "remapped_rows__failure": "[N/A]"}
    state = Node(gpus=gpus(**{f"gpu{i}": na for i in range(8)}))
    assert run_epilog(epilog_text, tmp_path, "gpu04", state).drains == []


# Xid -> the words the drain reason carries (NVIDIA's Xid catalog).
DRAINING_XIDS = {
    "48": "double-bit ECC error",
    "63": "row remap recorded, reset the GPU to apply it",
    "64": "row remap or page retirement failed",
    "74": "NVLink error",
    "79": "GPU has fallen off the bus",
    "94": "contained uncorrectable ECC error, reset the GPU",
    "95": "uncontained uncorrectable ECC error",
    "119": "GSP RPC timeout",
    **dict.fromkeys(("144", "145", "146", "147", "148", "150"), "NVLink fault"),
    "149": "NVLink link down",
    "154": "GPU recovery action required",
}


def test_the_catalog_holds_the_draining_xids() -> None:
    assert {str(x.code): x.reason for x in DRAIN_XIDS} == DRAINING_XIDS


@pytest.mark.parametrize("xid", sorted(DRAINING_XIDS, key=int))
def test_recent_xid_drains(epilog_text: str, tmp_path: Path, xid: str) -> None:
    log = "NVRM: loading\n" + XID_79.replace("): 79,", f"): {xid},")
    run = run_epilog(epilog_text, tmp_path, "gpu05", Node(kernel_log=log))
    assert run.drains == drain("gpu05", f"Xid {xid} on PCI:0000:18:00: {DRAINING_XIDS[xid]}")


def test_other_xids_pass(epilog_text: str, tmp_path: Path) -> None:
    # Xid 13 and 31 are application errors (bad kernel, page fault): the job's fault.
    # 790 and 7 share digits with draining codes.
    log = "".join(XID_79.replace("): 79,", f"): {xid},") for xid in ("13", "31", "790", "7"))
    assert run_epilog(epilog_text, tmp_path, "gpu05", Node(kernel_log=log)).drains == []


def test_a_recovery_action_drains_until_it_is_back_to_none(
    epilog_text: str, tmp_path: Path
) -> None:
    """Xid 154 as the driver logs it (R570 and later): a change to any action but None
    drains; the change back to None is the fault cleared, not another fault."""
    needed = (
        "NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) "
        "to 0x1 (GPU Reset Required)\n"
    )
    cleared = needed.replace(
        "0x0 (None) to 0x1 (GPU Reset Required)", "0x1 (GPU Reset Required) to 0x0 (None)"
    )
    run = run_epilog(epilog_text, tmp_path, "gpu05", Node(kernel_log=needed))
    assert run.drains == drain("gpu05", "Xid 154 on PCI:0000:01:00: GPU recovery action required")
    (tmp_path / "other").mkdir()
    assert (
        run_epilog(epilog_text, tmp_path / "other", "gpu06", Node(kernel_log=cleared)).drains == []
    )
    # Reset within one job's time: the change and its clearing in one read drain nothing;
    # a fault after the clearing drains again.
    (tmp_path / "reset").mkdir()
    both = run_epilog(epilog_text, tmp_path / "reset", "gpu07", Node(kernel_log=needed + cleared))
    assert both.drains == []
    (tmp_path / "again").mkdir()
    log = needed + cleared + needed
    again = run_epilog(epilog_text, tmp_path / "again", "gpu07", Node(kernel_log=log))
    assert again.drains == drain("gpu07", "Xid 154 on PCI:0000:01:00: GPU recovery action required")


def test_an_xid_drains_once_not_after_every_job(epilog_text: str, tmp_path: Path) -> None:
    first = run_epilog(epilog_text, tmp_path, "gpu05", Node(kernel_log=XID_79))
    assert first.drains == drain("gpu05", "Xid 79 on PCI:0000:18:00: GPU has fallen off the bus")
    # The admin resumed the node; the next job ends with the old line still in the log.
    again = run_epilog(epilog_text, tmp_path, "gpu05", Node(kernel_log=XID_79))
    assert again.drains == []
    # Then the kernel logs Xid 119 during a job: that one drains.
    xid_119 = "NVRM: Xid (PCI:0000:3b:00): 119, pid=77, name=python, Timeout after 6s\n"
    later = run_epilog(epilog_text, tmp_path, "gpu05", Node(kernel_log=XID_79 + xid_119))
    assert later.drains == drain("gpu05", "Xid 119 on PCI:0000:3b:00: GSP RPC timeout")
    cursor = f"--cursor-file={tmp_path / 'epilog.cursor'}"
    assert all(cursor in args for args in first.journalctl_args + later.journalctl_args)


JOURNALD = Path("/lib/systemd/systemd-journald")

# Runs the Epilog twice beside a journald of its own: a private mount namespace with
# tmpfs over /run and the journal's directory, so nothing of the machine is touched.
# journald reads the kernel log (/dev/kmsg) as it does on a node; -k then has entries.
PRIVATE_JOURNAL = """
set -e
mount -t tmpfs tmpfs /run
mkdir -p /run/systemd/journal
if [ -d /var/log/journal ]; then mount -t tmpfs tmpfs /var/log/journal; fi
{journald} &
journald=$!
trap 'kill "$journald"' EXIT
for _ in $(seq 50); do [ -S /run/systemd/journal/socket ] && break; sleep 0.1; done
set +e
bash "$1"; echo "first=$?"
cp "$2" "$2.first"
bash "$1"; echo "second=$?"
"""


@pytest.mark.daemons
def test_the_real_journalctl_keeps_the_cursor(epilog_text: str, tmp_path: Path) -> None:
    require("unshare", "journalctl", root=True)
    if not JOURNALD.exists():
        skip_or_fail(f"needs {JOURNALD} (Debian package systemd)")
    # Lay the node out with the stand-ins, then let the real journalctl answer.
    run_epilog(epilog_text, tmp_path, "gpu03", Node())
    (tmp_path / "bin" / "journalctl").unlink()
    cursor = tmp_path / "epilog.cursor"
    cursor.unlink(missing_ok=True)
    wrapper = tmp_path / "private-journal.sh"
    wrapper.write_text(PRIVATE_JOURNAL.format(journald=JOURNALD))
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin:/usr/sbin:/sbin", "SLURMD_NODENAME": "gpu03"}
    proc = subprocess.run(
        ["unshare", "-m", "bash", str(wrapper), str(tmp_path / "health-epilog.sh"), str(cursor)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "first=0" in proc.stdout and "second=0" in proc.stdout, proc.stdout + proc.stderr
    logged = (tmp_path / "logger.calls").read_text() if (tmp_path / "logger.calls").exists() else ""
    assert "could not read the kernel log" not in logged
    assert not (tmp_path / "scontrol.calls").exists()
    # journalctl wrote the cursor of the last kernel message it showed.
    first = (tmp_path / "epilog.cursor.first").read_text()
    assert first.startswith("s=") and ";i=" in first


def test_a_repeated_xid_is_one_reason(epilog_text: str, tmp_path: Path) -> None:
    xid_74 = "NVRM: Xid (PCI:0000:b3:00): 74, pid=9, name=python, NVLink: fatal error\n"
    run = run_epilog(epilog_text, tmp_path, "gpu05", Node(kernel_log=xid_74 * 3))
    assert run.drains == drain("gpu05", "Xid 74 on PCI:0000:b3:00: NVLink error")


def test_unreadable_kernel_log_is_logged_not_drained(epilog_text: str, tmp_path: Path) -> None:
    # journalctl fails on a cursor it cannot seek to ("Failed to seek to cursor"): the
    # cursor goes, so the next check reads the boot's kernel log instead of failing too.
    (tmp_path / "epilog.cursor").write_text("garbage\n")
    run = run_epilog(epilog_text, tmp_path, "gpu05", Node(journalctl_fails=True))
    assert run.drains == []
    assert "could not read the kernel log (1): Failed to seek to cursor" in run.logged[0]
    assert not (tmp_path / "epilog.cursor").exists()
    after = run_epilog(epilog_text, tmp_path, "gpu05", Node(kernel_log=XID_79))
    assert after.drains == drain("gpu05", "Xid 79 on PCI:0000:18:00: GPU has fallen off the bus")


def test_down_hca_port_drains(epilog_text: str, tmp_path: Path) -> None:
    ports = rails()
    ports["mlx5_3"] = ("1: DOWN", "10 Gb/sec (4X SDR)")
    run = run_epilog(epilog_text, tmp_path, "gpu02", Node(ports=ports))
    assert run.drains == drain("gpu02", "mlx5_3 port 1 is DOWN")


def test_hca_port_below_the_link_rate_drains(epilog_text: str, tmp_path: Path) -> None:
    ports = rails()
    ports["mlx5_6"] = ("4: ACTIVE", "100 Gb/sec (2X HDR)")
    run = run_epilog(epilog_text, tmp_path, "gpu02", Node(ports=ports))
    assert run.drains == drain("gpu02", "mlx5_6 port 1 at 100 Gb/sec, expected 200 Gb/sec")


def test_missing_hca_drains(epilog_text: str, tmp_path: Path) -> None:
    run = run_epilog(epilog_text, tmp_path, "gpu02", Node(ports=rails(count=7)))
    assert run.drains == drain("gpu02", "mlx5_7 port 1 not found")


def test_each_profile_checks_its_own_compute_hcas(tmp_path: Path) -> None:
    # mixed-fleet: hgx-h100 has a topology table with a storage HCA (mlx5_8) that is
    # not a rail; dgx-a100 uses four dual-port HCAs on port 1.
    text = render_epilog(DATA / "mixed-fleet.yaml")
    assert (
        "hgx-h100) gpus=8; fabric_manager=1; nvlink_fabric=0; imex=0; rails=(mlx5_0:1 mlx5_1:1"
        in text
    )
    assert (
        "dgx-a100) gpus=8; fabric_manager=1; nvlink_fabric=0; imex=0; "
        "rails=(mlx5_0:1 mlx5_2:1 mlx5_6:1 mlx5_8:1)"
    ) in text
    hgx = run_epilog(text, tmp_path / "hgx", "gpu01", Node(ports=rails(count=8)))
    assert hgx.drains == []
    dgx_ports = {f"mlx5_{i}": ("4: ACTIVE", HDR) for i in (0, 2, 6)}
    dgx = run_epilog(text, tmp_path / "dgx", "gpu05", Node(ports=dgx_ports))
    assert dgx.drains == drain("gpu05", "mlx5_8 port 1 not found")


def test_stopped_fabric_manager_drains_an_nvswitch_node(epilog_text: str, tmp_path: Path) -> None:
    run = run_epilog(epilog_text, tmp_path, "gpu06", Node(fabric_manager_active=False))
    assert run.drains == drain("gpu06", "nvidia-fabricmanager is not active")


def edge_with_epilog(tmp_path: Path) -> Path:
    spec = tmp_path / "edge-roce-2node.yaml"
    text = (EXAMPLES / "edge-roce-2node.yaml").read_text()
    spec.write_text(
        text.replace(
            "  controllers: [lab-head]\n",
            "  controllers: [lab-head]\n  health_check: {epilog: true}\n",
        )
    )
    return spec


def test_fabric_manager_is_not_asked_without_nvswitch(tmp_path: Path) -> None:
    text = render_epilog(edge_with_epilog(tmp_path))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    # RoCE ports show the same sysfs files; the fabric's rate is 100g.
    ports = rails(count=2, rate="100 Gb/sec (4X EDR)")
    state = Node(gpus=gpus(count=4), ports=ports, fabric_manager_active=False)
    run = run_epilog(text, run_dir, "lab2", state)
    assert run.drains == []
    assert run.systemctl_args == []


@pytest.fixture(scope="module")
def gb200_epilog() -> str:
    return render_epilog(EXAMPLES / "gb200-nvl72-4rack.yaml")


def gb200_tray(**changes: object) -> Node:
    """A healthy GB200 tray: 4 GPUs in the NVLink fabric, 4 compute HCAs at NDR."""
    healthy: dict[str, object] = {
        "gpus": gpus(count=4),
        "ports": rails(count=4, rate="400 Gb/sec (4X NDR)"),
        "fabric": [("Completed", "Success")] * 4,
    }
    return Node(**{**healthy, **changes})  # type: ignore[arg-type]


def test_a_healthy_nvl72_tray_is_left_alone(gb200_epilog: str, tmp_path: Path) -> None:
    run = run_epilog(gb200_epilog, tmp_path, "gb005", gb200_tray())
    assert run.drains == [], run.logged
    # The query, then `nvidia-smi -q` for the fabric; IMEX runs from boot (switch mode).
    assert [args.split()[0] for args in run.smi_args] == [
        "--query-gpu=index,ecc.errors.uncorrected.volatile.total,remapped_rows.pending,remapped_rows.failure,temperature.gpu",
        "-q",
    ]
    assert run.systemctl_args == ["is-active --quiet nvidia-imex"]


@pytest.mark.parametrize(
    ("fabric", "reason"),
    [
        (
            ("In Progress", "N/A"),
            "GPU 00000009:02:00.0 is not in the NVLink fabric (state In Progress)",
        ),
        (
            ("Not Started", "N/A"),
            "GPU 00000009:02:00.0 is not in the NVLink fabric (state Not Started)",
        ),
        (
            ("Completed", "Failure"),
            "GPU 00000009:02:00.0 failed to join the NVLink fabric (Failure)",
        ),
    ],
)
def test_a_gpu_out_of_the_nvlink_fabric_drains_the_tray(
    gb200_epilog: str, tmp_path: Path, fabric: tuple[str, str], reason: str
) -> None:
    states = [("Completed", "Success")] * 4
    states[2] = fabric
    run = run_epilog(gb200_epilog, tmp_path, "gb040", gb200_tray(fabric=states))
    assert run.drains == drain("gb040", reason)


def test_a_gpu_that_reports_no_registration_is_not_judged(
    gb200_epilog: str, tmp_path: Path
) -> None:
    run = run_epilog(gb200_epilog, tmp_path, "gb001", gb200_tray(fabric=[("N/A", "N/A")] * 4))
    assert run.drains == []


def test_a_stopped_imex_drains_the_tray(gb200_epilog: str, tmp_path: Path) -> None:
    run = run_epilog(gb200_epilog, tmp_path, "gb072", gb200_tray(imex_active=False))
    assert run.drains == drain("gb072", "nvidia-imex is not active")


def test_imex_started_per_job_is_not_asked_after_it(tmp_path: Path) -> None:
    """In prolog mode (Slurm before 24.05.2) the IMEX Epilog stops the daemon after each
    job, beside this one: it is not judged, the fabric still is."""
    spec = tmp_path / "gb200.yaml"
    text = (EXAMPLES / "gb200-nvl72-4rack.yaml").read_text()
    spec.write_text(re.sub(r"(\n  slurm: )\S+", r"\g<1>24.05.1", text, count=1))
    epilog = render_epilog(spec)
    run_dir = tmp_path / "run"
    run = run_epilog(epilog, run_dir, "gb010", gb200_tray(imex_active=False))
    assert run.drains == [] and run.systemctl_args == []
    states = [("Completed", "Success")] * 3 + [("In Progress", "N/A")]
    run = run_epilog(epilog, run_dir, "gb010", gb200_tray(fabric=states))
    assert run.drains == drain(
        "gb010", "GPU 00000009:03:00.0 is not in the NVLink fabric (state In Progress)"
    )


def test_hot_gpu_is_logged_never_drained(epilog_text: str, tmp_path: Path) -> None:
    hot = {f"gpu{i}": {"temperature__gpu": t} for i, t in ((0, "86"), (1, "86"), (2, "85"))}
    run = run_epilog(epilog_text, tmp_path, "gpu08", Node(gpus=gpus(**hot)))
    assert run.drains == []
    assert len(run.logged) == 1
    assert "above 85C at job end (not drained): GPU 0 at 86C GPU 1 at 86C" in run.logged[0]


def test_nvidia_smi_failure_drains(epilog_text: str, tmp_path: Path) -> None:
    state = Node(smi_fails="NVIDIA-SMI has failed")
    run = run_epilog(epilog_text, tmp_path, "gpu02", state)
    assert run.drains == drain("gpu02", "nvidia-smi failed: NVIDIA-SMI has failed")


def test_hanging_nvidia_smi_is_cut_off(epilog_text: str, tmp_path: Path) -> None:
    run = run_epilog(epilog_text, tmp_path, "gpu02", Node(smi_hangs=True), smi_timeout_s=1)
    assert run.drains == drain("gpu02", "nvidia-smi did not answer within 1s")
    assert run.seconds < 10  # the stand-in sleeps 60 s


def test_several_problems_in_one_drain_never_down(epilog_text: str, tmp_path: Path) -> None:
    ports = rails()
    ports["mlx5_0"] = ("1: DOWN", HDR)
    state = Node(gpus=gpus(count=7), kernel_log=XID_79, ports=ports, fabric_manager_active=False)
    run = run_epilog(epilog_text, tmp_path, "gpu07", state)
    assert run.drains == drain(
        "gpu07",
        "found 7 GPUs, expected 8",
        "Xid 79 on PCI:0000:18:00: GPU has fallen off the bus",
        "mlx5_0 port 1 is DOWN",
        "nvidia-fabricmanager is not active",
    )
    assert all("DOWN" not in call.split("Reason=")[0] for call in run.drains)
    assert "draining gpu07" in run.logged[0]


def test_node_without_gpus_is_skipped(epilog_text: str, tmp_path: Path) -> None:
    run = run_epilog(epilog_text, tmp_path, "slurm-head", Node(gpus=[]))
    assert (run.drains, run.smi_args, run.journalctl_args, run.systemctl_args) == (
        [],
        [],
        [],
        [],
    )


EXTERNAL = (
    "nvidia-smi",
    "journalctl",
    "grep",
    "rm",
    "systemctl",
    "scontrol",
    "logger",
    "hostname",
)


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
    assert "smi --query-gpu" in epilog_text and "call grep -H" in epilog_text


def test_worst_case_fits_in_prolog_epilog_timeout() -> None:
    timeout = int(dict(SLURM_DEFAULTS)["PrologEpilogTimeout"])
    assert EPILOG_TIMEOUTS.worst_case_s < timeout


def edge_without_fabric(tmp_path: Path) -> Path:
    spec = edge_with_epilog(tmp_path)
    text = re.sub(r"  fabric:\n    type: roce\n(    .*\n)+", "", spec.read_text())
    spec.write_text(text.replace("    fabric_ip: 192.168.60.11\n", ""))
    return spec


def edge_without_gpus(tmp_path: Path) -> Path:
    spec = edge_without_fabric(tmp_path)
    spec.write_text(spec.read_text().replace("    gpu: {model: l40s, count: 4}\n", ""))
    return spec


@pytest.mark.parametrize(
    "variant", ["ml-training", "mixed-fleet", "gb200", "roce", "no fabric", "no GPUs"]
)
def test_shellcheck_is_clean(variant: str, tmp_path: Path) -> None:
    require("shellcheck")
    spec = {
        "ml-training": lambda: EXAMPLES / "ml-training-8node.yaml",
        "mixed-fleet": lambda: DATA / "mixed-fleet.yaml",
        "gb200": lambda: EXAMPLES / "gb200-nvl72-4rack.yaml",
        "roce": lambda: edge_with_epilog(tmp_path),
        "no fabric": lambda: edge_without_fabric(tmp_path),
        "no GPUs": lambda: edge_without_gpus(tmp_path),
    }[variant]()
    text = render_epilog(spec)
    assert ("check_fabric_ports" in text) == (variant not in ("no fabric", "no GPUs"))
    path = tmp_path / "health-epilog.sh"
    path.write_text(text)
    proc = subprocess.run(
        ["shellcheck", "--severity=style", str(path)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout
    loaded = load_spec(str(spec))
    cluster, _ = validate_cluster(loaded)
    assert cluster is not None
    assert render_all(cluster)["slurm/health-epilog.sh"].mode & os.X_OK


def test_without_gpu_nodes_the_epilog_only_exits(tmp_path: Path) -> None:
    text = render_epilog(edge_without_gpus(tmp_path))
    assert text.endswith(
        "# No compute node of this spec has GPUs: there is nothing to check.\nexit 0\n"
    )
    proc = subprocess.run(["bash", "-c", text], capture_output=True, text=True, timeout=10)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


def test_without_a_fabric_no_port_is_read(tmp_path: Path) -> None:
    text = render_epilog(edge_without_fabric(tmp_path))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    run = run_epilog(text, run_dir, "lab1", Node(gpus=gpus(count=4), ports={}))
    assert run.drains == []


@pytest.mark.parametrize("node", ["gpu09", "gpu1", "gpu001", "gpu0x", "xgpu01", "gpu00"])
def test_names_outside_the_gpu_ranges_are_skipped(
    epilog_text: str, tmp_path: Path, node: str
) -> None:
    run = run_epilog(epilog_text, tmp_path, node, Node(gpus=[]))
    assert (run.drains, run.journalctl_args) == ([], [])


def test_the_node_check_grows_with_name_ranges_not_nodes(epilog_text: str) -> None:
    assert "gpu02" not in epilog_text
    assert 'if in_range "${name}" gpu 2 1 8; then echo hgx-h100; return; fi' in epilog_text
