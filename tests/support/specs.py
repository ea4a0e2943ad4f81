"""The example specs as data, and a spec validated in memory: what many tests start from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from clustergen.base.artifacts import Artifact
from clustergen.render import render_all
from clustergen.resolve import ResolvedCluster
from clustergen.spec.load import LoadedSpec, load_spec
from clustergen.validate import validate_cluster

from support.paths import EXAMPLES

Data = dict[str, Any]


def example_data(name: str = "ml-training-8node") -> Data:
    """examples/<name>.yaml as written (patterns unexpanded), a fresh copy each call."""
    data: Data = yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text())
    return data


def validated(data: Data) -> tuple[ResolvedCluster, list[str]]:
    """The resolved cluster of a valid spec, and the codes of its warnings, in order."""
    cluster, problems = validate_cluster(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))
    assert cluster is not None, [p.format() for p in problems]
    return cluster, [p.code.name for p in problems]


def render_text(
    text: str, directory: Path, name: str = "ml-training-8node.yaml"
) -> dict[str, Artifact]:
    """Every artifact of a valid spec's text, written as <directory>/<name> and loaded
    from there as the CLI would."""
    spec = directory / name
    spec.write_text(text, encoding="utf-8")
    cluster, problems = validate_cluster(load_spec(str(spec)))
    assert cluster is not None, [p.format() for p in problems]
    return render_all(cluster)
