"""`clustergen lock`: the spec's pins against package indexes.

Fixtures under tests/data/lock/ are written in the formats the repositories publish:
NVIDIA's CUDA apt repository for Ubuntu 22.04 (a flat repository's `Packages`: one deb822
stanza per .deb, the per-branch driver packages at `<driver>-0ubuntu1`, cuda-drivers and
the fabric manager at `-1`), the same repository for RHEL 9 (`repodata/primary.xml`, driver
RPMs with Epoch 3) and a site's own flat repository (SchedMD-built Slurm, Lustre).
Debian's real `Packages` index comes from the mirror in this machine's apt sources.
"""

from __future__ import annotations

import gzip
import lzma
import resource
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from clustergen.base.errors import ExitCode
from clustergen.commands.lock import (
    carries,
    nearest_versions,
    parse_apt_packages,
    parse_primary_xml,
)

from support.ci import skip_or_fail
from support.debian import debian_mirror
from support.os_matrix import on_os
from support.paths import DATA, EXAMPLES

LOCK = DATA / "lock"
NVIDIA_UBUNTU = LOCK / "nvidia-cuda-ubuntu2204-x86_64.Packages"
NVIDIA_RHEL = LOCK / "nvidia-cuda-rhel9-x86_64.primary.xml"
SITE_UBUNTU = LOCK / "site-ubuntu2204.Packages"
# Ubuntu 22.04's own archive, for the RDMA stack (docs/rdma.md): the stanzas of rdma-core's
# binaries and perftest at the versions packages.ubuntu.com lists for jammy.
JAMMY_RDMA = LOCK / "ubuntu-jammy-rdma.Packages"
ML = EXAMPLES / "ml-training-8node.yaml"


def spec_file(tmp_path: Path, **software: Any) -> Path:
    document = yaml.safe_load(ML.read_text(encoding="utf-8"))
    document["software"].update(software)
    on_os(document["software"], document["software"]["os"])
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path


def reported(out: str) -> dict[str, str]:
    """Package name -> its report line."""
    return {line.split(" ", 1)[0]: line for line in out.splitlines() if line}


# --- the reference spec against NVIDIA's repository ------------------------------------


def test_every_reference_pin_is_in_the_repositories(cli) -> None:  # type: ignore[no-untyped-def]
    """The driver packages at the revision NVIDIA's repository serves (-0ubuntu1), the
    fabric manager at -1: the rolling play finds every pin."""
    result = cli("lock", str(ML), "--index", str(NVIDIA_UBUNTU), str(SITE_UBUNTU), str(JAMMY_RDMA))
    assert result.code == ExitCode.OK, result.out + result.err
    assert "all 31 pinned package version(s) are in" in result.out


