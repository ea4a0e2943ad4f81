"""Rendered trees as {relative path: text}, for whole-tree comparisons."""

from __future__ import annotations

from pathlib import Path


def tree_on_disk(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): path.read_text(encoding="utf-8")
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }
