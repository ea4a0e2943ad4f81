"""Slurm-driven reboots (slurm.reboot mode slurm, docs/ansible.md "Slurm-driven reboots"):
slurm.conf's RebootProgram and ResumeTimeout, the boot step (unit, slurmd's drop-in,
script, package lists), the roll-out script run against stand-ins of scontrol and sinfo,
and what `plan` says in either mode. The booted Debian 12 test rolls a real driver change
through Slurm (tests/test_booted_cluster.py, _slurm_driven_reboots)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from clustergen.base.artifacts import Artifact
from clustergen.commands.plan_text import ROLLOUT_COMMAND
from clustergen.outputs.slurm.reboot import BOOT_DROPIN, BOOT_UNIT, ROLLOUT_SCRIPT

from support.ci import skip_or_fail, tool
from support.paths import DATA, EXAMPLES
from support.pull_request import BUMP_DRIVER, edited
from support.specs import render_text

ML = EXAMPLES / "ml-training-8node.yaml"
SLURM_MODE = (
    "slurm:\n  controllers:",
    "slurm:\n  reboot: {mode: slurm, max_per_partition: 2, timeout_s: 900}\n  controllers:",
)
ANSIBLE_MODE = ("slurm:\n  controllers:", "slurm:\n  reboot: {mode: ansible}\n  controllers:")
SIM = DATA / "reboot_sim"
SCRIPTS = (
    "slurm/clustergen-reboot.sh",
    "slurm/clustergen-boot-packages",
    "slurm/reboot-rollout.sh",
)


def _render(text: str, directory: Path) -> dict[str, Artifact]:
    return render_text(text, directory, ML.name)


@pytest.fixture(scope="module")
def renders(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Artifact], ...]:
    """(the example as it is, with mode ansible spelled out, with mode slurm)."""
    text = ML.read_text(encoding="utf-8")
    return tuple(
        _render(edited(text, *edits), tmp_path_factory.mktemp("render"))
        for edits in ((), (ANSIBLE_MODE,), (SLURM_MODE,))
    )


def test_slurm_mode_adds_the_reboot_files_and_two_slurm_conf_keys(
    renders: tuple[dict[str, Artifact], ...],
) -> None:
    files, ansible, slurm = renders
    # Mode ansible is today's render, byte for byte.
    assert {p: a.text for p, a in ansible.items()} == {p: a.text for p, a in files.items()}
    assert set(slurm) - set(files) == {
        "slurm/clustergen-reboot.sh",
        "slurm/clustergen-boot-packages",
        f"slurm/{BOOT_UNIT}",
        "slurm/slurmd-boot-packages.conf",
        "slurm/boot-packages/nvidia_gpu.list",
        "slurm/boot-packages/nvswitch.list",
        "slurm/reboot-rollout.sh",
        "files/groups/nvidia_gpu.yml",  # the groups' first rendered files
        "files/groups/nvswitch.yml",
    }
    before = files["slurm/slurm.conf"].text.splitlines()
    added = [line for line in slurm["slurm/slurm.conf"].text.splitlines() if line not in before]
    assert added == [
        "# Reboots rolled by Slurm (slurm.reboot)",
        "RebootProgram=/etc/slurm/clustergen-reboot.sh",
        "ResumeTimeout=900",
    ]
    assert 'clustergen_reboot_mode: "slurm"' in slurm["inventory/group_vars/all.yml"].text
    assert "\nclustergen_reboot_mode:" not in files["inventory/group_vars/all.yml"].text
    rollout = slurm["slurm/reboot-rollout.sh"]
    assert rollout.install is not None
    assert (rollout.install.dest, rollout.install.group) == (ROLLOUT_SCRIPT, "slurm_controller")
    assert ROLLOUT_SCRIPT == ROLLOUT_COMMAND
    assert "BOUND=2\n" in rollout.text


def test_boot_step_installs_the_lock_versions_before_slurmd(
    renders: tuple[dict[str, Artifact], ...],
) -> None:
    slurm = renders[2]
    unit = slurm[f"slurm/{BOOT_UNIT}"].text
    assert "Before=slurmd.service" in unit and "Type=oneshot" in unit
    assert "RemainAfterExit=yes" in unit
    dropin = slurm["slurm/slurmd-boot-packages.conf"]
    assert f"Requires={BOOT_UNIT}" in dropin.text and f"After={BOOT_UNIT}" in dropin.text
    assert dropin.install is not None and dropin.install.dest == BOOT_DROPIN
    lock = yaml.safe_load(slurm["versions.lock"].text)["groups"]
    for group in ("nvidia_gpu", "nvswitch"):
        artifact = slurm[f"slurm/boot-packages/{group}.list"]
        assert artifact.install is not None and artifact.install.group == group
        listed = dict(
            line.split(" ") for line in artifact.text.splitlines() if not line.startswith("#")
        )
        pinned = lock[group]["packages"]
        assert listed and all(pinned[name] == version for name, version in listed.items())
    drivers = slurm["slurm/boot-packages/nvidia_gpu.list"].text
    assert "nvidia-dkms-550 550.90.07-0ubuntu1" in drivers and "cuda-toolkit" not in drivers
    assert "nvidia-fabricmanager-550 550.90.07-1" in slurm["slurm/boot-packages/nvswitch.list"].text
    script = slurm["slurm/clustergen-boot-packages"].text
    assert "--allow-downgrades --allow-change-held-packages" in script
    assert 'apt-mark hold "${names[@]}"' in script


def test_reboot_scripts_are_shellcheck_clean(
    renders: tuple[dict[str, Artifact], ...], tmp_path: Path
) -> None:
    shellcheck = tool("shellcheck")
    if shellcheck is None:
        skip_or_fail("needs shellcheck")
    paths = []
    for name in SCRIPTS:
        path = tmp_path / name.replace("/", "_")
        path.write_text(renders[2][name].text, encoding="utf-8")
        paths.append(str(path))
    result = subprocess.run(
        [shellcheck, "--severity=style", *paths], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _roll(
    script: str,
    tmp_path: Path,
    finals: dict[str, str],
    *batches: str,
    bound: int = 1,
    domains: str = "",
) -> subprocess.CompletedProcess[str]:
    """The roll-out script against the stand-ins: partition p1 holds n1 and n2, p2 n3;
    `domains` the NVLink domains' entries (bash words: 'name hostlist')."""
    state = tmp_path / "sim"
    state.mkdir(parents=True)
    (state / "partitions").write_text("p1 n1 n2\np2 n3\n")
    for node in ("n1", "n2", "n3"):
        (state / node).write_text("IDLE\n")
    for node, final in finals.items():
        (state / f"{node}.final").write_text(final + "\n")
    path = tmp_path / "rollout.sh"
    assert "BOUND=2\n" in script and "DOMAINS=(\n)\n" in script
    script = script.replace("BOUND=2", f"BOUND={bound}")
    path.write_text(script.replace("DOMAINS=(\n)", f"DOMAINS=({domains})"), encoding="utf-8")
    env = {
        **os.environ,
        "PATH": f"{SIM}:{os.environ['PATH']}",
        "SIM": str(state),
        "CLUSTERGEN_ROLLOUT_POLL_S": "0",
    }
    result = subprocess.run(
        ["bash", str(path), *batches], capture_output=True, text=True, env=env, timeout=20
    )
    result.stdout += (state / "log").read_text() if (state / "log").exists() else ""
    return result


