"""Lustre facts the checks and the render share: tunable parameters with their
ranges and where they apply, page and alignment sizes, and the LNet networks a
spec resolves to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from clustergen.model.root import Spec
from clustergen.model.storage import LnetNet, Lustre, lnet_over_ethernet

KIB = 1 << 10
MIB = 1 << 20
GIB = 1 << 30
STRIPE_ALIGN = 64 * KIB  # stripe sizes and component ends are multiples of this
MAX_STRIPE_SIZE = 4 * GIB  # exclusive
PAGE = 4 * KIB
DEFAULT_BRW_SIZE_MIB = 4  # obdfilter.*.brw_size default since 2.12
BRW_SIZE_KEY = "obdfilter.*.brw_size"
PAGES_PER_RPC_KEY = "osc.*.max_pages_per_rpc"

Place = Literal["client", "server"]

# What Lustre's own packaging builds, at each release tag [src: lustre-release, tags v2_15_5
# to v2_15_8, v2_16_0 and v2_16_1: debian/control.main, debian/control.modules.in,
# debian/rules, lustre/ChangeLog]:
# - `lustre-client-modules-dkms` is the only DKMS package (catalog/lustre_packages.py pins it).
#   The server modules are built for one kernel, as `lustre-server-modules-<kernel>`
#   (control.modules.in
#   lustre-server-modules-_KVERS_; debian/rules sets DKMS_PKG= empty for the server build).
# - The DKMS client lists arm64 from 2.16.0 on (LU-17256, "debian: allow building client
#   dkms on arm64", first in v2_16_0; 2.15.x through v2_15_8 list i386 armhf powerpc
#   ppc64el amd64 ia64 only).
# - The first ChangeLog that names an Ubuntu 24.04 kernel is 2.16.0's (6.8.0-38 and 6.10.0-15
#   among the server kernels); 2.15.x's name none, and ldiskfs has no Ubuntu 22.04 or
#   24.04 patch series at any of these tags (ldiskfs/kernel_patches/series/).
ARM64_DKMS_CLIENT_FROM = (2, 16)
UBUNTU_2404_FROM = (2, 16)


@dataclass(frozen=True)
class Param:
    """An lctl parameter: its integer range and where it takes effect. Client
    parameters may be set locally on clients or persistently (-P) from the MGS;
    server parameters only persistently."""

    low: int
    high: int
    place: Place
    unit: str = ""


# Ranges from the Lustre sources (obd.h, lproc_*.c) for 2.15.
TUNING: dict[str, Param] = {
    "osc.*.max_pages_per_rpc": Param(1, 4096, "client", "pages of 4 KiB"),
    # OSC_MAX_RIF_MAX is 256 (OBD_MAX_RIF_MAX, 512, is the mdc limit).
    "osc.*.max_rpcs_in_flight": Param(1, 256, "client"),
    "osc.*.max_dirty_mb": Param(1, 2047, "client", "MiB"),
    "osc.*.checksums": Param(0, 1, "client"),
    "mdc.*.max_rpcs_in_flight": Param(1, 512, "client"),
    "mdc.*.max_mod_rpcs_in_flight": Param(1, 511, "client"),
    "llite.*.max_read_ahead_mb": Param(0, 1 << 20, "client", "MiB"),
    "llite.*.max_read_ahead_per_file_mb": Param(0, 1 << 20, "client", "MiB"),
    "llite.*.max_read_ahead_whole_mb": Param(0, 1 << 20, "client", "MiB"),
    "llite.*.max_cached_mb": Param(1, 1 << 24, "client", "MiB"),
    "llite.*.statahead_max": Param(0, 8192, "client"),
    "ldlm.namespaces.*.lru_size": Param(0, 1 << 24, "client"),
    "obdfilter.*.brw_size": Param(1, 16, "server", "MiB"),
    "ost.OSS.ost_io.threads_max": Param(2, 512, "server"),
    "mds.MDS.mdt.threads_max": Param(2, 1024, "server"),
}


def networks(spec: Spec, lustre: Lustre) -> list[LnetNet]:
    """The spec's networks, or the `lnet` network on every hardware profile's storage
    interfaces (interfaces.storage, on network.storage: every one a local NI, multi-rail),
    else on its fabric interface, else, on a tcp network, on its management interface
    (LNet over the management Ethernet). A profile with storage interfaces needs network.storage
    (the addresses check, nodes.interfaces-without-network), so a spec without a storage
    network has today's LNet."""
    if lustre.networks:
        return lustre.networks
    interfaces: dict[str, list[str]] = {}
    for name, profile in spec.hardware.items():
        storage, fabric = profile.interfaces.storage, profile.interfaces.fabric
        if storage:
            interfaces[name] = list(storage)
        elif fabric is not None:
            interfaces[name] = [fabric]
        elif lnet_over_ethernet(lustre.lnet):
            interfaces[name] = [profile.interfaces.management]
    return [LnetNet(name=lustre.lnet, interfaces=interfaces)]


def brw_size_mib(lustre: Lustre) -> int:
    value = lustre.persistent_tuning.get(BRW_SIZE_KEY, DEFAULT_BRW_SIZE_MIB)
    return value if isinstance(value, int) else DEFAULT_BRW_SIZE_MIB
