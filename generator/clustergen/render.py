"""The Jinja environment and render_all: spec -> {relative path: file}, all in memory."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

import jinja2

from clustergen.derive import Context, derive
from clustergen.model import Spec


@dataclass(frozen=True)
class RenderedFile:
    text: str
    mode: int = 0o644


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


def render_all(spec: Spec, spec_name: str) -> dict[str, RenderedFile]:
    from clustergen.outputs import FAMILIES

    context = derive(spec, spec_name)
    env = environment()
    files: dict[str, RenderedFile] = {}
    for family in FAMILIES:
        for path, rendered in family(context, env).items():
            if path in files:
                raise AssertionError(f"two output families render {path}")
            files[path] = rendered
    return dict(sorted(files.items()))


def render_template(env: jinja2.Environment, name: str, context: Context, **values: object) -> str:
    """Render one template with the header every file carries."""
    template = env.get_template(name)
    return template.render(ctx=context, spec=context.spec, spec_name=context.spec_name, **values)
