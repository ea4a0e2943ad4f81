"""Pull mode (ansible.pull, docs/ansible.md "Pull mode"): what the render adds, the timer's
schedule, the inventory group and its pins, the checks of the OS's ansible-core, and the
rendered clustergen-pull script run for real (git, flock, python3) with a stand-in
ansible-pull: what it records in pull.json on success and on failure, and that a second
run never overlaps the first."""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from clustergen.artifacts import Artifact
from clustergen.checks.ansible import ROLES_MIN_ANSIBLE_CORE, TESTED_MIN_ANSIBLE_CORE
from clustergen.load import load_spec
from clustergen.render import render_all
from clustergen.validate import validate_cluster

from support.ci import require
from support.paths import REPO

BOOTED = REPO / "tests/data/booted-3node.yaml"
PULL = {
    "repository": "file:///srv/site.git",
    "ref": "release-7",
    "path": "clusters/booted",
    "every": "15min",
    "jitter": "5min",
}
PULL_FILES = {
    "pull/pull.env",
    "pull/clustergen-pull",
    "pull/clustergen-pull.service",
    "pull/clustergen-pull.timer",
    "files/groups/ansible_pull.yml",
    "inventory/group_vars/ansible_pull.yml",
}


def _render(data: dict[str, object], directory: Path) -> dict[str, Artifact]:
    spec = directory / "spec.yaml"
    spec.write_text(yaml.safe_dump(data), encoding="utf-8")
    cluster, problems = validate_cluster(load_spec(str(spec)))
    assert cluster is not None, [p.format() for p in problems]
    return render_all(cluster)


@pytest.fixture(scope="module")
def renders(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Artifact], ...]:
    """(the booted spec on Debian 13 as it is, the same with ansible.pull)."""
    data = yaml.safe_load(BOOTED.read_text(encoding="utf-8"))
    data["software"].update(os="debian-13", slurm="24.11.5")
    push = _render(data, tmp_path_factory.mktemp("push"))
    data["ansible"] = {"pull": PULL}
    return push, _render(data, tmp_path_factory.mktemp("pull"))


def test_pull_adds_its_files_group_and_pins_and_nothing_else_but_the_stamp(
    renders: tuple[dict[str, Artifact], ...],
) -> None:
    push, pull = renders
    assert set(pull) - set(push) == PULL_FILES
    assert set(push) - set(pull) == set()
    changed = {p for p in push if push[p].text != pull[p].text}
    # The inventory has the group; all.yml's release stamp covers the new files.
    assert changed == {"inventory/hosts.yml", "inventory/group_vars/all.yml", "versions.lock"}
    pins = yaml.safe_load(pull["inventory/group_vars/ansible_pull.yml"].text)
    assert pins["ansible_pull_packages"] == {
        "ansible": "12.0.0+dfsg-*",
        "ansible-core": "2.19.11-*",
        "git": "1:2.47.3-*",
    }
    hosts = yaml.safe_load(pull["inventory/hosts.yml"].text)
    every_profile = set(hosts["all"]["children"]["ansible_pull"]["children"])
    assert every_profile == {name for name in hosts["all"]["children"] if name.startswith("hw_")}


def test_the_timer_and_settings_carry_the_spec(renders: tuple[dict[str, Artifact], ...]) -> None:
    pull = renders[1]
    timer = pull["pull/clustergen-pull.timer"].text
    assert re.findall(r"^(On\w+Sec|RandomizedDelaySec)=(\S+)$", timer, re.M) == [
        ("OnActiveSec", "15min"),
        ("OnUnitActiveSec", "15min"),
        ("RandomizedDelaySec", "5min"),
    ]
    assert "WantedBy=timers.target" in timer
    service = pull["pull/clustergen-pull.service"].text
    assert "Type=oneshot" in service and "ExecStart=/usr/local/sbin/clustergen-pull" in service
    env = pull["pull/pull.env"].text
    assert "CLUSTERGEN_PULL_REPOSITORY='file:///srv/site.git'" in env
    assert "CLUSTERGEN_PULL_REF='release-7'" in env
    assert "CLUSTERGEN_PULL_PATH='clusters/booted'" in env
    script = pull["pull/clustergen-pull"]
    assert script.mode == 0o755 and script.install is not None
    assert (script.install.dest, script.install.mode) == ("/usr/local/sbin/clustergen-pull", 0o755)
    listed = yaml.safe_load(pull["files/groups/ansible_pull.yml"].text)
    timer_entry = next(e for e in listed if e["dest"].endswith(".timer"))
    assert timer_entry["notify"] == "Restart clustergen-pull.timer"


