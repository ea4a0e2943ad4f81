"""Acceptance jobs on the fabric as drawn (issue 23): the all-reduce pass mark through a rail
leaf's uplinks to several spines, the rail job's pairs on a leaf and across leaves, and the
bisection job's pass mark from the least cut between its halves. The scripts run on stand-ins
for Slurm and perftest that log every call, so the pairs asserted are the pairs the job runs.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clustergen.model.common import expand_hostlist
from clustergen.render import render_all
from clustergen.spec.load import LoadedSpec
from clustergen.spec.long_form import expand
from clustergen.validate import validate_cluster

from support.ci import skip_or_fail, tool
from support.paths import DATA
from support.specs import example_data

FIXTURES = DATA / "acceptance"
Data = dict[str, Any]
SERVICE = {"name": "service", "nodes": "slurm-head,mds01,oss[01-04]", "uplinks": 2}
RAILS = {
    "rails": 8,
    "units": "su[1-2]",
    "nodes": "gpu[01-08]",
    "leaf": "{unit}-leaf{rail}",
    "spines": "spine[1-2]",
    "uplinks": 2,
}


def _rail_spec(uplinks: int = 2) -> Data:
    """The 8-node reference spec on 8 rails: 2 units of 4 nodes, each rail leaf up to both
    spines with `uplinks` cables, the service nodes on a leaf under the spines too."""
    data = example_data()
    data["network"]["fabric"]["switches"] = [{**RAILS, "uplinks": uplinks}, SERVICE]
    out = expand(data)
    assert not out.errors and not out.problems, (out.errors, out.problems)
    data = out.data
    for switch in data["network"]["fabric"]["switches"]:
        if switch["name"].startswith("spine"):
            switch["switches"] += ",service"
    return data


def _three_tiers() -> Data:
    """Four leaves of two GPU nodes, two spines of two leaves each, one core over both
    spines: the leaves go up with 2 cables, the spines with 1, so the spines' uplinks are
    the narrowest cut between gpu[01-04] and gpu[05-08]."""
    data = example_data()
    data["network"]["fabric"]["switches"] = [
        {"name": f"leaf{n}", "nodes": f"gpu[{2 * n - 1:02d}-{2 * n:02d}]", "uplinks": 2}
        for n in range(1, 5)
    ] + [
        {**SERVICE, "uplinks": 2},
        {"name": "spine1", "switches": "leaf[1-2]"},
        {"name": "spine2", "switches": "leaf[3-4],service"},
        {"name": "core1", "switches": "spine[1-2]"},
    ]
    return data


def _uneven() -> Data:
    """Leaves of 3, 2 and 3 GPU nodes under one spine: units of different sizes."""
    data = example_data()
    data["network"]["fabric"]["switches"] = [
        {"name": "leaf1", "nodes": "gpu[01-03]", "uplinks": 24},
        {"name": "leaf2", "nodes": "gpu[04-05]", "uplinks": 16},
        {"name": "leaf3", "nodes": "gpu[06-08]", "uplinks": 24},
        {**SERVICE, "uplinks": 2},
        {"name": "spine1", "switches": "leaf[1-3],service"},
    ]
    return data


def _rendered(data: Data) -> dict[str, str]:
    cluster, problems = validate_cluster(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))
    assert cluster is not None, [p.format() for p in problems]
    return {path: a.text for path, a in render_all(cluster).items() if "acceptance/" in path}


def _threshold(text: str, name: str) -> str:
    line = next(line for line in text.splitlines() if line.startswith(f"{name}=${{{name}:-"))
    return line.removeprefix(f"{name}=${{{name}:-").removesuffix("}")


def test_a_rail_leaf_under_two_spines_shares_all_its_uplinks() -> None:
    # Each rail leaf: 4 nodes' HCAs, 2 cables to each of 2 spines: 4 uplinks, non-blocking.
    whole = _rendered(_rail_spec())["acceptance/gpu-training/nccl-allreduce.sbatch"]
    assert _threshold(whole, "BUSBW_THRESHOLD_GBYTES") == "150.0"
    assert "1600 Gb/s, within su1-leaf1's uplinks = 200.0 GB/s per node" in whole
    # 1 cable to each spine: 2 uplinks for 4 HCA ports, per rail, on each of 8 rails.
    blocked = _rendered(_rail_spec(uplinks=1))["acceptance/gpu-training/nccl-allreduce.sbatch"]
    assert _threshold(blocked, "BUSBW_THRESHOLD_GBYTES") == "75.0"
    assert (
        "but across switches su1-leaf1's 2 uplinks x 200 Gb/s = 400 Gb/s (2:1 blocking), "
        "shared by 4 HCA ports: gpu01 (1 port) gets 100.0 Gb/s there, 800.0 Gb/s over its 8 "
        "leaves = 100.0 GB/s per node; x busbw_fraction 0.75 = 75.0 GB/s" in blocked
    )


def test_the_rail_job_knows_the_units_and_the_cross_leaf_share() -> None:
    rails = _rendered(_rail_spec(uplinks=1))["acceptance/gpu-training/ib-rails.sbatch"]
    assert "UNITS=(\n  'gpu[01-04]'\n  'gpu[05-08]'\n)" in rails
    assert _threshold(rails, "RAIL_THRESHOLD_GBITS") == "180.0"
    # 4 nodes of a unit send across at once through a rail leaf's 2 uplinks.
    assert _threshold(rails, "CROSS_THRESHOLD_GBITS") == "90.0"
    assert "200 Gb/s x 2/4 x rail_fraction 0.9 = 90.0 Gb/s per rail" in rails
    unblocked = _rendered(_rail_spec())["acceptance/gpu-training/ib-rails.sbatch"]
    assert _threshold(unblocked, "CROSS_THRESHOLD_GBITS") == "180.0"
    # debug's two nodes share their leaves: no pair across leaves, no bisection.
    debug = _rendered(_rail_spec())
    assert "UNITS=(\n  'gpu[01-02]'\n)" in debug["acceptance/debug/ib-rails.sbatch"]
    assert "acceptance/debug/bisection.sbatch" not in debug


@pytest.mark.parametrize(
    ("data", "threshold", "why"),
    [
        # One HDR uplink out of ib-leaf01: 200 Gb/s for 4 x 8 flows.
        (example_data(), "180.0", "but the 1 cable out of the senders' leaves (ib-leaf01)"),
        (_rail_spec(), "5760.0", "within the senders' 32 HCA ports x 200 Gb/s = 6400 Gb/s"),
        (
            _rail_spec(uplinks=1),
            "2880.0",
            "but the 16 cables out of the senders' leaves (su1-leaf[1-8]) x 200 Gb/s",
        ),
        # The leaves' 4 uplinks reach spine1, whose 1 cable to the core is the cut.
        (
            _three_tiers(),
            "180.0",
            "but the 1 cable out of the senders' leaves and spines (leaf[1-2],spine1)",
        ),
    ],
    ids=["reference", "rails", "rails-blocking", "three-tiers"],
)
def test_the_bisection_pass_mark_is_the_least_cut(data: Data, threshold: str, why: str) -> None:
    text = _rendered(data)["acceptance/gpu-training/bisection.sbatch"]
    assert _threshold(text, "BISECTION_THRESHOLD_GBITS") == threshold
    assert why in text
    assert "SENDERS='gpu[01-04]'\nRECEIVERS='gpu[05-08]'\n" in text


def test_the_scripts_are_shellcheck_clean(tmp_path: Path) -> None:
    shellcheck = tool("shellcheck")
    if shellcheck is None:
        skip_or_fail("needs shellcheck")
    scripts = []
    for index, data in enumerate((_rail_spec(), _three_tiers(), _uneven())):
        for path, text in _rendered(data).items():
            target = tmp_path / str(index) / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            scripts.append(str(target))
    result = subprocess.run(
        [shellcheck, "--severity=style", *scripts], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout


# Slurm and perftest on one machine. scontrol expands a hostlist as Slurm does; srun runs
# the command once per node of --nodelist, at once, with NODE and SLURMD_NODENAME set;
# sbcast copies; ib_write_bw logs each call (a server's last argument is an option's
# value, a client's the server) and a client prints STUB_FIXTURE; sleep does not wait.
SCONTROL = f"""#!{sys.executable}
import sys
import hostlist
print("\\n".join(hostlist.expand_hostlist(sys.argv[-1])))
"""
TOOLS = {
    "srun": """#!/bin/bash
