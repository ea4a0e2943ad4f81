"""Every rendered file of each reference spec, compared as a whole tree with tests/golden/."""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path

import pytest

from clustergen.load import load_spec
from clustergen.render import render_all
from clustergen.validate import validate
from clustergen.write import with_manifest

from support.paths import GOLDEN, REFERENCE_SPECS
from support.trees import tree_on_disk

REFRESH = "pytest tests/test_golden.py --update-golden"


def rendered_tree(spec_path: Path) -> dict[str, str]:
    loaded = load_spec(str(spec_path))
    spec, problems = validate(loaded)
    assert spec is not None, [p.format() for p in problems]
    return {path: f.text for path, f in with_manifest(render_all(spec, loaded.name)).items()}


@pytest.mark.parametrize("spec_path", REFERENCE_SPECS, ids=lambda p: p.stem)
def test_rendered_tree_matches_golden(spec_path: Path, update_golden: bool) -> None:
    golden_dir = GOLDEN / spec_path.stem
    rendered = rendered_tree(spec_path)
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
