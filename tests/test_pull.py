"""Pull mode (ansible.pull, docs/ansible.md "Pull mode"): what the render adds, the timer's
schedule, the inventory group and its pins, the checks of the OS's ansible-core, and the
rendered clustergen-pull script run for real (git with SSH-signed commits, flock,
python3) with a stand-in ansible-playbook: what it records in pull.json on success and on
failure, that it applies exactly the branch, tag or commit asked for (never a branch that
shares a tag's name, or is named after the commit), only when signed by an allowed
signer, and that a second run never overlaps the first."""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from clustergen.base import openpgp
from clustergen.base.artifacts import Artifact
from clustergen.checks.ansible import ROLES_MIN_ANSIBLE_CORE, TESTED_MIN_ANSIBLE_CORE
from clustergen.render import render_all
from clustergen.spec.load import load_spec
from clustergen.validate import validate_cluster

from support.ci import require, tool
from support.paths import REPO

BOOTED = REPO / "tests/data/booted-3node.yaml"
# A signer's key, generated once per run for the tests that sign (the spec needs one).
SIGNER_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEjJ3g7C3Sv8wDZrW2Fvm5VXJYd2r7l0c8ZbS8N1n3Xk"
PULL = {
    "repository": "file:///srv/site.git",
    "tag": "release-7",
    "signers": [{"name": "release@site.invalid", "ssh_key": SIGNER_KEY}],
    "path": "clusters/booted",
    "every": "15min",
    "jitter": "5min",
}
PULL_FILES = {
    "pull/pull.env",
    "pull/pull-gitconfig",
    "pull/pull-allowed-signers",
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
        "gpgv": "2.4.7-*",
    }
    hosts = yaml.safe_load(pull["inventory/hosts.yml"].text)
    every_profile = set(hosts["all"]["children"]["ansible_pull"]["children"])
    assert every_profile == {name for name in hosts["all"]["children"] if name.startswith("hw_")}


# An OpenPGP signer's key (ed25519, gpg --export-options export-minimal) and the
# fingerprint `gpg --with-colons --list-keys` gives it.
OPENPGP_KEY = (REPO / "tests/data/openpgp-signer.asc").read_text(encoding="utf-8")
OPENPGP_FINGERPRINT = "67493429344047839EAF222889871402DA9358BF"


def test_openpgp_signers_render_their_keys_and_fingerprints(tmp_path: Path) -> None:
    """An OpenPGP signer beside an SSH one: the keys file holds its key, pull.env its
    primary key's fingerprint, the allowed signers file the SSH signer alone; the
    fingerprint validate computes is gpg's, and a damaged key is no key."""
    data = yaml.safe_load(BOOTED.read_text(encoding="utf-8"))
    data["software"].update(os="debian-13", slurm="24.11.5")
    signer = {"name": "gpg@site.invalid", "gpg_fingerprint": OPENPGP_FINGERPRINT}
    data["ansible"] = {
        "pull": {**PULL, "signers": [*PULL["signers"], {**signer, "gpg_key": OPENPGP_KEY}]}
    }
    files = _render(data, tmp_path)
    keys = files["pull/pull-signers.asc"]
    assert keys.install is not None and keys.install.dest == "/etc/clustergen/pull-signers.asc"
    assert f"# gpg@site.invalid: {OPENPGP_FINGERPRINT}\n{OPENPGP_KEY}" in keys.text
    settings = files["pull/pull.env"].text
    assert f"CLUSTERGEN_PULL_OPENPGP_SIGNERS='{OPENPGP_FINGERPRINT}'\n" in settings
    assert "gpg@site.invalid" not in files["pull/pull-allowed-signers"].text
    assert openpgp.fingerprint(OPENPGP_KEY) == OPENPGP_FINGERPRINT
    # Bytes of the key packet changed (its first base64 line, past the packet header): the
    # fingerprint is another; the packet's tag changed (mD -> tD): no public key at all.
    first = OPENPGP_KEY.splitlines()[2]
    damaged = OPENPGP_KEY.replace(first, first[:20] + "AAAA" + first[24:])
    assert openpgp.fingerprint(damaged) != OPENPGP_FINGERPRINT
    with pytest.raises(openpgp.NotAPublicKey, match="not a public key"):
        openpgp.fingerprint(OPENPGP_KEY.replace("mDME", "tDME", 1))
    with pytest.raises(openpgp.NotAPublicKey, match="base64"):
        openpgp.fingerprint(OPENPGP_KEY.replace("mDME", "m!ME", 1))


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
    assert "CLUSTERGEN_PULL_REF='refs/tags/release-7'" in env
    assert "CLUSTERGEN_PULL_SIGNED='yes'" in env
    signers = pull["pull/pull-allowed-signers"].text.splitlines()
    assert f'release@site.invalid namespaces="git" {SIGNER_KEY}' in signers
    gitconfig = pull["pull/pull-gitconfig"].text
    assert "allowedSignersFile = /etc/clustergen/pull-allowed-signers" in gitconfig
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


