"""One child process, run to its end and measured: what the benchmarks time and weigh.
Imported by the bench_*.py scripts, which run from this folder.

Each command is started by a small launcher process, never by the benchmark itself. On
Linux a process's peak resident memory (wait4's ru_maxrss) starts from that of the
process it was forked from: vfork (what subprocess uses) hands on the benchmark's own
peak, fork its current size. A benchmark holding a 600 MB tree would weigh `/bin/true`
at 600 MB. The launcher, a bare Python of a few MB started at the first measurement,
forks each command from itself, so a command weighs its own peak, or the launcher's
few MB where that is less.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO


@dataclass(frozen=True)
class Child:
    seconds: float  # wall time
    rss_mib: float  # the child's own peak resident memory (wait4's ru_maxrss)
    cpu_seconds: float  # user + system
    status: int = 0  # its exit status


# The launcher's loop: read (argv, cwd, open-files limit) pickled from standard input;
# fork, set the limit, exec with standard output to /dev/null and standard error to a
# temporary file; wait4; write back (exit status, seconds, peak KiB, CPU seconds, the
# end of standard error).
_LAUNCHER = r"""
import os, pickle, resource, tempfile, time
source, sink = os.fdopen(0, "rb"), os.fdopen(1, "wb")
while True:
    try:
        argv, cwd, open_files = pickle.load(source)
    except EOFError:
        break
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            try:
                if cwd is not None:
                    os.chdir(cwd)
                if open_files is not None:
                    resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))
                null = os.open(os.devnull, os.O_RDWR)
                os.dup2(null, 0)
                os.dup2(null, 1)
                os.dup2(err.fileno(), 2)
                os.execvp(argv[0], argv)
            finally:
                os._exit(127)
        _, status, usage = os.wait4(pid, 0)
        seconds = time.perf_counter() - start
        err.seek(0)
        text = err.read()[-20000:].decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    pickle.dump((code, seconds, usage.ru_maxrss, usage.ru_utime + usage.ru_stime, text), sink)
    sink.flush()
"""


class _Launcher:
    process: subprocess.Popen[bytes] | None = None

    @classmethod
    def run(
        cls, argv: list[str], cwd: Path | None, open_files: int | None
    ) -> tuple[int, float, int, float, str]:
        if cls.process is None:
            cls.process = subprocess.Popen(
                [sys.executable, "-S", "-c", _LAUNCHER],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
        stdin: IO[bytes] | None = cls.process.stdin
        stdout: IO[bytes] | None = cls.process.stdout
        assert stdin is not None and stdout is not None
        pickle.dump((argv, None if cwd is None else str(cwd), open_files), stdin)
        stdin.flush()
        result: tuple[int, float, int, float, str] = pickle.load(stdout)
        return result


def measure_child(
    *argv: str | Path,
    cwd: Path | None = None,
    open_files: int | None = None,
    ok: tuple[int, ...] = (0,),
) -> Child:
    """Run one command to completion from the launcher (under an open-files limit where
    given); exit with its standard error if its status is not one of `ok`."""
    words = [str(a) for a in argv]
    code, seconds, rss_kib, cpu, err = _Launcher.run(words, cwd, open_files)
    if code not in ok:
        raise SystemExit(f"{' '.join(words)}: exit {code}: {err}")
    return Child(seconds, rss_kib / 1024, cpu, code)
