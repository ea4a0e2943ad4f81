"""Debian chroot nodes for running site.yml and verify.yml against real dpkg databases.

The recipe of shared/reference/testbed.md ("Nodes for Ansible"):
- a debootstrap'ed bookworm (minbase) with python3 and python3-apt, built once and
  copied per node;
- a local apt repository of stand-in packages (empty .debs) for every package
  versions.lock names, each at the pinned version and at one newer version, so
  "latest" and "pinned" differ;
- the rendered inventory plus one extra inventory file that points each host at its
  chroot (community.general.chroot) and turns off the two testbed switches.

Locally the base system and the repository are cached under a directory keyed by a
hash of what goes into them, so reruns are fast; in CI (CI=true) they are built fresh.
"""

from __future__ import annotations

import fcntl
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
# Bump when stand-ins are built differently.
STAND_IN_RECIPE = "dpkg-deb 1"

HOST_TOOLS = ("debootstrap", "dpkg-deb", "dpkg-scanpackages", "chroot", "dpkg")
# What a Debian node's root login has on PATH (/etc/profile, sshd). A chroot command
# inherits the caller's PATH instead, which in CI lacks /usr/local: stub tools there
# would silently lose to the real ones.
NODE_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
_RECAP = re.compile(r"^(?P<host>\S+)\s+:\s+(?P<counts>(?:\w+=\d+\s*)+)$")


# A play's first task in the role tests: the slurm role's settings (ports, paths and
# keys it reads from the rendered slurm.conf), public to the tasks after it.
READ_SLURM_SETTINGS = """\
    - name: Read the rendered Slurm configuration as the slurm role does
      ansible.builtin.include_role:
        name: slurm
        tasks_from: settings.yml
        public: true
"""


def node_environment(**extra: str) -> dict[str, str]:
    """The caller's environment with a node's PATH in front, for commands run in chroots."""
    caller = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p not in NODE_PATH]
    return {**os.environ, "PATH": os.pathsep.join([*NODE_PATH, *caller]), **extra}


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


def mirror() -> str:
    found = debian_mirror()
    if found is None:
        raise RuntimeError("no Debian mirror in this machine's apt sources")
    return found


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


def digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def cached(kind: str, key: str, build: Callable[[Path], None], scratch: Path) -> Path:
    """Build into a temporary directory and move it into place, so a half-built tree
    is never reused; in CI build under scratch instead of the cache. One build at a time
    for each tree: another process of the run (an xdist worker) that wants the same tree
    waits for it and takes it, instead of building it again."""
    root = scratch if in_ci() else CACHE_ROOT
    final = root / f"{kind}-{key}"
    if final.is_dir():
        return final
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{kind}-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if final.is_dir():  # built while this one waited
            return final
        work = Path(tempfile.mkdtemp(prefix=f".{kind}-", dir=root))
        try:
            build(work / "tree")
            (work / "tree").rename(final)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return final


def base_system(scratch: Path, suite: str = SUITE) -> Path:
    """A minbase chroot of `suite` (bookworm unless told) with python3 and python3-apt,
    sources pointing nowhere."""

    def build(tree: Path) -> None:
        run(["debootstrap", "--variant=minbase", suite, str(tree), mirror()])
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

    return cached("base", digest(RECIPE_VERSION, suite, mirror(), BASE_PACKAGES), build, scratch)


def newer_version(version: str) -> str:
    """A version dpkg orders after `version`: what a repository would offer next."""
    return f"{version}+testbed1"


@dataclass(frozen=True)
class StandInFile:
    """A file a stand-in package installs (what a booted node needs to run it)."""

    name: str
    directory: str  # where the package puts it, e.g. /usr/bin/
    text: str
    mode: int = 0o644


@dataclass(frozen=True)
class StandInContent:
    files: tuple[StandInFile, ...] = ()
    postinst: str | None = None


# What goes into the stand-in of (package, version); empty packages by default.
StandInPayload = Callable[[str, str], StandInContent]


def _empty(name: str, version: str) -> StandInContent:
    return StandInContent()


def _stand_in_control(name: str, version: str) -> str:
    return (
        f"Package: {name}\nVersion: {version}\nArchitecture: all\n"
        "Section: misc\nPriority: optional\n"
        "Maintainer: clustergen tests <tests@clustergen.invalid>\n"
        f"Description: stand-in for {name}\n clustergen end-to-end test package.\n"
    )


