"""Lustre: the rendered scripts under a PATH of recording stand-ins (tests/support/
lustre_stub.py) for mkfs.lustre, zpool, zfs, lfs, lctl, lnetctl, mount, blkid,
wipefs and hostname; shellcheck on every script; the zfs variant's golden files.

The format scripts are run as rendered except for the device paths, which point
at a block device node (made with mknod, or a loop device; only stat'ed: every tool
that would open it is a stand-in) or at files that are not block devices. The
layout and MGS scripts get a temporary directory for the mount and state file.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from clustergen.render import render_all
from clustergen.spec.load import load_spec, parse_spec
from clustergen.validate import validate_cluster

from support.ci import require, skip_or_fail, tool
from support.paths import DATA, EXAMPLES, GOLDEN, TESTS
from support.regen import stale

STUB = TESTS / "support" / "lustre_stub.py"
TOOLS = ("mkfs.lustre", "zpool", "zfs", "lfs", "lctl", "lnetctl", "mount", "blkid", "wipefs")
ZFS_SPEC = DATA / "lustre-zfs.yaml"
DESTRUCTIVE = {"mkfs.lustre", "zpool create", "wipefs -a"}


def rendered(spec: Path) -> dict[str, str]:
    cluster, problems = validate_cluster(load_spec(str(spec)))
    assert cluster is not None, [p.format() for p in problems]
    return {path: a.text for path, a in render_all(cluster).items()}


ML = rendered(EXAMPLES / "ml-training-8node.yaml")
ZFS = rendered(ZFS_SPEC)


@pytest.fixture(scope="module")
def blockdev(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A block device node the scripts only stat (every tool that would open it is a
    stand-in): made with mknod where allowed (root), else an existing loop device."""
    node = tmp_path_factory.mktemp("dev") / "blk"
    try:
        os.mknod(node, stat.S_IFBLK | 0o600, os.makedev(7, 250))
        return str(node)
    except PermissionError:
        pass
    for name in sorted(os.listdir("/dev")):
        if name.startswith("loop") and Path(f"/dev/{name}").is_block_device():
            return f"/dev/{name}"
    skip_or_fail("neither mknod nor a loop device for the format guards")
    raise AssertionError  # unreachable


@dataclass
class Stubs:
    dir: Path
    log: Path
    env: dict[str, str]

    def canned(self, name: str, out: str = "", rc: int = 0) -> None:
        (self.dir / f"{name}.out").write_text(out)
        (self.dir / f"{name}.rc").write_text(str(rc))

    def calls(self) -> list[list[str]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def run(self, script: Path, *args: str) -> subprocess.CompletedProcess[str]:
        self.log.unlink(missing_ok=True)
        return subprocess.run(
            ["bash", str(script), *args],
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )


@pytest.fixture
def stubs(tmp_path: Path) -> Stubs:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in (*TOOLS, "hostname"):
        target = bin_dir / name
        target.write_text(f'#!/bin/sh\nSTUB_TOOL={name} exec {sys.executable} {STUB} "$@"\n')
        target.chmod(0o755)
    state = tmp_path / "state"
    state.mkdir()
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "STUB_DIR": str(state),
        "STUB_LOG": str(tmp_path / "calls.log"),
        "STUB_HOST": "oss02",
        "LC_ALL": "C",
    }
    return Stubs(state, tmp_path / "calls.log", env)


def script(tmp_path: Path, text: str, **replace: str) -> Path:
    """The rendered script with `readonly NAME=...` lines replaced."""
    for name, value in replace.items():
        text, count = re.subn(
            rf"^readonly {name}=.*$", f"readonly {name}={value}", text, flags=re.M
        )
        assert count == 1, name
    path = tmp_path / "script.sh"
    path.write_text(text)
    return path


def destructive(calls: list[list[str]]) -> list[list[str]]:
    return [c for c in calls if c[0] in DESTRUCTIVE or " ".join(c[:2]) in DESTRUCTIVE]


OST3 = "lustre/format/training-ost0003.sh"
MKFS_OST3 = [
    "mkfs.lustre",
    "--fsname=training",
    "--ost",
    "--index=3",
    "--mgsnode=10.10.0.5@o2ib0",
    "--backfstype=ldiskfs",
]


@pytest.fixture
def ost3(tmp_path: Path, blockdev: str) -> tuple[Path, str]:
    device = tmp_path / "by-id-ost3"
    device.symlink_to(blockdev)
    return script(tmp_path, ML[OST3], DEVICE=f"'{device}'"), str(device)


