"""The `clustergen` command's entry point: process settings first, then the CLI.

pydantic scans every installed distribution's entry points for plugins the first
time it builds a model; clustergen's models use none, and in a fresh process the
scan costs a tenth of rendering a small spec. The setting must be in place before
the models are imported, so it lives here and not in the library.

The cycle collector's default thresholds make it walk every live object again and
again while a large spec's hundreds of thousands of objects are built, a third of a
16k-node render; a run of the command is short and makes few cycles, so it collects
rarely (mypy does the same).
"""

from __future__ import annotations

import gc
import os
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    gc.set_threshold(200_000, 50, 100)
    from clustergen.cli import main as cli_main

    return cli_main(argv)
