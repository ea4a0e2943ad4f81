"""Reading a large spec: clustergen's reader against PyYAML's fastest plain load.

Run: python benchmarks/bench_load.py  (prints a Markdown table; writes only to a
temporary directory)

For each size, clustergen.dev.large_spec writes a spec with every node placed in a
rack; the table gives the best of 3 runs of PyYAML's `yaml.load` with CSafeLoader
(libyaml, plain data, no positions) and of `clustergen.spec.load.parse_spec` (libyaml,
plain data, positions, floats as written, alias and tag guards) on the same text,
and their ratio. Validation is not included.
"""

from __future__ import annotations

import os
import platform
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from clustergen.dev.large_spec import large_spec
from clustergen.spec.load import parse_spec

SIZES = (1024, 4096, 16384)


def best_of(runs: int, action: Callable[[], Any]) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - start)
    return best


def machine() -> str:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor() or "unknown CPU",
    )
    return (
        f"{os.cpu_count()} CPUs ({cpu}), Python {platform.python_version()}, "
        f"PyYAML {yaml.__version__} with libyaml: {yaml.__with_libyaml__}"
    )


def main() -> None:
    print(machine())
    print()
    print("| nodes | spec bytes | CSafeLoader `yaml.load` (s) | `parse_spec` (s) | ratio |")
    print("|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as scratch:
        for nodes in SIZES:
            path = Path(scratch) / f"spec-{nodes}.yaml"
            path.write_text(large_spec(nodes), encoding="utf-8")
            text = path.read_text(encoding="utf-8")
            plain = best_of(3, partial(yaml.load, text, Loader=yaml.CSafeLoader))
            ours = best_of(3, partial(parse_spec, text, path.name, path.name))
            row = [nodes, len(text.encode()), f"{plain:.3f}", f"{ours:.3f}", f"{ours / plain:.2f}"]
            print("| " + " | ".join(str(cell) for cell in row) + " |")


if __name__ == "__main__":
    main()
