"""Booted Debian nodes: systemd as PID 1, sshd, an admin user with sudo, on a host bridge.

The recipe of shared/reference/testbed.md ("Booted nodes" and "Running Slurm on booted
nodes"), with every fix listed there:
- the node tree is the chroot testbed's debootstrap base plus systemd, dbus, iproute2,
  sshd and sudo, installed with a policy-rc.d that exits 101 and under `unshare -m -p -f`
  so that no package script starts anything on the host; its SSH host keys and
  machine-id are removed, and every node gets fresh ones;
- the node tree is BARE for Slurm: no munge, slurm or mariadb. Nodes have no route out,
  so one flat apt repository, bind-mounted read-only into every node, holds Debian's real
  munge/MariaDB/Slurm packages with their dependency closure beyond the node tree, and the
  stand-ins for every pinned NVIDIA/CUDA/NCCL/DCGM/Lustre package (pin and newer);
- each node is `systemd-nspawn -b --register=no --keep-unit` in its own cgroup in every
  hierarchy (the host has no systemd, so nodes would otherwise share the caller's),
  in legacy cgroup mode (SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=0: slurmd refuses hybrid), with
  the v1 controllers remounted read-write inside the node once it is up;
- fake GPUs are character devices 195:N (and nvidiactl 195:255) made in a host directory
  and bound over /dev/nvidiaN;
- stopping sends SIGTERM twice (the first is ignored before the node's systemd is up),
  falls back to SIGKILL and removes the lock nspawn leaves behind, then the cgroups and
  the bridge.

Built trees are cached by a digest of what goes into them (support.ansible_testbed.cached):
under /var/tmp locally, under the test's own directory in CI.
"""

from __future__ import annotations

import fcntl
import ipaddress
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from support.ansible_testbed import (
    STAND_IN_RECIPE,
    SUITE,
    StandInContent,
    StandInFile,
    StandInPayload,
    base_system,
    build_stand_ins,
    cached,
    digest,
    index_flat_repository,
    mirror,
    run,
    stand_ins_wanted,
)
from support.ci import tool

# Bump when the recipe changes, so cached trees built the old way are not reused.
RECIPE_VERSION = "3"
NODE_PACKAGES = (
    "systemd",
    "systemd-sysv",
    "dbus",
    "iproute2",
    "openssh-server",
    "openssh-sftp-server",
    "sudo",
)
# What the roles install from the distribution onto bare nodes: Debian's real packages,
# offered by the local repository with their dependency closure. Time sync and the
# MariaDB client library for Ansible are offered too, for roles that use them.
DAEMON_PACKAGES = (
    "munge",
    "mariadb-server",
    "slurmctld",
    "slurmd",
    "slurmdbd",
    "slurm-client",
    "libpam-slurm-adopt",
    "libpmix2",
    # Slurm before 23.02.5 dlopens the unversioned libpmix.so, which only libpmix-dev ships
    # (catalog/slurm_packages.py, slurm_pmix_pins): the pin of slurm.mpi pmix on Debian 12.
    "libpmix-dev",
    "chrony",
    "python3-pymysql",
    # monitoring.node_exporter of the booted spec: Debian's own exporter, whose listen
    # address the rendered drop-in sets (tests/test_booted_cluster.py checks /metrics).
    "prometheus-node-exporter",
)
# Pull mode (ansible.pull): the pinned ansible, ansible-core, git and gpgv
# roles/ansible_pull installs, for the suites whose booted test runs pull mode (Debian 13:
# Debian 12's ansible-core is older than the roles' minimum, catalog/distributions.py).
PULL_PACKAGES: dict[str, tuple[str, ...]] = {"trixie": ("ansible", "ansible-core", "git", "gpgv")}
# Debian 13 renamed libraries for 64-bit time_t (the "t64" transition); the packages
# above under their trixie names (packages.debian.org/trixie/libpmix2t64).
RENAMED_PACKAGES: dict[str, dict[str, str]] = {"trixie": {"libpmix2": "libpmix2t64"}}
# systemd 256 and later refuse to boot on cgroup v1 unless told (systemd's NEWS for 256;
# 257 is trixie's). This host has v1 controllers only and slurmd refuses hybrid or
# unified here, so such a node's init is given both switches on its command line (a
# container's systemd reads its own arguments as the kernel command line).
LEGACY_CGROUP_FROM_SYSTEMD = 256
LEGACY_CGROUP_INIT_ARGS = (
    "systemd.unified_cgroup_hierarchy=0",
    "SYSTEMD_CGROUP_ENABLE_LEGACY_FORCE=1",
)
ADMIN = "admin"
REPO_IN_NODE = "/srv/repo"
HOST_TOOLS = (
    "systemd-nspawn",
    "nsenter",
    "unshare",
    "ip",
    "ssh",
    "ssh-keygen",
    "debootstrap",
    "dpkg-deb",
    "dpkg-query",
    "dpkg-scanpackages",
    "chroot",
)
NVIDIA_MAJOR = 195
NVIDIACTL_MINOR = 255
# The cgroup v1 controllers nspawn mounts read-only inside a node; slurmd writes to them.
V1_CONTROLLERS_RW = ("freezer", "devices", "cpuset", "memory", "cpu", "cpuacct", "cpu,cpuacct")
_SOURCES = Path("/etc/apt/sources.list.d/debian.sources")
_LOOPBACK_HOSTS = "127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n"
_NSPAWN_LOCKS = Path("/run/systemd/nspawn/locks")
_LOCKS = Path("/run/lock")


