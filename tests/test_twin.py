"""`clustergen twin`: the rendered Slurm files of each reference spec on real local
daemons (slurmctld, slurmdbd with MariaDB, one slurmd per node in its own network
namespace with fake GPUs), and jobs that show the configuration behaves as the spec
says: every partition runs a job, `--gres=gpu:N` gives N devices, MaxTime holds, the
higher PriorityTier goes first, and `--switches=1` keeps a job under one leaf.

One twin per spec (module-scoped fixture); the CLI tests start their own.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import hostlist
import pytest

from clustergen.commands.twin.process import DaemonError
from clustergen.commands.twin.session import Twin
from clustergen.model.common import parse_slurm_time

from support.paths import EXAMPLES, REPO
from support.pull_request import PULL_REQUEST, edited
from support.realslurm.parse import parse_oneliner
from support.twin import (
    JOB_TIMEOUT_S,
    job,
    require_twin,
    resolved,
    sbatch,
    started_twin,
    wait_for_state,
)

pytestmark = pytest.mark.daemons

SPECS = ["edge-roce-2node", "ml-training-8node"]


@pytest.fixture(scope="module", params=SPECS)
def twin(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Twin]:
    yield from started_twin(request.param, tmp_path_factory.mktemp(f"twin-{request.param}"))


def cancel_all(twin: Twin) -> None:
    twin.client("scancel", "--user=root")
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while twin.client("squeue", "-h", "-o", "%i").strip():
        assert time.monotonic() < deadline, "jobs did not go away after scancel"
        time.sleep(0.3)


def partition_nodes(twin: Twin) -> dict[str, set[str]]:
    """Started nodes of each partition of the spec."""
    started = {node.name for node in twin.nodes.started}
    return {
        partition.name: set(members) & started
        for partition, members in zip(
            twin.cluster.spec.slurm.partitions, twin.cluster.partition_nodes, strict=True
        )
    }


def test_a_job_runs_in_every_partition(twin: Twin) -> None:
    for name, nodes in partition_nodes(twin).items():
        output = twin.client("srun", "-p", name, "-N1", "hostname", timeout=JOB_TIMEOUT_S)
        assert output.strip() in nodes, f"{name}: ran on {output!r}, not on {sorted(nodes)}"


def test_gres_gives_exactly_the_gpus_asked_for(twin: Twin) -> None:
    node = max(twin.nodes.started, key=lambda started: started.gpu_count)
    assert node.gpu_count > 0
    partition = next(name for name, nodes in partition_nodes(twin).items() if node.name in nodes)
    probe = (
        'echo "$CUDA_VISIBLE_DEVICES"; '
        'for i in $(echo "$CUDA_VISIBLE_DEVICES" | tr , " "); do test -c "/dev/nvidia$i" || '
        'echo "missing /dev/nvidia$i"; done'
    )
    for count in sorted({1, node.gpu_count // 2, node.gpu_count} - {0}):
        output = twin.client(
            "srun", "-p", partition, "-w", node.name, f"--gres=gpu:{count}",
            "bash", "-c", probe, timeout=JOB_TIMEOUT_S,
        )  # fmt: skip
        first, *rest = output.splitlines()
        assert len(first.split(",")) == count, output
        assert rest == [], output  # every visible index is a device file on the node
    with pytest.raises(DaemonError, match="Requested node configuration is not available"):
        twin.client("sbatch", "-p", partition, f"--gres=gpu:{node.gpu_count + 1}", "--wrap", "true")


def test_a_job_over_the_partition_max_time_is_rejected(twin: Twin) -> None:
    limited = [
        partition
        for partition in twin.cluster.spec.slurm.partitions
        if partition.max_time and parse_slurm_time(partition.max_time) is not None
    ]
    assert limited, "every reference spec has a partition with a MaxTime"
    for partition in limited:
        max_minutes = parse_slurm_time(partition.max_time or "")
        assert max_minutes is not None
        within = sbatch(twin, "-p", partition.name, "-t", str(max_minutes), "--wrap", "true")
        wait_for_state(twin, within, {"COMPLETED"})
        # EnforcePartLimits=ANY (rendered): refused at submission, never queued.
        with pytest.raises(DaemonError, match="Requested time limit is invalid"):
            sbatch(twin, "-p", partition.name, "-t", str(max_minutes + 1), "--wrap", "true")
        assert twin.client("squeue", "-h", "-o", "%i").strip() == ""


@pytest.mark.parametrize("twin", ["ml-training-8node"], indirect=True)
def test_the_higher_priority_tier_partition_is_scheduled_first(twin: Twin) -> None:
    tiers = {p.name: p.priority_tier or 1 for p in twin.cluster.spec.slurm.partitions}
    nodes = partition_nodes(twin)
    high = max(tiers, key=lambda name: tiers[name])
    low = next(n for n in tiers if tiers[n] < tiers[high] and nodes[n] & nodes[high])
    node = sorted(nodes[high] & nodes[low])[0]
    one_node = ["-w", node, "--exclusive", "--wrap", "sleep 300"]
    blocker = sbatch(twin, "-p", high, *one_node)
    wait_for_state(twin, blocker, {"RUNNING"})
    low_job = sbatch(twin, "-p", low, *one_node)  # submitted first
    high_job = sbatch(twin, "-p", high, *one_node)
    twin.client("scancel", blocker)
    started = wait_for_state(twin, high_job, {"RUNNING"})
    assert started["NodeList"] == node
    assert job(twin, low_job)["JobState"] == "PENDING"
    cancel_all(twin)


@pytest.mark.parametrize("twin", ["ml-training-8node"], indirect=True)
def test_switches_1_keeps_a_4_node_job_under_one_leaf(twin: Twin) -> None:
    topology = (twin.paths.etc / "topology.conf").read_text()
    leaves = {
        fields["SwitchName"]: set(hostlist.expand_hostlist(fields["Nodes"]))
        for fields in map(parse_oneliner, topology.splitlines())
        if "SwitchName" in fields and "Nodes" in fields
    }
    assert len(leaves) >= 2, topology
    # Busy one node of the first leaf: the first four free nodes then span two leaves,
    # so only --switches=1 keeps the job under the other leaf.
    partition = next(n for n, nodes in partition_nodes(twin).items() if len(nodes) >= 8)
    first_leaf = sorted(leaves)[0]
    busy = sorted(leaves[first_leaf])[0]
    blocker = sbatch(twin, "-p", partition, "-w", busy, "--exclusive", "--wrap", "sleep 300")
    wait_for_state(twin, blocker, {"RUNNING"})
    placed = sbatch(
        twin, "-p", partition, "-N4", "--switches=1", "--exclusive", "--wrap", "sleep 300"
    )
    fields = wait_for_state(twin, placed, {"RUNNING"})
    allocated = set(hostlist.expand_hostlist(fields["NodeList"]))
    assert len(allocated) == 4
    under = [name for name, members in leaves.items() if allocated <= members]
    assert under and under != [first_leaf], (fields["NodeList"], leaves)
    cancel_all(twin)


# -- the command --------------------------------------------------------------------


def twin_namespaces() -> set[str]:
    """Network namespaces of any twin, their /etc/netns entries and spool directories."""
    listing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    found = {f"netns {line.split()[0]}" for line in listing.splitlines() if "cgtwin-" in line}
    etc = Path("/etc/netns")
    if etc.is_dir():
        found |= {f"/etc/netns/{path.name}" for path in etc.iterdir() if "cgtwin-" in path.name}
    return found | {str(path) for path in Path("/run").glob("cgtwin-*")}  # slurmd spools


def leftovers(tmpdir: Path, before: set[str]) -> list[str]:
    """Namespaces (beyond those of `before`), processes and temporary files a run left."""
    found = sorted(twin_namespaces() - before)
    found += [str(path) for path in tmpdir.iterdir()]
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    found += [line for line in ps.splitlines() if str(tmpdir) in line]
    return found


def _interruptible() -> None:
    """In the twin's process, before it starts: SIGINT as a terminal delivers it. A run
    started in the background of a non-interactive shell (nohup ... &) ignores SIGINT, the
    twin inherits that, and the Ctrl-C test would send a signal nothing hears."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_cli(*argv: str, tmpdir: Path, **kwargs: object) -> subprocess.Popen[str]:
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    return subprocess.Popen(
        [sys.executable, "-m", "clustergen", "twin", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=_interruptible,
        **kwargs,  # type: ignore[call-overload]
    )


def run_to_end(
    tmp_path: Path, spec: Path, script_text: str, *argv: str
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """`clustergen twin SPEC ARGV --run SCRIPT` to its end: its result, and what it left."""
    require_twin()
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    script = tmp_path / "jobs.sh"
    script.write_text(script_text)
    before = twin_namespaces()
    started = time.monotonic()
    proc = run_cli(str(spec), *argv, "--run", str(script), tmpdir=tmpdir)
    out, err = proc.communicate(timeout=180)
    print(f"twin --run took {time.monotonic() - started:.1f} s")
    result = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    return result, leftovers(tmpdir, before)


def test_run_exits_with_the_script_status_and_leaves_nothing(tmp_path: Path) -> None:
    result, left = run_to_end(
        tmp_path,
        EXAMPLES / "edge-roce-2node.yaml",
        "set -e\n"
        "sinfo -h -o '%P %D %t'\n"
        "srun -N2 --gres=gpu:4 bash -c 'echo $(hostname) $CUDA_VISIBLE_DEVICES'\n"
        "exit 7\n",
    )
    out, err = result.stdout, result.stderr
    assert result.returncode == 7, err
    assert "gpu* 2 idle" in out, out
    assert sorted(out.splitlines()[1:]) == ["lab1 0,1,2,3", "lab2 0,1,2,3"], out
    assert "running on the local Slurm" in err
    assert left == []


def test_nodes_named_as_real_sites_name_them_run_jobs(tmp_path: Path) -> None:
    """Node names with '_' (hostname(1) refuses them; the twin writes the namespace's host
    name where the kernel keeps it), a controller by its fully qualified name, a GRES type
    in capitals and a feature with ':' (tests/warnings/hostname-underscore.yaml)."""
    result, left = run_to_end(
        tmp_path,
        REPO / "tests" / "warnings" / "hostname-underscore.yaml",
        "set -e\n"
        "sinfo -N -h -o '%N %t %G %f'\n"
        "srun -N2 -p gpu --gres=gpu:H100SXM5:8 -C GPU_SKU:H100 hostname\n",
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:2] == [
        f"q_gpu-st-{n} idle gpu:H100SXM5:8 hgx,H100SXM5,GPU_SKU:H100" for n in (1, 2)
    ], result.stdout
    assert sorted(lines[2:]) == ["q_gpu-st-1", "q_gpu-st-2"], result.stdout
    assert "controller: head1.mini.example.org" in result.stderr
    assert left == []


def running(pid: int) -> bool:
    """A process that exists and is not a zombie waiting for its reaper."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_sigterm_during_run_stops_the_script_and_the_twin(tmp_path: Path) -> None:
    require_twin()
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    pid_file = tmp_path / "sleep.pid"
    script = tmp_path / "jobs.sh"
    script.write_text(f"sleep 300 &\necho $! > {pid_file}\necho ready\nwait\n")
    before = twin_namespaces()
    proc = run_cli(str(EXAMPLES / "edge-roce-2node.yaml"), "--run", str(script), tmpdir=tmpdir)
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ready\n"
    proc.send_signal(signal.SIGTERM)
    # As long as a whole --run may take: stopping tears down every daemon, which on a
    # loaded machine (CI's, with booted nodes beside it) takes a while.
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 128 + signal.SIGTERM, err
    # The script's background job went too: SIGKILLed with the script's session, it is
    # gone once the kernel has delivered that, at the latest within seconds.
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while running(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not running(pid), f"the script's background job {pid} outlived the twin"
    assert leftovers(tmpdir, before) == [], err


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_without_run_it_waits_and_a_signal_removes_everything(tmp_path: Path, stop: int) -> None:
    require_twin()
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    before = twin_namespaces()
    proc = run_cli(
        str(EXAMPLES / "ml-training-8node.yaml"), "--nodes-per-group", "2", tmpdir=tmpdir
    )
    assert proc.stdout is not None
    shown = []
    for line in proc.stdout:
        shown.append(line)
        if line.startswith("Ctrl-C or SIGTERM"):
            break
    text = "".join(shown)
    assert "a representative subset, 2 of 8 compute nodes: gpu[01-02] for hardware hgx-h100" in text
    assert "not started (set DOWN): gpu[03-08]" in text
    conf = re.search(r"export SLURM_CONF=(\S+)", text)
    path = re.search(r"export PATH=(\S+):\$PATH", text)
    assert conf and path, text
    env = {
        **os.environ,
        "SLURM_CONF": conf.group(1),
        "PATH": f"{path.group(1)}:{os.environ['PATH']}",
    }
    sinfo = subprocess.run(
        ["sinfo", "-h", "-N", "-p", "gpu-training", "-o", "%N %t"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert sinfo.stdout.split("\n")[:3] == ["gpu01 idle", "gpu02 idle", "gpu03 down"], sinfo
    proc.send_signal(stop)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "stopped; everything it started is removed" in err
    assert leftovers(tmpdir, before) == []


def test_a_killed_twin_is_cleaned_up_by_the_next_one(tmp_path: Path) -> None:
    """SIGKILL leaves a twin no chance to clean up (its daemons die with it): its
    namespaces, hosts files, spool and work folders stay. The next twin finds its lock
    free, removes them (with anything still running in the namespaces) and says so."""
    require_twin()
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    before = twin_namespaces()
    killed = run_cli(str(EXAMPLES / "edge-roce-2node.yaml"), tmpdir=tmpdir)
    assert killed.stdout is not None
    for line in killed.stdout:
        if line.startswith("Ctrl-C or SIGTERM"):
            break
    killed.kill()
    killed.communicate(timeout=30)
    left = leftovers(tmpdir, before)
    assert any(item.startswith("netns cgtwin-") for item in left), left
    assert any(Path(item).name.startswith("clustergen-twin-") for item in left), left
    (tmp_path / "next").mkdir()
    result, after = run_to_end(tmp_path / "next", EXAMPLES / "edge-roce-2node.yaml", "sinfo -h\n")
    assert result.returncode == 0, result.stderr
    assert re.search(
        r"removed network namespace cgtwin-\w+-br of a twin that was killed", result.stderr
    )
    assert "removed work folder" in result.stderr
    assert after == []
    assert leftovers(tmpdir, before) == []


def spec_with_options(tmp_path: Path, *options: str) -> Path:
    text = (EXAMPLES / "ml-training-8node.yaml").read_text()
    old = "    MessageTimeout: 30\n"
    assert old in text
    spec = tmp_path / "spec.yaml"
    spec.write_text(text.replace(old, old + "".join(f"    {line}\n" for line in options)))
    return spec


QOS = """\
  preemption: {type: qos, mode: REQUEUE}
  qos:
    - {name: low, preempt_mode: REQUEUE, grace_time_s: 300}
    - {name: high, priority: 100, preempt: [low, normal]}
"""


def test_keys_the_local_slurm_lacks_are_dropped_and_listed_and_qos_created(
    tmp_path: Path,
) -> None:
    spec = spec_with_options(tmp_path, "MaxBatchRequeue: 3")  # a 23.11 key; the spec pins 23.11
    text = spec.read_text()
    old = "  preemption: {type: qos, mode: CANCEL}\n"
    assert old in text
    spec.write_text(text.replace(old, QOS))
    result, left = run_to_end(
        tmp_path,
        spec,
        "set -e\n"
        "sacctmgr -nP show qos format=Name,Priority,Preempt\n"
        # As on a real cluster, a user's association must allow a QOS before a job uses it.
        "sacctmgr -i modify user root set qos+=high >/dev/null\n"
        "srun -p debug --qos=high --gres=gpu:8 true\n",
        "--nodes-per-group",
        "1",
    )
    err = result.stderr
    assert result.returncode == 0, err
    assert "rendered for Slurm 23.11.10, running on the local Slurm 22.05" in err
    assert "dropped from slurm.conf (2):" in err
    assert "  MaxBatchRequeue=3  (not a slurm.conf key of the local Slurm 22.05" in err
    assert "  Epilog=/etc/slurm/health-epilog.sh  (not on the twin's list of keys it keeps" in err
    assert "QOS: created in slurmdbd by the rendered clustergen-qos.sh" in err
    assert sorted(result.stdout.splitlines()) == ["high|100|low,normal", "low|0|", "normal|0|"]
    assert left == []


def test_a_configuration_the_daemons_refuse_exits_1_with_their_log(tmp_path: Path) -> None:
    spec = spec_with_options(tmp_path, "SchedulerType: sched/bogus")
    result, left = run_to_end(tmp_path, spec, "exit 0\n", "--nodes-per-group", "1")
    err = result.stderr
    assert result.returncode == 1, err
    assert "clustergen twin: slurmctld exited early" in err
    assert "fatal: Failed to initialize sched plugin" in err
    assert "clustergen twin: running" not in err  # the script never ran
    assert left == []


def test_the_pull_requests_spec_passes_the_job_tests_on_its_twin(tmp_path: Path) -> None:
    """docs/ci.md's pull request (a newer driver, two more GPU nodes, one OST on a new
    device) on a twin: the two new nodes join the partitions, and a job runs in each
    partition with every GPU of a node."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(edited((EXAMPLES / "ml-training-8node.yaml").read_text(), *PULL_REQUEST))
    script = (
        "set -e\n"
        "sinfo -h -N -o '%N %P %t' | sort -u\n"
        "for partition in $(sinfo -h -o '%R' | sort -u); do\n"
        '  srun -p "$partition" -N1 --gres=gpu:8 bash -c '
        "'echo ran $SLURM_JOB_PARTITION $(hostname) $CUDA_VISIBLE_DEVICES'\n"
        "done\n"
    )
    result, left = run_to_end(tmp_path, spec, script)
    assert result.returncode == 0, result.stderr
    listed = {line.split()[0] for line in result.stdout.splitlines() if line.startswith("gpu")}
    assert {"gpu09", "gpu10"} <= listed, result.stdout
    ran = [line.split() for line in result.stdout.splitlines() if line.startswith("ran ")]
    partitions = {p.name for p in resolved("ml-training-8node").spec.slurm.partitions}
    assert {line[1] for line in ran} == partitions, result.stdout
    assert all(line[3] == "0,1,2,3,4,5,6,7" for line in ran), result.stdout
    assert left == []


# Small test nodes: 1 core x 2 threads and 2 GPUs, fewer cores than GPUs.
FEWER_CORES_THAN_GPUS = [
    (
        "cpu: {sockets: 1, cores_per_socket: 32, threads_per_core: 2}\n    memory_gib: 512",
        "cpu: {sockets: 1, cores_per_socket: 1, threads_per_core: 2}\n    memory_gib: 512",
    ),
    ("gpu: {model: l40s, count: 4}", "gpu: {model: l40s, count: 2}"),
]


def test_a_job_asking_for_every_gpu_fits_nodes_with_fewer_cores_than_gpus(
    tmp_path: Path,
) -> None:
    """The per-GPU defaults (DefCpuPerGPU, DefMemPerGPU) times a node's GPUs must fit the
    node, or slurmctld refuses a job that asks for all of them and nothing else: with
    DefCpuPerGPU=2, 2 GPUs x 2 CPUs is more than the 2 CPUs of the node."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(edited((EXAMPLES / "edge-roce-2node.yaml").read_text(), *FEWER_CORES_THAN_GPUS))
    script = "set -e\nsrun -N2 --gres=gpu:l40s:2 bash -c 'echo $(hostname) $CUDA_VISIBLE_DEVICES'\n"
    result, left = run_to_end(tmp_path, spec, script)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == ["lab1 0,1", "lab2 0,1"]
    assert left == []
