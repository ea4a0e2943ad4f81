"""Pull mode on booted nodes (ansible.pull; docs/ansible.md "Pull mode").

The site's repository as a site keeps it: the spec at its top, the rendered tree in a
folder beside it, a branch the nodes follow that the site moves to each release it
approves, every commit signed with the site's SSH signing key (the spec's signer). It is
a bare repository on the host, which every node sees read-only at SITE_GIT
(booted_cluster's binds), so each node's clustergen-pull fetches it over file://.

A pull is what the node's timer starts: `systemctl start clustergen-pull.service`, which
returns when the oneshot run has ended; the run's record is the node's pull.json.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from support.ansible_testbed import run
from support.booted import BootedNode

SITE_GIT = "/srv/site.git"
TREE_FOLDER = "cluster"
APPROVED = "approved"
SIGNER = "release@site.invalid"
PULL_SERVICE = "clustergen-pull.service"
PULL_TIMER = "clustergen-pull.timer"
PULL_RECORD = "/var/lib/clustergen/pull.json"
STATE = "/var/lib/clustergen/state.json"


def signing_key(work: Path) -> tuple[Path, str]:
    """The site's SSH signing key (made once in `work`) and its public key, as the spec's
    signer names it."""
    key = work / "signing-key"
    if not key.exists():
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", SIGNER, "-f", str(key)])
    kind, base64 = (work / "signing-key.pub").read_text(encoding="utf-8").split()[:2]
    return key, f"{kind} {base64}"


def pull_section(jitter: str, signer_key: str) -> dict[str, object]:
    """The spec's ansible.pull for this repository; `every` is long enough that no timer
    fires during a test: each pull is started by the test."""
    return {
        "repository": f"file://{SITE_GIT}",
        "branch": APPROVED,
        "signers": [{"name": SIGNER, "ssh_key": signer_key}],
        "path": TREE_FOLDER,
        "every": "6h",
        "jitter": jitter,
    }


class SiteRepository:
    """The bare repository (host folder `bare`, bound into the nodes) and the site's
    clone, where each release is committed."""

    def __init__(self, work: Path, key: Path) -> None:
        self.key = key
        self.bare = work / "site.git"
        self.clone = work / "site"
        run(["git", "init", "-q", "--bare", "-b", "main", str(self.bare)])
        run(["git", "init", "-q", "-b", "main", str(self.clone)])
        self._git("remote", "add", "origin", str(self.bare))

    def _git(self, *args: str) -> str:
        identity = ("-c", "user.name=site admin", "-c", "user.email=admin@site.invalid")
        return run(["git", "-C", str(self.clone), *identity, *args]).stdout.strip()

    def commit(self, spec_name: str, spec_text: str, tree: Path, message: str) -> str:
        """The spec and the tree as they are now, committed and pushed to main."""
        folder = self.clone / TREE_FOLDER
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(tree, folder, symlinks=True)
        (self.clone / spec_name).write_text(spec_text, encoding="utf-8")
        self._git("add", "-A")
        self._git(
            "-c",
            "gpg.format=ssh",
            "-c",
            f"user.signingkey={self.key}",
            "commit",
            "-S",
            "-q",
            "-m",
            message,
        )
        self._git("push", "-q", "origin", "main")
        return self._git("rev-parse", "HEAD")

    def commit_unsigned(self, message: str) -> str:
        """A commit nobody signed (a force-push, or a compromised server), pushed to main."""
        (self.clone / "UNSIGNED").write_text(message, encoding="utf-8")
        self._git("add", "-A")
        self._git("commit", "-q", "-m", message)
        self._git("push", "-q", "origin", "main")
        return self._git("rev-parse", "HEAD")

    def approve(self, commit: str) -> None:
        """Move the branch the nodes follow to `commit`."""
        self._git("push", "-q", "--force", "origin", f"{commit}:refs/heads/{APPROVED}")


@dataclass(frozen=True)
class Pull:
    """One node's pull: how the service ended, how long it took, what it recorded."""

    node: str
    returncode: int
    seconds: float
    record: Mapping[str, object]
    journal: str

    @property
    def changed(self) -> int:
        """changed= of the node's PLAY RECAP line in the record."""
        recap = str(self.record.get("recap", ""))
        fields = dict(item.split("=", 1) for item in recap.split() if "=" in item)
        assert "changed" in fields, f"{self.node}: no recap in {self.record}\n{self.journal}"
        return int(fields["changed"])


def pull(node: BootedNode) -> Pull:
    started = time.monotonic()
    result = node.sh(f"systemctl start {PULL_SERVICE}", check=False)
    seconds = time.monotonic() - started
    text = node.sh(f"cat {PULL_RECORD}", check=False).stdout
    record = json.loads(text) if text.strip() else {}
    journal = ""
    if result.returncode != 0:
        journal = node.sh(
            f"journalctl -u {PULL_SERVICE} -o cat -n 60 --no-pager", check=False
        ).stdout
    return Pull(node.name, result.returncode, seconds, record, journal)


def pull_all(nodes: Iterable[BootedNode]) -> dict[str, Pull]:
    """Every node pulls at once, as their timers would."""
    nodes = list(nodes)
    with ThreadPoolExecutor(max_workers=len(nodes)) as pool:
        return {p.node: p for p in pool.map(pull, nodes)}


_INSTALLED = r"""
import hashlib, json, os, subprocess
state = json.load(open("/var/lib/clustergen/state.json"))
files = {}
for entry in state["files"]:
    path = entry["dest"]
    files[path] = (hashlib.sha256(open(path, "rb").read()).hexdigest()
                   if os.path.isfile(path) else "missing")
packages = subprocess.run(["dpkg-query", "-W", "-f", "${Package}=${Version} "],
                          capture_output=True, text=True, check=True).stdout.split()
print(json.dumps({"release": state["release"], "files": files, "packages": sorted(packages)}))
"""


def installed(node: BootedNode) -> dict[str, object]:
    """What the node has now: the release it recorded, the sha256 of every file the
    release installs (as they are on the node), and every package with its version."""
    result = node.sh(f"python3 - <<'PY'\n{_INSTALLED}PY")
    return dict(json.loads(result.stdout))


def differences(before: Mapping[str, object], after: Mapping[str, object]) -> list[str]:
    """The installed files whose content differs, and any package that moved."""
    files_before, files_after = before["files"], after["files"]
    assert isinstance(files_before, dict) and isinstance(files_after, dict)
    changed = sorted(
        path
        for path in set(files_before) | set(files_after)
        if files_before.get(path) != files_after.get(path)
    )
    if before["packages"] != after["packages"]:
        changed.append("packages")
    return changed


def read_only(node: BootedNode, path: str) -> subprocess.CompletedProcess[str]:
    """Bind `path` over itself read-only inside the node: nothing can replace it (a
    rename onto a mount point fails), as a broken disk or a stuck mount would."""
    return node.sh(f"mount --bind {path} {path} && mount -o remount,bind,ro {path}")


def writable(node: BootedNode, path: str) -> subprocess.CompletedProcess[str]:
    return node.sh(f"umount {path}")
