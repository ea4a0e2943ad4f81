"""The rendered Slurm files of each reference spec, handed to the real daemons.

slurmctld (with slurmdbd and MariaDB when the spec has accounting) must start
on the rendered slurm.conf and topology.conf and report every compute node
with its CPUs, RealMemory, GRES and features, and every partition, exactly as
the spec says. `slurmd -G` on one node of each GPU profile must print no error
or warning and count the profile's GPUs of the right type. These tests run in
CI and never skip there (see tests/support/realslurm/ for how the daemons are run).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from clustergen.catalog.gpus import profile_gres_type
from clustergen.outputs.slurm.derive import SlurmContext, derive_slurm
from clustergen.resolve import ResolvedCluster
from clustergen.spec.load import load_spec
from clustergen.validate import validate_cluster

from support.paths import EXAMPLES, REFERENCE_SPECS, WARNING_CASES
from support.realslurm.expect import assert_report_matches
from support.realslurm.testbed import SlurmTestbed, require_real_slurm

pytestmark = pytest.mark.daemons


def rendered(spec_path: Path, out: Path, cli) -> tuple[ResolvedCluster, SlurmContext]:  # type: ignore[no-untyped-def]
    result = cli("render", str(spec_path), "-o", str(out))
    assert result.code == 0, result.err
    loaded = load_spec(str(spec_path))
    cluster, _ = validate_cluster(loaded)
    assert cluster is not None
    return cluster, derive_slurm(cluster)


@pytest.mark.parametrize("spec_path", REFERENCE_SPECS, ids=lambda p: p.stem)
def test_slurmctld_runs_the_rendered_configuration(spec_path: Path, tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    require_real_slurm()
    cluster, slurm = rendered(spec_path, tmp_path / "out", cli)
    spec = cluster.spec
    with SlurmTestbed(tmp_path / "out", tmp_path / "bed") as bed:
        report = bed.start_controller()
    print(report.summary())  # names every rendered line this test had to skip
    assert report.config_problems() == []
    assert report.accounting == ("slurmdbd" if spec.slurm.accounting else "none")

    assert_report_matches(report, cluster, slurm)


@pytest.mark.parametrize("spec_path", REFERENCE_SPECS, ids=lambda p: p.stem)
def test_slurmd_reads_rendered_gres_conf(spec_path: Path, tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    require_real_slurm()
    cluster, _ = rendered(spec_path, tmp_path / "out", cli)
    first_of_profile: dict[str, object] = {}
    for host in cluster.hosts:
        if host.is_slurm_compute and host.hardware.gpu is not None:
            first_of_profile.setdefault(host.hardware_name, host)
    assert first_of_profile, "each reference spec has GPU nodes"
    with SlurmTestbed(tmp_path / "out", tmp_path / "bed") as bed:
        for host in first_of_profile.values():
            count = host.hardware.gpu.count  # type: ignore[attr-defined]
            report = bed.slurmd_gres(host.name, gpu_count=count)  # type: ignore[attr-defined]
            assert report.ok, report.output
            assert report.gpu_count(profile_gres_type(host.hardware)) == count, report.output  # type: ignore[attr-defined]


def gpu_defaults_spec(tmp_path: Path) -> Path:
    """ml-training-8node with a system reserve, NodeAddr, QOS and configless Slurm; the GPU
    nodes' addresses cross a /24, so NodeAddr needs two ranges on one line."""
    text = (EXAMPLES / "ml-training-8node.yaml").read_text()
    replacements = {
        "    gpu: {model: h100-sxm5-80gb, count: 8, nvswitch: true}\n": (
            "    system_reserved: {cores: 4, memory_gib: 32}\n"
            "    gpu: {model: h100-sxm5-80gb, count: 8, nvswitch: true}\n"
        ),
        "management: {cidr: 10.0.1.0/24, gateway: 10.0.1.1}": (
            "management: {cidr: 10.0.0.0/23, gateway: 10.0.1.1}"
        ),
        "    management_ip: 10.0.1.11\n": "    management_ip: 10.0.0.249\n",
        "  preemption: {type: qos, mode: CANCEL}\n": (
            "  preemption: {type: qos, mode: REQUEUE}\n"
            "  node_addr_from_management: true\n"
            "  configless: true\n"
            "  qos:\n"
            "    - {name: low, preempt_mode: REQUEUE, grace_time_s: 600}\n"
            "    - {name: high, priority: 10, preempt: [low]}\n"
        ),
    }
    for old, new in replacements.items():
        assert old in text, old
        text = text.replace(old, new)
    spec = tmp_path / "gpu-defaults.yaml"
    spec.write_text(text)
    return spec


