"""Lustre server packages per backend: each server gets the OSD of the targets it serves
(and OpenZFS for zfs ones), never the other backend's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from clustergen.outputs.ansible.group_vars import lock_groups
from clustergen.render import render_all
from clustergen.resolve import ResolvedCluster
from clustergen.spec.load import LoadedSpec
from clustergen.validate import validate, validate_cluster

from support.paths import DATA

LUSTRE_ZFS = DATA / "lustre-zfs.yaml"


def document(**software: Any) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(LUSTRE_ZFS.read_text(encoding="utf-8"))
    data["software"].update(software)
    return data


def mixed(**software: Any) -> dict[str, Any]:
    """The zfs file system with an ldiskfs MGS and MDT on mds1/mds2: zfs OSTs only."""
    data = document(**software)
    lustre = data["storage"]["lustre"]
    lustre["mgs"] = {
        "node": "mds1",
        "failover": ["mds2"],
        "device": "/dev/disk/by-id/nvme-mgs",
        "backend": "ldiskfs",
    }
    lustre["mdts"] = [
        {
            "index": 0,
            "node": "mds1",
            "failover": ["mds2"],
            "device": "/dev/disk/by-id/nvme-mdt0",
            "backend": "ldiskfs",
        }
    ]
    return data


def cluster_of(data: dict[str, Any]) -> ResolvedCluster:
    cluster, problems = validate_cluster(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))
    assert cluster is not None, [p.format() for p in problems]
    return cluster


def locked(cluster: ResolvedCluster) -> dict[str, tuple[str, dict[str, str]]]:
    return {g.name: (g.nodes, dict(g.packages)) for g in lock_groups(cluster)}


def test_zfs_servers_get_the_zfs_osd_and_openzfs_not_ldiskfs_el() -> None:
    groups = locked(cluster_of(document(os="rocky-9", slurm_repository=None)))
    every_package = {name for _, packages in groups.values() for name in packages}
    assert not {"kmod-lustre-osd-ldiskfs", "lustre-osd-ldiskfs-mount"} & every_package
    assert "lustre_ldiskfs" not in groups  # no ldiskfs target, nobody gets its OSD
    assert groups["lustre_server"] == (
        "mds[1-2],oss[1-2]",
        {"kmod-lustre": "2.15.5-1.el9", "lustre": "2.15.5-1.el9"},
    )
    assert groups["lustre_zfs"] == (
        "mds[1-2],oss[1-2]",
        {
            "kmod-lustre-osd-zfs": "2.15.5-1.el9",
            "kmod-zfs": "2.1.11-1.el9",
            "lustre-osd-zfs-mount": "2.15.5-1.el9",
            "zfs": "2.1.11-1.el9",
        },
    )


def test_zfs_servers_on_apt_get_openzfs() -> None:
    groups = locked(cluster_of(document()))
    assert groups["lustre_zfs"] == (
        "mds[1-2],oss[1-2]",
        {"zfs-dkms": "2.1.11-*", "zfsutils-linux": "2.1.11-*"},
    )
    # Clients mount Lustre; they run no OSD and no ZFS.
    assert "zfsutils-linux" not in groups["lustre_client"][1]


def test_a_mixed_file_system_puts_each_osd_on_the_servers_that_use_it() -> None:
    cluster = cluster_of(mixed(os="rocky-9"))
    groups = locked(cluster)
    assert groups["lustre_ldiskfs"] == (
        "mds[1-2]",
        {"kmod-lustre-osd-ldiskfs": "2.15.5-1.el9", "lustre-osd-ldiskfs-mount": "2.15.5-1.el9"},
    )
    assert groups["lustre_zfs"][0] == "oss[1-2]"
    assert {"zfs", "kmod-zfs", "kmod-lustre-osd-zfs"} <= set(groups["lustre_zfs"][1])
    # The format scripts agree: each target formats with its own backend.
    rendered = render_all(cluster)
    mgs = next(text.text for path, text in rendered.items() if path == "lustre/format/mgs.sh")
    ost = next(
        text.text for path, text in rendered.items() if path == "lustre/format/scratch-ost0000.sh"
    )
    assert "--backfstype=ldiskfs" in mgs and "zpool" not in mgs
    assert "--backfstype=zfs" in ost


def test_an_ldiskfs_file_system_has_no_zfs_anywhere() -> None:
    data = mixed(os="rocky-9")
    data["storage"]["lustre"]["backend"] = "ldiskfs"
    for ost in data["storage"]["lustre"]["osts"]:
        ost.update(device=f"/dev/disk/by-id/scsi-ost{ost['index']}")
        ost.pop("zpool", None)
        ost.pop("dataset", None)
    data["software"].pop("zfs")
    groups = locked(cluster_of(data))
    assert "lustre_zfs" not in groups
    assert groups["lustre_server"][0] == groups["lustre_ldiskfs"][0] == "mds[1-2],oss[1-2]"


@pytest.mark.parametrize("builder", [document, mixed])
def test_zfs_targets_need_a_zfs_version(builder: Any) -> None:
    data = builder()
    data["software"].pop("zfs")
    problems = validate(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))[1]
    found = [p for p in problems if p.code.name == "packages.zfs-version-missing"]
    assert len(found) == 1 and found[0].severity == "error"
    servers = "mds1, mds2, oss1, oss2" if builder is document else "oss1, oss2"
    assert servers in found[0].message


def test_the_role_installs_both_sets_where_a_server_has_both(tmp_path: Path) -> None:
    """roles/lustre_server installs the common packages with the OSD sets of its groups."""
    from support.paths import REPO

    text = (REPO / "roles/lustre_server/vars/main.yml").read_text(encoding="utf-8")
    assert "lustre_ldiskfs_packages | default({})" in text
    assert "lustre_zfs_packages | default({})" in text
    tasks = (REPO / "roles/lustre_server/tasks/main.yml").read_text(encoding="utf-8")
    assert 'pinned_packages_versions: "{{ lustre_server_all_packages }}"' in tasks
