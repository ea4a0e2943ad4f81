"""What every concern's packages share: a pin, the OS's package family, the RPM release
suffix of packages built per EL release, and the version strings of the distributions'
own packages.

Revision suffixes (`-1`, `-0ubuntu1`, `.el9`) are repository choices that clustergen
cannot know for certain; `software.packages` overrides any derived version string,
versions.lock shows every string before anything is installed, and `clustergen lock`
checks each against the repositories' package indexes.
"""

from __future__ import annotations

from clustergen.catalog.distributions import DISTRIBUTIONS, PackageFamily
from clustergen.model.software import Software

Pins = dict[str, str]  # package name -> exact version string

# apt or dnf per software.os (catalog/distributions.py).
OS_PACKAGE_FAMILY: dict[str, PackageFamily] = {n: d.family for n, d in DISTRIBUTIONS.items()}


def el_dist(s: Software) -> str:
    """RPM release suffix of packages built per EL release (Slurm, Lustre, drivers):
    `.el9`, `.el10` (catalog/distributions.py)."""
    return DISTRIBUTIONS[s.os].el_dist or ""


def distribution_version_pin(version: str) -> str:
    """A distribution's package at an upstream version, whatever its packaging revision
    (Debian's 22.05.8-4+deb12u3 moves with point releases): a glob that apt preferences,
    Ansible's apt module (`name=22.05.8-*`), dnf and the drift report all match."""
    return f"{version}-*"


def upstream_version(package_version: str) -> str:
    """'1:3.3.6-1' -> '3.3.6': drop the epoch and the packaging revision."""
    without_epoch = package_version.split(":", 1)[1] if ":" in package_version else package_version
    return without_epoch.rsplit("-", 1)[0] if "-" in without_epoch else without_epoch
