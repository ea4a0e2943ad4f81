"""The `clustergen` command's entry point: process settings first, then the CLI.

pydantic scans every installed distribution's entry points for plugins the first
time it builds a model; clustergen's models use none, and in a fresh process the
scan costs a tenth of rendering a small spec. The setting must be in place before
the models are imported, so it lives here and not in the library.

The cycle collector's default thresholds make it walk every live object again and
again while a large spec's hundreds of thousands of objects are built, a third of a
16k-node render; a run of the command is short and makes few cycles, so it collects
rarely (mypy does the same).

When the command is done, the process ends without tearing down its objects one by
one (which takes a tenth of a second after a large render; mypy ends the same way):
every file is written and synced and every daemon stopped inside the command, and
the standard streams are flushed here.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Sequence
from typing import NoReturn


def configured_main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    gc.set_threshold(200_000, 50, 100)
    from clustergen.cli import main as cli_main

    return cli_main(argv)


def run() -> NoReturn:
    """The `clustergen` command and `python -m clustergen`: main, then a hard exit."""
    code = configured_main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # the reader went away (a closed pipe): main has said all it could
        pass
    os._exit(code)
