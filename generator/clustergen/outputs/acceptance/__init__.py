"""Acceptance jobs: sbatch scripts under acceptance/<partition>/ that prove the cluster.

They are run by an admin from the rendered tree (docs/acceptance.md), not installed.
"""

from __future__ import annotations

import shlex

import jinja2

from clustergen.base.artifacts import Artifact
from clustergen.outputs.acceptance.derive import PartitionJobs, derive_acceptance
from clustergen.outputs.acceptance.nvlink import HCA_ONLY_EXPORTS, MNNVL_EXPORTS, derive_nvlink
from clustergen.resolve import ResolvedCluster
from clustergen.resolve.nccl_settings import JOB_ENV
from clustergen.templating import render_template

# Stays in the output tree: none of its files goes onto a node.
INSTALLED = False


def _script(
    cluster: ResolvedCluster,
    env: jinja2.Environment,
    job: PartitionJobs,
    name: str,
    **values: object,
) -> Artifact:
    path = f"acceptance/{job.partition}/{name}"
    values.update(_tools(cluster))
    template = next(
        (kind for kind in ("ib-rails", "bisection") if name.startswith(kind)),
        name.removesuffix(".sbatch"),
    )
    template = template.removesuffix("-2node")
    text = render_template(
        env, f"acceptance/{template}.sbatch.j2", cluster, job=job, path=path, **values
    )
    return Artifact(path, text, mode=0o755)


def _tools(cluster: ResolvedCluster) -> dict[str, str]:
    """What the all-reduce jobs check before they start: slurm.mpi (the --mpi srun is given)
    and the nccl-tests release the nccl_tests role builds ('' when the spec names none)."""
    source = cluster.spec.software.nccl_tests
    return {"mpi": cluster.spec.slurm.mpi, "built": source.version if source else ""}


def render(cluster: ResolvedCluster, env: jinja2.Environment) -> list[Artifact]:
    artifacts = []
    for job in derive_acceptance(cluster):
        exports = [(name, shlex.quote(value)) for name, value in job.exports]
        forced = HCA_ONLY_EXPORTS if job.nvlink_trays else ()
        for allreduce in job.allreduce:
            artifacts.append(
                _script(
                    cluster,
                    env,
                    job,
                    allreduce.script,
                    allreduce=allreduce,
                    threshold=f"{allreduce.busbw_threshold_gbytes:.1f}",
                    exports=exports,
                    forced=forced,
                    job_env=JOB_ENV,
                )
            )
        for rails in job.rail_jobs:
            name = (
                "ib-rails.sbatch" if len(job.rail_jobs) == 1 else f"ib-rails-{rails.profile}.sbatch"
            )
            limit = f"{rails.threshold_gbits:.1f}"
            perftest_args = [shlex.quote(arg) for arg in rails.perftest_args]
            artifacts.append(
                _script(
                    cluster,
                    env,
                    job,
                    name,
                    rails=rails,
                    threshold=limit,
                    cross_threshold=f"{rails.cross_threshold_gbits:.1f}",
                    units=[shlex.quote(unit) for unit in rails.units],
                    perftest_args=perftest_args,
                )
            )
        for bisection in job.bisection_jobs:
            single = len(job.bisection_jobs) == 1
            artifacts.append(
                _script(
                    cluster,
                    env,
                    job,
                    "bisection.sbatch" if single else f"bisection-{bisection.profile}.sbatch",
                    bisection=bisection,
                    senders=shlex.quote(bisection.senders),
                    receivers=shlex.quote(bisection.receivers),
                    threshold=f"{bisection.threshold_gbits:.1f}",
                    perftest_args=[shlex.quote(arg) for arg in bisection.perftest_args],
                )
            )
        artifacts.append(_script(cluster, env, job, "dcgm-diag.sbatch"))
    artifacts.extend(_nvlink_scripts(cluster, env))
    return artifacts


def _nvlink_scripts(cluster: ResolvedCluster, env: jinja2.Environment) -> list[Artifact]:
    """Per multi-node NVLink domain: the all-reduce over NVLink and the fabric check, in
    the directory of the partition that holds the domain's trays."""
    artifacts = []
    for job in derive_nvlink(cluster):
        for kind in ("nvlink-allreduce", "nvlink-fabric"):
            path = f"acceptance/{job.partition}/{kind}-{job.domain}.sbatch"
            text = render_template(
                env,
                f"acceptance/{kind}.sbatch.j2",
                cluster,
                job=job,
                path=path,
                threshold=f"{job.busbw_threshold_gbytes:.1f}",
                exports=[(name, shlex.quote(value)) for name, value in job.exports],
                mnnvl=MNNVL_EXPORTS,
                job_env=JOB_ENV,
                **_tools(cluster),
            )
            artifacts.append(Artifact(path, text, mode=0o755))
    return artifacts