def stand_ins_wanted(pins: Mapping[str, str]) -> list[tuple[str, str]]:
    """Every pinned package at its pin and at one newer version. A distribution's pin that
    takes any packaging revision (`39.0-*`, the RDMA stack's) is built at revision 1, which
    the glob matches as apt preferences match it, and its newer version is the next
    upstream one (`39.0.1-1`), which the glob does not match."""
    wanted = set()
    for name, pin in pins.items():
        if pin.endswith("-*"):
            upstream = pin[:-2]
            wanted |= {(name, f"{upstream}-1"), (name, f"{upstream}.1-1")}
        else:
            wanted |= {(name, pin), (name, newer_version(pin))}
    return sorted(wanted)


def build_stand_ins(
    wanted: Iterable[tuple[str, str]], into: Path, payload: StandInPayload = _empty
) -> None:
    """One package per (name, version) into the directory `into`, built with `dpkg-deb`
    (equivs-build makes the same package through a full dpkg-buildpackage, about 3 s
    each); empty unless `payload` gives it files."""

    def one(item: tuple[str, str]) -> None:
        name, version = item
        content = payload(name, version)
        with tempfile.TemporaryDirectory(dir=into.parent) as work:
            tree = Path(work) / "tree"
            (tree / "DEBIAN").mkdir(parents=True)
            (tree / "DEBIAN" / "control").write_text(
                _stand_in_control(name, version), encoding="utf-8"
            )
            if content.postinst is not None:
                postinst = tree / "DEBIAN" / "postinst"
                postinst.write_text(content.postinst, encoding="utf-8")
                postinst.chmod(0o755)
            for item_file in content.files:
                path = tree / item_file.directory.strip("/") / item_file.name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(item_file.text, encoding="utf-8")
                path.chmod(item_file.mode)
            for directory in sorted(p for p in tree.rglob("*") if p.is_dir()):
                directory.chmod(0o755)
            deb = into / f"{name}_{version.replace(':', '%3a')}_all.deb"
            run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(tree), str(deb)])

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        list(pool.map(one, wanted))


def index_flat_repository(tree: Path) -> None:
    """The Packages index of a flat repository (`deb [trusted=yes] file:DIR ./`)."""
    packages = run(["dpkg-scanpackages", "-m", "."], cwd=tree).stdout
    (tree / "Packages").write_text(packages, encoding="utf-8")


def stand_in_repository(pins: Mapping[str, str], scratch: Path) -> Path:
    """Flat apt repository: every pinned package at its pin and at one newer version."""
    wanted = stand_ins_wanted(pins)

    def build(tree: Path) -> None:
        tree.mkdir(parents=True)
        build_stand_ins(wanted, tree)
        index_flat_repository(tree)

    return cached("repo", digest(RECIPE_VERSION, STAND_IN_RECIPE, wanted), build, scratch)


# --- nodes ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Node:
    name: str
    root: Path

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        env = node_environment(DEBIAN_FRONTEND="noninteractive")
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
    """The only overrides: chroot connection, the testbed switches, the repository.

    Written as host_vars next to the inventory file: the rendered inventory sets
    ansible_host in its own host_vars, which outrank any inventory file's host
    variables, and a later inventory source's host_vars outrank an earlier one's."""
    host_vars = path.parent / "host_vars"
    host_vars.mkdir(exist_ok=True)
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
    for name, variables in hosts.items():
        text = yaml.safe_dump(variables, sort_keys=True)
        (host_vars / f"{name}.yml").write_text(text, encoding="utf-8")
    listing = {"all": {"hosts": dict.fromkeys(hosts)}}
    path.write_text(yaml.safe_dump(listing, sort_keys=True), encoding="utf-8")
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
        return self._run([str(tool("ansible-playbook")), str(self.repo_root / playbook)], args)

    def adhoc(self, pattern: str, *args: str) -> PlaybookRun:
        """`ansible PATTERN ARGS`: one module on each host, with the same inventories."""
        return self._run([str(tool("ansible")), pattern], args)

    def _run(self, argv: list[str], args: Sequence[str]) -> PlaybookRun:
        for inventory in self.inventories:
            argv += ["-i", str(inventory)]
        argv += ["--limit", self.limit, *self.extra_args, *args]
        env = node_environment(
            ANSIBLE_CONFIG=str(self.repo_root / "ansible.cfg"),
            ANSIBLE_NOCOLOR="1",
            ANSIBLE_FORCE_COLOR="0",
            ANSIBLE_RETRY_FILES_ENABLED="0",
            PYTHONUNBUFFERED="1",
        )
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
