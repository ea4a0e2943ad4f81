"""Hostile strings: every string a spec holds is refused with a positioned reason, or
arrives inert in every output.

The string fields are found by walking the spec's models (every `str`, every string key
of a mapping, every untyped value of a pattern), and each one is located in a spec that
holds them all: the reference specs, the test specs in tests/data, a compact spec with
every pattern, and the 8-node reference spec with every optional string set
(`_every_string_spec`). A field the models add later and no spec holds fails
`test_every_string_field_is_tried`.

For each field and each hostile piece (`;`, `$(`, backticks, a newline, `..`, `/`,
quotes, `%`, `{{`, a space, `#`), the piece is appended to the field's value, everywhere
the spec holds that value (so a renamed profile or host is renamed where it is referred
to too). The mutant is either invalid, with an error at a place holding the value or
naming it, or it renders, and then each output is compared with the render of the
unmutated spec, per format, once it is known where it leads:

- an accepted absolute path leads where it reads: no '.', '..' or empty segment moves it
  (the layout script and the roles act on it as root, so a quoted '/../..' that climbs out
  of the Lustre mount or into /etc is not inert however it is quoted);
- every path stays inside the tree, and the set of files changes only in name;
- YAML files parse to what the original does with the value replaced, and hold no Jinja
  delimiters from it (Ansible templates every string it reads);
- shell scripts (.sh, .sbatch, job.env, #!) hold the value only where the shell reads it
  as data: made of characters no shell reads (shlex.quote leaves it bare), in single
  quotes, in double quotes if it holds no $, `, " or \\, or in a comment without a newline;
- every other file (slurm.conf and the other conf files, systemd units, versions.lock)
  holds the value verbatim on the same lines, with no newline, no comment mark, no space
  splitting a key=value line into more words, and in a systemd unit '%' written '%%'.
"""

from __future__ import annotations

import copy
import functools
import html
import posixpath
import re
import shlex
import types
import typing
import xml.etree.ElementTree as ET
from pathlib import PurePosixPath
from typing import Annotated, Any, Union

import pytest
import yaml
from pydantic import BaseModel

from clustergen.base.artifacts import Artifact
from clustergen.base.systemd import unit_name
from clustergen.dev.large_spec import compact_spec
from clustergen.model.patterns import RackPattern, SwitchGroup, TargetGroup
from clustergen.model.root import Spec
from clustergen.render import render_all
from clustergen.spec.load import parse_spec
from clustergen.validate import validate_cluster

from support.paths import DATA, EXAMPLES, REFERENCE_SPECS, REPO

SchemaPath = tuple[str, ...]
HOSTILE = [";x", "$(x)", "`x`", "\nx=1", "/../..", "/x", "'", '"', "%n", "{{x}}", " x", "#x"]
HOSTILE.append("x" * 300)  # a name longer than a file name may be (255 bytes)
PATTERNS: dict[SchemaPath, type[BaseModel]] = {
    ("racks", "[]"): RackPattern,
    ("network", "fabric", "switches", "[]"): SwitchGroup,
    ("storage", "lustre", "mdts", "[]"): TargetGroup,
    ("storage", "lustre", "osts", "[]"): TargetGroup,
}


def _members(annotation: Any) -> list[Any]:
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _members(typing.get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in _members(arg)]
    return [annotation]


def _model(annotation: Any) -> type[BaseModel] | None:
    found = [m for m in _members(annotation) if isinstance(m, type) and issubclass(m, BaseModel)]
    return found[0] if found else None


def _container(annotation: Any, kind: type) -> Any:
    found = [m for m in _members(annotation) if typing.get_origin(m) is kind]
    return found[0] if found else None


