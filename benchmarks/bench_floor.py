"""Issue 42's targets, each a ratio measured in one run: what render, validate, `render
--check`, `plan` and `audit` cost against the floor of the work they do, at 1k, 16k and
65,536 nodes, for the compact spec and its rail-optimised form.

Run: python benchmarks/bench_floor.py [--sizes 1024,16384,65536] [--forms compact,rails]
         [--dir DIR]   (prints Markdown; writes only under a temporary folder in DIR)

For each size and form, one after the other on an otherwise idle machine:
- the floor: PyYAML's CSafeLoader parsing the spec text, plus Python writing the
  rendered tree's bytes afresh (each folder made, each file opened, written and closed,
  then one syncfs, as the render ends with), both in this process, best of 3;
- `clustergen render SPEC -o DIR` into a fresh folder, `validate SPEC`, `render SPEC -o
  DIR --check` of the unchanged tree, and `plan SPEC2 -o DIR` of a one-node change (the
  last GPU node in a node group of its own with a feature, so one NodeName line
  changes): each a fresh process under an open-files limit of 1,024 (the usual soft
  limit of a login session), its wall time and peak RSS;
- `clustergen audit SPEC -o DIR FACTS` of every node's fact file, synthesized healthy
  from the rendered tree in the tools' formats (tests/support/audit_facts.py; the first
  node carries ibnetdiscover of every HCA cable), which must find nothing, so every
  report is read and every check runs: the same kind of process.

The targets (issue 42): render at most 1.3x the floor, the rail form at most 1.1x the
tree form, render's peak RSS under 1.5 GB at 65,536 nodes, growth from 16k to 65k at
most 4.4x; validate at most 0.5x the render; `--check`, plan and audit at most 1.0x.
Figures go in RESULTS.md, never in tests.
"""

from __future__ import annotations

import ctypes
import ipaddress
import itertools
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yaml
from child import Child, measure_child

from clustergen.commands.audit.expect import expectations, read_tree
from clustergen.dev.large_spec import compact_rail_spec, compact_spec
from clustergen.spec.load import parse_spec
from clustergen.validate import validate_cluster

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from support.audit_facts import healthy_facts, ibnetdiscover

BIN = Path(sys.executable).parent
FORMS: dict[str, Callable[[int], str]] = {"compact": compact_spec, "rails": compact_rail_spec}
OPEN_FILES = 1024
_LIBC = ctypes.CDLL(None, use_errno=True)


def run(*argv: str | Path, ok: tuple[int, ...] = (0,)) -> Child:
    """One clustergen process under the open-files limit, timed and weighed."""
    return measure_child(BIN / "clustergen", *argv, open_files=OPEN_FILES, ok=ok)


