"""Render every output family in memory: resolved cluster -> artifacts, by path.

The content families come first; the Ansible family then receives their
artifacts and installs the ones that declare an install, so it knows no family's
files. The Jinja environment and `render_template` are templating.py's, below this
module and every family. Nothing here writes to disk (write.py does).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import jinja2

from clustergen.base.artifacts import Artifact
from clustergen.outputs import FAMILIES, UNINSTALLED, ansible, site
from clustergen.resolve import ResolvedCluster
from clustergen.templating import environment


def render_all(cluster: ResolvedCluster) -> dict[str, Artifact]:
    env = environment()
    return render_rest(cluster, env, render_families(cluster, env, FAMILIES))


def render_families(
    cluster: ResolvedCluster, env: jinja2.Environment, names: Iterable[str]
) -> dict[str, list[Artifact]]:
    """The named content families' artifacts, by family. A family that installs nothing
    (outputs.UNINSTALLED) is checked to keep to that, since the Ansible family may then
    be rendered without it."""
    by_family = {name: FAMILIES[name](cluster, env) for name in names}
    for name in UNINSTALLED.intersection(by_family):
        for artifact in by_family[name]:
            if artifact.install is not None:
                raise AssertionError(f"the {name} family installs {artifact.path}")
    return by_family


def render_rest(
    cluster: ResolvedCluster, env: jinja2.Environment, by_family: Mapping[str, list[Artifact]]
) -> dict[str, Artifact]:
    """The given families' artifacts with the Ansible family's and the site files, by
    path in path order. by_family holds every family that installs a file."""
    site_files = site.render()
    return by_path(
        [
            *(artifact for rendered in by_family.values() for artifact in rendered),
            *ansible.render(cluster, env, by_family, site_files),
            *site_files,
        ]
    )


def by_path(artifacts: Iterable[Artifact]) -> dict[str, Artifact]:
    """Artifacts by path, in path order; two of one path are a bug."""
    files: dict[str, Artifact] = {}
    for artifact in artifacts:
        if artifact.path in files:
            raise AssertionError(f"two output families render {artifact.path}")
        files[artifact.path] = artifact
    return dict(sorted(files.items()))