def test_pins_no_index_carries_exit_1_with_their_groups(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("lock", str(ML), "--index", str(NVIDIA_UBUNTU))
    assert result.code == ExitCode.INVALID_SPEC
    lines = reported(result.out)
    # SchedMD's and Lustre's packages are the site's own, the RDMA stack Ubuntu's:
    # NVIDIA's repository has none.
    assert set(lines) == {
        "ibverbs-utils",
        "infiniband-diags",
        "perftest",
        "rdma-core",
        "lustre-client-modules-dkms",
        "lustre-client-utils",
        "lustre-server-utils",
        "slurm-smd",
        "slurm-smd-client",
        "slurm-smd-libpam-slurm-adopt",
        "slurm-smd-slurmctld",
        "slurm-smd-slurmd",
        "slurm-smd-slurmdbd",
    }
    assert lines["slurm-smd-slurmd"] == (
        "slurm-smd-slurmd 23.11.10-1 (groups: compute): no index carries a package of that name"
    )
    assert "13 of 31 pinned package version(s) not in" in result.err


def test_a_guessed_revision_is_reported_with_the_nearest_versions(  # type: ignore[no-untyped-def]
    cli, tmp_path: Path
) -> None:
    spec = spec_file(tmp_path, packages={"nvidia-utils-550": "550.90.07-1"})
    indexes = (str(NVIDIA_UBUNTU), str(SITE_UBUNTU), str(JAMMY_RDMA))
    result = cli("lock", str(spec), "--index", *indexes)
    assert result.code == ExitCode.INVALID_SPEC
    assert result.out == (
        "nvidia-utils-550 550.90.07-1 (groups: nvidia_gpu): not in the indexes; nearest "
        "carried: 550.90.07-0ubuntu1, 550.127.05-0ubuntu1, 550.54.15-0ubuntu1\n"
    )


def test_compressed_indexes_are_read(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    packed_gz = tmp_path / "Packages.gz"
    packed_gz.write_bytes(gzip.compress(NVIDIA_UBUNTU.read_bytes()))
    packed_xz = tmp_path / "Packages.xz"
    packed_xz.write_bytes(lzma.compress(SITE_UBUNTU.read_bytes()))
    result = cli(
        "lock", str(ML), "--index", str(packed_gz), "--index", str(packed_xz), str(JAMMY_RDMA)
    )
    assert result.code == ExitCode.OK, result.out + result.err


def test_el_pins_against_nvidias_primary_xml(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spec = spec_file(tmp_path, os="rocky-9")
    result = cli("lock", str(spec), "--index", str(NVIDIA_RHEL))
    assert result.code == ExitCode.INVALID_SPEC
    lines = reported(result.out)
    # Every driver RPM (Epoch 3) and the fabric manager are found; the rest is not NVIDIA's.
    assert not [name for name in lines if "nvidia" in name], result.out
    assert {"cuda-toolkit-12-4", "slurm-slurmd", "lustre-client"} <= set(lines)


# --- unusable invocations ------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read it"),
        (b"just some text\n", "neither an apt Packages index"),
        (b"<html><body>404</body></html>", "not a dnf primary.xml"),
        (b"<metadata", "not a readable primary.xml"),
        (b"\x1f\x8bnot really gzip", "cannot decompress it (gzip)"),
        (b"\xff\xfe\x00binary", "not a text file"),
    ],
)
def test_an_unusable_index_exits_2(  # type: ignore[no-untyped-def]
    cli, tmp_path: Path, content: bytes | None, message: str
) -> None:
    index = tmp_path / "Packages"
    if content is not None:
        index.write_bytes(content)
    result = cli("lock", str(ML), "--index", str(index))
    assert result.code == ExitCode.USAGE
    assert message in result.err
    assert "Traceback" not in result.err


@pytest.mark.parametrize("kind", ["gzip", "xz", "plain"])
def test_an_index_that_expands_past_any_distribution_s_is_refused(  # type: ignore[no-untyped-def]
    cli, tmp_path: Path, kind: str
) -> None:
    """A small file that expands without end (a gzip of zeros: about 1 MB here for
    1 GiB) ran lock out of memory; it is read in pieces and refused past 256 MiB."""
    index = tmp_path / "Packages"
    if kind == "plain":
        with index.open("wb") as out:
            out.truncate(257 * 1024 * 1024)  # sparse: no disk used
    else:
        compress = gzip.GzipFile if kind == "gzip" else lzma.LZMAFile
        with compress(index, "wb") as out:  # type: ignore[operator]
            zeros = bytes(1024 * 1024)
            for _ in range(1024 if kind == "gzip" else 300):
                out.write(zeros)
    result = cli("lock", str(ML), "--index", str(index))
    assert result.code == ExitCode.USAGE, result.err
    assert "larger than 256 MiB, more than any distribution's index: not read" in result.err


def _lock_in_512_mib(index: Path) -> subprocess.CompletedProcess[str]:
    """`clustergen lock` of the reference spec against `index`, in a process limited to
    512 MiB of address space: an index that grows a table past it fails there."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2**29, 2**29))

    return subprocess.run(
        [sys.executable, "-m", "clustergen", "lock", str(ML), "--index", str(index)],
        capture_output=True,
        text=True,
        preexec_fn=limit,
        timeout=300,
    )


@pytest.mark.slow
def test_an_index_whose_table_would_outgrow_memory_is_refused(tmp_path: Path) -> None:
    """A small compressed index of unique Package stanzas ran lock out of memory below
    the size limit (a 25 MB gzip of 250 MiB did); past 500,000 versions it is refused.
    (A primary.xml is parsed as a stream, each element dropped once read.)"""
    apt = tmp_path / "Packages.gz"
    with gzip.open(apt, "wt") as out:
        for number in range(500_001):
            out.write(f"Package: p{number}\nVersion: 1\n\n")
    done = _lock_in_512_mib(apt)
    assert done.returncode == ExitCode.USAGE, done.stderr
    assert "more than 500000 package versions" in done.stderr


def test_an_index_of_the_other_package_manager_exits_2(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("lock", str(ML), "--index", str(NVIDIA_RHEL))
    assert result.code == ExitCode.USAGE
    assert "a dnf primary.xml, but ubuntu-22.04 installs with apt" in result.err


def test_no_index_is_a_usage_error(cli) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as exited:
        cli("lock", str(ML))
    assert exited.value.code == ExitCode.USAGE


def test_an_invalid_spec_exits_1(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spec = spec_file(tmp_path, cuda="12.7.0")
    result = cli("lock", str(spec), "--index", str(NVIDIA_UBUNTU))
    assert result.code == ExitCode.INVALID_SPEC
    assert "software.no-cuda-12-7" in result.err


# --- the parts ------------------------------------------------------------------------


def test_parsers_read_the_published_formats() -> None:
    apt = parse_apt_packages(NVIDIA_UBUNTU.read_text(encoding="utf-8"))
    assert apt["cuda-drivers-550"] == {"550.54.15-1", "550.90.07-1", "550.127.05-1"}
    assert "550.90.07-0ubuntu1" in apt["nvidia-headless-550"]
    rpm = parse_primary_xml(NVIDIA_RHEL.read_text(encoding="utf-8"))
    assert rpm["nvidia-driver-cuda"] == {"3:550.54.15-1.el9", "3:550.90.07-1.el9"}


@pytest.mark.parametrize(
    ("pin", "versions", "found"),
    [
        ("550.90.07-0ubuntu1", {"550.90.07-0ubuntu1"}, True),
        ("550.90.07-1", {"550.90.07-0ubuntu1"}, False),
        ("0:1.2-1.el9", {"1.2-1.el9"}, True),
        ("3:550.90.07-1.el9", {"550.90.07-1.el9"}, False),
        # A distribution's pin: any packaging revision of the upstream version.
        ("22.05.8-*", {"22.05.8-4+deb12u3"}, True),
        ("22.05.8-*", {"22.05.80-1"}, False),
    ],
)
def test_carries(pin: str, versions: set[str], found: bool) -> None:
    assert carries(pin, versions) is found


def test_nearest_puts_the_same_upstream_version_first() -> None:
    offered = {"550.54.15-0ubuntu1", "550.90.12-0ubuntu1", "550.90.07-0ubuntu1", "535.1-1"}
    assert nearest_versions("550.90.07-1", offered) == (
        "550.90.07-0ubuntu1",
        "550.90.12-0ubuntu1",
        "550.54.15-0ubuntu1",
    )


# --- Debian's real index ----------------------------------------------------------------


@pytest.fixture(scope="module")
def debian_packages(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """bookworm's main Packages index, from the mirror this machine's apt sources name."""
    mirror = debian_mirror()
    if mirror is None:
        skip_or_fail("no Debian mirror in this machine's apt sources")
    target = tmp_path_factory.mktemp("debian") / "Packages.xz"
    try:
        with urllib.request.urlopen(
            f"{mirror}/dists/bookworm/main/binary-amd64/Packages.xz", timeout=120
        ) as response:
            target.write_bytes(response.read())
    except OSError as exc:
        skip_or_fail(f"the Debian mirror {mirror} cannot be read ({exc})")
    return target


def test_debian_served_pins_against_debians_index(  # type: ignore[no-untyped-def]
    cli, tmp_path: Path, debian_packages: Path
) -> None:
    """The distribution's Slurm (pinned 22.05.8-*) is in Debian 12's archive; a revision
    the archive does not serve is reported with the revisions it does."""
    spec = spec_file(tmp_path, os="debian-12", slurm="22.05.8", slurm_packages="distribution")
    result = cli("lock", str(spec), "--index", str(debian_packages))
    assert result.code == ExitCode.INVALID_SPEC  # NVIDIA's packages are not Debian's
    lines = reported(result.out)
    assert not {"slurmctld", "slurmd", "slurmdbd", "slurm-client"} & set(lines), result.out

    wrong = spec_file(
        tmp_path,
        os="debian-12",
        slurm="22.05.8",
        slurm_packages="distribution",
        packages={"slurmd": "22.05.8-99"},
    )
    result = cli("lock", str(wrong), "--index", str(debian_packages))
    line = reported(result.out)["slurmd"]
    assert line.startswith("slurmd 22.05.8-99 (groups: compute): not in the indexes; nearest ")
    assert "carried: 22.05.8-" in line


def test_warnings_go_to_stderr_and_can_be_ignored(cli) -> None:  # type: ignore[no-untyped-def]
    warning = "[software.slurm-schedmd-without-repository]"
    indexes = ("--index", str(NVIDIA_UBUNTU), str(SITE_UBUNTU), str(JAMMY_RDMA))
    result = cli("lock", str(ML), *indexes)
    assert warning in result.err and warning not in result.out
    ignored = cli(
        "lock", str(ML), *indexes, "--ignore", "software.slurm-schedmd-without-repository"
    )
    assert ignored.code == ExitCode.OK and warning not in ignored.err


@pytest.mark.slow
def test_an_index_of_empty_lines_is_read_in_little_memory(tmp_path: Path) -> None:
    """100 MiB of empty lines (a 15 KB xz): lock split them into a list of 105 million
    lines, past 512 MiB (a fresh round of attacks: 256 MiB took 2.6 GB). The fields are
    found in the text as it is; the index carries none of the spec's pins: exit 1."""
    index = tmp_path / "Packages.xz"
    with lzma.open(index, "wb") as out:
        out.write(b"Package: p\nVersion: 1\n")
        for _ in range(100):
            out.write(b"\n" * (1024 * 1024))
    done = _lock_in_512_mib(index)
    assert done.returncode == ExitCode.INVALID_SPEC, done.stderr[-2000:]
    assert "MemoryError" not in done.stderr