def string_fields(annotation: Any, path: SchemaPath = ()) -> set[SchemaPath]:
    """Every place the models accept a string: 'x.[]' a list item, 'x.{key}' a mapping's
    key, 'x.{}' its value."""
    found: set[SchemaPath] = set()
    for member in _members(annotation):
        origin = typing.get_origin(member)
        if member is str:
            found.add(path)
        elif isinstance(member, type) and issubclass(member, BaseModel):
            for name, field in member.model_fields.items():
                found |= string_fields(field.annotation, (*path, name))
        elif origin is list:
            found |= string_fields(typing.get_args(member)[0], (*path, "[]"))
            pattern = PATTERNS.get((*path, "[]"))
            if pattern is not None:
                found |= string_fields(pattern, (*path, "[](pattern)"))
        elif origin is dict:
            key, value = typing.get_args(member)
            if str in _members(key):
                found.add((*path, "{key}"))
            found |= string_fields(value, (*path, "{}"))
    return found


def string_places(
    node: Any, path: tuple[Any, ...], where: SchemaPath, annotation: Any, out: dict[Any, Any]
) -> None:
    """The first place in `node` of every string field: schema path -> (path, is key)."""
    if isinstance(node, dict):
        model = _model(annotation)
        pattern = PATTERNS.get(where)
        if pattern is not None and ("names" in node or "count" in node):
            model, where = pattern, (*where[:-1], "[](pattern)")
        mapping = _container(annotation, dict)
        for key, value in node.items():
            if model is not None:
                field = model.model_fields.get(key)
                inner = field.annotation if field else None
                string_places(value, (*path, key), (*where, key), inner, out)
            else:
                out.setdefault((*where, "{key}"), ((*path, key), True))
                inner = typing.get_args(mapping)[1] if mapping else None
                string_places(value, (*path, key), (*where, "{}"), inner, out)
    elif isinstance(node, list):
        items = _container(annotation, list)
        inner = typing.get_args(items)[0] if items else None
        for index, value in enumerate(node):
            string_places(value, (*path, index), (*where, "[]"), inner, out)
    elif isinstance(node, str):
        out.setdefault(where, (path, False))


