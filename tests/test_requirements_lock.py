"""The lock CI installs from (tests/requirements.txt, made by .ci/lock) against
pyproject.toml: every requirement pinned, on every supported Python, to a version its
range allows, each pin with its hashes; while the package's own requirements stay ranges."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from support.lockfile import ci_environment, read_lock
from support.paths import REPO

# The repository's own files: the fast matrix leaves this to the main run.
pytestmark = pytest.mark.repository

if sys.version_info >= (3, 11):
    import tomllib
else:  # pytest's own dependency there
    import tomli as tomllib

PYTHONS = ["3.10", "3.11", "3.12", "3.13"]


def _pyproject() -> dict[str, Any]:
    with (REPO / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)


def _requirements() -> list[Requirement]:
    project = _pyproject()
    texts = [
        *project["project"]["dependencies"],
        *project["project"]["optional-dependencies"]["test"],
        *project["build-system"]["requires"],
    ]
    return [Requirement(text) for text in texts]


@pytest.mark.parametrize("python", PYTHONS)
def test_the_lock_satisfies_pyproject_on_every_supported_python(python: str) -> None:
    environment = ci_environment(python)
    pinned: dict[str, str] = {}
    for pin in read_lock():
        if pin.marker is None or pin.marker.evaluate(environment):
            assert pin.name not in pinned, f"{pin.name} is pinned twice for Python {python}"
            pinned[pin.name] = pin.version
    for requirement in _requirements():
        if requirement.marker is not None and not requirement.marker.evaluate(environment):
            continue
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"{requirement} is not in the lock for Python {python}: run .ci/lock"
        assert requirement.specifier.contains(pinned[name], prereleases=True), (
            f"the lock pins {name}=={pinned[name]}, outside pyproject.toml's {requirement} "
            f"(Python {python}): run .ci/lock"
        )


def test_every_pin_is_exact_and_carries_hashes() -> None:
    pins = read_lock()
    assert len(pins) > 50  # the whole environment, transitive packages included
    for pin in pins:
        assert pin.hashes, f"{pin.name}=={pin.version} has no --hash"
        assert all(h.startswith("sha256:") for h in pin.hashes), pin


def test_the_package_itself_keeps_ranges() -> None:
    """Users install clustergen beside other packages: its own requirements are ranges,
    never the lock's exact versions."""
    for requirement in _requirements():
        operators = {specifier.operator for specifier in requirement.specifier}
        assert not operators & {"==", "==="}, f"pyproject.toml pins {requirement} exactly"
