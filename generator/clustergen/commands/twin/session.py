"""A running Slurm twin: slurmctld (and slurmdbd with a private MariaDB when the
rendered files use accounting) and one slurmd per chosen compute node, each in its
own network namespace, with fake /dev/nvidiaN devices per node's GPU count.

Every daemon is a child of this process with a parent-death signal; stop() stops
them, kills whatever still runs in the namespaces, deletes the namespaces and
their /etc/netns entries, and removes the work directory it created.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import hostlist

from clustergen.base.artifacts import Artifact
from clustergen.commands.twin.accounting import start_mariadb, write_slurmdbd_conf
from clustergen.commands.twin.conf import conf_values, known_keys
from clustergen.commands.twin.layout import (
    TWIN_FILES,
    AdaptedConf,
    NodeChoice,
    TwinPaths,
    adapt_cgroup_conf,
    adapt_gres_conf,
    adapt_slurm_conf,
    choose_nodes,
    controller_name,
    uses_slurmdbd,
)
from clustergen.commands.twin.netns import (
    LOCKS,
    PREFIX,
    WORK_DIR_PREFIX,
    Namespaces,
    addresses_for,
    port_listening,
    remove_leftovers,
)
from clustergen.commands.twin.process import (
    CLIENT_TIMEOUT_S,
    Daemon,
    DaemonError,
    DaemonOwner,
    clean_env,
    installed_slurm_version,
    wait_until,
)
from clustergen.outputs.slurm.derive import QOS_SCRIPT_NAME
from clustergen.resolve import ResolvedCluster

NODES_READY_TIMEOUT_S = 60.0
PROBE_TIMEOUT_S = 5.0
SPOOL_BASE = Path("/run")
MARIADB_PORT = 3306  # inside the controller's namespace, so never the machine's own

# Slurm's clients, run inside the controller's namespace by the wrappers in bin/.
CLIENTS = (
    "sinfo",
    "squeue",
    "srun",
    "sbatch",
    "salloc",
    "scancel",
    "scontrol",
    "sacct",
    "sacctmgr",
    "sprio",
    "sshare",
    "sstat",
)

# The UTS namespace's host name, written where the kernel keeps it: hostname(1) refuses
# a name with '_' (AWS ParallelCluster's queue nodes), which Slurm and the kernel take;
# the kernel keeps at most 64 bytes of it (__NEW_UTS_LEN).
SET_HOSTNAME = "printf '%.64s' \"$1\" > /proc/sys/kernel/hostname"
# Run by `unshare --uts --mount` inside a node's namespace: the node's hostname and a
# private /dev holding what jobs touch plus the fake GPUs (char major 195 is the
# NVIDIA driver's), then the daemon itself (exec: the pid stays the daemon's).
NODE_SCRIPT = f"""\
set -eu
{SET_HOSTNAME}
gpus=$2
shift 2
mount -t tmpfs -o mode=0755 clustergen-twin-dev /dev
mknod -m 0666 /dev/null c 1 3
mknod -m 0666 /dev/zero c 1 5
mknod -m 0666 /dev/random c 1 8
mknod -m 0666 /dev/urandom c 1 9
mknod -m 0666 /dev/tty c 5 0
mkdir /dev/pts /dev/shm
ln -s /proc/self/fd /dev/fd
i=0
while [ "$i" -lt "$gpus" ]; do
  mknod -m 0666 "/dev/nvidia$i" c 195 "$i"
  i=$((i + 1))