def _every_string_spec() -> dict[str, Any]:
    """The 8-node reference spec with every optional string the others leave out."""
    document: dict[str, Any] = yaml.safe_load(
        (REPO / "examples/ml-training-8node.yaml").read_text()
    )
    document["cluster"]["extra_roles"] = ["monitor"]
    document["cluster"]["munge_key_variable"] = "vault_munge_key"
    document["cluster"]["time_servers"] = ["ntp1.hpc.example.org"]
    document["software"]["repositories"].append(
        {
            "name": "site",
            "url": "https://repo.example.org/debian/",
            "key_url": "https://repo.example.org/debian/key.asc",
            "key_fingerprint": "0123 4567 89AB CDEF 0123  4567 89AB CDEF 0123 4567",
            "suite": "jammy",
            "components": ["main"],
        }
    )
    document["software"]["slurm_repository"] = "site"  # it serves SchedMD's builds
    document["software"]["nhc"] = {"version": "1.4.3-1", "repository": "site", "package": "nhc"}
    document["software"]["dcgm"] = "4.1.1"  # dcgm-exporter reads DCGM 4
    document["monitoring"] = {
        "node_exporter": {"version": "1.3.1"},
        "dcgm_exporter": {"version": "4.0.4"},
        "slurm": {"kind": "exporter", "version": "0.20-1", "auth_users": ["prometheus"]},
    }
    document["storage"]["nfs"] = [
        {
            "server": "slurm-head",
            "export": "/srv/home",
            "path": "/home",
            "roles": ["compute"],
            "export_options": ["rw", "sync", "no_subtree_check", "root_squash"],
            "setuid": "the homes hold the site's set-user-ID MPI launcher",
            "trusted_clients": "a reason for the reviewer, never rendered",
        }
    ]
    document["storage"]["lustre"]["mount"]["setuid"] = "a reason for the reviewer"
    profile = document["hardware"]["hgx-h100"]
    profile["gpu"]["gres_type"] = "h100"
    profile["gpu"]["nvlink_domain"] = {"trays": 4, "switch_trays": 2}
    profile["other_gpus"] = [{"model": "l40s", "count": 1, "gres_type": "l40s"}]
    document["network"]["nvlink_domains"] = [
        {"name": "nvl1", "nodes": "gpu[01-04]"},
        {"name": "nvl2", "nodes": "gpu[05-08]"},
    ]
    profile["nccl"] = {"env": {"NCCL_ALGO": "Ring"}}
    document["network"]["bmc"]["gateway"] = "10.0.2.1"
    # Not a catalog model: a catalog one gives the switch its ports, so a value appended
    # to it changes the port budget, which is no injection.
    document["network"]["fabric"]["switches"][0]["model"] = "QM8790-site"
    document["nodes"][0]["features"] = ["h100"]
    slurm = document["slurm"]
    slurm["accounting"]["database"] = {
        "host": "acctdb.hpc.example.org",  # an external server (docs/ansible.md)
        "port": 3307,
        "name": "slurm_acct_db",
        "user": "slurm",
        "password_variable": "vault_slurmdbd_password",
    }
    slurm["options"]["SchedulerParameters"] = "bf_continue"
    partition = slurm["partitions"][0]
    partition.update(
        allow_accounts=["ml"],
        allow_groups=["ml"],
        allow_qos=["normal"],
        qos="normal",
        default_time="1:00:00",
        nccl={"env": {"NCCL_ALGO": "Tree"}},
        options={"MaxNodes": "8"},
    )
    slurm["qos"] = [{"name": "normal"}, {"name": "low", "preempt": ["normal"]}]
    slurm["priority"]["max_age"] = "7-0"
    slurm["state_save"] = {"path": "/var/spool/slurmctld"}
    slurm["isolation"] = {
        "job_tmpfs_base": "/var/spool/slurmd/job_tmpfs",
        "ssh_admins": {"users": ["root"], "groups": ["hpc-admins"]},
    }
    document["software"]["packages"] = {"libnccl2": "2.21.5-1+cuda12.4"}
    document["software"]["rdma"] = {"version": "39.0", "perftest": "4.4+0.37-1"}
    document["software"]["nccl_tests"] = {
        "version": "2.13.6",
        "url": "https://github.com/NVIDIA/nccl-tests/archive/v2.13.6.tar.gz",
        "sha256": "52b472a58a4918d3221a9b8c4bd9335382643d7e241983918b64692d685cc3d1",
    }
    document["network"]["fabric"]["subnet_manager"] = {
        "kind": "opensm",
        "nodes": ["slurm-head"],
        "root_guids": ["0x0c42a10300a1b2c3"],
    }
    lustre = document["storage"]["lustre"]
    lustre["client_tuning"]["osc.*.checksum_type"] = "adler"
    lustre["persistent_tuning"] = {"mdt.*.identity_upcall": "NONE"}  # unchecked: a warning
    lustre["dom_limit"] = "1MiB"
    lustre["pools"] = [{"name": "flash", "osts": list(range(8))}]
    lustre["layouts"][0]["pool"] = "flash"
    lustre["mgs"]["mkfs_options"] = ["--reformat"]
    lustre["mgs"]["mount_options"] = ["errors=remount-ro"]
    lustre["mdts"][0]["mkfs_options"] = ["--reformat"]
    lustre["mdts"][0]["mount_options"] = ["errors=remount-ro"]
    document["nccl"]["env"]["NCCL_ALGO"] = "Ring"
    document["nccl"]["acceptance"] = {
        "nccl_tests_dir": "/opt/nccl-tests/build",
        "ib_write_bw": "/usr/bin/ib_write_bw",
        "dcgmi": "/usr/bin/dcgmi",
    }
    return document


def _patterned_spec() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(compact_spec(64))
    document["storage"]["lustre"]["osts"][0]["mkfs_options"] = ["--reformat"]
    document["storage"]["lustre"]["osts"][0]["mount_options"] = ["errors=remount-ro"]
    # A director-class switch (not in the catalog: its ports are the rate's usual, assumed).
    document["network"]["fabric"]["switches"][0]["model"] = "CS9500"
    document["racks"][0]["devices"] = [
        {"u": 42, "name": "{rack}-tor", "height_u": 1, "max_watts": 50}
    ]
    return document


