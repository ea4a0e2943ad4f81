"""What the twin decides before starting anything: whether it can run at all (root, the
Slurm packages), which nodes get a slurmd, and how the rendered slurm.conf is adapted
to the local daemons (every dropped line listed). No daemons: these run everywhere."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clustergen.commands.twin.conf import known_keys
from clustergen.commands.twin.layout import AdaptedConf, TwinPaths, adapt_slurm_conf, choose_nodes
from clustergen.resolve import ResolvedCluster
from clustergen.spec.load import load_spec
from clustergen.validate import validate_cluster

from support.paths import EXAMPLES


def ml_training() -> ResolvedCluster:
    cluster, _ = validate_cluster(load_spec(str(EXAMPLES / "ml-training-8node.yaml")))
    assert cluster is not None
    return cluster


def test_every_node_of_a_small_spec_gets_a_slurmd() -> None:
    choice = choose_nodes(ml_training(), None)
    assert [node.name for node in choice.started] == [f"gpu{i:02d}" for i in range(1, 9)]
    assert {node.gpu_count for node in choice.started} == {8}
    assert choice.not_started == ()
    assert choice.describe() == ["nodes: one slurmd per compute node, 8: gpu[01-08]"]


def test_nodes_per_group_starts_a_representative_subset_and_says_so() -> None:
    choice = choose_nodes(ml_training(), 2)
    assert [node.name for node in choice.started] == ["gpu01", "gpu02"]
    assert choice.describe() == [
        "nodes: a representative subset, 2 of 8 compute nodes: gpu[01-02] for hardware hgx-h100",
        "not started (set DOWN): gpu[03-08]",
    ]


def test_a_partition_outside_the_subset_still_gets_its_first_node(tmp_path: Path) -> None:
    text = (EXAMPLES / "ml-training-8node.yaml").read_text()
    old = '{name: debug, nodes: "gpu[01-02]"'
    assert old in text
    spec = tmp_path / "spec.yaml"
    spec.write_text(text.replace(old, '{name: debug, nodes: "gpu[07-08]"'))
    cluster, _ = validate_cluster(load_spec(str(spec)))
    assert cluster is not None
    choice = choose_nodes(cluster, 1)
    assert [node.name for node in choice.started] == ["gpu01", "gpu07"]


NOT_KEPT = (
    "not on the twin's list of keys it keeps (twin/layout.py TWIN_KEYS): the twin runs no "
    "program, plugin or script a spec names"
)


def _adapted(rendered: str, version: str, tmp_path: Path) -> AdaptedConf:
    """The rendered slurm.conf as the twin adapts it for a local Slurm `version`."""
    return adapt_slurm_conf(
        rendered,
        controller="head",
        controller_address="10.201.0.2",
        paths=TwinPaths.under(tmp_path, tmp_path / "spool"),
        slurm_version=version,
        known_keys=known_keys(version),
        dbd_port=6819,
    )


def test_keys_the_local_slurm_lacks_and_node_scripts_are_dropped_and_listed(
    tmp_path: Path,
) -> None:
    rendered = (
        "ClusterName=x\n"
        "SlurmctldHost=head(10.0.1.2)\n"
        "MaxBatchRequeue=5\n"  # 23.11 and later
        "Epilog=/etc/slurm/health-epilog.sh\n"
        "EpilogMsgTime=2000\n"
        "PrologFlags=Alloc,Contain\n"
        "ProctrackType=proctrack/cgroup\n"
    )
    adapted = _adapted(rendered, "22.05.8", tmp_path)
    assert [str(line) for line in adapted.dropped] == [
        "MaxBatchRequeue=5  (not a slurm.conf key of the local Slurm 22.05.8)",
        f"Epilog=/etc/slurm/health-epilog.sh  ({NOT_KEPT})",
        f"EpilogMsgTime=2000  ({NOT_KEPT})",
    ]
    lines = adapted.text.splitlines()
    assert "ClusterName=x" in lines
    assert "SlurmctldHost=head(10.201.0.2)" in lines
    assert "PrologFlags=Alloc" in lines
    assert "ProctrackType=proctrack/linuxproc" in lines
    assert adapted.overridden == [
        "SlurmctldHost=head(10.0.1.2)",
        "PrologFlags=Alloc,Contain",
        "ProctrackType=proctrack/cgroup",
    ]


# What slurmctld and slurmd would run, load or read as root for a spec pull request
# (slurm.conf(5)): the twin keeps none of it.
CONTRIBUTED = (
    "Prolog=/var/tmp/p",
    "PrologSlurmctld=/var/tmp/p",
    "EpilogSlurmctld=/var/tmp/p",
    "SlurmctldPrimaryOnProg=/var/tmp/p",
    "SlurmctldPrimaryOffProg=/var/tmp/p",
    "ResumeProgram=/var/tmp/p",
    "SuspendProgram=/var/tmp/p",
    "ResumeFailProgram=/var/tmp/p",
    "RebootProgram=/var/tmp/p",
    "ResvProlog=/var/tmp/p",
    "ResvEpilog=/var/tmp/p",
    "MailProg=/var/tmp/p",
    "UnkillableStepProgram=/var/tmp/p",
    "TaskProlog=/var/tmp/p",
    "SrunEpilog=/var/tmp/p",
    "JobCompType=jobcomp/script",
    "JobCompLoc=/var/tmp/p",
    "JobSubmitPlugins=lua",
    "CliFilterPlugins=lua",
    "BurstBufferType=burst_buffer/lua",
    "NodeFeaturesPlugins=node_features/helpers",
    "PlugStackConfig=/var/tmp/plugstack.conf",
    "PluginDir=/var/tmp/plugins",
    "Include /var/tmp/more.conf",
    "SuspendTime=60",
)


def test_nothing_a_spec_names_is_run_by_the_twin(tmp_path: Path) -> None:
    """An allowlist, not a list of what to drop: every program, plugin folder, script
    plugin and include of the rendered slurm.conf is dropped and listed; the scheduling
    keys stay."""
    rendered = (
        "ClusterName=x\nSlurmctldHost=head(10.0.1.2)\n"
        + "\n".join(CONTRIBUTED)
        + (
            "\nSchedulerParameters=bf_continue\nDefMemPerGPU=4096\nMaxJobCount=9\n"
            "PriorityWeightAge=10\nSlurmdTimeout=300\n"
        )
    )
    adapted = _adapted(rendered, "26.05.5", tmp_path)
    dropped = [line.line for line in adapted.dropped]
    assert dropped == [line for line in CONTRIBUTED if not line.startswith("PluginDir")]
    assert "PluginDir=/var/tmp/plugins" in adapted.overridden
    assert "/var/tmp" not in adapted.text
    lines = adapted.text.splitlines()
    for kept in ("SchedulerParameters=bf_continue", "DefMemPerGPU=4096", "SlurmdTimeout=300"):
        assert kept in lines


def test_missing_root_and_slurm_say_so(
    tmp_path: Path, cli, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setenv("PATH", str(tmp_path))
    result = cli("twin", str(EXAMPLES / "ml-training-8node.yaml"))
    assert result.code == 2
    message = result.err.strip().splitlines()[-1]
    assert message.startswith("clustergen: twin needs root"), result.err
    assert "needs the distribution's Slurm packages" in message
    assert "slurmctld, slurmd, scontrol" in message
    assert "apt-get install" in message and "slurmdbd" in message
    assert "Traceback" not in result.err


def test_run_of_a_missing_script_is_refused(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("twin", str(EXAMPLES / "edge-roce-2node.yaml"), "--run", str(tmp_path / "no.sh"))
    assert result.code == 2
    assert result.err == f"clustergen: --run {tmp_path / 'no.sh'}: no such file\n"


def test_gres_cores_this_machine_lacks_are_dropped_and_named() -> None:
    from clustergen.commands.twin.layout import adapt_gres_conf

    rendered = (
        "NodeName=gpu[01-02] Name=gpu Type=b200 File=/dev/nvidia0 Cores=0-13\n"
        "NodeName=gpu[01-02] Name=gpu Type=b200 File=/dev/nvidia1 Cores=1\n"
        "NodeName=gpu[01-02] Name=gpu Type=b200 File=/dev/nvidia2\n"
    )
    text, notes = adapt_gres_conf(rendered, cores=2)
    assert text.splitlines() == [
        "NodeName=gpu[01-02] Name=gpu Type=b200 File=/dev/nvidia0",
        "NodeName=gpu[01-02] Name=gpu Type=b200 File=/dev/nvidia1 Cores=1",
        "NodeName=gpu[01-02] Name=gpu Type=b200 File=/dev/nvidia2",
    ]
    assert notes == ["gres.conf: Cores=0-13 dropped (this machine has 2 cores)"]
    assert adapt_gres_conf(rendered, cores=16) == (rendered, [])
