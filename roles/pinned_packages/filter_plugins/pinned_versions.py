"""Compare an installed package version with its pin, epochs included.

versions.lock writes a pin as `[epoch:]version-revision` for both families. An
installed rpm arrives from package_facts as separate epoch, version and release;
NVIDIA's driver RPMs carry `Epoch: 3`. A plain string comparison then sees every
EL GPU node as changed, drains it and reboots it, so the roles compare here.

Rules, per package manager:
- dpkg: the epoch is part of the version; a missing epoch is epoch 0, so
  `2.3-1` equals `0:2.3-1` but not `1:2.3-1`.
- rpm: a pin without an epoch matches any installed epoch, as `dnf install
  name-version-release` does; a pin with an epoch must equal the installed one,
  an installed package without an epoch having epoch 0.

A pin may end in a glob (`22.05.8-*`: a distribution's package at an upstream version,
whatever its packaging revision); the part after the epoch then matches as apt
preferences and Ansible's apt module match it (fnmatch).

Self-contained (the roles are copied into the rendered tree, where clustergen is
not importable); tests/test_pinned_versions.py tests it directly.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any


def split_epoch(version: str) -> tuple[str | None, str]:
    """'3:550.54.15-1.el9' -> ('3', '550.54.15-1.el9'); no epoch -> (None, version)."""
    head, sep, tail = version.partition(":")
    if sep and head.isdigit():
        return str(int(head)), tail
    return None, version


def rpm_installed_version(package: dict[str, Any]) -> str:
    """One package_facts rpm entry as `[epoch:]version-release`."""
    epoch = package.get("epoch")
    version = f"{package['version']}-{package['release']}"
    return f"{epoch}:{version}" if epoch not in (None, "", 0, "0") else version


def installed_version(package: dict[str, Any], family: str) -> str:
    """One package_facts entry as the lock writes versions."""
    return package["version"] if family == "apt" else rpm_installed_version(package)


def version_matches(installed: str, locked: str, family: str) -> bool:
    """Whether an installed version is exactly the pinned one (see the module rules)."""
    installed_epoch, installed_rest = split_epoch(installed)
    locked_epoch, locked_rest = split_epoch(locked)
    if not fnmatchcase(installed_rest, locked_rest):
        return False
    if family == "apt":
        return (installed_epoch or "0") == (locked_epoch or "0")
    return locked_epoch is None or (installed_epoch or "0") == locked_epoch


def installed_matches(packages: list[dict[str, Any]], locked: str, family: str) -> bool:
    """Exactly one version installed (package_facts lists every one) and it is the pin."""
    if len(packages) != 1:
        return False
    return version_matches(installed_version(packages[0], family), locked, family)


def dpkg_status(lines: list[str]) -> dict[str, tuple[list[str], bool]]:
    """`dpkg-query --show --showformat='${Package}\\t${Version}\\t${db:Status-Want}\\t
    ${db:Status-Status}\\n'` lines: each package's installed versions (one per
    architecture) and whether its selection is hold."""
    found: dict[str, tuple[list[str], bool]] = {}
    for line in lines:
        fields = line.split("\t")
        if len(fields) != 4:
            continue
        name, version, want, status = fields
        versions, held = found.get(name, ([], False))
        if status == "installed":
            versions = [*versions, version]
        found[name] = (versions, held or want == "hold")
    return found


def apt_missing(pins: dict[str, str], lines: list[str]) -> list[str]:
    """The pinned packages dpkg does not have at exactly their pin (one version installed):
    what an apt run must install; empty, and apt need not open its cache."""
    found = dpkg_status(lines)
    return sorted(
        name
        for name, pin in pins.items()
        if len(found.get(name, ([], False))[0]) != 1
        or not version_matches(found[name][0][0], pin, "apt")
    )


def apt_unheld(pins: dict[str, str], lines: list[str]) -> list[str]:
    """The pinned packages whose dpkg selection is not hold."""
    found = dpkg_status(lines)
    return sorted(name for name in pins if not found.get(name, ([], False))[1])


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "pinned_version_matches": version_matches,
            "pinned_installed_version": installed_version,
            "pinned_installed_matches": installed_matches,
            "pinned_apt_missing": apt_missing,
            "pinned_apt_unheld": apt_unheld,
        }
