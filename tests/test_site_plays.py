"""The site repository's playbooks and roles, read as Ansible reads them.

site.yml's header promises that every play becomes root itself, so the documented
admin user (SSH keys, sudo) needs no -b; the booted test (tests/test_booted_cluster.py)
runs site.yml that way, but only on the plays its spec has nodes for.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from support.ci import skip_or_fail, tool
from support.paths import REPO

PLAYBOOKS = ("site.yml", "verify.yml")
# What makes a play run something on its hosts.
PLAY_WORK = ("roles", "tasks", "pre_tasks", "post_tasks", "handlers")


def _plays(playbook: str) -> list[dict[str, Any]]:
    plays = yaml.safe_load((REPO / playbook).read_text(encoding="utf-8"))
    assert isinstance(plays, list) and plays, playbook
    return plays


def _become_false(node: object, where: str) -> list[str]:
    """Every place below `node` that turns become off."""
    found = []
    if isinstance(node, dict):
        if node.get("become") is False or str(node.get("become")).lower() in ("false", "no"):
            found.append(f"{where}: {node.get('name', node.get('role', '?'))}")
        for key, value in node.items():
            found += _become_false(value, f"{where}.{key}")
    elif isinstance(node, list):
        for index, item in enumerate(node):
            found += _become_false(item, f"{where}[{index}]")
    return found


@pytest.mark.parametrize("playbook", PLAYBOOKS)
def test_every_play_that_works_on_nodes_becomes_root(playbook: str) -> None:
    plays = [play for play in _plays(playbook) if any(key in play for key in PLAY_WORK)]
    assert plays
    without = [play["name"] for play in plays if play.get("become") is not True]
    assert without == [], f"{playbook}: plays that do not become root: {without}"
    assert _become_false(plays, playbook) == []


def test_no_role_turns_become_off() -> None:
    found = []
    for path in sorted((REPO / "roles").rglob("*.yml")):
        found += _become_false(yaml.safe_load(path.read_text(encoding="utf-8")), str(path))
    assert found == []


# --- the MUNGE key check -------------------------------------------------------------

MUNGE_TASKS = REPO / "roles" / "munge" / "tasks" / "main.yml"
MUNGE_KEY = bytes(range(256)) * 4  # what mungekey writes by default: 1 KiB


def _munge_key_check(value: object, tmp_path: Path) -> tuple[int, str]:
    """The munge role's key check (its first two tasks: the judgement, which logs
    nothing, and the assert on it) on this machine, with the vault variable set to value."""
    ansible_playbook = tool("ansible-playbook")
    if ansible_playbook is None:
        skip_or_fail("needs ansible-playbook")
    check = yaml.safe_load(MUNGE_TASKS.read_text(encoding="utf-8"))[:2]
    play = [
        {
            "name": "MUNGE key check",
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": False,
            "vars": {
                "ansible_python_interpreter": sys.executable,
                "munge_key_variable": "vault_site_munge_key",
                "vault_site_munge_key": value,
            },
            "tasks": check,
        }
    ]
    playbook = tmp_path / "check.yml"
    playbook.write_text(json.dumps(play), encoding="utf-8")
    env = {
        **os.environ,
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_LOCALHOST_WARNING": "0",
        "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0",
    }
    result = subprocess.run(
        [ansible_playbook, "-i", "localhost,", str(playbook)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    return result.returncode, result.stdout + result.stderr


def test_munge_key_check_is_the_roles_first_task() -> None:
    tasks = yaml.safe_load(MUNGE_TASKS.read_text(encoding="utf-8"))
    # The judgement reads the key and logs nothing; the assert reads only the judgement.
    assert "ansible.builtin.set_fact" in tasks[0] and tasks[0]["no_log"] is True
    assert "ansible.builtin.assert" in tasks[1] and "lookup" not in json.dumps(tasks[1])
    decoding = [i for i, task in enumerate(tasks) if "b64decode" in json.dumps(task)]
    assert decoding and min(decoding) > 1


@pytest.mark.parametrize(
    "key",
    [
        base64.b64encode(MUNGE_KEY).decode(),
        base64.b64encode(b"k" * 32).decode(),
        # base64 without -w0 wraps at 76 characters; b64decode skips the line breaks.
        base64.encodebytes(MUNGE_KEY).decode(),
    ],
    ids=["1024-bytes", "32-bytes", "wrapped"],
)
def test_munge_key_check_passes_a_key_munge_accepts(key: str, tmp_path: Path) -> None:
    code, output = _munge_key_check(key, tmp_path)
    assert code == 0, output
    assert key not in output


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("", "it is not set or empty"),
        ("not base64: a passphrase!", "it is not base64"),
        # Right alphabet, wrong length: b64decode fails on the padding.
        (base64.b64encode(MUNGE_KEY).decode()[:-1], "it is not base64"),
        (base64.b64encode(b"k" * 31).decode(), "it decodes to 31 bytes"),
        (base64.b64encode(b"k" * 1025).decode(), "it decodes to 1025 bytes"),
    ],
    ids=["empty", "not-base64", "truncated", "too-short", "too-long"],
)
def test_munge_key_check_names_the_variable_and_what_is_wrong(
    key: str, why: str, tmp_path: Path
) -> None:
    code, output = _munge_key_check(key, tmp_path)
    assert code != 0, output
    assert "TASK [Check that the cluster's MUNGE key" in output, output
    assert "The vault variable vault_site_munge_key must hold" in output, output
    assert why in output, output
    if len(key) > 8:
        assert key not in output, "the check must not print the key"


# Trays t1-t3 in one NVLink domain, t4-t5 in another (listed in the inventory the other
# way round: the roll-out takes domains by group name), g1 and g2 outside any domain;
# everything rolls but t2.
ROLLOUT_INVENTORY = {
    "all": {
        "children": {
            "nvidia_gpu": {"hosts": dict.fromkeys(["t4", "t5", "g1", "t1", "t2", "t3", "g2"])},
            "nvlink_domain_rack_b": {"hosts": dict.fromkeys(["t4", "t5"])},
            "nvlink_domain_rack_a": {"hosts": dict.fromkeys(["t1", "t2", "t3"])},
        }
    }
}


def _rollout_batches(tmp_path: Path, *extra: str) -> list[list[str]]:
    """site.yml's roll-out play, its hosts, vars and serial as written, with one task that
    prints each batch, after a play that makes nvidia_driver_rollout as plan.yml does."""
    ansible_playbook = tool("ansible-playbook")
    if ansible_playbook is None:
        skip_or_fail("needs ansible-playbook")
    (roll_out,) = [p for p in _plays("site.yml") if p.get("vars", {}).get("nvidia_driver_rolling")]
    plays = [
        {
            "name": "plan",
            "hosts": "all",
            "gather_facts": False,
            "tasks": [
                {
                    "ansible.builtin.group_by": {
                        "key": "{{ 'nvidia_driver_rollout' "
                        "if inventory_hostname != 't2' else 'current' }}"
                    }
                }
            ],
        },
        {
            "name": roll_out["name"],
            "hosts": roll_out["hosts"],
            "gather_facts": False,
            "vars": roll_out["vars"],
            "serial": roll_out["serial"],
            "tasks": [
                {
                    "ansible.builtin.debug": {"msg": "BATCH {{ ansible_play_batch | join(' ') }}"},
                    "run_once": True,
                }
            ],
        },
    ]
    playbook = tmp_path / "rollout.yml"
    playbook.write_text(json.dumps(plays), encoding="utf-8")
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(json.dumps(ROLLOUT_INVENTORY), encoding="utf-8")
    env = {**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCALHOST_WARNING": "0"}
    result = subprocess.run(
        [ansible_playbook, "-i", str(inventory), "-c", "local", str(playbook),
         "-e", f"ansible_python_interpreter={sys.executable}", *extra],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    # The message as JSON or YAML (the repository's ansible.cfg: callback_result_format).
    return [found[1].split() for found in re.finditer(r"msg\"?: \"?BATCH ([\w ]+)", result.stdout)]


@pytest.mark.parametrize(
    ("extra", "batches"),
    [
        ((), [["t1", "t3"], ["t4", "t5"], ["g1"], ["g2"]]),
        (("-e", "clustergen_driver_domains_per_batch=2"),
         [["t1", "t3", "t4", "t5"], ["g1"], ["g2"]]),
        (("-e", "clustergen_driver_batch_size=2"), [["t1", "t3"], ["t4", "t5"], ["g1", "g2"]]),
    ],
)  # fmt: skip
def test_the_roll_out_takes_each_nvlink_domain_whole(
    tmp_path: Path, extra: tuple[str, ...], batches: list[list[str]]
) -> None:
    """The rolling trays of a domain in one batch (a domain runs one driver and IMEX across
    its trays), the domains by group name, then the other GPU nodes in inventory order,
    as `clustergen plan` lists them (commands/plan.driver_batches)."""
    assert _rollout_batches(tmp_path, *extra) == batches