def _shelf_patterned_spec() -> dict[str, Any]:
    """tests/data/rack-scale-liquid.yaml with its shelf racks written as a rack pattern, and
    trays without PSUs of their own (fed from the busbar)."""
    document: dict[str, Any] = yaml.safe_load((DATA / "rack-scale-liquid.yaml").read_text())
    document["hardware"]["hgx"]["power"] = {"max_watts": 10200}
    document["racks"][0] = {
        "names": "nvl[1-2]",
        "height_u": 48,
        "nodes": "gpu[1-2]",
        "units": [1],
        "power_shelves": {"count": 2, "shelf_kw": 33},
    }
    document["facility"]["cdus"] = [{"name": "cdu1", "capacity_kw": 40, "racks": "nvl[1-2]"}]
    return document


def _zfs_patterned_spec() -> dict[str, Any]:
    """tests/data/lustre-zfs.yaml with its targets written as target groups."""
    document: dict[str, Any] = yaml.safe_load((DATA / "lustre-zfs.yaml").read_text())
    lustre = document["storage"]["lustre"]
    devices = [f"/dev/disk/by-id/{{node}}-{{index}}-{disk}" for disk in "abcd"]
    lustre["mdts"] = [
        {
            "count": 2,
            "nodes": "mds[1-2]",
            "failover": "pairs",
            "device": "mdt{index}pool/mdt{index}",
            "zpool": {"vdev_type": "mirror", "devices": devices[:2]},
            "dataset": {"compression": "lz4"},
            "mkfs_options": ["--reformat"],
            "mount_options": ["noatime"],
        }
    ]
    lustre["osts"] = [
        {
            "count": 2,
            "nodes": "oss[1-2]",
            "failover": "pairs",
            "device": "ost{index}pool/ost{index}",
            "zpool": {"vdev_type": "raidz2", "devices": devices},
            "dataset": {"recordsize": "1M", "compression": "lz4"},
        }
    ]
    return document


def _rails_spec() -> dict[str, Any]:
    """The superpod example (the rails pattern) with switch models outside the catalog."""
    document: dict[str, Any] = yaml.safe_load((EXAMPLES / "superpod-rail-128node.yaml").read_text())
    pattern = document["network"]["fabric"]["switches"][0]
    pattern.update(leaf_model="QM9790-site", spine_model="QM9790-site")
    # A route on each network of the nodes' interfaces (roles/host_network).
    network = document["network"]
    network["management"]["routes"] = [{"to": "10.50.0.0/16", "via": "10.0.0.254"}]
    network["fabric"]["routes"] = [{"to": "10.101.0.0/16", "via": "10.100.0.254"}]
    network["storage"]["routes"] = [{"to": "10.201.0.0/16", "via": "10.200.0.254"}]
    network["frontend"]["routes"] = [{"to": "192.0.2.0/24", "via": network["frontend"]["gateway"]}]
    return document


def _pull_spec(**source: Any) -> dict[str, Any]:
    """The booted spec on Debian 13 with pull mode (ansible.pull: Debian 13's ansible-core
    is one the roles run on; the reference specs' OS ships none), from an ssh server with
    its host key and a tag by default; `source` replaces the repository and the tag."""
    document: dict[str, Any] = yaml.safe_load((REPO / "tests/data/booted-3node.yaml").read_text())
    document["software"].update(os="debian-13", slurm="24.11.5")
    key = "AAAAC3NzaC1lZDI1NTE5AAAAIEjJ3g7C3Sv8wDZrW2Fvm5VXJYd2r7l0c8ZbS8N1n3Xk"
    pull: dict[str, Any] = {
        "repository": "ssh://git@git.example.org/site/cluster.git",
        "tag": "release-1",
        "signers": [
            {"name": "release@site.example.org", "ssh_key": f"ssh-ed25519 {key}"},
            {
                "name": "ops@site.example.org",
                "gpg_fingerprint": "67493429344047839EAF222889871402DA9358BF",
                "gpg_key": (REPO / "tests/data/openpgp-signer.asc").read_text(),
            },
        ],
        "host_keys": [f"git.example.org ssh-ed25519 {key}"],
        "path": "clusters/booted",
        "every": "30min",
        "jitter": "10min",
    }
    if source:
        del pull["tag"], pull["host_keys"]
        pull.update(source)
    document["ansible"] = {"pull": pull}
    return document


