"""GPU models clustergen knows.

Sources: NVIDIA product data sheets for memory and board power (max TDP/TGP of
the SXM or PCIe board); compute capability and the first CUDA release that
targets it from CMake's CUDA architecture table; V100 (sm_70) was dropped by
CUDA 13.0. The GRES type is clustergen's convention: lowercase, one word,
identical in slurm.conf and gres.conf.
"""

from __future__ import annotations

from dataclasses import dataclass

from clustergen.catalog.versions import VersionTuple


@dataclass(frozen=True)
class Architecture:
    name: str
    compute_capability: str
    first_cuda: VersionTuple  # oldest CUDA that can target it
    last_cuda_exclusive: VersionTuple | None = None  # first CUDA that no longer does

    @property
    def sm(self) -> str:
        return "sm_" + self.compute_capability.replace(".", "")


VOLTA = Architecture("volta", "7.0", first_cuda=(9, 0), last_cuda_exclusive=(13, 0))
AMPERE = Architecture("ampere", "8.0", first_cuda=(11, 0))
ADA = Architecture("ada", "8.9", first_cuda=(11, 8))
HOPPER = Architecture("hopper", "9.0", first_cuda=(11, 8))
BLACKWELL = Architecture("blackwell", "10.0", first_cuda=(12, 8))


@dataclass(frozen=True)
class GpuModel:
    name: str
    architecture: Architecture
    memory_gib: int
    gres_type: str
    board_watts: int


GPU_MODELS: dict[str, GpuModel] = {
    model.name: model
    for model in (
        GpuModel("v100-sxm2-16gb", VOLTA, memory_gib=16, gres_type="v100", board_watts=300),
        GpuModel("v100-sxm2-32gb", VOLTA, memory_gib=32, gres_type="v100", board_watts=300),
        GpuModel("v100-pcie-32gb", VOLTA, memory_gib=32, gres_type="v100", board_watts=250),
        GpuModel("a100-sxm4-40gb", AMPERE, memory_gib=40, gres_type="a100", board_watts=400),
        GpuModel("a100-sxm4-80gb", AMPERE, memory_gib=80, gres_type="a100", board_watts=400),
        GpuModel("a100-pcie-40gb", AMPERE, memory_gib=40, gres_type="a100", board_watts=250),
        GpuModel("a100-pcie-80gb", AMPERE, memory_gib=80, gres_type="a100", board_watts=300),
        GpuModel("l40s", ADA, memory_gib=48, gres_type="l40s", board_watts=350),
        GpuModel("h100-sxm5-80gb", HOPPER, memory_gib=80, gres_type="h100", board_watts=700),
        GpuModel("h100-pcie-80gb", HOPPER, memory_gib=80, gres_type="h100", board_watts=350),
        GpuModel("h100-nvl-94gb", HOPPER, memory_gib=94, gres_type="h100nvl", board_watts=400),
        GpuModel("h200-sxm-141gb", HOPPER, memory_gib=141, gres_type="h200", board_watts=700),
        GpuModel("h200-nvl-141gb", HOPPER, memory_gib=141, gres_type="h200", board_watts=600),
        GpuModel("b200-sxm-180gb", BLACKWELL, memory_gib=180, gres_type="b200", board_watts=1000),
    )
}
