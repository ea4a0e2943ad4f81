"""Hand rendered Slurm files to the real Slurm daemons (Debian's Slurm 22.05).

Follows the recipe in shared/reference/testbed.md ("Slurm daemons"):

- the rendered slurm.conf is copied and only what points at the real site is
  overridden (controller address, ports, auth, user, state/spool/log/pid
  paths); keys the installed parser lacks are removed and listed;
- node names resolve through a private hosts file bind-mounted over
  /etc/hosts inside a mount namespace, so the host is never touched;
- accounting goes to a real slurmdbd (with the rendered slurmdbd.conf) backed
  by a private MariaDB, because slurmctld exits when its slurmdbd is missing;
- gres.conf is checked by `slurmd -G` in a mount+UTS namespace whose hostname
  is the node's name and whose /dev holds fake /dev/nvidiaN devices.

Typical use in a test:

    require_real_slurm()
    with SlurmTestbed(out_dir, tmp_path) as bed:
        report = bed.start_controller()
        assert report.nodes["gpu01"].gres == "gpu:h100:8"
        assert bed.slurmd_gres("gpu01", gpu_count=8).problems == []

Every daemon is a child of the test process, started with a parent-death
signal, and stopped by SlurmTestbed.stop() (the context manager calls it), so
none outlives a failing test.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from types import TracebackType
from typing import Literal

from support.ci import require

# The generator's own copy of shared/reference/slurm-keys: the top-level keys
# each Slurm release's parser accepts.
KEYS_DIR = Path(str(resources.files("clustergen.catalog") / "slurm_keys"))

# Test-only credential for the private MariaDB; the rendered slurmdbd.conf has
# no StoragePass line (the Ansible role appends the real one from a vault).
DB_PASSWORD = "clustergen-test-only"
DEFAULT_DB_USER = "slurm"

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
CLIENT_TIMEOUT_S = 30.0
LOG_TAIL_LINES = 80

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

# slurm.conf keys removed without replacement: addresses, key files and
# plugin paths of the real site that make no sense on the test machine.
SITE_ONLY_SLURM_CONF = frozenset(
    {
        "slurmctldaddr",
        "controlmachine",
        "controladdr",
        "backupcontroller",
        "backupaddr",
        "authinfo",
        "authalttypes",
        "authaltparameters",
        "plugindir",
        "slurmschedlogfile",
        "jobcredentialprivatekey",
        "jobcredentialpubliccertificate",
    }
)
SITE_ONLY_ACCOUNTING_SLURM_CONF = frozenset(
    {
        "accountingstoragebackuphost",
        "accountingstorageexternalhost",
        "accountingstoragepass",
    }
)
SITE_ONLY_SLURMDBD_CONF = frozenset(
    {
        "authinfo",
        "authalttypes",
        "authaltparameters",
        "dbdbackuphost",
        "plugindir",
    }
)

# Log lines caused by the test machine, not by the rendered files.
ENVIRONMENT_NOISE = (
    "Configured MailProg is invalid",  # no /bin/mail on the test machine
    "pmix",  # Debian's mpi/pmix plugin is loaded without libpmix installed
    "Could not open job state file",  # fresh StateSaveLocation
    "Trying backup state save file",
    "Could not open reservation state file",
    "No fed_mgr state file",
    # slurmdbd pushes the new cluster's TRES to slurmctld before (or after)
    # slurmctld listens; harmless, and a real site's cluster is registered once.
    "update cluster: Connection refused",
)
# Further noise when the test removed accounting (accounting="remove").
ACCOUNTING_REMOVED_NOISE = (
    "Job accounting information gathered, but not stored",
    "you have asked for it not to be stored",
    "can only be used with SlurmDBD",
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


class SlurmHarnessError(RuntimeError):
    """A daemon failed or the harness could not set it up; the message carries the logs."""


# --------------------------------------------------------------------------
# Config text (pure functions)
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class SkippedLine:
    """A rendered line the test removed, and why."""

    line: str
    reason: str

    @property
    def key(self) -> str:
        return conf_key(self.line) or ""

    def __str__(self) -> str:
        return f"{self.line}  ({self.reason})"


@dataclass(frozen=True)
class ConfRewrite:
    text: str
    skipped: list[SkippedLine]
    overridden: list[str]  # rendered lines replaced or dropped as site-specific


def logical_lines(text: str) -> list[str]:
    """Lines as Slurm's parser sees them: a trailing backslash continues a line."""
    lines: list[str] = []
    pending = ""
    for raw in text.splitlines():
        if raw.endswith("\\"):
            pending += raw[:-1]
            continue
        lines.append(pending + raw)
        pending = ""
    if pending:
        lines.append(pending)
    return lines


