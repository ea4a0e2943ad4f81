"""requirements.yml pins each Ansible collection exactly, by one rule an admin can follow:
the newest version that an `ansible` of the lock (tests/requirements.txt) bundles and
that every ansible-core of the lock accepts (the collection's meta/runtime.yml
requires_ansible). The lock forks ansible by Python version, so BUNDLED records what
each locked ansible carries; the installed ansible's row is checked against the
collections it installed, and the lock's ansible versions against BUNDLED's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from support.lockfile import ci_environment, pinned_for
from support.paths import REPO

# The repository's own files: the fast matrix leaves this to the main run.
pytestmark = pytest.mark.repository

PYTHONS = ("3.10", "3.11", "3.12", "3.13")
COLLECTIONS = ("community.general", "ansible.posix", "community.mysql", "ansible.mysql")

# ansible (PyPI) -> collection -> (bundled version, its requires_ansible), as each wheel's
# ansible_collections/<namespace>/<name>/MANIFEST.json and meta/runtime.yml say; a
# collection a release does not bundle is absent from its row (ansible.mysql, which
# community.mysql 5 redirects to, first ships in ansible 13).
BUNDLED: dict[str, dict[str, tuple[str, str]]] = {
    "10.7.0": {
        "community.general": ("9.5.2", ">=2.13.0"),
        "ansible.posix": ("1.6.2", ">=2.15.0"),
        "community.mysql": ("3.11.0", ">=2.9.10"),
    },
    "12.3.0": {
        "community.general": ("11.4.2", ">=2.16.0"),
        "ansible.posix": ("2.1.0", ">=2.15.0"),
        "community.mysql": ("3.16.1", ">=2.9.10"),
    },
    "14.5.0": {
        "community.general": ("13.5.0", ">=2.18.0"),
        "ansible.posix": ("2.2.2", ">=2.16.0"),
        "community.mysql": ("5.0.2", ">=2.9.10"),
        "ansible.mysql": ("5.2.0", ">=2.16.0"),
    },
}


def _locked() -> dict[str, tuple[str, str]]:
    """Python -> (ansible, ansible-core) the lock installs there."""
    table = {}
    for python in PYTHONS:
        pinned = pinned_for(ci_environment(python))
        table[python] = (pinned["ansible"], pinned["ansible-core"])
    return table


def _requirements() -> dict[str, object]:
    document = yaml.safe_load((REPO / "requirements.yml").read_text(encoding="utf-8"))
    return {entry["name"]: entry.get("version") for entry in document["collections"]}


def _expected(collection: str) -> str:
    cores = [Version(core) for _, core in _locked().values()]
    accepted = [
        Version(version)
        for version, requires in (row[collection] for row in BUNDLED.values() if collection in row)
        if all(core in SpecifierSet(requires) for core in cores)
    ]
    assert accepted, f"no locked ansible bundles a {collection} every locked ansible-core accepts"
    return str(max(accepted))


def test_every_collection_is_pinned_exactly() -> None:
    pins = _requirements()
    assert sorted(pins) == sorted(COLLECTIONS)
    for name, version in pins.items():
        assert isinstance(version, str), f"{name}: version {version!r} is not a string"
        # An exact pin is a plain release number: '>=', '<', '*', ',' and '!=' are ranges.
        assert str(Version(version)) == version, (
            f"requirements.yml: {name} {version!r} is a range, not an exact version"
        )


@pytest.mark.parametrize("collection", COLLECTIONS)
def test_each_pin_follows_the_rule(collection: str) -> None:
    assert _requirements()[collection] == _expected(collection), (
        f"requirements.yml should pin {collection} {_expected(collection)}: the newest a "
        "locked ansible bundles that every locked ansible-core accepts"
    )


def test_the_table_covers_the_lock() -> None:
    assert sorted({ansible for ansible, _ in _locked().values()}) == sorted(BUNDLED), (
        "tests/requirements.txt pins other ansible releases than BUNDLED lists: record "
        "what each bundles (MANIFEST.json, meta/runtime.yml) and re-pin requirements.yml"
    )


def _installed_collection(name: str) -> tuple[str, str]:
    import ansible_collections  # the full ansible package installs it

    namespace, short = name.split(".")
    root = Path(next(iter(ansible_collections.__path__))) / namespace / short
    manifest = json.loads((root / "MANIFEST.json").read_text(encoding="utf-8"))
    runtime = yaml.safe_load((root / "meta" / "runtime.yml").read_text(encoding="utf-8"))
    return manifest["collection_info"]["version"], runtime["requires_ansible"]


def test_the_installed_ansible_bundles_what_the_table_says() -> None:
    from importlib.metadata import version

    installed = version("ansible")
    assert installed in BUNDLED, f"ansible {installed} is not a locked release"
    for collection in COLLECTIONS:
        if collection in BUNDLED[installed]:
            assert _installed_collection(collection) == BUNDLED[installed][collection], collection
