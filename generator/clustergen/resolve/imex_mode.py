"""How NVIDIA IMEX starts on the trays of NVLink domains (slurm.imex and the pinned Slurm),
read by the IMEX family (its files) and the Slurm family (slurm.conf). docs/imex.md and
outputs/imex/ give the sources."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from clustergen.base.artifacts import NodeChange
from clustergen.catalog.versions import VersionTuple, parse_version
from clustergen.resolve import ResolvedCluster

# The first Slurm with switch/nvidia_imex without CVE-2024-42511: the plugin is in
# src/plugins/switch/nvidia_imex from slurm-24-05-0-1; NEWS of 24.05.2 fixes its channel
# access (CVE-2024-42511) and its use with job_container/tmpfs. slurm.conf(5) documents it
# from 24.11 (SwitchType, SwitchParameters imex_channel_count).
SWITCH_IMEX_FROM: VersionTuple = (24, 5, 2)
SWITCH_IMEX = "switch/nvidia_imex"
IMEX_ETC = "/etc/nvidia-imex"
NODES_CONFIG = "nodes_config.cfg"  # IMEX_NODE_CONFIG_FILE of the package's config.cfg
IMEX_SERVICE = "nvidia-imex"
RESTART_IMEX = NodeChange("restart", IMEX_SERVICE)
PROLOG_PATH = "/etc/slurm/imex-prolog.sh"
# In prolog mode Epilog is a glob (slurm.conf(5) from 22.05: "A glob pattern ... may also
# be used to run more than one epilog script"), beside the health Epilog when there is one.
EPILOG_DIR = "/etc/slurm/epilog.d"
EPILOG_NAME = "imex-epilog.sh"
CHANNEL_CONF = "/etc/modprobe.d/clustergen-imex-channel0.conf"

ImexMode = Literal["switch", "prolog", "global"]


@dataclass(frozen=True)
class ImexStart:
    """How IMEX starts on this cluster's trays: switch (switch/nvidia_imex), prolog (the
    Slurm Prolog and Epilog) or global (from boot, channel 0 shared)."""

    mode: ImexMode

    @property
    def always_on(self) -> bool:
        """nvidia-imex runs from boot on every tray (switch and global)."""
        return self.mode != "prolog"


def imex_start(cluster: ResolvedCluster) -> ImexStart | None:
    """None without NVLink domains."""
    if not cluster.nvlink_domains:
        return None
    spec = cluster.spec
    if spec.slurm.imex == "global":
        return ImexStart("global")
    if parse_version(spec.software.slurm) >= SWITCH_IMEX_FROM:
        return ImexStart("switch")
    return ImexStart("prolog")
