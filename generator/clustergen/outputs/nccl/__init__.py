"""NCCL: /etc/nccl.conf and the job environment file per GPU hardware profile.

Files land in nccl/<profile>/. NCCL reads both at each communicator's start, so a
change needs nothing but the next job.
"""

from __future__ import annotations

import shlex

import jinja2

from clustergen.base.artifacts import NO_CHANGE, Artifact, Install
from clustergen.outputs.nccl.derive import NCCL_CONF, derive_nccl
from clustergen.resolve import ResolvedCluster
from clustergen.resolve.nccl_settings import JOB_ENV
from clustergen.templating import render_template

# Its role includes rendered_files for it and defines the handlers it notifies.
OWN_ROLE = True


def render(cluster: ResolvedCluster, env: jinja2.Environment) -> list[Artifact]:
    artifacts = []
    for entry in derive_nccl(cluster):
        exports = [(s, shlex.quote(s.value)) for s in entry.settings]
        for name, template, dest, values in (
            ("nccl.conf", "nccl/nccl.conf.j2", NCCL_CONF, {}),
            ("job.env", "nccl/job.env.j2", JOB_ENV, {"exports": exports}),
        ):
            text = render_template(env, template, cluster, nccl=entry, **values)
            artifacts.append(
                Artifact(
                    f"nccl/{entry.profile}/{name}",
                    text,
                    install=Install(dest, entry.group, NO_CHANGE),
                )
            )
    return artifacts
