"""Minimum Linux driver per CUDA release (GA), and CUDA's minor-version compatibility floor.

Source: NVIDIA CUDA Toolkit release notes, table "CUDA Toolkit and Corresponding
Driver Versions" (Linux x86_64), as recorded in shared/reference/domain-facts.md.
There is no CUDA 12.7.
"""

from __future__ import annotations

from clustergen.catalog.versions import VersionTuple

MIN_DRIVER: dict[VersionTuple, VersionTuple] = {
    (11, 8): (520, 61, 5),
    (12, 0): (525, 60, 13),
    (12, 1): (530, 30, 2),
    (12, 2): (535, 54, 3),
    (12, 3): (545, 23, 6),
    (12, 4): (550, 54, 14),
    (12, 5): (555, 42, 2),
    (12, 6): (560, 28, 3),
    (12, 8): (570, 26),
    (12, 9): (575, 51, 3),
    (13, 0): (580, 65, 6),
}

# Update releases whose minimum differs from the GA's: (major, minor, update) -> driver.
MIN_DRIVER_UPDATE: dict[VersionTuple, VersionTuple] = {
    (12, 8, 1): (570, 124, 6),
}

# CUDA 12.x minor-version compatibility: runs, with reduced features, on any driver >= 525.
MINOR_VERSION_COMPAT_FLOOR: dict[int, VersionTuple] = {12: (525, 60, 13)}


def minimum_driver(cuda: VersionTuple) -> tuple[VersionTuple, str] | None:
    """The driver the pinned CUDA needs, and which table row said so; None if unknown."""
    update_row = MIN_DRIVER_UPDATE.get(cuda[:3])
    if update_row is not None:
        return update_row, f"CUDA {'.'.join(map(str, cuda[:2]))} Update {cuda[2]}"
    row = MIN_DRIVER.get(cuda[:2])
    if row is None:
        return None
    return row, f"CUDA {'.'.join(map(str, cuda[:2]))} GA"
