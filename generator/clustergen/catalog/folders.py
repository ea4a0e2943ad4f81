"""System folders: where a path that root hands to a daemon's user must never lead.

The roles create some folders the spec names and give them to the daemon that writes
there (roles/slurm/defaults/main.yml `slurm_directories`: chown and chmod of the folder
itself, not recursively). A system folder given away that way is a way to root (the
slurm user owning /etc or /usr/bin can replace what root runs) or breaks the system
(/tmp without its sticky bit, /var/log no longer syslog's).

Source: the Filesystem Hierarchy Standard 3.0 (refspecs.linuxfoundation.org/FHS_3.0),
chapters 3 (the root file system: /bin, /boot, /dev, /etc, /home, /lib<qual>, /media,
/mnt, /opt, /root, /run, /sbin, /srv, /tmp), 4 (/usr) and 5 (/var), and systemd's
file-hierarchy(7), which adds /run, /proc and /sys.
"""

from __future__ import annotations

import posixpath
import re

# Whole trees: everything below belongs to the packages and root (/usr, /etc, the
# binaries, libraries and kernel), to the kernel (/dev, /proc, /sys), to root's home, or
# is writable by every user (/tmp, /var/tmp: a user can plant a symlink there, and the
# roles' `file` task follows it).
SYSTEM_TREES: tuple[str, ...] = (
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/proc",
    "/root",
    "/sbin",
    "/sys",
    "/tmp",
    "/usr",
    "/var/tmp",
)
# /lib and /lib<qual>: /lib32, /lib64, /libx32 (FHS 3.0 3.10).
_LIB = re.compile(r"/lib(?:[0-9]+|x32)?")
# The folders themselves: their sub-folders are where a daemon keeps its own files
# (/var/spool/slurmctld, /var/log/slurm, /var/lib/slurm), and where a site mounts its
# storage (/srv/..., /mnt/...).
SYSTEM_FOLDERS: tuple[str, ...] = (
    "/",
    "/home",
    "/media",
    "/mnt",
    "/opt",
    "/run",
    "/run/lock",
    "/srv",
    "/var",
    "/var/cache",
    "/var/lib",
    "/var/local",
    "/var/lock",
    "/var/log",
    "/var/mail",
    "/var/opt",
    "/var/run",
    "/var/spool",
)


# The links every Debian, Ubuntu and EL system has among its system folders, and where
# they lead: file-hierarchy(7) ("/var/run/: A compatibility symlink to /run/", "/var/lock/:
# A compatibility symlink to /run/lock/"); Debian's /run/shm (initscripts, a link to
# /dev/shm where it is still made); /dev/fd and the standard streams (proc(5): /dev/fd is
# a link to /proc/self/fd). A path through one of them names the folder it leads to.
SYSTEM_LINKS: tuple[tuple[str, str], ...] = (
    ("/var/run", "/run"),
    ("/var/lock", "/run/lock"),
    ("/run/shm", "/dev/shm"),
    ("/dev/fd", "/proc/self/fd"),
    ("/dev/stdin", "/proc/self/fd/0"),
    ("/dev/stdout", "/proc/self/fd/1"),
    ("/dev/stderr", "/proc/self/fd/2"),
)


def canonical(path: str) -> str:
    """`path` as the kernel leads it: made absolute, '.', '..' and repeated '/' resolved
    (a leading '//' too, which POSIX keeps and Linux reads as '/'), and through the links
    of SYSTEM_LINKS. Only these links: a folder of the site may be anything."""
    folder = posixpath.normpath("/" + path.lstrip("/"))
    for _ in range(len(SYSTEM_LINKS) + 1):
        for link, target in SYSTEM_LINKS:
            if folder == link or folder.startswith(link + "/"):
                folder = posixpath.normpath(target + folder[len(link) :])
                break
        else:
            break
    return folder


def system_folder(path: str) -> str | None:
    """The system folder an absolute `path` is, or lies in when its whole tree is the
    system's (/lib, /lib64 and every other /lib<qual> included); None for any other. The
    path is taken as it leads (canonical)."""
    folder = canonical(path)
    if folder in SYSTEM_FOLDERS:
        return folder
    top = "/" + folder.split("/")[1]
    trees = (*SYSTEM_TREES, top) if _LIB.fullmatch(top) else SYSTEM_TREES
    for tree in trees:
        if folder == tree or folder.startswith(tree + "/"):
            return tree
    return None


