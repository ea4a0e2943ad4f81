"""The Debian mirror this machine's own apt sources use (never a host name of our own)."""

from __future__ import annotations

import os
import re
from pathlib import Path

_SOURCES = (
    Path("/etc/apt/sources.list.d/debian.sources"),
    Path("/etc/apt/sources.list"),
)
_DEB822_URIS = re.compile(r"^URIs:\s*(\S+)", re.MULTILINE)
_ONE_LINE = re.compile(r"^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+\S+", re.MULTILINE)


def debian_mirror() -> str | None:
    """CLUSTERGEN_TESTBED_MIRROR, else the first Debian archive URI of the host's sources."""
    override = os.environ.get("CLUSTERGEN_TESTBED_MIRROR")
    if override:
        return override
    for path in _SOURCES:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            continue
        pattern = _DEB822_URIS if path.suffix == ".sources" else _ONE_LINE
        for uri in pattern.findall(text):
            if "security" not in uri:
                return str(uri).rstrip("/")
    return None
