"""Lustre's packages: the client's, every server's, the OSD of each backend, and OpenZFS.

Sources (as recorded in shared/reference/domain-facts.md):
- Lustre: Whamcloud's client packages (DKMS module on apt, kmod on EL); on servers the
  common packages, plus the OSD of each backend only on the servers of the targets that
  use it (`kmod-lustre-osd-ldiskfs`/`-zfs` on EL), and OpenZFS (software.zfs) on zfs ones.
"""

from __future__ import annotations

from clustergen.catalog.distributions import PackageFamily
from clustergen.catalog.pins import Pins, distribution_version_pin, el_dist
from clustergen.model.software import Software


def lustre_client_pins(family: PackageFamily, s: Software) -> Pins:
    if s.lustre is None:
        return {}
    if family == "apt":
        version = f"{s.lustre}-1"
        return {"lustre-client-utils": version, "lustre-client-modules-dkms": version}
    version = f"{s.lustre}-1{el_dist(s)}"
    return {"lustre-client": version, "kmod-lustre-client": version}


# Lustre's server modules on apt, built for one kernel: no DKMS package (catalog/lustre.py).
SERVER_MODULES_PACKAGE = "lustre-server-modules-{kernel}"


def lustre_server_pins(family: PackageFamily, s: Software) -> Pins:
    """What every Lustre server runs, whatever its targets' backend: Whamcloud's el9 server
    RPMs `lustre` and `kmod-lustre`; on apt the utilities and the server modules the site
    built for its kernel (software.lustre_server_kernel; catalog/lustre.py: Lustre builds
    no DKMS package for servers), the OSDs it was configured with inside them."""
    if s.lustre is None:
        return {}
    if family == "apt":
        version = f"{s.lustre}-1"
        pins = {"lustre-server-utils": version}
        if s.lustre_server_kernel is not None:
            pins[SERVER_MODULES_PACKAGE.format(kernel=s.lustre_server_kernel)] = version
        return pins
    version = f"{s.lustre}-1{el_dist(s)}"
    return dict.fromkeys(("lustre", "kmod-lustre"), version)


# The object storage device (OSD) of each backend, on the servers of the targets that use
# it [src: lustre-release lustre.spec.in, subpackages osd-ldiskfs, osd-ldiskfs-mount,
# osd-zfs and osd-zfs-mount of kmod-lustre / lustre; Whamcloud's lustre-ldiskfs-zfs meta
# package, which requires kmod-lustre-osd-ldiskfs for ldiskfs and zfs for ZFS].
def lustre_ldiskfs_pins(family: PackageFamily, s: Software) -> Pins:
    if s.lustre is None or family == "apt":
        return {}
    version = f"{s.lustre}-1{el_dist(s)}"
    return dict.fromkeys(("kmod-lustre-osd-ldiskfs", "lustre-osd-ldiskfs-mount"), version)


def lustre_zfs_pins(family: PackageFamily, s: Software) -> Pins:
    """The zfs OSD and OpenZFS itself, at software.zfs [doc: OpenZFS "Getting Started":
    RHEL-based distributions install `zfs` with the kABI-tracking `kmod-zfs` from the
    zfs-release repository; Debian `zfsutils-linux` and `zfs-dkms` (contrib), Ubuntu the
    same two (universe)]. On apt `zfs-dkms` also carries the ZFS source tree Lustre's DKMS
    server modules build their zfs OSD against, even where the kernel ships a zfs module
    (Ubuntu). The distributions' ZFS packages are pinned as their upstream version with any
    revision, as the distribution's Slurm is."""
    if s.lustre is None:
        return {}
    pins: Pins = {}
    if family == "dnf":
        version = f"{s.lustre}-1{el_dist(s)}"
        pins.update(dict.fromkeys(("kmod-lustre-osd-zfs", "lustre-osd-zfs-mount"), version))
    if s.zfs is None:
        return pins  # checks.packages reports the missing version
    if family == "dnf":
        pins.update(dict.fromkeys(("kmod-zfs", "zfs"), f"{s.zfs}-1{el_dist(s)}"))
    else:
        pins.update(dict.fromkeys(("zfs-dkms", "zfsutils-linux"), distribution_version_pin(s.zfs)))
    return pins