def test_rollout_keeps_the_bound_and_stops_at_a_node_back_down(
    renders: tuple[dict[str, Artifact], ...], tmp_path: Path
) -> None:
    script = renders[2]["slurm/reboot-rollout.sh"].text
    good = _roll(script, tmp_path / "good", {}, "n1,n2", "n3")
    assert good.returncode == 0, good.stdout + good.stderr
    reboots = [line for line in good.stdout.splitlines() if line.startswith("reboot ")]
    # One batch of n1 and n2 in one partition with bound 1: n2 only once n1 is back.
    assert [line.split(" args=")[0] for line in reboots] == [
        "reboot n1 out=0",
        "reboot n2 out=0",
        "reboot n3 out=0",
    ]
    assert "n2 waits: partition p1 has 1 node(s) out" in good.stdout
    assert (
        "args=reboot ASAP nextstate=RESUME reason=clustergen nvidia-driver 550.90.07 n1"
        in (reboots[0])
    )
    bad = _roll(script, tmp_path / "bad", {"n2": "DOWN+NOT_RESPONDING"}, "n1", "n2", "n3")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "n2 came back DOWN+NOT_RESPONDING" in bad.stdout
    assert "reboot n3" not in bad.stdout
    usage = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
    assert usage.returncode == 2 and "usage:" in usage.stderr


