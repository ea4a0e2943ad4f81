"""nccl: settings written to /etc/nccl.conf on every GPU node."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from clustergen.model.common import ConfValue, StrictModel


class Nccl(StrictModel):
    """NCCL settings, written to /etc/nccl.conf on GPU nodes."""

    debug: Literal["VERSION", "WARN", "INFO", "ABORT", "TRACE"] | None = Field(
        default=None, description="NCCL_DEBUG."
    )
    env: dict[str, ConfValue] = Field(
        default_factory=dict,
        description="Further NCCL_* variables. NCCL_IB_HCA and NCCL_SOCKET_IFNAME come from the "
        "hardware profiles.",
    )
