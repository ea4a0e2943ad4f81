"""Newer Slurm in Debian chroots: trixie's 24.11 and sid's 26.05, beside the host's 22.05.

Follows shared/reference/testbed.md, "Newer Slurm: Debian 13 (24.11) and sid (26.05) in
chroots":

- `debootstrap --variant=minbase SUITE` from the mirror of the host's own apt sources
  (support.debian), a policy-rc.d that exits 101 while the packages install (no package
  script starts a daemon), built once per test session under its scratch in CI, kept in the
  testbed cache (CLUSTERGEN_TESTBED_CACHE) between local runs (support.ansible_testbed.cached);
- every check runs in `unshare -m -n -u -p -f`: a loopback-only network, the controller's
  own hostname, its own pids (every daemon dies with it), then `chroot`;
- the rendered conf dir is bound on /etc/slurm and a hosts file on /etc/hosts; munged,
  MariaDB (Debian's own configuration), slurmdbd and slurmctld start as on a real head
  node, with the rendered names, ports, users and paths. Only StoragePass (the site's
  secret, appended by the Ansible role from its vault) is added to slurmdbd.conf.

Typical use in a test:

    tree = release_chroot("24.11", tmp_path_factory.getbasetemp())
    report = run_controller(tree, out / "slurm", tmp_path)
    assert report.config_problems() == []
    gres = run_slurmd_gres(tree, out / "slurm", tmp_path, {"gpu01": 8})
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from clustergen.commands.twin.accounting import DB_PASSWORD, DEFAULT_DB_USER, database_init_sql
from clustergen.commands.twin.conf import conf_values, hosts_file_text, rewrite_conf
from clustergen.commands.twin.layout import adapt_gres_conf
from clustergen.model.common import expand_hostlist

from support.ansible_testbed import NODE_PATH, cached, digest, mirror, run
from support.booted import in_tree
from support.ci import skip_or_fail, tool
from support.debian import debian_mirror
from support.realslurm import parse
from support.realslurm.parse import ControllerReport, SlurmdGresReport

# Slurm series -> the Debian suite that ships it (checked 2026-11-27: trixie 24.11.5-4+deb13u1,
# sid 26.05.5-1).
SUITES = {"24.11": "trixie", "26.05": "sid"}
PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge", "slurmdbd", "mariadb-server")
HOST_TOOLS = ("debootstrap", "unshare", "chroot", "ip", "mount", "mknod", "hostname")
# Bump when the recipe changes, so cached trees built the old way are not reused.
RECIPE_VERSION = "1"
BUILD_SECONDS_FILE = ".clustergen-build-seconds"
CHECK_TIMEOUT_S = 240

# Lines the chroot sandbox causes, not the rendered files: pattern -> why
# (testbed.md, "Lines the sandbox causes"; the rest are in parse.ENVIRONMENT_NOISE).
CHROOT_NOISE: dict[str, str] = {
    "cgroup/v1 plugin is deprecated": "the test host has a hybrid cgroup layout (v1 "
    "controllers); Slurm 26.05 deprecates cgroup/v1",
    "No Assoc usage file": "a fresh StateSaveLocation",
    "No Qos usage file": "a fresh StateSaveLocation",
    # slurmdbd adding the new cluster's root user association looks up its parent (the
    # cluster's root association) in its cache before the cache holds it
    # (as_mysql_assoc.c _handle_coord_parent_flag, slurm-24-11-5-1); a site registers once.
    "We can't find assoc 1 on cluster": "the cluster's first registration in a fresh "
    "accounting database",
}
# MariaDB settings slurmdbd checks at start ("Database settings not recommended values",
# accounting_storage_mysql.c _check_database_variables, slurm-24-11-5-1 and slurm-26-05-3-1:
# innodb_buffer_pool_size >= 2 GiB, innodb_lock_wait_timeout >= 450; 26.05 also refuses
# innodb_snapshot_isolation, ON by default from MariaDB 11.6.2). On a site's nodes the slurm
# role writes SchedMD's values into the local server's configuration
# (roles/slurm/defaults/main.yml, slurm_database_server_settings; proven on booted Debian
# 12 and 13 nodes, tests/test_booted_cluster.py); this hand-started server gets the ones
# slurmdbd checks on its command line.
MARIADB_OPTIONS = (
    "--innodb-buffer-pool-size=2G",
    "--innodb-lock-wait-timeout=900",
    "--loose-innodb-snapshot-isolation=OFF",
)


class ControllerFailed(AssertionError):
    """A daemon of the check did not start; the message holds its output and log."""


@dataclass(frozen=True)
class ReleaseChroot:
    series: str  # "24.11"
    suite: str  # "trixie"
    root: Path
    version: str  # upstream version of Debian's slurmctld, e.g. "24.11.5"
    build_seconds: float | None  # None when the tree was built by an earlier session


def missing_prerequisites() -> list[str]:
    missing = [name for name in HOST_TOOLS if tool(name) is None]
    if os.geteuid() != 0:
        missing.append("root privileges (debootstrap, chroot, namespaces)")
    if debian_mirror() is None:
        missing.append("a Debian mirror in the apt sources (or CLUSTERGEN_TESTBED_MIRROR)")
    return missing


def _build(suite: str, tree: Path) -> None:
    started = time.monotonic()
    run(["debootstrap", "--variant=minbase", suite, str(tree), mirror()])
    policy = tree / "usr/sbin/policy-rc.d"
    policy.write_text("#!/bin/sh\nexit 101\n", encoding="utf-8")
    policy.chmod(0o755)
    shutil.copy2("/etc/resolv.conf", tree / "etc/resolv.conf")
    in_tree(tree, "apt-get", "install", "-y", "--no-install-recommends", *PACKAGES)
    in_tree(tree, "apt-get", "clean")
    for lists in (tree / "var/lib/apt/lists").glob("*_*"):
        lists.unlink()
    (tree / "etc/hosts").touch()  # the bind target of each check's hosts file
    seconds = f"{time.monotonic() - started:.1f}\n"
    (tree / BUILD_SECONDS_FILE).write_text(seconds, encoding="utf-8")


def release_chroot(series: str, scratch: Path) -> ReleaseChroot:
    """The chroot of Debian's Slurm `series` (a key of SUITES), built on first use.

    Skips locally without root, debootstrap or a mirror; in CI (CI=true) fails instead.
    """
    missing = missing_prerequisites()
    if missing:
        skip_or_fail(f"Slurm {series} in a chroot needs {', '.join(missing)}")
    suite = SUITES[series]
    before = time.time()
    key = digest(RECIPE_VERSION, suite, mirror(), PACKAGES)
    root = cached(f"slurm-{suite}", key, lambda tree: _build(suite, tree), scratch)
    record = root / BUILD_SECONDS_FILE
    built_now = record.stat().st_mtime >= before
    seconds = record.read_text(encoding="utf-8")
    package = run(["chroot", str(root), "dpkg-query", "-W", "-f", "${Version}", "slurmctld"])
    version = package.stdout.split("-", 1)[0]
    return ReleaseChroot(series, suite, root, version, float(seconds) if built_now else None)


# --- one check: the namespace, the chroot, the daemons ----------------------------------

# Run by `unshare -m -n -u -p -f` on the host: loopback up with the rendered controller
# addresses, the hostname, fresh tmpfs where daemons write, the conf dir and hosts file
# bound, then the inner script in the chroot.
OUTER_SCRIPT = """\
set -eu
root=$1 conf=$2 hosts=$3 host=$4 addresses=$5
shift 5
ip link set lo up
for address in $addresses; do ip addr add "$address/32" dev lo; done
hostname "$host"
mount -t proc proc "$root/proc"
# MariaDB's data directory: /var/lib/mysql on trixie, /var/lib/mariadb on sid.
for dir in run tmp var/log var/spool var/lib/mysql var/lib/mariadb; do
  [ -d "$root/$dir" ] && mount -t tmpfs -o mode=0755 clustergen "$root/$dir"
