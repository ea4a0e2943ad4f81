"""The operating system against NVIDIA's packages: the driver branch and the repository.

NVIDIA builds a repository per distribution (catalog/distributions.py): a driver branch
older than the first one published for the distribution has no packages there, and a
repository of another distribution serves packages built against other libraries.
"""

from __future__ import annotations

from clustergen.base import codes
from clustergen.base.errors import Problem
from clustergen.catalog.distributions import DISTRIBUTIONS, NVIDIA_CUDA_REPOSITORIES
from clustergen.catalog.versions import parse_version
from clustergen.resolve import ResolvedCluster


def check(cluster: ResolvedCluster) -> list[Problem]:
    return [*_driver_branch(cluster), *_nvidia_repositories(cluster)]


def _driver_branch(cluster: ResolvedCluster) -> list[Problem]:
    software = cluster.spec.software
    distribution = DISTRIBUTIONS[software.os]
    branch = parse_version(software.nvidia_driver)[0]
    if branch >= distribution.first_driver_branch:
        return []
    return [
        Problem(
            codes.SOFTWARE_DRIVER_TOO_OLD_FOR_OS,
            ("software", "nvidia_driver"),
            f"driver {software.nvidia_driver} (branch {branch}) is not published for "
            f"{distribution.title}: {distribution.first_driver_source}; pin a driver of "
            f"branch {distribution.first_driver_branch} or newer (docs/platforms.md)",
        )
    ]


def _nvidia_repositories(cluster: ResolvedCluster) -> list[Problem]:
    """A repository URL under NVIDIA's CUDA repositories names its distribution in the
    directory after repos/ (ubuntu2204, rhel10, ...): it must be software.os's."""
    software = cluster.spec.software
    wanted = DISTRIBUTIONS[software.os].nvidia_codename
    problems = []
    for index, repository in enumerate(software.repositories):
        if not repository.url.startswith(NVIDIA_CUDA_REPOSITORIES):
            continue
        codename = repository.url[len(NVIDIA_CUDA_REPOSITORIES) :].split("/", 1)[0]
        if codename == wanted:
            continue
        problems.append(
            Problem(
                codes.SOFTWARE_NVIDIA_REPOSITORY_OTHER_OS,
                ("software", "repositories", index, "url"),
                f"repository '{repository.name}' is NVIDIA's CUDA repository for "
                f"'{codename}', but software.os is {software.os}, whose repository is "
                f"{NVIDIA_CUDA_REPOSITORIES}{wanted}/ (NVIDIA's driver installation guide, "
                "'Linux System Requirements'); its packages are built for another "
                "distribution",
            )
        )
    return problems