def missing_prerequisites() -> list[str]:
    missing = [name for name in HOST_TOOLS if tool(name) is None]
    missing += [name for name in ("ansible", "ansible-playbook") if tool(name) is None]
    if os.geteuid() != 0:
        missing.append("root privileges (debootstrap, systemd-nspawn, bridges)")
    if not _SOURCES.is_file():
        missing.append(f"the host's Debian sources ({_SOURCES})")
    if not Path("/sys/fs/cgroup").is_dir():
        missing.append("cgroups under /sys/fs/cgroup")
    return missing


# --- building ---------------------------------------------------------------------------


def in_tree(tree: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """Run a command in the tree in its own mount and PID namespaces: anything a package
    script leaves running dies with the namespace, and never sees the host."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive", "LC_ALL": "C"}
    return run(
        ["unshare", "-m", "-p", "-f", f"--mount-proc={tree}/proc", "chroot", str(tree), *argv],
        env=env,
    )


def suite_of(tree: Path) -> str:
    """The Debian release a tree holds (VERSION_CODENAME of its os-release)."""
    for line in (tree / "etc/os-release").read_text(encoding="utf-8").splitlines():
        key, _, value = line.partition("=")
        if key == "VERSION_CODENAME":
            return value.strip('"')
    raise RuntimeError(f"{tree}: no VERSION_CODENAME in etc/os-release")


def daemon_package_names(suite: str) -> tuple[str, ...]:
    """DAEMON_PACKAGES under the names `suite` gives them."""
    renamed = RENAMED_PACKAGES.get(suite, {})
    names = tuple(renamed.get(name, name) for name in DAEMON_PACKAGES)
    return names + PULL_PACKAGES.get(suite, ())


@contextmanager
def _host_sources(tree: Path) -> Iterator[None]:
    """The host's Debian sources in the tree while installing, and no service starts.
    A tree of another release than the host's gets the host's mirror with its own suite."""
    sources = tree / "etc/apt/sources.list.d/debian.sources"
    policy = tree / "usr/sbin/policy-rc.d"
    suite = suite_of(tree)
    if suite == SUITE:
        shutil.copy2(_SOURCES, sources)
    else:
        sources.write_text(
            f"Types: deb\nURIs: {mirror()}\nSuites: {suite}\nComponents: main\n"
            "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n",
            encoding="utf-8",
        )
    policy.write_text("#!/bin/sh\nexit 101\n", encoding="utf-8")
    policy.chmod(0o755)
    try:
        in_tree(tree, "apt-get", "update")
        yield
    finally:
        sources.unlink(missing_ok=True)
        policy.unlink(missing_ok=True)
        for lists in (tree / "var/lib/apt/lists").glob("*_*"):
            lists.unlink()


# nspawn mounts the cgroup v1 controllers read-only inside a node, and slurmd fails with
# "unable to create cgroup ... Read-only file system". The node remounts them read-write
# itself, early at every boot (also after a reboot the playbook asks for).
_CGROUP_RW_SCRIPT = f"""#!/bin/sh
# clustergen testbed: cgroup v1 controllers writable for slurmd.
set -e
for dir in $(findmnt -rn -t cgroup -o TARGET); do
    case "${{dir##*/}}" in
        {"|".join(V1_CONTROLLERS_RW)})
            mount -o remount,bind,rw,nosuid,nodev,noexec "$dir" ;;
    esac
done
"""
_CGROUP_RW_UNIT = """[Unit]
Description=clustergen testbed: cgroup v1 controllers writable for slurmd
DefaultDependencies=no
After=local-fs.target
Before=sysinit.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/testbed-cgroup-rw