done
chmod 1777 "$root/tmp"
mount --bind "$conf" "$root/etc/slurm"
mount --bind "$hosts" "$root/etc/hosts"
exec chroot "$root" /bin/sh -c "$@"
"""
MARK = "==clustergen=="
# The slurmdbd user and database, created when MariaDB first starts (in the bound conf dir).
INIT_SQL = ".clustergen-init.sql"

# Inside the chroot: the head node's daemons, then what they understood. $1: SlurmUser,
# $2: directories the rendered files name (made and given to SlurmUser unless they exist,
# like /run), $3: "yes" to run MariaDB and slurmdbd,
# $4: MariaDB options, $5: extra `scontrol show topology` arguments (one set per line),
# $6: slurmdbd's log file, $7: slurmdbd's SlurmUser (owns slurmdbd.conf), $8: slurmctld's log.
CONTROLLER_SCRIPT = """\
set -u
user=$1 dirs=$2 accounting=$3 mariadb_options=$4 extra=$5 dbd_log=$6 dbd_user=$7 ctld_log=$8
say() { echo "MARK $*"; }
# waitfor CONDITION NAME PID: until CONDITION holds, while PID lives, at most 60 s.
waitfor() { i=0; while ! eval "$1" >/dev/null 2>&1; do
  kill -0 "$3" 2>/dev/null || { say failed; echo "$2 exited"; return 1; }
  i=$((i + 1)); [ "$i" -gt 120 ] && { say failed; echo "timed out: $2"; return 1; }
  sleep 0.5; done; }
