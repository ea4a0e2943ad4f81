"""The operating system matrix: every software.os validates and renders with its own
packaging, NVIDIA repository and Slurm; a driver NVIDIA publishes no packages of for the
OS, and NVIDIA's repository of another OS, are refused (catalog/distributions.py)."""

from __future__ import annotations

import typing
from typing import Any

import pytest
import yaml

from clustergen.catalog.distributions import (
    DISTRIBUTIONS,
    REFUSED_DISTRIBUTIONS,
    nvidia_repository,
)
from clustergen.model.software import OperatingSystem
from clustergen.render import render_all
from clustergen.spec.load import LoadedSpec
from clustergen.validate import validate_cluster

from support.paths import DATA

# A driver of a branch every OS of the matrix has (595 is Ubuntu 26.04's first), with the
# CUDA and NCCL it carries.
_STACK = {
    "nvidia_driver": "595.58.03",
    "fabric_manager": "595.58.03",
    "cuda": "12.8.1",
    "nccl": "2.26.2",
}


def _spec(os: str, **software: Any) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((DATA / "minimal-valid.yaml").read_text())
    data["software"].update(os=os, **_STACK)
    data["software"]["repositories"] = [
        {"name": "cuda", "url": nvidia_repository(os), "key_url": nvidia_repository(os) + "k.pub"}
    ]
    data["software"].update(software)
    return data


def _validate(data: dict[str, Any]) -> tuple[Any, list[tuple[str, str, str]]]:
    cluster, problems = validate_cluster(LoadedSpec(file="s.yaml", name="s.yaml", data=data))
    return cluster, [(p.code.name, p.code.severity, p.message) for p in problems]


def test_the_spec_language_and_the_catalog_list_the_same_systems() -> None:
    assert set(typing.get_args(OperatingSystem)) == set(DISTRIBUTIONS)


@pytest.mark.parametrize("os", sorted(REFUSED_DISTRIBUTIONS))
def test_el8_is_refused_with_its_reason_not_only_not_allowed(os: str) -> None:
    """RHEL 8 and Rocky 8 are known: validate says why they are refused and what to move
    to, where any other unknown name gets 'not allowed' and the nearest name."""
    assert os not in DISTRIBUTIONS
    data = _spec("rocky-9")
    data["software"]["os"] = os
    cluster, problems = _validate(data)
    assert cluster is None
    ((code, severity, message),) = problems
    assert (code, severity) == ("software.os-refused", "error")
    assert "Python 3.6" in message and "rocky-9" in message and "ansible/ansible#83357" in message
    data["software"]["os"] = "rocky-7"
    _, problems = _validate(data)
    assert [p[0] for p in problems] == ["shape.not-allowed"]


@pytest.mark.parametrize("os", sorted(DISTRIBUTIONS))
def test_each_system_validates_and_renders_its_own_packages(os: str) -> None:
    distribution = DISTRIBUTIONS[os]
    cluster, problems = _validate(_spec(os))
    assert cluster is not None
    assert [p for p in problems if p[1] == "error"] == []
    lock = yaml.safe_load(render_all(cluster)["versions.lock"].text)
    assert lock["os"] == os
    packages = {
        name: v for group in lock["groups"].values() for name, v in group["packages"].items()
    }
    if distribution.family == "apt":
        assert packages["libnccl2"] == "2.26.2-1+cuda12.8"
        # Ubuntu's packaging on Ubuntu, Debian's (nvidia-driver-cuda) on Debian.
        driver = "nvidia-utils" if os.startswith("ubuntu-") else "nvidia-driver-cuda"
        assert packages[driver] == (
            "595.58.03-0ubuntu1" if os.startswith("ubuntu-") else "595.58.03-1"
        )
    else:
        assert packages["libnccl"] == "2.26.2-1+cuda12.8"
        assert packages["nvidia-driver-cuda"] == f"3:595.58.03-1{distribution.el_dist}"
        assert packages["slurm-slurmd"] == f"23.11.10-1{distribution.el_dist}"


@pytest.mark.parametrize(
    ("os", "shipped"), [(n, d.slurm) for n, d in sorted(DISTRIBUTIONS.items()) if d.slurm]
)
def test_the_distributions_own_slurm_is_pinned_by_its_version(os: str, shipped: str) -> None:
    """Debian 13's 24.11.5 and Ubuntu 26.04's 25.11.2 among them; any other version of the
    distribution's packages is refused."""
    cluster, problems = _validate(_spec(os, slurm=shipped, slurm_packages="distribution"))
    codes = {code for code, _, _ in problems}
    if cluster is None:  # 21.08.5 (Ubuntu 22.04) is older than clustergen supports
        assert "software.slurm-too-old" in codes
        return
    assert "software.slurm-not-distribution-version" not in codes
    lock = yaml.safe_load(render_all(cluster)["versions.lock"].text)
    assert lock["groups"]["compute"]["packages"]["slurmd"] == f"{shipped}-*"
    _, other = _validate(_spec(os, slurm="25.05.3", slurm_packages="distribution"))
    assert "software.slurm-not-distribution-version" in {code for code, _, _ in other}


def test_a_driver_branch_nvidia_publishes_none_of_for_the_system_is_refused() -> None:
    cluster, problems = _validate(
        _spec("ubuntu-26.04", nvidia_driver="590.48.01", fabric_manager="590.48.01")
    )
    assert cluster is None
    ((code, severity, message),) = [p for p in problems if p[1] == "error"]
    assert (code, severity) == ("software.driver-too-old-for-os", "error")
    assert "branch 590" in message and "Ubuntu 26.04 LTS" in message
    # The same driver on Ubuntu 24.04 is published there.
    assert "software.driver-too-old-for-os" not in {
        p[0]
        for p in _validate(
            _spec("ubuntu-24.04", nvidia_driver="590.48.01", fabric_manager="590.48.01")
        )[1]
    }


def test_nvidia_repository_of_another_system_is_refused_and_others_are_not_judged() -> None:
    data = _spec("rocky-10")
    data["software"]["repositories"] += [
        {"name": "el9", "url": nvidia_repository("rocky-9"), "key_url": "https://x.example/k"},
        {"name": "site", "url": "https://repo.example.org/rhel9/", "key_url": "https://x/k"},
    ]
    _, problems = _validate(data)
    (message,) = [m for c, _, m in problems if c == "software.nvidia-repository-other-os"]
    assert "repository 'el9' is NVIDIA's CUDA repository for 'rhel9'" in message
    assert "repos/rhel10/" in message
