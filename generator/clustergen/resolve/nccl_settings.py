"""NCCL settings per GPU hardware profile, each value with where it came from: the
shared fact the nccl family renders into /etc/nccl.conf and the job environment, and that
the acceptance jobs (their perftest arguments) and the host network (the RoCE traffic
class) read, so no family imports another's.

Derived values come first (NCCL_DEBUG, the HCA list, the socket interface, the
RoCE GID index and traffic class); `env` entries follow and win over a derived
value of the same name. Profile settings override the global ones key by key.
"""

from __future__ import annotations

from dataclasses import dataclass

from clustergen.catalog.nccl_vars import roce_gid_index
from clustergen.model.nccl import NcclSettings
from clustergen.resolve import ResolvedCluster
from clustergen.resolve.fabric import rails_by_profile, rails_joined

# Sourced by job scripts (the acceptance jobs do): the nccl family installs the settings
# there as exports.
JOB_ENV = "/etc/nccl/job.env"


@dataclass(frozen=True)
class NcclValue:
    name: str
    value: str
    source: str  # the spec path (or rule) the value came from


def settings_for(
    cluster: ResolvedCluster, name: str, extra: tuple[tuple[str, NcclSettings | None], ...] = ()
) -> tuple[NcclValue, ...]:
    """The settings of profile `name`, with narrower blocks (path, settings) applied last."""
    spec = cluster.spec
    profile = spec.hardware[name]
    fabric = spec.network.fabric
    at = f"hardware.{name}"
    values: dict[str, NcclValue] = {}

    def put(var: str, value: object, source: str) -> None:
        values.pop(var, None)  # a later source moves the line to the end: overrides read last
        values[var] = NcclValue(var, str(value), source)

    blocks: list[tuple[str, NcclSettings | None]] = [
        ("nccl", spec.nccl),
        (f"{at}.nccl", profile.nccl),
        *extra,
    ]
    for path, block in blocks:
        if block is not None and block.debug is not None:
            put("NCCL_DEBUG", block.debug, f"{path}.debug")
    rails = profile.compute_hcas()
    if fabric is not None and rails:
        source = f"{at}.topology.hcas (role compute)" if profile.topology else f"{at}.fabric_hcas"
        put(
            "NCCL_IB_HCA",
            "=" + ",".join(f"{hca}:{port}" for hca, port in rails),
            f"{source}; '=' matches these names exactly",
        )
    if fabric is not None and profile.interfaces.fabric is not None:
        put("NCCL_SOCKET_IFNAME", "=" + profile.interfaces.fabric, f"{at}.interfaces.fabric")
    if fabric is not None and fabric.ethernet:
        roce = fabric.roce
        gid = roce_gid_index(roce.gid_index if roce else None, cluster.spec.software.nccl)
        if gid is not None:
            given = roce is not None and roce.gid_index is not None
            source = "network.fabric.roce.gid_index"
            put("NCCL_IB_GID_INDEX", gid, source if given else f"{source} unset, NCCL < 2.21")
        if fabric.traffic_class is not None:
            put(
                "NCCL_IB_TC",
                fabric.traffic_class,
                "network.fabric.roce.traffic_class"
                if fabric.traffic_class_written
                else "network.fabric.type spectrum-x: DSCP 26, Spectrum-X's lossless priority 3",
            )
    for variable, setting, source in _fabric_settings(cluster, name):
        put(variable, setting, source)
    for path, block in blocks:
        if block is not None:
            for var, value in block.env.items():
                put(var, value, f"{path}.env.{var}")
    return tuple(values.values())


def _fabric_settings(cluster: ResolvedCluster, name: str) -> list[tuple[str, str, str]]:
    """What the fabric as drawn says to NCCL on profile `name`'s nodes (docs/nccl.md):
    NCCL_CROSS_NIC=0 where they hang from leaves of several rails and no switch joins two
    rails (a ring or tree that crossed rails would have no path); NCCL_COLLNET_ENABLE=1
    where the spec says the switches run SHARP (a check holds that they can)."""
    fabric = cluster.spec.network.fabric
    if fabric is None:
        return []
    out = []
    rails = rails_by_profile(cluster).get(name, frozenset())
    if len(rails) > 1 and not rails_joined(cluster):
        out.append(
            (
                "NCCL_CROSS_NIC",
                "0",
                f"network.fabric.switches[].rail: these nodes hang from {len(rails)} rails "
                "and no switch joins two, so NCCL keeps each ring and tree on one rail",
            )
        )
    if fabric.sharp:
        out.append(("NCCL_COLLNET_ENABLE", "1", "network.fabric.sharp: SHARP in the switches"))
    return out
