"""Debian chroot nodes for running site.yml and verify.yml against real dpkg databases.

The recipe of shared/reference/testbed.md ("Nodes for Ansible"):
- a debootstrap'ed bookworm (minbase) with python3 and python3-apt, built once and
  copied per node;
- a local apt repository of equivs stand-ins for every package versions.lock names,
  each at the pinned version and at one newer version, so "latest" and "pinned" differ;
- the rendered inventory plus one extra inventory file that points each host at its
  chroot (community.general.chroot) and turns off the two testbed switches.

Locally the base system and the repository are cached under a directory keyed by a
hash of what goes into them, so reruns are fast; in CI (CI=true) they are built fresh.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import yaml

from support.ci import in_ci, tool
from support.debian import debian_mirror

SUITE = "bookworm"
CACHE_ROOT = Path(os.environ.get("CLUSTERGEN_TESTBED_CACHE", "/var/tmp/clustergen-testbed"))
BASE_PACKAGES = ("python3", "python3-apt")
# Where each node sees the stand-in repository, and how its sources line reads.
REPO_IN_NODE = "/srv/repo"
REPOSITORY_OVERRIDE = [
    {"name": "testbed", "url": f"file:{REPO_IN_NODE}", "suite": "./", "trusted": True}
]
# Bump when the recipe changes, so cached trees built the old way are not reused.
RECIPE_VERSION = "1"

HOST_TOOLS = ("debootstrap", "equivs-build", "dpkg-scanpackages", "chroot", "dpkg")
_RECAP = re.compile(r"^(?P<host>\S+)\s+:\s+(?P<counts>(?:\w+=\d+\s*)+)$")


def run(
    argv: Sequence[str], *, cwd: Path | str | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a command, failing loudly with its output."""
    result = subprocess.run(list(argv), capture_output=True, text=True, cwd=cwd, env=env)
    if result.returncode != 0:
        raise RuntimeError(
            f"{' '.join(argv)} exited {result.returncode}\n--- stdout\n{result.stdout}"
            f"\n--- stderr\n{result.stderr}"
        )
    return result


def _mirror() -> str:
    mirror = debian_mirror()
    if mirror is None:
        raise RuntimeError("no Debian mirror in this machine's apt sources")
    return mirror


def missing_prerequisites() -> list[str]:
    missing = [name for name in HOST_TOOLS if tool(name) is None]
    for name in ("ansible-playbook", "ansible-inventory", "ansible-vault", "ansible-galaxy"):
        if tool(name) is None:
            missing.append(name)
    if debian_mirror() is None:
        missing.append("a Debian mirror in the apt sources (or CLUSTERGEN_TESTBED_MIRROR)")
    if os.geteuid() != 0:
        missing.append("root privileges (debootstrap, chroot)")
    galaxy = tool("ansible-galaxy")
    if galaxy is not None:
        listed = subprocess.run(
            [galaxy, "collection", "list", "community.general"], capture_output=True, text=True
        )
        if "community.general" not in listed.stdout:
            missing.append(
                "the community.general collection (chroot connection; PyPI package ansible)"
            )
    return missing


# --- cached builds --------------------------------------------------------------------


def _digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def _cached(kind: str, key: str, build: Callable[[Path], None], scratch: Path) -> Path:
    """Build into a temporary directory and move it into place, so a half-built tree
    is never reused; in CI build under scratch instead of the cache."""
    root = scratch if in_ci() else CACHE_ROOT
    final = root / f"{kind}-{key}"
    if final.is_dir():
        return final
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{kind}-", dir=root))
    try:
        build(work / "tree")
        try:
            (work / "tree").rename(final)
        except OSError:
            if not final.is_dir():  # another run finishing the same build first is fine
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return final


def base_system(scratch: Path) -> Path:
    """A bookworm minbase chroot with python3 and python3-apt, sources pointing nowhere."""

    def build(tree: Path) -> None:
        run(["debootstrap", "--variant=minbase", SUITE, str(tree), _mirror()])
        shutil.copy2("/etc/resolv.conf", tree / "etc" / "resolv.conf")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        run(
            [
                "chroot",
                str(tree),
                "apt-get",
                "install",
                "-y",
                "--no-install-recommends",
                *BASE_PACKAGES,
            ],
            env=env,
        )
        run(["chroot", str(tree), "apt-get", "clean"])
        # Nodes install only from the local stand-in repository, offline and fast.
        (tree / "etc" / "apt" / "sources.list").unlink(missing_ok=True)
        for lists in (tree / "var" / "lib" / "apt" / "lists").glob("*_*"):
            lists.unlink()

    return _cached("base", _digest(RECIPE_VERSION, SUITE, _mirror(), BASE_PACKAGES), build, scratch)


def newer_version(version: str) -> str:
    """A version dpkg orders after `version`: what a repository would offer next."""
    return f"{version}+testbed1"


def _equivs_control(name: str, version: str) -> str:
    return (
        "Section: misc\nPriority: optional\nStandards-Version: 4.6.2\n"
        f"Package: {name}\nVersion: {version}\nArchitecture: all\n"
        "Maintainer: clustergen tests <tests@clustergen.invalid>\n"
        f"Description: stand-in for {name}\n clustergen end-to-end test package.\n"
    )


