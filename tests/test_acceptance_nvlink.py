"""Acceptance on multi-node NVLink domains (issue 24): per domain, an all-reduce over all its
trays judged against NVLink bandwidth (not the HCAs) with NCCL held to multi-node NVLink,
and a check that every GPU of the domain is in the NVLink fabric, in one clique. The scripts
run on stand-ins for srun, scontrol, all_reduce_perf and nvidia-smi that log their calls."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from clustergen.render import render_all
from clustergen.spec.load import LoadedSpec
from clustergen.validate import validate_cluster

from support.ci import skip_or_fail, tool
from support.paths import DATA, EXAMPLES, INVALID

Data = dict[str, Any]
GRACE: Data = yaml.safe_load((DATA / "grace-mixed.yaml").read_text())


def _two_racks() -> Data:
    """Two racks of 4 B200 trays, one NVLink domain per rack by default."""
    data: Data = yaml.safe_load((INVALID / "nvlink-domain-too-big.yaml").read_text())
    del data["network"]["nvlink_domains"]
    return data


def _rendered(data: Data) -> dict[str, str]:
    cluster, problems = validate_cluster(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))
    assert cluster is not None, [p.format() for p in problems]
    errors = [p.format() for p in problems if p.code.severity == "error"]
    assert not errors, errors
    return {path: a.text for path, a in render_all(cluster).items()}


def _line(text: str, start: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(start))


def test_each_domain_gets_both_jobs_over_all_its_trays() -> None:
    files = _rendered(_two_racks())
    nvlink = sorted(p for p in files if "/nvlink-" in p)
    assert nvlink == [
        "acceptance/gpu/nvlink-allreduce-nvl1.sbatch",
        "acceptance/gpu/nvlink-allreduce-nvl2.sbatch",
        "acceptance/gpu/nvlink-fabric-nvl1.sbatch",
        "acceptance/gpu/nvlink-fabric-nvl2.sbatch",
    ]
    for domain, trays in (("nvl1", "gb[1-4]"), ("nvl2", "gb[5-8]")):
        for kind in ("allreduce", "fabric"):
            text = files[f"acceptance/gpu/nvlink-{kind}-{domain}.sbatch"]
            assert _line(text, "#SBATCH --nodelist=") == f"#SBATCH --nodelist={trays}"
            assert _line(text, "#SBATCH --nodes=") == "#SBATCH --nodes=4"
            assert _line(text, "#SBATCH --gpus-per-node=") == "#SBATCH --gpus-per-node=4"


@pytest.mark.parametrize(
    ("model", "fraction", "mark"), [("GB200", None, "675.0"), ("gb300", 0.8, "720.0")]
)
def test_the_pass_mark_is_nvlink_bandwidth_not_the_hcas(
    model: str, fraction: float | None, mark: str
) -> None:
    data = copy.deepcopy(GRACE)
    data["hardware"]["gb200-tray"]["gpu"]["model"] = model
    if model == "gb300":  # Blackwell Ultra (sm_103) needs CUDA 12.9 and its driver
        data["software"].update(cuda="12.9.1", nvidia_driver="575.57.08")
    if fraction is not None:
        data["nccl"] = {"acceptance": {"busbw_fraction": fraction}}
    text = _rendered(data)["acceptance/gpu/nvlink-allreduce-nvl1.sbatch"]
    assert _line(text, "BUSBW_THRESHOLD_GBYTES=") == (
        f"BUSBW_THRESHOLD_GBYTES=${{BUSBW_THRESHOLD_GBYTES:-{mark}}}"
    )
    why = _line(text, 'echo "Threshold: ')
    assert "1.8 TB/s per GPU both ways" in why and "= 900 GB/s each way" in why
    assert f"x busbw_fraction {fraction or 0.75} = {mark} GB/s" in why


def test_without_nvlink_domains_there_are_no_nvlink_jobs() -> None:
    data = copy.deepcopy(GRACE)
    del data["hardware"]["gb200-tray"]["gpu"]["nvlink_domain"]
    assert not [p for p in _rendered(data) if "nvlink" in p]


# srun runs the command once per node of the job (--nodelist, else FAKE_NODES), at once,
# with NODE set, ignoring its options; all_reduce_perf logs the NCCL settings it got and
# prints a table at BUSBW GB/s; nvidia-smi -q prints NODE's GPUs with the fabric state,
# status and clique the FABRIC_<node> variables give (Completed, Success, 7 by default).
SCONTROL = f"""#!{sys.executable}
import sys
import hostlist
print("\\n".join(hostlist.expand_hostlist(sys.argv[-1])))
"""
STUBS = {
    "srun": """#!/bin/bash
