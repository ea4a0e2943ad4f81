"""Compiled templates are kept between runs (templating.py), and what is rendered never
depends on the cache: with it, without it, or with its entries damaged."""

from __future__ import annotations

import io
import marshal
import os
import pickle
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

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
    assert _said(result) == [f"clustergen: template cache not used: {folder}/jinja2-"
                             f"{jinja2.__version__} is a symbolic link"]  # fmt: skip


# A compiled template is Python code that runs when it is loaded (issue 21): one planted
# in a folder someone else can write ran a command on the next render. The folder is
# used only if no one but the user (or root) can write it or a folder on the way to it.


def _said(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in result.stderr.splitlines() if "template cache" in line]


def _plant(folder: Path, marker: Path) -> int:
    """Each compiled template in `folder` made code that appends to `marker` when loaded
    (Jinja's header and the template's checksum kept, so Jinja takes it as current)."""
    import jinja2.bccache

    entries = sorted(folder.glob("__jinja2_*.cache"))
    payload = compile(f"open({str(marker)!r}, 'a').write('loaded\\n')", "planted", "exec")
    for entry in entries:
        data = entry.read_bytes()
        assert data.startswith(jinja2.bccache.bc_magic)
        header = io.BytesIO(data)
        header.seek(len(jinja2.bccache.bc_magic))
        pickle.load(header)  # the checksum of the template's source
        entry.write_bytes(data[: header.tell()] + marshal.dumps(payload))
    return len(entries)


def _cache_of(cache: Path) -> Path:
    import jinja2

    return cache / "clustergen" / f"jinja2-{jinja2.__version__}"


def test_a_planted_entry_runs_where_the_folder_is_safe(tmp_path: Path) -> None:
    """The control for the next test: the planted entries are loaded from a safe folder."""
    cache, marker = tmp_path / "cache", tmp_path / "marker"
    assert _render(tmp_path / "first", XDG_CACHE_HOME=str(cache)).returncode == 0
    assert _plant(_cache_of(cache), marker)
    _render(tmp_path / "second", XDG_CACHE_HOME=str(cache))
    assert marker.exists(), "the planted entries were not loaded from a safe cache"


def _open_folder(base: Path, cache: Path) -> Path:
    base.chmod(0o777)
    return base


def _others_folder(base: Path, cache: Path) -> Path:
    if os.geteuid() != 0:
        pytest.skip("needs root to give a folder to someone else")
    os.chown(base, 65534, 65534)
    return base


def _shared_cache_folder(base: Path, cache: Path) -> Path:
    _cache_of(cache).chmod(0o1777)  # sticky: fine above the cache, not for the cache
    return _cache_of(cache)


@pytest.mark.parametrize(
    ("unsafe", "why"),
    [
        (_open_folder, "can be written by others (mode 0777)"),
        (_others_folder, "belongs to uid 65534"),
        (_shared_cache_folder, "can be written by others (mode 1777)"),
    ],
    ids=["a-0777-folder-on-the-way", "a-folder-of-someone-else", "a-shared-cache-folder"],
)
def test_a_cache_others_can_write_is_not_loaded(
    tmp_path: Path, unsafe: Callable[[Path, Path], Path], why: str
) -> None:
    base = tmp_path / "base"
    base.mkdir(mode=0o755)
    cache, marker = base / "cache", tmp_path / "marker"
    plain = _render(tmp_path / "plain", CLUSTERGEN_NO_CACHE="1")
    assert _render(tmp_path / "first", XDG_CACHE_HOME=str(cache)).returncode == 0
    assert _plant(_cache_of(cache), marker)
    named = unsafe(base, cache)
    result = _render(tmp_path / "out", XDG_CACHE_HOME=str(cache))
    assert result.returncode == 0, result.stderr
    assert not marker.exists(), "a planted entry was loaded"
    said = _said(result)
    assert len(said) == 1, result.stderr
    assert said[0].startswith(f"clustergen: template cache not used: {named} {why}"), said
    assert tree_on_disk(tmp_path / "out") == tree_on_disk(tmp_path / "plain")
    assert plain.returncode == 0
