"""Root never hands a system folder to a daemon (issue 21): the folders the slurm role
creates and chowns are judged by catalog/folders.py, and the rule follows what the role
really chowns (roles/slurm/defaults/main.yml) and nothing else in the roles does."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
import yaml

from clustergen.catalog.folders import system_folder
from clustergen.checks.slurm import _CHOWNED_FOLDERS
from clustergen.spec.load import parse_spec
from clustergen.validate import validate_cluster

from support.paths import EXAMPLES, REPO

REFERENCE: dict[str, Any] = yaml.safe_load((EXAMPLES / "ml-training-8node.yaml").read_text())


@pytest.mark.parametrize(
    ("path", "system"),
    [
        ("/", "/"),
        ("/etc", "/etc"),
        ("/etc/slurm", "/etc"),
        ("/usr/bin", "/usr"),
        ("/usr/local/sbin", "/usr"),
        ("/lib64", "/lib64"),
        ("/lib/x86_64-linux-gnu", "/lib"),
        ("/tmp/slurm", "/tmp"),  # anyone can plant a link in /tmp
        ("/var/tmp/slurm", "/var/tmp"),
        ("/var", "/var"),
        ("/var/log", "/var/log"),
        ("/var/spool", "/var/spool"),
        ("/var/lib", "/var/lib"),
        ("/home", "/home"),
        ("/var/spool/slurmctld/../..", "/var"),  # judged where it leads
        ("//etc", "/etc"),
        ("/var/spool/slurmctld", None),
        ("/var/log/slurm", None),
        ("/var/lib/slurm/slurmctld", None),
        ("/srv/slurm/state", None),
        ("/library", None),
    ],
)
def test_system_folders(path: str, system: str | None) -> None:
    assert system_folder(path) == system


def _slurm_directories() -> list[dict[str, str]]:
    defaults = yaml.safe_load((REPO / "roles/slurm/defaults/main.yml").read_text())
    entries: list[dict[str, str]] = defaults["slurm_directories"]
    return entries


def test_the_check_covers_every_folder_the_slurm_role_chowns() -> None:
    """Each entry of slurm_directories reads one slurm.conf key (or slurmdbd.conf's
    LogFile, which clustergen alone writes): StateSaveLocation is slurm.state_save.path,
    the others are in _CHOWNED_FOLDERS with the same owner, mode and folder-or-file."""
    table = {name: (is_folder, owner, mode) for name, is_folder, owner, mode, _ in _CHOWNED_FOLDERS}
    seen = set()
    for entry in _slurm_directories():
        key = re.search(r"slurm(?:_dbd)?_settings\.(\w+)", entry["path"])
        assert key is not None, entry
        name = key[1]
        is_folder = "dirname" not in entry["path"]
        owner = None if "SlurmUser" in entry["owner"] else entry["owner"]
        if "slurm_dbd_settings" in entry["path"]:
            assert name == "LogFile" and not is_folder  # slurmdbd.conf takes no options
            continue
        seen.add(name)
        if name == "StateSaveLocation":
            assert (is_folder, owner, entry["mode"]) == (True, None, "0750")
            continue
        assert table.get(name) == (is_folder, owner, entry["mode"]), name
    assert seen == {"StateSaveLocation", *table}


def test_no_other_role_chowns_a_path_from_the_spec() -> None:
    """The files with a task (or a default) that sets a templated owner: the slurm
    role's directories above, and rendered_files, whose folders are the install paths
    clustergen itself chooses. A new one needs its paths judged here too: host_network
    compares its rendered files in check mode (changes nothing) at the paths its family
    chooses (/etc/systemd/network, /etc/netplan, NetworkManager's system-connections),
    owned by root as their install entries say."""
    templated = set()
    for path in sorted((REPO / "roles").rglob("*.yml")):
        if re.search(r"^\s*owner:\s*\"?\{\{", path.read_text(), flags=re.M):
            templated.add(str(path.relative_to(REPO)))
    assert templated == {
        "roles/host_network/tasks/main.yml",
        "roles/rendered_files/tasks/main.yml",
        "roles/slurm/defaults/main.yml",
        "roles/slurm/tasks/main.yml",
    }


def _codes(change: dict[str, Any]) -> set[str]:
    document = copy.deepcopy(REFERENCE)
    document["slurm"].update(change)
    text = yaml.safe_dump(document, sort_keys=False)
    _, problems = validate_cluster(parse_spec(text, "spec", "spec"))
    return {str(p.code) for p in problems if p.severity == "error"}


@pytest.mark.parametrize(
    "change",
    [
        {"state_save": {"path": "/var/spool"}},
        {"state_save": {"path": "/etc/slurm"}},
        {"options": {"SlurmdSpoolDir": "/var/spool/slurmd/../.."}},  # leads to /var
        {"options": {"slurmctldlogfile": "/var/log/slurmctld.log"}},  # /var/log chowned
        {"options": {"SlurmdLogFile": "/usr/local/bin/slurmd.log"}},
        {"options": {"SlurmUser": "slurm", "SlurmctldLogFile": "/tmp/slurmctld.log"}},
        # Below /var/lib, /var/spool and /run, trees root runs from (catalog/folders.py
        # ROOT_TREES): SlurmUser owning the package database replaces maintainer scripts.
        {"options": {"SlurmdLogFile": "/var/lib/dpkg/slurmd.log"}},
        {"options": {"SlurmctldLogFile": "/var/spool/cron/slurmctld.log"}},
        {"options": {"SlurmctldLogFile": "/run/systemd/slurmctld.log"}},
        {"options": {"SlurmctldLogFile": "/var/log/journal/slurmctld.log"}},
        {"state_save": {"path": "/var/lib/clustergen/state"}},
    ],
)
def test_a_system_folder_the_role_would_chown_is_refused(change: dict[str, Any]) -> None:
    assert "slurm.system-folder" in _codes(change)


@pytest.mark.parametrize(
    "change",
    [
        {"state_save": {"path": "/var/lib/slurm/slurmctld"}},
        {"options": {"SlurmdSpoolDir": "/var/spool/slurmd/%n"}},
        {"options": {"SlurmctldLogFile": "/var/log/slurm/ctld.log"}},
        {"options": {"SlurmdLogFile": "/srv/logs/slurmd.log"}},
        {"options": {"SlurmdLogFile": "/var/log/slurm-llnl/slurmd.log"}},
        {"options": {"SlurmdSpoolDir": "/var/lib/dpkg/spool"}},  # root's, 0755: no chown
    ],
)
def test_a_folder_of_slurms_own_is_accepted(change: dict[str, Any]) -> None:
    assert "slurm.system-folder" not in _codes(change)
