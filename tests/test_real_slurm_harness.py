"""Tests of the real-Slurm harness (tests/support/realslurm/) on hand-written sample trees.

The samples under tests/data/realslurm-sample/ are modeled on the reference
specs in shared/spec/; they are not clustergen output. The generator's own
tests call the same harness on rendered trees.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from clustergen.commands.twin.conf import (
    conf_key,
    hosts_file_text,
    known_keys,
    logical_lines,
    rewrite_conf,
)
from clustergen.commands.twin.process import DaemonError

from support.paths import DATA, GOLDEN, REPO
from support.realslurm.chroot import INIT_SQL, prepare_conf
from support.realslurm.parse import parse_slurmd_gres
from support.realslurm.testbed import SlurmTestbed, require_real_slurm, run_slurmctld

SAMPLES = DATA / "realslurm-sample"
ML_TRAINING = SAMPLES / "ml-training-8node"
EDGE = SAMPLES / "edge-roce-2node"

GPU_NODES = [f"gpu{index:02d}" for index in range(1, 9)]


def copy_sample(sample: Path, tmp_path: Path) -> Path:
    target = tmp_path / "rendered"
    shutil.copytree(sample, target)
    return target


# --- pure helpers (no daemons) ------------------------------------------------


def test_rewrite_keeps_one_line_per_replaced_key() -> None:
    text = "SlurmctldHost=a(10.0.0.1)\nslurmctldhost=b(10.0.0.2)\nClusterName=x\n"
    rewrite = rewrite_conf(text, replace={"SlurmctldHost": "localhost(127.0.0.1)"})
    keys = [conf_key(line) for line in rewrite.text.splitlines()]
    assert keys.count("slurmctldhost") == 1
    assert "SlurmctldHost=localhost(127.0.0.1)" in rewrite.text
    assert "ClusterName=x" in rewrite.text
    assert rewrite.overridden == ["SlurmctldHost=a(10.0.0.1)", "slurmctldhost=b(10.0.0.2)"]


def test_rewrite_skips_keys_the_parser_lacks_case_insensitively() -> None:
    known = known_keys("22.05.8")
    text = "selecttype=select/cons_tres\nMaxBatchRequeue=5\nMaxJobsPerUser=4\n# Bogus=1\n"
    rewrite = rewrite_conf(text, replace={}, known_keys=known)
    assert [item.key for item in rewrite.skipped] == ["maxbatchrequeue", "maxjobsperuser"]
    assert "selecttype=select/cons_tres" in rewrite.text
    assert "# Bogus=1" in rewrite.text


def test_backslash_continues_a_line() -> None:
    assert logical_lines("NodeName=a \\\n  CPUs=2\nX=1") == ["NodeName=a   CPUs=2", "X=1"]


def test_key_list_is_the_nearest_older_version() -> None:
    assert "maxbatchrequeue" not in known_keys("22.05.8")
    assert "maxbatchrequeue" in known_keys("23.02.7")  # new in 23.02
    assert known_keys("26.11.0") == known_keys("26.05.0")  # past the lists: the newest
    with pytest.raises(DaemonError):
        known_keys("21.08.8")


def test_hosts_file_gives_each_name_its_own_loopback_address() -> None:
    text, addresses = hosts_file_text(["gpu01", "gpu02", "gpu01", "localhost"], "vm")
    assert addresses == {"gpu01": "127.0.0.2", "gpu02": "127.0.0.3"}
    assert text.splitlines()[0] == "127.0.0.1 localhost vm"


def test_parse_slurmd_gres_output() -> None:
    output = (
        "slurmd: Gres Name=gpu Type=h100 Count=8 Index=0 ID=7696487 File=/dev/nvidia[0-7] (null)\n"
        "slurmd: WARNING: A line in gres.conf for GRES gpu:a100 has 8 more configured\n"
    )
    report = parse_slurmd_gres("gpu01", 0, output)
    assert report.gres[0]["File"] == "/dev/nvidia[0-7]"
    assert report.gpu_count("h100") == 8
    assert len(report.problems) == 1
    assert not report.ok


def test_require_real_slurm_fails_in_ci_and_skips_elsewhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="slurmctld"):
        require_real_slurm()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception):
        require_real_slurm()


# --- real daemons ---------------------------------------------------------------


@pytest.mark.daemons
def test_ml_training_sample_with_real_slurmdbd(tmp_path: Path) -> None:
    require_real_slurm()
    with SlurmTestbed(ML_TRAINING, tmp_path) as bed:
        report = bed.start_controller()
        print(report.summary())
        assert report.accounting == "slurmdbd"
        assert report.skipped == []
        assert report.config_problems() == []
        assert sorted(report.nodes) == GPU_NODES
        for name in GPU_NODES:
            node = report.nodes[name]
            assert (node.cpus, node.sockets, node.cores_per_socket, node.threads_per_core) == (
                256,
                2,
                64,
                2,
            )
            assert node.real_memory_mib == 2031616
            assert node.gres == "gpu:h100:8"
            assert node.features == ("hgx-h100", "h100")
            row = report.sinfo[name]
            assert (row.gres, row.cpus, row.memory_mib, row.features) == (
                "gpu:h100:8",
                256,
                2031616,
                ("hgx-h100", "h100"),
            )
        training, debug = report.partitions["gpu-training"], report.partitions["debug"]
        assert (training.default, training.max_time, list(training.nodes)) == (
            True,
            "UNLIMITED",
            GPU_NODES,
        )
        assert (debug.default, debug.max_time, debug.priority_tier) == (False, "01:00:00", 10)
        assert debug.nodes == ("gpu01", "gpu02")
        assert report.switches["ib-spine01"].switches == ("ib-leaf01", "ib-leaf02")
        assert report.switches["ib-leaf02"].nodes == ("gpu05", "gpu06", "gpu07", "gpu08")
        # The cluster registered itself in the real accounting database.
        clusters = bed.client("sacctmgr", "-n", "-P", "show", "cluster", "format=cluster")
        assert clusters.split() == ["ml-training"]
        for name in ("gpu01", "gpu08"):
            gres = bed.slurmd_gres(name, gpu_count=8)
            assert gres.ok, gres.output
            assert gres.gpu_count("h100") == 8
        daemons = list(bed.daemons)
    assert all(daemon.proc.returncode is not None for daemon in daemons)


@pytest.mark.daemons
def test_edge_sample_without_accounting(tmp_path: Path) -> None:
    require_real_slurm()
    with SlurmTestbed(EDGE, tmp_path) as bed:
        report = bed.start_controller()
        print(report.summary())
        assert report.accounting == "none"
        assert report.skipped == []
        assert sorted(report.nodes) == ["lab1", "lab2"]
        assert {node.gres for node in report.nodes.values()} == {"gpu:l40s:4"}
        assert {node.cpus for node in report.nodes.values()} == {64}
        assert report.partitions["gpu"].default
        assert report.partitions["gpu"].max_time == "2-00:00:00"
        assert report.switches["lab-tor"].nodes == ("lab1", "lab2")
        # Real 22.05 feedback on this sample: jobacct_gather/cgroup without
        # accounting storage is reported by slurmctld; the harness must show it.
        assert [line.split("] ", 1)[1] for line in report.config_problems()] == [
            "error: Job accounting information gathered, but not stored",
            "error: WARNING: Even though we are collecting accounting information you have "
            "asked for it not to be stored (accounting_storage/none) if this is not what you "
            "have in mind you will need to change it.",
        ]
        gres = bed.slurmd_gres("lab2", gpu_count=4)
        assert gres.ok, gres.output
        assert gres.gpu_count("l40s") == 4


@pytest.mark.daemons
def test_keys_unknown_to_22_05_are_skipped_and_listed(tmp_path: Path) -> None:
    require_real_slurm()
    rendered = copy_sample(EDGE, tmp_path)
    with (rendered / "slurm" / "slurm.conf").open("a") as conf:
        conf.write("MaxBatchRequeue=5\n")  # new in 24.11
    report = run_slurmctld(rendered, tmp_path / "work")
    assert [str(item) for item in report.skipped] == [
        "MaxBatchRequeue=5  (not a Slurm 22.05.8 slurm.conf key)",
    ]
    assert sorted(report.nodes) == ["lab1", "lab2"]


@pytest.mark.daemons
def test_accounting_can_be_removed_instead(tmp_path: Path) -> None:
    require_real_slurm()
    report = run_slurmctld(ML_TRAINING, tmp_path, accounting="remove")
    assert report.accounting == "removed"
    assert [item.key for item in report.skipped] == [
        "accountingstoragetype",
        "accountingstoragehost",
        "accountingstorageport",
        "accountingstoragetres",
    ]
    assert report.config_problems() == []
    assert sorted(report.nodes) == GPU_NODES


@pytest.mark.daemons
def test_slurmctld_exit_raises_with_its_log(tmp_path: Path) -> None:
    require_real_slurm()
    rendered = copy_sample(EDGE, tmp_path)
    with (rendered / "slurm" / "slurm.conf").open("a") as conf:
        conf.write("PartitionName=broken Nodes=lab[1-3]\n")
    with pytest.raises(DaemonError, match="Invalid node names in partition broken"):
        run_slurmctld(rendered, tmp_path / "work")


@pytest.mark.daemons
def test_slurmd_gres_reports_a_type_mismatch(tmp_path: Path) -> None:
    require_real_slurm()
    rendered = copy_sample(EDGE, tmp_path)
    gres_conf = rendered / "slurm" / "gres.conf"
    gres_conf.write_text(gres_conf.read_text().replace("Type=l40s", "Type=a100"))
    with SlurmTestbed(rendered, tmp_path / "work") as bed:
        report = bed.slurmd_gres("lab1", gpu_count=4)
    assert not report.ok
    assert any("WARNING" in line and "gpu:a100" in line for line in report.problems)


def test_chroot_check_keeps_the_rendered_files_but_the_database_secret(tmp_path: Path) -> None:
    """The newer releases' check (support/realslurm/chroot.py) binds the rendered conf dir
    as it is: only StoragePass is added; the controller's rendered address goes on the
    namespace's loopback, the database is created before slurmdbd starts."""
    prepared = prepare_conf(REPO / "slurm", tmp_path)
    rendered = {path.name for path in (REPO / "slurm").iterdir()}
    assert rendered <= {path.name for path in prepared.conf_dir.iterdir()}
    assert (prepared.conf_dir / "slurm.conf").read_text() == (REPO / "slurm/slurm.conf").read_text()
    dbd = (prepared.conf_dir / "slurmdbd.conf").read_text()
    assert dbd.startswith((REPO / "slurm/slurmdbd.conf").read_text())
    assert dbd.rstrip().endswith("StoragePass=clustergen-local-only")
    assert (prepared.conf_dir / "slurmdbd.conf").stat().st_mode & 0o777 == 0o600
    assert (prepared.controller, prepared.addresses) == ("slurm-head", ("10.0.1.2",))
    assert prepared.accounting and prepared.slurm_user == "slurm"
    assert prepared.directories == (
        "/var/spool/slurmctld",
        "/var/spool/slurmd",
        "/var/log/slurm",
        "/run",
    )
    hosts = prepared.hosts_file.read_text().splitlines()
    assert hosts[0] == "127.0.0.1 localhost slurm-head"
    assert [line.split()[1] for line in hosts[1:]] == [f"gpu0{i}" for i in range(1, 9)]
    init_sql = (prepared.conf_dir / INIT_SQL).read_text()
    assert "CREATE DATABASE IF NOT EXISTS `slurm_acct_db`;" in init_sql


def test_chroot_release_without_accounting(tmp_path: Path) -> None:
    prepared = prepare_conf(GOLDEN / "edge-roce-2node" / "slurm", tmp_path)
    assert not prepared.accounting
    assert not (prepared.conf_dir / INIT_SQL).exists()
    assert prepared.overridden == ()
