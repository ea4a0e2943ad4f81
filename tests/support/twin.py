"""A twin (clustergen.commands.twin) for tests: started per module, and its jobs."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

from clustergen.commands.twin.prerequisites import missing_prerequisites
from clustergen.commands.twin.session import Twin
from clustergen.render import render_all
from clustergen.resolve import ResolvedCluster
from clustergen.spec.load import load_spec
from clustergen.validate import validate_cluster

from support.ci import skip_or_fail
from support.paths import EXAMPLES
from support.realslurm.parse import parse_oneliner

JOB_TIMEOUT_S = 60.0


def require_twin() -> None:
    problems = missing_prerequisites(accounting=True)
    if problems:
        skip_or_fail("; ".join(problems))


def resolved(name: str) -> ResolvedCluster:
    cluster, _ = validate_cluster(load_spec(str(EXAMPLES / f"{name}.yaml")))
    assert cluster is not None
    return cluster


def started_twin(name: str, work: Path) -> Iterator[Twin]:
    """The twin of examples/NAME.yaml, up until the generator is closed."""
    require_twin()
    cluster = resolved(name)
    with Twin(cluster, render_all(cluster), work_dir=work) as running:
        started = time.monotonic()
        running.start()
        print(f"twin of {name} up in {time.monotonic() - started:.1f} s")
        print("\n".join(running.describe()))
        yield running


def sbatch(twin: Twin, *argv: str) -> str:
    return twin.client("sbatch", "--parsable", *argv).strip().split(";")[0]


def job(twin: Twin, job_id: str) -> dict[str, str]:
    return parse_oneliner(twin.client("scontrol", "show", "job", "-o", job_id))


def wait_for_state(
    twin: Twin, job_id: str, states: set[str], timeout_s: float = JOB_TIMEOUT_S
) -> dict[str, str]:
    deadline = time.monotonic() + timeout_s
    while True:
        fields = job(twin, job_id)
        if fields["JobState"] in states:
            return fields
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} never reached {states}: {fields}")
        time.sleep(0.3)