done
if [ "$gpus" -gt 0 ]; then mknod -m 0666 /dev/nvidiactl c 195 255; fi
exec "$@"
"""
HOSTNAME_SCRIPT = f'{SET_HOSTNAME} && shift && exec "$@"'


class Twin(DaemonOwner):
    """The rendered Slurm files of `cluster` on local daemons; a context manager.

    work_dir: where configuration, state and logs go; None makes a temporary
    directory that stop() removes.
    """

    def __init__(
        self,
        cluster: ResolvedCluster,
        files: Mapping[str, Artifact],
        *,
        nodes_per_group: int | None = None,
        work_dir: Path | None = None,
    ) -> None:
        self.cluster = cluster
        self._own_dir = work_dir is None
        root = Path(tempfile.mkdtemp(prefix=WORK_DIR_PREFIX)) if work_dir is None else work_dir
        self.network = Namespaces(f"{PREFIX}{secrets.token_hex(4)}")
        # Claimed before anything of the twin exists, so no other twin's sweep takes it.
        try:
            self.network.claim(root if self._own_dir else None)
        except OSError as exc:
            if self._own_dir:
                shutil.rmtree(root, ignore_errors=True)
            raise DaemonError(f"cannot take the twin's lock in {LOCKS}: {exc}") from None
        self.paths = TwinPaths.under(root, SPOOL_BASE / self.network.prefix)
        super().__init__(self.paths.log)
        self.namespaces: dict[str, str] = {}
        self.leftovers: list[str] = []  # what start() removed of twins that were killed
        try:
            self._prepare(cluster, files, nodes_per_group)
        except BaseException:
            self._remove_directories()
            self.network.release()
            raise

    def _prepare(
        self, cluster: ResolvedCluster, files: Mapping[str, Artifact], nodes_per_group: int | None
    ) -> None:
        self.slurm_version = installed_slurm_version()
        rendered = {
            path.removeprefix("slurm/"): artifact
            for path, artifact in files.items()
            if path.startswith("slurm/") and "/" not in path.removeprefix("slurm/")
        }
        if "slurm.conf" not in rendered:
            raise DaemonError("the spec renders no slurm/slurm.conf")
        self.rendered_conf = rendered["slurm.conf"].text
        self.controller = controller_name(self.rendered_conf)
        self.nodes: NodeChoice = choose_nodes(cluster, nodes_per_group)
        names = [self.controller, *(h.name for h in cluster.compute if h.name != self.controller)]
        self.addresses = addresses_for(names)
        self.accounting = uses_slurmdbd(self.rendered_conf)
        dbd_ports = conf_values(self.rendered_conf, "AccountingStoragePort")
        self.dbd_port = int(dbd_ports[-1]) if dbd_ports else 6819
        self.conf: AdaptedConf = adapt_slurm_conf(
            self.rendered_conf,
            controller=self.controller,
            controller_address=self.addresses[self.controller],
            paths=self.paths,
            slurm_version=self.slurm_version,
            known_keys=known_keys(self.slurm_version),
            dbd_port=self.dbd_port,
        )
        self.slurmdbd_overridden: list[str] = []
        self.gres_overridden: list[str] = []
        self._write_files(rendered)

    # -- files -------------------------------------------------------------------

    def _write_files(self, rendered: Mapping[str, Artifact]) -> None:
        for name, artifact in rendered.items():
            if name not in TWIN_FILES and name != QOS_SCRIPT_NAME:
                # A script or a file for the real nodes: the twin runs none. The QOS
                # script is clustergen's own sacctmgr calls, from QOS names and numbers
                # validation restricts (checks/slurm_partitions.py), run in the twin's slurmdbd.
                continue
            target = self.paths.etc / name
            if name == "slurm.conf":
                target.write_text(self.conf.text)
            elif name == "cgroup.conf":
                target.write_text(adapt_cgroup_conf(artifact.text))
            elif name == "gres.conf":
                text, notes = adapt_gres_conf(artifact.text, os.cpu_count() or 1)
                target.write_text(text)
                self.gres_overridden = notes
            elif name == "slurmdbd.conf":
                continue
            else:
                target.write_text(artifact.text)
            target.chmod(artifact.mode if artifact.mode is not None else 0o644)
        if "cgroup.conf" not in rendered:
            (self.paths.etc / "cgroup.conf").write_text(adapt_cgroup_conf(""))
        if self.accounting:
            if "slurmdbd.conf" not in rendered:
                raise DaemonError("slurm.conf uses slurmdbd, but no slurmdbd.conf is rendered")
            dbd = write_slurmdbd_conf(
                rendered["slurmdbd.conf"].text,
                self.paths,
                dbd_port=self.dbd_port,
                mariadb_port=MARIADB_PORT,
            )
            self.db_user = dbd.db_user
            self.slurmdbd_overridden = dbd.overridden
        netns = shlex.quote(self.controller_netns_name)
        for client in CLIENTS:
            real = shutil.which(client)  # the wrappers' own directory is not on PATH yet
            if real is None:
                continue
            wrapper = self.paths.bin / client
            wrapper.write_text(
                "#!/bin/sh\n"
                "# The twin's names and addresses live in its controller's network namespace.\n"
                f'exec ip netns exec {netns} {shlex.quote(real)} "$@"\n'
            )
            wrapper.chmod(0o755)

    @property
    def controller_netns_name(self) -> str:
        return self.network.host_netns(0)  # the controller is the first host created

    @property
    def env(self) -> dict[str, str]:
        """For the daemons and for commands run in the controller's namespace."""
        return clean_env(self.paths.slurm_conf)

    @property
    def user_env(self) -> dict[str, str]:
        """For a user's script: SLURM_CONF set, and the wrappers of bin/ first on PATH."""
        env = clean_env(self.paths.slurm_conf)
        env["PATH"] = f"{self.paths.bin}{os.pathsep}{env.get('PATH', os.defpath)}"
        return env

    # -- starting ------------------------------------------------------------------------

    def start(self) -> None:
        """Network, daemons, nodes idle; on any failure everything is stopped again."""
        try:
            hosts = [self.controller, *(node.name for node in self.nodes.started)]
            self.leftovers = remove_leftovers(SPOOL_BASE)
            self.namespaces = self.network.create(self.addresses, hosts)
            if self.accounting:
                self._start_slurmdbd(self._start_mariadb())
                self._create_qos()
            self._start_slurmctld()
            for node in self.nodes.started:
                self._start_slurmd(node.name, node.gpu_count)
            self._wait_for_nodes()
            if self.nodes.not_started:
                self.client(
                    "scontrol",
                    "update",
                    f"NodeName={hostlist.collect_hostlist(list(self.nodes.not_started))}",
                    "State=DOWN",
                    "Reason=not started by clustergen twin",
                )
        except BaseException:
            self.stop()
            raise

    def _in_netns(self, host: str, argv: Sequence[str]) -> list[str]:
        return ["ip", "netns", "exec", self.namespaces[host], *argv]

    def _start_mariadb(self) -> Daemon:
        return start_mariadb(
            self,
            db_dir=self.paths.db,
            run_dir=self.paths.run,
            port=MARIADB_PORT,
            user=self.db_user,
            where=lambda argv: self._in_netns(self.controller, argv),
        )

    def _start_slurmdbd(self, mariadb: Daemon) -> None:
        daemon = self._start(
            "slurmdbd",
            self._in_netns(self.controller, ["slurmdbd", "-D"]),
            log=self.paths.log / "slurmdbd.log",
        )
        netns = self.namespaces[self.controller]
        wait_until(
            lambda: port_listening(netns, self.dbd_port),
            [mariadb, daemon],
            f"slurmdbd to listen on port {self.dbd_port}",
        )

    def _create_qos(self) -> None:
        """The rendered QOS script (sacctmgr, as the slurm_accounting role runs it), before
        slurmctld starts, so that partitions naming a QOS find it."""
        script = self.paths.etc / QOS_SCRIPT_NAME
        if script.is_file():
            self.client("bash", str(script))

    def _start_slurmctld(self) -> None:
        argv = ["unshare", "--uts", "--", "sh", "-c", HOSTNAME_SCRIPT, "sh", self.controller]
        argv += ["slurmctld", "-D", "-c", "-f", str(self.paths.slurm_conf)]
        self._slurmctld = self._start(
            "slurmctld", self._in_netns(self.controller, argv), log=self.paths.log / "slurmctld.log"
        )
        wait_until(self._controller_up, self.daemons, "slurmctld to answer scontrol ping")

    def _controller_up(self) -> bool:
        try:
            result = self._client_result("scontrol", "ping", timeout=PROBE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return False
        return " is UP" in result.stdout

    def _start_slurmd(self, node: str, gpu_count: int) -> None:
        argv = ["unshare", "--uts", "--mount", "--propagation", "private", "--"]
        argv += ["sh", "-c", NODE_SCRIPT, "sh", node, str(gpu_count)]
        argv += ["slurmd", "-D", "-N", node, "-f", str(self.paths.slurm_conf)]
        self._start(
            f"slurmd-{node}",
            self._in_netns(node, argv),
            log=self.paths.log / f"slurmd-{node}.log",
        )

    def _wait_for_nodes(self) -> None:
        wanted = {node.name for node in self.nodes.started}

        def idle() -> bool:
            result = self._client_result("sinfo", "-h", "-N", "-o", "%N %T")
            ready = {
                line.split()[0]
                for line in result.stdout.splitlines()
                if len(line.split()) == 2 and line.split()[1] in ("idle", "mixed", "allocated")
            }
            return wanted <= ready

        what = "every started slurmd to register (idle)"
        wait_until(idle, self.daemons, what, NODES_READY_TIMEOUT_S)

    # -- using ---------------------------------------------------------------------------

    def _client_result(
        self, *argv: str, timeout: float = CLIENT_TIMEOUT_S
    ) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                self._in_netns(self.controller, argv),
                capture_output=True,
                text=True,
                env=self.env,
                cwd=self.paths.root,  # batch jobs write slurm-<id>.out here, not in the caller's
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            if timeout == PROBE_TIMEOUT_S:
                raise
            raise DaemonError(f"{shlex.join(argv)}: no answer within {timeout:.0f} s") from None

    def client(self, *argv: str, timeout: float = CLIENT_TIMEOUT_S) -> str:
        """Run a command in the controller's namespace; its output, or DaemonError."""
        result = self._client_result(*argv, timeout=timeout)
        if result.returncode != 0:
            raise DaemonError(
                f"{shlex.join(argv)} failed with {result.returncode}\n"
                f"{result.stdout}{result.stderr}"
            )
        return result.stdout

    def run_script(self, script: Path) -> int:
        """Run `script` with SLURM_CONF set and the clients on PATH; its exit status."""
        argv = [str(script)] if os.access(script, os.X_OK) else ["sh", str(script)]
        # A session of its own, so that whatever the script started in the background
        # goes with it, also when the twin is stopped while it runs.
        proc = subprocess.Popen(argv, env=self.user_env, start_new_session=True)
        try:
            return proc.wait()
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    def describe(self) -> list[str]:
        """What the twin is: versions, nodes, accounting, every dropped key and override."""
        lines = [
            f"clustergen twin: cluster {self.cluster.spec.cluster.name}, rendered for Slurm "
            f"{self.cluster.spec.software.slurm}, "
            f"running on the local Slurm {self.slurm_version}",
            f"controller: {self.controller} (slurmctld)"
            + (", slurmdbd with a private MariaDB" if self.accounting else ", no accounting"),
            *self.nodes.describe(),
        ]
        if self.conf.dropped:
            lines.append(f"dropped from slurm.conf ({len(self.conf.dropped)}):")
            lines += [f"  {item}" for item in self.conf.dropped]
        else:
            lines.append("dropped from slurm.conf: nothing")
        lines.append("set for the local daemons: " + " ".join(self.conf.added))
        if self.accounting and (self.paths.etc / QOS_SCRIPT_NAME).is_file():
            lines.append(f"QOS: created in slurmdbd by the rendered {QOS_SCRIPT_NAME}")
        if self.slurmdbd_overridden:
            lines.append(
                "slurmdbd.conf: host, port, credentials and paths set for the private MariaDB "
                f"(replacing {' '.join(self.slurmdbd_overridden)})"
            )
        lines += self.gres_overridden
        return lines

    def how_to_reach(self) -> list[str]:
        partitions = conf_values(self.rendered_conf, "PartitionName")
        partition = next((p for p in partitions if p.upper() != "DEFAULT"), "")
        gpus = max((node.gpu_count for node in self.nodes.started), default=0)
        gres = f" --gres=gpu:{gpus}" if gpus else ""
        part = f" -p {partition}" if partition else ""
        return [
            "Reach it from another shell (as root):",
            f"  export SLURM_CONF={self.paths.slurm_conf}",
            f"  export PATH={self.paths.bin}:$PATH   # {', '.join(CLIENTS[:6])}, ... "
            "run in the controller's namespace",
            "  sinfo",
            f"  srun{part}{gres} bash -c 'echo $(hostname) $CUDA_VISIBLE_DEVICES'",
            f"  sbatch{part} -N1 --wrap 'hostname'",
            "Ctrl-C or SIGTERM stops the twin and removes everything it made.",
        ]

    # -- stopping ------------------------------------------------------------------------

    def _remove_directories(self) -> None:
        shutil.rmtree(self.paths.spool, ignore_errors=True)
        if self._own_dir:
            shutil.rmtree(self.paths.root, ignore_errors=True)
        else:  # the caller's directory keeps configuration and logs
            shutil.rmtree(self.paths.db / "data", ignore_errors=True)

    def stop(self) -> None:
        """Stop every daemon, newest first, then the namespaces; safe to call twice."""
        super().stop()
        failures = self.network.delete()
        self._remove_directories()
        self.network.release()
        if failures:
            raise DaemonError("could not remove everything:\n" + "\n".join(failures))
