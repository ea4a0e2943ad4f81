"""Compiled templates are kept between runs (render.py), and what is rendered never
depends on the cache: with it, without it, or with its entries damaged."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support.paths import EXAMPLES
from support.trees import tree_on_disk

SPEC = EXAMPLES / "ml-training-8node.yaml"


def _render(out: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "CLUSTERGEN_NO_CACHE"}
    return subprocess.run(
        [sys.executable, "-m", "clustergen", "render", str(SPEC), "-o", str(out)],
        capture_output=True,
        text=True,
        env={**environment, **env},
        check=False,
    )


def test_the_cache_changes_no_byte_and_survives_damage(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    plain = _render(tmp_path / "plain", CLUSTERGEN_NO_CACHE="1")
    assert plain.returncode == 0, plain.stderr
    assert not cache.exists()
    first = _render(tmp_path / "first", XDG_CACHE_HOME=str(cache))
    assert first.returncode == 0, first.stderr
    entries = sorted(cache.glob("clustergen/jinja2-*/__jinja2_*.cache"))
    assert entries, "no compiled template was kept"
    assert entries[0].parent.stat().st_mode & 0o077 == 0, "the cache folder is the user's alone"
    second = _render(tmp_path / "second", XDG_CACHE_HOME=str(cache))  # from the cache
    for entry in entries:
        entry.write_bytes(b"\x00 not a compiled template")
    damaged = _render(tmp_path / "damaged", XDG_CACHE_HOME=str(cache))
    assert second.returncode == damaged.returncode == 0, damaged.stderr
    expected = tree_on_disk(tmp_path / "plain")
    for name in ("first", "second", "damaged"):
        assert tree_on_disk(tmp_path / name) == expected, name


def test_a_cache_folder_that_is_a_symlink_is_not_used(tmp_path: Path) -> None:
    """A symlink (to a folder anyone could have planted entries in) is refused."""
    import jinja2

    cache = tmp_path / "cache"
    folder = cache / "clustergen"
    folder.mkdir(parents=True)
    shared = cache / "shared"
    shared.mkdir()
    (folder / f"jinja2-{jinja2.__version__}").symlink_to(shared)
    result = _render(tmp_path / "out", XDG_CACHE_HOME=str(cache))
    assert result.returncode == 0, result.stderr
    assert list(shared.iterdir()) == []