for dir in $dirs; do [ -d "$dir" ] || { mkdir -p "$dir" && chown "$user": "$dir"; }; done
mkdir -p /run/munge /var/log/munge && chown munge: /run/munge /var/log/munge
runuser -u munge -- munged || { say failed; echo munged did not start; exit 1; }
if [ "$accounting" = yes ]; then
  mkdir -p /run/mysqld /run/mariadbd && chown mysql: /run/mysqld /run/mariadbd
  for dir in /var/lib/mysql /var/lib/mariadb; do [ -d "$dir" ] && chown mysql: "$dir"; done
  mariadb-install-db --user=mysql --skip-test-db --skip-name-resolve >/tmp/install.log 2>&1 ||
    { say failed; cat /tmp/install.log; exit 1; }
  mariadbd --user=mysql --init-file=/etc/slurm/INIT_SQL --log-error=/tmp/mariadb.log \
    $mariadb_options >/dev/null 2>&1 &
  waitfor "grep -q 'ready for connections' /tmp/mariadb.log" mariadbd $! ||
    { cat /tmp/mariadb.log; exit 1; }
  chown "$dbd_user": /etc/slurm/slurmdbd.conf
  slurmdbd -D >/tmp/slurmdbd.out 2>&1 &
  waitfor "sacctmgr -i -n list cluster" slurmdbd $! || { cat /tmp/slurmdbd.out; exit 1; }
fi
slurmctld -D -c >/tmp/slurmctld.out 2>&1 &
waitfor "scontrol ping | grep -q 'is UP'" slurmctld $! ||
  { cat /tmp/slurmctld.out "$ctld_log"; exit 1; }
say "scontrol show node -o"; scontrol show node -o
say "scontrol show partition -o"; scontrol show partition -o
say "sinfo"; sinfo -h -N -o "SINFO"
say "scontrol show topology"; scontrol show topology
say "scontrol show config"; scontrol show config
echo "$extra" | while read -r args; do
  [ -n "$args" ] && { say "scontrol show topology $args"; scontrol show topology $args; }
done
# slurmctld's own metrics (monitoring.slurm, 25.11 on): its nodes endpoint, on its port.
if grep -qi '^MetricsType=' /etc/slurm/slurm.conf; then
  say "metrics /metrics/nodes"
  timeout 10 bash -c 'exec 3<>/dev/tcp/127.0.0.1/6817 &&
    printf "GET /metrics/nodes HTTP/1.0\\r\\n\\r\\n" >&3 && cat <&3'
fi
scontrol show partition -o > /tmp/cg-parts; scontrol show topology > /tmp/cg-topo
for expr in $(grep -oh '\\(Nodes\\|Switches\\)=[^ ]*' /tmp/cg-parts /tmp/cg-topo | sort -u); do
  say "hostnames ${expr#*=}"; scontrol show hostnames "${expr#*=}"
