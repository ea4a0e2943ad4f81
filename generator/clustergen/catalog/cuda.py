"""Minimum Linux driver per CUDA release (GA), and CUDA's minor-version compatibility floor.

Source: NVIDIA CUDA Toolkit release notes, table "CUDA Toolkit and Corresponding
Driver Versions" (Linux x86_64), as recorded in shared/reference/domain-facts.md.
There is no CUDA 12.7.

From CUDA 13.4 a row is a driver branch, not a full version (a one-part tuple: any driver
of the branch or later meets it). CUDA 13.4 GA needs R615: "Executing Rubin kernels
(SM107) requires the R615 driver which will be released with CUDA Toolkit 13.4 GA. R610
from CUDA Toolkit 13.4 Developer Preview is not sufficient" (NVIDIA CUTLASS 4.8.0dev
release notes, github.com/NVIDIA/cutlass/releases/tag/v4.8.0dev), and 13.4's forward
compatibility package is cuda-compat-13-4 at 615.71.09. CUDA 13.5 ships with R620: the
R620 driver's redistributable manifest names CUDA 13.5 as its CUDA
(developer.download.nvidia.com/compute/nvidia-driver/redist/redistrib_620.70.06.json,
"cuda_variant": ["13.5"]); R620 is a Long Term Support Branch (NVIDIA, "Supported Drivers
and CUDA Toolkit Versions", docs.nvidia.com/datacenter/tesla/drivers/620/). The rows of
CUDA 13.1 to 13.3 were not read from NVIDIA here and are not recorded.
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
    (13, 4): (615,),
    (13, 5): (620,),
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
