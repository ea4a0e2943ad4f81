"""The twin's network: one network namespace per host, each with a veth into a bridge
that lives in a namespace of its own, so nothing touches the machine's own network.

Names resolve through /etc/netns/<namespace>/hosts, which `ip netns exec` binds
over /etc/hosts. Addresses come from a private range inside those namespaces only.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import ipaddress
import os
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from clustergen.commands.twin.process import DaemonError, run_checked

# Seen only inside the twin's own namespaces, so it cannot clash with the machine's.
SUBNET = ipaddress.IPv4Network("10.201.0.0/16")
NETNS_DIR = Path("/run/netns")
NETNS_ETC = Path("/etc/netns")
BRIDGE = "br0"
PREFIX = "cgtwin-"  # every twin's namespaces are <PREFIX><hex>-br and <PREFIX><hex>-h<N>
# A running twin holds <LOCKS>/<its prefix>.lock; the kernel lets go of it when the twin's
# process ends, however it ends (SIGKILL included).
LOCKS = Path("/run/clustergen-twin")
WORK_DIR_PREFIX = "clustergen-twin-"  # a twin's own temporary folder (tempfile.mkdtemp)


def addresses_for(names: Sequence[str]) -> dict[str, str]:
    """Each name its own address of SUBNET, from .0.2 up, in order."""
    if len(names) > SUBNET.num_addresses - 3:
        raise DaemonError(f"{len(names)} hosts do not fit in {SUBNET}")
    return {name: str(SUBNET.network_address + index + 2) for index, name in enumerate(names)}


def hosts_text(addresses: Mapping[str, str]) -> str:
    lines = ["127.0.0.1 localhost"]
    lines += [f"{address} {name}" for name, address in addresses.items()]
    return "\n".join(lines) + "\n"


def namespace_pids(netns: str) -> list[int]:
    result = subprocess.run(
        ["ip", "netns", "pids", netns], capture_output=True, text=True, check=False
    )
    return [int(pid) for pid in result.stdout.split()]


def port_listening(netns: str, port: int) -> bool:
    result = subprocess.run(
        ["ip", "netns", "exec", netns, "ss", "-Hltn", f"sport = :{port}"],
        capture_output=True,
        text=True,
        check=False,
    )
    return bool(result.stdout.strip())


def remove_leftovers(spool_base: Path) -> list[str]:
    """What twins that ended without cleaning up (killed, crashed) left: their namespaces
    with whatever still runs in them, their hosts files and spool folders. A twin's things
    are left over when its lock is free; a twin that is running holds its lock and keeps
    everything. Returns what was removed."""
    running: set[str] = set()
    held: list[int] = []
    removed: list[str] = []
    try:
        for lock in sorted(LOCKS.glob(f"{PREFIX}*.lock")) if LOCKS.is_dir() else []:
            descriptor = os.open(lock, os.O_RDWR | os.O_CLOEXEC)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(descriptor)
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise
                running.add(lock.name.removesuffix(".lock"))
                continue
            held.append(descriptor)  # kept until its twin's things are gone
            work_dir = Path(os.read(descriptor, 4096).decode(errors="replace").strip() or "-")
            if work_dir.is_absolute() and work_dir.name.startswith(WORK_DIR_PREFIX):
                shutil.rmtree(work_dir, ignore_errors=True)
                removed.append(f"work folder {work_dir}")
            lock.unlink()
        names = sorted(p.name for p in NETNS_DIR.glob(f"{PREFIX}*")) if NETNS_DIR.is_dir() else []
        for netns in names:
            if netns.rpartition("-")[0] in running:
                continue
            stale = Namespaces(netns.rpartition("-")[0], created=[netns])
            failures = stale.delete()
            if failures:
                raise DaemonError("; ".join(failures))
            removed.append(f"network namespace {netns}")
        for folder in sorted(spool_base.glob(f"{PREFIX}*")):
            if folder.is_dir() and folder.name not in running:
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(f"spool folder {folder}")
    finally:
        for descriptor in held:
            os.close(descriptor)
    return removed


@dataclass
class Namespaces:
    """Namespaces named `<prefix>-br` (the bridge) and `<prefix>-h<N>` (the hosts), made
    while this process holds the prefix's lock (see remove_leftovers)."""

    prefix: str
    created: list[str] = field(default_factory=list)
    lock: int | None = None

    def claim(self, work_dir: Path | None) -> None:
        """Take the prefix's lock; it is not inherited by the daemons the twin starts
        (os.open's descriptors are not), so it is free exactly when this process ends.
        The lock names the twin's own temporary work folder, if it has one, for the
        sweep to remove."""
        LOCKS.mkdir(mode=0o700, exist_ok=True)
        descriptor = os.open(LOCKS / f"{self.prefix}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if work_dir is not None:
            os.write(descriptor, f"{work_dir}\n".encode())
        self.lock = descriptor

    def release(self) -> None:
        if self.lock is not None:
            with contextlib.suppress(FileNotFoundError):
                (LOCKS / f"{self.prefix}.lock").unlink()
            os.close(self.lock)
            self.lock = None

    @property
    def bridge_netns(self) -> str:
        return f"{self.prefix}-br"

    def create(self, addresses: Mapping[str, str], hosts: Sequence[str]) -> dict[str, str]:
        """A namespace with its address for each of `hosts`, all reachable from each other;
        every name of `addresses` resolves in each. Returns host name -> namespace."""
        self._add(self.bridge_netns)
        self._ip(self.bridge_netns, "link", "add", BRIDGE, "type", "bridge")
        self._ip(self.bridge_netns, "link", "set", BRIDGE, "up")
        hosts_file = hosts_text(addresses)
        namespaces: dict[str, str] = {}
        for index, name in enumerate(hosts):
            address = addresses[name]
            netns = self.host_netns(index)
            self._add(netns)
            (NETNS_ETC / netns).mkdir(parents=True, exist_ok=True)
            (NETNS_ETC / netns / "hosts").write_text(hosts_file)
            port = f"v{index}"
            self._ip(
                self.bridge_netns,
                "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", netns,
            )  # fmt: skip
            self._ip(self.bridge_netns, "link", "set", port, "master", BRIDGE, "up")
            self._ip(netns, "addr", "add", f"{address}/{SUBNET.prefixlen}", "dev", "eth0")
            self._ip(netns, "link", "set", "eth0", "up")
            self._ip(netns, "link", "set", "lo", "up")
            namespaces[name] = netns
        return namespaces

    def host_netns(self, index: int) -> str:
        return f"{self.prefix}-h{index}"

    def _add(self, netns: str) -> None:
        run_checked(["ip", "netns", "add", netns])
        self.created.append(netns)

    @staticmethod
    def _ip(netns: str, *argv: str) -> None:
        run_checked(["ip", "-n", netns, *argv])

    def delete(self) -> list[str]:
        """Kill what still runs in the namespaces, then delete them; returns what failed."""
        failures: list[str] = []
        while self.created:
            netns = self.created.pop()
            for pid in namespace_pids(netns):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            result = subprocess.run(
                ["ip", "netns", "del", netns], capture_output=True, text=True, check=False
            )
            if result.returncode != 0:
                failures.append(f"ip netns del {netns}: {result.stderr.strip()}")
            shutil.rmtree(NETNS_ETC / netns, ignore_errors=True)
        return failures
