"""LBNL NHC as slurmd's HealthCheckProgram (software.nhc, slurm.health_check): the rendered
nhc.conf, settings and slurm.conf keys, the warning without NHC, and the GPU check script
run by bash with the health Epilog's stand-in nvidia-smi (NHC itself is in no registry
the tests reach: its `die` is a stand-in that records the message, docs/health.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_epilog import FAKE_SMI, XID_79, gpus, smi_q

from clustergen.catalog.slurm_keys import KEY_LIST_VERSIONS, accepted_keys
from clustergen.render import render_all

from support.ci import require
from support.paths import DATA
from support.realslurm.testbed import SlurmTestbed, require_real_slurm
from support.specs import Data, example_data, validated

SITE_REPO = {
    "name": "site",
    "url": "https://repo.example.com/hpc/ubuntu2204/",
    "key_url": "https://repo.example.com/hpc/key.asc",
}


def with_nhc(data: Data, **health: object) -> Data:
    data["software"]["nhc"] = {"version": "1.4.3-1", "repository": "site"}
    data["software"].setdefault("repositories", []).append(dict(SITE_REPO))
    if health:
        data["slurm"].setdefault("health_check", {}).update(health)
    return data


def rendered(data: Data) -> dict[str, str]:
    cluster, _ = validated(data)
    return {path: artifact.text for path, artifact in render_all(cluster).items()}


def checks(conf: str) -> list[str]:
    return [line for line in conf.splitlines() if line and not line.startswith("#")]


@pytest.fixture(scope="module")
def ml() -> dict[str, str]:
    return rendered(with_nhc(example_data()))


@pytest.mark.parametrize(("rate", "gbits"), [("qdr", 40), ("fdr", 56)])
def test_an_older_fabrics_ports_are_checked_at_its_rate(rate: str, gbits: int) -> None:
    """QDR and FDR fabrics (sites adopting clustergen with ConnectX-3 and SwitchX) validate
    and NHC checks each port at the rate sysfs shows for them (40, 56 Gb/sec)."""
    data = with_nhc(example_data())
    data["network"]["fabric"]["rate"] = rate
    _, warnings = validated(data)
    assert "network.fabric-rate" not in warnings
    lines = checks(rendered(data)["nhc/nhc.conf"])
    ib = [line.split(" || ")[1] for line in lines if " || check_hw_ib " in line]
    assert ib and all(check.startswith(f"check_hw_ib {gbits} mlx5_") for check in ib), ib


def test_gpu_compute_profile_is_checked_as_slurm_knows_it(ml: dict[str, str]) -> None:
    lines = checks(ml["nhc/nhc.conf"])
    gpu = [line.split(" || ")[1] for line in lines if line.startswith("{gpu[01-08]} || ")]
    # 2 x 64 cores x 2 threads; RealMemory (2048 - 32 GiB) to 2048 GiB, in kB.
    assert gpu[:2] == ["check_hw_cpuinfo 2 128 256", "check_hw_physmem 2080374784 2147483648"]
    assert [c for c in gpu if c.startswith("check_hw_ib")] == [
        f"check_hw_ib 200 mlx5_{i}:1" for i in range(8)
    ]
    assert "check_clustergen_gpu 8" in gpu and "check_clustergen_dcgm" in gpu
    assert "check_ps_service -u root -d nv-fabricmanager nvidia-fabricmanager" in gpu
    assert "check_ps_service -u root -d nv-hostengine nvidia-dcgm" in gpu
    assert "check_fs_mount_rw -t lustre -f /mnt/lustre" in gpu
    # The head node runs no slurmd, so no HealthCheckProgram: no line names it.
    assert not [line for line in lines if "head" in line.split(" || ")[0]]
    assert all(line.startswith("{gpu[01-08]} || ") for line in lines)
    assert ml["slurm/slurm.conf"].count("HealthCheck") == 3
    assert "\nHealthCheckProgram=/usr/sbin/nhc\nHealthCheckInterval=300\n" in ml["slurm/slurm.conf"]
    assert "\nHealthCheckNodeState=ANY,CYCLE\n" in ml["slurm/slurm.conf"]
    assert (
        'HOSTNAME="${HOSTNAME_S}"\nNHC_RM=slurm\nMARK_OFFLINE=1\nTIMEOUT=50\n'
        in ml["nhc/nhc.sysconfig"]
    )
    assert "ExecStart=/usr/bin/dcgmi health -s pmitn\n" in ml["nhc/clustergen-dcgm-health.service"]


def test_a_grace_superchip_tray_may_count_its_gpus_memory() -> None:
    """GB200: with CDMM off the GPUs' HBM is NUMA memory in MemTotal, so the upper bound
    is the tray's 894 GiB (2 x 480 GB) and four GPUs' 186; an x86 node's is its own
    memory (above)."""
    data = example_data("gb200-nvl72-4rack")
    repository = data["software"]["repositories"][0]["name"]
    data["software"]["nhc"] = {"version": "1.4.3-1", "repository": repository}
    lines = checks(rendered(data)["nhc/nhc.conf"])
    (physmem,) = [line for line in lines if "check_hw_physmem" in line]
    low, high = (int(x) for x in physmem.split()[-2:])
    assert high == (894 + 4 * 186) * 1024**2, physmem
    assert low <= 894 * 1024**2 < high


def test_without_lustre_dcgm_or_fabric_manager_nothing_of_them_is_checked() -> None:
    data = with_nhc(example_data("edge-roce-2node"), interval_s=120, node_state=["IDLE"])
    del data["software"]["dcgm"]
    files = rendered(data)
    conf = files["nhc/nhc.conf"]
    assert "lustre" not in conf and "nvidia-fabricmanager" not in conf
    assert "dcgm" not in conf and "nhc/clustergen-dcgm-health.service" not in files
    assert "\nHealthCheckInterval=120\nHealthCheckNodeState=IDLE\n" in files["slurm/slurm.conf"]


def test_nfs_mounts_the_nodes_require_are_checked() -> None:
    data = with_nhc(example_data())
    data["storage"]["nfs"] = [
        {"server": "head01", "export": "/export/home", "path": "/home", "roles": ["compute"]},
        {"server": "filer", "export": "/v3", "path": "/data", "roles": ["compute"], "version": "3"},
        {
            "server": "filer",
            "export": "/scratch",
            "path": "/scratch",
            "roles": ["compute"],
            "required": False,
        },
    ]
    conf = rendered(data)["nhc/nhc.conf"]
    assert "{gpu[01-08]} || check_fs_mount_rw -t nfs4 -s head01:/export/home -f /home\n" in conf
    assert "{gpu[01-08]} || check_fs_mount_rw -t nfs -s filer:/v3 -f /data\n" in conf
    assert "/scratch" not in conf  # not required: its absence drains nothing


def test_without_nhc_no_health_check_program_and_a_warning() -> None:
    cluster, codes = validated(example_data())
    files = render_all(cluster)
    assert "slurm.health-check-without-nhc" in codes
    assert not [path for path in files if path.startswith("nhc/")]
    assert "HealthCheck" not in files["slurm/slurm.conf"].text
    # Without slurm.health_check at all, nothing asks for one: no warning.
    data = example_data()
    del data["slurm"]["health_check"]
    assert "slurm.health-check-without-nhc" not in validated(data)[1]


def _errors(data: Data) -> list[str]:
    from clustergen.spec.load import LoadedSpec
    from clustergen.validate import validate

    problems = validate(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))[1]
    return [p.code.name for p in problems if p.code.severity == "error"]


def test_nhc_from_an_unknown_repository_and_a_state_too_new_are_refused() -> None:
    data = with_nhc(example_data(), node_state=["START_ONLY"])
    data["software"]["nhc"]["repository"] = "sitee"
    assert sorted(_errors(data)) == [
        "slurm.health-check-state-unsupported",
        "software.nhc-repository-unknown",
    ]
    data = with_nhc(example_data(), node_state=["NONDRAINED_IDLE", "CYCLE"])
    assert _errors(data) == []  # 23.11 knows NONDRAINED_IDLE (from 23.02)


def test_health_check_keys_are_known_to_every_release() -> None:
    for version in KEY_LIST_VERSIONS:
        keys = accepted_keys(version)
        for name in ("HealthCheckProgram", "HealthCheckInterval", "HealthCheckNodeState"):
            key = keys[name.lower()]
            assert key.name == name and not key.defunct and not key.removed


# NHC's `die` as nhc defines it takes a status and a message and marks the node offline;
# the stand-in records the message.
HARNESS = """
die() {{ printf '%s\\n' "$2" >> "{dir}/die.calls"; }}
source "{script}"
{call}
echo "status=$?"
"""


def run_check(tmp_path: Path, script: str, call: str, state: dict[str, object], log: str) -> str:
    """Run one NHC check function of `script` with stand-in nvidia-smi, journalctl, logger
    and dcgmi; what `die` received, and the function's status."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "nvidia-smi").write_text(f"#!{sys.executable}\n" + FAKE_SMI)
    (bin_dir / "nvidia-smi.json").write_text(json.dumps(state))
    (tmp_path / "kernel.log").write_text(log)
    stubs = {
        "journalctl": f'printf "%s\\n" "$*" >> "{tmp_path}/journalctl.calls"\n'
        f'cat "{tmp_path}/kernel.log"\n',
        "logger": "exit 0\n",
        "dcgmi": f'cat "{tmp_path}/dcgmi.out"\n',
    }
    for name, body in stubs.items():
        (bin_dir / name).write_text("#!/bin/bash\n" + body)
    for path in bin_dir.iterdir():
        path.chmod(0o755)
    (tmp_path / "check.nhc").write_text(script)
    harness = HARNESS.format(dir=tmp_path, script=tmp_path / "check.nhc", call=call)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOSTNAME": "gpu03"}
    proc = subprocess.run(
        ["bash", "-c", harness], env=env, capture_output=True, text=True, timeout=30
    )
    assert proc.stderr == ""
    died = tmp_path / "die.calls"
    text = died.read_text() if died.exists() else ""
    died.unlink(missing_ok=True)
    return text + proc.stdout


