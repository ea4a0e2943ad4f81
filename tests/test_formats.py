"""`--format github` and `--format json` against committed expected output.

The expected files hold what `clustergen validate --format F <case>` prints on
standard output for a few invalid cases (one with warnings), with the directory
of the case removed; tests/regen.py refreshes them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clustergen.base.codes import SLURM_UNKNOWN_NODE
from clustergen.base.errors import LocatedProblem, Position
from clustergen.base.report import github_line

from support.paths import EXAMPLES, INVALID, REPO
from support.regen import check_current

FORMATS_DIR = REPO / "tests" / "formats"
CASES = ["driver-below-cuda-minimum", "several-shape-problems", "accounting-dropped"]


@pytest.mark.parametrize("output_format", ["github", "json"])
@pytest.mark.parametrize("case", CASES)
def test_format_output(cli, case: str, output_format: str, update_golden: bool) -> None:  # type: ignore[no-untyped-def]
    spec = INVALID / f"{case}.yaml"
    result = cli("validate", "--format", output_format, str(spec))
    assert result.code == 1
    assert result.err == ""  # no summary line outside the text format
    output = result.out.replace(f"{spec.parent}/", "")
    check_current(FORMATS_DIR / f"{case}.{output_format}", output, update_golden)


def test_json_is_in_the_text_order(cli) -> None:  # type: ignore[no-untyped-def]
    spec = INVALID / "accounting-dropped.yaml"
    text = cli("validate", str(spec)).err.splitlines()[:-1]
    records = json.loads(cli("validate", "--format", "json", str(spec)).out)
    assert [f"{r['line']}:{r['column']}" for r in records] == [
        line.split(":", 3)[1] + ":" + line.split(":", 3)[2] for line in text
    ]


def test_valid_spec_is_an_empty_array(cli) -> None:  # type: ignore[no-untyped-def]
    # Its warnings (no GPU topology table, Slurm 24.11 past its end of support, SchedMD's
    # packages from no named repository, no nccl-tests release to build, no PMIx for it,
    # no NVIDIA repository, an HCA without an address, host QoS without mlnx_qos) are
    # ignored: nothing else is left.
    spec = str(EXAMPLES / "edge-roce-2node.yaml")
    ignored = [
        *("--ignore", "hardware.topology-missing"),
        *("--ignore", "nccl.tests-not-built"),
        *("--ignore", "nccl.tests-without-pmix"),
        *("--ignore", "software.slurm-end-of-support"),
        *("--ignore", "software.slurm-schedmd-without-repository"),
        *("--ignore", "software.nvidia-repository-missing"),
        *("--ignore", "network.roce-hca-without-address"),
        *("--ignore", "rdma.roce-qos-without-mlnx-qos"),
    ]
    result = cli("validate", "--format", "json", *ignored, spec)
    assert (result.code, json.loads(result.out), result.err) == (0, [], "")


def test_render_prints_problems_as_json(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spec = INVALID / "driver-below-cuda-minimum.yaml"
    result = cli("render", "--format", "json", str(spec), "-o", str(tmp_path / "out"))
    assert result.code == 1
    assert [r["code"] for r in json.loads(result.out)] == [
        "nccl.tests-not-built",
        "software.driver-below-cuda-minimum",
        "software.nvidia-repository-missing",
        "software.slurm-end-of-support",
        "software.slurm-schedmd-without-repository",
        "network.subnet-manager-unset",
        "nccl.tests-without-pmix",
    ]
    assert not (tmp_path / "out").exists()


def test_github_escaping() -> None:
    problem = LocatedProblem(
        "dir,with:odd%name.yaml",
        Position(3, 7),
        ("slurm", "partitions", 0, "nodes"),
        "50% done\r\nnext line, with: colon",
        SLURM_UNKNOWN_NODE,
    )
    assert github_line(problem) == (
        "::error file=dir%2Cwith%3Aodd%25name.yaml,line=3,col=7,title=slurm.unknown-node"
        "::slurm.partitions[0].nodes: 50%25 done%0D%0Anext line, with: colon"
    )
