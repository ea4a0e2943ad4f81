"""Every rendered file of each reference spec, compared as a whole tree with its golden tree.

The golden trees hold what clustergen generates. The 8-node reference's is the top of
this repository, which is the render of spec.yaml (a link to
examples/ml-training-8node.yaml); the others' are under tests/golden/. The Ansible site files every
render also carries (site.yml, verify.yml, ansible.cfg, requirements.yml, roles/)
are verbatim copies of this repository's own; a test here holds them to that
instead of keeping two more copies of every role under tests/golden/.
"""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path

import pytest

from clustergen.cli import main
from clustergen.render import render_all
from clustergen.spec.load import load_spec
from clustergen.validate import validate_cluster
from clustergen.write.manifest import with_manifest

from support.paths import DATA, EXAMPLES, REFERENCE_SPECS, REPO, ROOT_SPEC
from support.regen import REFRESH
from support.trees import generated_only, golden_dir, golden_tree, site_sources

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
    home = golden_dir(spec_path.stem)
    if update_golden:
        _refresh(spec_path, home)
        return
    golden = golden_tree(spec_path.stem)
    rendered = generated_only(rendered_tree(spec_path))
    where = "" if home == REPO else f"{home.relative_to(REPO)}/"
    report = []
    for path in sorted(set(golden) | set(rendered)):
        if path not in rendered:
            report.append(f"missing from the render: {where}{path}")
        elif path not in golden:
            report.append(f"not in the golden tree: {where}{path}")
        elif golden[path] != rendered[path]:
            report.extend(
                difflib.unified_diff(
                    golden[path].splitlines(),
                    rendered[path].splitlines(),
                    f"committed/{where}{path}",
                    f"rendered/{path}",
                    lineterm="",
                )
            )
    assert not report, "\n".join([*report, f"\nIf the change is intended, run: {REFRESH}"])


def _refresh(spec_path: Path, home: Path) -> None:
    if home == REPO:
        # The top is a site repository: render into it as a user would, so its manifest
        # and the removal of files the spec no longer renders are the command's own.
        assert main(["render", str(ROOT_SPEC), "-o", str(REPO)]) == 0
        return
    shutil.rmtree(home, ignore_errors=True)
    for path, text in generated_only(rendered_tree(spec_path)).items():
        (home / path).parent.mkdir(parents=True, exist_ok=True)
        (home / path).write_text(text, encoding="utf-8")


def test_the_repository_top_is_the_render_of_spec_yaml(cli, update_golden: bool) -> None:  # type: ignore[no-untyped-def]
    """spec.yaml is the 8-node reference itself (a link, not a copy kept in step) and
    the top of this repository is its render, the golden tree of that spec: a change
    that makes the committed tree stale fails here. roles/ and the playbooks are both
    the sources and their own render (the site family copies them verbatim), so
    rendering never changes them."""
    assert ROOT_SPEC.is_symlink()
    assert ROOT_SPEC.resolve() == (EXAMPLES / "ml-training-8node.yaml").resolve()
    assert golden_dir("ml-training-8node") == REPO
    if update_golden:
        assert cli("render", str(ROOT_SPEC), "-o", str(REPO)).code == 0
    result = cli("render", str(ROOT_SPEC), "-o", str(REPO), "--check")
    assert result.code == 0, result.err + f"\nIf the change is intended, run: {REFRESH}"


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
