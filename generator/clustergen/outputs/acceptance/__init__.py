"""Acceptance jobs: sbatch scripts under acceptance/<partition>/ that prove the cluster.

They are run by an admin from the rendered tree (docs/acceptance.md), not installed.
"""

from __future__ import annotations

import shlex

import jinja2

from clustergen.artifacts import Artifact
from clustergen.outputs.acceptance.derive import PartitionJobs, derive_acceptance
from clustergen.outputs.nccl.derive import JOB_ENV
from clustergen.render import render_template
from clustergen.resolve import Cluster


def _script(
    cluster: Cluster, env: jinja2.Environment, job: PartitionJobs, name: str, **values: object
) -> Artifact:
    path = f"acceptance/{job.partition}/{name}"
    template = "ib-rails" if name.startswith("ib-rails") else name.removesuffix(".sbatch")
    template = template.removesuffix("-2node")
    text = render_template(
        env, f"acceptance/{template}.sbatch.j2", cluster, job=job, path=path, **values
    )
    return Artifact(path, text, mode=0o755)


def render(cluster: Cluster, env: jinja2.Environment) -> list[Artifact]:
    artifacts = []
    for job in derive_acceptance(cluster):
        exports = [(name, shlex.quote(value)) for name, value in job.exports]
        threshold = f"{job.busbw_threshold_gbytes:.1f}"
        # The whole partition, and two nodes: a fabric problem between a pair shows alone.
        sizes = [("nccl-allreduce.sbatch", job.nodes)]
        if job.nodes > 2:
            sizes.append(("nccl-allreduce-2node.sbatch", 2))
        for name, nodes in sizes:
            artifacts.append(
                _script(
                    cluster,
                    env,
                    job,
                    name,
                    nodes=nodes,
                    threshold=threshold,
                    exports=exports,
                    job_env=JOB_ENV,
                )
            )
        for rails in job.rail_jobs:
            name = (
                "ib-rails.sbatch" if len(job.rail_jobs) == 1 else f"ib-rails-{rails.profile}.sbatch"
            )
            limit = f"{rails.threshold_gbits:.1f}"
            artifacts.append(_script(cluster, env, job, name, rails=rails, threshold=limit))
        artifacts.append(_script(cluster, env, job, "dcgm-diag.sbatch"))
    return artifacts
