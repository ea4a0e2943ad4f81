"""docs/platforms.md covers every platform the catalogs know: each GPU model, each Slurm
release and each operating system has its row, so a catalog entry cannot land unlisted."""

from __future__ import annotations

import pytest

from clustergen.catalog.distributions import DISTRIBUTIONS
from clustergen.catalog.gpus import GPU_MODELS
from clustergen.catalog.slurm_releases import RELEASES, release_name

from support.paths import REPO

DOC = (REPO / "docs" / "platforms.md").read_text()


def _section(title: str) -> str:
    start = DOC.index(f"\n## {title}\n")
    end = DOC.find("\n## ", start + 1)
    return DOC[start : end if end != -1 else len(DOC)]


@pytest.mark.parametrize(
    ("title", "names"),
    [
        ("GPUs", [f"`{name}`" for name in GPU_MODELS]),
        ("Slurm releases", [release_name(r.version) for r in RELEASES]),
        ("Operating systems", [f"`{name}`" for name in DISTRIBUTIONS]),
    ],
    ids=["gpus", "slurm", "os"],
)
def test_every_catalog_entry_has_its_row(title: str, names: list[str]) -> None:
    rows = [line for line in _section(title).splitlines() if line.startswith("| ")]
    missing = [name for name in names if not any(name in row for row in rows)]
    assert not missing, f"docs/platforms.md, {title}: no row for {missing}"
