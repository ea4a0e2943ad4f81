"""The test bed: a private Slurm controller (with slurmdbd and MariaDB when the
rendered files use accounting) and `slurmd -G` per node, in namespaces."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from clustergen.catalog.versions import VersionTuple, parse_version
from clustergen.commands.twin.accounting import DEFAULT_DB_USER, start_mariadb, write_slurmdbd_conf
from clustergen.commands.twin.conf import (
    SITE_ONLY_ACCOUNTING_SLURM_CONF,
    SITE_ONLY_SLURM_CONF,
    ConfRewrite,
    conf_values,
    hosts_file_text,
    known_keys,
    rewrite_conf,
)
from clustergen.commands.twin.layout import TwinPaths, adapt_gres_conf
from clustergen.commands.twin.process import (
    CLIENT_TIMEOUT_S,
    START_TIMEOUT_S,
    Daemon,
    DaemonError,
    DaemonOwner,
    clean_env,
    die_with_parent,
    free_port,
    installed_slurm_version,
    port_open,
    read_file,
    run_checked,
    wait_until,
)
from clustergen.resolve.imex_mode import SWITCH_IMEX, SWITCH_IMEX_FROM
from clustergen.resolve.slurm_topology import BLOCK_FROM

from support.ci import require
from support.realslurm.parse import (
    SINFO_FORMAT,
    ControllerReport,
    SlurmdGresReport,
    nullable,
    parse_nodes,
    parse_partitions,
    parse_sinfo,
    parse_slurmd_gres,
    parse_switches,
)

REQUIRED_TOOLS = (
    "slurmctld",
    "slurmd",
    "slurmdbd",
    "scontrol",
    "sinfo",
    "mariadbd",
    "mariadb-install-db",
    "unshare",
    "nsenter",
    "mount",
    "mknod",
    "hostname",
)


# Run by `unshare --mount`: private /etc/hosts, then the daemon itself (exec,
# so the Popen pid is the daemon's and nsenter can join its namespace).
HOSTS_NAMESPACE_SCRIPT = 'mount --bind "$1" /etc/hosts && shift && exec "$@"'

# Run by `unshare --mount --uts`: the node's hostname, the private hosts file,
# and a private /dev holding only what slurmd -G touches plus the GPU nodes
# (char major 195 is the NVIDIA driver's).
SLURMD_GRES_SCRIPT = """\
set -eu
hosts=$1 node=$2 gpus=$3 conf=$4
hostname "$node"
mount --bind "$hosts" /etc/hosts
mount -t tmpfs -o mode=0755 realslurm-dev /dev
mknod -m 0666 /dev/null c 1 3
mknod -m 0666 /dev/zero c 1 5
mknod -m 0666 /dev/urandom c 1 9
i=0
while [ "$i" -lt "$gpus" ]; do
  mknod -m 0666 "/dev/nvidia$i" c 195 "$i"
  i=$((i + 1))
