"""No package registry's host name is in the repository (the project's standards): CI and
the tests reach registries only as the machine is configured to (its apt sources, pip's
index), so a host written into a file here would be a second, unreviewed source. The names
are assembled below so that this file does not hold them either."""

from __future__ import annotations

import subprocess

import pytest

from support.ci import require
from support.paths import REPO

# The repository's own files: the fast matrix leaves this to the main run.
pytestmark = pytest.mark.repository

HOSTS = [
    ".".join(parts)
    for parts in (
        ("deb", "debian", "org"),
        ("security", "debian", "org"),
        ("ftp", "debian", "org"),
        ("archive", "ubuntu", "com"),
        ("security", "ubuntu", "com"),
        ("pypi", "org"),
        ("files", "pythonhosted", "org"),
        ("registry", "npmjs", "org"),
        ("dl", "rockylinux", "org"),
        ("dl", "fedoraproject", "org"),
    )
]


def test_no_tracked_file_names_a_package_registry() -> None:
    require("git")
    found = subprocess.run(
        ["git", "grep", "-n", "-I", "-F", *[arg for host in HOSTS for arg in ("-e", host)]],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert found.returncode == 1, found.stdout + found.stderr