done
say "log slurmctld"; cat "$ctld_log"
[ "$accounting" = yes ] && { say "log slurmdbd"; cat "$dbd_log"; }
"""
CONTROLLER_SCRIPT = (
    CONTROLLER_SCRIPT.replace("MARK", MARK)
    .replace("SINFO", parse.SINFO_FORMAT)
    .replace("INIT_SQL", INIT_SQL)
)


def _sections(output: str) -> dict[str, str]:
    """Split the inner script's output at its MARK lines: title -> text."""
    sections: dict[str, list[str]] = {"": []}
    title = ""
    for line in output.splitlines():
        if line.startswith(MARK + " "):
            title = line[len(MARK) + 1 :]
            sections[title] = []
        else:
            sections[title].append(line)
    return {name: "\n".join(lines) + "\n" for name, lines in sections.items()}


@dataclass(frozen=True)
class PreparedConf:
    """The rendered conf dir as the check binds it on /etc/slurm, and what it needs."""

    conf_dir: Path
    hosts_file: Path
    controller: str  # the first SlurmctldHost's name: the namespace's hostname
    addresses: tuple[str, ...]  # rendered controller addresses, put on the loopback
    slurm_user: str
    directories: tuple[str, ...]  # state, spool, log and pid directories, owned by slurm_user
    accounting: bool
    dbd_log: str
    dbd_user: str
    ctld_log: str
    overridden: tuple[str, ...]  # what the test changed in the rendered files, and why


def _controllers(slurm_conf: str) -> list[tuple[str, str | None]]:
    found = []
    for value in conf_values(slurm_conf, "SlurmctldHost"):
        name, _, address = value.partition("(")
        found.append((name, address.rstrip(")") or None))
    return found


def _directories(slurm_conf: str, dbd_conf: str) -> tuple[str, ...]:
    dirs = [
        *conf_values(slurm_conf, "StateSaveLocation"),
        *conf_values(slurm_conf, "SlurmdSpoolDir"),
    ]
    files = ("SlurmctldLogFile", "SlurmdLogFile", "SlurmctldPidFile", "SlurmdPidFile")
    paths = [value for key in files for value in conf_values(slurm_conf, key)]
    paths += [*conf_values(dbd_conf, "LogFile"), *conf_values(dbd_conf, "PidFile")]
    dirs += [str(Path(path).parent) for path in paths]
    return tuple(dict.fromkeys(path for path in dirs if path.startswith("/")))


def _node_names(slurm_conf: str) -> list[str]:
    expressions = [v for v in conf_values(slurm_conf, "NodeName") if v.upper() != "DEFAULT"]
    return [name for expression in expressions for name in expand_hostlist(expression)]


def _slurmdbd_conf(rendered: str, conf_dir: Path) -> tuple[str, str]:
    """slurmdbd.conf with the site's secret added; returns (its StorageUser, StorageLoc)."""
    rewrite = rewrite_conf(
        rendered,
        replace={"StoragePass": DB_PASSWORD},
        banner="the database password the Ansible role appends from its vault",
    )
    path = conf_dir / "slurmdbd.conf"
    path.write_text(rewrite.text, encoding="utf-8")
    path.chmod(0o600)  # slurmdbd insists: it holds StoragePass
    users = conf_values(rendered, "StorageUser")
    locations = conf_values(rendered, "StorageLoc")
    return (users[-1] if users else DEFAULT_DB_USER), (
        locations[-1] if locations else "slurm_acct_db"
    )


