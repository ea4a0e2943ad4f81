"""The RDMA stack (software.rdma) against the nodes with fabric HCAs (docs/rdma.md)."""

from __future__ import annotations

from clustergen import codes
from clustergen.catalog.distributions import DISTRIBUTIONS
from clustergen.catalog.packages import rdma_versions
from clustergen.errors import Problem
from clustergen.resolve import ResolvedCluster, rdma_profiles


def stack(cluster: ResolvedCluster) -> list[Problem]:
    """A repository named that exists; a warning wherever nodes with fabric HCAs get no
    RDMA packages from clustergen (DOCA-OFED, or an rdma-core version it does not know)."""
    spec = cluster.spec
    software = spec.software
    rdma = software.rdma
    problems = []
    names = {repository.name for repository in software.repositories}
    if rdma is not None and rdma.repository is not None and rdma.repository not in names:
        problems.append(
            Problem(
                codes.SOFTWARE_RDMA_REPOSITORY_UNKNOWN,
                ("software", "rdma", "repository"),
                f"software.rdma.repository '{rdma.repository}' is not in software.repositories"
                f" ({', '.join(sorted(names)) or 'none listed'})",
            )
        )
    profiles = rdma_profiles(spec.hardware, spec.network)
    if not profiles:
        return problems
    core, _ = rdma_versions(software)
    where = ("software", "rdma") if rdma is not None else ("software", "os")
    if rdma is not None and rdma.stack == "doca-ofed":
        message = (
            f"the nodes of {', '.join(profiles)} run DOCA-OFED {rdma.version} from repository "
            f"'{rdma.repository}', which clustergen does not install: install it (host "
            "profile) before site.yml; the rdma role still loads nvidia-peermem, sets the "
            "locked-memory limits and checks the devices"
        )
    elif core is None:
        message = (
            f"the nodes of {', '.join(profiles)} have fabric HCAs, but clustergen knows no "
            f"rdma-core version of {DISTRIBUTIONS[software.os].title}: no RDMA package "
            "(rdma-core, perftest) is installed; set software.rdma.version (and perftest)"
        )
    else:
        return problems
    problems.append(Problem(codes.SOFTWARE_RDMA_UNPINNED, where, message))
    return problems
