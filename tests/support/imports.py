"""The import graph of a package, read with `ast` (nothing is imported): every import
statement anywhere in a module (at module level, inside functions, under
TYPE_CHECKING), absolute and relative, with `from package import name` going to the
submodule `package.name` where there is one, else to `package` itself.

An import of `a.b.c` is an edge to `a.b.c` only, not to the packages `a` and `a.b`
whose __init__ Python runs first: a package's __init__ importing its own submodules
(outputs/__init__.py gathering the families) is not a cycle with each of them.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

Graph = dict[str, set[str]]


def modules(root: Path, package: str) -> dict[str, Path]:
    """Every module of the package in folder `root` (which holds its __init__.py), by
    dotted name; a package by its own name (its __init__.py)."""
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join((package, *parts))] = path
    return found


def import_graph(root: Path, package: str) -> Graph:
    """Module -> the package's modules it imports (other packages' modules left out)."""
    known = modules(root, package)
    return {name: set(_imports(name, path, known)) for name, path in known.items()}


def _imports(name: str, path: Path, known: Mapping[str, Path]) -> Iterable[str]:
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield from _known(alias.name, known)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(name, is_package, node.module, node.level)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                yield from _known(submodule if submodule in known else base, known)


def _absolute(name: str, is_package: bool, module: str | None, level: int) -> str:
    """The absolute name `from <level dots><module> import ...` means in module `name`."""
    if level == 0:
        return module or ""
    # A package's own name is its folder: one dot is the package itself.
    parts = name.split(".")
    anchor = parts if is_package else parts[:-1]
    anchor = anchor[: len(anchor) - (level - 1)]
    return ".".join([*anchor, module] if module else anchor)


def _known(module: str, known: Mapping[str, Path]) -> Iterable[str]:
    if module in known:
        yield module


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """One cycle (a list of modules, the first repeated at its end) for every strongly
    connected group of modules that has one, in a stable order (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1 or node in graph.get(node, ()):
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(_one_cycle(group, graph) for group in groups)


def _one_cycle(group: list[str], graph: Mapping[str, set[str]]) -> list[str]:
    """A shortest cycle through the group's first module, staying inside the group."""
    start = group[0]
    members = set(group)
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for target in sorted(graph.get(node, ())):
            if target == start:
                return [*paths[node], start]
            if target in members and target not in paths:
                paths[target] = [*paths[node], target]
                queue.append(target)
    raise AssertionError(f"no cycle through {start}")  # a strongly connected group has one


class Layer(NamedTuple):
    name: str
    modules: tuple[str, ...]  # dotted names; a package's name covers all it holds
    sits_on: tuple[str, ...]  # the layers right below


def layers(markdown: str, heading: str, package: str) -> list[Layer]:
    """The layer table under `heading` in a markdown document: one row a layer, its
    modules in backquotes (`name.py` a module, `name/` a package and all below it,
    `__init__.py` the package itself), and the layers it sits on."""
    section = markdown.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]
    found = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) != 3 or cells[0] in ("layer", "---"):
            continue
        found.append(
            Layer(
                cells[0],
                tuple(_module(name, package) for name in re.findall(r"`([^`]+)`", cells[1])),
                tuple(name.strip() for name in cells[2].split(",") if name.strip()),
            )
        )
    return found


def _module(written: str, package: str) -> str:
    if written == "__init__.py":
        return package
    return ".".join((package, *written.removesuffix("/").removesuffix(".py").split("/")))


def layer_of(module: str, table: Sequence[Layer]) -> str | None:
    """The layer whose most specific entry holds the module. The package's own entry
    (`__init__.py`) holds the package alone: a module of no row has no layer."""
    best: tuple[int, str] | None = None
    for layer in table:
        for entry in layer.modules:
            below = module.startswith(entry + ".") and "." in entry
            holds = module == entry or below
            if holds and (best is None or len(entry) > best[0]):
                best = (len(entry), layer.name)
    return best[1] if best else None


def below(table: Sequence[Layer]) -> dict[str, set[str]]:
    """Layer -> every layer it may import from: itself and all it sits on, transitively."""
    sits_on = {layer.name: set(layer.sits_on) for layer in table}
    reach: dict[str, set[str]] = {}
    for name in sits_on:
        seen, todo = {name}, [name]
        while todo:
            for lower in sits_on.get(todo.pop(), set()):
                if lower not in seen:
                    seen.add(lower)
                    todo.append(lower)
        reach[name] = seen
    return reach


def upward_imports(graph: Mapping[str, set[str]], table: Sequence[Layer]) -> list[str]:
    """Every import of a module from a layer its own layer does not sit on."""
    allowed = below(table)
    found = []
    for module in sorted(graph):
        home = layer_of(module, table)
        for target in sorted(graph[module]):
            there = layer_of(target, table)
            if home is not None and there is not None and there not in allowed[home]:
                found.append(f"{module} ({home}) imports {target} ({there})")
    return found
