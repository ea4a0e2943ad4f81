"""Whether a command may use a second core: the one test that a render, the commands
that read a rendered tree and validate's checks share (commands/parallel.py forks)."""

from __future__ import annotations

import os

# Below this many hosts a second process costs more than it saves: what it takes over
# (the uninstalled families, the fabric's walks among the checks) is a few hundredths
# of a second, less than a fork and its report.
MIN_HOSTS = 1024


def two_cores() -> bool:
    """Whether a second process may run beside this one: two cores or more are this
    process's to use, it can fork, and CLUSTERGEN_SERIAL=1 does not forbid it."""
    if os.environ.get("CLUSTERGEN_SERIAL") == "1" or not hasattr(os, "fork"):
        return False
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return cores >= 2


def two_processes(hosts: int) -> bool:
    """Whether the work on a spec of `hosts` hosts is shared with a second process."""
    return hosts >= MIN_HOSTS and two_cores()
