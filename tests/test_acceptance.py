"""Acceptance jobs: rendered per partition, shellcheck-clean, thresholds from the hardware,
and their result parsers run on output in the tools' documented formats.

The fixtures under tests/data/acceptance/ follow nccl-tests' all_reduce_perf table
(size count type redop root, then time algbw busbw #wrong out-of-place and in-place)
and perftest's ib_write_bw --report_gbits report. Each parser is run through the
rendered script's own `--parse` entry, so the awk tested is the awk that ships.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from clustergen.render import render_all
from clustergen.spec.load import load_spec
from clustergen.validate import validate_cluster

from support.ci import skip_or_fail, tool
from support.paths import DATA, EXAMPLES, README

FIXTURES = DATA / "acceptance"
SPECS = {
    "ml": EXAMPLES / "ml-training-8node.yaml",
    "edge": EXAMPLES / "edge-roce-2node.yaml",
    "mixed": DATA / "mixed-fleet.yaml",
}


def _scripts(spec: Path, out: Path) -> dict[str, Path]:
    cluster, problems = validate_cluster(load_spec(str(spec)))
    assert cluster is not None, problems
    written = {}
    for path, artifact in render_all(cluster).items():
        if path.startswith("acceptance/"):
            target = out / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(artifact.text, encoding="utf-8")
            written[path] = target
    return written


def _run(script: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(script), *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_both_reference_specs_render_the_jobs(tmp_path: Path) -> None:
    ml = _scripts(SPECS["ml"], tmp_path / "ml")
    assert set(ml) == {
        f"acceptance/{partition}/{name}"
        for partition, names in {
            "gpu-training": (
                "nccl-allreduce.sbatch",
                "nccl-allreduce-2node.sbatch",
                "ib-rails.sbatch",
                "bisection.sbatch",
                "dcgm-diag.sbatch",
            ),
            "debug": ("nccl-allreduce.sbatch", "ib-rails.sbatch", "dcgm-diag.sbatch"),
        }.items()
        for name in names
    }
    edge = _scripts(SPECS["edge"], tmp_path / "edge")
    assert set(edge) == {
        "acceptance/gpu/nccl-allreduce.sbatch",
        "acceptance/gpu/ib-rails.sbatch",
        "acceptance/gpu/dcgm-diag.sbatch",
    }


@pytest.mark.parametrize("spec", sorted(SPECS))
def test_scripts_are_shellcheck_clean(spec: str, tmp_path: Path) -> None:
    shellcheck = tool("shellcheck")
    if shellcheck is None:
        skip_or_fail("needs shellcheck")
    scripts = sorted(_scripts(SPECS[spec], tmp_path).values())
    result = subprocess.run(
        [shellcheck, "--severity=style", *map(str, scripts)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout
    for script in scripts:
        assert "\nset -euo pipefail\n" in script.read_text(encoding="utf-8")


def test_thresholds_come_from_the_hardware_with_their_derivation(tmp_path: Path) -> None:
    ml = _scripts(SPECS["ml"], tmp_path / "ml")
    # debug's two nodes hang from one leaf: the HCAs set the bar.
    allreduce = ml["acceptance/debug/nccl-allreduce.sbatch"].read_text(encoding="utf-8")
    assert "BUSBW_THRESHOLD_GBYTES=${BUSBW_THRESHOLD_GBYTES:-150.0}" in allreduce
    assert (
        "8 compute HCAs (hgx-h100) x 200 Gb/s (infiniband hdr) = 1600 Gb/s = 200.0 GB/s per "
        "node; x busbw_fraction 0.75 = 150.0 GB/s" in allreduce
    )
    rails = ml["acceptance/gpu-training/ib-rails.sbatch"].read_text(encoding="utf-8")
    assert (
        "RAILS=(mlx5_0:1 mlx5_1:1 mlx5_2:1 mlx5_3:1 mlx5_4:1 mlx5_5:1 mlx5_6:1 mlx5_7:1)" in rails
    )
    assert "RAIL_THRESHOLD_GBITS=${RAIL_THRESHOLD_GBITS:-180.0}" in rails
    edge = _scripts(SPECS["edge"], tmp_path / "edge")
    roce = edge["acceptance/gpu/nccl-allreduce.sbatch"].read_text(encoding="utf-8")
    assert "2 compute HCAs (l40s-4gpu) x 100 Gb/s (roce 100g)" in roce
    mixed = _scripts(SPECS["mixed"], tmp_path / "mixed")
    fleet = mixed["acceptance/gpu-training/nccl-allreduce.sbatch"].read_text(encoding="utf-8")
    assert "4 compute HCAs (dgx-a100)" in fleet  # the slowest profile sets the bar
    debug = mixed["acceptance/debug/nccl-allreduce.sbatch"].read_text(encoding="utf-8")
    assert "\nexport NCCL_DEBUG=INFO  # slurm partition debug: nccl override\n" in debug


def test_cross_leaf_thresholds_come_from_the_fabric_as_drawn(tmp_path: Path) -> None:
    # gpu-training spans ib-leaf01 (gpu01-04, 32 HCA ports) and ib-leaf02, each with one
    # HDR uplink: the HCAs' 200 GB/s cannot cross a leaf, whatever the GPUs can do.
    ml = _scripts(SPECS["ml"], tmp_path / "ml")
    whole = ml["acceptance/gpu-training/nccl-allreduce.sbatch"].read_text(encoding="utf-8")
    assert "BUSBW_THRESHOLD_GBYTES=${BUSBW_THRESHOLD_GBYTES:-4.7}" in whole
    assert (
        "8 compute HCAs (hgx-h100) x 200 Gb/s (infiniband hdr) = 1600 Gb/s, but across "
        "switches ib-leaf01's 1 uplink x 200 Gb/s = 200 Gb/s (32:1 blocking), shared by the "
        "partition's 32 HCA ports under it: gpu01 (8 ports) gets 50.0 Gb/s = 6.2 GB/s per "
        "node; x busbw_fraction 0.75 = 4.7 GB/s" in whole
    )
    # Two nodes may land one under each leaf, each alone on its leaf's uplink.
    pair = ml["acceptance/gpu-training/nccl-allreduce-2node.sbatch"].read_text(encoding="utf-8")
    assert "BUSBW_THRESHOLD_GBYTES=${BUSBW_THRESHOLD_GBYTES:-18.8}" in pair
    assert "all for one node when the pair spans switches: 200.0 Gb/s = 25.0 GB/s" in pair


def test_non_blocking_uplinks_leave_the_hca_bound(tmp_path: Path) -> None:
    data = yaml.safe_load(SPECS["ml"].read_text(encoding="utf-8"))
    for switch in data["network"]["fabric"]["switches"][:2]:
        switch["uplinks"] = 43  # ib-leaf02's 43 HCA ports; ib-leaf01 has 32
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(data), encoding="utf-8")
    cluster, problems = validate_cluster(load_spec(str(spec)))
    assert cluster is not None, problems
    assert "network.leaf-oversubscribed" not in {p.code.name for p in problems}
    text = render_all(cluster)["acceptance/gpu-training/nccl-allreduce.sbatch"].text
    assert "BUSBW_THRESHOLD_GBYTES=${BUSBW_THRESHOLD_GBYTES:-150.0}" in text
    assert "= 1600 Gb/s, within ib-leaf01's uplinks = 200.0 GB/s per node" in text


def test_readme_says_what_ib_rails_runs_on_without_a_topology_table(tmp_path: Path) -> None:
    # The 8-node spec's GPU profile has no topology table: its rails are its fabric_hcas.
    ml = _scripts(SPECS["ml"], tmp_path)
    assert "acceptance/gpu-training/ib-rails.sbatch" in ml
    row = next(
        line
        for line in README.read_text(encoding="utf-8").splitlines()
        if line.startswith("| `hardware.<name>.topology` |")
    )
    assert "no per-rail" not in row, row
    assert "ib-rails" in row and "fabric_hcas" in row, row


# srun as the nodes see it: each task runs on its own node, whose /etc/nccl/job.env is the
# one rendered for its hardware profile (JOB_ENV points at it here). It records the
# environment srun itself was started with: what the batch node would export to all.
FAKE_SRUN = """#!/bin/bash
echo "srun NCCL_IB_HCA=${NCCL_IB_HCA-unset}" >>"$TASK_LOG"
while [[ "$1" == --* ]]; do shift; done
for node in $FAKE_NODES; do
  NODE=$node JOB_ENV="$NODE_FILES/$node/job.env" "$@" >"$NODE_FILES/$node.out"