[Install]
WantedBy=sysinit.target
"""


def node_base(scratch: Path, suite: str = SUITE) -> Path:
    """The chroot base of `suite` plus what a booted node needs; bare for Slurm."""
    base = base_system(scratch, suite)

    def build(tree: Path) -> None:
        run(["cp", "-a", str(base), str(tree)])
        with _host_sources(tree):
            in_tree(tree, "apt-get", "install", "-y", "--no-install-recommends", *NODE_PACKAGES)
            in_tree(tree, "apt-get", "clean")
        in_tree(tree, "systemctl", "enable", "systemd-networkd", "ssh")
        _no_byte_compiling(tree)
        in_tree(tree, "useradd", "--create-home", "--shell", "/bin/bash", ADMIN)
        sudoers = tree / "etc/sudoers.d" / ADMIN
        sudoers.write_text(f"{ADMIN} ALL=(ALL) NOPASSWD:ALL\n", encoding="utf-8")
        sudoers.chmod(0o440)
        script = tree / "usr/local/sbin/testbed-cgroup-rw"
        script.write_text(_CGROUP_RW_SCRIPT, encoding="utf-8")
        script.chmod(0o755)
        (tree / "etc/systemd/system/testbed-cgroup-rw.service").write_text(
            _CGROUP_RW_UNIT, encoding="utf-8"
        )
        in_tree(tree, "systemctl", "enable", "testbed-cgroup-rw.service")
        for key in (tree / "etc/ssh").glob("ssh_host_*"):
            key.unlink()
        (tree / "etc/machine-id").write_text("", encoding="utf-8")
        (tree / "var/lib/dbus/machine-id").unlink(missing_ok=True)

    key = digest(RECIPE_VERSION, base.name, NODE_PACKAGES, ADMIN)
    return cached("node", key, build, scratch)


# What Debian's Python packages run from their postinst to byte-compile their modules
# (python3-minimal's py3compile; dh_python3). In a node tree it is diverted to a no-op:
# the distribution's `ansible` that pull mode installs is some 40,000 modules, and
# compiling them took most of Debian 13's first site.yml on all three nodes at once (both
# of CI's cores for minutes). Python compiles what it imports on first use instead; no
# test reads a .pyc, and every package still unpacks and configures as on a machine.
_PY3COMPILE = "/usr/bin/py3compile"
_NO_BYTE_COMPILING = (
    "#!/bin/sh\n"
    "# The testbed's node trees skip byte-compiling (tests/support/booted.py): Python\n"
    "# compiles what it imports on first use.\n"
    "exit 0\n"
)


def _no_byte_compiling(tree: Path) -> None:
    in_tree(tree, "dpkg-divert", "--local", "--rename", "--add", _PY3COMPILE)
    stand_in = tree / _PY3COMPILE.lstrip("/")
    stand_in.write_text(_NO_BYTE_COMPILING, encoding="utf-8")
    stand_in.chmod(0o755)


def daemon_packages(base: Path, scratch: Path) -> Path:
    """Debian's .debs of DAEMON_PACKAGES (under the names of the base's release) and
    everything they need that `base` lacks, downloaded in a throwaway copy of the node
    tree with the host's mirror."""
    names = daemon_package_names(suite_of(base))

    def build(tree: Path) -> None:
        throwaway = tree.parent / "root"
        run(["cp", "-a", str(base), str(throwaway)])
        try:
            with _host_sources(throwaway):
                in_tree(
                    throwaway,
                    "apt-get",
                    "install",
                    "--download-only",
                    "-y",
                    "--no-install-recommends",
                    *names,
                )
            tree.mkdir()
            for deb in (throwaway / "var/cache/apt/archives").glob("*.deb"):
                shutil.copy2(deb, tree / deb.name)
        finally:
            shutil.rmtree(throwaway, ignore_errors=True)

    return cached("debs", digest(RECIPE_VERSION, base.name, mirror(), names), build, scratch)


# The package that carries nvidia-smi and the driver's services, in the order tried:
# the package of that name if the lock pins it, else the driver's meta package, else
# nvidia-utils (which ships nvidia-smi; a compute-only set from 590 has no meta package);
# on Debian, NVIDIA's nvidia-driver-cuda.
_DRIVER_META = re.compile(
    r"^(cuda-drivers|nvidia-open|nvidia-driver|nvidia-headless|nvidia-utils)(-\d+)?(-open|-cuda)?$"
)
_SERVICES = (
    ("nvidia-persistenced", re.compile(r"^nvidia-persistenced$")),
    ("nvidia-fabricmanager", re.compile(r"^nvidia-fabric-?manager(-\d+)?$")),
    ("nvidia-dcgm", re.compile(r"^datacenter-gpu-manager(-4-core)?$")),
)
_RELOAD_UNITS = (
    "#!/bin/sh\nset -e\nif [ -d /run/systemd/system ]; then systemctl daemon-reload; fi\n"
)
NVIDIA_SMI = Path(__file__).with_name("nvidia_smi_stand_in.py")


