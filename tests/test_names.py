"""One name per idea across the package (issue 22): no two public classes, type aliases or
top-level functions of generator/clustergen share a name, and no two modules share a
base name, except the protocols docs/architecture.md lists ("One name per idea")."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from support.paths import REPO

PACKAGE = REPO / "generator" / "clustergen"

# A name every module of one subpackage defines: the subpackage's protocol.
PROTOCOLS = {
    "render": "outputs",  # each output family's render(cluster, env) -> list[Artifact]
    "check": "checks",  # a check module's one check, registered in checks.CHECKS
    "execute": "cli",  # each command's execute(args) -> exit code
}
# The command line's modules, one per command, each named after the command it runs,
# which may also be the name of the module or package that does the work (cli/plan.py
# runs plan.py's make_plan).
COMMANDS = "cli"

# Subpackages whose modules are named after the spec section or family they serve, one
# module per subject in each: model/slurm.py, checks/slurm.py, outputs/slurm/,
# catalog/lustre.py, ... A base name may recur across these and only these.
LAYERS = ("catalog", "model", "checks", "outputs")

# A module every output family package holds: its derive code.
FAMILY_MODULES = {"derive"}


def _modules(root: Path) -> dict[str, ast.Module]:
    return {
        path.relative_to(root).as_posix(): ast.parse(path.read_text(encoding="utf-8"))
        for path in sorted(root.rglob("*.py"))
    }


def _public_names(tree: ast.Module) -> list[str]:
    """Classes, type aliases (a CapWords name bound at module level) and functions."""
    names = []
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name) and t.id[:1].isupper()]
        elif (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id[:1].isupper()
        ):
            names.append(node.target.id)
    return [n for n in names if not n.startswith("_") and not n.isupper()]


def duplicate_names(root: Path) -> dict[str, list[str]]:
    """Each public top-level name defined in more than one module, with its modules,
    less the protocols."""
    where: dict[str, list[str]] = defaultdict(list)
    for path, tree in _modules(root).items():
        for name in _public_names(tree):
            where[name].append(path)
    return {
        name: paths
        for name, paths in where.items()
        if len(paths) > 1
        and not (name in PROTOCOLS and all(p.split("/")[0] == PROTOCOLS[name] for p in paths))
    }


def duplicate_modules(root: Path) -> dict[str, list[str]]:
    """Each module base name (a package by its folder) held twice, less the layered
    subjects (one per layer in LAYERS) and the family modules."""
    where: dict[str, list[str]] = defaultdict(list)
    for path in _modules(root):
        parts = path.removesuffix(".py").split("/")
        if parts[-1] == "__init__":
            parts.pop()
        if parts:
            where[parts[-1]].append("/".join(parts))
    found = {}
    for name, all_paths in where.items():
        paths = [p for p in all_paths if p.split("/")[0] != COMMANDS or p == COMMANDS]
        if len(paths) < 2:
            continue
        if name in FAMILY_MODULES and all(p.startswith("outputs/") for p in paths):
            continue
        layers = [p.split("/")[0] for p in paths]
        in_layers = all(len(p.split("/")) > 1 and p.split("/")[0] in LAYERS for p in paths)
        if in_layers and len(set(layers)) == len(layers):  # once per layer
            continue
        found[name] = paths
    return found


def test_no_two_public_classes_or_functions_share_a_name() -> None:
    assert duplicate_names(PACKAGE) == {}


def test_no_two_modules_share_a_name() -> None:
    assert duplicate_modules(PACKAGE) == {}


def test_names_the_duplicates(tmp_path: Path) -> None:
    """The two scans find what they must: the same class in two modules, a protocol name
    outside its subpackage, a top-level module named as a layer's subject."""
    (tmp_path / "checks").mkdir()
    (tmp_path / "outputs" / "slurm").mkdir(parents=True)
    (tmp_path / "model").mkdir()
    (tmp_path / "resolve.py").write_text("class Cluster:\n    pass\n\ndef check(): ...\n")
    (tmp_path / "model" / "cluster.py").write_text("class Cluster:\n    pass\n")
    (tmp_path / "model" / "slurm.py").write_text("Action = int\n")
    (tmp_path / "checks" / "slurm.py").write_text("def check(): ...\n")
    (tmp_path / "checks" / "hardware.py").write_text("def check(): ...\n")
    (tmp_path / "outputs" / "slurm" / "__init__.py").write_text("def render(): ...\n")
    (tmp_path / "outputs" / "slurm" / "derive.py").write_text("Action = str\n")
    (tmp_path / "slurm.py").write_text("")
    # A command's module beside the module that does its work is no duplicate; its
    # execute() is the command line's protocol, which no other module may define.
    (tmp_path / "cli").mkdir()
    (tmp_path / "cli" / "plan.py").write_text("def execute(): ...\n")
    (tmp_path / "cli" / "lock.py").write_text("def execute(): ...\n")
    (tmp_path / "plan.py").write_text("def execute(): ...\n")
    assert duplicate_names(tmp_path) == {
        "Cluster": ["model/cluster.py", "resolve.py"],
        "Action": ["model/slurm.py", "outputs/slurm/derive.py"],
        "check": ["checks/hardware.py", "checks/slurm.py", "resolve.py"],
        "execute": ["cli/lock.py", "cli/plan.py", "plan.py"],
    }
    assert duplicate_modules(tmp_path) == {
        "slurm": ["checks/slurm", "model/slurm", "outputs/slurm", "slurm"],
    }
