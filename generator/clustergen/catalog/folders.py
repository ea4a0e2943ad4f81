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


def system_folder(path: str) -> str | None:
    """The system folder an absolute `path` is, or lies in when its whole tree is the
    system's (/lib, /lib64 and every other /lib<qual> included); None for any other. The
    path is taken as it leads: '.', '..' and repeated '/' are resolved first."""
    folder = posixpath.normpath(path)
    if folder.startswith("//"):
        folder = "/" + folder.lstrip("/")  # POSIX keeps a leading '//'; Linux reads it as '/'
    if folder in SYSTEM_FOLDERS:
        return folder
    top = "/" + folder.split("/")[1]
    trees = (*SYSTEM_TREES, top) if _LIB.fullmatch(top) else SYSTEM_TREES
    for tree in trees:
        if folder == tree or folder.startswith(tree + "/"):
            return tree
    return None