def _upstream(version: str) -> str:
    without_epoch = version.split(":", 1)[-1]
    return without_epoch.rsplit("-", 1)[0] if "-" in without_epoch else without_epoch


def stand_in_payload(names: Sequence[str]) -> StandInPayload:
    """What a booted node needs of the stand-ins: an nvidia-smi that reports the
    installed driver's version and healthy fake GPUs, and a unit (a sleeping process)
    for each NVIDIA service the roles start, each carried by one package of the lock."""
    smi_carrier = "nvidia-smi" if "nvidia-smi" in names else None
    metas = sorted(name for name in names if _DRIVER_META.match(name))
    smi_carrier = smi_carrier or (metas[0] if metas else None)
    units: dict[str, list[str]] = {}
    for unit, pattern in _SERVICES:
        carrier = next((name for name in sorted(names) if pattern.match(name)), None)
        if carrier is None and unit == "nvidia-persistenced":
            carrier = smi_carrier
        if carrier is not None:
            units.setdefault(carrier, []).append(unit)

    def payload(name: str, version: str) -> StandInContent:
        files: list[StandInFile] = []
        if name == smi_carrier:
            script = NVIDIA_SMI.read_text().replace("@DRIVER_VERSION@", _upstream(version))
            files.append(StandInFile("nvidia-smi", "/usr/bin/", script, 0o755))
        for unit in units.get(name, []):
            text = (
                f"[Unit]\nDescription=stand-in for {unit} ({name} {version})\n\n"
                "[Service]\nExecStart=/bin/sleep infinity\n\n"
                "[Install]\nWantedBy=multi-user.target\n"
            )
            files.append(StandInFile(f"{unit}.service", "/lib/systemd/system/", text))
        reload = _RELOAD_UNITS if name in units else None
        return StandInContent(tuple(files), reload)

    return payload


def local_repository(pin_sets: Sequence[Mapping[str, str]], base: Path, scratch: Path) -> Path:
    """One flat repository for the nodes: the real daemon packages, and the stand-ins of
    every pin set (each pin and one newer version)."""
    debs = daemon_packages(base, scratch)
    real = {deb.name.split("_", 1)[0] for deb in debs.glob("*.deb")}
    # Debian's own packages are never replaced by a stand-in.
    wanted = sorted(
        {
            item
            for pins in pin_sets
            for item in stand_ins_wanted({n: v for n, v in pins.items() if n not in real})
        }
    )

    def build(tree: Path) -> None:
        tree.mkdir(parents=True)
        for deb in debs.glob("*.deb"):
            shutil.copy2(deb, tree / deb.name)
        build_stand_ins(wanted, tree, stand_in_payload(sorted({n for n, _ in wanted})))
        index_flat_repository(tree)

    recipe = (RECIPE_VERSION, STAND_IN_RECIPE, NVIDIA_SMI.read_text())
    return cached("flatrepo", digest(recipe, debs.name, wanted), build, scratch)


# --- the network ------------------------------------------------------------------------


_BRIDGE_PREFIX = "cgb"  # every bridge this module makes: cgb + 8 hex digits


def _routes_overlapping(subnet: ipaddress.IPv4Network) -> list[tuple[str, str]]:
    """(destination, device) of each route of the host into `subnet`."""
    routes = json.loads(run(["ip", "-j", "-4", "route", "show", "table", "all"]).stdout)
    clashes = []
    for route in routes:
        dst = route.get("dst", "")
        if dst in ("default", "") or route.get("type") in ("local", "broadcast"):
            continue
        network = ipaddress.ip_network(dst if "/" in dst else f"{dst}/32", strict=False)
        if isinstance(network, ipaddress.IPv4Network) and network.overlaps(subnet):
            clashes.append((dst, route.get("dev", "?")))
    return clashes


def _is_own_bridge(device: str) -> bool:
    return re.fullmatch(rf"{_BRIDGE_PREFIX}[0-9a-f]{{8}}", device) is not None


def _reclaim_stale_bridges(subnet: ipaddress.IPv4Network) -> list[str]:
    """Delete the bridges of this module that still route into `subnet`, and name them.
    Called with the subnet's lock held: the run that made such a bridge held the lock
    until its bridge was gone, so one still here outlived a run that was killed (a
    SIGKILL runs no `finally`; a session's end kills its tests that way, and CI then
    runs on the same machine). A route through any other device is never touched."""
    stale = sorted({device for _, device in _routes_overlapping(subnet) if _is_own_bridge(device)})
    for device in stale:
        run(["ip", "link", "del", device])
    return stale


