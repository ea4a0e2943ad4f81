"""IMEX on the trays of NVLink domains (issue 24): each domain's node list in NVIDIA's format,
how it starts per Slurm release and slurm.imex, nothing without NVLink domains; and NVLSM
beside the fabric manager on HGX B200 only."""

from __future__ import annotations

import ipaddress
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from clustergen.base.artifacts import Artifact
from clustergen.catalog.groups import NVLINK_GROUP
from clustergen.catalog.packages import derived_pins
from clustergen.outputs.ansible.group_vars import lock_groups
from clustergen.render import render_all
from clustergen.resolve import ResolvedCluster
from clustergen.spec.load import LoadedSpec, load_spec
from clustergen.validate import validate_cluster

from support.ci import skip_or_fail, tool
from support.paths import CLASSIC_SPECS, DATA, EXAMPLES

Data = dict[str, Any]
TWO_DOMAINS = DATA / "nvlink-2domain.yaml"


def _cluster(data: Data) -> ResolvedCluster:
    cluster, problems = validate_cluster(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))
    assert cluster is not None, [p.format() for p in problems]
    assert not [p for p in problems if p.code.severity == "error"], [p.format() for p in problems]
    return cluster


def _spec(slurm: str = "24.11.5", imex: str | None = None) -> Data:
    data: Data = yaml.safe_load(TWO_DOMAINS.read_text())
    data["software"]["slurm"] = slurm
    if imex is not None:
        data["slurm"]["imex"] = imex
    return data


def _files(data: Data) -> dict[str, Artifact]:
    return render_all(_cluster(data))


def _conf(files: dict[str, Artifact]) -> list[str]:
    return [line for line in files["slurm/slurm.conf"].text.splitlines() if "=" in line]


def test_each_domain_lists_its_trays_addresses_one_per_line() -> None:
    """NVIDIA's nodes_config.cfg: the IP address of each node of the IMEX domain, one per
    line and nothing else; every tray of a domain gets the same list (a different map fails
    IMEX's initialisation), installed on that domain's trays only."""
    files = _files(_spec())
    cluster = _cluster(_spec())
    for domain, first in (("nvl1", 11), ("nvl2", 15)):
        artifact = files[f"imex/{domain}/nodes_config.cfg"]
        lines = artifact.text.split("\n")
        assert lines[-1] == ""  # every line ends
        addresses = lines[:-1]
        assert all(ipaddress.IPv4Address(a) for a in addresses)
        assert addresses == [f"10.0.1.{first + i}" for i in range(4)]
        trays = next(d.nodes for d in cluster.nvlink_domains if d.name == domain)
        assert [cluster.by_name[n].management_ip for n in trays] == addresses
        assert artifact.install is not None
        assert artifact.install.dest == "/etc/nvidia-imex/nodes_config.cfg"
        assert artifact.install.hosts == trays
        assert artifact.install.change.describe() == "restart nvidia-imex"


@pytest.mark.parametrize(
    ("slurm", "mode"),
    [("23.11.10", "prolog"), ("24.05.1", "prolog"), ("24.05.2", "switch"), ("26.05.5", "switch")],
)
def test_per_job_is_the_switch_plugin_where_the_release_has_it_else_the_prolog(
    slurm: str, mode: str
) -> None:
    """switch/nvidia_imex from 24.05.2 (its CVE-2024-42511 fix); before, the Prolog and
    Epilog start and stop IMEX per job, beside the health Epilog (Epilog is then a glob)."""
    files = _files(_spec(slurm))
    conf = _conf(files)
    if mode == "switch":
        assert "SwitchType=switch/nvidia_imex" in conf
        assert not [line for line in conf if line.startswith("Prolog=")]
        assert "Epilog=/etc/slurm/health-epilog.sh" in conf
        assert "slurm/imex-prolog.sh" not in files
        assert files["imex/nvl1/nodes_config.cfg"].install is not None
    else:
        assert not [line for line in conf if line.startswith("SwitchType=")]
        assert "Prolog=/etc/slurm/imex-prolog.sh" in conf
        assert "Epilog=/etc/slurm/epilog.d/*" in conf
        dests = {a.install.dest for a in files.values() if a.install is not None}
        assert {
            "/etc/slurm/imex-prolog.sh",
            "/etc/slurm/epilog.d/imex-epilog.sh",
            "/etc/slurm/epilog.d/health-epilog.sh",
        } <= dests
        assert "/etc/slurm/health-epilog.sh" not in dests
        # The Prolog writes the job's own list: the domain's file is for review only.
        assert files["imex/nvl1/nodes_config.cfg"].install is None
        prolog = files["slurm/imex-prolog.sh"].text
        assert 'gb5) echo "nvl2 10.0.1.15" ;;' in prolog