def _smi(count: int = 8, **changes: dict[str, str]) -> dict[str, object]:
    return {"gpus": gpus(count, **changes), "hangs": False, "fails": ""}


def test_gpu_check_passes_and_fails_as_the_epilog(ml: dict[str, str], tmp_path: Path) -> None:
    script = ml["nhc/clustergen_gpu.nhc"]
    ok = "NVRM: loading NVIDIA UNIX x86_64 Kernel Module\n"
    assert run_check(tmp_path, script, "check_clustergen_gpu 8", _smi(), ok) == "status=0\n"
    failed = run_check(tmp_path, script, "check_clustergen_gpu 8", _smi(7), ok + XID_79)
    assert failed == (
        "check_clustergen_gpu: found 7 GPUs, expected 8;"
        "Xid 79 on PCI:0000:18:00: GPU has fallen off the bus\nstatus=1\n"
    )
    ecc = _smi(gpu2={"ecc.errors.uncorrected.volatile.total": "3"})
    assert run_check(tmp_path, script, "check_clustergen_gpu 8", ecc, ok) == (
        "check_clustergen_gpu: GPU 2 has 3 uncorrectable ECC errors since the driver loaded\n"
        "status=1\n"
    )
    # This boot's whole kernel log, no cursor: an Xid holds the drain until the reboot.
    assert (tmp_path / "journalctl.calls").read_text().splitlines()[0] == (
        "-k -b -q -o cat --no-pager"
    )