def test_dry_run_checks_and_changes_nothing(stubs: Stubs, ost3: tuple[Path, str]) -> None:
    path, device = ost3
    result = stubs.run(path)
    assert result.returncode == 0, result.stderr
    assert stubs.calls() == [
        ["hostname"],
        ["blkid", "-p", "-o", "export", "--", device],
        ["wipefs", "-n", "--", device],
    ]
    assert "dry run, would run: " + " ".join([*MKFS_OST3, device]) in result.stdout


def test_confirmed_format_runs_exactly_these_commands(stubs: Stubs, ost3: tuple[Path, str]) -> None:
    path, device = ost3
    result = stubs.run(path, "--yes")
    assert result.returncode == 0, result.stderr
    assert stubs.calls() == [
        ["hostname"],
        ["blkid", "-p", "-o", "export", "--", device],
        ["wipefs", "-n", "--", device],
        [*MKFS_OST3, device],
    ]


@pytest.mark.parametrize(
    ("blkid", "wipefs", "said"),
    [
        ("LABEL=training-OST0003\nTYPE=ext4\n", "", "already holds training-OST0003"),
        ("LABEL=home-OST0001\nTYPE=ext4\n", "", "carries ext4 labelled home-OST0001"),
        ("TYPE=xfs\n", "", "carries xfs"),
        ("", "DEVICE OFFSET TYPE\nsdb 0x0 gpt\n", "carries a signature"),
    ],
    ids=["matching-label", "foreign-lustre-label", "foreign-fs", "wipefs-signature"],
)
def test_a_used_device_is_refused_without_the_louder_flag(
    stubs: Stubs, ost3: tuple[Path, str], blkid: str, wipefs: str, said: str
) -> None:
    path, device = ost3
    stubs.canned("blkid", blkid, 0 if blkid else 2)
    stubs.canned("wipefs", wipefs)
    result = stubs.run(path, "--yes")
    assert result.returncode == 1
    assert "REFUSED" in result.stderr and said in result.stderr, result.stderr
    assert destructive(stubs.calls()) == []
    # With the louder flag it reformats, saying so.
    result = stubs.run(path, "--yes", "--reformat-existing")
    assert result.returncode == 0, result.stderr
    assert destructive(stubs.calls()) == [[*MKFS_OST3, "--reformat", device]]
    assert "WARNING: destroying" in result.stdout


def test_the_louder_flag_alone_does_nothing(stubs: Stubs, ost3: tuple[Path, str]) -> None:
    result = stubs.run(ost3[0], "--reformat-existing")
    assert result.returncode == 2
    assert stubs.calls() == []


def test_another_host_is_refused_before_any_check(stubs: Stubs, ost3: tuple[Path, str]) -> None:
    stubs.env["STUB_HOST"] = "oss03"
    result = stubs.run(ost3[0], "--yes")
    assert result.returncode == 1
    assert "oss03 is not a service node of training-OST0003 (oss02)" in result.stderr
    assert stubs.calls() == [["hostname"]]


def test_a_node_named_by_its_full_host_name_is_its_short_name(
    stubs: Stubs, ost3: tuple[Path, str]
) -> None:
    """The spec names oss02; the machine's host name is its fully qualified one."""
    stubs.env["STUB_HOST"] = "oss02.hpc.example.org"
    result = stubs.run(ost3[0])
    assert result.returncode == 0, result.stderr
    assert "dry run, would run: " in result.stdout
    stubs.env["STUB_HOST"] = "oss03.hpc.example.org"
    result = stubs.run(ost3[0])
    assert result.returncode == 1
    assert "oss03 is not a service node of training-OST0003 (oss02)" in result.stderr


def test_missing_or_non_block_device_is_refused(stubs: Stubs, tmp_path: Path) -> None:
    plain = tmp_path / "plain-file"
    plain.write_text("")
    for device, said in ((plain, "is not a block device"), (tmp_path / "gone", "does not exist")):
        result = stubs.run(script(tmp_path, ML[OST3], DEVICE=f"'{device}'"), "--yes")
        assert result.returncode == 1
        assert said in result.stderr
        assert destructive(stubs.calls()) == []


ZFS_OST0 = "lustre/format/scratch-ost0000.sh"