def prepare_conf(rendered: Path, work_dir: Path) -> PreparedConf:
    """Copy the rendered conf dir (OUT/slurm) into work_dir, ready to bind on /etc/slurm."""
    conf_dir = work_dir / "etc-slurm"
    shutil.copytree(rendered, conf_dir)
    gres = conf_dir / "gres.conf"
    gres_notes: list[str] = []
    if gres.is_file():
        text, gres_notes = adapt_gres_conf(gres.read_text(encoding="utf-8"), os.cpu_count() or 1)
        gres.write_text(text, encoding="utf-8")
    slurm_conf = (conf_dir / "slurm.conf").read_text(encoding="utf-8")
    storage = [v.lower() for v in conf_values(slurm_conf, "AccountingStorageType")]
    accounting = "accounting_storage/slurmdbd" in storage
    dbd_rendered = ""
    overridden = list(gres_notes)
    if accounting:
        dbd_rendered = (rendered / "slurmdbd.conf").read_text(encoding="utf-8")
        user, database = _slurmdbd_conf(dbd_rendered, conf_dir)
        init_sql = conf_dir / INIT_SQL
        init_sql.write_text(database_init_sql(user, "localhost", database), encoding="utf-8")
        overridden.append("slurmdbd.conf: StoragePass added (the site's secret, from the vault)")
        overridden += [f"MariaDB: {option} (site database tuning)" for option in MARIADB_OPTIONS]
    controllers = _controllers(slurm_conf)
    controller = controllers[0][0]
    others = [name for name in _node_names(slurm_conf) if name != controller]
    others += [name for name, _ in controllers[1:]]
    hosts_text, _ = hosts_file_text(others, controller)
    hosts_file = work_dir / "hosts"
    hosts_file.write_text(hosts_text, encoding="utf-8")
    users = conf_values(slurm_conf, "SlurmUser")
    dbd_logs = conf_values(dbd_rendered, "LogFile") or ["/var/log/slurm/slurmdbd.log"]
    return PreparedConf(
        conf_dir=conf_dir,
        hosts_file=hosts_file,
        controller=controller,
        addresses=tuple(address for _, address in controllers if address),
        slurm_user=users[-1] if users else "root",
        directories=_directories(slurm_conf, dbd_rendered),
        accounting=accounting,
        dbd_log=dbd_logs[-1],
        dbd_user=(conf_values(dbd_rendered, "SlurmUser") or ["root"])[-1],
        ctld_log=(conf_values(slurm_conf, "SlurmctldLogFile") or ["/dev/null"])[-1],
        overridden=tuple(overridden),
    )