@contextmanager
def _subnet_lock(subnet: ipaddress.IPv4Network, wait_seconds: float) -> Iterator[None]:
    """One test cluster per subnet on this host at a time: two runs of the test (two
    developers, or two worktrees) would otherwise route the same addresses to two
    bridges, and Ansible would reach the other run's nodes. The route check alone
    races; this lock is held from before the check until the bridge is gone."""
    _LOCKS.mkdir(parents=True, exist_ok=True)
    name = str(subnet).replace("/", "_")
    with (_LOCKS / f"clustergen-booted-{name}.lock").open("w") as handle:
        deadline = time.monotonic() + wait_seconds
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"another booted test cluster holds {subnet} on this host"
                    ) from None
                time.sleep(2)
        yield


@contextmanager
def bridge(
    subnet: ipaddress.IPv4Network, gateway: ipaddress.IPv4Address, wait_seconds: float = 900
) -> Iterator[str]:
    """A host bridge owning `subnet`, refused when the host already routes any of it."""
    with _subnet_lock(subnet, wait_seconds), _bridge(subnet, gateway) as name:
        yield name


@contextmanager
def _bridge(subnet: ipaddress.IPv4Network, gateway: ipaddress.IPv4Address) -> Iterator[str]:
    _reclaim_stale_bridges(subnet)
    clashes = [f"{dst} dev {device}" for dst, device in _routes_overlapping(subnet)]
    if clashes:
        raise RuntimeError(f"{subnet} is already in use on this host: {clashes}")
    name = f"{_BRIDGE_PREFIX}{uuid.uuid4().hex[:8]}"
    run(["ip", "link", "add", name, "type", "bridge"])
    try:
        run(["ip", "addr", "add", f"{gateway}/{subnet.prefixlen}", "dev", name])
        run(["ip", "link", "set", name, "up"])
        yield name
    finally:
        subprocess.run(["ip", "link", "del", name], capture_output=True)


def refuse_outside(addresses: Mapping[str, str], subnet: ipaddress.IPv4Network) -> None:
    """A test contacts only addresses in the subnet it created itself."""
    outside = {
        host: address
        for host, address in addresses.items()
        if ipaddress.ip_address(address) not in subnet
    }
    if outside:
        raise RuntimeError(f"inventory addresses outside the test's subnet {subnet}: {outside}")


# --- cgroups ----------------------------------------------------------------------------


def _cgroup_mounts() -> dict[frozenset[str], Path]:
    """Each mounted hierarchy by its controller set (cgroup2: the empty set)."""
    mounts: dict[frozenset[str], Path] = {}
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        before, _, after = line.partition(" - ")
        fstype, _source, options = after.split(" ")[:3]
        mount_point = Path(before.split(" ")[4])
        if fstype == "cgroup2":
            mounts.setdefault(frozenset(), mount_point)
        elif fstype == "cgroup":
            known = {"rw", "ro", "relatime", "noatime", "nosuid", "nodev", "noexec", "xattr"}
            controllers = frozenset(o for o in options.split(",") if o not in known)
            mounts[controllers] = mount_point
    return mounts


def make_node_cgroups(label: str) -> list[Path]:
    """One new cgroup per hierarchy, beneath this process's own."""
    mounts = _cgroup_mounts()
    made = []
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        key = frozenset(c for c in controllers.split(",") if c)
        mount = mounts.get(key)
        if mount is None:
            continue
        parent = mount / path.lstrip("/")
        cgroup = parent / label
        cgroup.mkdir(exist_ok=True)
        if "cpuset" in key:
            for name in ("cpuset.cpus", "cpuset.mems"):
                (cgroup / name).write_text((parent / name).read_text())
        made.append(cgroup)
    return made


def remove_cgroups(cgroups: Sequence[Path]) -> None:
    """Deepest first: the node's systemd made its own cgroups inside each."""
    for top in cgroups:
        if not top.is_dir():
            continue
        for directory in sorted((p for p in top.rglob("*") if p.is_dir()), reverse=True):
            directory.rmdir()
        top.rmdir()


# --- nodes ------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodePlan:
    name: str
    address: str
    gpus: int = 0