def zfs_ost0(tmp_path: Path, blockdev: str) -> tuple[Path, list[str]]:
    disks = []
    for letter in "abcd":
        disk = tmp_path / f"disk-{letter}"
        disk.symlink_to(blockdev)
        disks.append(str(disk))
    vdevs = "(" + " ".join(f"'{d}'" for d in disks) + ")"
    return script(tmp_path, ZFS[ZFS_OST0], VDEVS=vdevs), disks


def test_zfs_creates_the_pool_then_the_target(stubs: Stubs, tmp_path: Path, blockdev: str) -> None:
    path, disks = zfs_ost0(tmp_path, blockdev)
    stubs.env["STUB_HOST"] = "oss1"
    stubs.canned("zpool-list", "", 1)
    result = stubs.run(path, "--yes")
    assert result.returncode == 0, result.stderr
    checks = [
        call
        for disk in disks
        for call in (["blkid", "-p", "-o", "export", "--", disk], ["wipefs", "-n", "--", disk])
    ]
    assert stubs.calls() == [
        ["hostname"],
        ["zpool", "list", "-H", "-o", "name", "ost0pool"],
        *checks,
        ["zpool", "create", "-o", "ashift=12", "-O", "canmount=off", "ost0pool", "raidz2", *disks],
        [
            "mkfs.lustre",
            "--fsname=scratch",
            "--ost",
            "--index=0",
            "--mgsnode=10.10.0.5@o2ib1",
            "--mgsnode=10.10.0.6@o2ib1",
            "--servicenode=10.10.0.7@o2ib1",
            "--servicenode=10.10.0.8@o2ib1",
            "--backfstype=zfs",
            "--mkfsoptions=-o recordsize=1M -o compression=lz4",
            "--param=ost.quota_type=ug",
            "ost0pool/ost0",
        ],
    ]


def test_zfs_refuses_an_existing_dataset(stubs: Stubs, tmp_path: Path, blockdev: str) -> None:
    path, _ = zfs_ost0(tmp_path, blockdev)
    stubs.env["STUB_HOST"] = "oss2"  # the failover node may format too
    stubs.canned("zfs-get", "scratch-OST0000\n")
    result = stubs.run(path, "--yes")
    assert result.returncode == 1
    assert "already holds scratch-OST0000" in result.stderr
    assert destructive(stubs.calls()) == []


def test_zfs_vdev_with_a_label_is_refused(stubs: Stubs, tmp_path: Path, blockdev: str) -> None:
    path, _ = zfs_ost0(tmp_path, blockdev)
    stubs.env["STUB_HOST"] = "oss1"
    stubs.canned("zpool-list", "", 1)
    stubs.canned("blkid", "LABEL=tank\nTYPE=zfs_member\n", 0)
    result = stubs.run(path, "--yes")
    assert result.returncode == 1
    assert "carries zfs_member labelled tank" in result.stderr
    assert destructive(stubs.calls()) == []


def test_without_confirmation_nothing_destructive_runs_in_any_script(
    stubs: Stubs, tmp_path: Path, blockdev: str
) -> None:
    device = tmp_path / "dev"
    device.symlink_to(blockdev)
    for tree in (ML, ZFS):
        for name, text in tree.items():
            if not (name.startswith("lustre/format/") and name.endswith(".sh")):
                continue
            replace = {"DEVICE": f"'{device}'"} if "backfstype=ldiskfs" in text else {}
            stubs.env["STUB_HOST"] = re.search(r"SERVICE_NODES=\('([^']+)'", text)[1]  # type: ignore[index]
            stubs.canned("zpool-list", "", 1)
            result = stubs.run(script(tmp_path, text, **replace))
            assert destructive(stubs.calls()) == [], name
            assert "dry run" in result.stdout or "REFUSED" in result.stderr, name


