"""Rendered trees as {relative path: text}, for whole-tree comparisons."""

from __future__ import annotations

from pathlib import Path


def tree_on_disk(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): path.read_text(encoding="utf-8")
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def tree_state(root: Path) -> dict[str, tuple[str, int, bytes]]:
    """Every file and directory under root: kind, mode and content (for byte-identity)."""
    return {
        str(p.relative_to(root)): (
            "dir" if p.is_dir() else "file",
            p.stat().st_mode,
            b"" if p.is_dir() else p.read_bytes(),
        )
        for p in sorted(root.rglob("*"))
    }


def site_sources() -> dict[str, str]:
    """The Ansible site files (playbooks, ansible.cfg, requirements.yml, roles/) as they
    stand at the top of this repository: every render copies them verbatim."""
    from clustergen.outputs.site import site_paths

    from support.paths import REPO

    return {path: (REPO / path).read_text(encoding="utf-8") for path in site_paths(REPO)}


def generated_only(tree: dict[str, str]) -> dict[str, str]:
    """A rendered tree without the verbatim site files: what tests/golden/ holds."""
    site = site_sources()
    return {path: text for path, text in tree.items() if path not in site}