DROPIN = "slurm/slurmd-imex.conf"


def test_with_the_switch_plugin_slurmd_waits_for_the_imex_channel_device(
    tmp_path: Path,
) -> None:
    """switch/nvidia_imex checks for the channel device once, as slurmd starts: on the
    trays slurmd starts after the driver and waits for it; not with the Prolog (which
    looks itself, per job) or in global mode, and only on the trays."""
    files = _files(_spec("24.11.5"))
    dropin = files[DROPIN]
    assert dropin.install is not None
    assert dropin.install.dest == "/etc/systemd/system/slurmd.service.d/clustergen-imex.conf"
    cluster = _cluster(_spec("24.11.5"))
    trays = sorted(cluster.members[NVLINK_GROUP])
    assert sorted(dropin.install.hosts or ()) == trays and trays
    assert (dropin.install.group, dropin.install.change.action) == ("compute", "restart")
    assert "After=nvidia-persistenced.service" in dropin.text.splitlines()
    for other in (_spec("24.05.1"), _spec("24.11.5", imex="global")):
        assert DROPIN not in _files(other)
    # The wait as the drop-in runs it, on a stand-in for /proc/devices.
    (line,) = [x for x in dropin.text.splitlines() if x.startswith("ExecStartPre=")]
    devices = tmp_path / "devices"
    devices.write_text("Character devices:\n195 nvidia\n")
    command = line.removeprefix("ExecStartPre=").replace("/proc/devices", str(devices))
    assert subprocess.run(command.replace("timeout 60", "timeout 2"), shell=True).returncode == 124
    devices.write_text("Character devices:\n195 nvidia\n511 nvidia-caps-imex-channels\n")
    assert subprocess.run(command, shell=True, timeout=10).returncode == 0
    # systemd reads it as a drop-in of slurmd's unit, and would refuse a command it lacks.
    analyze = tool("systemd-analyze")
    if analyze is None:
        skip_or_fail("systemd-analyze is not installed")
    (tmp_path / "slurmd.service").write_text("[Service]\nExecStart=/bin/true\n")
    (tmp_path / "slurmd.service.d").mkdir()
    (tmp_path / "slurmd.service.d" / "clustergen-imex.conf").write_text(dropin.text)
    verify = [analyze, "verify", str(tmp_path / "slurmd.service")]
    run = subprocess.run(verify, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and "clustergen-imex.conf" not in run.stderr, run.stderr
    broken = dropin.text.replace("/usr/bin/timeout", "/usr/bin/no-such-timeout")
    (tmp_path / "slurmd.service.d" / "clustergen-imex.conf").write_text(broken)
    run = subprocess.run(verify, capture_output=True, text=True, timeout=60)
    assert run.returncode != 0 and "no-such-timeout" in run.stderr, run.stderr


def test_global_mode_runs_imex_from_boot_with_channel_zero_shared() -> None:
    files = _files(_spec("23.11.10", imex="global"))
    conf = _conf(files)
    assert not [line for line in conf if line.startswith(("SwitchType=", "Prolog="))]
    assert "Epilog=/etc/slurm/health-epilog.sh" in conf
    channel = files["imex/imex-channel0.conf"]
    assert channel.text.splitlines()[-1] == "options nvidia NVreg_CreateImexChannel0=1"
    assert channel.install is not None and channel.install.change.describe() == "reboot"
    assert files["imex/nvl2/nodes_config.cfg"].install is not None
    group_vars = yaml.safe_load(files["inventory/group_vars/nvlink_tray.yml"].text)
    assert group_vars["imex_always_on"] is True


def test_imex_is_pinned_at_the_driver_on_the_trays_only() -> None:
    cluster = _cluster(_spec())
    groups = {g.name: g for g in lock_groups(cluster)}
    assert groups["nvlink_tray"].packages == {"nvidia-imex-570": "570.133.20-1"}
    assert groups["nvlink_tray"].nodes == "gb[1-8]"
    rocky = cluster.spec.software.model_copy(update={"os": "rocky-9"})
    assert derived_pins(rocky, frozenset([NVLINK_GROUP])).by_concern["imex"] == {
        "nvidia-imex": "3:570.133.20-1"
    }
    # Without trays the concern derives nothing, whatever the software block says.
    assert derived_pins(rocky, frozenset()).by_concern["imex"] == {}


@pytest.mark.parametrize("spec", CLASSIC_SPECS, ids=lambda p: p.stem)
def test_without_nvlink_domains_nothing_of_imex(spec: Path) -> None:
    cluster, _ = validate_cluster(load_spec(str(spec)))
    assert cluster is not None
    files = render_all(cluster)
    # roles/imex is copied into every tree (site.yml skips it without trays).
    assert not [p for p in files if "imex" in p and not p.startswith("roles/imex/")]
    assert "nvlink_tray" not in files["inventory/hosts.yml"].text
    assert "imex" not in files["versions.lock"].text
    assert not [line for line in _conf(files) if line.startswith(("SwitchType=", "Prolog="))]


def test_the_prolog_and_epilog_are_shellcheck_clean(tmp_path: Path) -> None:
    shellcheck = tool("shellcheck")
    if shellcheck is None:
        skip_or_fail("needs shellcheck")
    files = _files(_spec("23.11.10"))
    scripts = []
    for name in ("slurm/imex-prolog.sh", "slurm/imex-epilog.sh"):
        path = tmp_path / Path(name).name
        path.write_text(files[name].text)
        scripts.append(str(path))
    result = subprocess.run(
        [shellcheck, "--severity=style", *scripts], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout


def test_the_prolog_lists_the_jobs_trays_of_its_own_domain(tmp_path: Path) -> None:
    """The Prolog's node list, run with bash on a job of gb3, gb4 and gb5 (two domains): on
    gb4 it holds the addresses of gb3 and gb4 only; on a node that is no tray it does
    nothing. scontrol, mknod, chown and systemctl are stand-ins; the files go to tmp_path."""
    text = _files(_spec("23.11.10"))["slurm/imex-prolog.sh"].text
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stubs = {
        "scontrol": 'printf "gb3\\ngb4\\ngb5\\n"',
        "mknod": 'echo "mknod $*" >> "$LOG"',
        "chown": 'echo "chown $*" >> "$LOG"',
        "systemctl": 'echo "systemctl $*" >> "$LOG"',
    }
    for name, body in stubs.items():
        stub = bin_dir / name
        stub.write_text(f"#!/bin/bash\n{body}\n")
        stub.chmod(0o755)
    config = tmp_path / "nodes_config.cfg"
    channels = tmp_path / "channels"
    devices = tmp_path / "devices"
    devices.write_text("195 nvidia\n234 nvidia-caps-imex-channels\n")
    script = (
        text.replace("export PATH=/usr/sbin:/usr/bin:/sbin:/bin", f"export PATH={bin_dir}:$PATH")
        .replace("/etc/nvidia-imex/nodes_config.cfg", str(config))
        .replace("/dev/nvidia-caps-imex-channels", str(channels))
        .replace("/proc/devices", str(devices))
    )
    prolog = tmp_path / "prolog.sh"
    prolog.write_text(script)
    log = tmp_path / "log"
    env = {"PATH": "/usr/bin:/bin", "SLURM_JOB_NODELIST": "gb[3-5]", "SLURM_JOB_UID": "1000"}

    def run(node: str) -> None:
        subprocess.run(
            ["bash", str(prolog)],
            env={**env, "SLURMD_NODENAME": node, "LOG": str(log)},
            check=True,
            timeout=10,
        )

    run("head1")
    assert not config.exists() and not log.exists()
    run("gb4")
    assert config.read_text() == "10.0.1.13\n10.0.1.14\n"
    assert log.read_text().splitlines() == [
        f"mknod -m 0600 {channels}/channel0 c 234 0",
        f"chown 1000 {channels}/channel0",
        "systemctl start nvidia-imex",
    ]


def test_nvlsm_is_pinned_beside_the_fabric_manager_on_hgx_b200_only() -> None:
    """HGX B200 (the superpod example) pins nvlsm with the fabric manager; HGX H100 (the
    8-node reference spec) does not, and converges without it."""
    pins = {}
    for name in ("superpod-rail-128node", "ml-training-8node"):
        cluster, _ = validate_cluster(load_spec(str(EXAMPLES / f"{name}.yaml")))
        assert cluster is not None
        pins[name] = {g.name: g.packages for g in lock_groups(cluster)}["nvswitch"]
    # With DCGM on both, DCGM's NVSwitch libraries at the driver's version: NSCQ, and NVSDM
    # on fourth-generation NVSwitch (docs/imex.md).
    assert pins["superpod-rail-128node"] == {
        "libnvidia-nscq-570": "570.124.06-1",
        "libnvsdm-570": "570.124.06-1",
        "nvidia-fabricmanager-570": "570.124.06-1",
        "nvlsm": "2025.01.5-1",
    }
    assert pins["ml-training-8node"] == {
        "libnvidia-nscq-550": "550.90.07-1",
        "nvidia-fabricmanager-550": "550.90.07-1",
    }
