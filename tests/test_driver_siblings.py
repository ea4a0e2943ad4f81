"""The NVIDIA driver's siblings: every package of the driver's build that the pinned set
pulls in by dependency is held at the driver's version by one apt preferences record,
which apt itself reads here (apt-cache policy over a stand-in dpkg status)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import jinja2
from ruamel.yaml import YAML

from clustergen.catalog.nvidia_packages import driver_sibling_pins
from clustergen.model import Spec
from clustergen.resolve import resolve

from support.ci import skip_or_fail, tool
from support.paths import EXAMPLES, REPO

PREFERENCES = REPO / "roles" / "pinned_packages" / "templates" / "preferences.j2"
DRIVER = "570.133.20"

# name -> (installed version, the priority apt must give it), on Ubuntu (-0ubuntu1 builds)
INSTALLED = {
    # The pinned set itself.
    "nvidia-utils-570": (f"{DRIVER}-0ubuntu1", 1001),
    # Siblings the set pulls in, at the driver packages' version: held with them.
    "libnvidia-gl-570": (f"{DRIVER}-0ubuntu1", 1001),
    "libnvidia-fbc1-570": (f"{DRIVER}-0ubuntu1", 1001),
    # Another driver's build is not raised, so apt moves it to the pinned one; nor another
    # build of the same release (a glob such as 570.133.20-* would raise it to 1001, and
    # apt would take it over the pinned build).
    "libnvidia-decode-570": ("570.124.06-0ubuntu1", 100),
    "libnvidia-encode-570": (f"{DRIVER}-0ubuntu2", 100),
    "nvidia-compute-utils-570": (f"{DRIVER}-0ubuntu1+rebuild1", 100),
    # NVIDIA's packages with versions of their own, and a name the patterns must not take.
    "nvidia-container-toolkit": ("1.17.8-1", 100),
    "libnvme1": ("1.3-1", 100),
}


def _spec(os: str) -> Spec:
    document = YAML(typ="safe").load((EXAMPLES / "edge-roce-2node.yaml").read_text())
    document["software"]["os"] = os
    return Spec.model_validate(document)


def _status(path: Path, installed: dict[str, tuple[str, int]]) -> None:
    records = [
        f"Package: {name}\nStatus: install ok installed\nPriority: optional\nSection: libs\n"
        f"Installed-Size: 1\nMaintainer: stand-in <stand-in@example.org>\n"
        f"Architecture: amd64\nVersion: {version}\nDescription: stand-in\n"
        for name, (version, _) in installed.items()
    ]
    path.write_text("\n".join(records))


def _policy(
    tmp_path: Path, preferences: str, installed: dict[str, tuple[str, int]]
) -> dict[str, int]:
    apt_cache = tool("apt-cache")
    if apt_cache is None:
        skip_or_fail("needs apt-cache")
    parts = tmp_path / "preferences.d"
    parts.mkdir()
    (parts / "clustergen-nvidia_driver.pref").write_text(preferences)
    for folder in ("lists/partial", "cache/archives/partial", "sources.list.d"):
        (tmp_path / folder).mkdir(parents=True)
    _status(tmp_path / "status", installed)
    empty = tmp_path / "sources.list"
    empty.write_text("")
    options = {
        "Dir::State::Status": tmp_path / "status",
        "Dir::State::Lists": tmp_path / "lists",
        "Dir::Cache": tmp_path / "cache",
        "Dir::Etc::SourceList": empty,
        "Dir::Etc::SourceParts": tmp_path / "sources.list.d",
        "Dir::Etc::Preferences": empty,
        "Dir::Etc::PreferencesParts": parts,
        "APT::Architecture": "amd64",
    }
    argv = [apt_cache]
    for key, value in options.items():
        argv += ["-o", f"{key}={value}"]
    result = subprocess.run(
        [*argv, "policy", *installed], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0 and "preferences" not in result.stderr.lower(), result.stderr
    priorities: dict[str, int] = {}
    package = ""
    for line in result.stdout.splitlines():
        if not line.startswith(" "):
            package = line.rstrip(":")
        elif line.startswith(" *** "):
            priorities[package] = int(line.split()[-1])
    return priorities


def _preferences(os: str) -> tuple[str, list[dict[str, str]]]:
    cluster = resolve(_spec(os), "spec.yaml")
    pins = cluster.pins.by_concern["nvidia_driver"]
    records = driver_sibling_pins(cluster.spec.software, pins)
    text = jinja2.Template(PREFERENCES.read_text(), keep_trailing_newline=True).render(
        pinned_packages_concern="nvidia_driver",
        pinned_packages_versions=pins,
        pinned_packages_version_records=records,
    )
    return text, records


def test_apt_holds_every_sibling_of_the_driver_at_its_build(tmp_path: Path) -> None:
    preferences, records = _preferences("ubuntu-24.04")
    assert records == [{"packages": records[0]["packages"], "version": f"{DRIVER}-0ubuntu1"}]
    expected = {name: priority for name, (_, priority) in INSTALLED.items()}
    assert _policy(tmp_path, preferences, INSTALLED) == expected


def test_on_debian_the_siblings_are_debians_names_at_nvidias_debian_build(
    tmp_path: Path,
) -> None:
    preferences, records = _preferences("debian-12")
    assert records[0]["version"] == f"{DRIVER}-1"
    installed = {
        "nvidia-driver-cuda": (f"{DRIVER}-1", 1001),
        "libcuda1": (f"{DRIVER}-1", 1001),
        "libnvidia-ml1": (f"{DRIVER}-1", 1001),
        "libnvidia-ptxjitcompiler1": (f"{DRIVER}-2", 100),
    }
    assert _policy(tmp_path, preferences, installed) == {
        name: priority for name, (_, priority) in installed.items()
    }


def test_el_nodes_get_no_record() -> None:
    cluster = resolve(_spec("rocky-9"), "spec.yaml")
    assert (
        driver_sibling_pins(cluster.spec.software, cluster.pins.by_concern["nvidia_driver"]) == []
    )
