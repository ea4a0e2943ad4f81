"""The rendered inventory as Ansible loads it, against the render that wrote it, measured
in the same run (issue 27, "An inventory that scales").

Run: python benchmarks/bench_inventory.py [--runs N] [--sizes 1024,4096,16384]
(prints Markdown; writes only under a temp dir)

For the compact benchmark spec (clustergen.dev.large_spec.compact_spec) and its
rail-optimised form (compact_rail_spec) at 1,024, 4,096 and 16,384 nodes, each a fresh
process:

- `clustergen render SPEC -o DIR` (into a fresh DIR every run);
- `ansible-inventory -i inventory --graph` in that tree, and its ratio to the render
  (target: at most 1.0);
- `ansible-inventory -i inventory --list`: its time and peak RSS (target: under 1 GB),
  and, beside it, `--list --export` (group variables kept on their groups);
- the growth from 1k to 16k of each (linear: 16x the nodes, at most 16x).

Times are the median of N runs (default 1: a 16k `--list` takes minutes); peak RSS is
the command's own (wait4's ru_maxrss, started by child.py's launcher). Targets live
here and in RESULTS.md, never in tests: the machines are shared and noisy.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from child import measure_child

from clustergen.dev.large_spec import compact_rail_spec, compact_spec

BIN = Path(sys.executable).parent
SIZES = (1024, 4096, 16384)
FORMS: tuple[tuple[str, Callable[[int], str]], ...] = (
    ("compact", compact_spec),
    ("rails compact", compact_rail_spec),
)
COMMANDS = {
    "graph": ("--graph",),
    "list": ("--list",),
    "export": ("--list", "--export"),
}


def measure(spec: Path, runs: int) -> dict[str, tuple[float, float]]:
    """command -> (median seconds, largest peak RSS in MiB) for one spec."""
    found: dict[str, list[tuple[float, float]]] = {}
    for number in range(runs):
        out = spec.parent / f"out{number}"
        render = measure_child(BIN / "clustergen", "render", spec, "-o", out)
        found.setdefault("render", []).append((render.seconds, render.rss_mib))
        for name, args in COMMANDS.items():
            inventory = (BIN / "ansible-inventory", "-i", "inventory", *args)
            got = measure_child(*inventory, cwd=out)
            found.setdefault(name, []).append((got.seconds, got.rss_mib))
    return {
        name: (statistics.median(s for s, _ in rows), max(r for _, r in rows))
        for name, rows in found.items()
    }


def table(work: Path, runs: int, sizes: tuple[int, ...]) -> list[str]:
    rows = [
        "| nodes | form | `render` (s) | `--graph` (s) | graph / render | graph RSS (MiB) | "
        "`--list` (s) | list RSS (MiB) | `--list --export` (s) | export RSS (MiB) |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    figures: dict[tuple[str, int], dict[str, tuple[float, float]]] = {}
    for nodes in sizes:
        for form, make in FORMS:
            spec = work / f"{form.replace(' ', '-')}-{nodes}" / "spec.yaml"
            spec.parent.mkdir()
            spec.write_text(make(nodes), encoding="utf-8")
            got = figures[(form, nodes)] = measure(spec, runs)
            render, graph = got["render"][0], got["graph"][0]
            rows.append(
                f"| {nodes} | {form} | {render:.2f} | {graph:.2f} | {graph / render:.2f} | "
                f"{got['graph'][1]:.0f} | {got['list'][0]:.1f} | {got['list'][1]:.0f} | "
                f"{got['export'][0]:.1f} | {got['export'][1]:.0f} |"
            )
    rows.append("")
    first, last = sizes[0], sizes[-1]
    for form, _ in FORMS:
        a, b = figures[(form, first)], figures[(form, last)]
        growth = ", ".join(
            f"{name} time {b[name][0] / a[name][0]:.1f}x RSS {b[name][1] / a[name][1]:.1f}x"
            for name in ("render", "graph", "list", "export")
        )
        rows.append(f"- {form}, {last // first}x the nodes ({first} to {last}): {growth}")
    return rows


def main() -> None:
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 1
    sizes = SIZES
    if "--sizes" in sys.argv:
        sizes = tuple(int(n) for n in sys.argv[sys.argv.index("--sizes") + 1].split(","))
    with tempfile.TemporaryDirectory() as scratch:
        print("\n".join(table(Path(scratch), runs, sizes)))


if __name__ == "__main__":
    main()
