"""What the twin needs from the machine: root, and the distribution's Slurm packages."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable

# Command -> the Debian package that installs it (Ubuntu names them alike).
SLURM_COMMANDS = {
    "slurmctld": "slurmctld",
    "slurmd": "slurmd",
    "scontrol": "slurm-client",
    "sinfo": "slurm-client",
    "srun": "slurm-client",
    "sbatch": "slurm-client",
}
ACCOUNTING_COMMANDS = {
    "slurmdbd": "slurmdbd",
    "mariadbd": "mariadb-server",
    "mariadb-install-db": "mariadb-server",
}
SYSTEM_COMMANDS = {
    "ip": "iproute2",
    "ss": "iproute2",
    "unshare": "util-linux",
    "mount": "mount",
    "mknod": "coreutils",
}


def missing_prerequisites(
    accounting: bool,
    *,
    which: Callable[[str], str | None] = shutil.which,
    euid: int | None = None,
) -> list[str]:
    """One sentence per missing prerequisite; empty when the twin can run."""
    problems = []
    if (os.geteuid() if euid is None else euid) != 0:
        problems.append(
            "needs root: it creates network namespaces, mounts and device files (run it with sudo)"
        )
    commands = dict(SLURM_COMMANDS)
    if accounting:
        commands |= ACCOUNTING_COMMANDS
    commands |= SYSTEM_COMMANDS
    missing = {name: package for name, package in commands.items() if which(name) is None}
    if missing:
        packages = " ".join(sorted(set(missing.values())))
        problems.append(
            "needs the distribution's Slurm packages and tools; not found on PATH: "
            f"{', '.join(missing)} (Debian/Ubuntu: apt-get install {packages})"
        )
    return problems
