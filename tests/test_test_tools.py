"""The test tools of issue 25: slurm.mpi's MpiDefault and the PMIx it pins per Slurm
release, nccl-tests' one directory shared by the nccl_tests role and the acceptance jobs,
and the jobs' NOT RUN when PMIx or nccl-tests is missing (run on stand-ins for srun and
all_reduce_perf, as tests/test_acceptance.py runs them)."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from clustergen.render import render_all
from clustergen.spec.load import LoadedSpec
from clustergen.validate import validate_cluster

from support.paths import DATA, REPO

BOOTED: dict[str, Any] = yaml.safe_load((DATA / "booted-3node.yaml").read_text())
SOURCE = {
    "version": "2.13.6",
    # Spack's nccl-tests package records this tarball's sha256.
    "url": "https://github.com/NVIDIA/nccl-tests/archive/v2.13.6.tar.gz",
    "sha256": "52b472a58a4918d3221a9b8c4bd9335382643d7e241983918b64692d685cc3d1",
}


def _render(data: dict[str, Any]) -> tuple[dict[str, str], list[str]]:
    """The rendered files and the problems' codes of a spec that must have no error."""
    cluster, problems = validate_cluster(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))
    assert cluster is not None, [p.format() for p in problems]
    assert not [p for p in problems if p.code.severity == "error"], [p.format() for p in problems]
    return {path: a.text for path, a in render_all(cluster).items()}, [
        p.code.name for p in problems
    ]


def _group_vars(files: dict[str, str], group: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(files[f"inventory/group_vars/{group}.yml"])
    return loaded


@pytest.mark.parametrize(
    ("os", "slurm", "packaging", "pins"),
    [
        # 22.05 dlopens the unversioned libpmix.so, which only libpmix-dev ships.
        (
            "debian-12",
            "22.05.8",
            "distribution",
            {
                "libpmix-dev": "4.2.2-*",
                "libpmix2": "4.2.2-*",
                "slurm-wlm-basic-plugins": "22.05.8-*",
            },
        ),
        # 24.11 opens libpmix.so.2; trixie renamed the runtime for 64-bit time_t.
        (
            "debian-13",
            "24.11.5",
            "distribution",
            {"libpmix2t64": "5.0.7-*", "slurm-wlm-basic-plugins": "24.11.5-*"},
        ),
        # SchedMD's slurm-smd carries the plugin: only the runtime is added.
        ("debian-13", "26.05.3", "schedmd", {"libpmix2t64": "5.0.7-*"}),
    ],
)
def test_pmix_sets_mpidefault_and_pins_pmix_on_every_slurm_node(
    os: str, slurm: str, packaging: str, pins: dict[str, str]
) -> None:
    data = copy.deepcopy(BOOTED)
    data["software"].update(os=os, slurm=slurm, slurm_packages=packaging)
    if packaging == "schedmd":
        data["software"]["slurm_repository"] = "testbed"
    files, codes = _render(data)
    assert "\nMpiDefault=pmix\n" in files["slurm/slurm.conf"]
    assert _group_vars(files, "slurm")["slurm_pmix_packages"] == pins
    assert "slurm.pmix-unpinned" not in codes
    # Absent, as every spec before slurm.mpi: MpiDefault=none and no PMIx package.
    del data["slurm"]["mpi"]
    files, _ = _render(data)
    assert "\nMpiDefault=none\n" in files["slurm/slurm.conf"]
    assert _group_vars(files, "slurm")["slurm_pmix_packages"] == {}


def test_mpidefault_comes_only_from_slurm_mpi() -> None:
    data = copy.deepcopy(BOOTED)
    data["slurm"]["options"] = {"MpiDefault": "pmi2"}
    _, problems = validate_cluster(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))
    assert [p.code.name for p in problems if p.code.severity == "error"] == [
        "slurm.option-derived"
    ], [p.format() for p in problems]
    assert "slurm.mpi" in next(p.message for p in problems if p.code.severity == "error")


