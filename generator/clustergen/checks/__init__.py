"""Cross-field checks, one module per concern.

Each module exposes `check(spec, hosts) -> list[Problem]`; add a module to
CHECKS to have it run. Checks are pure and never raise on a valid model.
"""

from __future__ import annotations

from collections.abc import Callable

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

Check = Callable[[Spec, list[Host]], list[Problem]]

CHECKS: tuple[Check, ...] = (
    references.check,
    addresses.check,
    hardware.check,
    software.check,
    slurm.check,
    topology.check,
    packages.check,
)


def run_checks(spec: Spec) -> list[Problem]:
    hosts = expand_hosts(spec)
    return [problem for check in CHECKS for problem in check(spec, hosts)]