def _unshare(script: str, *args: str) -> str:
    """Run a host-side sh script in fresh mount, network, UTS and PID namespaces (every
    daemon it starts dies with it); stdout and stderr together."""
    namespaces = ["unshare", "-m", "-n", "-u", "-p", "-f", "--propagation", "private"]
    result = subprocess.run(
        [*namespaces, "sh", "-c", script, "sh", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={"PATH": os.pathsep.join(NODE_PATH), "LC_ALL": "C"},
        timeout=CHECK_TIMEOUT_S,
        check=False,
    )
    return result.stdout


def _in_namespace(tree: ReleaseChroot, prepared: PreparedConf, script: str, *args: str) -> str:
    """Run `script` (sh, with args) in the chroot, as the controller host."""
    where = [str(tree.root), str(prepared.conf_dir), str(prepared.hosts_file)]
    addresses = " ".join(prepared.addresses)
    return _unshare(OUTER_SCRIPT, *where, prepared.controller, addresses, script, "sh", *args)


def run_controller(
    tree: ReleaseChroot,
    rendered: Path,
    work_dir: Path,
    topologies: Sequence[str] = (),
) -> ControllerReport:
    """Hand the rendered conf dir to the release's slurmctld (and slurmdbd, MariaDB, munged
    when it uses accounting); report what they understood and logged.

    topologies: further `scontrol show topology ARGS` to run (e.g. a topology.yaml name);
    their output is in report.raw under "scontrol show topology ARGS".
    """
    prepared = prepare_conf(rendered, work_dir)
    output = _in_namespace(
        tree,
        prepared,
        CONTROLLER_SCRIPT,
        prepared.slurm_user,
        " ".join(prepared.directories),
        "yes" if prepared.accounting else "no",
        " ".join(MARIADB_OPTIONS),
        "\n".join(topologies),
        prepared.dbd_log,
        prepared.dbd_user,
        prepared.ctld_log,
    )
    return _report(tree, prepared, output)


def _report(tree: ReleaseChroot, prepared: PreparedConf, output: str) -> ControllerReport:
    sections = _sections(output)
    if "failed" in sections or "scontrol show node -o" not in sections:
        raise ControllerFailed(f"Slurm {tree.version} ({tree.suite}) did not start:\n{output}")
    names = {
        title.removeprefix("hostnames "): tuple(text.split())
        for title, text in sections.items()
        if title.startswith("hostnames ")
    }

    def expand(expression: str) -> tuple[str, ...]:
        return () if parse.nullable(expression) == "" else names[expression]

    raw = {
        title: text
        for title, text in sections.items()
        if title.startswith(("scontrol", "sinfo", "metrics"))
    }
    return ControllerReport(
        nodes=parse.parse_nodes(raw["scontrol show node -o"]),
        partitions=parse.parse_partitions(raw["scontrol show partition -o"], expand),
        sinfo=parse.parse_sinfo(raw["sinfo"]),
        switches=parse.parse_switches(raw["scontrol show topology"], expand),
        skipped=[],
        overridden=list(prepared.overridden),
        accounting="slurmdbd" if prepared.accounting else "none",
        slurm_version=tree.version,
        slurmctld_log=sections.get("log slurmctld", ""),
        slurmdbd_log=sections.get("log slurmdbd", ""),
        raw=raw,
        sandbox_noise=CHROOT_NOISE,
    )


# Run by `unshare -m -n -u -p -f` on the host, once for all nodes: munged, then per node its
# hostname, a
# tmpfs /dev in the chroot with the fake GPUs (char major 195 is the NVIDIA driver's), then
# `slurmd -G` of the release.
GRES_SCRIPT = """\
set -eu
root=$1 conf=$2 hosts=$3 user=$4 dirs=$5
shift 5
mount -t proc proc "$root/proc"
# From 24.11 slurmd -G also loads the hardware topology (hwloc, /sys) and the cgroup plugin.
mount --rbind /sys "$root/sys"
mount --bind "$conf" "$root/etc/slurm"
mount --bind "$hosts" "$root/etc/hosts"
# From 24.11 `slurmd -G` creates a credential: it needs munged (the rendered auth/munge).
for dir in run var/log var/spool; do mount -t tmpfs -o mode=0755 clustergen "$root/$dir"; done
chroot "$root" sh -c 'for dir in $2; do [ -d "$dir" ] || { mkdir -p "$dir" && chown "$1": "$dir"; }
  done; mkdir -p /run/munge /var/log/munge && chown munge: /run/munge /var/log/munge &&
  runuser -u munge -- munged' sh "$user" "$dirs"
for item in "$@"; do
  node=${item%:*} gpus=${item##*:}
  hostname "$node"
  mount -t tmpfs -o mode=0755 clustergen "$root/dev"
  mknod -m 0666 "$root/dev/null" c 1 3
  mknod -m 0666 "$root/dev/zero" c 1 5
  mknod -m 0666 "$root/dev/urandom" c 1 9
  i=0
  while [ "$i" -lt "$gpus" ]; do mknod -m 0666 "$root/dev/nvidia$i" c 195 "$i"; i=$((i + 1)); done
  echo "MARK $node"
  chroot "$root" slurmd -G 2>&1 && echo "MARK exit 0" || echo "MARK exit $?"
  umount "$root/dev"
done
""".replace("MARK", MARK)


def run_slurmd_gres(
    tree: ReleaseChroot, rendered: Path, work_dir: Path, gpus: Mapping[str, int]
) -> dict[str, SlurmdGresReport]:
    """`slurmd -G` of the release as each node (name -> number of fake /dev/nvidiaN)."""
    prepared = prepare_conf(rendered, work_dir)
    where = [str(tree.root), str(prepared.conf_dir), str(prepared.hosts_file)]
    dirs = " ".join(prepared.directories)
    nodes = [f"{node}:{count}" for node, count in gpus.items()]
    output = _unshare(GRES_SCRIPT, *where, prepared.slurm_user, dirs, *nodes)
    reports = {}
    for node, text in _gres_outputs(output).items():
        output, _, code = text.rpartition(f"{MARK} exit ")
        report = parse.parse_slurmd_gres(node, int(code.strip() or "1"), output)
        noise = (*CHROOT_NOISE, *parse.MACHINE_NOISE)
        kept = [line for line in report.problems if not any(p in line for p in noise)]
        reports[node] = dataclasses.replace(report, problems=kept)
    if set(reports) != set(gpus):
        raise AssertionError(f"slurmd -G did not run for every node:\n{output}")
    return reports


def _gres_outputs(output: str) -> dict[str, str]:
    parts = re.split(rf"^{MARK} (?!exit )(\S+)$", output, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))
