"""What pull mode costs each node, and the site's git repository, against the render of
the same spec, measured in the same run (issue 27, "Pull mode"; docs/ansible.md).

Run: python benchmarks/bench_pull.py [--sizes 1024,4096,16384]
(prints Markdown; writes only under a temp dir; needs git)

For the compact benchmark spec (clustergen.dev.large_spec.compact_spec) on Debian 13 with
ansible.pull (the tree in a folder `cluster` of the repository, as docs/ansible.md
shows), at each size, each a fresh process:

- `clustergen render SPEC -o DIR`: the reference;
- the tree every node checks out: its files and MiB;
- the site's commit of the whole tree (`git add -A` and `git commit`), and the bare
  repository's size after `git gc`;
- a node's first pull: `git clone` over file:// of that repository (what ansible-pull's
  checkout step does with --full), time and peak RSS;
- a release that changes one file: the site's `git add -A` and `git commit` of it (git
  looks at every file of the tree for the change), and a node's `git fetch` and checkout
  of it;
- what each pull run's playbook pays before its first task: `ansible-playbook site.yml
  --list-hosts --limit <one node>` in the checkout (the whole inventory is loaded, the
  limit applied after), time and peak RSS.

Times are one run each (a 16k commit takes a while); RSS is the command's own (wait4's
ru_maxrss, started by child.py's launcher). Nothing here is timed in a test: the
machines are shared and noisy.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from child import measure_child

from clustergen.dev.large_spec import compact_spec

BIN = Path(sys.executable).parent
SIZES = (1024, 4096, 16384)
FOLDER = "cluster"
GIT = ("git", "-c", "user.name=bench", "-c", "user.email=bench@site.invalid")


SIGNER_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEjJ3g7C3Sv8wDZrW2Fvm5VXJYd2r7l0c8ZbS8N1n3Xk"


def pull_spec(nodes: int) -> str:
    spec = yaml.safe_load(compact_spec(nodes))
    spec["software"].update(os="debian-13", slurm="24.11.5")
    spec["ansible"] = {
        "pull": {
            "repository": "https://git.site.invalid/cluster.git",
            "branch": "approved",
            "signers": [{"name": "release@site.invalid", "ssh_key": SIGNER_KEY}],
            "path": FOLDER,
            "every": "30min",
            "jitter": "10min",
        }
    }
    return yaml.safe_dump(spec, sort_keys=False)


def mib(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def measure(work: Path, nodes: int) -> dict[str, float]:
    site, bare, node = work / "site", work / "site.git", work / "node"
    spec = site / "spec.yaml"
    site.mkdir(parents=True)
    spec.write_text(pull_spec(nodes), encoding="utf-8")
    got: dict[str, float] = {}
    got["render"] = measure_child(BIN / "clustergen", "render", spec, "-o", site / FOLDER).seconds
    tree = site / FOLDER
    got["files"] = sum(1 for f in tree.rglob("*") if f.is_file())
    got["tree MiB"] = mib(tree)
    subprocess.run(["git", "init", "-q", "-b", "approved", str(site)], check=True)
    start = time.perf_counter()
    measure_child(*GIT, "add", "-A", cwd=site)
    measure_child(*GIT, "commit", "-q", "-m", "release 1", cwd=site)
    got["commit"] = time.perf_counter() - start
    subprocess.run(["git", "clone", "-q", "--bare", str(site), str(bare)], check=True)
    measure_child("git", "gc", "-q", cwd=bare)
    got["repository MiB"] = mib(bare)
    clone = measure_child("git", "clone", "-q", f"file://{bare}", node)
    got["clone"], got["clone RSS"] = clone.seconds, clone.rss_mib

    # One file changes: the timer's jitter (as the booted test's release 2 does).
    timer = tree / "pull/clustergen-pull.timer"
    timer.write_text(timer.read_text().replace("=10min", "=11min"), encoding="utf-8")
    start = time.perf_counter()
    measure_child(*GIT, "add", "-A", cwd=site)
    measure_child(*GIT, "commit", "-q", "-m", "release 2", cwd=site)
    got["release commit"] = time.perf_counter() - start
    measure_child("git", "push", "-q", str(bare), "approved", cwd=site)
    start = time.perf_counter()
    measure_child("git", "fetch", "-q", "origin", cwd=node)
    measure_child("git", "checkout", "-q", "--detach", "origin/approved", cwd=node)
    got["fetch"] = time.perf_counter() - start

    load = measure_child(
        BIN / "ansible-playbook",
        "site.yml",
        "-i",
        "inventory",
        "--list-hosts",
        "--limit",
        "compute[0]",
        cwd=node / FOLDER,
    )
    got["load"], got["load RSS"] = load.seconds, load.rss_mib
    return got


def table(work: Path, sizes: tuple[int, ...]) -> list[str]:
    rows = [
        "| nodes | `render` (s) | tree files | tree MiB | site commit (s) | one-file commit (s) "
        "| repository MiB | "
        "node's clone (s) | clone RSS (MiB) | one-file fetch (s) | playbook load, one node "
        "(s) | load RSS (MiB) | load / render |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    figures = {}
    for nodes in sizes:
        got = figures[nodes] = measure(work / str(nodes), nodes)
        rows.append(
            f"| {nodes} | {got['render']:.2f} | {got['files']:.0f} | {got['tree MiB']:.1f} | "
            f"{got['commit']:.1f} | {got['release commit']:.2f} | {got['repository MiB']:.1f} | "
            f"{got['clone']:.1f} | "
            f"{got['clone RSS']:.0f} | {got['fetch']:.2f} | {got['load']:.1f} | "
            f"{got['load RSS']:.0f} | {got['load'] / got['render']:.2f} |"
        )
    first, last = sizes[0], sizes[-1]
    if last > first:
        a, b = figures[first], figures[last]
        growth = ", ".join(
            f"{name} {b[name] / a[name]:.1f}x"
            for name in ("render", "clone", "fetch", "load", "load RSS")
        )
        rows += ["", f"- {last // first}x the nodes ({first} to {last}): {growth}"]
    return rows


def main() -> None:
    sizes = SIZES
    if "--sizes" in sys.argv:
        sizes = tuple(int(n) for n in sys.argv[sys.argv.index("--sizes") + 1].split(","))
    with tempfile.TemporaryDirectory() as scratch:
        print("\n".join(table(Path(scratch), sizes)))


if __name__ == "__main__":
    main()