def stand_in_repository(pins: Mapping[str, str], scratch: Path) -> Path:
    """Flat apt repository: every pinned package at its pin and at one newer version."""
    wanted = sorted({(name, v) for name, pin in pins.items() for v in (pin, newer_version(pin))})

    def build(tree: Path) -> None:
        tree.mkdir(parents=True)

        def one(item: tuple[str, str]) -> None:
            name, version = item
            with tempfile.TemporaryDirectory(dir=tree.parent) as work:
                control = Path(work) / "control"
                control.write_text(_equivs_control(name, version), encoding="utf-8")
                run(["equivs-build", "control"], cwd=work)
                for deb in Path(work).glob("*.deb"):
                    shutil.move(str(deb), tree / deb.name)

        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            list(pool.map(one, wanted))
        packages = run(["dpkg-scanpackages", "-m", "."], cwd=tree).stdout
        (tree / "Packages").write_text(packages, encoding="utf-8")

    return _cached("repo", _digest(RECIPE_VERSION, wanted), build, scratch)


# --- nodes ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Node:
    name: str
    root: Path

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        return run(["chroot", str(self.root), *argv], env=env)

    def dpkg_status(self) -> dict[str, tuple[str, str]]:
        """Installed packages: name -> (version, selection), selection 'hold' or 'install'."""
        out = self.run("dpkg-query", "-W", "-f", "${Package}\t${Version}\t${Status}\n").stdout
        table = {}
        for line in out.splitlines():
            name, version, status = line.split("\t")
            want, _, state = status.split(" ")
            if state == "installed":
                table[name] = (version, want)
        return table


def make_nodes(names: Iterable[str], base: Path, repo: Path, under: Path) -> list[Node]:
    nodes = []
    for name in names:
        root = under / name
        run(["cp", "-a", str(base), str(root)])
        run(["cp", "-a", str(repo), str(root) + REPO_IN_NODE])
        nodes.append(Node(name, root))
    return nodes


def chroot_inventory(nodes: Sequence[Node], path: Path) -> Path:
    """The only overrides: chroot connection, the testbed switches, the repository."""
    hosts = {
        node.name: {
            "ansible_connection": "community.general.chroot",
            # The chroot connection is root already; the plays' become needs no sudo.
            "ansible_become": False,
            "ansible_host": str(node.root),
            "ansible_python_interpreter": "/usr/bin/python3",
            "clustergen_start_services": False,
            "clustergen_allow_reboot": False,
            "repositories_list": REPOSITORY_OVERRIDE,
        }
        for node in nodes
    }
    path.write_text(yaml.safe_dump({"all": {"hosts": hosts}}, sort_keys=True), encoding="utf-8")
    return path


# --- running Ansible ------------------------------------------------------------------


@dataclass(frozen=True)
class PlaybookRun:
    returncode: int
    output: str
    seconds: float
    recap: dict[str, dict[str, int]]

    def changed(self) -> dict[str, int]:
        return {host: counts.get("changed", 0) for host, counts in self.recap.items()}


def parse_recap(output: str) -> dict[str, dict[str, int]]:
    recap: dict[str, dict[str, int]] = {}
    in_recap = False
    for line in output.splitlines():
        if line.startswith("PLAY RECAP"):
            in_recap = True
            continue
        match = _RECAP.match(line.strip()) if in_recap else None
        if match:
            counts = dict(item.split("=") for item in match["counts"].split())
            recap[match["host"]] = {key: int(value) for key, value in counts.items()}
    return recap


@dataclass(frozen=True)
class Ansible:
    repo_root: Path
    inventories: tuple[Path, ...]
    limit: str
    extra_args: tuple[str, ...] = ()

    def playbook(self, playbook: str, *args: str) -> PlaybookRun:
        argv = [str(tool("ansible-playbook")), str(self.repo_root / playbook)]
        for inventory in self.inventories:
            argv += ["-i", str(inventory)]
        argv += ["--limit", self.limit, *self.extra_args, *args]
        env = {
            **os.environ,
            "ANSIBLE_CONFIG": str(self.repo_root / "ansible.cfg"),
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_FORCE_COLOR": "0",
            "ANSIBLE_RETRY_FILES_ENABLED": "0",
            "PYTHONUNBUFFERED": "1",
        }
        started = time.monotonic()
        result = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=self.repo_root)
        seconds = time.monotonic() - started
        output = result.stdout + result.stderr
        return PlaybookRun(result.returncode, output, seconds, parse_recap(result.stdout))


def group_memberships(inventory: Path) -> dict[str, set[str]]:
    """host -> its groups, as Ansible itself resolves the rendered inventory."""
    listing = json.loads(
        run([str(tool("ansible-inventory")), "-i", str(inventory), "--list"]).stdout
    )
    groups: dict[str, set[str]] = {}

    def walk(group: str, inherited: tuple[str, ...]) -> None:
        entry = listing.get(group, {})
        chain = (*inherited, group)
        for host in entry.get("hosts", []):
            groups.setdefault(host, set()).update(chain)
        for child in entry.get("children", []):
            walk(child, chain)

    walk("all", ())
    return groups


def expected_versions(lock: Mapping[str, object], groups: set[str]) -> dict[str, str]:
    """The union of the lock's packages over a node's groups."""
    expected: dict[str, str] = {}
    lock_groups = lock["groups"]
    assert isinstance(lock_groups, dict)
    for group in sorted(groups & set(lock_groups)):
        expected.update(lock_groups[group]["packages"])
    return expected


def encrypt_vault(variables: Mapping[str, str], directory: Path) -> tuple[Path, Path]:
    """A real vault file and its password file, as an admin would keep them."""
    password = directory / "vault-password"
    password.write_text("clustergen-testbed\n", encoding="utf-8")
    password.chmod(0o600)
    vault = directory / "vault.yml"
    vault.write_text(yaml.safe_dump(dict(variables)), encoding="utf-8")
    run(
        [
            str(tool("ansible-vault")),
            "encrypt",
            "--vault-password-file",
            str(password),
            str(vault),
        ]
    )
    return vault, password