def test_nvl72_trays_check_the_nvlink_fabric_and_imex(tmp_path: Path) -> None:
    """The trays of NVLink domains: every GPU in the NVLink fabric (the Epilog's check,
    one template), and nvidia-imex running where it runs from boot; not in prolog mode."""
    data = with_nhc(example_data("gb200-nvl72-4rack"))
    files = rendered(data)
    lines = checks(files["nhc/nhc.conf"])
    assert [line for line in lines if "check_clustergen_gpu" in line] == [
        "{gb[001-072]} || check_clustergen_gpu 4 nvlink"
    ]
    assert "{gb[001-072]} || check_ps_service -u root -d nvidia-imex nvidia-imex" in lines
    script = files["nhc/clustergen_gpu.nhc"]
    ok = "NVRM: loading NVIDIA UNIX aarch64 Kernel Module\n"
    fabric = [("Completed", "Success")] * 3 + [("Not Started", "N/A")]
    state = {**_smi(4), "q": smi_q(fabric)}
    assert run_check(tmp_path, script, "check_clustergen_gpu 4", state, ok) == "status=0\n"
    assert run_check(tmp_path, script, "check_clustergen_gpu 4 nvlink", state, ok) == (
        "check_clustergen_gpu: GPU 00000009:03:00.0 is not in the NVLink fabric "
        "(state Not Started)\nstatus=1\n"
    )
    healthy = {**_smi(4), "q": smi_q([("Completed", "Success")] * 4)}
    assert run_check(tmp_path, script, "check_clustergen_gpu 4 nvlink", healthy, ok) == (
        "status=0\n"
    )
    data["software"]["slurm"] = "24.05.1"
    prolog = checks(rendered(data)["nhc/nhc.conf"])
    assert not [line for line in prolog if "nvidia-imex" in line]


def test_dcgm_check_reads_the_overall_health(ml: dict[str, str], tmp_path: Path) -> None:
    script = ml["nhc/clustergen_gpu.nhc"]
    row = "| Overall Health            | {}                                        |\n"
    for health, expected in (
        ("Healthy", "status=0\n"),
        ("Failure", "check_clustergen_dcgm: DCGM health is Failure\nstatus=1\n"),
    ):
        (tmp_path / "dcgmi.out").write_text("+---+\n" + row.format(health))
        assert run_check(tmp_path, script, "check_clustergen_dcgm", _smi(), "") == expected


