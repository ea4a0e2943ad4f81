"""The operating systems clustergen renders for: packaging, NVIDIA's repository, own Slurm.

One record per `software.os`. Sources (docs/platforms.md has the table and what is proven):
- NVIDIA's repository directory ("codename") per distribution [doc: NVIDIA Driver
  Installation Guide, "Linux System Requirements" table, branch 590 (Dec 2025) and branch
  610 (docs.nvidia.com/datacenter/tesla/driver-installation-guide/610/introduction.html)]:
  rhel9 and rhel10 serve RHEL and Rocky Linux alike; ubuntu2204, ubuntu2404, debian12 and
  debian13 are in both guides; ubuntu2604 only in the 610 guide, not in the 590 one. The
  repository is developer.download.nvidia.com/compute/cuda/repos/<codename>/<arch>/.
- The Slurm each distribution ships (slurm-wlm's binaries slurmctld, slurmd, slurmdbd,
  slurm-client) [src: packages.debian.org / packages.ubuntu.com, as recorded in
  shared/reference/domain-facts.md "Where Slurm packages come from" and "Releases in
  Debian's registry"]: Debian 12 22.05.8, Debian 13 24.11.5 (24.11.5-4+deb13u1), Ubuntu
  22.04 21.08.5, Ubuntu 24.04 23.11.4 (23.11.4-1.2ubuntu5), Ubuntu 26.04 25.11.2
  (packages.ubuntu.com/resolute/slurm-wlm: 25.11.2-1ubuntu2). RHEL and Rocky ship none:
  EPEL builds `slurm-*` and moves within a release.
- The rdma-core and perftest each distribution ships (the RDMA stack's default, docs/rdma.md)
  [src: packages.ubuntu.com jammy/net/rdma-core 39.0-1, noble/amd64/rdma-core 50.0-2build2,
  source/jammy/perftest 4.4+0.37-1, source/noble/perftest 24.01.0+0.38-1build2,
  source/resolute/perftest 25.01.0+0.80-1build1; packages.debian.org/perftest: bookworm
  4.5+0.17-1, trixie 25.01.0+0.80-1; `apt-cache policy rdma-core` on Debian 12: 44.0-2;
  trixie's main/binary-amd64 Packages index: rdma-core, ibverbs-utils and infiniband-diags
  56.1-1, opensm 3.3.23-3.1].
  rdma-core is pinned as its upstream version with any revision (noble-updates moves the
  revision); perftest exactly. Not known here: rdma-core of Ubuntu 26.04, and
  anything on EL (AppStream moves rdma-core within a release): software.rdma.version sets it.
- OpenSM, the distribution's InfiniBand subnet manager (docs/subnet-manager.md) [src:
  packages.ubuntu.com noble/opensm and jammy/libopensm-dev (source opensm) 3.3.23-2;
  `apt-cache policy opensm` on Debian 12: 3.3.23-2+b1; trixie's Packages index: 3.3.23-3.1].
  Not known here: Ubuntu 26.04, EL.
- PMIx, the runtime Slurm's mpi/pmix plugin loads (slurm.mpi: pmix, docs/slurm.md "MPI and
  PMIx") [src: `apt-cache policy libpmix2` on Debian 12: 4.2.2-1+deb12u1; trixie's
  libpmix2t64_5.0.7-1 .deb, the t64 rename of libpmix2 (packages.debian.org/trixie/
  libpmix2t64); noble's universe/binary-amd64 Packages index (Ubuntu's archive, read
  2026-12-06): libpmix2t64 5.0.1-4.1build1, not in noble-updates, and noble's
  Contents-amd64: mpi_pmix_v5.so in slurm-wlm-basic-plugins (Slurm 23.11.4, which opens
  libpmix.so.2)]. Pinned as its upstream version with any revision, as rdma-core is. Not
  known here: EL, Ubuntu 26.04; and none on Ubuntu 22.04, whose Slurm 21.08.5 is built
  without the plugin (jammy's Contents-amd64 lists no mpi_pmix), so a PMIx there serves
  no srun.
- Open MPI, the MPI nccl-tests is built with (software.nccl_tests) [src: `apt-cache policy
  openmpi-bin libopenmpi-dev` on Debian 12: 4.1.4-3+b1; libopenmpi3 4.1.4 depends on
  libpmix2 (>= 4.2.2), so its ranks take their PMIx from Slurm's mpi/pmix; trixie's
  Packages index: openmpi-bin and libopenmpi-dev 5.0.7-1, libopenmpi40 depends on
  libpmix2t64 (>= 5.0.6); Ubuntu's universe/binary-amd64 Packages indexes (read
  2026-12-06): jammy openmpi-bin and libopenmpi-dev 4.1.2-2ubuntu1, noble 4.1.6-7ubuntu2,
  whose libopenmpi3t64 depends on libpmix2 (>= 5.0.1), which libpmix2t64 provides; neither
  in -updates]. Pinned as its upstream version with any revision. Not known here: Ubuntu
  26.04, EL.
- prometheus-node-exporter (monitoring.node_exporter) [src: `apt-cache policy
  prometheus-node-exporter` on Debian 12: 1.5.0-1+b6; trixie's Packages index:
  1.9.0-1+b4]; pinned as its upstream version with any revision. Not known here for the
  other releases: monitoring.node_exporter.version.
- Ansible and git for pull mode (ansible.pull, docs/ansible.md "Pull mode"): the
  distribution's `ansible` (the collections the roles use: community.general,
  ansible.posix, community.mysql), `ansible-core` (ansible-pull, ansible-playbook) and
  `git`, each pinned as its upstream version with any revision [src: `apt-cache policy
  ansible ansible-core git` on Debian 12: 7.7.0+dfsg-3+deb12u1, 2.14.18-0+deb12u2,
  1:2.39.5-0+deb12u3; trixie's main/binary-amd64 Packages index: 12.0.0+dfsg-0+deb13u1,
  2.19.11-0+deb13u1, 1:2.47.3-0+deb13u1; Ubuntu 24.04 noble/universe: ansible
  9.2.0+dfsg-0ubuntu5 and ansible-core 2.16.3-0ubuntu2 (apt-get logs and dpkg lists of
  noble hosts), git 1:2.43.0-1ubuntu7 (noble-updates moves the revision: 7.1, 7.3)]. Not
  known here: Ubuntu 22.04 and 26.04, and EL, whose AppStream ansible-core bundles none of
  the collections (EPEL packages them one by one).
- gpgv for pull mode's OpenPGP signers (ansible.pull.signers[].gpg_key), pinned always in
  pull mode: apt depended on it up to Debian 12 and Ubuntu 24.04, but Debian 13's apt
  3.0 depends on sqv instead, so a trixie node need not have it [src: `apt-cache policy
  gpgv` on Debian 12: 2.2.40-1.1+deb12u2; trixie's main/binary-amd64 Packages index:
  gpgv 2.4.7-21+deb13u1+b5, apt 3.0.4 `Depends: ... sqv (>= 1.3.0)`; noble's main
  index 2.4.4-2ubuntu17, noble-updates 2.4.4-2ubuntu17.6].
- Refused: RHEL 8 and Rocky Linux 8 (`REFUSED_DISTRIBUTIONS`). EL 8's dnf Python bindings
  (python3-dnf) exist only for its platform Python 3.6, and ansible-core 2.17 dropped
  Python 3.6 targets, so the ansible-core the site repository runs (2.17 and later,
  tests/requirements.txt) cannot install a package there; ansible-core 2.16, the last
  that could, reached end of life in May 2025 [src: ansible/ansible#83357, "Interpreter
  discovery broken for rhel 8 based distros on 2.17": "The version of ansible-core
  chosen for RHEL 8 is ansible-core 2.16"; ansible/ansible#83597; nodejs/build#4124, the
  python3-dnf import failure under /usr/bin/python3.12 on RHEL 8; docs.ansible.com
  "ansible-core support matrix": 2.16 end of life May 2025].
- The RPM dist tag of packages built per EL release (`.el9`, `.el10`) [src: the
  `%{?dist}` of NVIDIA's, Whamcloud's and SchedMD's spec files, which the EL release's
  redhat-rpm-config defines as `.el<major>`].
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

PackageFamily = Literal["apt", "dnf"]

NVIDIA_CUDA_REPOSITORIES = "https://developer.download.nvidia.com/compute/cuda/repos/"


@dataclass(frozen=True)
class Distribution:
    """One `software.os`: how its packages are named and where NVIDIA's come from."""

    name: str  # as the spec writes it: ubuntu-24.04
    title: str  # for messages and docs: Ubuntu 24.04 LTS
    family: PackageFamily
    # The directory of NVIDIA's CUDA repository for it (docs: the guide's "Codename").
    nvidia_codename: str
    # The Slurm release of the distribution's own packages; None where it ships none (EL).
    slurm: str | None = None
    # The RPM dist tag of per-release builds (EL only).
    el_dist: str | None = None
    # The first driver branch whose NVIDIA installation guide lists the distribution, where
    # an older branch is known not to (0: every branch the catalog knows).
    first_driver_branch: int = 0
    first_driver_source: str = ""
    # The distribution's rdma-core (upstream version) and perftest (exact), where known.
    rdma_core: str | None = None
    perftest: str | None = None
    opensm: str | None = None  # the opensm package's exact version, where known
    # The PMIx runtime library package (slurm.mpi: pmix) and its upstream version, where known.
    pmix: tuple[str, str] | None = None
    # Open MPI's upstream version (nccl-tests' MPI, software.nccl_tests), where known.
    openmpi: str | None = None
    # prometheus-node-exporter's upstream version (monitoring.node_exporter), where known.
    node_exporter: str | None = None
    # Pull mode's packages, upstream versions, where known: the `ansible` bundle, the
    # `ansible-core` it depends on, `git` (with its epoch), and `gpgv` (OpenPGP-signed
    # releases).
    ansible: str | None = None
    ansible_core: str | None = None
    git: str | None = None
    gpgv: str | None = None


