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
    """A rendered tree without the verbatim site files: what a golden tree holds."""
    site = site_sources()
    return {path: text for path, text in tree.items() if path not in site}


def golden_dir(spec_stem: str) -> Path:
    """Where the committed render of a golden spec is: the top of this repository for
    the spec it renders there (spec.yaml), tests/golden/<stem>/ for the others. One
    copy of each: the top is not repeated under tests/golden/."""
    from support.paths import GOLDEN, REPO, ROOT_SPEC

    return REPO if ROOT_SPEC.resolve().stem == spec_stem else GOLDEN / spec_stem


def golden_tree(spec_stem: str) -> dict[str, str]:
    """The committed render of a golden spec, without the verbatim site files. At the
    top of this repository that is the files its manifest lists, and the manifest."""
    root = golden_dir(spec_stem)
    from support.paths import REPO

    if root != REPO:
        return tree_on_disk(root)
    listed = [MANIFEST, *manifest_paths(root)]
    return generated_only(
        {
            path: (root / path).read_text(encoding="utf-8")
            for path in listed
            if (root / path).is_file()
        }
    )


MANIFEST = ".clustergen-manifest"


def manifest_paths(root: Path) -> list[str]:
    """The paths a tree's manifest lists (each line: the path, then tab-separated fields)."""
    manifest = root / MANIFEST
    if not manifest.is_file():
        return []
    lines = manifest.read_text(encoding="utf-8").splitlines()
    return [line.split("\t")[0] for line in lines if line and not line.startswith("#")]
