"""NFS mounts (storage.nfs): the rendered mount units read by systemd itself
(systemd-analyze verify, systemd-escape), where they are installed, the exports of a
server of the spec, and a spec without NFS, which renders nothing of it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import yaml

from clustergen.base.artifacts import Artifact
from clustergen.base.systemd import unit_name
from clustergen.render import render_all
from clustergen.resolve import ResolvedCluster
from clustergen.spec.load import load_spec
from clustergen.validate import validate_cluster

from support.ci import skip_or_fail, tool
from support.paths import DATA, EXAMPLES, REPO


def _render(spec: Path) -> tuple[ResolvedCluster, dict[str, Artifact]]:
    cluster, problems = validate_cluster(load_spec(str(spec)))
    assert cluster is not None, [p.format() for p in problems]
    return cluster, render_all(cluster)


MIXED, MIXED_FILES = _render(DATA / "mixed-fleet.yaml")
GPUS = tuple(f"gpu{i:02d}" for i in range(1, 9))

# tests/data/mixed-fleet.yaml's VAST-style share: NFSv3 over RDMA, 8 connections, not
# required (WantedBy=), on the compute nodes and slurm-head.
DATASETS_UNIT = """\
# NFS mount of vast-vip.example.com:/datasets at /mnt/datasets
# Rendered by clustergen from the spec of cluster ml-training. Do not edit this
# file: change the spec and run `clustergen render` again; every render replaces it.
[Unit]
Description=NFS vast-vip.example.com:/datasets at /mnt/datasets
Wants=network-online.target
After=network-online.target rdma-hw.target

[Mount]
What=vast-vip.example.com:/datasets
Where=/mnt/datasets
Type=nfs
Options=_netdev,vers=3,proto=rdma,port=20049,nconnect=8,hard,noatime,rsize=1048576,wsize=1048576,nosuid,nodev

[Install]
WantedBy=remote-fs.target
"""


def test_a_mount_unit_reads_as_an_admin_writes_it() -> None:
    assert MIXED_FILES["nfs/client/mnt-datasets.mount"].text == DATASETS_UNIT
    home = MIXED_FILES["nfs/client/home.mount"].text
    # Required (the default) and TCP at the default version: part of remote-fs.target,
    # which slurmd starts after; no RDMA ordering.
    assert "\nOptions=_netdev,vers=4.2,nosuid,nodev\n" in home
    assert "\nRequiredBy=remote-fs.target\n" in home and "rdma" not in home


def test_units_go_to_the_nodes_they_select_and_exports_to_their_server() -> None:
    home = MIXED_FILES["nfs/client/home.mount"].install
    datasets = MIXED_FILES["nfs/client/mnt-datasets.mount"].install
    assert home is not None and datasets is not None
    assert (home.dest, home.group) == ("/etc/systemd/system/home.mount", "nfs_client")
    assert home.hosts == GPUS
    assert datasets.hosts == (*GPUS, "slurm-head")  # roles [compute] and nodes slurm-head
    assert MIXED.members["nfs_client"] == frozenset((*GPUS, "slurm-head"))
    # slurm-head serves /srv/home (it is a node of the spec); the filer is the site's.
    assert MIXED.members["nfs_server"] == frozenset({"slurm-head"})
    exports = MIXED_FILES["nfs/server/slurm-head.exports"]
    assert exports.install is not None and exports.install.hosts == ("slurm-head",)
    assert exports.install.dest == "/etc/exports.d/clustergen.exports"
    body = [line for line in exports.text.splitlines() if not line.startswith("#")]
    assert body == ["/srv/home \\", *(f"    {n}(rw,sync,no_subtree_check) \\" for n in GPUS[:-1]),
                    f"    {GPUS[-1]}(rw,sync,no_subtree_check)"]  # fmt: skip


def test_a_spec_without_nfs_renders_no_nfs_file_and_no_nfs_group() -> None:
    cluster, files = _render(EXAMPLES / "ml-training-8node.yaml")
    assert not [path for path in files if path.startswith("nfs/")]
    assert not {"nfs_client", "nfs_server"} & {g.name for g in cluster.groups}
    # So site.yml's NFS plays find no hosts: their groups default to none.
    plays = {p["name"]: p for p in yaml.safe_load((REPO / "site.yml").read_text())}
    for name, group in (("NFS servers", "nfs_server"), ("NFS clients", "nfs_client")):
        assert plays[name]["hosts"].startswith(f"{{{{ groups['{group}'] | default([])")


def test_systemd_accepts_the_units_and_refuses_one_misnamed(tmp_path: Path) -> None:
    analyze = tool("systemd-analyze")
    if analyze is None:
        skip_or_fail("systemd-analyze is not installed")
    units = {Path(p).name: a.text for p, a in MIXED_FILES.items() if p.startswith("nfs/client/")}
    assert sorted(units) == ["home.mount", "mnt-datasets.mount"]
    units["mnt-data.mount"] = units["mnt-datasets.mount"]  # Where= no longer matches
    for name, text in units.items():
        (tmp_path / name).write_text(text)
        run = subprocess.run(
            [analyze, "verify", str(tmp_path / name)], capture_output=True, text=True, timeout=60
        )
        if name == "mnt-data.mount":
            assert run.returncode != 0 and "doesn't match unit name" in run.stderr
        else:
            assert run.returncode == 0, run.stderr


def test_unit_names_are_systemd_escapes() -> None:
    escape = shutil.which("systemd-escape")
    if escape is None:
        skip_or_fail("systemd-escape is not installed")
    # '-', a space and a byte above ASCII are written \\xNN; a '.' only where it would
    # start the name; slashes at the ends and doubled ones count once; the root is '-'.
    paths = ["/mnt/my-data/.cache/a b", "/.hidden/a.b", "/", "//home//", "/a/\u00fc"]
    run = subprocess.run(
        [escape, "--path", "--suffix=mount", *paths], capture_output=True, text=True, check=True
    )
    assert [unit_name(p, "mount") for p in paths] == run.stdout.split()