def test_the_role_builds_where_the_jobs_look() -> None:
    """One directory: the spec's nccl_tests_dir is the GPU nodes' nccl_tests_dir, the
    role's BUILDDIR, and the all-reduce job's NCCL_TESTS_DIR; the release, the pinned
    CUDA's directory and Open MPI reach the role."""
    data = yaml.safe_load((REPO / "examples" / "edge-roce-2node.yaml").read_text())
    data["software"].update(os="debian-12", slurm="22.05.8", slurm_packages="distribution")
    data["software"]["nccl_tests"] = SOURCE
    data.setdefault("nccl", {})["acceptance"] = {"nccl_tests_dir": "/opt/site/nccl-tests"}
    files, codes = _render(data)
    gpu = _group_vars(files, "nvidia_gpu")
    assert gpu["nccl_tests_dir"] == "/opt/site/nccl-tests"
    assert gpu["nccl_tests_source"] == SOURCE
    assert (
        gpu["nccl_tests_cuda_home"]
        == f"/usr/local/cuda-{'.'.join(data['software']['cuda'].split('.')[:2])}"
    )
    assert gpu["nccl_tests_packages"] == {"libopenmpi-dev": "4.1.4-*", "openmpi-bin": "4.1.4-*"}
    assert "nccl.tests-not-built" not in codes
    jobs = [text for path, text in files.items() if path.endswith("nccl-allreduce.sbatch")]
    assert jobs
    for job in jobs:
        assert "\nNCCL_TESTS_DIR=${NCCL_TESTS_DIR:-/opt/site/nccl-tests}\n" in job
    tasks = yaml.safe_load((REPO / "roles/nccl_tests/tasks/main.yml").read_text())
    build = next(t for t in tasks if t["name"] == "Build nccl-tests")["block"]
    steps = next(t for t in build if "block" in t)["block"]
    make = next(t for t in steps if "ansible.builtin.command" in t)["ansible.builtin.command"]
    assert make["argv"][:2] == ["make", "MPI=1"]
    assert "BUILDDIR={{ nccl_tests_dir }}" in make["argv"]
    assert "CUDA_HOME={{ nccl_tests_cuda_home }}" in make["argv"]


FAKE_SRUN = '#!/bin/bash\nwhile [[ "$1" == -* ]]; do shift; done\nexec "$@"\n'


@pytest.mark.parametrize(
    ("mpi", "source", "env", "reason"),
    [
        ("none", None, {}, "slurm.mpi is none"),
        ("pmix", None, {}, "software.nccl_tests is not set in the spec"),
        ("pmix", SOURCE, {}, "the nccl_tests role builds nccl-tests 2.13.6 there"),
        ("none", None, {"SRUN_MPI": "pmix", "TOOL": "1"}, ""),
    ],
)
def test_the_allreduce_job_says_what_is_missing(
    tmp_path: Path, mpi: str, source: dict[str, str] | None, env: dict[str, str], reason: str
) -> None:
    data = yaml.safe_load((REPO / "examples" / "edge-roce-2node.yaml").read_text())
    data["slurm"]["mpi"] = mpi
    if source is not None:
        data["software"]["nccl_tests"] = source
    files, _ = _render(data)
    (job,) = [text for path, text in files.items() if path.endswith("nccl-allreduce.sbatch")]
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "srun").write_text(FAKE_SRUN)
    if env.pop("TOOL", None):  # a stand-in nccl-tests: its table's header, no rows
        (tools / "all_reduce_perf").write_text("#!/bin/sh\necho '# nThread 1'\n")
    for stub in tools.iterdir():
        stub.chmod(0o755)
    script = tmp_path / "job.sbatch"
    script.write_text(job)
    result = subprocess.run(
        ["bash", str(script)],
        env={"PATH": f"{tools}:/usr/bin:/bin", "NCCL_TESTS_DIR": str(tools), **env},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    if reason:
        assert result.stderr.startswith("NOT RUN: ") and reason in result.stderr, result.stderr
    else:  # both present: it ran all_reduce_perf, whose table has no rows
        assert "NOT RUN" not in result.stderr and "MALFORMED" in result.stdout, result.stdout
