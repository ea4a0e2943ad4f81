"""What a secret looks like in Ansible's output, and a scan of verbose output for it.

Every vault value as given, and the sha256, sha1 and md5 (hex) of it and of every file
that carries it as the roles write it: slurmdbd.conf with its StoragePass line (the
converge check's request holds its sha256; the copy module reports its sha1 and md5) and
the decoded MUNGE key. Any of these in the output allows guessing the secret offline.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

DIGESTS = ("sha256", "sha1", "md5")


def secret_needles(
    vault: Mapping[str, str], files_with_secrets: Mapping[str, bytes]
) -> dict[str, str]:
    """label -> text that must never appear: each vault value, and the digests of each
    value and of each file's content."""
    needles = {f"the value of {name}": value for name, value in vault.items()}
    contents = {f"{name}'s value": value.encode() for name, value in vault.items()}
    contents.update({f"the content of {path}": data for path, data in files_with_secrets.items()})
    for label, data in contents.items():
        for algorithm in DIGESTS:
            needles[f"the {algorithm} of {label}"] = hashlib.new(algorithm, data).hexdigest()
    return needles


def leaks(output: str, needles: Mapping[str, str]) -> list[str]:
    """What of `needles` the output holds, each with the line it is on."""
    found = []
    for label, needle in needles.items():
        at = output.find(needle)
        if at >= 0:
            start = output.rfind("\n", 0, at) + 1
            end = output.find("\n", at)
            line = output[start : end if end >= 0 else len(output)]
            found.append(f"{label}: {line.strip()[:300]}")
    return found
