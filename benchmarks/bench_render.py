"""Whole `clustergen render` runs against their yardsticks, measured in the same run.

Run: python benchmarks/bench_render.py  (prints Markdown; writes only under a temp dir)

- Large specs (benchmarks/large_spec.py: every node racked, A/B feeds): the CLI's
  `render SPEC -o DIR` as a fresh process, against PyYAML's CSafeLoader merely
  loading the same file, with the 16k/1k time ratio and peak RSS.
- The 8-node reference spec: `render` against `ansible-inventory --list` on its
  own rendered inventory, both fresh processes.

Each figure is the best of 3 runs. Targets live here and in RESULTS.md, never
in tests: the machines are shared and noisy.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yaml
from large_spec import large_spec

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SIZES = (1024, 4096, 16384)
RUNS = 3


def best_of(runs: int, action: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def run(*argv: str | Path, cwd: Path | None = None) -> None:
    subprocess.run([str(a) for a in argv], check=True, cwd=cwd, capture_output=True)


def peak_rss_mib(*argv: str | Path) -> float:
    """Peak resident memory of one child process, in MiB."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    run(*argv)
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(after, before) / 1024


def large(work: Path) -> list[str]:
    rows = [
        "| nodes | spec lines | CSafeLoader load (s) | `clustergen render` (s) | ratio | "
        "peak RSS (MiB) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    times = {}
    for nodes in SIZES:
        spec = work / f"large-{nodes}.yaml"
        text = large_spec(nodes)
        spec.write_text(text, encoding="utf-8")
        load = best_of(RUNS, lambda text=text: yaml.load(text, Loader=yaml.CSafeLoader))
        out = work / f"out-{nodes}"
        render = best_of(
            RUNS, lambda spec=spec, out=out: run(BIN / "clustergen", "render", spec, "-o", out)
        )
        rss = peak_rss_mib(BIN / "clustergen", "render", spec, "-o", work / f"rss-{nodes}")
        times[nodes] = render
        lines = text.count("\n")
        rows.append(
            f"| {nodes} | {lines} | {load:.3f} | {render:.3f} | {render / load:.2f} | {rss:.0f} |"
        )
    rows.append("")
    rows.append(f"16k/1k render time ratio: {times[16384] / times[1024]:.1f} (target <= 16)")
    return rows


def small(work: Path) -> list[str]:
    spec = REPO / "examples" / "ml-training-8node.yaml"
    out = work / "small"
    run(BIN / "clustergen", "render", spec, "-o", out)
    render = best_of(RUNS, lambda: run(BIN / "clustergen", "render", spec, "-o", out))
    inventory = best_of(
        RUNS, lambda: run(BIN / "ansible-inventory", "-i", "inventory/", "--list", cwd=out)
    )
    return [
        "| `clustergen render` 8-node (s) | `ansible-inventory --list` (s) | ratio |",
        "|---:|---:|---:|",
        f"| {render:.3f} | {inventory:.3f} | {render / inventory:.2f} |",
    ]


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        print("\n".join([*large(work), "", *small(work)]))


if __name__ == "__main__":
    main()