def layouts(tmp_path: Path, tree: dict[str, str], mount: str) -> Path:
    root = tmp_path / "mnt"
    root.mkdir(exist_ok=True)
    text = tree["lustre/client/lustre-layouts.sh"].replace(f"'{mount}/", f"'{root}/")
    text = text.replace(f"readonly MOUNT='{mount}'", f"readonly MOUNT='{root}'")
    path = tmp_path / "layouts.sh"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("tree", "mount"), [(ML, "/mnt/lustre"), (ZFS, "/scratch")], ids=["ml", "zfs"]
)
def test_layout_script_changes_only_differences_and_nothing_the_second_time(
    stubs: Stubs, tmp_path: Path, tree: dict[str, str], mount: str
) -> None:
    require(root=True)  # the layout script gives the folders it makes to their owners
    path = layouts(tmp_path, tree, mount)
    first = stubs.run(path)
    assert first.returncode == 0, first.stderr
    setstripes = [c for c in stubs.calls() if c[:2] == ["lfs", "setstripe"]]
    assert setstripes and "lfs setstripe" in first.stdout
    second = stubs.run(path)
    assert second.returncode == 0, second.stderr
    reads = [["getstripe"], ["project", "-d"], ["quota"]]
    assert [c for c in stubs.calls() if not any(c[1 : 1 + len(r)] == r for r in reads)] == []
    assert second.stdout.strip().endswith("0 change(s)"), second.stdout


def test_ml_layouts_are_set_as_the_spec_says(stubs: Stubs, tmp_path: Path) -> None:
    path = layouts(tmp_path, ML, "/mnt/lustre")
    assert stubs.run(path).returncode == 0
    root = tmp_path / "mnt"
    assert [c for c in stubs.calls() if c[1] == "setstripe"] == [
        ["lfs", "setstripe", "-c", "8", "-S", "1048576", f"{root}/training-data/."],
        [
            "lfs", "setstripe",
            "-E", "67108864", "-c", "1",
            "-E", "4294967296", "-c", "4",
            "-E", "-1", "-c", "-1", "-S", "4194304",
            f"{root}/checkpoints/.",
        ],
    ]  # fmt: skip


def test_mgs_settings_apply_once_and_pools_only_where_they_differ(
    stubs: Stubs, tmp_path: Path
) -> None:
    text = ZFS["lustre/mgs/lustre-mgs-settings.sh"]
    path = script(tmp_path, text, STATE=f"'{tmp_path}/set-param'")
    first = stubs.run(path)
    assert first.returncode == 0, first.stderr
    changing = [c for c in stubs.calls() if c[1] != "pool_list"]
    assert changing == [
        ["lctl", "set_param", "-P", "obdfilter.*.brw_size=16"],
        ["lctl", "set_param", "-P", "osc.*.max_pages_per_rpc=4096"],
        ["lctl", "set_param", "-P", "jobid_var=SLURM_JOB_ID"],
        ["lctl", "set_param", "-P", "jobid_name=%j"],
        ["lctl", "pool_new", "scratch.flash"],
        ["lctl", "pool_add", "scratch.flash", "scratch-OST0000"],
    ]
    second = stubs.run(path)
    assert [c for c in stubs.calls() if c[1] != "pool_list"] == []
    assert second.stdout.strip() == "scratch: 0 change(s)"


def test_shellcheck_passes_on_every_rendered_script() -> None:
    exe = tool("shellcheck")
    if exe is None:
        skip_or_fail("needs shellcheck")
    for tree in (ML, ZFS):
        for name, text in tree.items():
            if name.endswith(".sh"):
                result = subprocess.run(
                    [exe, "-s", "bash", "-"],
                    input=text,
                    capture_output=True,
                    text=True,
                    check=False,
                )
                assert result.returncode == 0, f"{name}:\n{result.stdout}"


def test_zfs_variant_matches_its_golden_files(update_golden: bool) -> None:
    golden_dir = GOLDEN / "lustre-zfs"
    files = {k: v for k, v in ZFS.items() if k.startswith("lustre/")}
    if update_golden:
        shutil.rmtree(golden_dir, ignore_errors=True)
        for name, text in files.items():
            (golden_dir / name).parent.mkdir(parents=True, exist_ok=True)
            (golden_dir / name).write_text(text, encoding="utf-8")
    on_disk = {
        str(p.relative_to(golden_dir)): p.read_text(encoding="utf-8")
        for p in golden_dir.rglob("*")
        if p.is_file()
    }
    assert on_disk == files, stale("tests/golden/lustre-zfs/")


