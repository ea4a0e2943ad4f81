"""`clustergen twin SPEC`: the Slurm side on local daemons, until Ctrl-C, SIGTERM or
the end of a --run script."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from clustergen.base.errors import ExitCode, UsageError
from clustergen.cli.common import load_valid

if TYPE_CHECKING:
    from clustergen.commands.twin.session import Twin


class _Stopped(Exception):
    """SIGTERM or SIGHUP arrived: stop the twin as Ctrl-C does."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_stopped(signum: int, frame: object) -> None:
    raise _Stopped(signum)


def execute(args: argparse.Namespace) -> int:
    from clustergen.commands.twin.layout import uses_slurmdbd
    from clustergen.commands.twin.prerequisites import missing_prerequisites
    from clustergen.commands.twin.process import DaemonError
    from clustergen.commands.twin.session import Twin
    from clustergen.render import render_all

    script = Path(args.run) if args.run else None
    if script is not None and not script.is_file():
        raise UsageError(f"--run {script}: no such file")
    cluster = load_valid(args.spec, args)
    files = render_all(cluster)
    conf = files.get("slurm/slurm.conf")
    missing = missing_prerequisites(uses_slurmdbd(conf.text) if conf else False)
    if missing:
        raise UsageError("twin " + "; ".join(missing))
    say = sys.stderr if script is not None else sys.stdout
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _raise_stopped)
    try:
        with Twin(cluster, files, nodes_per_group=args.nodes_per_group) as twin:
            print("\n".join(twin.describe()), file=say, flush=True)
            twin.start()
            for leftover in twin.leftovers:
                print(f"clustergen twin: removed {leftover} of a twin that was killed", file=say)
            if script is not None:
                print(f"clustergen twin: running {script}", file=say, flush=True)
                return twin.run_script(script)
            print("\n".join(twin.how_to_reach()), flush=True)
            return _wait(twin)
    except DaemonError as exc:
        print(f"clustergen twin: {exc}", file=sys.stderr)
        return int(ExitCode.INVALID_SPEC)
    except (_Stopped, KeyboardInterrupt) as stop:
        print("clustergen twin: stopped; everything it started is removed", file=sys.stderr)
        if script is None:
            return int(ExitCode.OK)
        # --run cut short: the shell's convention for a command ended by a signal.
        return 128 + (stop.signum if isinstance(stop, _Stopped) else signal.SIGINT)
    finally:
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)


def _wait(twin: Twin) -> int:
    """Until Ctrl-C or SIGTERM (raised out of here); 1 if a daemon dies meanwhile."""
    while True:
        for daemon in twin.daemons:
            if daemon.proc.poll() is not None:
                print(f"clustergen twin: {daemon.describe()}", file=sys.stderr)
                return int(ExitCode.INVALID_SPEC)
        time.sleep(1)