list=$FAKE_NODES
while [[ "$1" == -* ]]; do
  case "$1" in --nodelist=*) list=${1#--nodelist=} ;; esac
  shift
done
for node in $(scontrol show hostnames "$list"); do
  NODE=$node "$@" &
done
wait
""",
    "all_reduce_perf": """#!/bin/bash
echo "$NODE MNNVL=${NCCL_MNNVL_ENABLE:-unset} IB_DISABLE=${NCCL_IB_DISABLE:-unset}" >>"$TASK_LOG"
[[ "$NODE" == "${FIRST:-}" ]] || exit 0
echo "#  size  count  type  redop  root  time  algbw  busbw #wrong  time  algbw  busbw #wrong"
for size in 536870912 1073741824 2147483648 4294967296 8589934592; do
  echo "  $size $((size / 4)) float sum -1 1000 400.00 $BUSBW 0 1000 400.00 $BUSBW 0"
done
""",
    "nvidia-smi": """#!/bin/bash
spec=FABRIC_${NODE}
IFS=, read -r state status clique <<<"${!spec:-Completed,Success,7}"
for gpu in 01 02 03 04; do
  printf 'GPU 00000009:%s:00.0\\n    Product Name                          : NVIDIA GB200\\n' "$gpu"
  printf '    Fabric\\n        State                             : %s\\n' "$state"
  printf '        Status                            : %s\\n' "$status"
  printf '        CliqueId                          : %s\\n' "$clique"
  printf '        ClusterUUID                       : 5c4f-abcd\\n'
  printf '        Health\\n            Bandwidth                     : Full\\n'
  printf '    Processes                             : None\\n\\n'
done
""",
}


def _run(script: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    stubs = tmp_path / "bin"
    stubs.mkdir(exist_ok=True)
    for name, text in {**STUBS, "scontrol": SCONTROL}.items():
        (stubs / name).write_text(text)
        (stubs / name).chmod(0o755)
    path = tmp_path / "job.sbatch"
    path.write_text(script)
    base = {
        "PATH": f"{stubs}:/usr/bin:/bin",
        "PYTHONPATH": ":".join(sys.path),
        "NCCL_TESTS_DIR": str(stubs),
        "SLURM_JOB_NODELIST": "gb[1-4]",
        "FAKE_NODES": "gb[1-4]",
        "FIRST": "gb1",
        "TASK_LOG": str(tmp_path / "tasks.log"),
        "TMPDIR": str(tmp_path),
    }
    return subprocess.run(
        ["bash", str(path)], env={**base, **env}, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(("busbw", "rc"), [("805.10", 0), ("190.00", 1)])
def test_the_allreduce_holds_nccl_to_nvlink_and_fails_at_network_speed(
    tmp_path: Path, busbw: str, rc: int
) -> None:
    data = copy.deepcopy(GRACE)
    data["slurm"]["mpi"] = "pmix"  # the job then starts its ranks with srun --mpi=pmix
    script = _rendered(data)["acceptance/gpu/nvlink-allreduce-nvl1.sbatch"]
    assert "\nSRUN_MPI=${SRUN_MPI:-pmix}\n" in script
    # A node's job.env that turns multi-node NVLink off loses to the job's own settings.
    job_env = tmp_path / "job.env"
    job_env.write_text("export NCCL_MNNVL_ENABLE=0\nexport NCCL_IB_DISABLE=0\n")
    result = _run(script, tmp_path, BUSBW=busbw, JOB_ENV=str(job_env))
    assert result.returncode == rc, result.stdout + result.stderr
    verdict = result.stdout.splitlines()[-1]
    if rc == 0:
        assert verdict == "PASS: all 5 sizes at or above 675.00 GB/s"
    else:  # 4 NDR HCAs' worth of busbw: what a fallback to the network could reach
        assert verdict == "FAIL: 5 of 5 sizes below 675.00 GB/s or wrong"
    tasks = sorted((tmp_path / "tasks.log").read_text().splitlines())
    assert tasks == [f"gb{n} MNNVL=1 IB_DISABLE=1" for n in range(1, 5)]


@pytest.mark.parametrize("script", ["nccl-allreduce.sbatch", "nccl-allreduce-2node.sbatch"])
def test_the_hca_allreduce_keeps_nccl_off_multi_node_nvlink(tmp_path: Path, script: str) -> None:
    """The partition's all-reduce jobs are judged against the HCAs; on trays of one NVLink
    domain NCCL would meet over NVLink and pass whatever the HCAs do (an independent domain
    review found the GB200 two-node job measuring NVLink). A node's job.env that turns it
    on loses to the job's own setting; NCCL_IB_DISABLE is left as the node has it."""
    data: Data = yaml.safe_load((EXAMPLES / "gb200-nvl72-4rack.yaml").read_text())
    data["slurm"]["mpi"] = "pmix"
    files = _rendered(data)
    text = files[f"acceptance/gpu/{script}"]
    job_env = tmp_path / "job.env"
    job_env.write_text("export NCCL_MNNVL_ENABLE=1\n")
    threshold = _line(text, "BUSBW_THRESHOLD_GBYTES=").split(":-")[1].rstrip("}")
    nodes = {"SLURM_JOB_NODELIST": "gb[001-002]", "FAKE_NODES": "gb[001-002]", "FIRST": "gb001"}
    result = _run(text, tmp_path, BUSBW=threshold, JOB_ENV=str(job_env), **nodes)
    assert result.returncode == 0, result.stdout + result.stderr
    tasks = set((tmp_path / "tasks.log").read_text().splitlines())
    assert {task.split(" ", 1)[1] for task in tasks} == {"MNNVL=0 IB_DISABLE=unset"}


def test_without_nvlink_domains_the_hca_allreduce_sets_nothing() -> None:
    data: Data = yaml.safe_load((DATA / "mixed-fleet.yaml").read_text())
    files = _rendered(data)
    jobs = [text for path, text in files.items() if path.endswith("/nccl-allreduce.sbatch")]
    assert jobs and not [text for text in jobs if "NCCL_MNNVL_ENABLE" in text]


@pytest.mark.parametrize(
    ("fabric", "rc", "fails"),
    [
        ({}, 0, []),
        (
            {"FABRIC_gb3": "Completed,Success,9"},
            1,
            [
                f"FAIL gb3 GPU 00000009:{g}:00.0: ClusterUUID 5c4f-abcd, "
                "CliqueId 9, the domain ClusterUUID 5c4f-abcd, CliqueId 7"
                for g in ("01", "02", "03", "04")
            ],
        ),
        (
            {"FABRIC_gb2": "In Progress,N/A,7"},
            1,
            [
                f"FAIL gb2 GPU 00000009:{g}:00.0: fabric State In Progress, Status N/A "
                "(wanted Completed, Success)"
                for g in ("01", "02", "03", "04")
            ],
        ),
    ],
)
def test_the_fabric_check_wants_every_gpu_registered_in_one_clique(
    tmp_path: Path, fabric: dict[str, str], rc: int, fails: list[str]
) -> None:
    script = _rendered(copy.deepcopy(GRACE))["acceptance/gpu/nvlink-fabric-nvl1.sbatch"]
    result = _run(script, tmp_path, **fabric)
    assert result.returncode == rc, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert [line for line in lines if line.startswith("FAIL ")] == fails
    assert sum(line.startswith("FABRIC gb") for line in lines) == 16
    if rc == 0:
        assert lines[-1] == ("PASS: 4 trays, 16 GPUs, all in ClusterUUID 5c4f-abcd, CliqueId 7")


def test_a_tray_without_fabric_output_fails(tmp_path: Path) -> None:
    script = _rendered(copy.deepcopy(GRACE))["acceptance/gpu/nvlink-fabric-nvl1.sbatch"]
    report = tmp_path / "report.txt"
    lines = [f"FABRIC gb1|0000000{g}:01:00.0|Completed|Success|u|7" for g in range(4)]
    report.write_text("\n".join([*lines, "FABRIC gb2|-|||||", ""]))
    (tmp_path / "job.sbatch").write_text(script)
    result = subprocess.run(
        ["bash", str(tmp_path / "job.sbatch"), "--parse", str(report)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "FAIL gb2: no GPU in its nvidia-smi -q output",
        "FAIL gb2: 0 GPUs in the fabric, wanted 4",
        "FAIL: 2 problems on the NVLink fabric",
    ]


def test_the_nvlink_scripts_are_shellcheck_clean(tmp_path: Path) -> None:
    shellcheck = tool("shellcheck")
    if shellcheck is None:
        skip_or_fail("needs shellcheck")
    files = _rendered(_two_racks())
    scripts = []
    for path in ("nvlink-allreduce-nvl1.sbatch", "nvlink-fabric-nvl2.sbatch"):
        target = tmp_path / path
        target.write_text(files[f"acceptance/gpu/{path}"])
        scripts.append(str(target))
    result = subprocess.run(
        [shellcheck, "--severity=style", *scripts], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout
