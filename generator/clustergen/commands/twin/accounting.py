"""Accounting for the local daemons: the rendered slurmdbd.conf pointed at a private
MariaDB, and that MariaDB (data directory, user, command line)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from clustergen.commands.twin.conf import SITE_ONLY_SLURMDBD_CONF, conf_values, rewrite_conf
from clustergen.commands.twin.layout import TwinPaths
from clustergen.commands.twin.process import Daemon, DaemonOwner, log_tail, run_checked, wait_until

# Credential of the private MariaDB only; the rendered slurmdbd.conf has no
# StoragePass line (the Ansible role appends the real one from a vault).
DB_PASSWORD = "clustergen-local-only"
DEFAULT_DB_USER = "slurm"


@dataclass(frozen=True)
class SlurmdbdConf:
    text: str
    db_user: str  # the rendered StorageUser, created in the private MariaDB
    overridden: list[str]  # rendered lines replaced or dropped


def write_slurmdbd_conf(
    rendered: str, paths: TwinPaths, *, dbd_port: int, mariadb_port: int
) -> SlurmdbdConf:
    """The rendered slurmdbd.conf with only host, port, credentials and paths replaced,
    written to etc/slurmdbd.conf."""
    users = conf_values(rendered, "StorageUser")
    replace = {
        "AuthType": "auth/none",
        "DbdHost": "localhost",
        "DbdAddr": "127.0.0.1",
        "DbdPort": str(dbd_port),
        "SlurmUser": "root",
        "LogFile": str(paths.log / "slurmdbd.log"),
        "PidFile": str(paths.run / "slurmdbd.pid"),
        "StorageHost": "127.0.0.1",
        "StoragePort": str(mariadb_port),
        "StoragePass": DB_PASSWORD,
    }
    db_user = users[-1] if users else DEFAULT_DB_USER
    if not users:
        replace["StorageUser"] = db_user
    rewrite = rewrite_conf(rendered, replace=replace, drop=SITE_ONLY_SLURMDBD_CONF)
    conf = paths.etc / "slurmdbd.conf"
    conf.write_text(rewrite.text)
    conf.chmod(0o600)  # slurmdbd insists: it holds StoragePass
    return SlurmdbdConf(rewrite.text, db_user, rewrite.overridden)


def install_mariadb(db_dir: Path, user: str) -> Path:
    """A fresh data directory in db_dir/data; returns the init file that creates `user`."""
    run_checked(
        [
            "mariadb-install-db",
            "--no-defaults",
            f"--datadir={db_dir / 'data'}",
            "--user=root",
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
            "--skip-name-resolve",
        ]
    )
    init_sql = db_dir / "init.sql"
    init_sql.write_text(database_init_sql(user, "127.0.0.1"))
    return init_sql


def database_init_sql(user: str, host: str, database: str | None = None) -> str:
    """SQL that creates the slurmdbd user, and its database when `database` is given.

    Create the database before slurmdbd starts, as the slurm role does (community.mysql
    mysql_db in roles/slurm/tasks/database_user.yml): when slurmdbd 24.11 or 26.05 creates
    it itself, it connects again on the same handle after the failed first connect, and
    libmariadb 3.4 (MariaDB 11.8, Debian 13 and sid) then refuses every result set with
    error 5027 "Number of columns in result (=1) set execeeds maxmimum allowed number of
    columns (=0)", so slurmdbd dies in _check_mysql_concat_is_sane
    (src/database/mysql_common.c, mysql_db_get_db_connection, slurm-24-11-5-1).
    """
    name = user.replace("'", "")
    lines = [
        f"CREATE USER '{name}'@'{host}' IDENTIFIED BY '{DB_PASSWORD}';",
        f"GRANT ALL PRIVILEGES ON *.* TO '{name}'@'{host}';",
    ]
    if database is not None:
        lines.append(f"CREATE DATABASE IF NOT EXISTS `{database.replace('`', '')}`;")
    return "\n".join(lines) + "\n"


def mariadb_argv(db_dir: Path, run_dir: Path, port: int, error_log: Path) -> list[str]:
    return [
        "mariadbd",
        "--no-defaults",
        f"--datadir={db_dir / 'data'}",
        "--user=root",
        f"--port={port}",
        "--bind-address=127.0.0.1",
        f"--socket={mariadb_socket(run_dir, port)}",
        f"--pid-file={run_dir / 'mariadbd.pid'}",
        f"--log-error={error_log}",
        "--skip-name-resolve",
        f"--init-file={db_dir / 'init.sql'}",
        # Below these slurmdbd logs "Database settings not recommended values".
        "--innodb-buffer-pool-size=1G",
        "--innodb-log-file-size=64M",
        "--innodb-lock-wait-timeout=900",
    ]


def mariadb_ready(error_log: Path) -> bool:
    return "ready for connections" in log_tail(error_log)


def mariadb_socket(run_dir: Path, port: int) -> Path:
    # A Unix socket path must fit in 108 bytes; a deep temporary directory may not.
    socket_path = run_dir / "mariadbd.sock"
    if len(str(socket_path)) < 100:
        return socket_path
    return Path(f"/tmp/clustergen-mariadbd-{port}.sock")


def start_mariadb(
    owner: DaemonOwner,
    *,
    db_dir: Path,
    run_dir: Path,
    port: int,
    user: str,
    where: Callable[[Sequence[str]], list[str]] = list,
) -> Daemon:
    """Install a fresh data directory, start mariadbd (its argv passed through `where`,
    e.g. into a namespace) as one of owner's daemons, and wait until it accepts
    connections."""
    install_mariadb(db_dir, user)
    error_log = owner.log_dir / "mariadb.log"
    daemon = owner._start(
        "mariadbd", where(mariadb_argv(db_dir, run_dir, port, error_log)), log=error_log
    )
    wait_until(lambda: mariadb_ready(error_log), [daemon], "mariadbd to accept connections")
    return daemon