def test_slurmctld_takes_the_derived_gpu_defaults(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    require_real_slurm()
    cluster, slurm = rendered(gpu_defaults_spec(tmp_path), tmp_path / "out", cli)
    (node_line,) = slurm.nodes
    assert node_line.names == "gpu[01-08]"
    assert dict(node_line.settings)["NodeAddr"] == "10.0.0.[249-255],10.0.1.0"
    with SlurmTestbed(tmp_path / "out", tmp_path / "bed") as bed:
        report = bed.start_controller()
        config = bed.client("scontrol", "show", "config")
        dbd_config = bed.client("sacctmgr", "show", "configuration")
    print(report.summary())
    assert report.config_problems() == []
    assert [item.line for item in report.skipped] == []
    for host in cluster.hosts:
        if host.is_slurm_compute:
            fields = report.nodes[host.name].fields
            assert fields["NodeAddr"] == host.management_ip, host.name
            assert fields["CoreSpecCount"] == "4"
            assert fields["MemSpecLimit"] == str(32 * 1024)
    for partition in report.partitions.values():
        fields = partition.fields
        assert fields["DefaultTime"] == "01:00:00"
        # 124 of 128 cores and 1952 of 1984 GiB left for jobs, shared among 8 GPUs.
        assert fields["JobDefaults"] == "DefCpuPerGPU=30,DefMemPerGPU=249856"
        assert fields["TRESBillingWeights"] == "CPU=1,Mem=0.127G,GRES/gpu=31"
    settings = dict(line.split(" = ", 1) for line in config.splitlines() if " = " in line)
    settings = {key.strip(): value.strip() for key, value in settings.items()}
    assert settings["PrologFlags"] == "Alloc,Contain"
    assert settings["PriorityFlags"].startswith("MAX_TRES")
    assert settings["AccountingStorageEnforce"] == "associations,limits,qos"
    assert settings["UnkillableStepTimeout"] == "180 sec"
    assert settings["PrologEpilogTimeout"] == "180"
    assert settings["PropagateResourceLimitsExcept"] == "MEMLOCK"
    # slurm.configless: slurmctld serves the files (it stops at a parameter it refuses).
    assert settings["SlurmctldParameters"] == "enable_configless"
    assert "bf_window=43200" in settings["SchedulerParameters"]
    # slurm.isolation, as slurmctld understood it.
    assert settings["JobContainerType"] == "job_container/tmpfs"
    assert settings["LaunchParameters"] == "ulimit_pam_adopt"
    assert settings["PrivateData"] == "jobs,usage,users"
    # slurmdbd read its rendered PrivateData too (slurmdbd.conf, sacctmgr's view of it).
    dbd = dict(line.split("=", 1) for line in dbd_config.splitlines() if "=" in line)
    dbd = {key.strip(): value.strip() for key, value in dbd.items()}
    assert dbd["PrivateData"] == "jobs,usage,users", dbd_config


def test_slurmctld_logs_no_error_for_priority_weights_without_accounting(
    tmp_path: Path, cli
) -> None:  # type: ignore[no-untyped-def]
    """Multifactor weights without slurm.accounting: slurmctld logs "error: PriorityWeightAge
    can only be used with SlurmDBD, ignoring" (and so for Fairshare) for a rendered weight,
    so neither is rendered (validation says why); the other weights are."""
    require_real_slurm()
    spec = WARNING_CASES / "slurm-priority-without-accounting.yaml"
    _, slurm = rendered(spec, tmp_path / "out", cli)
    with SlurmTestbed(tmp_path / "out", tmp_path / "bed") as bed:
        report = bed.start_controller()
        config = bed.client("scontrol", "show", "config")
    print(report.summary())
    assert report.accounting == "none"
    assert report.config_problems() == []
    settings = dict(line.split(" = ", 1) for line in config.splitlines() if " = " in line)
    settings = {key.strip(): value.strip() for key, value in settings.items()}
    assert settings["PriorityType"] == "priority/multifactor"
    assert settings["PriorityWeightPartition"] == "1000"
    rendered_keys = {key for section in slurm.sections for key, _ in section.settings}
    assert {"PriorityWeightAge", "PriorityWeightFairshare"}.isdisjoint(rendered_keys)
