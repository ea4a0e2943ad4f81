"""An external accounting database (slurm.accounting.database.host): slurmdbd.conf names
it, and the slurm role's database tasks install no MariaDB, wait for the server's port
and check that slurmdbd's user gets in, against a real MariaDB standing in for the site's.

The server is a private mariadbd on 127.0.0.2 (not a name the role counts as its own
host), holding what docs/ansible.md asks the site to provide: the database, the user from
any host and the grant. The role's own tasks (tasks/settings.yml, tasks/database.yml)
run from the rendered tree by ansible-playbook on this machine for the slurmdbd host.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from clustergen.cli import main
from clustergen.commands.twin.accounting import install_mariadb, mariadb_argv, mariadb_ready

from support.ansible_testbed import READ_SLURM_SETTINGS
from support.ci import require, tool
from support.paths import EXAMPLES

pytestmark = pytest.mark.daemons

DB_HOST = "127.0.0.2"
DB_PASSWORD = "external-db-test-only"
DB_NAME = "slurm_acct_db"
DB_USER = "slurm"

DATABASE_PLAYBOOK = (
    """\
- name: The accounting database tasks on the slurmdbd host
  hosts: slurm_dbd
  connection: local
  gather_facts: false
  vars:
    # This machine's Debian Python, which has apt's bindings (the package task).
    ansible_python_interpreter: /usr/bin/python3
    clustergen_start_services: true
    slurm_database_wait_seconds: {wait}
  tasks:
"""
    + READ_SLURM_SETTINGS
    + """\
    - name: The role's database tasks
      ansible.builtin.include_role:
        name: slurm
        tasks_from: database.yml
"""
)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((DB_HOST, 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def site_database(tmp_path: Path) -> Iterator[int]:
    """The site's MariaDB on DB_HOST:port, with the database, the user and the grant."""
    require("mariadbd", "mariadb-install-db", "mysql", root=True)
    db_dir = tmp_path / "db"
    run_dir = tmp_path / "run"
    db_dir.mkdir()
    run_dir.mkdir()
    install_mariadb(db_dir, DB_USER)
    (db_dir / "init.sql").write_text(
        f"CREATE DATABASE {DB_NAME};\n"
        f"CREATE USER '{DB_USER}'@'%' IDENTIFIED BY '{DB_PASSWORD}';\n"
        f"GRANT ALL ON {DB_NAME}.* TO '{DB_USER}'@'%';\n"
    )
    port = _free_port()
    error_log = tmp_path / "mariadb.log"
    argv = [
        f"--bind-address={DB_HOST}" if arg.startswith("--bind-address=") else arg
        for arg in mariadb_argv(db_dir, run_dir, port, error_log)
    ]
    server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not mariadb_ready(error_log):
            assert server.poll() is None, error_log.read_text()
            assert time.monotonic() < deadline, "mariadbd did not start"
            time.sleep(0.2)
        yield port
    finally:
        server.terminate()
        server.wait(timeout=60)


def _render(tmp_path: Path, port: int) -> Path:
    spec: dict[str, Any] = yaml.safe_load((EXAMPLES / "ml-training-8node.yaml").read_text())
    spec["slurm"]["accounting"]["database"] = {"host": DB_HOST, "port": port}
    path = tmp_path / "external-db.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    out = tmp_path / "out"
    assert main(["render", str(path), "-o", str(out)]) == 0
    return out


def _run(out: Path, wait: int, password: str = DB_PASSWORD) -> subprocess.CompletedProcess[str]:
    (out / "database.yml").write_text(DATABASE_PLAYBOOK.format(wait=wait))
    (out / "vault.yml").write_text(yaml.safe_dump({"vault_slurmdbd_storage_pass": password}))
    playbook = tool("ansible-playbook")
    assert playbook is not None
    env = {
        **os.environ,
        "PATH": f"{Path(playbook).parent}:{os.environ.get('PATH', '')}",
        "ANSIBLE_STDOUT_CALLBACK": "json",
        "ANSIBLE_LOCALHOST_WARNING": "false",
        "NO_COLOR": "1",
    }
    return subprocess.run(
        [playbook, "database.yml", "-e", "@vault.yml"],
        cwd=out,
        env=env,
        capture_output=True,
        text=True,
    )


def _results(proc: subprocess.CompletedProcess[str]) -> dict[str, dict[str, Any]]:
    """Each task's result on slurm-head, by task name (without its role's prefix)."""
    plays = json.loads(proc.stdout)["plays"]
    return {
        task["task"]["name"].removeprefix("slurm : "): task["hosts"]["slurm-head"]
        for task in plays[0]["tasks"]
        if "slurm-head" in task["hosts"]
    }


def test_external_database_is_waited_for_and_never_installed(
    tmp_path: Path, site_database: int
) -> None:
    require("ansible-playbook")
    out = _render(tmp_path, site_database)
    slurmdbd_conf = (out / "slurm/slurmdbd.conf").read_text()
    assert f"StorageHost={DB_HOST}\n" in slurmdbd_conf
    assert f"StoragePort={site_database}\n" in slurmdbd_conf
    assert DB_PASSWORD not in slurmdbd_conf and "StoragePass" not in slurmdbd_conf.replace(
        "# StoragePass", ""
    )

    proc = _run(out, wait=30)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr
    results = _results(proc)
    # No MariaDB server on the slurmdbd host, and no database or user made there.
    for skipped in (
        "Install MariaDB for the accounting database",
        "Enable and start MariaDB",
        "Wait for MariaDB to answer",
        "Create the accounting database, its user and the grant",
    ):
        assert results[skipped].get("skipped") is True, (skipped, results[skipped])
    waited = results["Wait for the external accounting database to answer on its port"]
    assert not waited.get("skipped") and not waited.get("failed"), waited
    assert waited["port"] == site_database
    checked = results["Check that the accounting database answers slurmdbd's user"]
    # no_log: the result is censored, and the password is nowhere in the output.
    assert not checked.get("failed") and not checked.get("skipped") and "censored" in checked
    assert DB_PASSWORD not in proc.stdout

    # The check is the server's answer: another password is refused there.
    wrong = _run(out, wait=30, password="not-" + DB_PASSWORD)
    assert wrong.returncode != 0
    assert _results(wrong)["Check that the accounting database answers slurmdbd's user"]["failed"]


def test_unreachable_external_database_fails_naming_it(tmp_path: Path) -> None:
    require("ansible-playbook", "mysql")
    port = _free_port()  # nothing listens there
    out = _render(tmp_path, port)
    proc = _run(out, wait=3)
    assert proc.returncode != 0
    waited = _results(proc)["Wait for the external accounting database to answer on its port"]
    assert waited.get("failed") is True
    assert f"the accounting database {DB_HOST}:{port}" in waited["msg"]