# A stand-in for ansible-playbook: its arguments and the checkout it ran in recorded, and
# the run's status from the commit's FAIL file.
FAKE_PLAYBOOK = """#!/bin/bash
echo "$@" >> "$PULL_ARGS"
echo "$PWD $ANSIBLE_CONFIG $(git rev-parse HEAD)" >> "$PULL_ARGS.env"
if [ -f FAIL ]; then
  printf 'TASK [slurm : Write slurm.conf]\\nfatal: [node1]: FAILED! => changed=false\\n'
  printf '  msg: Device or resource busy\\n\\nPLAY RECAP\\n'
  echo "node1 : ok=3 changed=0 unreachable=0 failed=1"
  exit 2
fi
echo "PLAY RECAP *****"
echo "node1                      : ok=12   changed=0    unreachable=0    failed=0"
"""


class Site:
    """The site's repository (origin), a signer's SSH key and another's, and the
    rendered script with its paths moved under the test's folder."""

    def __init__(self, tmp_path: Path, script_text: str) -> None:
        require("git", "flock", "ssh-keygen")
        self.tmp = tmp_path
        self.origin = tmp_path / "origin"
        self.state = tmp_path / "state/pull.json"
        for name in ("signer", "stranger"):
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / name)],
                check=True,
            )
        public = (tmp_path / "signer.pub").read_text(encoding="utf-8").split()
        (tmp_path / "allowed-signers").write_text(
            f'release@site.invalid namespaces="git" {public[0]} {public[1]}\n', encoding="utf-8"
        )
        (tmp_path / "gitconfig").write_text(
            f'[gpg "ssh"]\n\tallowedSignersFile = {tmp_path / "allowed-signers"}\n',
            encoding="utf-8",
        )
        subprocess.run(["git", "init", "-q", "-b", "main", str(self.origin)], check=True)
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        (bin_dir / "ansible-playbook").write_text(FAKE_PLAYBOOK, encoding="utf-8")
        (bin_dir / "ansible-playbook").chmod(0o755)
        (tmp_path / "pull-node.env").write_text("CLUSTERGEN_PULL_NODE='node1'\n", encoding="utf-8")
        self.env = {
            **os.environ,
            "PATH": f"{bin_dir}:{os.environ['PATH']}",
            "PULL_ARGS": str(tmp_path / "args"),
        }
        self.script = _script(script_text, tmp_path)
        self.settings("refs/heads/main")

    def settings(self, ref: str, signed: bool = True, openpgp: str = "") -> None:
        (self.tmp / "pull.env").write_text(
            f"CLUSTERGEN_PULL_REPOSITORY='{self.origin}'\nCLUSTERGEN_PULL_REF='{ref}'\n"
            f"CLUSTERGEN_PULL_SIGNED='{'yes' if signed else 'no'}'\nCLUSTERGEN_PULL_PATH=''\n"
            f"CLUSTERGEN_PULL_OPENPGP_SIGNERS='{openpgp}'\n",
            encoding="utf-8",
        )

    def git(self, *args: str) -> str:
        identity = ["-c", "user.name=t", "-c", "user.email=t@t", "-c", "gpg.format=ssh"]
        result = subprocess.run(
            ["git", "-C", str(self.origin), *identity, *args],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, "GNUPGHOME": str(self.tmp / "gnupg")},
        )
        return result.stdout.strip()

    def openpgp_key(self, name: str) -> tuple[str, str]:
        """A new OpenPGP signing key in the signers' keyring: (fingerprint, armored key)."""
        require("gpg", "gpgv")
        home = self.tmp / "gnupg"
        home.mkdir(mode=0o700, exist_ok=True)
        gpg = ["gpg", "--homedir", str(home), "--batch", "--quiet"]
        uid = f"{name} <{name}@site.invalid>"
        subprocess.run(
            [*gpg, "--passphrase", "", "--quick-gen-key", uid, "ed25519", "sign", "never"],
            check=True,
            capture_output=True,
        )
        listed = subprocess.run(
            [*gpg, "--with-colons", "--list-keys", uid], check=True, capture_output=True, text=True
        ).stdout
        fingerprint = next(line.split(":")[9] for line in listed.splitlines() if line[:4] == "fpr:")
        armored = subprocess.run(
            [*gpg, "--armor", "--export", fingerprint], check=True, capture_output=True, text=True
        ).stdout
        return fingerprint, armored

    def commit(
        self, message: str, key: str | None = "signer", fail: bool = False, openpgp: str = ""
    ) -> str:
        """A release: site.yml (and FAIL, for a run that fails), signed by the SSH `key`,
        or by the OpenPGP key of fingerprint `openpgp` (OpenPgpKeys' keyring)."""
        (self.origin / "site.yml").write_text(f"--- # {message}\n", encoding="utf-8")
        if fail:
            (self.origin / "FAIL").write_text("", encoding="utf-8")
        else:
            (self.origin / "FAIL").unlink(missing_ok=True)
        self.git("add", "-A")
        if openpgp:
            sign = ["-c", "gpg.format=openpgp", "-c", f"user.signingkey={openpgp}"]
            sign += ["commit", "-S"]
        elif key:
            sign = ["-c", f"user.signingkey={self.tmp / key}", "commit", "-S"]
        else:
            sign = ["commit"]
        self.git(*sign, "-q", "-m", message)
        return self.git("rev-parse", "HEAD")

    def run(self, *args: str) -> tuple[int, dict[str, object]]:
        done = subprocess.run([self.script, *args], env=self.env, capture_output=True, text=True)
        return done.returncode, json.loads(self.state.read_text(encoding="utf-8"))

    def applied(self) -> list[str]:
        """The commit each playbook run ran on, in order."""
        lines = (self.tmp / "args.env").read_text(encoding="utf-8").splitlines()
        return [line.split()[-1] for line in lines]