def _doca_spec() -> dict[str, Any]:
    """The RoCE reference spec on DOCA-OFED from a named repository (software.rdma)."""
    document: dict[str, Any] = yaml.safe_load((REPO / "examples/edge-roce-2node.yaml").read_text())
    document["software"]["repositories"] = [
        {
            "name": "doca",
            "url": "https://linux.mellanox.com/public/repo/doca/2.9.1/ubuntu24.04/x86_64/",
            "key_url": "https://linux.mellanox.com/public/repo/doca/GPG-KEY-Mellanox.pub",
        }
    ]
    document["software"]["rdma"] = {"stack": "doca-ofed", "version": "2.9.1", "repository": "doca"}
    return document


SOURCES: dict[str, dict[str, Any]] = {
    "every-string": _every_string_spec(),
    "doca": _doca_spec(),
    "pull": _pull_spec(),
    "pull-branch": _pull_spec(repository="https://git.example.org/site.git", branch="rel/7"),
    "pull-commit": _pull_spec(
        repository="https://git.example.org/site.git", commit="0123456789abcdef" * 2 + "01234567"
    ),
    "rails": _rails_spec(),
    **{path.stem: yaml.safe_load(path.read_text()) for path in REFERENCE_SPECS},
    **{path.stem: yaml.safe_load(path.read_text()) for path in sorted(DATA.glob("*.yaml"))},
    "patterns": _patterned_spec(),
    "zfs-patterns": _zfs_patterned_spec(),
    "shelf-patterns": _shelf_patterned_spec(),
}


def _find_places() -> dict[SchemaPath, tuple[str, tuple[Any, ...], bool]]:
    places: dict[SchemaPath, tuple[str, tuple[Any, ...], bool]] = {}
    for name, document in SOURCES.items():
        found: dict[Any, Any] = {}
        string_places(document, (), (), Spec, found)
        for where, (path, is_key) in found.items():
            places.setdefault(where, (name, path, is_key))
    return places


PLACES = _find_places()
# The storage fabric's switches share the compute fabric's model but are refused by a
# check (network.storage-switches; tests/invalid/storage-fabric-switches): no valid spec
# holds them, and nothing renders them.
# Likewise OpenSM on the storage fabric (network.subnet-manager-keys: OpenSM is rendered
# for network.fabric only, docs/subnet-manager.md).
REFUSED_PLACES = (
    ("ansible", "pull", "ref"),  # refused whenever given (ansible.pull-ref)
    ("network", "storage", "switches"),
    ("network", "storage", "subnet_manager", "nodes"),
    ("network", "storage", "subnet_manager", "root_guids"),
)
FIELDS = {
    field
    for field in string_fields(Spec)
    if not any(field[: len(refused)] == refused for refused in REFUSED_PLACES)
}


def test_every_string_field_is_tried() -> None:
    missing = sorted(".".join(field) for field in FIELDS - set(PLACES))
    assert not missing, (
        f"no spec holds these string fields; set them in _every_string_spec: {missing}"
    )


def test_every_source_is_valid() -> None:
    for name in {source for source, _, _ in PLACES.values()}:
        text = yaml.safe_dump(SOURCES[name], sort_keys=False)
        cluster, problems = validate_cluster(parse_spec(text, name, name))
        assert cluster is not None, [p.format() for p in problems]


@functools.cache
def _render(name: str) -> dict[str, Artifact]:
    text = yaml.safe_dump(SOURCES[name], sort_keys=False)
    cluster, problems = validate_cluster(parse_spec(text, name, name))
    assert cluster is not None, [p.format() for p in problems]
    return render_all(cluster)


def _replaced(node: Any, old: str, new: str) -> Any:
    """`node` with every string equal to `old`, value or key, made `new`."""
    if isinstance(node, dict):
        return {(new if k == old else k): _replaced(v, old, new) for k, v in node.items()}
    if isinstance(node, list):
        return [_replaced(v, old, new) for v in node]
    return new if node == old else node


