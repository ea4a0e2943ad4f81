"""nccl: settings written to /etc/nccl.conf and the job environment file on GPU nodes.

The global section may be overridden per hardware profile (hardware.<p>.nccl) and
per partition (slurm.partitions[].nccl); the narrower one wins, key by key.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from clustergen.model.common import ConfValue, StrictModel
from clustergen.model.syntax import AbsolutePath, EnvName


class NcclSettings(StrictModel):
    """NCCL settings; NCCL_IB_HCA, NCCL_SOCKET_IFNAME and the RoCE values are derived."""

    debug: Literal["VERSION", "WARN", "INFO", "ABORT", "TRACE"] | None = Field(
        default=None, description="NCCL_DEBUG."
    )
    env: dict[EnvName, ConfValue] = Field(
        default_factory=dict,
        description="Further NCCL_* variables, checked against NCCL's documented variables. "
        "NCCL_IB_HCA and NCCL_SOCKET_IFNAME come from the hardware profiles unless set here. "
        "A value is one word: no spaces, '#' or line breaks.",
    )


class AcceptanceTools(StrictModel):
    """Where the acceptance jobs find their test binaries."""

    nccl_tests_dir: AbsolutePath = Field(
        default="/opt/nccl-tests/build",
        description="Directory holding nccl-tests' all_reduce_perf (an absolute path of "
        "letters, digits and _.+@,:=~/-, as are the other tools' paths).",
    )
    ib_write_bw: AbsolutePath = Field(
        default="/usr/bin/ib_write_bw", description="perftest's ib_write_bw."
    )
    dcgmi: AbsolutePath = Field(default="/usr/bin/dcgmi", description="DCGM's dcgmi.")
    busbw_fraction: float = Field(
        default=0.75,
        gt=0,
        le=1,
        description="nccl-allreduce passes when bus bandwidth reaches this fraction of the "
        "node's compute HCAs x the fabric's link rate.",
    )
    rail_fraction: float = Field(
        default=0.9,
        gt=0,
        le=1,
        description="ib-rails passes a rail whose ib_write_bw average reaches this fraction "
        "of the link rate.",
    )


class Nccl(NcclSettings):
    """NCCL settings for every GPU node, and the acceptance jobs' tools."""

    acceptance: AcceptanceTools = Field(
        default_factory=AcceptanceTools,
        description="Paths of the test binaries the acceptance jobs run.",
    )