done
echo "{marker}" >&2
exec slurmd -G -f "$conf"
"""
NAMESPACE_READY_MARKER = "realslurm: namespace ready"

AccountingMode = Literal["slurmdbd", "remove"]


@dataclass(frozen=True)
class Ports:
    slurmctld: int
    slurmd: int
    slurmdbd: int
    mariadb: int

    @classmethod
    def pick(cls) -> Ports:
        return cls(free_port(), free_port(), free_port(), free_port())


def find_slurm_dir(rendered: Path) -> Path:
    """Accept the render output root (OUT/slurm/slurm.conf) or the slurm/ directory itself."""
    for candidate in (rendered / "slurm", rendered):
        if (candidate / "slurm.conf").is_file():
            return candidate
    raise DaemonError(f"no slurm.conf in {rendered} or {rendered / 'slurm'}")


# Plugins that came with a later release than some a rendered file may meet: slurm.conf
# key (lower case) and plugin -> the first release that has it.
NEWER_PLUGINS: dict[tuple[str, str], VersionTuple] = {
    ("switchtype", SWITCH_IMEX): SWITCH_IMEX_FROM,
    ("topologyplugin", "topology/block"): BLOCK_FROM,
}


class SlurmTestbed(DaemonOwner):
    """Rendered Slurm files installed in a private work dir, ready for the real daemons.

    rendered: render output root (or its slurm/ directory).
    work_dir: empty scratch directory (tmp_path).
    node_names: extra names to resolve; every NodeName and SlurmctldHost name
        of the rendered slurm.conf is added automatically.
    accounting: "slurmdbd" runs a real slurmdbd + MariaDB when slurm.conf uses
        accounting_storage/slurmdbd; "remove" drops the AccountingStorage*
        keys instead and lists them in `skipped`.
    client_timeout_s: how long one client command, or slurmctld's start, may take
        (a large cluster starts and lists slowly: slurmctld registers every node with
        slurmdbd before it answers a ping).
    """

    def __init__(
        self,
        rendered: Path,
        work_dir: Path,
        node_names: Sequence[str] = (),
        *,
        accounting: AccountingMode = "slurmdbd",
        client_timeout_s: float = CLIENT_TIMEOUT_S,
        hwloc: str | None = None,
    ) -> None:
        self.client_timeout_s = client_timeout_s
        # hwloc's synthetic topology of the node (HWLOC_SYNTHETIC, hwloc(7)): the daemons
        # see its CPUs instead of this machine's, and gres.conf keeps its Cores= whole.
        self.hwloc = hwloc
        self.source = find_slurm_dir(rendered)
        self.paths = TwinPaths.under(work_dir, work_dir / "spool")
        super().__init__(self.paths.log)
        self.ports = Ports.pick()
        self.slurm_version = installed_slurm_version()
        self._slurmctld: Daemon | None = None
        self._slurmdbd: Daemon | None = None
        rendered_conf = (self.source / "slurm.conf").read_text()
        self.accounting = self._accounting_mode(rendered_conf, accounting)
        self._copy_rendered_files()
        rewrite = self._rewrite_slurm_conf(rendered_conf)
        self.paths.slurm_conf.write_text(rewrite.text)
        self.skipped = rewrite.skipped
        self.overridden = rewrite.overridden
        self.db_user = DEFAULT_DB_USER
        if self.accounting == "slurmdbd":
            self._write_slurmdbd_conf()
        names = [*self._rendered_host_names(rendered_conf), *node_names]
        hosts_text, self.addresses = hosts_file_text(names, socket.gethostname())
        self.hosts_file = self.paths.etc / "hosts"
        self.hosts_file.write_text(hosts_text)

    def stop(self) -> None:
        super().stop()
        # The MariaDB data dir is ~100 MB of InnoDB files nobody reads afterwards.
        shutil.rmtree(self.paths.db / "data", ignore_errors=True)

    # -- configuration ---------------------------------------------------------

    @staticmethod
    def _accounting_mode(
        rendered_conf: str,
        requested: AccountingMode,
    ) -> Literal["slurmdbd", "removed", "none"]:
        storage = [value.lower() for value in conf_values(rendered_conf, "AccountingStorageType")]
        if "accounting_storage/slurmdbd" not in storage:
            return "none"
        return "slurmdbd" if requested == "slurmdbd" else "removed"

    def _copy_rendered_files(self) -> None:
        self.gres_overridden: list[str] = []
        for path in self.source.iterdir():
            if path.is_file() and path.name == "gres.conf":
                text = path.read_text()
                if self.hwloc is None:
                    text, self.gres_overridden = adapt_gres_conf(text, os.cpu_count() or 1)
                (self.paths.etc / path.name).write_text(text)
            elif path.is_file() and path.name != "slurm.conf":
                shutil.copy2(path, self.paths.etc / path.name)

    def _rewrite_slurm_conf(self, rendered_conf: str) -> ConfRewrite:
        paths, ports = self.paths, self.ports
        # Site-specific keys: every rendered line with such a key is removed (so
        # several SlurmctldHost lines become one) and the test value appended.
        replace = {
            # slurmctld takes "localhost" as its own name on any machine.
            "SlurmctldHost": "localhost(127.0.0.1)",
            "SlurmctldPort": str(ports.slurmctld),
            "SlurmdPort": str(ports.slurmd),
            "AuthType": "auth/none",
            "CredType": "cred/none",
            "SlurmUser": "root",
            "SlurmdUser": "root",
            "StateSaveLocation": str(paths.state),
            "SlurmdSpoolDir": str(paths.spool),
            "SlurmctldPidFile": str(paths.run / "slurmctld.pid"),
            "SlurmdPidFile": str(paths.run / "slurmd.pid"),
            "SlurmctldLogFile": str(paths.log / "slurmctld.log"),
            "SlurmdLogFile": str(paths.log / "slurmd.log"),
        }
        drop = set(SITE_ONLY_SLURM_CONF)
        remove: dict[str, str] = {}
        if self.accounting == "slurmdbd":
            replace["AccountingStorageHost"] = "localhost"
            replace["AccountingStoragePort"] = str(ports.slurmdbd)
            drop |= SITE_ONLY_ACCOUNTING_SLURM_CONF
        elif self.accounting == "removed":
            remove["accountingstorage*"] = "accounting removed for this test (no slurmdbd)"
        remove |= self._newer_plugins(rendered_conf)
        known = known_keys(self.slurm_version)
        return rewrite_conf(
            rendered_conf,
            replace=replace,
            drop=drop,
            known_keys=known,
            remove=remove,
            unknown_reason=f"not a Slurm {self.slurm_version} slurm.conf key",
        )

    def _newer_plugins(self, rendered_conf: str) -> dict[str, str]:
        """The lines naming a plugin the installed Slurm predates (a spec pinned to a
        newer release, on Debian 12's 22.05), left out and reported as an unknown key is."""
        installed = parse_version(self.slurm_version)
        return {
            key: f"{plugin} is first in Slurm {'.'.join(f'{n:02d}' for n in first[:2])}"
            for (key, plugin), first in NEWER_PLUGINS.items()
            if installed < first
            and plugin in (value.lower() for value in conf_values(rendered_conf, key))
        }

    def _write_slurmdbd_conf(self) -> None:
        rendered = self.source / "slurmdbd.conf"
        if not rendered.is_file():
            raise DaemonError(
                f"slurm.conf uses accounting_storage/slurmdbd but {rendered} is missing"
            )
        rewrite = write_slurmdbd_conf(
            rendered.read_text(),
            self.paths,
            dbd_port=self.ports.slurmdbd,
            mariadb_port=self.ports.mariadb,
        )
        self.db_user = rewrite.db_user
        self.overridden = [
            *self.overridden,
            *(f"slurmdbd.conf: {line}" for line in rewrite.overridden),
        ]

    def _rendered_host_names(self, rendered_conf: str) -> list[str]:
        expressions = [
            value for value in conf_values(rendered_conf, "NodeName") if value.upper() != "DEFAULT"
        ]
        expressions += [
            value.split("(", 1)[0] for value in conf_values(rendered_conf, "SlurmctldHost")
        ]
        return [name for expr in expressions for name in self.expand_hostlist(expr)]

    def expand_hostlist(self, expression: str) -> tuple[str, ...]:
        """Expand a Slurm hostlist with the real Slurm (`scontrol show hostnames`)."""
        if nullable(expression) == "":
            return ()
        output = run_checked(["scontrol", "show", "hostnames", expression], env=self.env)
        return tuple(output.split())

    @property
    def env(self) -> dict[str, str]:
        env = clean_env(self.paths.slurm_conf)
        if self.hwloc is not None:
            env.update(HWLOC_SYNTHETIC=self.hwloc, HWLOC_THISSYSTEM="1")
        return env

    # -- daemons ---------------------------------------------------------------

    def _start_mariadb(self) -> Daemon:
        return start_mariadb(
            self,
            db_dir=self.paths.db,
            run_dir=self.paths.run,
            port=self.ports.mariadb,
            user=self.db_user,
        )

    def _start_slurmdbd(self, mariadb: Daemon) -> None:
        self._slurmdbd = self._start(
            "slurmdbd", ["slurmdbd", "-D"], log=self.paths.log / "slurmdbd.log"
        )
        wait_until(
            lambda: port_open(self.ports.slurmdbd),
            [mariadb, self._slurmdbd],
            f"slurmdbd to listen on port {self.ports.slurmdbd}",
        )

    def _start_slurmctld(self) -> Daemon:
        daemon = self._start(
            "slurmctld",
            [
                "unshare",
                "--mount",
                "--",
                "sh",
                "-c",
                HOSTS_NAMESPACE_SCRIPT,
                "sh",
                str(self.hosts_file),
                "slurmctld",
                "-D",
                "-c",
                "-f",
                str(self.paths.slurm_conf),
            ],
            log=self.paths.log / "slurmctld.log",
        )
        wait_until(
            self._controller_up,
            self.daemons,
            "slurmctld to answer scontrol ping",
            timeout=max(START_TIMEOUT_S, self.client_timeout_s),
        )
        return daemon

    def _controller_up(self) -> bool:
        result = subprocess.run(
            ["scontrol", "ping"],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=CLIENT_TIMEOUT_S,
            check=False,
        )
        return " is UP" in result.stdout

    def client(self, *argv: str) -> str:
        """Run a Slurm client inside slurmctld's mount namespace (same /etc/hosts)."""
        if self._slurmctld is None:
            raise DaemonError("slurmctld is not running: call start_controller() first")
        self._slurmctld.raise_if_exited()
        return run_checked(
            ["nsenter", f"--target={self._slurmctld.pid}", "--mount", "--", *argv],
            env=self.env,
            timeout=self.client_timeout_s,
        )

    def start_controller(self) -> ControllerReport:
        """Start slurmdbd (if used) and slurmctld, then report what Slurm understood.

        Raises DaemonError with the daemons' logs when one of them exits
        (and stops the others). On success the daemons keep running until
        stop(), so a test may run more clients.
        """
        if self._slurmctld is not None:
            raise DaemonError("start_controller() was already called")
        try:
            if self.accounting == "slurmdbd":
                self._start_slurmdbd(self._start_mariadb())
            self._slurmctld = self._start_slurmctld()
            return self._collect()
        except BaseException:
            self.stop()  # even a caller that forgot the context manager leaves nothing running
            raise

    def _collect(self) -> ControllerReport:
        commands = {
            "scontrol show nodes -o": ("scontrol", "show", "nodes", "-o"),
            "scontrol show partition -o": ("scontrol", "show", "partition", "-o"),
            f'sinfo -h -N -o "{SINFO_FORMAT}"': ("sinfo", "-h", "-N", "-o", SINFO_FORMAT),
            "scontrol show topology": ("scontrol", "show", "topology"),
        }
        raw = {name: self.client(*argv) for name, argv in commands.items()}
        return ControllerReport(
            nodes=parse_nodes(raw["scontrol show nodes -o"]),
            partitions=parse_partitions(raw["scontrol show partition -o"], self.expand_hostlist),
            sinfo=parse_sinfo(raw[f'sinfo -h -N -o "{SINFO_FORMAT}"']),
            switches=parse_switches(raw["scontrol show topology"], self.expand_hostlist),
            skipped=list(self.skipped),
            overridden=list(self.overridden),
            accounting=self.accounting,
            slurm_version=self.slurm_version,
            slurmctld_log=read_file(self.paths.log / "slurmctld.log"),
            slurmdbd_log=read_file(self.paths.log / "slurmdbd.log"),
            raw=raw,
        )

    # -- slurmd -G ---------------------------------------------------------------

    def slurmd_gres(self, node: str, gpu_count: int) -> SlurmdGresReport:
        """Run `slurmd -G` as `node` with gpu_count fake /dev/nvidiaN devices.

        The caller asserts `report.ok` (exit 0 and no error/fatal/WARNING line)
        and the parsed `report.gres`. Note that slurmd -G stays silent for a
        node that gres.conf does not mention, and that it also parses
        cgroup.conf (an unknown key there is fatal).
        """
        script = SLURMD_GRES_SCRIPT.format(marker=NAMESPACE_READY_MARKER)
        result = subprocess.run(
            [
                "unshare",
                "--mount",
                "--uts",
                "--",
                "sh",
                "-c",
                script,
                "sh",
                str(self.hosts_file),
                node,
                str(gpu_count),
                str(self.paths.slurm_conf),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=self.env,
            timeout=START_TIMEOUT_S * 2,
            check=False,
            preexec_fn=die_with_parent,
        )
        before, marker, output = result.stdout.partition(NAMESPACE_READY_MARKER + "\n")
        if not marker:
            raise DaemonError(
                f"could not prepare the namespace for slurmd -G on {node} "
                f"(exit {result.returncode}):\n{result.stdout}"
            )
        return parse_slurmd_gres(node, result.returncode, before + output)


# --------------------------------------------------------------------------
# One-call helpers
# --------------------------------------------------------------------------


def run_slurmctld(
    rendered: Path,
    work_dir: Path,
    node_names: Sequence[str] = (),
    *,
    accounting: AccountingMode = "slurmdbd",
) -> ControllerReport:
    """Start the controller (and slurmdbd) on the rendered files, report, stop everything."""
    with SlurmTestbed(rendered, work_dir, node_names, accounting=accounting) as bed:
        return bed.start_controller()


def run_slurmd_gres(
    rendered: Path,
    work_dir: Path,
    node: str,
    gpu_count: int,
    node_names: Sequence[str] = (),
) -> SlurmdGresReport:
    """`slurmd -G` for one node of the rendered files (no controller needed)."""
    with SlurmTestbed(rendered, work_dir, node_names) as bed:
        return bed.slurmd_gres(node, gpu_count)


def require_real_slurm() -> None:
    """Skip the calling test without real Slurm; in CI (CI=true) fail instead, never skip."""
    require(*REQUIRED_TOOLS, root=True)
