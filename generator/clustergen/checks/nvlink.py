"""Multi-node NVLink domains: every tray in exactly one domain of at most its profile's
size, and no partition whose jobs would land on domains of different sizes."""

from __future__ import annotations

from clustergen.base import codes
from clustergen.base.errors import Problem
from clustergen.resolve import ResolvedCluster, ResolvedDomain, is_tray
from clustergen.spec.hosts import compress


def check(cluster: ResolvedCluster) -> list[Problem]:
    domains = cluster.nvlink_domains
    problems: list[Problem] = []
    seen_names: dict[str, int] = {}
    domain_of: dict[str, str] = {}
    for position, domain in enumerate(domains):
        path = _path(domain)
        if domain.index is not None and domain.name in seen_names:
            problems.append(
                Problem(
                    codes.NETWORK_NVLINK_DOMAIN_DUPLICATE,
                    (*path, "name"),
                    f"NVLink domain '{domain.name}' is already defined at "
                    f"network.nvlink_domains[{seen_names[domain.name]}]",
                )
            )
        seen_names.setdefault(domain.name, domain.index if domain.index is not None else position)
        problems += _members(cluster, domain, domain_of)
    untrayed = [
        h.name for h in cluster.hosts if h.profiled and is_tray(h) and h.name not in domain_of
    ]
    if untrayed:
        listed = bool(cluster.spec.network.nvlink_domains)
        problems.append(
            Problem(
                codes.NETWORK_NVLINK_TRAY_WITHOUT_DOMAIN,
                ("network", "nvlink_domains") if listed else ("hardware",),
                f"{_count(untrayed)} {'are' if len(untrayed) > 1 else 'is'} a compute tray of "
                "an NVLink domain (gpu.nvlink_domain) but in none: "
                + (
                    "list it under network.nvlink_domains"
                    if listed
                    else "rack it (a rack is a domain by default) or list the domains under "
                    "network.nvlink_domains"
                ),
                at="key",
            )
        )
    return problems


def _members(
    cluster: ResolvedCluster, domain: ResolvedDomain, domain_of: dict[str, str]
) -> list[Problem]:
    path = (*_path(domain), "nodes")
    unknown, not_trays, twice = [], [], []
    sizes: set[int] = set()
    for name in domain.nodes:
        host = cluster.by_name.get(name)
        if host is None:
            unknown.append(name)
        elif not host.profiled:
            continue
        elif not is_tray(host):
            not_trays.append(name)
        elif name in domain_of:
            twice.append(name)
        else:
            domain_of[name] = domain.name
            gpu = host.hardware.gpu
            assert gpu is not None and gpu.nvlink_domain is not None
            sizes.add(gpu.nvlink_domain.trays)
    problems = []
    if unknown:
        problems.append(
            Problem(codes.NETWORK_NVLINK_UNKNOWN_NODE, path, f"unknown {_count(unknown)}")
        )
    if not_trays:
        problems.append(
            Problem(
                codes.NETWORK_NVLINK_NOT_A_TRAY,
                path,
                f"{_count(not_trays)} in NVLink domain '{domain.name}' "
                f"{'have' if len(not_trays) > 1 else 'has'} a profile without "
                "gpu.nvlink_domain: only the compute trays of an NVLink system belong to one",
            )
        )
    if twice:
        problems.append(
            Problem(
                codes.NETWORK_NVLINK_TWO_DOMAINS,
                path,
                f"{_count(twice)} {'are' if len(twice) > 1 else 'is'} already in NVLink domain "
                f"'{domain_of[twice[0]]}'",
            )
        )
    trays = sum(1 for name in domain.nodes if domain_of.get(name) == domain.name)
    if sizes and trays > min(sizes):
        problems.append(
            Problem(
                codes.NETWORK_NVLINK_DOMAIN_TOO_BIG,
                path,
                f"NVLink domain '{domain.name}' has {trays} trays, but one NVLink switch "
                f"fabric of its trays' profile joins {min(sizes)} (gpu.nvlink_domain.trays)",
            )
        )
    return problems


def partitions(cluster: ResolvedCluster) -> list[Problem]:
    """A partition whose nodes lie in NVLink domains of different sizes: a job's block of
    GPUs on one domain differs from the next's, and topology/block plans with one size."""
    size_of: dict[str, int] = {}
    for domain in cluster.nvlink_domains:
        trays = [
            name
            for name in domain.nodes
            if name not in size_of and (host := cluster.by_name.get(name)) and is_tray(host)
        ]
        size_of.update(dict.fromkeys(trays, len(trays)))
    if not size_of:
        return []
    problems = []
    for index, members in enumerate(cluster.partition_nodes):
        sizes: dict[int, list[str]] = {}
        for name in members:
            if name in size_of:
                sizes.setdefault(size_of[name], []).append(name)
        if len(sizes) > 1:
            listed = "; ".join(
                f"{size} trays: {compress(names)}" for size, names in sorted(sizes.items())
            )
            partition = cluster.spec.slurm.partitions[index]
            problems.append(
                Problem(
                    codes.SLURM_PARTITION_NVLINK_SIZES_DIFFER,
                    ("slurm", "partitions", index, "nodes"),
                    f"partition '{partition.name}' spans NVLink domains of different sizes "
                    f"({listed}): a job's NVLink reach depends on where it lands; split the "
                    "partition by domain size",
                )
            )
    return problems


def _path(domain: ResolvedDomain) -> tuple[str | int, ...]:
    if domain.index is None:
        return ("racks",)
    return ("network", "nvlink_domains", domain.index)


def _count(names: list[str]) -> str:
    return f"node {names[0]}" if len(names) == 1 else f"{len(names)} nodes {compress(names)}"
