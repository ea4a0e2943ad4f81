"""The `clustergen` command's entry point: process settings first, then the CLI.

pydantic scans every installed distribution's entry points for plugins the first
time it builds a model; clustergen's models use none, and in a fresh process the
scan costs a tenth of rendering a small spec. The setting must be in place before
the models are imported, so it lives here and not in the library.
"""

from __future__ import annotations

import os
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from clustergen.cli import main as cli_main

    return cli_main(argv)
