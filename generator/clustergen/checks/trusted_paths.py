"""One rule for every path root, SlurmUser or every user's job runs, loads, reads keys
from or builds in: it lies where only root writes (catalog/folders.user_writable), and a
mount point never covers a folder root runs programs or reads configuration from
(catalog/folders.mount_over_system).

A spec pull request is untrusted until it merges (docs/security.md "Threat model"); once
merged, what it names is trusted by root on every node. A path below /tmp, /var/tmp,
/dev/shm, a home folder or the spec's own shared file systems can be replaced by any user,
who then runs code with the privilege of whoever trusts the path. Every key that names
such a path is listed here, in `trusted_paths`, so that a new key is added in one place.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from clustergen.base import codes
from clustergen.base.codes import Code
from clustergen.base.errors import Problem, SpecPath
from clustergen.catalog.folders import (
    PROC,
    RELATIVE,
    mount_over_system,
    system_folder,
    user_writable,
)
from clustergen.catalog.slurm_programs import slurm_option_paths
from clustergen.model import Spec
from clustergen.model.storage import PRIVILEGE_OPTIONS, LustreMount, NfsMount, ServerTarget
from clustergen.resolve import ResolvedCluster

# NCCL variables naming a file every job on the node reads, loads or writes (NCCL's
# environment variables documentation, docs.nvidia.com/deeplearning/nccl/user-guide/docs/
# env.html: NCCL_NET_PLUGIN "a library name" dlopen()ed by every process; NCCL_TOPO_FILE
# read, NCCL_TOPO_DUMP_FILE written by every job). A NCCL_NET_PLUGIN without a '/' is a
# suffix or library name the loader searches for; only a path is checked.
_NCCL_FILES = {
    "NCCL_NET_PLUGIN": "every job on these nodes loads it",
    "NCCL_TOPO_FILE": "every job on these nodes takes its topology from it",
    "NCCL_TOPO_DUMP_FILE": "every job on these nodes writes to it",
}


# glob(7)'s pattern characters: a folder written with them is not one folder.
_GLOB = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class TrustedPath:
    """A path a key names, and who trusts it for what."""

    where: SpecPath
    path: str
    trust: str
    code: Code


def _slurm_options(spec: Spec) -> Iterator[TrustedPath]:
    for key, path, trust in slurm_option_paths(spec.slurm.options):
        where: SpecPath = ("slurm", "options", key)
        yield TrustedPath(where, path, trust, codes.SLURM_OPTION_WEAKENS_SECURITY)


def _nccl(spec: Spec) -> Iterator[TrustedPath]:
    blocks: list[tuple[SpecPath, dict[str, object]]] = []
    nccl = getattr(spec, "nccl", None)  # absent where the section itself is invalid
    if nccl is not None:
        blocks.append((("nccl",), dict(nccl.env)))
    for name, profile in spec.hardware.items():
        if profile.nccl is not None:
            blocks.append((("hardware", name, "nccl"), dict(profile.nccl.env)))
    for index, partition in enumerate(spec.slurm.partitions):
        if partition.nccl is not None:
            blocks.append((("slurm", "partitions", index, "nccl"), dict(partition.nccl.env)))
    for base, env in blocks:
        for variable, raw in env.items():
            value = str(raw).strip()
            trust = _NCCL_FILES.get(variable)
            if trust is None and variable.endswith(("_PLUGIN", "_FILE")):
                # Any other plugin or file NCCL takes (NCCL_TUNER_PLUGIN,
                # NCCL_PROFILER_PLUGIN, NCCL_DEBUG_FILE ...), documented or not.
                trust = "every job on these nodes loads, reads or writes it"
            if trust is not None and "/" in value:
                where = (*base, "env", variable)
                yield TrustedPath(where, value, trust, codes.PATH_USERS_CAN_WRITE)


# The acceptance jobs' tools (nccl.acceptance): an admin submits the jobs, which drain
# the nodes that fail (scontrol as that admin), and the nccl_tests role builds nccl-tests
# into nccl_tests_dir as root.
_ACCEPTANCE_TOOLS = {
    "nccl_tests_dir": "root builds nccl-tests into it and the acceptance jobs run its "
    "binaries as the admin who submits them",
    "ib_write_bw": "the acceptance jobs run it as the admin who submits them",
    "dcgmi": "the acceptance jobs run it as the admin who submits them",
}


def _acceptance(spec: Spec) -> Iterator[TrustedPath]:
    nccl = getattr(spec, "nccl", None)  # absent where the section itself is invalid
    if nccl is None:
        return
    for key, trust in _ACCEPTANCE_TOOLS.items():
        where: SpecPath = ("nccl", "acceptance", key)
        path = str(getattr(nccl.acceptance, key))
        yield TrustedPath(where, path, trust, codes.PATH_USERS_CAN_WRITE)


# mkfs.lustre's --param=KEY=VALUE sets a target's permanent parameters; a value that is
# a path names what the servers run or read as root (mdt.identity_upcall: the program the
# MDS kernel runs for every group lookup; lctl(8), the Lustre Operations Manual's "User/
# Group Upcall"). "NONE" and numbers stay as they are.
_MKFS_PARAM = re.compile(r"--param(?:=|$)")


def _lustre_params(spec: Spec) -> Iterator[TrustedPath]:
    storage = getattr(spec, "storage", None)  # absent where the section itself is invalid
    lustre = storage.lustre if storage is not None else None
    if lustre is None:
        return
    targets: list[tuple[tuple[str | int, ...], ServerTarget]] = [(("mgs",), lustre.mgs)]
    targets += [(("mdts", i), t) for i, t in enumerate(lustre.mdts)]
    targets += [(("osts", i), t) for i, t in enumerate(lustre.osts)]
    trust = "the Lustre servers' kernel runs or reads it as root (an upcall, say)"
    for base, target in targets:
        options = list(target.mkfs_options)
        for j, option in enumerate(options):
            if not _MKFS_PARAM.match(option):
                continue
            # --param=KEY=VALUE in one word, or --param and KEY=VALUE as two
            setting = option.partition("=")[2] if "=" in option else ""
            at = j
            if not setting and j + 1 < len(options):
                setting, at = options[j + 1], j + 1
            value = setting.partition("=")[2]
            if value.startswith("/"):
                where: SpecPath = ("storage", "lustre", *base, "mkfs_options", at)
                yield TrustedPath(where, value, trust, codes.PATH_USERS_CAN_WRITE)


def _file_url(url: str | None) -> str | None:
    if url is None or not url.startswith("file:"):
        return None
    return unquote(urlsplit(url).path) or None


def _repositories(spec: Spec) -> Iterator[TrustedPath]:
    for index, repository in enumerate(spec.software.repositories):
        base: SpecPath = ("software", "repositories", index)
        for key, url, trust in (
            ("url", repository.url, "apt and dnf install its packages as root"),
            ("key_url", repository.key_url, "root takes the key there as the packages' signer"),
        ):
            path = _file_url(url)
            if path is not None:
                yield TrustedPath((*base, key), path, trust, codes.PATH_USERS_CAN_WRITE)


def _pull(spec: Spec) -> Iterator[TrustedPath]:
    ansible = getattr(spec, "ansible", None)  # absent where the section itself is invalid
    pull = ansible.pull if ansible is not None else None
    path = _file_url(pull.repository if pull is not None else None)
    if path is not None:
        trust = "every node's pull runs what it serves as root"
        yield TrustedPath(
            ("ansible", "pull", "repository"), path, trust, codes.PATH_USERS_CAN_WRITE
        )


def trusted_paths(spec: Spec) -> Iterator[TrustedPath]:
    """Every path a key of the spec names that root, SlurmUser or every job trusts."""
    yield from _slurm_options(spec)
    yield from _pull(spec)
    isolation = spec.slurm.isolation
    if isolation.job_tmpfs:
        yield TrustedPath(
            ("slurm", "isolation", "job_tmpfs_base"),
            isolation.job_tmpfs_base,
            "slurmstepd creates and mounts every job's /tmp and /dev/shm below it as root",
            codes.PATH_USERS_CAN_WRITE,
        )
    yield from _nccl(spec)
    yield from _acceptance(spec)
    yield from _lustre_params(spec)
    yield from _repositories(spec)


def shared_mounts(spec: Spec) -> tuple[str, ...]:
    """The spec's shared file systems' mount points: users write there from every node."""
    storage = getattr(spec, "storage", None)  # absent where the section itself is invalid
    if storage is None:
        return ()
    lustre = (storage.lustre.mount.path,) if storage.lustre else ()
    return (*lustre, *(mount.path for mount in storage.nfs))


def _place(path: str, shared: tuple[str, ...]) -> str | None:
    """Where `path` lies, said for a message, when a user could replace it; None where
    only root writes."""
    if _GLOB.search(posixpath.dirname(path)):
        return (
            "has a pattern in its folders, which may match a folder where users write "
            "(Prolog and Epilog take glob(7) patterns)"
        )
    where = user_writable(path, shared)
    if where is None:
        return None
    if where == RELATIVE:
        return "is a relative path, found from whatever folder it is used in"
    if where == PROC:
        return "leads through /proc, which names any process's root, folder or files"
    if where in shared:
        return f"lies in {where}, a shared file system users write to"
    return f"lies in {where}, where users can write"


# The log files whose folders the slurm role creates and gives SlurmUser, with Slurm's
# defaults (roles/slurm/defaults/main.yml, slurm_directories; slurmdbd's LogFile is the
# default there, as slurm.options does not reach slurmdbd.conf).
_SLURM_USER_LOGS = (
    ("slurmctldlogfile", "/var/log/slurm/slurmctld.log"),
    ("slurmdlogfile", "/var/log/slurm/slurmd.log"),
)


def slurm_user_folders(spec: Spec) -> tuple[str, ...]:
    """The folders the slurm role gives SlurmUser: StateSaveLocation and the log folders."""
    options = {key.lower(): str(value) for key, value in spec.slurm.options.items()}
    logs = [options.get(key, default) for key, default in _SLURM_USER_LOGS]
    folders = [spec.slurm.state_save.path, *(posixpath.dirname(log) for log in logs)]
    folders.append("/var/log/slurm")  # slurmdbd's
    return tuple(dict.fromkeys(posixpath.normpath(f) for f in folders if f.startswith("/")))


def _root_trusts(trusted: TrustedPath) -> bool:
    """Whether more than SlurmUser trusts the path: root, or every job. What only
    SlurmUser runs or reads (PrologSlurmctld, the JWT key SchedMD keeps in
    StateSaveLocation) may lie in SlurmUser's own folders."""
    return "as SlurmUser" not in trusted.trust and "jwt_key" not in trusted.trust


