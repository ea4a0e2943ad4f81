"""Daemons as child processes: start, wait, stop, logs, ports, the local Slurm version."""

from __future__ import annotations

import ctypes
import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TypeVar

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
CLIENT_TIMEOUT_S = 30.0
LOG_TAIL_LINES = 80


class DaemonError(RuntimeError):
    """A daemon failed or could not be set up; the message carries the logs."""


PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Runs in the child before exec: the kernel kills it if its parent dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def read_file(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def log_tail(path: Path | None, lines: int = LOG_TAIL_LINES) -> str:
    if path is None or not path.exists():
        return "(no file)"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


class Daemon:
    """A foreground daemon that is a child of this process."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        output: Path,
        log: Path | None = None,
    ) -> None:
        self.name = name
        self.output = output
        self.log = log
        with output.open("wb") as out:
            self.proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=dict(env),
                preexec_fn=die_with_parent,
                # Out of the terminal's process group: Ctrl-C reaches only the owner,
                # which stops its daemons in order.
                start_new_session=True,
            )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def describe(self) -> str:
        status = "running" if self.proc.poll() is None else f"exited with {self.proc.returncode}"
        # Slurm daemons in the foreground (-D) print every log line on stderr
        # too, plus what comes before the log file is open, so their output is
        # the fuller record; mariadbd writes only to its log file.
        shown = self.output if read_file(self.output).strip() or self.log is None else self.log
        return f"{self.name} (pid {self.pid}) {status}\n--- {shown} ---\n{log_tail(shown)}"

    def raise_if_exited(self) -> None:
        if self.proc.poll() is not None:
            raise DaemonError(f"{self.name} exited early\n{self.describe()}")

    def stop(self) -> None:
        self.terminate()
        self.wait_or_kill(time.monotonic() + STOP_TIMEOUT_S)

    def terminate(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()

    def wait_or_kill(self, deadline: float) -> None:
        """Wait for the daemon to end until `deadline` (time.monotonic()), then kill it."""
        try:
            self.proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class DaemonOwner:
    """Starts daemons as its children and stops them, newest first; a context manager.

    A subclass gives the daemons' environment (`env`) and where their output goes.
    """

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.daemons: list[Daemon] = []

    @property
    def env(self) -> dict[str, str]:
        return dict(os.environ)

    def _start(self, name: str, argv: Sequence[str], log: Path | None = None) -> Daemon:
        daemon = Daemon(name, argv, env=self.env, output=self.log_dir / f"{name}.out", log=log)
        self.daemons.append(daemon)
        return daemon

    def __enter__(self: OwnerT) -> OwnerT:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop every daemon: SIGTERM to each, newest first, then all waited for together,
        STOP_TIMEOUT_S in all before SIGKILL, so that a twin stopped on a loaded machine
        never takes a timeout per daemon; safe to call twice."""
        daemons, self.daemons = self.daemons[::-1], []
        for daemon in daemons:
            daemon.terminate()
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for daemon in daemons:
            daemon.wait_or_kill(deadline)


OwnerT = TypeVar("OwnerT", bound=DaemonOwner)


def wait_until(
    ready: Callable[[], bool],
    daemons: Sequence[Daemon],
    what: str,
    timeout: float = START_TIMEOUT_S,
) -> None:
    """Poll until ready(); fail with the daemons' logs if one exits or time runs out."""
    deadline = time.monotonic() + timeout
    while True:
        for daemon in daemons:
            daemon.raise_if_exited()
        if ready():
            return
        if time.monotonic() > deadline:
            logs = "\n".join(daemon.describe() for daemon in daemons)
            raise DaemonError(f"timed out after {timeout:.0f}s waiting for {what}\n{logs}")
        time.sleep(0.1)


def run_checked(
    argv: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = CLIENT_TIMEOUT_S
) -> str:
    result = subprocess.run(
        list(argv),
        capture_output=True,
        text=True,
        env=None if env is None else dict(env),
        timeout=timeout,
        check=False,
    )
    if result.returncode != 0:
        raise DaemonError(
            f"{' '.join(argv)} failed with {result.returncode}\n{result.stdout}{result.stderr}"
        )
    return result.stdout


def free_port() -> int:
    # The kernel picks an unused port; it stays free long enough for the
    # daemon started next (a rare clash shows up as a clear bind error).
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def installed_slurm_version() -> str:
    output = run_checked(["slurmctld", "-V"])  # "slurm-wlm 22.05.8"
    match = re.search(r"\d+\.\d+\.\d+", output)
    if match is None:
        raise DaemonError(f"cannot read the Slurm version from {output!r}")
    return match.group(0)


def clean_env(slurm_conf: Path) -> dict[str, str]:
    """This environment without SLURM_* variables of an outer job, plus SLURM_CONF."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("SLURM_")}
    env["SLURM_CONF"] = str(slurm_conf)
    return env