def test_ansible_flags_skip_quietly_and_never_destroy(stubs: Stubs, ost3: tuple[Path, str]) -> None:
    path = ost3[0]
    ansible = ("--yes", "--primary-only", "--skip-formatted")
    stubs.env["STUB_HOST"] = "oss01"  # another OSS: skipped before any check
    result = stubs.run(path, *ansible)
    assert result.returncode == 0 and "skipped" in result.stdout
    assert stubs.calls() == [["hostname"]]
    stubs.env["STUB_HOST"] = "oss02"
    stubs.canned("blkid", "LABEL=training-OST0003\nTYPE=ext4\n", 0)
    result = stubs.run(path, *ansible)
    assert result.returncode == 0 and "already formatted; skipped" in result.stdout
    assert destructive(stubs.calls()) == []
    stubs.canned("blkid", "TYPE=xfs\n", 0)  # anything else is still refused
    assert stubs.run(path, *ansible).returncode == 1
    assert destructive(stubs.calls()) == []
    assert stubs.run(path, "--yes", "--reformat-existing", "--skip-formatted").returncode == 2


def test_lnet_configuration_is_lnetctl_import_yaml() -> None:
    import yaml

    storage = yaml.safe_load(ZFS["lustre/lnet/storage.conf"])
    assert [ni["interfaces"][0] for ni in storage["net"][0]["local NI(s)"]] == ["ib0", "ib1"]
    assert storage["net"][0]["net type"] == "o2ib1"
    assert storage["net"][0]["local NI(s)"][0]["tunables"] == {"peer_credits": 32, "credits": 256}
    assert storage["route"] == [{"net": "tcp0", "gateway": "10.10.0.2@o2ib1", "hop": 1}]
    hgx = yaml.safe_load(ML["lustre/lnet/hgx-h100.conf"])
    assert hgx == {"net": [{"net type": "o2ib0", "local NI(s)": [{"interfaces": {0: "ib0"}}]}]}
    assert "lustre/lnet/hgx-h100.modprobe.conf" not in ML  # no tunables in that spec
    modprobe = ZFS["lustre/lnet/storage.modprobe.conf"].splitlines()[-1]
    assert modprobe == "options ko2iblnd peer_credits=32 credits=256 conns_per_peer=4"


def test_client_mounts_wait_for_lnet() -> None:
    unit = ML["lustre/client/mnt-lustre.mount"]
    assert "What=10.10.0.5@o2ib0:/training\n" in unit
    assert "Options=_netdev,x-systemd.requires=lnet.service,nosuid,nodev\n" in unit
    assert "Requires=lnet.service\n" in unit
    line = ZFS["lustre/client/fstab"].splitlines()[-1]
    assert line == (
        "10.10.0.5@o2ib1:10.10.0.6@o2ib1:/scratch/projects /scratch lustre "
        "_netdev,x-systemd.requires=lnet.service,flock,noatime,nosuid,nodev 0 0"
    )


def _unit_words(unit: str, key: str) -> list[str]:
    """The words of every `key=` line of a unit (systemd joins repeated lines)."""
    return [
        w
        for line in unit.splitlines()
        if line.startswith(f"{key}=")
        for w in line[len(key) + 1 :].split()
    ]


def _server_units(tree: dict[str, str]) -> dict[str, str]:
    return {
        path.removeprefix("lustre/server/"): text
        for path, text in tree.items()
        if path.startswith("lustre/server/")
    }


def test_server_mounts_start_after_their_pools_and_the_mgs_of_their_node() -> None:
    zfs = _server_units(ZFS)
    assert sorted(zfs) == [
        "lustre-scratch-mdt0000.mount",  # on mds1, with the MGS
        "lustre-scratch-mgs.mount",
        "lustre-scratch-ost0000.mount",
        "lustre-scratch-ost0001.mount",
    ]
    for name, unit in zfs.items():
        for key in ("Requires", "After"):
            assert _unit_words(unit, key)[:2] == ["lnet.service", "zfs-import.target"], name
    mgs = "lustre-scratch-mgs.mount"
    for key in ("Requires", "After"):
        assert mgs in _unit_words(zfs["lustre-scratch-mdt0000.mount"], key)
    # The OSTs are on other nodes (oss1, oss2) than the MGS: systemd cannot order them.
    for name in ("lustre-scratch-ost0000.mount", "lustre-scratch-ost0001.mount"):
        assert mgs not in _unit_words(zfs[name], "Requires") + _unit_words(zfs[name], "After")
    # ldiskfs targets wait for no ZFS import; the MDT on mds01 waits for its MGS.
    ml = _server_units(ML)
    assert not any("zfs-import" in unit for unit in ml.values())
    mdt = ml["lustre-training-mdt0000.mount"]
    assert _unit_words(mdt, "Requires") == ["lnet.service", "lustre-training-mgs.mount"]
    assert _unit_words(mdt, "After") == [
        "lnet.service",
        "network-online.target",
        "lustre-training-mgs.mount",
    ]