DISTRIBUTIONS: dict[str, Distribution] = {
    d.name: d
    for d in (
        Distribution(
            "ubuntu-22.04",
            "Ubuntu 22.04 LTS",
            "apt",
            "ubuntu2204",
            "21.08.5",
            rdma_core="39.0",
            perftest="4.4+0.37-1",
            opensm="3.3.23-2",
            openmpi="4.1.2",
        ),
        Distribution(
            "ubuntu-24.04",
            "Ubuntu 24.04 LTS",
            "apt",
            "ubuntu2404",
            "23.11.4",
            rdma_core="50.0",
            perftest="24.01.0+0.38-1build2",
            opensm="3.3.23-2",
            pmix=("libpmix2t64", "5.0.1"),
            openmpi="4.1.6",
            ansible="9.2.0+dfsg",
            ansible_core="2.16.3",
            git="1:2.43.0",
            gpgv="2.4.4",
        ),
        Distribution(
            "ubuntu-26.04",
            "Ubuntu 26.04 LTS",
            "apt",
            "ubuntu2604",
            "25.11.2",
            # The 590 guide's table (Dec 2025) has no ubuntu2604; 595.91.07 is the driver of
            # AWS's Ubuntu 26.04 GPU images (DLAMI GPU base OSS, 2026-08) [2nd], and the 610
            # guide lists ubuntu2604 [doc].
            first_driver_branch=595,
            first_driver_source="NVIDIA's driver installation guide for branch 590 lists no "
            "ubuntu2604 repository; the 610 guide does",
            perftest="25.01.0+0.80-1build1",
        ),
        Distribution(
            "debian-12",
            "Debian 12",
            "apt",
            "debian12",
            "22.05.8",
            rdma_core="44.0",
            perftest="4.5+0.17-1",
            opensm="3.3.23-2+b1",
            pmix=("libpmix2", "4.2.2"),
            openmpi="4.1.4",
            node_exporter="1.5.0",
            ansible="7.7.0+dfsg",
            ansible_core="2.14.18",
            git="1:2.39.5",
            gpgv="2.2.40",
        ),
        Distribution(
            "debian-13",
            "Debian 13",
            "apt",
            "debian13",
            "24.11.5",
            rdma_core="56.1",
            perftest="25.01.0+0.80-1",
            opensm="3.3.23-3.1",
            pmix=("libpmix2t64", "5.0.7"),
            openmpi="5.0.7",
            node_exporter="1.9.0",
            ansible="12.0.0+dfsg",
            ansible_core="2.19.11",
            git="1:2.47.3",
            gpgv="2.4.7",
        ),
        Distribution("rocky-9", "Rocky Linux 9", "dnf", "rhel9", el_dist=".el9"),
        Distribution("rhel-9", "Red Hat Enterprise Linux 9", "dnf", "rhel9", el_dist=".el9"),
        Distribution("rocky-10", "Rocky Linux 10", "dnf", "rhel10", el_dist=".el10"),
        Distribution("rhel-10", "Red Hat Enterprise Linux 10", "dnf", "rhel10", el_dist=".el10"),
    )
}


# Operating systems clustergen knows and will not render for: a spec naming one is told
# why, and what to move to, instead of only "not allowed" (validate.py).
_EL8_REFUSED = (
    "EL 8's dnf Python bindings exist only for its platform Python 3.6, which the "
    "ansible-core that runs site.yml (2.17 and later) no longer manages, so no package "
    "could be installed on these nodes (ansible-core 2.16, the last that could, reached "
    "end of life in May 2025; ansible/ansible#83357): move the nodes to EL 9 or 10 "
    "(rocky-9, rhel-9, rocky-10, rhel-10; docs/platforms.md)"
)
REFUSED_DISTRIBUTIONS: Mapping[str, str] = MappingProxyType(
    {"rhel-8": _EL8_REFUSED, "rocky-8": _EL8_REFUSED}
)


def nvidia_repository(os: str, arch: str = "x86_64") -> str:
    """NVIDIA's CUDA repository for the distribution (the base URL apt or dnf is given)."""
    return f"{NVIDIA_CUDA_REPOSITORIES}{DISTRIBUTIONS[os].nvidia_codename}/{arch}/"
