"""The epoch-aware comparison the pinned_packages role uses (its filter plugin)."""

from __future__ import annotations

import importlib.util
from types import ModuleType

import pytest

from support.paths import REPO

PLUGIN = REPO / "roles" / "pinned_packages" / "filter_plugins" / "pinned_versions.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("pinned_versions", PLUGIN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


pv = _load()


@pytest.mark.parametrize(
    ("installed", "locked", "matches"),
    [
        # Both sides carry NVIDIA's Epoch 3: an unchanged EL GPU node.
        ("3:550.90.07-1.el9", "3:550.90.07-1.el9", True),
        # A lock written without the epoch matches whatever epoch is installed (dnf NVR rule).
        ("3:550.90.07-1.el9", "550.90.07-1.el9", True),
        # The lock names an epoch the installed package lacks: epoch 0 != 3.
        ("550.90.07-1.el9", "3:550.90.07-1.el9", False),
        ("0:550.90.07-1.el9", "550.90.07-1.el9", True),
        ("2:550.90.07-1.el9", "3:550.90.07-1.el9", False),
        # Another version or release with the same epoch.
        ("3:550.90.12-1.el9", "3:550.90.07-1.el9", False),
        ("3:550.90.07-2.el9", "3:550.90.07-1.el9", False),
        # EPEL's Slurm, pinned at its upstream version whatever the release.
        ("22.05.9-1.el9", "22.05.9-*", True),
        ("22.05.10-1.el9", "22.05.9-*", False),
    ],
)
def test_rpm_versions(installed: str, locked: str, matches: bool) -> None:
    assert pv.version_matches(installed, locked, "dnf") is matches


@pytest.mark.parametrize(
    ("installed", "locked", "matches"),
    [
        ("550.90.07-1", "550.90.07-1", True),
        # dpkg: no epoch is epoch 0, on either side.
        ("0:550.90.07-1", "550.90.07-1", True),
        ("550.90.07-1", "0:550.90.07-1", True),
        ("1:3.3.6-1", "1:3.3.6-1", True),
        ("1:3.3.6-1", "3.3.6-1", False),
        ("3.3.6-1", "1:3.3.6-1", False),
        # Debian revisions are part of the version.
        ("550.90.07-0ubuntu1", "550.90.07-1", False),
        ("2.21.5-1+cuda12.4", "2.21.5-1+cuda12.4", True),
        ("2.21.5-1+cuda12.4", "2.21.5-1+cuda12.6", False),
        # A distribution's Slurm, pinned at its upstream version whatever Debian's revision.
        ("22.05.8-4+deb12u3", "22.05.8-*", True),
        ("22.05.8-4+deb12u3", "22.05.*", True),
        ("22.05.9-1", "22.05.8-*", False),
        # The glob does not reach across the upstream version into a longer one.
        ("22.05.80-1", "22.05.8-*", False),
        ("1:22.05.8-4", "22.05.8-*", False),
    ],
)
def test_dpkg_versions(installed: str, locked: str, matches: bool) -> None:
    assert pv.version_matches(installed, locked, "apt") is matches


def test_rpm_package_facts_entry_carries_its_epoch() -> None:
    entry = {"name": "nvidia-driver", "epoch": 3, "version": "550.90.07", "release": "1.el9"}
    assert pv.installed_version(entry, "dnf") == "3:550.90.07-1.el9"
    assert pv.installed_matches([entry], "3:550.90.07-1.el9", "dnf")
    no_epoch = {"name": "libnccl", "epoch": None, "version": "2.21.5", "release": "1+cuda12.4"}
    assert pv.installed_version(no_epoch, "dnf") == "2.21.5-1+cuda12.4"


def test_apt_package_facts_entry_is_its_version() -> None:
    entry = {"name": "libnccl2", "version": "2.21.5-1+cuda12.4"}
    assert pv.installed_version(entry, "apt") == "2.21.5-1+cuda12.4"


def test_missing_or_several_installed_versions_differ() -> None:
    entry = {"name": "nvidia-driver", "epoch": 3, "version": "550.90.07", "release": "1.el9"}
    assert not pv.installed_matches([], "3:550.90.07-1.el9", "dnf")
    assert not pv.installed_matches([entry, entry], "3:550.90.07-1.el9", "dnf")


def test_the_filters_are_registered() -> None:
    assert set(pv.FilterModule().filters()) == {
        "pinned_version_matches",
        "pinned_installed_version",
        "pinned_installed_matches",
        "pinned_apt_missing",
        "pinned_apt_unheld",
    }


def _dpkg(*rows: tuple[str, str, str, str]) -> list[str]:
    return ["\t".join(row) for row in rows]


def test_apt_runs_only_for_packages_off_their_pin() -> None:
    """What dpkg-query says decides whether apt opens its cache: a package at its pin
    (epochs and globs as apt matches them) is left alone; one at another version, not
    installed (half-installed, unknown), or installed for two architectures is missing."""
    lines = _dpkg(
        ("bash", "5.2.15-2+b7", "hold", "installed"),
        ("rdma-core", "44.0-2", "install", "installed"),
        ("datacenter-gpu-manager", "1:3.3.6", "hold", "installed"),
        ("libnccl2", "2.21.5-1+cuda12.4", "hold", "installed"),
        ("libc6", "2.36-9", "install", "installed"),
        ("libc6", "2.36-9", "install", "installed"),
        ("munge", "0.5.15-2", "install", "half-installed"),
    )
    pins = {
        "bash": "5.2.15-2+b7",
        "rdma-core": "44.0-*",
        "datacenter-gpu-manager": "1:3.3.6",
        "libnccl2": "2.23.4-1+cuda12.4",
        "libc6": "2.36-9",
        "munge": "0.5.15-2",
        "perftest": "4.5-1",
    }
    assert pv.apt_missing(pins, lines) == ["libc6", "libnccl2", "munge", "perftest"]
    assert pv.apt_missing({"datacenter-gpu-manager": "3.3.6"}, lines) == ["datacenter-gpu-manager"]
    assert pv.apt_unheld(pins, lines) == ["libc6", "munge", "perftest", "rdma-core"]
    assert pv.apt_missing({"bash": "5.2.15-2+b7"}, lines[:1]) == []