# systemd-nspawn's exit status when the node's systemd asked for a reboot.
_REBOOT_EXIT = 133
# How long a rebooted node stays off before the watcher boots it again. A node tree
# shuts down and is booted again within a second or two, where a machine takes
# minutes; slurmctld takes a node as rebooted only when the boot time slurmd reports
# (now - sysinfo's uptime, in whole seconds rounded up) is later than the reboot
# request, and the booted test saw it 2 s earlier, the node then left REBOOT_ISSUED
# until ResumeTimeout. 5 s clears the 0-1 s the node clock starts at and the rounding.
_REBOOT_PAUSE_S = 5


def _own_boot_clock() -> list[str]:
    """A node's uptime counts from its own boot, as a machine's does: unshare(1) gives
    systemd-nspawn a time namespace whose CLOCK_BOOTTIME starts near 0 (time_namespaces(7);
    no fork: unshare joins it before it executes nspawn). Without it the node reports
    the host's uptime, and slurmctld never takes a node as rebooted after `scontrol
    reboot` (it compares the boot time slurmd reports with the request's:
    src/slurmctld/node_mgr.c, boot_time < boot_req_time) and marks it DOWN after
    ResumeTimeout."""
    host_uptime = int(float(Path("/proc/uptime").read_text().split()[0]))
    # The clock starts between 0 and 1 s (an offset may not make it negative).
    return ["unshare", "--time", "--boottime", str(-host_uptime)]


@dataclass
class BootedNode:
    """One node: its tree, and the systemd-nspawn that runs it. A reboot inside the node
    (the driver roll-out's) ends that process with status 133; the node's watcher then
    boots the same tree again, as a machine would come back."""

    name: str
    address: str
    root: Path
    argv: list[str]
    cgroups: list[Path]
    log: Path
    gpus: int = 0
    process: subprocess.Popen[bytes] | None = None
    boots: int = 0
    stopping: bool = False
    _watcher: threading.Thread | None = None

    def launch(self) -> None:
        procs = [str(cgroup / "cgroup.procs") for cgroup in self.cgroups]

        def enter_cgroups() -> None:
            for path in procs:
                with open(path, "w") as handle:
                    handle.write(str(os.getpid()))

        env = {**os.environ, "SYSTEMD_NSPAWN_UNIFIED_HIERARCHY": "0"}
        with self.log.open("ab") as console:
            self.process = subprocess.Popen(
                [*_own_boot_clock(), *self.argv],
                stdin=subprocess.DEVNULL,
                stdout=console,
                stderr=subprocess.STDOUT,
                env=env,
                preexec_fn=enter_cgroups,
            )
        self.boots += 1
        if self._watcher is None:
            self._watcher = threading.Thread(target=self._watch, name=self.name, daemon=True)
            self._watcher.start()

    def _watch(self) -> None:
        while not self.stopping:
            process = self.process
            assert process is not None
            status = process.wait()
            if self.stopping or status != _REBOOT_EXIT:
                return
            _remove_lock(self.root)
            time.sleep(_REBOOT_PAUSE_S)
            self.launch()

    @property
    def nspawn(self) -> subprocess.Popen[bytes]:
        assert self.process is not None
        return self.process

    def init_pid(self) -> int:
        """The node's PID 1 (systemd), the only child of systemd-nspawn."""
        pid = self.nspawn.pid
        children = Path(f"/proc/{pid}/task/{pid}/children")
        pids = children.read_text().split() if children.exists() else []
        if not pids:
            raise RuntimeError(f"{self.name}: systemd-nspawn has no child yet")
        return int(pids[0])

    def sh(self, command: str, *, check: bool = True) -> subprocess.CompletedProcess[str]:
        """A root shell command inside the node, not through SSH (for checks only:
        daemons started this way stay in the host's cgroups)."""
        argv = ["nsenter", "-t", str(self.init_pid()), "-a", "/bin/sh", "-c", command]
        if check:
            return run(argv)
        return subprocess.run(argv, capture_output=True, text=True)


# A GPU node's stand-in for its fabric NIC (the test spec's interfaces.fabric): one end
# of a veth pair that the node's systemd-networkd makes at boot (systemd.netdev(5),
# Kind=veth with [Peer]), with the peer brought up so the link has carrier. This
# machine's kernel has no dummy links; veth it has, as nspawn's --network-bridge uses.
FABRIC_STAND_IN = "fab0"
_FABRIC_NETDEV = f"[NetDev]\nName={FABRIC_STAND_IN}\nKind=veth\n\n[Peer]\nName={FABRIC_STAND_IN}p\n"
_FABRIC_PEER = f"[Match]\nName={FABRIC_STAND_IN}p\n\n[Network]\nLinkLocalAddressing=no\n"