def conf_key(line: str) -> str | None:
    """Lower-cased key of a config line (`NodeName=a b=c` -> nodename), None for blanks/comments."""
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return None
    first_token = stripped.split(None, 1)[0]
    return first_token.split("=", 1)[0].lower()


def conf_values(text: str, key: str) -> list[str]:
    """Values of every top-level `key=value` line (case-insensitive key)."""
    values = []
    for line in logical_lines(text):
        if conf_key(line) == key.lower():
            first_token = line.strip().split(None, 1)[0]
            values.append(first_token.split("=", 1)[1] if "=" in first_token else "")
    return values


def rewrite_conf(
    text: str,
    *,
    replace: Mapping[str, str],
    drop: Collection[str] = (),
    known_keys: Collection[str] | None = None,
    remove: Mapping[str, str] | None = None,
    unknown_reason: str = "key unknown to the installed Slurm",
) -> ConfRewrite:
    """Apply test overrides to a Slurm config file.

    replace: canonical key -> test value; every rendered line with that key is
        removed and `Key=value` is appended once at the end.
    drop: lower-case keys removed without replacement (site-only settings).
    known_keys: lower-case keys the installed parser accepts; other lines are
        removed and reported as skipped. None accepts everything.
    remove: lower-case key prefix -> reason; matching lines are removed and
        reported as skipped (e.g. accounting removed for this test).
    """
    replaced = {key.lower() for key in replace}
    kept: list[str] = []
    skipped: list[SkippedLine] = []
    overridden: list[str] = []
    for line in logical_lines(text):
        key = conf_key(line)
        if key is None:
            kept.append(line)
        elif key in replaced or key in drop:
            overridden.append(line.strip())
        elif (reason := _removal_reason(key, remove)) is not None:
            skipped.append(SkippedLine(line.strip(), reason))
        elif known_keys is not None and key not in known_keys:
            skipped.append(SkippedLine(line.strip(), unknown_reason))
        else:
            kept.append(line)
    kept.append("")
    kept.append("# --- test overrides appended by tests/realslurm.py ---")
    kept.extend(f"{key}={value}" for key, value in replace.items())
    return ConfRewrite("\n".join(kept) + "\n", skipped, overridden)


def _removal_reason(key: str, remove: Mapping[str, str] | None) -> str | None:
    for prefix, reason in (remove or {}).items():
        if key.startswith(prefix):
            return reason
    return None


def read_known_keys(path: Path) -> frozenset[str]:
    """Keys from a slurm-keys list; `Key (defunct: ...)` still parses, so it counts."""
    keys = set()
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keys.add(line.split()[0].lower())
    return frozenset(keys)


def keys_file_for(version: str, keys_dir: Path = KEYS_DIR) -> Path:
    """The key list of the given Slurm version, or of the nearest older one listed."""
    wanted = _version_tuple(version)[:2]
    candidates = sorted(
        (_version_tuple(p.name.removeprefix("slurm.conf-").removesuffix(".txt")), p)
        for p in keys_dir.glob("slurm.conf-*.txt")
    )
    older = [path for listed, path in candidates if listed <= wanted]
    if not older:
        raise SlurmHarnessError(f"no slurm.conf key list in {keys_dir} for Slurm {version}")
    return older[-1]


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version))