def test_server_mounts_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    """systemd checks each unit's settings, that Where= matches its name, and that every
    unit it requires exists: lnet.service (Lustre's packages) and zfs-import.target
    (ZFS on Linux's) are stand-ins here, the MGS mount is the rendered one."""
    analyze = tool("systemd-analyze")
    if analyze is None:
        skip_or_fail("needs systemd-analyze")
    for tree, label in ((ZFS, "zfs"), (ML, "ldiskfs")):
        units = tmp_path / label
        units.mkdir()
        (units / "lnet.service").write_text(
            "[Unit]\nDescription=stand-in\n[Service]\nType=oneshot\nExecStart=/bin/true\n"
        )
        (units / "zfs-import.target").write_text("[Unit]\nDescription=stand-in\n")
        names = []
        for name, text in _server_units(tree).items():
            (units / name).write_text(text)
            names.append(str(units / name))
        result = subprocess.run(
            [str(analyze), "verify", "--man=no", *sorted(names)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        assert result.stdout + result.stderr == "", result.stdout + result.stderr


def test_quotas_are_set_once_and_project_ids_only_where_they_differ(
    stubs: Stubs, tmp_path: Path
) -> None:
    require(root=True)  # the layout script gives the folders it makes to their owners
    path = layouts(tmp_path, ZFS, "/scratch")
    assert stubs.run(path).returncode == 0
    root = tmp_path / "mnt"
    quota_calls = [c for c in stubs.calls() if c[1] in ("project", "setquota") and c[2] != "-d"]
    assert quota_calls == [
        ["lfs", "project", "-p", "1001", "-r", "-s", f"{root}/projects/small/."],
        ["lfs", "setquota", "-p", "1001", "-b", "0", "-B", str(10 << 30),
         "-i", "0", "-I", "1000000", str(root)],
        ["lfs", "setquota", "-u", "alice", "-b", str(900 << 20), "-B", str(1 << 30),
         "-i", "0", "-I", "0", str(root)],
    ]  # fmt: skip
    second = stubs.run(path)
    assert second.stdout.strip().endswith("0 change(s)"), second.stdout


# Root runs the layout script where users write: it follows none of their links
# (issue 21). The victim is a folder outside the mount that a user points a layout's
# path at; after the run, nothing in it or about it has changed.


def _with_team_layout() -> dict[str, str]:
    """tests/data/lustre-zfs.yaml with the review's layout: /scratch/team-a, 2770, root's."""
    document = yaml.safe_load(ZFS_SPEC.read_text(encoding="utf-8"))
    document["storage"]["lustre"]["layouts"].append(
        {"path": "/scratch/team-a", "owner": "root", "group": "root", "mode": "2770"}
    )
    text = yaml.safe_dump(document, sort_keys=False)
    cluster, problems = validate_cluster(parse_spec(text, "team-a", "team-a"))
    assert cluster is not None, [p.format() for p in problems]
    return {path: a.text for path, a in render_all(cluster).items()}


TEAM = _with_team_layout()


def _victim(tmp_path: Path) -> Path:
    """A folder outside the mount, 0755 with a file in it, owned by nobody where the
    tests run as root (so a chown to root shows)."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("victim's own\n")
    victim.chmod(0o755)
    if os.geteuid() == 0:
        for path in (victim, victim / "keep"):
            os.chown(path, 65534, 65534)
    return victim


def _snapshot(top: Path) -> dict[str, tuple[int, int, int, bytes | None]]:
    """Mode, owner, group and content of `top` and of everything below it, links unfollowed."""
    found = {}
    for path in (top, *sorted(top.rglob("*"))):
        info = path.lstat()
        content = path.read_bytes() if stat.S_ISREG(info.st_mode) else None
        found[str(path.relative_to(top))] = (info.st_mode, info.st_uid, info.st_gid, content)
    return found


def _touching(calls: list[list[str]], victim: Path) -> list[list[str]]:
    changing = [c for c in calls if c[1] in ("setstripe", "project") and c[2] != "-d"]
    return [c for c in changing if any(str(victim) in a or "/../" in a for a in c)]


@pytest.mark.parametrize(
    ("planted", "refused"),
    [
        ("team-a", "team-a is a symbolic link"),  # the review's attack: the last level
        ("projects", "projects is a symbolic link"),  # a level on the way
    ],
)
def test_a_users_link_below_the_mount_is_refused_and_nothing_outside_changes(
    stubs: Stubs, tmp_path: Path, planted: str, refused: str
) -> None:
    require(root=True)  # the layout script gives the folders it makes to their owners
    path = layouts(tmp_path, TEAM, "/scratch")
    root = tmp_path / "mnt"
    victim = _victim(tmp_path)
    (root / planted).symlink_to(victim)
    before = _snapshot(victim)
    result = stubs.run(path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"REFUSED {root}/{planted}" in result.stderr
    assert refused in result.stderr
    assert _snapshot(victim) == before
    assert (root / planted).is_symlink()
    assert _touching(stubs.calls(), victim) == []
    assert not any(str(root / planted) in " ".join(c) for c in stubs.calls()), stubs.calls()
    # The other entries are still applied, and the run says what it did.
    other = "projects/small" if planted == "team-a" else "team-a"
    assert (root / other).is_dir() and not (root / other).is_symlink()
    assert "change(s)" in result.stdout and "refused" in result.stderr


@pytest.mark.parametrize(
    "written",
    ["../victim", "projects/../../victim", ".//projects", "projects//small"],
)
def test_a_path_that_climbs_is_refused_when_the_script_runs(
    stubs: Stubs, tmp_path: Path, written: str
) -> None:
    """Validation refuses such paths (syntax.path-segment); the script refuses them too,
    should one reach it (an older or hand-edited script)."""
    path = layouts(tmp_path, ZFS, "/scratch")
    root = tmp_path / "mnt"
    victim = _victim(tmp_path)
    text = path.read_text().replace(f"'{root}/projects/small'", f"'{root}/{written}'")
    assert f"'{root}/{written}'" in text
    path.write_text(text)
    before = _snapshot(victim)
    result = stubs.run(path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"REFUSED {root}/{written}: a '.', '..' or empty segment" in result.stderr
    assert _snapshot(victim) == before
    assert _touching(stubs.calls(), victim) == []


def test_a_file_where_a_directory_belongs_is_refused(stubs: Stubs, tmp_path: Path) -> None:
    path = layouts(tmp_path, ZFS, "/scratch")
    root = tmp_path / "mnt"
    (root / "projects").write_text("a user's file\n")
    result = stubs.run(path)
    assert result.returncode == 1
    assert f"REFUSED {root}/projects/small: {root}/projects is not a directory" in result.stderr
    assert (root / "projects").read_text() == "a user's file\n"


def test_a_mount_point_reached_through_roots_link_is_used(stubs: Stubs, tmp_path: Path) -> None:
    """Links above the mount are root's: a mount point path through one still works, and
    the levels below it are checked against where the kernel puts the mount."""
    require(root=True)  # the layout script gives the folders it makes to their owners
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "mnt").symlink_to(real)
    path = layouts(tmp_path, ZFS, "/scratch")
    result = stubs.run(path)
    assert result.returncode == 0, result.stderr
    assert (real / "projects" / "small").is_dir()


def test_nodes_without_a_port_in_a_servers_storage_subnet_are_warned_of(tmp_path: Path) -> None:
    """tests/warnings/lnet-subnet-unreachable.yaml warns of its one-port head node; the GB200
    example, whose trays and head node have a port in each of the servers' two storage
    subnets, warns of nothing; its trays with one port each are warned of as a group."""
    from clustergen.spec.load import load_spec
    from clustergen.validate import validate_cluster

    from support.paths import EXAMPLES, REPO

    def warned(path: Path) -> list[str]:
        _, problems = validate_cluster(load_spec(str(path)))
        return [p.message for p in problems if p.code.name == "storage.lnet-subnet-unreachable"]

    case = REPO / "tests" / "warnings" / "lnet-subnet-unreachable.yaml"
    (message,) = warned(case)
    assert "slurm-head (head-server) have no port in 10.200.128.0/17" in message
    example = EXAMPLES / "gb200-nvl72-4rack.yaml"
    assert warned(example) == []
    text = example.read_text(encoding="utf-8").replace(
        "storage: [ibP6p3s0f0, ibP6p3s0f1]", "storage: [ibP6p3s0f0]"
    )
    one_port = tmp_path / "gb200.yaml"
    one_port.write_text(text, encoding="utf-8")
    (message,) = warned(one_port)
    assert "gb[001-072] (gb200-tray) have no port in 10.200.128.0/17" in message