done
cat "$NODE_FILES/${FAKE_NODES%% *}.out"
"""
FAKE_ALL_REDUCE = """#!/bin/bash
echo "$NODE NCCL_IB_HCA=${NCCL_IB_HCA-unset} NCCL_DEBUG=${NCCL_DEBUG-unset}" >>"$TASK_LOG"
cat "$STUB_FIXTURE"
"""


@pytest.mark.parametrize(
    ("partition", "nodes", "seen"),
    [
        (
            "gpu-training",
            {"gpu01": "hgx-h100", "gpu05": "dgx-a100"},
            [
                "gpu01 NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,"
                "mlx5_6:1,mlx5_7:1 NCCL_DEBUG=WARN",
                "gpu05 NCCL_IB_HCA==mlx5_0:1,mlx5_2:1,mlx5_6:1,mlx5_8:1 NCCL_DEBUG=WARN",
            ],
        ),
        # The partition's override wins over the node's file.
        (
            "debug",
            {"gpu01": "hgx-h100"},
            [
                "gpu01 NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,"
                "mlx5_6:1,mlx5_7:1 NCCL_DEBUG=INFO"
            ],
        ),
    ],
)
def test_allreduce_tasks_take_their_own_nodes_nccl_settings(
    tmp_path: Path, partition: str, nodes: dict[str, str], seen: list[str]
) -> None:
    cluster, problems = validate_cluster(load_spec(str(SPECS["mixed"])))
    assert cluster is not None, problems
    rendered = render_all(cluster)
    files = tmp_path / "nodes"
    for node, profile in nodes.items():
        (files / node).mkdir(parents=True)
        (files / node / "job.env").write_text(rendered[f"nccl/{profile}/job.env"].text)
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for name, text in (("srun", FAKE_SRUN), ("all_reduce_perf", FAKE_ALL_REDUCE)):
        (stubs / name).write_text(text)
        (stubs / name).chmod(0o755)
    script = tmp_path / "nccl-allreduce.sbatch"
    script.write_text(rendered[f"acceptance/{partition}/nccl-allreduce.sbatch"].text)
    log = tmp_path / "tasks.log"
    env = {
        "PATH": f"{stubs}:/usr/bin:/bin",
        "NCCL_TESTS_DIR": str(stubs),
        "SRUN_MPI": "pmix",  # the mixed spec's slurm.mpi is none: the site's plugin
        "STUB_FIXTURE": str(FIXTURES / "all_reduce_perf-pass.txt"),
        "TASK_LOG": str(log),
        "FAKE_NODES": " ".join(nodes),
        "NODE_FILES": str(files),
        "BUSBW_THRESHOLD_GBYTES": "150",
    }
    result = subprocess.run(
        ["bash", str(script)], env=env, capture_output=True, text=True, check=False, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # Nothing of a node's file reaches srun from the batch node; each task has its own.
    assert log.read_text().splitlines() == ["srun NCCL_IB_HCA=unset", *seen]


# Slurm and the tools for ib-rails, on one machine: scontrol lists the job's nodes, srun
# runs the command as if on --nodelist, ib_write_bw logs each call (the server's last
# argument is an option's value, the client's is the server) and sleep does not wait.
FAKE_RAIL_TOOLS = {
    "scontrol": '#!/bin/bash\nprintf "%s\\n" $FAKE_NODES\n',
    "srun": """#!/bin/bash
