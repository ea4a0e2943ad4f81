"""Version strings as comparable tuples."""

from __future__ import annotations

VersionTuple = tuple[int, ...]


def parse_version(text: str) -> VersionTuple:
    return tuple(int(part) for part in text.split("."))