def _write_fabric_stand_in(root: Path) -> None:
    network = root / "etc/systemd/network"
    (network / f"05-{FABRIC_STAND_IN}.netdev").write_text(_FABRIC_NETDEV, encoding="utf-8")
    (network / f"05-{FABRIC_STAND_IN}p.network").write_text(_FABRIC_PEER, encoding="utf-8")


def _write_node_identity(root: Path, plan: NodePlan, prefix: int, public_key: str) -> None:
    (root / "etc/hostname").write_text(f"{plan.name}\n", encoding="utf-8")
    # debootstrap writes none; an installed node has at least the loopback names.
    (root / "etc/hosts").write_text(_LOOPBACK_HOSTS, encoding="utf-8")
    (root / "etc/machine-id").write_text(f"{uuid.uuid4().hex}\n", encoding="utf-8")
    run(["ssh-keygen", "-q", "-A", "-f", str(root)])
    # Sorts before the shipped 80-container-host0.network, which would win otherwise.
    (root / "etc/systemd/network/10-host0.network").write_text(
        f"[Match]\nName=host0\n\n[Network]\nAddress={plan.address}/{prefix}\n",
        encoding="utf-8",
    )
    ssh_dir = root / "home" / ADMIN / ".ssh"
    ssh_dir.mkdir(mode=0o700, exist_ok=True)
    (ssh_dir / "authorized_keys").write_text(public_key, encoding="utf-8")
    owner = (root / "home" / ADMIN).stat()
    for path in (ssh_dir, ssh_dir / "authorized_keys"):
        os.chown(path, owner.st_uid, owner.st_gid)
    (ssh_dir / "authorized_keys").chmod(0o600)


def _fake_gpus(directory: Path, count: int) -> list[str]:
    """nspawn --bind options for /dev/nvidia0..count-1 and /dev/nvidiactl."""
    directory.mkdir(parents=True)
    devices = [(f"nvidia{n}", n) for n in range(count)] + [("nvidiactl", NVIDIACTL_MINOR)]
    binds = []
    for name, minor in devices:
        path = directory / name
        os.mknod(path, 0o666 | 0o020000, os.makedev(NVIDIA_MAJOR, minor))
        binds.append(f"--bind={path}:/dev/{name}")
    return binds


def _systemd_major(root: Path) -> int:
    """The major version of the systemd installed in a tree."""
    admin = f"--admindir={root}/var/lib/dpkg"
    version = run(["dpkg-query", admin, "-W", "-f", "${Version}", "systemd"]).stdout
    return int(version.split(".", 1)[0].split("~", 1)[0])


def _boot(
    plan: NodePlan,
    base: Path,
    repo: Path,
    bridge_name: str,
    prefix: int,
    key: str,
    work: Path,
    binds: Sequence[tuple[Path, str]] = (),
) -> BootedNode:
    root = work / "nodes" / plan.name
    run(["cp", "-a", str(base), str(root)])
    _write_node_identity(root, plan, prefix, key)
    if plan.gpus:
        _write_fabric_stand_in(root)
    (root / REPO_IN_NODE.lstrip("/")).mkdir(parents=True, exist_ok=True)
    argv = [
        "systemd-nspawn",
        "-q",
        "--register=no",
        "--keep-unit",
        "-D",
        str(root),
        # The machine name names the host's end of the node's veth (vb-NAME) and its
        # folders under /run/systemd/nspawn: unique to this cluster's bridge, so that two
        # clusters with the same node names (Debian 12's and 13's) boot side by side.
        "-M",
        f"{plan.name}-{bridge_name[-4:]}",
        f"--hostname={plan.name}",
        f"--network-bridge={bridge_name}",
        f"--bind-ro={repo}:{REPO_IN_NODE}",
    ]
    for source, target in binds:
        (root / target.lstrip("/")).mkdir(parents=True, exist_ok=True)
        argv.append(f"--bind-ro={source}:{target}")
    if plan.gpus:
        argv += _fake_gpus(work / "dev" / plan.name, plan.gpus)
    argv.append("-b")
    if _systemd_major(root) >= LEGACY_CGROUP_FROM_SYSTEMD:
        argv += ["--", *LEGACY_CGROUP_INIT_ARGS]
    cgroups = make_node_cgroups(f"clustergen-{plan.name}-{uuid.uuid4().hex[:6]}")
    node = BootedNode(
        plan.name, plan.address, root, argv, cgroups, work / f"{plan.name}.console", plan.gpus
    )
    node.launch()
    return node


