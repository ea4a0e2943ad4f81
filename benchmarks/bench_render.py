"""Whole `clustergen validate` and `render` runs against their yardsticks, measured in
the same run.

Run: python benchmarks/bench_render.py [--runs N]  (prints Markdown; writes only under a
temp dir)

- Large specs (clustergen.dev.large_spec) at 1,024, 4,096 and 16,384 nodes, in both forms:
  compact (patterns) and written out (`clustergen expand`'s long form). For each: the
  CLI's `validate SPEC` and `render SPEC -o DIR` (into a fresh DIR every run, so every
  file is written) as fresh processes, their peak RSS and the render's CPU time (user +
  system: on a shared machine the wall time also holds the wait for other work and for
  the disk to take the synced files), and PyYAML's CSafeLoader merely loading the same
  file, as the floor; the median of N runs (default 5) each.
- The 8-node reference spec: `render` against `ansible-inventory --list` on its own
  rendered inventory, both fresh processes.

Targets live here and in RESULTS.md, never in tests: the machines are shared and noisy.

Run it on a file system that has not lost many files in the last six minutes. ext4
without a journal (this project's CI-class machines) does not reuse an inode freed in
the last few minutes (up to five), and every file created scans past each of them
(`recently_deleted` in fs/ext4/ialloc.c): after a test run or an earlier benchmark
removed its trees, a 16k render's 8,350 creations cost seconds of system time. The
benchmark removes its own trees only when it ends.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yaml
from child import measure_child

from clustergen.dev.large_spec import (
    compact_rail_spec,
    compact_spec,
    large_rail_spec,
    large_spec,
)

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SIZES = (1024, 4096, 16384)
FORMS = (
    ("compact", compact_spec),
    ("written out", large_spec),
    ("rails compact", compact_rail_spec),
    ("rails written out", large_rail_spec),
)


def median_of(runs: int, action: Callable[[int], object]) -> float:
    times = []
    for number in range(runs):
        start = time.perf_counter()
        action(number)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _peak(
    rss: dict[str, float], cpu: dict[str, list[float]], command: str, *args: str | Path
) -> None:
    """Run `clustergen COMMAND ARGS`, keeping the largest peak RSS it reached and its
    CPU time."""
    got = measure_child(BIN / "clustergen", command, *args)
    peak, used = got.rss_mib, got.cpu_seconds
    rss[command] = max(rss.get(command, 0.0), peak)
    cpu.setdefault(command, []).append(used)


def large(work: Path, runs: int) -> list[str]:
    rows = [
        "| nodes | form | spec lines | CSafeLoader load (s) | `validate` (s) | "
        "`render` (s) | render / load | render CPU (s) | validate RSS (MiB) | "
        "render RSS (MiB) |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    times: dict[tuple[str, int], float] = {}
    for nodes in SIZES:
        for form, make in FORMS:
            spec = work / f"{form.replace(' ', '-')}-{nodes}" / "spec.yaml"
            spec.parent.mkdir()
            text = make(nodes)
            spec.write_text(text, encoding="utf-8")
            load = median_of(runs, lambda _n, text=text: yaml.load(text, Loader=yaml.CSafeLoader))
            rss: dict[str, float] = {}
            cpu: dict[str, list[float]] = {}
            checked = median_of(
                runs, lambda _n, spec=spec, rss=rss, cpu=cpu: _peak(rss, cpu, "validate", spec)
            )
            rendered = median_of(
                runs,
                lambda n, spec=spec, rss=rss, cpu=cpu: _peak(
                    rss, cpu, "render", spec, "-o", spec.parent / f"out{n}"
                ),
            )
            times[(form, nodes)] = rendered
            rows.append(
                f"| {nodes} | {form} | {text.count(chr(10))} | {load:.3f} | {checked:.3f} | "
                f"{rendered:.3f} | {rendered / load:.2f} | "
                f"{statistics.median(cpu['render']):.3f} | {rss['validate']:.0f} | "
                f"{rss['render']:.0f} |"
            )
    rows.append("")
    for form, _ in FORMS:
        ratio = times[(form, 16384)] / times[(form, 1024)]
        rows.append(f"- {form}: 16k/1k render time ratio {ratio:.1f} (target <= 16)")
    return rows


def small(work: Path, runs: int) -> list[str]:
    spec = REPO / "examples" / "ml-training-8node.yaml"
    out = work / "small"
    render_argv = (BIN / "clustergen", "render", spec, "-o", out)
    measure_child(*render_argv)
    render = median_of(runs, lambda _n: measure_child(*render_argv))
    listing = (BIN / "ansible-inventory", "-i", "inventory/", "--list")
    inventory = median_of(runs, lambda _n: measure_child(*listing, cwd=out))
    return [
        "| `clustergen render` 8-node (s) | `ansible-inventory --list` (s) | ratio |",
        "|---:|---:|---:|",
        f"| {render:.3f} | {inventory:.3f} | {render / inventory:.2f} |",
    ]


def main() -> None:
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 5
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        print("\n".join([*large(work, runs), "", *small(work, runs)]))


if __name__ == "__main__":
    main()
