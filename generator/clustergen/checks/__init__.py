"""Cross-field checks, one module per concern.

Each check is `check(spec, hosts) -> list[Problem]` and is listed in CHECKS with
the top-level sections it reads. A check runs when every section it needs is
valid, so one shape error in `racks` does not hide a driver too old for its CUDA;
it sees only those sections (reading any other is a bug, and fails loudly).
Checks that take `hosts` need `nodes` and `hardware`, the sections the host
table is expanded from. Checks are pure and never raise on valid sections.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from clustergen.checks import (
    addresses,
    hardware,
    packages,
    references,
    slurm,
    software,
    topology,
)
from clustergen.errors import Problem
from clustergen.hosts import Host, expand_hosts
from clustergen.model import Spec

HOST_SECTIONS = frozenset({"nodes", "hardware"})


@dataclass(frozen=True)
class Check:
    run: Callable[[Spec, list[Host]], list[Problem]]
    needs: frozenset[str]


def _check(run: Callable[[Spec, list[Host]], list[Problem]], *needs: str) -> Check:
    return Check(run, frozenset(needs))


CHECKS: tuple[Check, ...] = (
    _check(references.node_groups, "cluster", "hardware", "nodes"),
    _check(references.racks, "racks", "hardware", "nodes"),
    _check(references.storage, "storage", "cluster", "hardware", "nodes"),
    _check(addresses.check, "network", "hardware", "nodes"),
    _check(hardware.check, "hardware", "nodes"),
    _check(software.versions, "software"),
    _check(software.gpus, "software", "hardware"),
    _check(slurm.nodes, "slurm", "cluster", "hardware", "nodes"),
    _check(slurm.options, "slurm", "software"),
    _check(topology.check, "network", "hardware", "nodes"),
    _check(packages.pins, "software"),
    _check(packages.groups, "cluster", "hardware"),
)


def run_checks(spec: Spec, valid: Collection[str]) -> list[Problem]:
    """Every check whose sections are all in `valid` (the spec's other sections are absent)."""
    hosts = expand_hosts(spec) if set(valid) >= HOST_SECTIONS else []
    return [
        problem
        for check in CHECKS
        if check.needs <= set(valid)
        for problem in check.run(spec, hosts)
    ]