def _wait_running(node: BootedNode, deadline: float) -> None:
    """Until systemd says running (or degraded), sshd answers, and cgroups are writable."""
    state = ""
    while time.monotonic() < deadline:
        if node.nspawn.poll() is not None and node.nspawn.returncode != _REBOOT_EXIT:
            raise RuntimeError(
                f"{node.name}: systemd-nspawn exited {node.nspawn.returncode}:\n"
                + node.log.read_text(errors="replace")[-3000:]
            )
        try:
            # `offline` until PID 1 is systemd; keep waiting.
            state = node.sh("systemctl is-system-running", check=False).stdout.strip()
        except RuntimeError:
            state = "no init yet"
        if state in ("running", "degraded"):
            break
        time.sleep(0.5)
    else:
        raise RuntimeError(f"{node.name}: not running after boot (state {state!r})")
    mounts = node.sh("findmnt -rn -t cgroup -o TARGET,OPTIONS").stdout.splitlines()
    read_only = [
        line
        for line in mounts
        if Path(line.split()[0]).name in V1_CONTROLLERS_RW and line.split()[1].startswith("ro")
    ]
    if read_only:
        raise RuntimeError(f"{node.name}: cgroup controllers still read-only: {read_only}")
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            probe.settimeout(1)
            if probe.connect_ex((node.address, 22)) == 0:
                return
        time.sleep(0.3)
    raise RuntimeError(f"{node.name}: sshd does not answer on {node.address}:22")


def _remove_lock(root: Path) -> None:
    """The lock a killed (or rebooted) nspawn leaves for its tree."""
    info = root.stat()
    (_NSPAWN_LOCKS / f"inode-{info.st_dev}:{info.st_ino}").unlink(missing_ok=True)


def _stop(node: BootedNode) -> None:
    """SIGTERM, and again (the first is ignored before the node's systemd is up); SIGKILL
    as the last resort, then the lock nspawn leaves after a kill, then the cgroups."""
    node.stopping = True
    # Twice: a reboot may have started a new nspawn while the first one was stopped.
    for _ in range(2):
        for sig, wait in ((signal.SIGTERM, 15), (signal.SIGTERM, 15), (signal.SIGKILL, 10)):
            if node.nspawn.poll() is not None:
                break
            node.nspawn.send_signal(sig)
            try:
                node.nspawn.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                continue
        if node._watcher is not None:
            node._watcher.join(timeout=5)
    _remove_lock(node.root)
    deadline = time.monotonic() + 10
    while True:
        try:
            remove_cgroups(node.cgroups)
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@dataclass
class BootedCluster:
    nodes: dict[str, BootedNode]
    subnet: ipaddress.IPv4Network
    private_key: Path
    boot_seconds: float
    timings: dict[str, float] = field(default_factory=dict)

    def connection_inventory(self, path: Path) -> Path:
        """How a site's admin reaches the nodes: SSH as the admin user, become for root.
        Nothing else of the rendered inventory is overridden."""
        settings = {
            "ansible_user": ADMIN,
            "ansible_ssh_private_key_file": str(self.private_key),
            "ansible_ssh_common_args": (
                "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
            ),
            "ansible_python_interpreter": "/usr/bin/python3",
        }
        path.write_text(yaml.safe_dump({"all": {"vars": settings}}, sort_keys=True))
        return path


@contextmanager
def booted_cluster(
    plans: Sequence[NodePlan],
    subnet: ipaddress.IPv4Network,
    gateway: ipaddress.IPv4Address,
    base: Path,
    repo: Path,
    work: Path,
    boot_timeout: float = 120,
    binds: Sequence[tuple[Path, str]] = (),
) -> Iterator[BootedCluster]:
    """Boot every planned node on a new bridge, each with binds (host folder, where the
    node sees it), read-only; stop them all and remove their trees, cgroups and the
    bridge however the block ends."""
    refuse_outside({plan.name: plan.address for plan in plans}, subnet)
    (work / "nodes").mkdir(parents=True)
    private_key = work / "admin_ed25519"
    run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(private_key)])
    public_key = (work / "admin_ed25519.pub").read_text()
    started = time.monotonic()
    with ExitStack() as cleanup:
        bridge_name = cleanup.enter_context(bridge(subnet, gateway))
        nodes: dict[str, BootedNode] = {}

        def stop_all() -> None:
            for node in nodes.values():
                _stop(node)
            shutil.rmtree(work / "nodes", ignore_errors=True)

        cleanup.callback(stop_all)
        for plan in plans:
            nodes[plan.name] = _boot(
                plan, base, repo, bridge_name, subnet.prefixlen, public_key, work, binds
            )
        deadline = time.monotonic() + boot_timeout
        for node in nodes.values():
            _wait_running(node, deadline)
        yield BootedCluster(nodes, subnet, private_key, time.monotonic() - started)