def _holding(node: Any, value: str, path: tuple[Any, ...] = ()) -> set[tuple[Any, ...]]:
    """The paths of every value, or key, equal to `value`."""
    found: set[tuple[Any, ...]] = set()
    if isinstance(node, dict):
        for key, item in node.items():
            found |= {(*path, key)} if key == value else set()
            found |= _holding(item, value, (*path, key))
    elif isinstance(node, list):
        for index, item in enumerate(node):
            found |= _holding(item, value, (*path, index))
    elif node == value:
        found.add(path)
    return found


def _get(node: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        node = node[part]
    return node


def _is_yaml(path: str) -> bool:
    return path.endswith((".yml", ".yaml")) or path == ".clustergen-manifest"


def _is_shell(path: str, text: str) -> bool:
    return path.endswith((".sh", ".sbatch", ".env")) or text.startswith("#!")


def _shell_states(text: str) -> list[str]:
    """The quoting state of each character of a bash script: 'single', 'double', 'comment'
    or 'bare' (read by the shell as syntax: words, operators, expansions)."""
    states: list[str] = []
    state, escaped, word_start = "bare", False, True
    for char in text:
        if state == "comment":
            states.append("comment")
            if char == "\n":
                state, word_start = "bare", True
            continue
        if escaped:
            states.append(state)
            escaped = False
            continue
        if state == "single":
            states.append("single")
            if char == "'":
                state = "bare"
            continue
        if char == "\\":
            escaped = True
        elif state == "double":
            if char == '"':
                state = "bare"
        elif char == "'":
            state = "single"
        elif char == '"':
            state = "double"
        elif char == "#" and word_start:
            state = "comment"
        states.append(state)
        word_start = char in " \t\n;|&(){}=" and state in ("bare", "comment")
    return states


# Inside double quotes the shell still expands $ and `, and a " or \\ ends or escapes.
_DOUBLE_QUOTE_UNSAFE = set('$`"\\')


def _check_shell(where: str, hostile: str, original: str, old: str, new: str) -> None:
    """Every occurrence of the value is inert: made only of characters no shell reads
    (shlex.quote leaves it bare), in single quotes, in double quotes when it holds nothing
    they read, or in a comment when it holds no line break; and the script says nothing
    else than the original's."""
    states = _shell_states(new)
    start = new.find(hostile)
    assert start >= 0 or new.replace(hostile, original) == old, f"{where}: changed elsewhere"
    while start >= 0:
        inside = set(states[start : start + len(hostile)])
        quoted = inside == {"single"} or (
            inside == {"double"} and not _DOUBLE_QUOTE_UNSAFE & set(hostile)
        )
        commented = inside == {"comment"} and "\n" not in hostile
        plain = shlex.quote(hostile) == hostile  # nothing a shell reads: needs no quotes
        line = new[new.rfind("\n", 0, start) + 1 : new.find("\n", start)]
        assert quoted or commented or plain, f"{where} is not quoted for the shell: {line!r}"
        start = new.find(hostile, start + 1)


def _unrenamed(path: str, original: str, hostile: str) -> str:
    """The output's path with the value put back, as written and as systemd escapes a
    path into a mount unit's name (an NFS mount's unit is named after its mount point)."""
    path = path.replace(hostile, original)
    if original.startswith("/"):
        path = path.replace(unit_name(hostile, "mount"), unit_name(original, "mount"))
    return path


def _check_inert(
    original: str, hostile: str, before: dict[str, Artifact], after: dict[str, Artifact]
) -> None:
    assert len(after) == len(before), "the mutant renders other files"
    for path in after:
        parts = PurePosixPath(path).parts
        assert not PurePosixPath(path).is_absolute() and ".." not in parts, path
        assert all(len(part.encode()) <= 255 for part in parts), f"{path[:80]}...: too long"
    renamed = {_unrenamed(p, original, hostile): p for p in after}
    assert set(renamed) == set(before), "a file's path changed beyond the value"
    for old_path, new_path in renamed.items():
        old, new = before[old_path].text, after[new_path].text
        if old == new:
            continue
        where = f"{new_path}: value {hostile!r}"
        if _is_yaml(new_path):
            # Ansible templates every string it reads from a variable file.
            assert not re.search(r"\{[{%#]", hostile) or hostile not in new, (
                f"{where}: Ansible would template it"
            )
            loaded = _without_digests(yaml.safe_load(new))
            if original.startswith("/"):  # the install list names the mount's unit
                mount = unit_name(hostile, "mount"), unit_name(original, "mount")
                loaded = _replaced_inside(loaded, *mount)
            assert _replaced_inside(loaded, hostile, original) == _without_digests(
                yaml.safe_load(old)
            ), where
        elif _is_shell(new_path, new):
            _check_shell(where, hostile, original, old, new)
        elif new_path.endswith((".html", ".svg")):
            # The facility pages show names and the spec's warnings (which a hostile
            # value may add): every value escaped for HTML/XML, and an SVG still parses.
            escaped = html.escape(hostile, quote=True)
            assert escaped == hostile or hostile not in new, f"{where} is not escaped"
            if new_path.endswith(".svg"):
                ET.fromstring(new)
        else:
            assert "\n" not in hostile and "#" not in hostile, f"{where} breaks a line"
            written, was = hostile, original
            if new_path.endswith((".mount", ".service", ".timer")):
                # A lone '%' is a systemd specifier.
                written, was = hostile.replace("%", "%%"), original.replace("%", "%%")
            assert new.replace(written, was) == old, f"{where} is not as written"
            for line_old, line_new in zip(old.splitlines(), new.splitlines(), strict=True):
                if line_old != line_new:
                    assert len(line_new.split()) == len(line_old.split()), (
                        f"{where} splits a line's words: {line_new!r}"
                    )


def _leads_where_it_reads(path: str) -> bool:
    """Resolving '.', '..' and repeated '/' as the kernel does changes nothing but a
    trailing '/'."""
    return posixpath.normpath(path) == (path.rstrip("/") or "/")


# Digests of rendered files (group_vars' sha256 and the release) change with any value.
DIGEST_KEYS = ("sha256", "clustergen_release", "clustergen_release_base")


def _without_digests(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: "<digest>" if k in DIGEST_KEYS else _without_digests(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_without_digests(item) for item in node]
    return node


def _replaced_inside(node: Any, old: str, new: str) -> Any:
    """`node` with `old` replaced by `new` inside every string, value or key."""
    if isinstance(node, dict):
        return {
            _replaced_inside(k, old, new): _replaced_inside(v, old, new) for k, v in node.items()
        }
    if isinstance(node, list):
        return [_replaced_inside(v, old, new) for v in node]
    if isinstance(node, str):
        return node.replace(old, new)
    return node


@pytest.mark.sweep
@pytest.mark.parametrize("field", sorted(PLACES), ids=".".join)
def test_hostile_values_are_refused_or_inert(field: SchemaPath) -> None:
    name, path, is_key = PLACES[field]
    document = SOURCES[name]
    original = path[-1] if is_key else _get(document, path)
    unsafe: list[str] = []
    for piece in HOSTILE:
        hostile = original + piece
        mutant = _replaced(copy.deepcopy(document), original, hostile)
        text = yaml.safe_dump(mutant, sort_keys=False, allow_unicode=True)
        cluster, problems = validate_cluster(parse_spec(text, name, name))
        if cluster is None:
            errors = [p for p in problems if p.severity == "error"]
            holding = _holding(mutant, hostile)
            assert any(
                hostile in p.message or any(p.path[: len(h)] == h for h in holding) for p in errors
            ), f"{hostile!r} refused, but no error is about it: {[p.format() for p in errors]}"
            continue
        if original.startswith("/") and not _leads_where_it_reads(hostile):
            unsafe.append(f"{hostile!r} accepted: it leads to {posixpath.normpath(hostile)}")
            continue
        if any("(pattern)" in part for part in field) and "{" in original:
            # A template: expanded before validation, so each element it makes is checked
            # by the written-out field's rule (tried above); the value itself is in no output.
            continue
        try:
            _check_inert(original, hostile, _render(name), render_all(cluster))
        except AssertionError as exc:
            unsafe.append(str(exc).splitlines()[0] if str(exc) else repr(hostile))
    assert not unsafe, "accepted and not inert:\n" + "\n".join(unsafe)