while [[ "$1" == --* ]]; do
  case "$1" in --nodelist=*) node=${1#--nodelist=} ;; esac
  shift
done
NODE=$node exec "$@"
""",
    "ib_write_bw": """#!/bin/bash
for last; do :; done
echo "$NODE $*" >>"$RAIL_LOG"
case "$last" in -*|[0-9]*) exit 0 ;; esac
cat "$STUB_FIXTURE"
""",
    "sleep": "#!/bin/sh\n",
}


@pytest.mark.parametrize("count", [2, 3, 6])
def test_ib_rails_tests_every_rail_of_every_node_with_the_nccl_gid_and_class(
    tmp_path: Path, count: int
) -> None:
    script = _scripts(SPECS["edge"], tmp_path / "edge")["acceptance/gpu/ib-rails.sbatch"]
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for name, text in FAKE_RAIL_TOOLS.items():
        (stubs / name).write_text(text)
        (stubs / name).chmod(0o755)
    nodes = [f"edge{n:02d}" for n in range(1, count + 1)]
    log = tmp_path / "rails.log"
    env = {
        "PATH": f"{stubs}:/usr/bin:/bin",
        "IB_WRITE_BW": str(stubs / "ib_write_bw"),
        "STUB_FIXTURE": str(FIXTURES / "ib_write_bw-pass.txt"),
        "RAIL_LOG": str(log),
        "FAKE_NODES": " ".join(nodes),
        "SLURM_JOB_NODELIST": ",".join(nodes),
    }
    result = subprocess.run(
        ["bash", str(script)], env=env, capture_output=True, text=True, check=False, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"PASS: all 2 rails of all {count} nodes" in result.stdout
    calls = [line.split() for line in log.read_text().splitlines()]
    # The GID index and traffic class of network.fabric.roce, as NCCL gets them.
    assert all("--gid-index=3" in call and "--tclass=106" in call for call in calls), calls
    ring = {(nodes[i], nodes[(i + 1) % count]) for i in range(count)}
    rails = {("mlx5_0", "1"), ("mlx5_1", "1")}
    clients = {(c[0], c[-1], c[c.index("-d") + 1], c[c.index("-i") + 1]) for c in calls}
    clients = {c for c in clients if c[1] in nodes}
    assert clients == {(a, b, hca, port) for a, b in ring for hca, port in rails}
    servers = sorted((c[0], c[c.index("-d") + 1]) for c in calls if c[-1] not in nodes)
    assert servers == sorted((b, hca) for _, b in ring for hca, _ in rails)
    assert result.stdout.count("PASS edge") == len(ring) * len(rails)


@pytest.fixture
def allreduce(tmp_path: Path) -> Path:
    # Two nodes on one leaf: the threshold is the HCAs' 150 GB/s the fixtures are made for.
    return _scripts(SPECS["ml"], tmp_path)["acceptance/debug/nccl-allreduce.sbatch"]


@pytest.fixture
def ib_rails(tmp_path: Path) -> Path:
    return _scripts(SPECS["ml"], tmp_path)["acceptance/gpu-training/ib-rails.sbatch"]


def test_allreduce_parser_passes_good_output(allreduce: Path) -> None:
    result = _run(allreduce, "--parse", FIXTURES / "all_reduce_perf-pass.txt")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["PASS"] * 5 + ["PASS:"]
    assert lines[0] == "PASS size 536870912 B: busbw 315.32 GB/s, threshold 150.00 GB/s"
    assert lines[-1] == "PASS: all 5 sizes at or above 150.00 GB/s"


def test_allreduce_parser_fails_a_slow_size(allreduce: Path) -> None:
    result = _run(allreduce, "--parse", FIXTURES / "all_reduce_perf-fail.txt")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "FAIL size 2147483648 B: busbw 131.44 GB/s, threshold 150.00 GB/s" in result.stdout
    assert result.stdout.count("PASS size") == 4
    assert result.stdout.splitlines()[-1] == "FAIL: 1 of 5 sizes below 150.00 GB/s or wrong"


def test_allreduce_parser_rejects_output_without_results(allreduce: Path) -> None:
    result = _run(allreduce, "--parse", FIXTURES / "all_reduce_perf-malformed.txt")
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == "MALFORMED: no result rows in the all_reduce_perf output\n"


def test_allreduce_parser_fails_wrong_results(allreduce: Path, tmp_path: Path) -> None:
    text = (FIXTURES / "all_reduce_perf-pass.txt").read_text(encoding="utf-8")
    wrong = tmp_path / "wrong.txt"
    wrong.write_text(text.replace("322.66      0", "322.66      3"), encoding="utf-8")
    result = _run(allreduce, "--parse", wrong)
    assert result.returncode == 1
    assert "FAIL size 8589934592 B: busbw 322.63 GB/s, threshold 150.00 GB/s, wrong results" in (
        result.stdout
    )


@pytest.mark.parametrize(
    ("fixture", "code", "line"),
    [
        ("ib_write_bw-pass.txt", 0, "PASS mlx5_3:1: 193.42 Gb/s"),
        ("ib_write_bw-fail.txt", 1, "FAIL mlx5_3:1: 88.17 Gb/s below 180.00 Gb/s"),
        ("ib_write_bw-malformed.txt", 2, "MALFORMED mlx5_3:1: no result row under a Gb/sec header"),
    ],
)
def test_rail_parser(ib_rails: Path, fixture: str, code: int, line: str) -> None:
    result = _run(ib_rails, "--parse", "mlx5_3:1", FIXTURES / fixture)
    assert result.returncode == code, result.stdout + result.stderr
    assert result.stdout.splitlines() == [line]