def hosts_file_text(node_names: Sequence[str], own_hostname: str) -> tuple[str, dict[str, str]]:
    """A hosts file mapping each name to its own 127.0.0.x address (from .2 up)."""
    addresses: dict[str, str] = {}
    for name in node_names:
        if name not in addresses and name != "localhost":
            index = len(addresses) + 2
            addresses[name] = f"127.{index // 65536 % 256}.{index // 256 % 256}.{index % 256}"
    lines = [f"127.0.0.1 localhost {own_hostname}"]
    lines.extend(f"{address} {name}" for name, address in addresses.items())
    return "\n".join(lines) + "\n", addresses


# --------------------------------------------------------------------------
# Output parsing (pure functions)
# --------------------------------------------------------------------------


def parse_oneliner(line: str) -> dict[str, str]:
    """`Key=value Key2=a b` -> dict; words without '=' belong to the previous value."""
    fields: dict[str, str] = {}
    last_key: str | None = None
    for token in line.split():
        key, sep, value = token.partition("=")
        if sep and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_:]*", key):
            fields[key] = value
            last_key = key
        elif last_key is not None:
            fields[last_key] += " " + token
    return fields


def _nullable(value: str | None) -> str:
    return "" if value in (None, "(null)", "N/A") else str(value)


def _split_list(value: str | None) -> tuple[str, ...]:
    text = _nullable(value)
    return tuple(item for item in text.split(",") if item)


@dataclass(frozen=True)
class NodeInfo:
    name: str
    cpus: int
    boards: int
    sockets: int  # total, as scontrol reports it (Boards x SocketsPerBoard)
    cores_per_socket: int
    threads_per_core: int
    real_memory_mib: int
    gres: str  # e.g. "gpu:h100:8", "" when none
    features: tuple[str, ...]
    state: str
    partitions: tuple[str, ...]
    fields: dict[str, str]

    @classmethod
    def from_fields(cls, fields: dict[str, str]) -> NodeInfo:
        return cls(
            name=fields["NodeName"],
            cpus=int(fields["CPUTot"]),
            boards=int(fields["Boards"]),
            sockets=int(fields["Sockets"]),
            cores_per_socket=int(fields["CoresPerSocket"]),
            threads_per_core=int(fields["ThreadsPerCore"]),
            real_memory_mib=int(fields["RealMemory"]),
            gres=_nullable(fields.get("Gres")),
            features=_split_list(fields.get("AvailableFeatures")),
            state=fields.get("State", ""),
            partitions=_split_list(fields.get("Partitions")),
            fields=fields,
        )


@dataclass(frozen=True)
class PartitionInfo:
    name: str
    nodes: tuple[str, ...]  # expanded by Slurm itself
    nodes_expr: str  # as Slurm prints it, e.g. "gpu[01-08]"
    default: bool
    max_time: str
    default_time: str
    priority_tier: int
    state: str
    fields: dict[str, str]


@dataclass(frozen=True)
class SwitchInfo:
    name: str
    level: int
    nodes: tuple[str, ...]  # expanded; for upper levels every node below
    switches: tuple[str, ...]  # expanded child switch names
    fields: dict[str, str]


@dataclass(frozen=True)
class SinfoRow:
    node: str
    gres: str
    cpus: int
    memory_mib: int
    features: tuple[str, ...]


SINFO_FORMAT = "%N %G %c %m %f"


def parse_sinfo(output: str) -> dict[str, SinfoRow]:
    """`sinfo -h -N -o "%N %G %c %m %f"`; a node in two partitions prints twice."""
    rows: dict[str, SinfoRow] = {}
    for line in output.splitlines():
        parts = line.split()
        if len(parts) != 5:
            continue
        node, gres, cpus, memory, features = parts
        rows[node] = SinfoRow(node, _nullable(gres), int(cpus), int(memory), _split_list(features))
    return rows