def paths(cluster: ResolvedCluster) -> list[Problem]:
    """Each trusted path where only root writes; what root or every job trusts not in
    the folders the slurm role gives SlurmUser either."""
    spec = cluster.spec
    shared = shared_mounts(spec)
    slurm_user = slurm_user_folders(spec)
    problems = []
    for trusted in trusted_paths(spec):
        place = _place(trusted.path, shared)
        if place is None and _root_trusts(trusted):
            owned = user_writable(trusted.path, slurm_user)
            if owned is not None and owned != RELATIVE:
                place = f"lies in {owned}, which the slurm role gives SlurmUser"
        if place is None:
            continue
        problems.append(
            Problem(
                trusted.code,
                trusted.where,
                f"{trusted.path} {place}, and {trusted.trust}: a user who replaces it runs "
                "code with that privilege; put it where only root writes (an absolute path "
                "under /etc or /usr, say)",
            )
        )
    return problems


def mounts(cluster: ResolvedCluster) -> list[Problem]:
    """No NFS or Lustre mount point covers a folder root runs programs or reads
    configuration from; set-user-ID programs and device files only as the mount's setuid
    key says."""
    storage = cluster.spec.storage
    if storage is None:
        return []
    mounts: list[tuple[SpecPath, NfsMount | LustreMount]] = [
        (("storage", "nfs", i), mount) for i, mount in enumerate(storage.nfs)
    ]
    if storage.lustre is not None:
        mounts.append((("storage", "lustre", "mount"), storage.lustre.mount))
    problems = []
    for base, mount in mounts:
        for j, option in enumerate(mount.options):
            if option in PRIVILEGE_OPTIONS:
                problems.append(
                    Problem(
                        codes.STORAGE_MOUNT_SETUID,
                        (*base, "options", j),
                        f"'{option}': clustergen mounts network file systems nosuid,nodev; "
                        "to run set-user-ID programs from this one, say why in its setuid "
                        "key (device files never work on it)",
                    )
                )
        where, path = (*base, "path"), mount.path
        system = mount_over_system(path)
        if system is not None:
            problems.append(
                Problem(
                    codes.STORAGE_MOUNT_OVER_SYSTEM_FOLDER,
                    where,
                    f"a mount at {path} covers {system}, where root runs programs or reads "
                    "configuration from: whoever writes the file system (its server, or a "
                    "user with root on any machine that mounts it) replaces them on every "
                    "node; mount it below /home, /mnt, /srv or a folder of its own, such as "
                    "/shared",
                )
            )
    return problems


