"""Slurm's packages per packaging and daemon, the PMIx its mpi/pmix plugin loads, and the
Node Health Check slurmd runs.

Sources (as recorded in shared/reference/domain-facts.md):
- Slurm (software.slurm_packages): SchedMD's own Debian packaging (`slurm-smd-*`, from
  23.11) and RPM spec (`slurm`, `slurm-slurmctld`, ...), built by the site; or the
  distribution's (`slurmctld`, `slurmd`, `slurmdbd`, `slurm-client`; EPEL's `slurm-*`),
  pinned as `<version>-*` since their revision follows the distribution's point releases.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from clustergen.catalog.distributions import DISTRIBUTIONS, PackageFamily
from clustergen.catalog.pins import OS_PACKAGE_FAMILY, Pins, distribution_version_pin, el_dist
from clustergen.catalog.versions import parse_version
from clustergen.model.software import SlurmPackaging, Software

_SlurmKind = Literal["controller", "dbd", "compute", "login"]

# The Slurm release each distribution ships in its own archive (catalog/distributions.py,
# with sources). EL is absent: EPEL's build moves within a release (checks.software asks
# the site to confirm it).
DISTRIBUTION_SLURM: dict[str, str] = {
    n: d.slurm for n, d in DISTRIBUTIONS.items() if d.slurm is not None
}
# The first release SchedMD's own debian/ packaging (slurm-smd-*) builds.
SCHEDMD_APT_FIRST: tuple[int, int] = (23, 11)

# Package names per packaging and family. Debian/Ubuntu split Slurm into slurmctld,
# slurmd, slurmdbd and slurm-client; SchedMD's debian/ packaging into slurm-smd-*;
# SchedMD's slurm.spec and EPEL's build (derived from it) into slurm-<daemon>.
_APT_DISTRIBUTION_SLURM: dict[_SlurmKind, list[str]] = {
    "controller": ["slurm-client", "slurmctld"],
    "dbd": ["slurmdbd"],
    "compute": ["libpam-slurm-adopt", "slurm-client", "slurmd"],
    "login": ["slurm-client"],
}
_APT_SCHEDMD_SLURM: dict[_SlurmKind, list[str]] = {
    "controller": ["slurm-smd", "slurm-smd-client", "slurm-smd-slurmctld"],
    "dbd": ["slurm-smd", "slurm-smd-slurmdbd"],
    "compute": [
        "slurm-smd",
        "slurm-smd-client",
        "slurm-smd-libpam-slurm-adopt",
        "slurm-smd-slurmd",
    ],
    "login": ["slurm-smd", "slurm-smd-client"],
}
_DNF_SLURM: dict[_SlurmKind, list[str]] = {
    "controller": ["slurm", "slurm-slurmctld"],
    "dbd": ["slurm", "slurm-slurmdbd"],
    "compute": ["slurm", "slurm-pam_slurm", "slurm-slurmd"],
    "login": ["slurm"],
}


def slurm_packaging(software: Software) -> SlurmPackaging:
    """software.slurm_packages, or where the packages of this version come from by default:
    the distribution's on apt before SchedMD packaged for Debian, SchedMD's otherwise."""
    if software.slurm_packages is not None:
        return software.slurm_packages
    family = OS_PACKAGE_FAMILY[software.os]
    if family == "apt" and parse_version(software.slurm)[:2] < SCHEDMD_APT_FIRST:
        return "distribution"
    return "schedmd"


def slurm_pins(kind: _SlurmKind) -> Callable[[PackageFamily, Software], Pins]:
    def pins(family: PackageFamily, s: Software) -> Pins:
        packaging = slurm_packaging(s)
        if packaging == "distribution":
            names = (_APT_DISTRIBUTION_SLURM if family == "apt" else _DNF_SLURM)[kind]
            return dict.fromkeys(names, distribution_version_pin(s.slurm))
        if family == "dnf":
            return dict.fromkeys(_DNF_SLURM[kind], f"{s.slurm}-1{el_dist(s)}")
        return dict.fromkeys(_APT_SCHEDMD_SLURM[kind], f"{s.slurm}-1")

    return pins


# Slurm's mpi/pmix plugin and the PMIx it loads (slurm.mpi: pmix). Debian's Slurm ships
# mpi_pmix.so in slurm-wlm-basic-plugins, which slurmd depends on at its own version:
# bookworm's 22.05.8 as mpi_pmix_v4.so, trixie's 24.11.5 as mpi_pmix_v5.so [src: dpkg -c of
# slurm-wlm-basic-plugins 22.05.8-4+deb12u3 and 24.11.5-4+deb13u1]; it is pinned with the
# PMIx runtime so both move together. The plugin dlopens the library rather than linking
# it, so no package depends on the runtime: Slurm before 23.02.5 opens the unversioned
# libpmix.so, which Debian ships only in libpmix-dev; from 23.02.5 libpmix.so.2, in the
# runtime package [src: SchedMD/slurm src/plugins/mpi/pmix/mpi_pmix.c _libpmix_open at
# slurm-22-05-8-1 and slurm-24-11-5-1; commit 5d35aa58ad "Fix runtime linking", first in
# slurm-23-02-5-1]. SchedMD's packages (slurm-smd) carry the plugin themselves when built
# with PMIx. EL: neither is known here (checks.nccl warns).
PMIX_SONAME_FROM: tuple[int, ...] = (23, 2, 5)
DEBIAN_SLURM_PLUGINS = "slurm-wlm-basic-plugins"


def slurm_pmix_pins(family: PackageFamily, s: Software) -> Pins:
    runtime = DISTRIBUTIONS[s.os].pmix
    if family != "apt" or runtime is None:
        return {}
    name, version = runtime
    pins = {name: distribution_version_pin(version)}
    if parse_version(s.slurm) < PMIX_SONAME_FROM:
        pins["libpmix-dev"] = distribution_version_pin(version)
    if slurm_packaging(s) == "distribution":
        pins[DEBIAN_SLURM_PLUGINS] = distribution_version_pin(s.slurm)
    return pins


def nhc_pins(family: PackageFamily, s: Software) -> Pins:
    """LBNL NHC, at the exact version the site's repository serves (software.nhc)."""
    del family  # the same name and version string on apt and dnf
    return {} if s.nhc is None else {s.nhc.package: s.nhc.version}