def test_gpu_check_script_is_shellcheck_clean(ml: dict[str, str], tmp_path: Path) -> None:
    require("shellcheck")
    data = with_nhc(example_data("edge-roce-2node"))
    del data["software"]["dcgm"]
    edge = rendered(data)
    for name, text in (("with-dcgm", ml), ("without-dcgm", edge)):
        path = tmp_path / f"{name}.nhc"
        path.write_text(text["nhc/clustergen_gpu.nhc"])
        proc = subprocess.run(
            ["shellcheck", "--severity=style", str(path)], capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stdout
    assert "check_clustergen_dcgm" not in edge["nhc/clustergen_gpu.nhc"]


def test_real_nhc_drains_and_resumes_through_the_gpu_check(
    ml: dict[str, str], tmp_path: Path
) -> None:
    """NHC itself, from a checkout of github.com/mej/nhc named by CLUSTERGEN_NHC_SRC (it is
    in no registry CI reaches: skipped there, docs/health.md), runs the rendered GPU check
    with the rendered settings; sinfo and scontrol are stand-ins that record the drain."""
    source = os.environ.get("CLUSTERGEN_NHC_SRC")
    if not source:
        pytest.skip("CLUSTERGEN_NHC_SRC names no NHC checkout (docs/health.md)")
    nhc, scripts = Path(source) / "nhc", tmp_path / "scripts"
    scripts.mkdir()
    for script in (Path(source) / "scripts").glob("*.nhc"):
        (scripts / script.name).write_text(script.read_text())
    (scripts / "clustergen_gpu.nhc").write_text(ml["nhc/clustergen_gpu.nhc"])
    lines = [line for line in checks(ml["nhc/nhc.conf"]) if "clustergen" in line]
    (tmp_path / "nhc.conf").write_text("\n".join(lines) + "\n")
    settings = dict(
        line.split("=", 1) for line in checks(ml["nhc/nhc.sysconfig"]) if "HOSTNAME" not in line
    )
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sinfo").write_text(f'#!/bin/bash\ncat "{tmp_path}/sinfo.out"\n')
    (bin_dir / "scontrol").write_text(f'#!/bin/bash\necho "$*" >> "{tmp_path}/scontrol.calls"\n')
    (bin_dir / "dcgmi").write_text("#!/bin/bash\necho '| Overall Health | Healthy |'\n")
    (bin_dir / "journalctl").write_text("#!/bin/bash\n")
    (bin_dir / "nvidia-smi").write_text(f"#!{sys.executable}\n" + FAKE_SMI)
    for path in bin_dir.iterdir():
        path.chmod(0o755)

    def nhc_run(count: int, sinfo: str) -> str:
        (tmp_path / "sinfo.out").write_text(sinfo + "\n")
        (bin_dir / "nvidia-smi.json").write_text(json.dumps(_smi(count)))
        variables = {**settings, "TIMEOUT": "0", "HOSTNAME": "gpu05", "HOSTNAME_S": "gpu05"}
        variables |= {"INCDIR": str(scripts), "HELPERDIR": f"{source}/helpers"}
        variables["PATH"] = f"{bin_dir}:/usr/sbin:/usr/bin:/sbin:/bin"
        command = ["bash", str(nhc), "-c", str(tmp_path / "nhc.conf"), "-l", "-"]
        command += [f"{key}={value}" for key, value in variables.items()]
        proc = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
        return proc.stdout + proc.stderr

    out = nhc_run(7, "idle none")
    out += nhc_run(8, "drain NHC: check_clustergen_gpu: found 7 GPUs, expected 8")
    out += nhc_run(8, "drain clustergen health: Xid 79 on PCI:0000:18:00")  # the Epilog's stays
    assert "Not onlining gpu05:  Down for non-NHC reason (clustergen health: Xid 79" in out
    assert (tmp_path / "scontrol.calls").read_text().splitlines() == [
        "update State=DRAIN NodeName=gpu05 Reason=NHC: check_clustergen_gpu: found 7 GPUs, "
        "expected 8",
        "update State=RESUME NodeName=gpu05",
    ]


@pytest.mark.daemons
def test_slurmctld_takes_the_health_check_keys(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """The real slurmctld starts on the mixed-fleet golden's slurm.conf (NHC pinned) and
    shows the three keys as rendered."""
    require_real_slurm()
    result = cli("render", str(DATA / "mixed-fleet.yaml"), "-o", str(tmp_path / "out"))
    assert result.code == 0, result.err
    with SlurmTestbed(tmp_path / "out", tmp_path / "bed") as bed:
        report = bed.start_controller()
        config = bed.client("scontrol", "show", "config")
    assert report.config_problems() == []
    settings = dict(line.split(" = ", 1) for line in config.splitlines() if " = " in line)
    settings = {key.strip(): value.strip() for key, value in settings.items()}
    assert settings["HealthCheckProgram"] == "/usr/sbin/nhc"
    assert settings["HealthCheckInterval"] == "300 sec"
    assert settings["HealthCheckNodeState"] == "CYCLE,ANY"  # the rendered ANY,CYCLE, in its order