# exports(5) options that trust what a client says: root_squash is the default, and
# secure (requests from ports below 1024 only, which only root on a client can send).
_TRUSTING_EXPORT_OPTIONS = {
    "no_root_squash": "take root on every client that mounts the export as root on it: one "
    "user who is root on any of them plants set-user-ID programs on the server, where the "
    "clients' nosuid does not apply",
    "insecure": "take requests from ports above 1023, which any user of a client can send "
    "with any uid (AUTH_SYS): every user could act as every other",
}


def exports(cluster: ResolvedCluster) -> list[Problem]:
    """A node of the spec exports no system folder over NFS: root on every node that
    mounts it could then read the MUNGE key or rewrite what root runs there (an NFS
    client's root is trusted as far as the export's options say, and the spec's exports
    are rw by default)."""
    storage = cluster.spec.storage
    if storage is None:
        return []
    problems = []
    for i, mount in enumerate(storage.nfs):
        if mount.server not in cluster.by_name:
            continue  # a filer's exports are the site's
        if mount.trusted_clients is None:
            for j, option in enumerate(mount.export_options):
                why = _TRUSTING_EXPORT_OPTIONS.get(option)
                if why is not None:
                    problems.append(
                        Problem(
                            codes.STORAGE_NFS_EXPORT_TRUSTS_CLIENTS,
                            ("storage", "nfs", i, "export_options", j),
                            f"'{option}': {mount.server} would {why}; leave it out, or say "
                            "why in the mount's trusted_clients key (exports(5))",
                        )
                    )
        system = mount_over_system(mount.export) or system_folder(mount.export)
        if system is not None:
            problems.append(
                Problem(
                    codes.STORAGE_NFS_EXPORT_SYSTEM_FOLDER,
                    ("storage", "nfs", i, "export"),
                    f"{mount.server} would export {mount.export}, in {system}, to the nodes "
                    "that mount it: root on any of them could read or replace what root "
                    "runs and trusts there (the MUNGE key, Slurm's state); export a folder "
                    "of its own, such as /srv/...",
                )
            )
    return problems