def problem_lines(text: str, noise: Sequence[str] = ()) -> list[str]:
    """Lines with `error`, `fatal` or `WARNING`, minus noise.

    Case-sensitive, as Slurm writes them and as testbed.md asks.
    """
    return [
        line
        for line in text.splitlines()
        if re.search(r"\berror\b|\bfatal\b|\bWARNING\b", line)
        and not any(pattern in line for pattern in noise)
    ]


# --------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class ControllerReport:
    """What the real slurmctld understood of the rendered files."""

    nodes: dict[str, NodeInfo]
    partitions: dict[str, PartitionInfo]
    sinfo: dict[str, SinfoRow]
    switches: dict[str, SwitchInfo]  # empty without topology/tree
    skipped: list[SkippedLine]  # rendered lines this test removed, with the reason
    overridden: list[str]  # rendered lines replaced/dropped as site-specific
    accounting: Literal["slurmdbd", "removed", "none"]
    slurm_version: str
    slurmctld_log: str
    slurmdbd_log: str
    raw: dict[str, str]  # command -> output

    def config_problems(self) -> list[str]:
        """error/fatal/WARNING lines of slurmctld and slurmdbd not caused by the test machine."""
        noise: tuple[str, ...] = ENVIRONMENT_NOISE
        if self.accounting == "removed":
            noise = noise + ACCOUNTING_REMOVED_NOISE
        return [f"slurmctld: {line}" for line in problem_lines(self.slurmctld_log, noise)] + [
            f"slurmdbd: {line}" for line in problem_lines(self.slurmdbd_log, noise)
        ]

    def summary(self) -> str:
        """Human-readable account for test output: what was skipped and what Slurm saw."""
        lines = [f"Slurm {self.slurm_version}, accounting: {self.accounting}"]
        lines += [f"skipped: {item}" for item in self.skipped] or ["skipped: nothing"]
        lines += [self.raw.get(f'sinfo -h -N -o "{SINFO_FORMAT}"', "")]
        return "\n".join(lines)


@dataclass(frozen=True)
class SlurmdGresReport:
    """`slurmd -G` output for one node."""

    node: str
    returncode: int
    output: str
    gres: list[dict[str, str]]  # one dict per "Gres Name=... Type=... Count=..." line
    problems: list[str] = field(default_factory=list)  # error/fatal/WARNING lines

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.problems

    def gpu_count(self, gres_type: str | None = None) -> int:
        return sum(
            int(line.get("Count", "0"))
            for line in self.gres
            if line.get("Name") == "gpu" and (gres_type is None or line.get("Type") == gres_type)
        )


def parse_slurmd_gres(node: str, returncode: int, output: str) -> SlurmdGresReport:
    gres = []
    for line in output.splitlines():
        _, sep, rest = line.partition("Gres Name=")
        if sep:
            # 22.05 ends the line with the Links value without its key: "(null)".
            gres.append(parse_oneliner("Name=" + rest.removesuffix(" (null)")))
    return SlurmdGresReport(node, returncode, output, gres, problem_lines(output))


# --------------------------------------------------------------------------
# Processes
# --------------------------------------------------------------------------

PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """Runs in the child before exec: the kernel kills it if the test process dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def _tail(path: Path | None, lines: int = LOG_TAIL_LINES) -> str:
    if path is None or not path.exists():
        return "(no file)"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


class Daemon:
    """A foreground daemon that is a child of the test process."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        output: Path,
        log: Path | None = None,
    ) -> None:
        self.name = name
        self.output = output
        self.log = log
        with output.open("wb") as out:
            self.proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=dict(env),
                preexec_fn=_die_with_parent,
            )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def describe(self) -> str:
        status = "running" if self.proc.poll() is None else f"exited with {self.proc.returncode}"
        # Slurm daemons in the foreground (-D) print every log line on stderr
        # too, plus what comes before the log file is open, so their output is
        # the fuller record; mariadbd writes only to its log file.
        shown = self.output if _read(self.output).strip() or self.log is None else self.log
        return f"{self.name} (pid {self.pid}) {status}\n--- {shown} ---\n{_tail(shown)}"

    def raise_if_exited(self) -> None:
        if self.proc.poll() is not None:
            raise SlurmHarnessError(f"{self.name} exited early\n{self.describe()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def wait_until(
    ready: Callable[[], bool],
    daemons: Sequence[Daemon],
    what: str,
    timeout: float = START_TIMEOUT_S,
) -> None:
    """Poll until ready(); fail with the daemons' logs if one exits or time runs out."""
    deadline = time.monotonic() + timeout
    while True:
        for daemon in daemons:
            daemon.raise_if_exited()
        if ready():
            return
        if time.monotonic() > deadline:
            logs = "\n".join(daemon.describe() for daemon in daemons)
            raise SlurmHarnessError(f"timed out after {timeout:.0f}s waiting for {what}\n{logs}")
        time.sleep(0.1)


