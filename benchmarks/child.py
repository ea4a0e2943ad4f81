"""One child process, run to its end and measured: what the benchmarks time and weigh.
Imported by the bench_*.py scripts, which run from this folder."""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Child:
    seconds: float  # wall time
    rss_mib: float  # the child's own peak resident memory (wait4's ru_maxrss)
    cpu_seconds: float  # user + system


def measure_child(*argv: str | Path, cwd: Path | None = None) -> Child:
    """Run one child to completion; exit with its stderr if it fails."""
    start = time.perf_counter()
    child = subprocess.Popen(
        [str(a) for a in argv], cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    if status != 0:
        assert child.stderr is not None
        raise SystemExit(f"{' '.join(map(str, argv))} failed: {child.stderr.read().decode()}")
    return Child(seconds, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime)
