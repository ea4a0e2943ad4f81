"""Output families: each maps the render context to {relative path: RenderedFile}."""

from __future__ import annotations

from collections.abc import Callable

import jinja2

from clustergen.derive import Context
from clustergen.outputs import ansible, site, slurm
from clustergen.render import RenderedFile

Family = Callable[[Context, jinja2.Environment], dict[str, RenderedFile]]

FAMILIES: tuple[Family, ...] = (slurm.render, ansible.render, site.render)
