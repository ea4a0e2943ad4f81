"""The imported spec as YAML text: a comment block at the top (what to review, what the
render changes, every line not represented), the spec, and each slurm.options key with
a comment saying where it was imported from."""

from __future__ import annotations

import yaml

from clustergen.base.errors import printable
from clustergen.importer.build import REVIEW
from clustergen.importer.records import Imported


def _comment(lines: list[str]) -> list[str]:
    return [f"#   {printable(line)}" for line in lines]


def header(imported: Imported, source: str) -> list[str]:
    out = [
        f"# Imported by `clustergen import slurm {printable(source)}`.",
        "# slurm.keep_imported: the render keeps the imported node features and partition",
        "# defaults instead of deriving its own (docs/adopt.md).",
        "#",
        "# REVIEW: not in the Slurm files; placeholders that validate, not facts:",
        *_comment(list(REVIEW)),
    ]
    if imported.changes:
        out += ["#", "# The render writes these where the original relies on Slurm's default:"]
        out += _comment(imported.changes)
    if imported.unrepresented:
        out += ["#", "# NOT IMPORTED (file:line), the spec cannot hold these:"]
        out += _comment([u.format() for u in imported.unrepresented])
    return out


def _options_lines(imported: Imported, options: dict[str, str]) -> list[str]:
    lines = ["  options:"]
    for key, value in options.items():
        text = yaml.safe_dump({key: value}, default_flow_style=False, width=1000).strip()
        where = printable(imported.option_sources.get(key, "slurm.conf"))
        lines.append(f"    {text}  # imported: {where}")
    return lines


def spec_text(imported: Imported, source: str) -> str:
    spec = {key: value for key, value in imported.spec.items() if key != "slurm"}
    slurm = {key: value for key, value in imported.spec["slurm"].items() if key != "options"}
    options = imported.spec["slurm"].get("options", {})
    body = yaml.safe_dump(spec, sort_keys=False, default_flow_style=False, width=100)
    slurm_text = yaml.safe_dump(
        {"slurm": slurm}, sort_keys=False, default_flow_style=False, width=100
    )
    lines = [*header(imported, source), *body.splitlines(), *slurm_text.splitlines()]
    if options:
        lines += _options_lines(imported, options)
    return "\n".join(lines) + "\n"
