"""hardware.<profile>.topology: which CPU cores, NUMA node and HCA sit nearest each GPU.

One table feeds gres.conf Cores= (GPU-CPU affinity), NCCL's HCA list (the compute
HCAs) and the per-rail acceptance tests. Read it off a node with
`nvidia-smi topo -m` (GPU to NIC and CPU affinity) and `ibdev2netdev`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from clustergen.model.common import Int, StrictModel
from clustergen.model.syntax import InterfaceName, Syntax

CORE_LIST = Syntax(
    r"^[0-9]+(?:-[0-9]+)?(?:,[0-9]+(?:-[0-9]+)?)*$",
    "Slurm core IDs as a list of numbers and ranges, e.g. 0-15,32-47",
)
CoreList = Annotated[str, CORE_LIST]


class Hca(StrictModel):
    """One RDMA device (HCA) port of the node."""

    name: InterfaceName = Field(description="RDMA device name (ibv_devices), e.g. mlx5_0.")
    port: Int = Field(default=1, ge=1, le=255, description="The HCA port NCCL uses (usually 1).")
    numa_node: Int = Field(ge=0, le=63, description="NUMA node the HCA's PCIe slot hangs from.")
    role: Literal["compute", "storage", "management"] = Field(
        description="compute: a GPU rail, listed in NCCL_IB_HCA; storage and management HCAs "
        "are left out of NCCL's list."
    )


class GpuAffinity(StrictModel):
    """One GPU: where it sits relative to CPUs and HCAs."""

    index: Int = Field(ge=0, le=63, description="GPU index as nvidia-smi numbers it.")
    numa_node: Int = Field(ge=0, le=63, description="NUMA node of the GPU.")
    cores: CoreList = Field(
        description="Slurm core IDs nearest the GPU, 0 to sockets x cores_per_socket - 1, "
        "e.g. 0-31. gres.conf Cores= gets every core of the sockets they lie on (Slurm "
        "co-allocates GPUs and CPUs per socket, gres.conf(5))."
    )
    hca: InterfaceName = Field(description="Name of the HCA nearest the GPU (its rail).")


class Topology(StrictModel):
    """The GPU/CPU/HCA affinity table of a profile."""

    hcas: list[Hca] = Field(min_length=1, description="The node's HCAs, compute rails first.")
    gpus: list[GpuAffinity] = Field(
        default_factory=list, description="One entry per GPU, index 0 to gpu.count - 1."
    )


def core_ids(cores: str) -> list[int]:
    """The core IDs of a CoreList, in order."""
    ids: list[int] = []
    for part in cores.split(","):
        low, _, high = part.partition("-")
        ids.extend(range(int(low), int(high or low) + 1))
    return ids
