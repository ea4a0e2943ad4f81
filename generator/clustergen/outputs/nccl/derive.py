"""The nccl family's files per GPU hardware profile: /etc/nccl.conf and the job
environment, from the shared settings (clustergen.resolve.nccl_settings)."""

from __future__ import annotations

from dataclasses import dataclass

from clustergen.catalog.groups import hardware_group
from clustergen.resolve import ResolvedCluster
from clustergen.resolve.nccl_settings import NcclValue, settings_for

NCCL_CONF = "/etc/nccl.conf"


@dataclass(frozen=True)
class ProfileNccl:
    profile: str
    group: str  # inventory group of the profile's nodes
    settings: tuple[NcclValue, ...]
    compute_hcas: tuple[tuple[str, int], ...]  # (name, port) of each rail


def derive_nccl(cluster: ResolvedCluster) -> list[ProfileNccl]:
    """One entry per GPU profile that nodes use, in spec order."""
    used = {host.hardware_name for host in cluster.hosts}
    return [
        ProfileNccl(
            name,
            hardware_group(name),
            settings_for(cluster, name),
            profile.compute_hcas(),
        )
        for name, profile in cluster.spec.hardware.items()
        if profile.gpu is not None and name in used
    ]
