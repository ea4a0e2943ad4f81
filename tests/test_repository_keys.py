"""The repositories role's key check on a chroot node (tests/support/ansible_testbed.py).

Two throwaway keys are made with gpg: the repository's, which signs a local flat
repository (InRelease), and another one. The spec-side fingerprint is the repository
key's. Served the other key, the play fails naming both fingerprints, and nothing is
installed; served the right key, it is installed, apt itself verifies the repository
with it (Signed-By), a second run changes nothing and downloads nothing, and a key
file replaced on the node is put back from a checked download.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from support.ansible_testbed import (
    Ansible,
    PlaybookRun,
    base_system,
    make_nodes,
    missing_prerequisites,
    run,
)
from support.ci import skip_or_fail, tool
from support.paths import REPO

pytestmark = pytest.mark.daemons

NODE = "keynode"
KEY_IN_NODE = "/srv/keys/site.asc"
REPO_IN_NODE = "/srv/signed"
INSTALLED = "etc/apt/keyrings/clustergen-site.asc"
SOURCES = "etc/apt/sources.list.d/clustergen-site.sources"


def _gpg(home: Path, *args: str) -> str:
    return run(["gpg", "--homedir", str(home), "--batch", *args]).stdout


def _new_key(home: Path, user: str) -> tuple[str, str]:
    """A throwaway signing key: its fingerprint and its armoured public key."""
    home.mkdir(mode=0o700)
    _gpg(home, "--passphrase", "", "--quick-gen-key", user, "ed25519", "sign", "never")
    listing = _gpg(home, "--with-colons", "--list-keys")
    fingerprint = next(
        line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr:")
    )
    return fingerprint, _gpg(home, "--armor", "--export", fingerprint)


def _signed_flat_repository(tree: Path, home: Path) -> None:
    """An empty flat repository whose InRelease the key in `home` signs."""
    tree.mkdir(parents=True)
    packages = b""
    (tree / "Packages").write_bytes(packages)
    date = time.strftime("%a, %d %b %Y %H:%M:%S UTC", time.gmtime())
    release = (
        "Origin: clustergen-test\nLabel: clustergen-test\n"
        f"Date: {date}\nSHA256:\n {hashlib.sha256(packages).hexdigest()} 0 Packages\n"
    )
    (tree / "Release").write_text(release, encoding="utf-8")
    _gpg(home, "--clearsign", "-o", str(tree / "InRelease"), str(tree / "Release"))


def _play(directory: Path, fingerprint: str) -> Path:
    repository = {
        "name": "site",
        "url": f"file:{REPO_IN_NODE}",
        "suite": "./",
        "components": [],
        "key_url": f"file://{KEY_IN_NODE}",
        "key_fingerprint": fingerprint,
    }
    play = [
        {
            "name": "Repositories",
            "hosts": NODE,
            "vars": {"clustergen_package_family": "apt", "repositories_list": [repository]},
            "roles": ["repositories"],
        }
    ]
    path = directory / "keys.yml"
    path.write_text(yaml.safe_dump(play, sort_keys=False), encoding="utf-8")
    return path


def _ok(result: PlaybookRun, what: str) -> None:
    assert result.returncode == 0, f"{what} failed:\n{result.output[-6000:]}"


def test_only_a_key_with_the_spec_fingerprint_is_installed(
    tmp_path: Path, testbed_scratch: Path, request: pytest.FixtureRequest
) -> None:
    missing = missing_prerequisites()
    if tool("gpg") is None:
        missing.append("gpg")
    if missing:
        skip_or_fail(f"the Ansible testbed needs {', '.join(missing)}")
    gpgconf = tool("gpgconf")
    for home in ("gpg-site", "gpg-other") if gpgconf else ():  # gpg leaves an agent running
        request.addfinalizer(
            lambda home=home: subprocess.run(
                [str(gpgconf), "--homedir", str(tmp_path / home), "--kill", "gpg-agent"],
                check=False,
                capture_output=True,
            )
        )
    right, right_key = _new_key(tmp_path / "gpg-site", "site repository <site@example.invalid>")
    other, other_key = _new_key(tmp_path / "gpg-other", "someone else <other@example.invalid>")
    assert right != other

    (tmp_path / "nodes").mkdir()
    empty = tmp_path / "empty-repo"
    empty.mkdir()
    (node,) = make_nodes([NODE], base_system(testbed_scratch), empty, tmp_path / "nodes")
    _signed_flat_repository(node.root / REPO_IN_NODE.lstrip("/"), tmp_path / "gpg-site")
    served = node.root / KEY_IN_NODE.lstrip("/")
    served.parent.mkdir(parents=True)
    # The base has gpgv, not gpg: the role installs gpg from the distribution's archive.
    assert not (node.root / "usr/bin/gpg").exists()
    debian = node.root / "etc/apt/sources.list.d/debian.sources"
    shutil.copy2("/etc/apt/sources.list.d/debian.sources", debian)

    site = tmp_path / "site"
    site.mkdir()
    shutil.copy2(REPO / "ansible.cfg", site / "ansible.cfg")
    os.symlink(REPO / "roles", site / "roles")
    inventory = site / "hosts.yml"
    host = {
        "ansible_connection": "community.general.chroot",
        "ansible_host": str(node.root),
        "ansible_python_interpreter": "/usr/bin/python3",
    }
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {NODE: host}}}), encoding="utf-8")
    ansible = Ansible(site, (inventory,), limit=NODE)
    playbook = _play(site, right).name

    # Someone between the node and the key's server hands out their own key.
    served.write_text(other_key, encoding="utf-8")
    refused = ansible.playbook(playbook)
    assert refused.returncode != 0, refused.output
    assert f"is {other}," in refused.output, refused.output
    assert f"not {right} (its key_fingerprint in the spec)" in refused.output
    assert not (node.root / INSTALLED).exists(), "an unchecked key was installed"
    assert not (node.root / SOURCES).exists(), "the repository was added with no checked key"
    assert (node.root / "usr/bin/gpg").exists()
    debian.unlink()  # from here on the node is offline: only the local repository

    served.write_text(right_key, encoding="utf-8")
    first = ansible.playbook(playbook)
    _ok(first, "the run with the right key")
    assert (node.root / INSTALLED).read_text(encoding="utf-8") == right_key
    sources = (node.root / SOURCES).read_text(encoding="utf-8")
    assert f"Signed-By: /{INSTALLED}\n" in sources and "Trusted" not in sources
    # apt itself: the repository verifies with the installed key, and only with it.
    update = subprocess.run(
        ["chroot", str(node.root), "apt-get", "update"], capture_output=True, text=True
    )
    assert update.returncode == 0, update.stdout + update.stderr
    assert "NO_PUBKEY" not in update.stdout + update.stderr
    assert not [line for line in update.stderr.splitlines() if line.startswith(("W:", "E:"))]

    # A no-op run downloads nothing: the key's server may be gone.
    served.unlink()
    second = ansible.playbook(playbook)
    _ok(second, "the second run")
    assert second.changed() == {NODE: 0}, second.output

    # A key file replaced on the node is not trusted: the checked one is put back.
    (node.root / INSTALLED).write_text(other_key, encoding="utf-8")
    served.write_text(right_key, encoding="utf-8")
    repaired = ansible.playbook(playbook)
    _ok(repaired, "the run after the key file was replaced")
    assert (node.root / INSTALLED).read_text(encoding="utf-8") == right_key
    assert repaired.changed()[NODE] >= 1