def run_checked(
    argv: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = CLIENT_TIMEOUT_S
) -> str:
    result = subprocess.run(
        list(argv),
        capture_output=True,
        text=True,
        env=None if env is None else dict(env),
        timeout=timeout,
        check=False,
    )
    if result.returncode != 0:
        raise SlurmHarnessError(
            f"{' '.join(argv)} failed with {result.returncode}\n{result.stdout}{result.stderr}"
        )
    return result.stdout


def free_port() -> int:
    # The kernel picks an unused port; it stays free long enough for the
    # daemon started next (a rare clash shows up as a clear bind error).
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def installed_slurm_version() -> str:
    output = run_checked(["slurmctld", "-V"])  # "slurm-wlm 22.05.8"
    match = re.search(r"\d+\.\d+\.\d+", output)
    if match is None:
        raise SlurmHarnessError(f"cannot read the Slurm version from {output!r}")
    return match.group(0)


def clean_env(slurm_conf: Path) -> dict[str, str]:
    """The test's environment without SLURM_* variables of an outer job, plus SLURM_CONF."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("SLURM_")}
    env["SLURM_CONF"] = str(slurm_conf)
    return env


# --------------------------------------------------------------------------
# The test bed
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkPaths:
    root: Path

    @classmethod
    def create(cls, root: Path) -> WorkPaths:
        paths = cls(root)
        for directory in (paths.etc, paths.state, paths.spool, paths.log, paths.run, paths.db):
            directory.mkdir(parents=True, exist_ok=True)
        return paths

    @property
    def etc(self) -> Path:
        return self.root / "etc"

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def spool(self) -> Path:
        return self.root / "spool"

    @property
    def log(self) -> Path:
        return self.root / "log"

    @property
    def run(self) -> Path:
        return self.root / "run"

    @property
    def db(self) -> Path:
        return self.root / "db"

    @property
    def slurm_conf(self) -> Path:
        return self.etc / "slurm.conf"

    @property
    def hosts(self) -> Path:
        return self.etc / "hosts"


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
    raise SlurmHarnessError(f"no slurm.conf in {rendered} or {rendered / 'slurm'}")


class SlurmTestbed:
    """Rendered Slurm files installed in a private work dir, ready for the real daemons.

    rendered: render output root (or its slurm/ directory).
    work_dir: empty scratch directory (tmp_path).
    node_names: extra names to resolve; every NodeName and SlurmctldHost name
        of the rendered slurm.conf is added automatically.
    accounting: "slurmdbd" runs a real slurmdbd + MariaDB when slurm.conf uses
        accounting_storage/slurmdbd; "remove" drops the AccountingStorage*
        keys instead and lists them in `skipped`.
    """

    def __init__(
        self,
        rendered: Path,
        work_dir: Path,
        node_names: Sequence[str] = (),
        *,
        accounting: AccountingMode = "slurmdbd",
    ) -> None:
        self.source = find_slurm_dir(rendered)
        self.paths = WorkPaths.create(work_dir)
        self.ports = Ports.pick()
        self.slurm_version = installed_slurm_version()
        self.daemons: list[Daemon] = []
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
        self.paths.hosts.write_text(hosts_text)

    # -- context manager -----------------------------------------------------

    def __enter__(self) -> SlurmTestbed:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop every daemon, newest first; safe to call twice."""
        while self.daemons:
            self.daemons.pop().stop()
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
        for path in self.source.iterdir():
            if path.is_file() and path.name != "slurm.conf":
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
            remove["accountingstorage"] = "accounting removed for this test (no slurmdbd)"
        known = read_known_keys(keys_file_for(self.slurm_version))
        return rewrite_conf(
            rendered_conf,
            replace=replace,
            drop=drop,
            known_keys=known,
            remove=remove,
            unknown_reason=f"not a Slurm {self.slurm_version} slurm.conf key",
        )

    def _write_slurmdbd_conf(self) -> None:
        rendered = self.source / "slurmdbd.conf"
        if not rendered.is_file():
            raise SlurmHarnessError(
                f"slurm.conf uses accounting_storage/slurmdbd but {rendered} is missing"
            )
        text = rendered.read_text()
        users = conf_values(text, "StorageUser")
        replace = {
            "AuthType": "auth/none",
            "DbdHost": "localhost",
            "DbdAddr": "127.0.0.1",
            "DbdPort": str(self.ports.slurmdbd),
            "SlurmUser": "root",
            "LogFile": str(self.paths.log / "slurmdbd.log"),
            "PidFile": str(self.paths.run / "slurmdbd.pid"),
            "StorageHost": "127.0.0.1",
            "StoragePort": str(self.ports.mariadb),
            "StoragePass": DB_PASSWORD,
        }
        if users:
            self.db_user = users[-1]  # the rendered user is kept and created in MariaDB
        else:
            replace["StorageUser"] = self.db_user
        rewrite = rewrite_conf(text, replace=replace, drop=SITE_ONLY_SLURMDBD_CONF)
        conf = self.paths.etc / "slurmdbd.conf"
        conf.write_text(rewrite.text)
        conf.chmod(0o600)  # slurmdbd insists: it holds StoragePass
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
        if _nullable(expression) == "":
            return ()
        output = run_checked(["scontrol", "show", "hostnames", expression], env=self.env)
        return tuple(output.split())

    @property
    def env(self) -> dict[str, str]:
        return clean_env(self.paths.slurm_conf)

    # -- daemons ---------------------------------------------------------------

    def _start(self, name: str, argv: Sequence[str], log: Path | None = None) -> Daemon:
        daemon = Daemon(name, argv, env=self.env, output=self.paths.log / f"{name}.out", log=log)
        self.daemons.append(daemon)
        return daemon

    def _start_mariadb(self) -> Daemon:
        datadir = self.paths.db / "data"
        run_checked(
            [
                "mariadb-install-db",
                "--no-defaults",
                f"--datadir={datadir}",
                "--user=root",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
                "--skip-name-resolve",
            ]
        )
        init_sql = self.paths.db / "init.sql"
        user = self.db_user.replace("'", "")
        init_sql.write_text(
            f"CREATE USER '{user}'@'127.0.0.1' IDENTIFIED BY '{DB_PASSWORD}';\n"
            f"GRANT ALL PRIVILEGES ON *.* TO '{user}'@'127.0.0.1';\n"
        )
        error_log = self.paths.log / "mariadb.log"
        daemon = self._start(
            "mariadbd",
            [
                "mariadbd",
                "--no-defaults",
                f"--datadir={datadir}",
                "--user=root",
                f"--port={self.ports.mariadb}",
                "--bind-address=127.0.0.1",
                f"--socket={self._mariadb_socket()}",
                f"--pid-file={self.paths.run / 'mariadbd.pid'}",
                f"--log-error={error_log}",
                "--skip-name-resolve",
                f"--init-file={init_sql}",
                # Below these slurmdbd logs "Database settings not recommended values".
                "--innodb-buffer-pool-size=1G",
                "--innodb-log-file-size=64M",
                "--innodb-lock-wait-timeout=900",
            ],
            log=error_log,
        )
        wait_until(
            lambda: "ready for connections" in _tail(error_log),
            [daemon],
            "mariadbd to accept connections",
        )
        return daemon

    def _mariadb_socket(self) -> Path:
        # A Unix socket path must fit in 108 bytes; deep pytest tmp dirs may not.
        socket_path = self.paths.run / "mariadbd.sock"
        if len(str(socket_path)) < 100:
            return socket_path
        return Path(f"/tmp/realslurm-mariadbd-{self.ports.mariadb}.sock")

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
                str(self.paths.hosts),
                "slurmctld",
                "-D",
                "-c",
                "-f",
                str(self.paths.slurm_conf),
            ],
            log=self.paths.log / "slurmctld.log",
        )
        wait_until(self._controller_up, self.daemons, "slurmctld to answer scontrol ping")
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
            raise SlurmHarnessError("slurmctld is not running: call start_controller() first")
        self._slurmctld.raise_if_exited()
        return run_checked(
            ["nsenter", f"--target={self._slurmctld.pid}", "--mount", "--", *argv],
            env=self.env,
        )

    def start_controller(self) -> ControllerReport:
        """Start slurmdbd (if used) and slurmctld, then report what Slurm understood.

        Raises SlurmHarnessError with the daemons' logs when one of them exits
        (and stops the others). On success the daemons keep running until
        stop(), so a test may run more clients.
        """
        if self._slurmctld is not None:
            raise SlurmHarnessError("start_controller() was already called")
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
            nodes=self._parse_nodes(raw["scontrol show nodes -o"]),
            partitions=self._parse_partitions(raw["scontrol show partition -o"]),
            sinfo=parse_sinfo(raw[f'sinfo -h -N -o "{SINFO_FORMAT}"']),
            switches=self._parse_switches(raw["scontrol show topology"]),
            skipped=list(self.skipped),
            overridden=list(self.overridden),
            accounting=self.accounting,
            slurm_version=self.slurm_version,
            slurmctld_log=_read(self.paths.log / "slurmctld.log"),
            slurmdbd_log=_read(self.paths.log / "slurmdbd.log"),
            raw=raw,
        )

    @staticmethod
    def _parse_nodes(output: str) -> dict[str, NodeInfo]:
        nodes = [
            NodeInfo.from_fields(parse_oneliner(line))
            for line in output.splitlines()
            if line.strip()
        ]
        return {node.name: node for node in nodes}

    def _parse_partitions(self, output: str) -> dict[str, PartitionInfo]:
        partitions = {}
        for line in output.splitlines():
            if not line.strip():
                continue
            fields = parse_oneliner(line)
            partitions[fields["PartitionName"]] = PartitionInfo(
                name=fields["PartitionName"],
                nodes=self.expand_hostlist(fields.get("Nodes", "")),
                nodes_expr=_nullable(fields.get("Nodes")),
                default=fields.get("Default") == "YES",
                max_time=fields.get("MaxTime", ""),
                default_time=fields.get("DefaultTime", ""),
                priority_tier=int(fields.get("PriorityTier", "0")),
                state=fields.get("State", ""),
                fields=fields,
            )
        return partitions

    def _parse_switches(self, output: str) -> dict[str, SwitchInfo]:
        switches = {}
        for line in output.splitlines():
            if not line.startswith("SwitchName="):
                continue
            fields = parse_oneliner(line)
            switches[fields["SwitchName"]] = SwitchInfo(
                name=fields["SwitchName"],
                level=int(fields.get("Level", "0")),
                nodes=self.expand_hostlist(fields.get("Nodes", "")),
                switches=self.expand_hostlist(fields.get("Switches", "")),
                fields=fields,
            )
        return switches

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
                str(self.paths.hosts),
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
            preexec_fn=_die_with_parent,
        )
        before, marker, output = result.stdout.partition(NAMESPACE_READY_MARKER + "\n")
        if not marker:
            raise SlurmHarnessError(
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
