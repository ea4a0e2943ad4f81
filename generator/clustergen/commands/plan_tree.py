"""What `clustergen plan` reads of the applied tree: what its manifest says of the files
installed now, its versions.lock and its inventory's hosts, each through write/tree.py."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from clustergen.base.artifacts import NodeChange
from clustergen.base.errors import UsageError
from clustergen.base.yaml_loader import SAFE_LOADER
from clustergen.write.manifest import Installed
from clustergen.write.tree import Tree

LOCK = "versions.lock"
HOSTS = "inventory/hosts.yml"


@dataclass(frozen=True)
class AppliedManifest:
    """What the applied tree's manifest says of the files installed now."""

    manifest: dict[str, Installed | None]
    # Where a file stood for a target's reformat: by its change ('reformat OST0003'). A
    # target none stood for is new in the spec (or the tree is older than its identity
    # files, when the target's format script stood for it).
    stood_for: dict[NodeChange, str]
    dests: frozenset[str]  # where the applied tree's files are installed

    @classmethod
    def of(cls, manifest: dict[str, Installed | None]) -> AppliedManifest:
        """From the manifest's entries, as manifest.listed reads them."""
        installed = [(path, i) for path, i in manifest.items() if i is not None]
        return cls(
            manifest,
            {i.change: path for path, i in installed if i.change.action == "reformat"},
            frozenset(i.dest for _, i in installed),
        )


# The committed tree is untrusted until it merges (docs/security.md): what plan reads of
# it is bounded. clustergen writes no YAML alias or anchor, and no file near this size;
# a range names no more hosts than the largest cluster clustergen renders, many times.
MAX_COMMITTED_BYTES = 64 * 1024 * 1024
MAX_RANGE_HOSTS = 1_048_576


def _committed_yaml(out_dir: Path, path: str) -> Any:
    """A YAML file of the old tree (a link there is refused, never followed); None where
    it is missing or unreadable. One larger than MAX_COMMITTED_BYTES, or with an alias
    or anchor (which clustergen never writes, and which a ten-line file can make expand
    past any memory), is refused: UsageError."""
    with Tree(out_dir) as tree:
        found = tree.read(path)
    if found is None:
        return None
    data = found[0]
    if len(data) > MAX_COMMITTED_BYTES:
        raise UsageError(
            f"{out_dir / path}: larger than {MAX_COMMITTED_BYTES // 2**20} MiB, which no "
            "render writes: not read"
        )
    try:
        text = data.decode("utf-8")
        for event in yaml.parse(text, Loader=SAFE_LOADER):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise UsageError(
                    f"{out_dir / path}: a YAML alias or anchor, which clustergen never "
                    "writes (a committed file could make it expand past any memory): not read"
                )
        return yaml.load(text, Loader=SAFE_LOADER)
    except (UnicodeDecodeError, yaml.YAMLError):
        return None


def applied_lock(out_dir: Path) -> Any:
    """The applied tree's versions.lock, as read: None where it is missing or unreadable."""
    return _committed_yaml(out_dir, LOCK)


def lock_packages(lock: Any, group: str) -> dict[str, str]:
    """One group's packages in a versions.lock as read ({} where it lists none)."""
    try:
        packages = lock["groups"][group]["packages"]
    except (KeyError, TypeError):
        return {}
    return {str(k): str(v) for k, v in packages.items()} if isinstance(packages, dict) else {}


def applied_hosts(out_dir: Path) -> set[str]:
    """The hosts of the applied tree's inventory, ranges expanded (none without one)."""
    inventory = _committed_yaml(out_dir, HOSTS)
    try:
        hosts = inventory["all"]["hosts"]
    except (KeyError, TypeError):
        return set()
    if not isinstance(hosts, dict):
        return set()
    names: set[str] = set()
    for pattern in hosts:
        names.update(_range_names(str(pattern)))
        if len(names) > MAX_RANGE_HOSTS:
            raise UsageError(
                f"{HOSTS}: names more than {MAX_RANGE_HOSTS} hosts, which no render writes: "
                "not read"
            )
    return names


_RANGE = re.compile(r"^(?P<head>[^\[]*)\[(?P<begin>\d+):(?P<end>\d+)\](?P<tail>[^\[]*)$")


def _range_names(pattern: str) -> list[str]:
    """The names an inventory's all.hosts entry stands for: a name, or a range such as
    gpu[01:08] as Ansible expands it (a zero-padded begin pads every number to its
    width; inventory/hosts.yml writes ranges only where that gives back the names)."""
    match = _RANGE.match(pattern)
    if match is None:
        return [pattern]
    begin, end = match["begin"], match["end"]
    if len(begin) > 20 or len(end) > 20 or int(end) - int(begin) >= MAX_RANGE_HOSTS:
        raise UsageError(
            f"{HOSTS}: the range {pattern} names more than {MAX_RANGE_HOSTS} hosts, which no "
            "render writes: not read"
        )
    width = len(begin) if begin.startswith("0") else 0
    return [
        f"{match['head']}{number:0{width}d}{match['tail']}"
        for number in range(int(begin), int(end) + 1)
    ]