def _script(text: str, tmp_path: Path) -> Path:
    for old, new in (
        ("/etc/clustergen/pull.env", tmp_path / "pull.env"),
        ("/etc/clustergen/pull-node.env", tmp_path / "pull-node.env"),
        ("/etc/clustergen/vault-password", tmp_path / "vault-password"),
        ("/etc/clustergen/pull-secrets.yml", tmp_path / "pull-secrets.yml"),
        ("/etc/clustergen/pull-gitconfig", tmp_path / "gitconfig"),
        ("/etc/clustergen/pull-signers.asc", tmp_path / "pull-signers.asc"),
        ("/etc/clustergen/pull-deploy-key", tmp_path / "deploy-key"),
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
    site = Site(tmp_path, renders[1]["pull/clustergen-pull"].text)
    good = site.commit("r1")
    code, first = site.run()
    assert code == 0, first
    assert (first["commit"], first["result"], first["last_good"]) == (good, "ok", good)
    assert first["recap"] == "node1 : ok=12 changed=0 unreachable=0 failed=0"
    args = (tmp_path / "args").read_text(encoding="utf-8").split()
    assert args[args.index("--limit") + 1] == "node1"
    assert args[args.index("-c") + 1] == "local"
    checkout = tmp_path / "checkout"
    assert args[args.index("-i") + 1] == f"{checkout}/inventory"
    assert (tmp_path / "args.env").read_text(encoding="utf-8").split() == [
        str(checkout),
        f"{checkout}/ansible.cfg",
        good,
    ]
    assert args[-1] == "site.yml" and "--vault-password-file" not in args
    assert not any(a.startswith("@") for a in args)

    # A commit whose run fails: recorded as failed, the last good commit kept, exit 1.
    bad = site.commit("r2", fail=True)
    (tmp_path / "vault-password").write_text("x\n", encoding="utf-8")
    (tmp_path / "pull-secrets.yml").write_text("vault_munge_key: x\n", encoding="utf-8")
    code, second = site.run()
    assert code == 1
    assert (second["commit"], second["result"], second["last_good"]) == (bad, "failed", good)
    assert second["ref"] == "refs/heads/main"
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


@pytest.mark.parametrize("key", [None, "stranger"], ids=["unsigned", "unknown-signer"])
def test_a_release_not_signed_by_a_signer_never_runs(
    renders: tuple[dict[str, Artifact], ...], tmp_path: Path, key: str | None
) -> None:
    """An unsigned commit, or one signed by a key the allowed signers lack, pushed to the
    branch the nodes follow (a force-push, a compromised server): nothing of it runs, the
    node keeps its last good release, and the run is a failure naming the commit."""
    site = Site(tmp_path, renders[1]["pull/clustergen-pull"].text)
    good = site.commit("r1")
    assert site.run()[0] == 0
    planted = site.commit("r2", key=key)
    code, record = site.run()
    assert code == 1
    assert (record["commit"], record["result"], record["last_good"]) == (planted, "failed", good)
    assert any(
        f"commit {planted} (refs/heads/main) is not signed" in line for line in record["failure"]
    )
    assert site.applied() == [good]


def test_an_older_signed_release_is_refused_unless_rolled_back_by_hand(
    renders: tuple[dict[str, Artifact], ...], tmp_path: Path
) -> None:
    """A signature is no proof of freshness: the branch moved back to an older signed
    release (by a compromised server replaying it, or a force-push) is refused while the
    ref stays the same, and the node stays where it is. A revert, which descends, is
    applied; `--allow-rollback` by hand takes the old release once."""
    site = Site(tmp_path, renders[1]["pull/clustergen-pull"].text)
    old = site.commit("r1")
    assert site.run()[0] == 0
    new = site.commit("r2")
    assert site.run()[0] == 0
    site.git("reset", "-q", "--hard", old)
    code, record = site.run()
    assert code == 1 and site.applied() == [old, new]
    assert (record["commit"], record["result"], record["last_good"]) == (old, "failed", new)
    assert any(f"does not descend from {new}" in line for line in record["failure"]), record
    code, record = site.run("--allow-rollback")
    assert code == 0 and site.applied()[-1] == old, record
    # Forward again, then back by a revert: a new commit, so it descends and is applied.
    again = site.commit("r3")
    assert site.run()[0] == 0
    site.git("-c", f"user.signingkey={tmp_path / 'signer'}", "revert", "-S", "--no-edit", again)
    reverted = site.git("rev-parse", "HEAD")
    assert site.run()[0] == 0 and site.applied()[-1] == reverted
    # Another ref asked for (pull.env, from a signed release): its commit is taken as is.
    site.git("checkout", "-q", "--orphan", "other")
    unrelated = site.commit("o1")
    site.settings("refs/heads/other")
    assert site.run()[0] == 0 and site.applied()[-1] == unrelated
    assert subprocess.run([site.script, "--rollback"], env=site.env).returncode == 2


def test_an_openpgp_signed_release_runs_only_when_its_primary_key_is_a_signers(
    renders: tuple[dict[str, Artifact], ...], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """OpenPGP signers (gpg_fingerprint, gpg_key): gpgv checks the signature against the
    rendered keys alone. A release of the signer's key runs; one of a key that is in the
    keys file but whose fingerprint the spec does not name, or of a key in no file, or
    any OpenPGP-signed release where the spec names no OpenPGP signer, never runs."""
    site = Site(tmp_path, renders[1]["pull/clustergen-pull"].text)
    gpgconf = tool("gpgconf")
    if gpgconf:  # the key generation starts an agent, which outlives the test otherwise
        request.addfinalizer(
            lambda: subprocess.run(
                [gpgconf, "--homedir", str(tmp_path / "gnupg"), "--kill", "gpg-agent"],
                check=False,
                capture_output=True,
            )
        )
    signer, signer_key = site.openpgp_key("release")
    listed, listed_key = site.openpgp_key("listed")
    stranger, _ = site.openpgp_key("stranger")
    (tmp_path / "pull-signers.asc").write_text(
        f"# release\n{signer_key}# listed, not a signer\n{listed_key}", encoding="utf-8"
    )
    site.settings("refs/heads/main", openpgp=signer)
    good = site.commit("r1", openpgp=signer)
    code, record = site.run()
    assert code == 0 and record["commit"] == good, record
    for name, key in (("listed", listed), ("stranger", stranger)):
        planted = site.commit(f"by {name}", openpgp=key)
        code, record = site.run()
        assert code == 1 and record["last_good"] == good, record
        assert any(
            f"commit {planted} (refs/heads/main) is not signed" in line
            for line in record["failure"]
        )
        if name == "listed":
            assert any(
                f"the OpenPGP key {listed}, which is no signer's" in line for line in record["tail"]
            )
    site.settings("refs/heads/main")  # SSH signers only
    planted = site.commit("r2", openpgp=signer)
    code, record = site.run()
    assert code == 1 and site.applied() == [good], record
    assert any("the spec names no OpenPGP signer" in line for line in record["tail"]), record
    site.settings("refs/heads/main", openpgp=signer)
    code, record = site.run()
    assert code == 0 and site.applied() == [good, planted], record
    # An SSH-signed release beside OpenPGP signers still goes by the allowed signers file.
    ssh_signed = site.commit("r3")
    assert site.run()[0] == 0 and site.applied()[-1] == ssh_signed


def test_the_tag_asked_for_is_applied_never_a_branch_of_its_name(
    renders: tuple[dict[str, Artifact], ...], tmp_path: Path
) -> None:
    """ansible-core's git module takes a branch before a tag of the same name: a branch
    `release-7` (or one named after the commit asked for) would win. The script resolves
    refs/tags/release-7 and the commit in their own namespaces, and checks HEAD."""
    site = Site(tmp_path, renders[1]["pull/clustergen-pull"].text)
    tagged = site.commit("r1")
    site.git("tag", "release-7", tagged)
    site.git("checkout", "-q", "-b", "release-7")
    branch = site.commit("r2: a branch named as the tag, signed")
    site.git("checkout", "-q", "-b", tagged)  # a branch named as the commit
    site.commit("r3: a branch named as the commit, signed")
    site.settings("refs/tags/release-7")
    code, record = site.run()
    assert code == 0, record
    assert record["commit"] == tagged and site.applied() == [tagged]
    site.settings(tagged)
    code, record = site.run()
    assert code == 0, record
    assert site.applied() == [tagged, tagged]
    site.settings("refs/heads/release-7")
    assert site.run()[0] == 0
    assert site.applied()[-1] == branch
    # A commit id the repository does not hold: refused, nothing run.
    site.settings("0" * 40)
    code, record = site.run()
    assert code == 1 and site.applied()[-1] == branch
    assert any("is not in" in line for line in record["failure"]), record


def test_a_deploy_key_others_can_read_is_refused(
    renders: tuple[dict[str, Artifact], ...], tmp_path: Path
) -> None:
    site = Site(tmp_path, renders[1]["pull/clustergen-pull"].text)
    site.commit("r1")
    key = tmp_path / "deploy-key"
    key.write_text("not a key\n", encoding="utf-8")
    key.chmod(0o644)
    code, record = site.run()
    assert code == 1
    assert any("readable by others than root" in line for line in record["failure"]), record
    assert not (tmp_path / "args").exists()


def test_a_run_never_overlaps_another(
    renders: tuple[dict[str, Artifact], ...], tmp_path: Path
) -> None:
    site = Site(tmp_path, renders[1]["pull/clustergen-pull"].text)
    site.commit("r1")
    with open(tmp_path / "lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        proc = subprocess.run([site.script], env=site.env, capture_output=True, text=True)
    assert proc.returncode == 0 and "another run holds" in proc.stderr
    assert not (tmp_path / "args").exists() and not site.state.exists()


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
