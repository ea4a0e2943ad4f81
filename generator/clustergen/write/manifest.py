"""The manifest: what a render wrote into its tree (each path, its digest, and for
a file installed on nodes its group, change and destination) and which cluster it
is; the read side `plan`, `audit` and the writer's removals use, and the refusals
that read it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from clustergen.base.artifacts import Artifact, Install, NodeChange
from clustergen.base.errors import UsageError
from clustergen.write.tree import Tree, digest, inside

MANIFEST = ".clustergen-manifest"


_MANIFEST_HEADER = (
    "# Files rendered by clustergen; it removes these when a spec no longer renders them,\n"
    "# each only while it is what clustergen wrote (the sha256 digest ending its line).\n"
    "# A file installed on nodes also has, tab-separated: its inventory group, what a\n"
    "# change to it needs, and its destination (clustergen plan reads them).\n"
)


# The manifest's line naming the rendered cluster: a comment, which older manifests
# lack and older readers skip.
_CLUSTER_LINE = "# cluster: "


def with_manifest(
    files: dict[str, Artifact], cluster: str, digests: Mapping[str, str] | None = None
) -> dict[str, Artifact]:
    """Add the manifest (see `manifest`) of cluster's rendered tree; `digests`: each
    file's (tree.digest) where the caller has taken them already."""
    installs = {path: a.install for path, a in files.items()}
    if digests is None:
        digests = {path: digest(a.text.encode("utf-8")) for path, a in files.items()}
    return {**files, MANIFEST: manifest(installs, digests, cluster)}


def manifest(
    installs: Mapping[str, Install | None], digests: Mapping[str, str], cluster: str
) -> Artifact:
    """The manifest: the cluster's name, every rendered path, and for a file installed on
    nodes its inventory group, what a change to it needs, and its destination
    (tab-separated), so `clustergen plan` knows what removing it means once it is no
    longer rendered, and a render of another cluster is not taken for a change. Each
    line ends with the digest of what clustergen wrote there: a file that no longer
    matches it is never removed."""
    lines = [f"{_CLUSTER_LINE}{cluster}\n"]
    for path in sorted(installs):
        install = installs[path]
        if install is None:
            lines.append(f"{path}\t{digests[path]}\n")
        else:
            fields = [path, install.group, install.change.describe(), install.dest, digests[path]]
            lines.append("\t".join(fields) + "\n")
    return Artifact(MANIFEST, _MANIFEST_HEADER + "".join(lines))


@dataclass(frozen=True)
class Installed:
    """What an old manifest says of a file installed on nodes."""

    group: str
    change: NodeChange  # recorded with NodeChange.describe(), read back with NodeChange.read
    dest: str


@dataclass(frozen=True)
class Listed:
    """One path of a manifest: its install metadata (None for files not installed on
    nodes, and in manifests written before it was kept) and the digest of what
    clustergen wrote there (None in manifests written before digests were kept)."""

    installed: Installed | None
    digest: str | None


def listed(out_dir: Path) -> dict[str, Listed]:
    """The paths the last render wrote into out_dir, as its manifest lists them."""
    with Tree(out_dir) as tree:
        return listed_in(tree)


def listed_in(tree: Tree) -> dict[str, Listed]:
    text = tree.read_text(MANIFEST)
    entries: dict[str, Listed] = {}
    for number, line in enumerate((text or "").splitlines(), 1):
        path, *fields = line.strip("\n").split("\t")
        path = path.strip()
        if not path or path.startswith("#"):
            continue
        # Never follow a manifest outside the output directory; clustergen writes no such
        # line, so one is a hand edit or an attack, and the whole manifest is refused.
        if not inside(path):
            raise UsageError(
                f"{tree.path(MANIFEST)}:{number}: {path!a} is not a plain relative path "
                "inside the tree (absolute, or with a '..', '.' or empty component): not read"
            )
        recorded = fields.pop() if fields and fields[-1].startswith("sha256:") else None
        installed = None
        if len(fields) == 3:
            group, change, dest = fields
            installed = Installed(group, NodeChange.read(change), dest)
        entries[path] = Listed(installed, recorded)
    return entries


def manifest_cluster(out_dir: Path) -> str | None:
    """The cluster whose render out_dir holds, as its manifest names it; None without a
    manifest, or for one written before the cluster was recorded."""
    with Tree(out_dir) as tree:
        text = tree.read_text(MANIFEST)
    for line in (text or "").splitlines():
        if line.startswith(_CLUSTER_LINE):
            return line.removeprefix(_CLUSTER_LINE).strip()
    return None


def previous_outputs(out_dir: Path) -> dict[str, str | None]:
    """The paths the last render wrote, each with the digest of what it wrote there."""
    return {path: entry.digest for path, entry in listed(out_dir).items()}


def refuse_other_cluster(out_dir: Path, cluster: str) -> None:
    """Refuse to render cluster over the tree of another: every file of that one would
    be replaced or removed, which is never a change to review as one."""
    recorded = manifest_cluster(out_dir)
    if recorded is not None and recorded != cluster:
        raise UsageError(
            f"{out_dir} holds the rendered tree of cluster {recorded!r}, not {cluster!r}; "
            "rendering over it would replace and remove that cluster's files: render into "
            "another directory, or pass --replace-cluster to replace it"
        )


def refuse_unknown_directory(out_dir: Path) -> None:
    """Refuse to render into a directory that holds other things and no clustergen tree
    (the current directory, when no -o names it)."""
    if not out_dir.is_dir() or os.path.lexists(out_dir / MANIFEST):
        return
    try:
        empty = next(os.scandir(out_dir), None) is None
    except OSError as exc:
        raise UsageError(f"cannot read {out_dir}: {exc.strerror or exc}") from None
    if not empty:
        raise UsageError(
            f"{os.path.abspath(out_dir)} is not empty and holds no clustergen tree (no "
            f"{MANIFEST}); name the output directory with -o DIR (-o . to render here)"
        )
