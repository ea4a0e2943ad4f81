"""Every rendered file of each reference spec, compared as a whole tree with tests/golden/.

The golden trees hold what clustergen generates. The Ansible site files every
render also carries (site.yml, verify.yml, ansible.cfg, requirements.yml, roles/)
are verbatim copies of this repository's own; a test here holds them to that
instead of keeping two more copies of every role under tests/golden/.
"""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path

import pytest

from clustergen.load import load_spec
from clustergen.render import render_all
from clustergen.validate import validate_cluster
from clustergen.write import with_manifest

from support.paths import DATA, GOLDEN, REFERENCE_SPECS
from support.trees import generated_only, site_sources, tree_on_disk

REFRESH = "pytest tests/test_golden.py --update-golden"
# The reference specs, and a mixed A100/H100 fleet for the per-profile NCCL files.
GOLDEN_SPECS = [*REFERENCE_SPECS, DATA / "mixed-fleet.yaml"]


def rendered_tree(spec_path: Path) -> dict[str, str]:
    loaded = load_spec(str(spec_path))
    cluster, problems = validate_cluster(loaded)
    assert cluster is not None, [p.format() for p in problems]
    return {
        path: f.text
        for path, f in with_manifest(render_all(cluster), cluster.spec.cluster.name).items()
    }


@pytest.mark.parametrize("spec_path", GOLDEN_SPECS, ids=lambda p: p.stem)
def test_rendered_tree_matches_golden(spec_path: Path, update_golden: bool) -> None:
    golden_dir = GOLDEN / spec_path.stem
    rendered = generated_only(rendered_tree(spec_path))
    if update_golden:
        shutil.rmtree(golden_dir, ignore_errors=True)
        for path, text in rendered.items():
            (golden_dir / path).parent.mkdir(parents=True, exist_ok=True)
            (golden_dir / path).write_text(text, encoding="utf-8")
        return
    golden = tree_on_disk(golden_dir)
    report = []
    for path in sorted(set(golden) | set(rendered)):
        if path not in rendered:
            report.append(f"missing from the render: {path}")
        elif path not in golden:
            report.append(f"not in the golden tree: {path}")
        elif golden[path] != rendered[path]:
            report.extend(
                difflib.unified_diff(
                    golden[path].splitlines(),
                    rendered[path].splitlines(),
                    f"golden/{spec_path.stem}/{path}",
                    f"rendered/{path}",
                    lineterm="",
                )
            )
    assert not report, "\n".join([*report, f"\nIf the change is intended, run: {REFRESH}"])


@pytest.mark.parametrize("spec_path", REFERENCE_SPECS, ids=lambda p: p.stem)
def test_render_is_byte_stable(spec_path: Path) -> None:
    assert rendered_tree(spec_path) == rendered_tree(spec_path)


@pytest.mark.parametrize("spec_path", REFERENCE_SPECS, ids=lambda p: p.stem)
def test_render_carries_the_site_files_verbatim(spec_path: Path) -> None:
    """The tree applies on its own: playbooks, ansible.cfg, requirements.yml and every role
    file, byte for byte as in this repository, each listed in the manifest."""
    rendered = rendered_tree(spec_path)
    site = site_sources()
    assert {"site.yml", "verify.yml", "ansible.cfg", "requirements.yml"} <= set(site)
    assert any(path.startswith("roles/slurm/tasks/") for path in site)
    for path, text in site.items():
        assert rendered.get(path) == text, f"{path} is not a verbatim copy of the repository's"
    manifest = {line.split("\t")[0] for line in rendered[".clustergen-manifest"].splitlines()}
    assert set(site) <= manifest
