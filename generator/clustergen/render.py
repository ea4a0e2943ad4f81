"""Render every output family in memory: resolved cluster -> artifacts, by path.

The content families come first; the Ansible family then receives their
artifacts and installs the ones that declare an install, so it knows no family's
files. Nothing here writes to disk (write.py does).
"""

from __future__ import annotations

from importlib import resources

import jinja2

from clustergen.artifacts import Artifact
from clustergen.resolve import Cluster


def environment() -> jinja2.Environment:
    templates = resources.files("clustergen.templates")
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,  # configuration files and shell, not HTML
    )


def render_all(cluster: Cluster) -> dict[str, Artifact]:
    from clustergen.outputs import FAMILIES, ansible, site

    env = environment()
    by_family = {name: family(cluster, env) for name, family in FAMILIES.items()}
    artifacts = [
        *(artifact for rendered in by_family.values() for artifact in rendered),
        *ansible.render(cluster, env, by_family),
        *site.render(),
    ]
    files: dict[str, Artifact] = {}
    for artifact in artifacts:
        if artifact.path in files:
            raise AssertionError(f"two output families render {artifact.path}")
        files[artifact.path] = artifact
    return dict(sorted(files.items()))


def render_template(env: jinja2.Environment, name: str, cluster: Cluster, **values: object) -> str:
    """Render one template with the header every file carries."""
    template = env.get_template(name)
    return template.render(spec=cluster.spec, spec_name=cluster.spec_name, **values)
