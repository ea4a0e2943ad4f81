"""Slurm: slurm.conf, gres.conf, cgroup.conf, topology.conf, slurmdbd.conf and the Epilog.

Files land in slurm/ under the output directory, named as they are installed in /etc/slurm.
"""

from __future__ import annotations

import jinja2

from clustergen.derive import EPILOG_NAME, Context
from clustergen.render import RenderedFile, render_template


def render(context: Context, env: jinja2.Environment) -> dict[str, RenderedFile]:
    slurm = context.slurm
    files = {
        "slurm/slurm.conf": RenderedFile(render_template(env, "slurm/slurm.conf.j2", context)),
        "slurm/cgroup.conf": RenderedFile(render_template(env, "slurm/cgroup.conf.j2", context)),
    }
    if slurm.gres:
        files["slurm/gres.conf"] = RenderedFile(render_template(env, "slurm/gres.conf.j2", context))
    if slurm.topology:
        files["slurm/topology.conf"] = RenderedFile(
            render_template(env, "slurm/topology.conf.j2", context)
        )
    if slurm.slurmdbd is not None:
        files["slurm/slurmdbd.conf"] = RenderedFile(
            render_template(env, "slurm/slurmdbd.conf.j2", context)
        )
    if slurm.epilog_checks is not None:
        files[f"slurm/{EPILOG_NAME}"] = RenderedFile(
            render_template(env, "slurm/health-epilog.sh.j2", context), mode=0o755
        )
    return files