def tree_bytes(root: Path) -> dict[Path, bytes]:
    return {p.relative_to(root): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def write_floor(files: dict[Path, bytes], target: Path) -> float:
    """Python writing the same files afresh, folders first, then one syncfs."""
    start = time.perf_counter()
    for folder in sorted({target / path.parent for path in files}):
        folder.mkdir(parents=True, exist_ok=True)
    for path, data in files.items():
        fd = os.open(target / path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
    fd = os.open(target, os.O_RDONLY)
    try:
        _LIBC.syncfs(fd)
    finally:
        os.close(fd)
    return time.perf_counter() - start


def _write_and_remove(files: dict[Path, bytes], target: Path) -> float:
    seconds = write_floor(files, target)
    shutil.rmtree(target)
    return seconds


def best(times: list[float]) -> float:
    return min(times)


def one_node_change(text: str) -> str:
    """The last GPU node in a node group of its own, with a feature: its NodeName line
    and its node's variables change, and nothing else of the cluster."""
    match = re.search(r"(?m)^  - names: gpu\[(\d+)-(\d+)\]\n((?:    .*\n)+)", text)
    assert match is not None, "the GPU node group"
    first, last = match[1], match[2]
    width = len(last)
    body = match[3]
    addresses = dict(re.findall(r"(?m)^    (\w+_ip): (\S+)$", body))
    offset = int(last) - int(first)
    moved = "".join(
        f"    {key}: {ipaddress.ip_address(value) + offset}\n" for key, value in addresses.items()
    )
    kept = re.sub(r"(?m)^    \w+_ip: .*\n", "", body)
    rest = f"gpu[{first}-{int(last) - 1:0{width}d}]"
    group = f"  - names: {rest}\n{body}  - names: gpu{last}\n{kept}{moved}    features: [canary]\n"
    return text[: match.start()] + group + text[match.end() :]


def measure(work: Path, nodes: int, form: str) -> dict[str, float]:
    folder = work / f"{form}-{nodes}"
    folder.mkdir()
    text = FORMS[form](nodes)
    spec, changed = folder / "spec.yaml", folder / "changed.yaml"
    spec.write_text(text, encoding="utf-8")
    changed.write_text(one_node_change(text), encoding="utf-8")
    parse = best([_timed(lambda: yaml.load(text, Loader=yaml.CSafeLoader)) for _ in range(3)])
    out = folder / "out"
    render = run("render", spec, "-o", out)
    files = tree_bytes(out)
    write = best([_write_and_remove(files, folder / f"floor{n}") for n in range(3)])
    validate = run("validate", spec)
    check = run("render", spec, "-o", out, "--check")
    plan = run("plan", changed, "-o", out, ok=(4,))  # 4: changes to apply
    facts = write_facts(text, out, folder / "facts")
    audit = run("audit", spec, "-o", out, facts)
    floor = parse + write
    shutil.rmtree(folder)  # a 65k tree is over a GiB: one at a time
    return {
        "files": len(files),
        "mib": sum(map(len, files.values())) / 2**20,
        "parse": parse,
        "write": write,
        "floor": floor,
        "render": render.seconds,
        "render_rss": render.rss_mib,
        "validate": validate.seconds,
        "check": check.seconds,
        "check_rss": check.rss_mib,
        "plan": plan.seconds,
        "plan_rss": plan.rss_mib,
        "audit": audit.seconds,
        "audit_rss": audit.rss_mib,
    }


def write_facts(text: str, tree: Path, folder: Path) -> Path:
    """Every node's fact file, healthy, in `folder` (one file a node, as collect.yml)."""
    cluster, problems = validate_cluster(parse_spec(text, "spec.yaml", "spec.yaml"))
    assert cluster is not None, problems[:3]
    expected = expectations(cluster, read_tree(tree))
    scan = ibnetdiscover(expected)
    first = next(iter(expected))
    folder.mkdir()
    for name, node in expected.items():
        body = healthy_facts(name, node, scan if name == first else None)
        (folder / f"{name}.txt").write_text(body, encoding="utf-8")
    return folder


def _timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def table(results: dict[tuple[int, str], dict[str, float]]) -> list[str]:
    rows = [
        "| nodes | form | files | MiB | parse (s) | write (s) | `render` (s) | render / floor | "
        "render RSS (MiB) | `validate` / render | `--check` / render | `plan` / render | "
        "`audit` / render | check RSS (MiB) | plan RSS (MiB) | audit RSS (MiB) |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for (nodes, form), r in results.items():
        rows.append(
            f"| {nodes} | {form} | {r['files']:.0f} | {r['mib']:.0f} | {r['parse']:.3f} | "
            f"{r['write']:.2f} | {r['render']:.2f} | {r['render'] / r['floor']:.2f} | "
            f"{r['render_rss']:.0f} | {r['validate'] / r['render']:.2f} | "
            f"{r['check'] / r['render']:.2f} | {r['plan'] / r['render']:.2f} | "
            f"{r['audit'] / r['render']:.2f} | {r['check_rss']:.0f} | {r['plan_rss']:.0f} | "
            f"{r['audit_rss']:.0f} |"
        )
    rows.append("")
    sizes = sorted({nodes for nodes, _ in results})
    for nodes in sizes:
        if (nodes, "rails") in results and (nodes, "compact") in results:
            ratio = results[(nodes, "rails")]["render"] / results[(nodes, "compact")]["render"]
            rows.append(f"- {nodes} nodes: rail form / tree form render time {ratio:.2f}")
    for form in FORMS:
        have = [n for n in sizes if (n, form) in results]
        for small, large in itertools.pairwise(have):
            a, b = results[(small, form)], results[(large, form)]
            rows.append(
                f"- {form}, {small} to {large} nodes ({large / small:.0f}x): render time "
                f"{b['render'] / a['render']:.2f}x, RSS {b['render_rss'] / a['render_rss']:.2f}x"
            )
    return rows


def main() -> None:
    args = sys.argv[1:]

    def option(name: str, default: str) -> str:
        return args[args.index(name) + 1] if name in args else default

    sizes = [int(s) for s in option("--sizes", "1024,16384,65536").split(",")]
    forms = option("--forms", "compact,rails").split(",")
    base = option("--dir", tempfile.gettempdir())
    results: dict[tuple[int, str], dict[str, float]] = {}
    with tempfile.TemporaryDirectory(dir=base) as scratch:
        for nodes in sizes:
            for form in forms:
                results[(nodes, form)] = measure(Path(scratch), nodes, form)
                # Each row as it is measured, so a run cut short keeps what it had.
                print(table({(nodes, form): results[(nodes, form)]})[2], file=sys.stderr)
    print("\n".join(table(results)))


if __name__ == "__main__":
    main()
