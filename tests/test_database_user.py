"""The local accounting database's user, made by the slurm role's own tasks
(roles/slurm/tasks/database_user.yml: community.mysql's modules as root over the socket)
against a real, private MariaDB, with passwords that broke the hand-quoted SQL before:
a backslash (stored as another password) and a quote followed by SQL (which ran).

Each password must round-trip (the mysql client logs in with exactly it, as slurmdbd
does), the server must hold no user but its own and slurmdbd's afterwards, a second run
changes nothing, and no password reaches the output.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from clustergen.cli import main
from clustergen.commands.twin.accounting import (
    install_mariadb,
    mariadb_argv,
    mariadb_ready,
    mariadb_socket,
)

from support.ansible_testbed import READ_SLURM_SETTINGS, parse_recap
from support.ci import require, skip_or_fail, tool
from support.paths import EXAMPLES

pytestmark = pytest.mark.daemons

DB_NAME, DB_USER = "slurm_acct_db", "slurm"
BACKSLASH = "ab\\c"
INJECTION = "x\\'; CREATE USER evil@localhost; -- "
USER_TASK = "TASK [slurm : Create the accounting database's user with its password and grant]"

PLAYBOOK = (
    """\
- name: The slurm role's database user tasks on the slurmdbd host
  hosts: slurm_dbd
  connection: local
  gather_facts: false
  vars:
    # This machine's Debian Python, which has PyMySQL (python3-pymysql), as a node has.
    ansible_python_interpreter: /usr/bin/python3
    slurm_database_socket: {socket}
  tasks:
"""
    + READ_SLURM_SETTINGS
    + """\
    - name: The role's database user tasks
      ansible.builtin.include_role:
        name: slurm
        tasks_from: database_user.yml
"""
)


@dataclass(frozen=True)
class Server:
    socket: Path


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    """A fresh MariaDB data directory (root logs in over the socket without a password,
    as root does by unix_socket on a node) and mariadbd on it, on 127.0.0.1 only."""
    require("mariadbd", "mariadb-install-db", "mysql", root=True)
    if subprocess.run(["/usr/bin/python3", "-c", "import pymysql"]).returncode != 0:
        skip_or_fail("needs PyMySQL for /usr/bin/python3 (Debian python3-pymysql)")
    db_dir, run_dir = tmp_path / "db", tmp_path / "run"
    db_dir.mkdir()
    run_dir.mkdir()
    install_mariadb(db_dir, DB_USER).write_text("")  # no user but the server's own
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    error_log = tmp_path / "mariadb.log"
    process = subprocess.Popen(
        mariadb_argv(db_dir, run_dir, port, error_log),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not mariadb_ready(error_log):
            assert process.poll() is None, error_log.read_text()
            assert time.monotonic() < deadline, "mariadbd did not start"
            time.sleep(0.2)
        yield Server(mariadb_socket(run_dir, port))
    finally:
        process.terminate()
        process.wait(timeout=60)


def _mysql(server: Server, sql: str, user: str = "root", password: str | None = None) -> str:
    env = {**os.environ}
    env.pop("MYSQL_PWD", None)
    if password is not None:
        env["MYSQL_PWD"] = password  # taken as it is: no quoting, no escapes
    proc = subprocess.run(
        ["mysql", f"--socket={server.socket}", "-u", user, "-NBe", sql],
        capture_output=True,
        text=True,
        env=env,
    )
    if proc.returncode != 0:
        raise AssertionError(f"mysql -u {user}: {proc.stderr.strip()}")
    return proc.stdout


def _users(server: Server) -> set[tuple[str, str]]:
    rows = _mysql(server, "SELECT user, host FROM mysql.user").splitlines()
    return {(row.split("\t")[0], row.split("\t")[1]) for row in rows}


def _logs_in(server: Server, password: str) -> bool:
    try:
        return _mysql(server, "SELECT 1", DB_USER, password).strip() == "1"
    except AssertionError:
        return False


@pytest.fixture
def rendered(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    assert main(["render", str(EXAMPLES / "ml-training-8node.yaml"), "-o", str(out)]) == 0
    return out


def _apply(out: Path, server: Server, password: str) -> tuple[int, str]:
    """Runs the tasks at -vvv with the vault's password; returns how many tasks changed
    something and the whole output."""
    require("ansible-playbook")
    (out / "database-user.yml").write_text(PLAYBOOK.format(socket=server.socket))
    (out / "vault.yml").write_text(yaml.safe_dump({"vault_slurmdbd_storage_pass": password}))
    playbook = tool("ansible-playbook")
    assert playbook is not None
    env = {
        **os.environ,
        "PATH": f"{Path(playbook).parent}:{os.environ.get('PATH', '')}",
        "ANSIBLE_CONFIG": str(out / "ansible.cfg"),
        "ANSIBLE_LOCALHOST_WARNING": "false",
        "NO_COLOR": "1",
    }
    proc = subprocess.run(
        [playbook, "database-user.yml", "-e", "@vault.yml", "-vvv"],
        cwd=out,
        env=env,
        capture_output=True,
        text=True,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-6000:]
    recap = parse_recap(proc.stdout)
    return recap["slurm-head"]["changed"], output


def _user_task_output(output: str) -> str:
    """What the run printed for the user task, up to the next task."""
    return output.split(USER_TASK, 1)[1].split("\nTASK [", 1)[0]


def test_database_user_round_trips_backslashes_and_quotes(rendered: Path, server: Server) -> None:
    before = _users(server)
    assert (DB_USER, "localhost") not in before

    changed, output = _apply(rendered, server, BACKSLASH)
    assert _logs_in(server, BACKSLASH), "the backslash password was stored as another one"
    assert not _logs_in(server, "abc")
    assert _users(server) == before | {(DB_USER, "localhost")}
    assert BACKSLASH not in output, "the password is in the -vvv output"
    assert "censored" in _user_task_output(output), _user_task_output(output)
    # The database and the user are new: two changes.
    assert changed == 2, output
    grants = _mysql(server, f"SHOW GRANTS FOR '{DB_USER}'@'localhost'")
    assert f"GRANT ALL PRIVILEGES ON `{DB_NAME}`.* TO `{DB_USER}`@`localhost`" in grants, grants
    assert DB_NAME in _mysql(server, "SHOW DATABASES").split()

    changed, output = _apply(rendered, server, BACKSLASH)
    assert changed == 0, f"a second run with the same password changed something:\n{output}"

    # A quote, then SQL: one password, set as it is; no statement of it runs.
    changed, output = _apply(rendered, server, INJECTION)
    assert _users(server) == before | {(DB_USER, "localhost")}, "the password ran as SQL"
    assert _logs_in(server, INJECTION)
    assert not _logs_in(server, BACKSLASH)
    assert INJECTION not in output and "evil" not in output
    assert changed == 1, output