def test_the_script_is_shellcheck_clean(
    renders: tuple[dict[str, Artifact], ...], tmp_path: Path
) -> None:
    require("shellcheck")
    path = tmp_path / "clustergen-pull"
    path.write_text(renders[1]["pull/clustergen-pull"].text, encoding="utf-8")
    proc = subprocess.run(
        ["shellcheck", "--severity=style", str(path)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout


# A stand-in for ansible-pull: the real checkout (git clone, then fetch and check out the
# ref), its arguments recorded, and the run's status from the commit's FAIL file.
FAKE_PULL = """#!/bin/bash
set -e
echo "$@" >> "$PULL_ARGS"
echo "$ANSIBLE_CONFIG $ANSIBLE_INVENTORY" >> "$PULL_ARGS.env"
while [ $# -gt 1 ]; do
  case "$1" in -U) url=$2; shift 2;; -C) ref=$2; shift 2;; -d) dest=$2; shift 2;; *) shift;; esac
done
[ -d "$dest/.git" ] || git clone -q "$url" "$dest"
git -C "$dest" fetch -q origin && git -C "$dest" checkout -q --detach "origin/$ref"
if [ -f "$dest/FAIL" ]; then
  printf 'TASK [slurm : Write slurm.conf]\nfatal: [node1]: FAILED! => changed=false\n'
  printf '  msg: Device or resource busy\n\nPLAY RECAP\n'
  echo "node1 : ok=3 changed=0 unreachable=0 failed=1"
  exit 2
fi
echo "PLAY RECAP *****"
echo "node1                      : ok=12   changed=0    unreachable=0    failed=0"
"""


def _site(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """A git repository, the script with its paths moved under tmp_path, and its env."""
    origin = tmp_path / "origin"
    git = ["git", "-C", str(origin), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(origin)], check=True)
    (origin / "site.yml").write_text("---\n", encoding="utf-8")
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "r1"], check=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ansible-pull").write_text(FAKE_PULL, encoding="utf-8")
    (bin_dir / "ansible-pull").chmod(0o755)
    (tmp_path / "pull.env").write_text(
        f"CLUSTERGEN_PULL_REPOSITORY='{origin}'\nCLUSTERGEN_PULL_REF='main'\n"
        "CLUSTERGEN_PULL_PATH=''\n",
        encoding="utf-8",
    )
    (tmp_path / "pull-node.env").write_text("CLUSTERGEN_PULL_NODE='node1'\n", encoding="utf-8")
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "PULL_ARGS": str(tmp_path / "args"),
    }
    return origin, tmp_path / "state/pull.json", env


def _script(text: str, tmp_path: Path) -> Path:
    for old, new in (
        ("/etc/clustergen/pull.env", tmp_path / "pull.env"),
        ("/etc/clustergen/pull-node.env", tmp_path / "pull-node.env"),
        ("/etc/clustergen/vault-password", tmp_path / "vault-password"),
        ("/etc/clustergen/pull-secrets.yml", tmp_path / "pull-secrets.yml"),
        ("/var/lib/clustergen/site", tmp_path / "checkout"),
        ("/var/lib/clustergen/pull.json", tmp_path / "state/pull.json"),
        ("/run/clustergen-pull.lock", tmp_path / "lock"),
    ):
        assert old in text, old
        text = text.replace(old, str(new))
    path = tmp_path / "clustergen-pull"
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)
    return path