# Where a user can write: what root or SlurmUser runs, loads or reads a key from there is
# a way to root for that user, who can replace it. /tmp and /var/tmp are writable by every
# user (FHS 3.0 3.18 and 5.15), and so is /dev/shm (a 1777 tmpfs, shm_overview(7)) and
# /dev/mqueue (mq_overview(7)); /home holds the users' own homes (FHS 3.0 3.8) and
# /run/user/UID each user's runtime folder (pam_systemd(8), XDG_RUNTIME_DIR). /run/lock
# (and /var/lock, its link) is a 1777 tmpfs on Debian and Ubuntu (initscripts' RAMLOCK,
# drwxrwxrwt on Debian 12), where any user may make lock files (FHS 3.0 5.9); /var/mail
# holds each user's own mailbox (FHS 3.0 5.10); /var/crash is 3777 on Ubuntu (apport);
# /var/lib/php/sessions is 1733 (Debian's php-common).
USER_WRITABLE_TREES: tuple[str, ...] = (
    "/dev/mqueue",
    "/dev/shm",
    "/home",
    "/run/lock",
    "/run/user",
    "/tmp",
    "/var/crash",
    "/var/lib/php/sessions",
    "/var/mail",
    "/var/spool/mail",
    "/var/tmp",
)
# /proc names every process's root, working folder and open files (proc(5):
# /proc/PID/root, cwd, fd/N; /proc/self is the reader itself): a path through it can lead
# to any folder, one where a user writes included, whoever follows it. Never trusted.
PROC = "/proc"


# What user_writable returns for a relative path: it is found from the working folder of
# whatever uses it, which a user may choose.
RELATIVE = "."


def user_writable(path: str, shared: tuple[str, ...] = ()) -> str | None:
    """Where a user could replace `path`: the tree of USER_WRITABLE_TREES or the shared
    file system (`shared`: the spec's NFS and Lustre mount points, which users write to
    from every node) it lies in, PROC for a path through /proc (which leads anywhere), or
    RELATIVE when it is not absolute; None where only root writes. Paths are compared as
    the kernel leads them (canonical: /var/run/user is /run/user)."""
    if not path.startswith("/"):
        return RELATIVE
    folder = canonical(path)
    if folder == PROC or folder.startswith(PROC + "/"):
        return PROC
    for tree in (*USER_WRITABLE_TREES, *shared):
        top = canonical(tree)
        if folder == top or folder.startswith(top.rstrip("/") + "/"):
            return top
    return None


# Where a site mounts its shared storage (FHS 3.0: /home the users' homes, 3.8; /mnt a
# temporarily mounted file system, 3.12; /srv a site's served data, 3.17; /media removable
# media, 3.11): a mount at one of these folders covers nothing of the system's.
MOUNT_FOLDERS: tuple[str, ...] = ("/home", "/media", "/mnt", "/srv")


# Trees below the system folders where root keeps what it runs or trusts: no file system
# may be mounted in them. /run: runtime units, udev rules, sockets (file-hierarchy(7));
# the package managers' databases and maintainer scripts, cron's tables, systemd's and
# munge's state, the logs (FHS 3.0 5.8, 5.14); the vendor trees the catalog's packages
# install into (NVIDIA's, DOCA-OFED's /opt/mellanox).
ROOT_TREES: tuple[str, ...] = (
    "/run",
    "/var/cache/apt",
    "/var/cache/dnf",
    "/var/lib/apt",
    # clustergen's own: pull mode's checkout and record, the host network's rollback copy.
    "/var/lib/clustergen",
    "/var/lib/dnf",
    "/var/lib/dpkg",
    "/var/lib/munge",
    "/var/lib/rpm",
    "/var/lib/systemd",
    "/var/lib/yum",
    "/var/log",
    "/var/spool/cron",
    "/opt/mellanox",
    "/opt/nvidia",
)


def root_tree(path: str) -> str | None:
    """The tree of ROOT_TREES that `path` is or lies in (canonical)."""
    folder = canonical(path)
    for tree in ROOT_TREES:
        if folder == tree or folder.startswith(tree + "/"):
            return tree
    return None


# Root trees where a daemon keeps a folder of its own, one level down (/var/log/slurm,
# /run/slurm): a folder there named for Slurm may be SlurmUser's.
_DAEMON_FOLDER_TREES = ("/run", "/var/log")


def root_owned(folder: str) -> str | None:
    """The root tree a folder the slurm role would give SlurmUser lies in (the package
    database, cron's tables, clustergen's state ...): SlurmUser owning it replaces what
    root runs. A folder of Slurm's own one level below /var/log or /run is not."""
    tree = root_tree(folder)
    if tree is None:
        return None
    rest = posixpath.relpath(canonical(folder), tree)
    if tree in _DAEMON_FOLDER_TREES and "/" not in rest and rest.startswith("slurm"):
        return None
    return tree


def mount_over_system(path: str) -> str | None:
    """The system folder a file system mounted at `path` would cover, where root runs
    programs or reads configuration from: a mount point in a system tree (/etc, /usr, /bin,
    /lib, /root, /tmp ...), or at a system folder itself (/, /opt, /var, /var/lib,
    /var/spool ...), whose contents it would hide; None for a mount point of its own
    (/shared, /opt/apps, /var/lib/slurm-state) or one of MOUNT_FOLDERS. /var/run/x is
    /run/x (canonical)."""
    folder = canonical(path)
    if folder in MOUNT_FOLDERS:
        return None
    return root_tree(folder) or system_folder(folder)