def test_rollout_hands_a_domains_trays_together_or_stops(
    renders: tuple[dict[str, Artifact], ...], tmp_path: Path
) -> None:
    """n1 and n2 are the trays of one NVLink domain: with room for both in p1 they go to
    Slurm in one call, and n3 (no domain) alone after them; with a bound of one, the
    domain could never go out whole, and the roll-out stops before handing anything."""
    script = renders[2]["slurm/reboot-rollout.sh"].text
    together = _roll(
        script, tmp_path / "together", {}, "n1,n2", "n3", bound=2, domains="'d1 n1,n2'"
    )
    assert together.returncode == 0, together.stdout + together.stderr
    reboots = [line for line in together.stdout.splitlines() if line.startswith("reboot ")]
    assert [line.split(" args=")[0] for line in reboots] == [
        "reboot n1,n2 out=0",
        "reboot n3 out=0",
    ], together.stdout
    assert "domain d1 handed to Slurm (n1,n2)" in together.stdout
    whole = _roll(script, tmp_path / "whole", {}, "n1,n2", "n3", domains="'d1 n1,n2'")
    assert whole.returncode == 1, whole.stdout + whole.stderr
    assert "domain d1 has 2 node(s) in partition p1, more than the 1 out at once" in whole.stdout, (
        whole.stdout
    )
    assert "reboot " not in whole.stdout


def test_plan_says_the_mode_and_the_batches(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spec = tmp_path / "pr" / ML.name
    spec.parent.mkdir()
    spec.write_text(edited(ML.read_text(encoding="utf-8"), SLURM_MODE), encoding="utf-8")
    tree = tmp_path / "tree"
    assert cli("render", str(spec), "-o", str(tree)).code == 0
    spec.write_text(edited(spec.read_text(encoding="utf-8"), *BUMP_DRIVER), encoding="utf-8")
    out = cli("plan", str(spec), "-o", str(tree), "--driver-batch-size", "4").out
    assert "### Rolling upgrade with reboots: 8 node(s) in 2 batch(es) of 4" in out
    assert "Mode slurm (slurm.reboot)" in out
    assert f"`{ROLLOUT_COMMAND} 'gpu[01-04]' 'gpu[05-08]'`" in out
    assert "at most 2 node(s) of a partition out at once" in out
    document = json.loads(cli("plan", str(spec), "-o", str(tree), "--format", "json").out)
    assert document["driver_rollout"]["mode"] == "slurm"
    assert document["driver_rollout"]["max_per_partition"] == 2
    # The same change in mode ansible: site.yml's rolling play.
    spec.write_text(edited(spec.read_text(encoding="utf-8"), (SLURM_MODE[1], SLURM_MODE[0])))
    out = cli("plan", str(spec), "-o", str(tree), "--driver-batch-size", "4").out
    assert "Mode ansible (slurm.reboot): site.yml drains" in out
    assert "Mode slurm" not in out and f"`{ROLLOUT_COMMAND} " not in out


def test_slurm_mode_on_nvlink_domains_hands_each_domain_whole(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """GB200 NVL72 in mode slurm: plan's batches are the four domains' 18 trays each, the
    command line names them, and the rendered roll-out script knows every domain, so it
    hands each batch's trays to Slurm in one call; a bound below 18 is warned about."""
    gb200 = EXAMPLES / "gb200-nvl72-4rack.yaml"
    mode = (
        "slurm:\n  controllers:",
        "slurm:\n  reboot: {mode: slurm, max_per_partition: 18}\n  controllers:",
    )
    spec = tmp_path / "pr" / gb200.name
    spec.parent.mkdir()
    spec.write_text(edited(gb200.read_text(encoding="utf-8"), mode), encoding="utf-8")
    tree = tmp_path / "tree"
    assert cli("render", str(spec), "-o", str(tree)).code == 0
    script = (tree / "slurm" / "reboot-rollout.sh").read_text(encoding="utf-8")
    domains = [f"gb[{18 * n - 17:03d}-{18 * n:03d}]" for n in (1, 2, 3, 4)]
    listed = "".join(f"    'nvl{n} {d}'\n" for n, d in enumerate(domains, 1))
    assert f"DOMAINS=(\n{listed})\n" in script, script
    bumped = spec.read_text(encoding="utf-8").replace("570.133.20", "570.158.01")
    spec.write_text(bumped, encoding="utf-8")
    document = json.loads(cli("plan", str(spec), "-o", str(tree), "--format", "json").out)
    rollout = document["driver_rollout"]
    assert rollout["mode"] == "slurm"
    assert rollout["batch_nvlink_domains"] == [["nvl1"], ["nvl2"], ["nvl3"], ["nvl4"]]
    out = cli("plan", str(spec), "-o", str(tree)).out
    assert f"`{ROLLOUT_COMMAND} {' '.join(repr(d) for d in domains)}`" in out, out
    assert "(an NVLink domain's trays together, in one call)" in out
    spec.write_text(bumped.replace("max_per_partition: 18", "max_per_partition: 9"))
    below = cli("validate", str(spec))
    assert "[slurm.reboot-bound-below-domain]" in below.out + below.err, below
