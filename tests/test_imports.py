"""No import cycles and no upward imports in generator/clustergen/: every import statement
(at module level and inside functions, absolute and relative) read with `ast`, against
the layer table of docs/architecture.md ("Imports: layers, no cycles")."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib  # pytest's own dependency there

from support.imports import (
    Layer,
    below,
    cycles,
    import_graph,
    layer_of,
    layers,
    modules,
    upward_imports,
)
from support.paths import REPO

# The repository's own files: the fast matrix leaves this to the main run.
pytestmark = pytest.mark.repository

PACKAGE = REPO / "generator" / "clustergen"
HEADING = "## Imports: layers, no cycles"


def _table() -> list[Layer]:
    return layers((REPO / "docs" / "architecture.md").read_text(), HEADING, "clustergen")


def test_no_import_cycles() -> None:
    found = cycles(import_graph(PACKAGE, "clustergen"))
    assert found == [], "import cycles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_no_upward_imports() -> None:
    found = upward_imports(import_graph(PACKAGE, "clustergen"), _table())
    assert found == [], "imports against the layers of docs/architecture.md:\n" + "\n".join(found)


def data_packages(package: str) -> frozenset[str]:
    """The package's data folders that pyproject.toml maps from elsewhere (package-dir:
    the templates and the site files), which the wheel, or a copy that imports from the
    checkout, puts beside the modules: no layer's, as they hold no code."""
    with (REPO / "pyproject.toml").open("rb") as file:
        mapped = tomllib.load(file)["tool"]["setuptools"]["package-dir"]
    return frozenset(
        name.removeprefix(package + ".") for name in mapped if name.startswith(package + ".")
    )


def unplaced_entries(
    root: Path, table: list[Layer], package: str, data: frozenset[str] = frozenset()
) -> list[str]:
    """Top-level modules and folders of the package (caches and the data folders
    aside) that no row of the table names: the folders show the layers, so each
    is one row's entry."""
    named = {module.removeprefix(package + ".") for layer in table for module in layer.modules}
    entries = {
        path.stem
        for path in root.iterdir()
        if path.name != "__pycache__"
        and not path.name.startswith(".")  # a tool's cache (.mypy_cache), never a module
        and (path.is_dir() or path.suffix == ".py")
    }
    return sorted(entries - named - data - {"__init__"})


def test_the_folders_are_the_layers() -> None:
    data = data_packages("clustergen")
    assert data == {"templates", "site"}  # pyproject.toml read as meant
    assert unplaced_entries(PACKAGE, _table(), "clustergen", data) == [], (
        "a top-level module or folder of generator/clustergen/ that is no layer's entry in "
        "docs/architecture.md: move it into its layer's folder"
    )


def test_a_module_beside_the_layers_is_named(tmp_path: Path) -> None:
    package = _package(
        tmp_path, {"__init__.py": "", "spec/__init__.py": "", "helpers.py": "", "util/x.py": ""}
    )
    table = [Layer("base", ("pkg",), ()), Layer("spec", ("pkg.spec",), ("base",))]
    assert unplaced_entries(package, table, "pkg") == ["helpers", "util"]
    (package / ".mypy_cache").mkdir()  # a tool's cache
    (package / "templates").mkdir()  # a data folder, as the wheel has it
    assert unplaced_entries(package, table, "pkg", frozenset({"templates"})) == ["helpers", "util"]
    assert unplaced_entries(package, table, "pkg") == ["helpers", "templates", "util"]


def test_every_module_has_a_layer() -> None:
    table = _table()
    unplaced = [name for name in modules(PACKAGE, "clustergen") if layer_of(name, table) is None]
    assert unplaced == [], f"add these to the layer table of docs/architecture.md: {unplaced}"
    named = {layer.name for layer in table}
    unknown = {lower for layer in table for lower in layer.sits_on} - named
    assert not unknown, f"layers named under 'sits on' but not defined: {unknown}"


def family_crossings(graph: dict[str, set[str]]) -> list[str]:
    """Imports from one output family into another's modules: what families share
    (settings, names, figures) lives below them, in the resolve layer or the catalog."""
    found = []
    for module, imported in sorted(graph.items()):
        family = _family(module)
        if family is None:
            continue
        for target in sorted(imported):
            other = _family(target)
            if other is not None and other != family:
                found.append(f"{module} imports {target}")
    return found


