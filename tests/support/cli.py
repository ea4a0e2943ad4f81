"""What the `cli` fixture (tests/conftest.py) returns for one in-process clustergen run."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Result:
    code: int
    out: str
    err: str
