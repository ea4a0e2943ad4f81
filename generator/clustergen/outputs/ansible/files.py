"""files/: the lists of rendered files each inventory group and each node receives,
one install entry per file (destination, owner, mode, the handler its change notifies),
which the roles read as clustergen_files; and the handler names the entries carry."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath

from clustergen.base.artifacts import Artifact, Install
from clustergen.catalog.groups import (
    GROUP_TITLES,
)
from clustergen.outputs import OWN_ROLE
from clustergen.resolve import ResolvedCluster

# One rendered file's entry in files/groups/<group>.yml or files/hosts/<node>.yml:
# strings, and the list of paths it replaces (absent).
FileField = str | list[str] | dict[str, str]


FileEntry = dict[str, FileField]


# The role that installs the files of the families without a role of their own
# (outputs.OWN_ROLE), and the one handler it defines for their changes.
FAMILIES_ROLE = "families"


FAMILIES_HANDLER = "Restart the services of the families' changed files"


# Outside inventory/: Ansible parses every file of an inventory directory, and a
# subdirectory's too, as inventory. Were these lists inventory variables, every host
# would carry its groups' copies in its merged variables (`ansible-inventory --list`:
# 16,384 hosts x 10 KB at 16k nodes); the roles read them from here (clustergen_files).
FILE_LISTS = "files"


# all.yml's clustergen_files: the entries of files/groups/<group>.yml for each of the
# node's groups and of files/hosts/<node>.yml, read on the controller, each src made
# absolute. Evaluated where a role uses it, for that node: a few files of a few KB each,
# whatever the cluster's size. The same list the roles gathered from the variables
# clustergen_files_<group> and clustergen_files_node before.
GATHER_FILES = "\n".join(
    (
        "{%- set found = [] -%}",
        "{%- set lists = group_names | map('regex_replace', '^', 'groups/') | list -%}",
        "{%- for name in lists + ['hosts/' ~ inventory_hostname] -%}",
        "{%-   set path = clustergen_tree ~ '/" + FILE_LISTS + "/' ~ name ~ '.yml' -%}",
        "{%-   if path is file -%}",
        "{%-     set _ = found.extend(lookup('ansible.builtin.file', path) | from_yaml) -%}",
        "{%-   endif -%}",
        "{%- endfor -%}",
        "{%- set entries = [] -%}",
        "{%- for entry in found -%}",
        "{%-   set src = {'src': clustergen_tree ~ '/' ~ entry.src} -%}",
        "{%-   set _ = entries.append(entry | combine(src)) -%}",
        "{%- endfor -%}",
        "{{ entries }}",
    )
)


def file_lists(
    cluster: ResolvedCluster,
    group_files: Mapping[str, Sequence[Mapping[str, FileField]]],
    node_files: Mapping[str, Sequence[Mapping[str, FileField]]],
) -> list[Artifact]:
    """files/groups/<group>.yml for each group with nodes and files, files/hosts/<node>.yml
    for each node with files meant for it alone (its network files, its Lustre targets'):
    YAML lists of install entries, src relative to the tree. Written as text, as
    host_vars are: 16,384 of them at 16k nodes."""
    name = cluster.spec.cluster.name
    footer = [
        f"# Rendered by clustergen from the spec of cluster {name}. Do not edit this",
        "# file: change the spec and run `clustergen render` again; every render replaces it.",
        "---",
    ]
    artifacts = []
    for group, entries in group_files.items():
        if cluster.members.get(group):
            title = GROUP_TITLES.get(group, f"Nodes of group {group}")
            head = [
                f"# The rendered files every node of group {group} ({title}) receives;",
                "# the roles read this list (clustergen_files, group_vars/all.yml).",
            ]
            text = "\n".join(head + footer) + "\n" + _entries_text(entries)
            artifacts.append(Artifact(f"{FILE_LISTS}/groups/{group}.yml", text))
    for host, entries in node_files.items():
        head = [
            f"# The rendered files only {host} receives, beside its groups' (files/groups/);",
            "# the roles read this list (clustergen_files, group_vars/all.yml).",
        ]
        text = "\n".join(head + footer) + "\n" + _entries_text(entries)
        artifacts.append(Artifact(f"{FILE_LISTS}/hosts/{host}.yml", text))
    return artifacts


def _entries_text(entries: Sequence[Mapping[str, FileField]]) -> str:
    """A YAML list of install entries, each value quoted as tojson writes it."""
    parts = []
    for entry in entries:
        first = True
        for key, value in entry.items():
            parts.append(f"{'- ' if first else '  '}{key}: {json_quoted(value)}\n")
            first = False
    return "".join(parts)


# A string JSON writes as it is, between double quotes: nothing to escape (no quote,
# backslash, control or non-ASCII character) and none of the characters tojson escapes.
_PLAIN = re.compile(r"[A-Za-z0-9 _./:@+=,%#$()*!?;~^|{}\[\]-]*")


def json_quoted(value: str | bool | list[str] | dict[str, str] | None) -> str:
    """A scalar (or a list or mapping of strings) as the templates' tojson filter writes
    it (JSON, with <, >, & and ' escaped): a double-quoted YAML scalar (or flow sequence
    or mapping of them) whatever the value holds. A plain string (the paths, owners and
    modes of every file list, 400,000 of them at 16k nodes) is quoted without a JSON
    encoder: the same text."""
    if isinstance(value, str) and _PLAIN.fullmatch(value):
        return f'"{value}"'
    return (
        json.dumps(value)
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("'", "\\u0027")
    )


def installed_files(
    by_family: Mapping[str, Sequence[Artifact]], members: Mapping[str, frozenset[str]]
) -> tuple[dict[str, list[FileEntry]], dict[str, list[FileEntry]]]:
    """The install entries of the artifacts: inventory group -> those all its nodes
    receive, and host -> those meant for some of a group's nodes only (install.hosts),
    which go to each such node of the group, and nowhere else."""
    by_group: dict[str, list[FileEntry]] = {}
    by_node: dict[str, list[FileEntry]] = {}
    for family, artifacts in sorted(by_family.items()):
        for artifact in artifacts:
            install = artifact.install
            if install is None:
                continue
            entry = _install_entry(family, artifact, install)
            if install.hosts is None:
                by_group.setdefault(install.group, []).append(entry)
                continue
            in_group = members.get(install.group, frozenset())
            for host in install.hosts:
                if host in in_group:
                    by_node.setdefault(host, []).append(entry)
    return (
        {
            group: sorted(entries, key=lambda e: str(e["dest"]))
            for group, entries in by_group.items()
        },
        {host: sorted(entries, key=lambda e: str(e["dest"])) for host, entries in by_node.items()},
    )


def _install_entry(family: str, artifact: Artifact, install: Install) -> FileEntry:
    text = artifact.text
    entry: FileEntry = {
        "family": family,
        "src": artifact.path,  # in the tree; clustergen_files makes it absolute
        "dest": install.dest,
        "owner": install.owner,
        "group": install.file_group,
        "mode": f"0{install.mode:o}",
        "change": install.change.describe(),
    }
    if install.secret is None:
        # What the file must hash to on the node: the converge check compares it.
        entry["sha256"] = hashlib.sha256(text.encode("utf-8")).hexdigest()
    own_role = family in OWN_ROLE
    handler = handler_name(install, own_role)
    if handler is not None:
        entry["notify"] = handler
    if not own_role:
        entry["installed_by"] = FAMILIES_ROLE
    if install.start:
        entry["start"] = {"name": PurePosixPath(install.dest).name}
    if install.absent:
        entry["absent"] = list(install.absent)
    if install.secret is not None:
        entry["secret_key"] = install.secret.key
        entry["secret_variable"] = install.secret.variable
    return entry


def handler_name(install: Install, own_role: bool = True) -> str | None:
    """The handler a change notifies: roles name theirs 'Restart <service>',
    'Reconfigure <daemon>', 'Remount <file system>', 'Set_param <file system>',
    'Reboot', and 'Reformat' (which only reports: a reformat is never automatic). A
    family without a role of its own (outputs.OWN_ROLE) has the `families` role's one
    handler, which restarts the services its changed files name."""
    change = install.change
    if change.action == "nothing":
        return None
    if not own_role:
        if change.action != "restart":
            raise ValueError(
                f"{install.dest}: a family without a role of its own can only restart a "
                f"service on a change, not {change.describe()} (give it a role: OWN_ROLE)"
            )
        return FAMILIES_HANDLER
    if change.action in ("reboot", "reformat"):
        return change.action.capitalize()
    return f"{change.action.capitalize()} {change.service}"