def _family(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["clustergen", "outputs"] else None


def test_no_family_imports_another() -> None:
    found = family_crossings(import_graph(PACKAGE, "clustergen"))
    assert found == [], "move what two families share below them (docs/architecture.md):\n" + (
        "\n".join(found)
    )


def test_a_family_importing_another_is_named() -> None:
    graph = {
        "clustergen.outputs.nhc": {"clustergen.outputs.slurm.derive", "clustergen.spec.hosts"},
        "clustergen.outputs.slurm.derive": {"clustergen.outputs.slurm.reboot"},
        "clustergen.outputs.ansible": {"clustergen.outputs"},
    }
    assert family_crossings(graph) == [
        "clustergen.outputs.nhc imports clustergen.outputs.slurm.derive"
    ]


def test_layer_table_says_what_the_doc_promises() -> None:
    """The table is read as meant (a misread table would let anything through)."""
    allowed = below(_table())
    assert {"checks", "outputs", "render", "cli"}.isdisjoint(allowed["model"])
    assert {"checks", "validate", "render", "write", "commands", "cli"}.isdisjoint(
        allowed["outputs"]
    )
    assert {"checks", "validate", "templating", "outputs"}.isdisjoint(allowed["resolve"])
    assert {"outputs", "render"}.isdisjoint(allowed["templating"])
    assert {"resolve", "render", "outputs"}.isdisjoint(allowed["write"])
    assert {"model", "resolve", "templating"} <= allowed["outputs"]


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "pkg"


def test_walker_finds_a_cycle_hidden_in_a_function(tmp_path: Path) -> None:
    """A cycle through a function-level import, a relative `from . import x` (a
    submodule) and `from ..x import name` (a name of a module) is found and named."""
    package = _package(
        tmp_path,
        {
            "__init__.py": "",
            "top.py": "from pkg.sub import low\n",  # not part of the cycle
            "render.py": "def run():\n    from . import families\n    return families\n",
            "families.py": "from pkg.sub import low\n",
            "sub/__init__.py": "",
            "sub/low.py": "import os\n\ndef text():\n    from ..render import run\n",
        },
    )
    graph = import_graph(package, "pkg")
    assert graph["pkg.render"] == {"pkg.families"}
    assert graph["pkg.sub.low"] == {"pkg.render"}  # os is not the package's
    assert cycles(graph) == [["pkg.families", "pkg.sub.low", "pkg.render", "pkg.families"]]


def test_walker_finds_no_cycle_where_there_is_none(tmp_path: Path) -> None:
    """A package's __init__ importing its own submodules, each importing a sibling by
    absolute name, is no cycle."""
    package = _package(
        tmp_path,
        {
            "__init__.py": "",
            "outputs/__init__.py": "from pkg.outputs import a, b\n",
            "outputs/a.py": "from pkg.outputs.b import x\n",
            "outputs/b.py": "x = 1\n",
        },
    )
    graph = import_graph(package, "pkg")
    assert graph["pkg.outputs"] == {"pkg.outputs.a", "pkg.outputs.b"}
    assert cycles(graph) == []


def test_an_upward_import_is_named() -> None:
    """An import the table forbids is reported; one it allows is not."""
    graph = {
        "clustergen.model.root": {"clustergen.checks.slurm", "clustergen.base.codes"},
        "clustergen.outputs.facility": {"clustergen.validate", "clustergen.templating"},
    }
    assert upward_imports(graph, _table()) == [
        "clustergen.model.root (model) imports clustergen.checks.slurm (checks)",
        "clustergen.outputs.facility (outputs) imports clustergen.validate (validate)",
    ]


@pytest.mark.parametrize(
    ("module", "layer"),
    [
        ("clustergen", "base"),
        ("clustergen.base.codes", "base"),
        ("clustergen.commands.twin.layout", "commands"),
        ("clustergen.model.root", "model"),
        ("clustergen.outputs.slurm.derive", "outputs"),
        ("clustergen.templating", "templating"),
        ("clustergen.spec.load", "spec"),
        ("clustergen.resolve", "resolve"),
        ("clustergen.resolve.fabric", "resolve"),
        ("clustergen.unplaced", None),
    ],
)
def test_modules_fall_into_their_layers(module: str, layer: str | None) -> None:
    assert layer_of(module, _table()) == layer