while [[ "$1" == --* ]]; do
  case "$1" in --nodelist=*) list=${1#--nodelist=} ;; esac
  shift
done
case "$list" in *[],[]*) nodes=$(scontrol show hostnames "$list") ;; *) nodes=$list ;; esac
for node in $nodes; do
  NODE=$node SLURMD_NODENAME=$node "$@" &
done
wait
""",
    "sbcast": '#!/bin/bash\ncp "$2" "$3"\n',
    "ib_write_bw": """#!/bin/bash
for last; do :; done
echo "$NODE $*" >>"$RAIL_LOG"
case "$last" in -*|[0-9]*) exit 0 ;; esac
cat "$STUB_FIXTURE"
""",
    "sleep": "#!/bin/sh\n",
}


def _run(script: str, tmp_path: Path, fixture: str = "ib_write_bw-pass.txt") -> tuple[Any, Path]:
    stubs = tmp_path / "bin"
    stubs.mkdir(parents=True)
    for name, text in {**TOOLS, "scontrol": SCONTROL}.items():
        (stubs / name).write_text(text)
        (stubs / name).chmod(0o755)
    path = tmp_path / "job.sbatch"
    path.write_text(script)
    log = tmp_path / "calls.log"
    env = {
        "PATH": f"{stubs}:/usr/bin:/bin",
        "PYTHONPATH": ":".join(sys.path),
        "IB_WRITE_BW": str(stubs / "ib_write_bw"),
        "STUB_FIXTURE": str(FIXTURES / fixture),
        "RAIL_LOG": str(log),
        "SLURM_JOB_ID": "1",
        "TMPDIR": str(tmp_path),
    }
    result = subprocess.run(
        ["bash", str(path)], env=env, capture_output=True, text=True, check=False, timeout=120
    )
    return result, log


def _ring(nodes: list[str]) -> set[tuple[str, str]]:
    return {(nodes[i], nodes[(i + 1) % len(nodes)]) for i in range(len(nodes))}


@pytest.mark.parametrize(
    ("data", "groups"),
    [
        (_rail_spec(), ["gpu[01-04]", "gpu[05-08]"]),
        (_uneven(), ["gpu[01-03]", "gpu[04-05]", "gpu[06-08]"]),
        (_three_tiers(), ["gpu[01-02]", "gpu[03-04]", "gpu[05-06]", "gpu[07-08]"]),
    ],
    ids=["rails", "uneven", "three-tiers"],
)
def test_the_rail_job_pairs_every_node_on_its_leaves_and_across(
    tmp_path: Path, data: Data, groups: list[str]
) -> None:
    script = _rendered(data)["acceptance/gpu-training/ib-rails.sbatch"]
    result, log = _run(script, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    units = [list(expand_hostlist(group)) for group in groups]
    calls = [line.split() for line in log.read_text().splitlines()]
    clients = [c for c in calls if c[-1].startswith("gpu")]
    pairs = {(c[0], c[-1]) for c in clients}
    within = set().union(*(_ring(unit) for unit in units))
    across = set()
    for u, unit in enumerate(units):
        other = units[(u + 1) % len(units)]
        across |= {
            (unit[k % len(unit)], other[k % len(other)]) for k in range(max(len(unit), len(other)))
        }
    assert pairs == within | across
    # Every node sends and receives on its leaves and across them, on every rail.
    assert (
        {a for a, _ in across}
        == {b for _, b in across}
        == {node for unit in units for node in unit}
    )
    assert len(clients) == 8 * len(pairs)
    assert "PASS: all 8 rails of all 8 nodes at or above 180.0 Gb/s on their leaves" in (
        result.stdout
    )


def test_the_rail_job_names_a_slow_rail_across_leaves(tmp_path: Path) -> None:
    script = _rendered(_rail_spec(uplinks=1))["acceptance/gpu-training/ib-rails.sbatch"]
    # 88.17 Gb/s: below the 90 Gb/s across leaves, and below 180 Gb/s on a leaf.
    result, _ = _run(script, tmp_path, "ib_write_bw-fail.txt")
    assert result.returncode == 1
    assert "FAIL gpu04>gpu08 mlx5_0:1: 88.17 Gb/s below 90.00 Gb/s" in result.stdout
    assert "FAIL gpu01>gpu02 mlx5_0:1: 88.17 Gb/s below 180.00 Gb/s" in result.stdout


def test_the_bisection_job_runs_every_rail_of_every_pair_at_once(tmp_path: Path) -> None:
    script = _rendered(_rail_spec())["acceptance/gpu-training/bisection.sbatch"]
    result, log = _run(script, tmp_path)
    # 32 flows of 193.42 Gb/s: 6189.44 Gb/s, above 5760.
    assert result.returncode == 0, result.stdout + result.stderr
    assert "PASS: 32 flows, 6189.44 Gb/s in all, at or above 5760.00 Gb/s" in result.stdout
    calls = [line.split() for line in log.read_text().splitlines()]
    clients = {(c[0], c[-1], c[c.index("-d") + 1], c[c.index("-p") + 1]) for c in calls}
    clients = {c for c in clients if c[1].startswith("gpu")}
    senders = [f"gpu0{n}" for n in range(1, 5)]
    expected = {
        (node, f"gpu0{n + 4}", f"mlx5_{rail}", str(18515 + rail))
        for n, node in enumerate(senders, start=1)
        for rail in range(8)
    }
    assert clients == expected
    servers = {(c[0], c[c.index("-p") + 1]) for c in calls if not c[-1].startswith("gpu")}
    assert servers == {(f"gpu0{n}", str(18515 + rail)) for n in range(5, 9) for rail in range(8)}


def test_the_bisection_job_fails_below_the_cut_and_on_unreadable_flows(tmp_path: Path) -> None:
    script = _rendered(_rail_spec())["acceptance/gpu-training/bisection.sbatch"]
    result, _ = _run(script, tmp_path / "slow", "ib_write_bw-fail.txt")
    assert result.returncode == 1
    assert "FAIL: 32 flows, 2821.44 Gb/s in all, below 5760.00 Gb/s" in result.stdout
    result, _ = _run(script, tmp_path / "bad", "ib_write_bw-malformed.txt")
    assert result.returncode == 2
    assert "MALFORMED gpu01>gpu05 mlx5_0:1" in result.stdout
    assert "MALFORMED: 32 of 32 flows unreadable" in result.stdout


def test_a_spine_shares_its_uplinks_only_with_the_traffic_that_reaches_it() -> None:
    # leaf1-2 (gpu01-04) each go up to spine1 and spine2 with 2 cables; leaf3-4 likewise to
    # spine3 and spine4; each spine has 1 cable to the core. A leaf sends half of its 16
    # HCA ports' traffic to each spine: spine1 takes 8 + 8 = 16 ports' worth on 1 uplink.
    data = example_data()
    data["network"]["fabric"]["switches"] = [
        {"name": f"leaf{n}", "nodes": f"gpu[{2 * n - 1:02d}-{2 * n:02d}]", "uplinks": 2}
        for n in range(1, 5)
    ] + [
        {**SERVICE, "uplinks": 2},
        {"name": "spine1", "switches": "leaf[1-2]"},
        {"name": "spine2", "switches": "leaf[1-2]"},
        {"name": "spine3", "switches": "leaf[3-4],service"},
        {"name": "spine4", "switches": "leaf[3-4],service"},
        {"name": "core1", "switches": "spine[1-4]"},
    ]
    whole = _rendered(data)["acceptance/gpu-training/nccl-allreduce.sbatch"]
    assert (
        "but across switches spine1's 1 uplink x 200 Gb/s = 200 Gb/s (4:1 blocking), shared "
        "by the partition's 16 HCA ports under it: gpu01 (8 ports) gets 100.0 Gb/s = 12.5 GB/s "
        "per node; x busbw_fraction 0.75 = 9.4 GB/s" in whole
    )
