"""Ansible: inventory/hosts.yml, inventory/group_vars/*.yml, versions.lock, and the
site repository's .gitignore.

site.yml and the roles consume these. Every node gets the packages of each
inventory group it is in, and the files of every family that declare an install
for one of its groups (files/groups/<group>.yml) or for it alone
(files/hosts/<node>.yml), gathered by all.yml's `clustergen_files` and installed by the
rendered_files role with the handler that a change needs. This family knows no
other family's files: it reads their artifacts. versions.lock carries the pins
for review and for the drift report (verify.yml). No secret is rendered: a file
that needs one names the vault variable its secret line is filled from.

group_vars/all.yml also carries `clustergen_release`, a digest of everything
site.yml applies (the site files, the inventory and every installed artifact): a
node whose recorded release equals it, and whose live state passes the
converge check, is skipped by every converge play (roles/clustergen_state).
`clustergen_release_base` is the same digest less the installed files and their lists
(files/) and the pins (group variables marked with their concern): a release that
differs from a node's only there converges, on that node, only the plays of the
families whose files or pins it changes (all.yml's `clustergen_pins` names the family
of each concern's pins).

This module renders and digests; files.py writes files/'s install lists, inventory.py
the per-host data and host ranges, group_vars.py each group's variables.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

import jinja2

from clustergen.base.artifacts import Artifact
from clustergen.outputs.ansible.files import file_lists, installed_files
from clustergen.outputs.ansible.group_vars import (
    GroupVars,
    Variable,
    all_group_vars,
    base_vars,
    lock_groups,
)
from clustergen.outputs.ansible.inventory import (
    HOSTS_LIST,
    arch_nodes,
    host_patterns,
    host_vars,
    hosts_list,
)
from clustergen.resolve import InventoryGroup, ResolvedCluster
from clustergen.templating import render_template

# Keeps the vault file, an interrupted render's journal and temporaries, and the
# tools' local state out of the site repository (issue 21; docs/security.md).
GITIGNORE = ".gitignore"


def render(
    cluster: ResolvedCluster,
    env: jinja2.Environment,
    by_family: Mapping[str, Sequence[Artifact]],
    site: Sequence[Artifact],
) -> list[Artifact]:
    patterns: dict[tuple[str, ...], tuple[str, ...]] = {}  # groups of the same hosts share one
    groups = []
    for group in cluster.groups:
        if group.hosts not in patterns:
            patterns[group.hosts] = tuple(host_patterns(list(group.hosts)))
        groups.append(InventoryGroup(group.name, patterns[group.hosts], group.children))
    group_files, node_files = installed_files(by_family, cluster.members)
    artifacts = [
        Artifact(
            "inventory/hosts.yml",
            render_template(
                env,
                "ansible/hosts.yml.j2",
                cluster,
                hosts=host_patterns([host.name for host in cluster.hosts]),
                groups=groups,
                architectures=arch_nodes(cluster),
            ),
        ),
        Artifact(
            "versions.lock",
            render_template(
                env,
                "ansible/versions.lock.j2",
                cluster,
                family=cluster.pins.family,
                lock_groups=lock_groups(cluster),
                architectures=arch_nodes(cluster),
            ),
        ),
    ]
    every_group_vars = all_group_vars(cluster)
    for group_vars in every_group_vars:
        artifacts.append(
            Artifact(
                f"inventory/group_vars/{group_vars.group}.yml",
                render_template(env, "ansible/group_vars.yml.j2", cluster, vars=group_vars),
            )
        )
    lists = file_lists(cluster, group_files, node_files)
    artifacts += lists
    artifacts += host_vars(cluster)
    artifacts.append(Artifact(HOSTS_LIST, hosts_list(cluster)))
    # The digests cover all.yml as rendered without them, then all.yml carries them.
    installed = [a for family in by_family.values() for a in family if a.install is not None]
    base = base_stamp(cluster, env, every_group_vars, site, artifacts, lists)
    all_vars = next(g for g in every_group_vars if g.group == "all")
    all_vars.variables.extend(
        [
            Variable(
                "clustergen_release",
                "digest of what site.yml applies (site files, inventory, installed files); "
                "a node that recorded it and passes the converge check is skipped",
                release_stamp([*installed, *site, *artifacts]),
            ),
            Variable(
                "clustergen_release_base",
                "the same digest less the rendered files, their lists (files/) and the pins: "
                "a node that recorded it converges only the plays of the families whose "
                "files or pins differ",
                base,
            ),
        ]
    )
    return [
        *(a for a in artifacts if a.path != f"inventory/group_vars/{all_vars.group}.yml"),
        Artifact(
            f"inventory/group_vars/{all_vars.group}.yml",
            render_template(env, "ansible/group_vars.yml.j2", cluster, vars=all_vars),
        ),
        # The repository's, not the nodes': outside the release stamp, it converges nothing.
        Artifact(GITIGNORE, render_template(env, "ansible/gitignore.j2", cluster)),
    ]


def base_stamp(
    cluster: ResolvedCluster,
    env: jinja2.Environment,
    group_vars: Sequence[GroupVars],
    site: Sequence[Artifact],
    artifacts: Sequence[Artifact],
    lists: Sequence[Artifact],
) -> str:
    """The release's base: `artifacts` less the file `lists`, with each group's
    variables (`group_vars`, before all.yml carries the digests) rendered without its
    pins."""
    listed = {a.path for a in lists}
    pinless = {
        f"inventory/group_vars/{g.group}.yml": render_template(
            env, "ansible/group_vars.yml.j2", cluster, vars=base_vars(g)
        )
        for g in group_vars
    }
    return release_stamp(
        [
            *site,
            *(
                Artifact(a.path, pinless[a.path], a.mode) if a.path in pinless else a
                for a in artifacts
                if a.path not in listed
            ),
        ]
    )


def release_stamp(artifacts: Sequence[Artifact]) -> str:
    """sha256 over every artifact's path, mode and text, in path order: byte-stable, and
    different whenever any file that site.yml applies is. versions.lock (the drift
    report's copy of the pins, which group_vars carry too) and files that are not
    installed (acceptance jobs, facility sheets) stay out, so they converge nothing; so
    does collect.yml, which only reads the nodes for `clustergen audit`."""
    digest = hashlib.sha256()
    for artifact in sorted(artifacts, key=lambda a: a.path):
        if artifact.path in ("versions.lock", "collect.yml"):
            continue
        for part in (artifact.path, f"{artifact.mode:o}", artifact.text):
            encoded = part.encode("utf-8")
            digest.update(len(encoded).to_bytes(8, "big"))
            digest.update(encoded)
    return digest.hexdigest()


# --- files/: the lists of rendered files each group and each node receives --------


# --- host_vars: what only one node has ------------------------------------------


# --- host ranges ------------------------------------------------------------------


# --- pins per group ---------------------------------------------------------------


# --- group_vars -------------------------------------------------------------------