def test_the_script_records_each_run_and_keeps_the_last_good_commit(
    renders: tuple[dict[str, Artifact], ...], tmp_path: Path
) -> None:
    require("git", "flock")
    origin, state, env = _site(tmp_path)
    script = _script(renders[1]["pull/clustergen-pull"].text, tmp_path)
    head = ["git", "-C", str(origin), "rev-parse", "HEAD"]
    good = subprocess.run(head, check=True, capture_output=True, text=True).stdout.strip()
    assert subprocess.run([script], env=env, capture_output=True).returncode == 0
    first = json.loads(state.read_text(encoding="utf-8"))
    assert (first["commit"], first["result"], first["last_good"]) == (good, "ok", good)
    assert first["recap"] == "node1 : ok=12 changed=0 unreachable=0 failed=0"
    args = (tmp_path / "args").read_text(encoding="utf-8").split()
    assert args[args.index("--limit") + 1] == "node1"
    # The tree's inventory and ansible.cfg by environment, never -i: ansible-pull would
    # run its checkout step on this node's inventory entry too.
    assert "-i" not in args and {"--full", "--clean"} <= set(args)
    checkout = tmp_path / "checkout"
    assert (tmp_path / "args.env").read_text(encoding="utf-8").split() == [
        f"{checkout}/ansible.cfg",
        f"{checkout}/inventory",
    ]
    assert args[-1] == "site.yml" and "--vault-password-file" not in args
    assert not any(a.startswith("@") for a in args)

    # A commit whose run fails: recorded as failed, the last good commit kept, exit 1.
    (origin / "FAIL").write_text("", encoding="utf-8")
    git = ["git", "-C", str(origin), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "r2"], check=True)
    bad = subprocess.run(head, check=True, capture_output=True, text=True).stdout.strip()
    (tmp_path / "vault-password").write_text("x\n", encoding="utf-8")
    (tmp_path / "pull-secrets.yml").write_text("vault_munge_key: x\n", encoding="utf-8")
    assert subprocess.run([script], env=env, capture_output=True).returncode == 1
    second = json.loads(state.read_text(encoding="utf-8"))
    assert (second["commit"], second["result"], second["last_good"]) == (bad, "failed", good)
    assert second["ref"] == "main"
    assert second["failure"] == [
        "fatal: [node1]: FAILED! => changed=false",
        "  msg: Device or resource busy",
    ]
    assert second["tail"][-1] == "node1 : ok=3 changed=0 unreachable=0 failed=1"
    assert second["recap"] == "node1 : ok=3 changed=0 unreachable=0 failed=1"
    last_args = (tmp_path / "args").read_text(encoding="utf-8").splitlines()[-1].split()
    assert last_args[last_args.index("--vault-password-file") + 1] == str(
        tmp_path / "vault-password"
    )
    assert f"@{tmp_path / 'pull-secrets.yml'}" in last_args


def test_a_run_never_overlaps_another(
    renders: tuple[dict[str, Artifact], ...], tmp_path: Path
) -> None:
    require("git", "flock")
    _, state, env = _site(tmp_path)
    script = _script(renders[1]["pull/clustergen-pull"].text, tmp_path)
    with open(tmp_path / "lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        proc = subprocess.run([script], env=env, capture_output=True, text=True)
    assert proc.returncode == 0 and "another run holds" in proc.stderr
    assert not (tmp_path / "args").exists() and not state.exists()


def test_the_checks_follow_the_roles_and_the_tested_ansible_core() -> None:
    """checks.ansible's two versions are the roles' min_ansible_version and the oldest
    ansible-core of the lock CI installs."""
    metas = sorted((REPO / "roles").glob("*/meta/main.yml"))
    declared = {yaml.safe_load(m.read_text())["galaxy_info"]["min_ansible_version"] for m in metas}
    assert declared == {".".join(map(str, ROLES_MIN_ANSIBLE_CORE))}
    pins = re.findall(
        r"^ansible-core==(\d+)\.(\d+)\.", (REPO / "tests/requirements.txt").read_text(), re.M
    )
    assert min((int(a), int(b)) for a, b in pins) == TESTED_MIN_ANSIBLE_CORE
