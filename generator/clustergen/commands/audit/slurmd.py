"""`slurmd -C`: the node's hardware as slurmd detects it, one line of Key=Value words
(slurmd's `_print_config`, src/slurmd/slurmd/slurmd.c):

    NodeName=gpu01 CPUs=256 Boards=1 SocketsPerBoard=2 CoresPerSocket=64 \
        ThreadsPerCore=2 RealMemory=2063880        (one line; broken here)
    UpTime=12-03:04:05

RealMemory is in MiB (megabytes as Slurm counts them)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SlurmdHardware:
    cpus: int
    sockets: int  # Boards x SocketsPerBoard
    cores_per_socket: int
    threads_per_core: int
    real_memory_mib: int


def parse_slurmd_c(text: str) -> SlurmdHardware | None:
    """The hardware line, or None when no line carries CPUs= and RealMemory=."""
    for line in text.splitlines():
        words = dict(w.split("=", 1) for w in line.split() if "=" in w)
        if "CPUs" not in words or "RealMemory" not in words:
            continue
        try:
            return SlurmdHardware(
                cpus=int(words["CPUs"]),
                sockets=int(words.get("Boards", "1")) * int(words.get("SocketsPerBoard", "1")),
                cores_per_socket=int(words.get("CoresPerSocket", "1")),
                threads_per_core=int(words.get("ThreadsPerCore", "1")),
                real_memory_mib=int(words["RealMemory"]),
            )
        except ValueError:
            return None
    return None
