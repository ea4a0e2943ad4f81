"""Configless Slurm (slurm.configless, docs/slurm.md "Configless Slurm"): what the render
changes, which nodes receive which files, slurmd's drop-in, and what `plan` says of a
slurm.conf change. The booted Debian 13 test runs it on real daemons
(tests/test_booted_cluster.py, _assert_configless_slurmd)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

from clustergen.base.artifacts import Artifact
from clustergen.base.errors import ExitCode
from clustergen.outputs.slurm.configless import DROPIN, SERVED_NOTE
from clustergen.outputs.slurm.derive import configless_parameters

from support.paths import EXAMPLES
from support.pull_request import edited
from support.specs import render_text

ML = EXAMPLES / "ml-training-8node.yaml"
CONFIGLESS = ("slurm:\n  controllers:", "slurm:\n  configless: true\n  controllers:")
SERVED = ("slurm.conf", "cgroup.conf", "gres.conf", "job_container.conf", "topology.conf")
HEAD_IP = "10.0.1.2"  # slurm-head's management address in the 8-node example


def _render(text: str, directory: Path) -> dict[str, Artifact]:
    return render_text(text, directory, ML.name)


@pytest.fixture(scope="module")
def renders(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Artifact], ...]:
    """(the example as it is, the example with slurm.configless: true)."""
    text = ML.read_text(encoding="utf-8")
    return (
        _render(text, tmp_path_factory.mktemp("files")),
        _render(edited(text, CONFIGLESS), tmp_path_factory.mktemp("configless")),
    )


def test_configless_changes_slurm_conf_by_one_setting_and_moves_the_served_files(
    renders: tuple[dict[str, Artifact], ...],
) -> None:
    files, configless = renders
    assert set(configless) - set(files) == {
        "files/groups/slurm_conf.yml",
        "slurm/configless-srv.txt",
        "slurm/slurmd-configless.conf",
    }
    # Every file the slurm group's nodes received is served or moved to slurm_conf.
    assert set(files) - set(configless) == {"files/groups/slurm.yml"}
    changed = {p for p in files if p in configless and files[p].text != configless[p].text}
    assert changed == {
        "inventory/group_vars/all.yml",  # the release stamp
        "files/groups/compute.yml",  # the drop-in
        "inventory/hosts.yml",  # the slurm_conf group
        "slurm/slurm.conf",
    }
    before = files["slurm/slurm.conf"].text.splitlines()
    after = configless["slurm/slurm.conf"].text.splitlines()
    added = [line for line in after if line not in before]
    assert added == [
        "# Configless (slurm.configless: slurmd fetches these files from slurmctld)",
        "SlurmctldParameters=enable_configless",
    ]
    assert [line for line in before if line not in after] == []
    # The other rendered files, the scripts slurmd runs among them, are the same bytes.
    assert files["slurm/health-epilog.sh"].text == configless["slurm/health-epilog.sh"].text


def _entries(artifacts: dict[str, Artifact], group: str) -> dict[str, dict[str, object]]:
    listing = artifacts.get(f"files/groups/{group}.yml")  # none where a group has no files
    data = yaml.safe_load(listing.text) if listing else []
    return {entry["dest"]: entry for entry in data}


def test_served_files_go_to_the_nodes_that_keep_files_and_scripts_stay_on_compute(
    renders: tuple[dict[str, Artifact], ...],
) -> None:
    files, configless = renders
    served = {f"/etc/slurm/{name}" for name in SERVED}
    assert served <= set(_entries(files, "slurm"))
    assert not served & set(_entries(configless, "slurm"))
    assert not served & set(_entries(configless, "compute"))
    kept = _entries(configless, "slurm_conf")
    assert set(kept) == served
    # What slurmd reads only at its start restarts slurmctld, which serves the new copy.
    changes = {dest: entry["change"] for dest, entry in kept.items()}
    assert changes == {
        "/etc/slurm/slurm.conf": "reconfigure slurmctld",
        "/etc/slurm/topology.conf": "reconfigure slurmctld",
        "/etc/slurm/cgroup.conf": "restart slurmctld",
        "/etc/slurm/gres.conf": "restart slurmctld",
        "/etc/slurm/job_container.conf": "restart slurmctld",
    }
    hosts = yaml.safe_load(configless["inventory/hosts.yml"].text)["all"]["children"]
    assert set(hosts["slurm_conf"]["children"]) == {"login", "slurm_controller", "slurm_dbd"}
    compute = _entries(configless, "compute")
    assert "/etc/slurm/health-epilog.sh" in compute  # slurmd runs it: not served
    assert compute["/etc/slurm/clustergen-nodes.slurmd"]["change"] == "restart slurmd"
    # The copies a compute node had before: removed, and the converge check looks.
    assert compute[DROPIN]["absent"] == [f"/etc/slurm/{name}" for name in SERVED]


def test_the_drop_in_points_slurmd_at_slurmctld_and_follows_what_it_reads_at_start(
    renders: tuple[dict[str, Artifact], ...],
) -> None:
    _, configless = renders
    dropin = configless["slurm/slurmd-configless.conf"]
    assert dropin.install is not None and dropin.install.dest == DROPIN
    assert dropin.install.group == "compute" and dropin.install.change.describe() == (
        "restart slurmd"
    )
    lines = [line for line in dropin.text.splitlines() if not line.startswith("#")]
    assert lines == [
        "[Unit]",
        "ConditionPathExists=",
        "",
        "[Service]",
        f'Environment="SLURMD_OPTIONS=--conf-server {HEAD_IP}:6817"',
        "",
    ]
    digests = {
        line.split()[1]: line.split()[3]
        for line in dropin.text.splitlines()
        if line.startswith("# ") and " sha256 " in line
    }
    assert digests == {
        name: hashlib.sha256(configless[f"slurm/{name}"].text.encode()).hexdigest()
        for name in ("cgroup.conf", "gres.conf", "job_container.conf")
    }
    srv = configless["slurm/configless-srv.txt"].text.splitlines()
    assert srv[-1] == (
        "_slurmctld._tcp.hpc.example.org. 3600 IN SRV 0 0 6817 slurm-head.hpc.example.org."
    )
    assert configless["slurm/configless-srv.txt"].install is None


def test_enable_configless_joins_the_site_slurmctld_parameters_on_one_line() -> None:
    options = [("SlurmdTimeout", "300"), ("slurmctldparameters", "idle_on_node_suspend")]
    merged, sections = configless_parameters(options)
    assert sections == []
    assert merged == [
        ("SlurmdTimeout", "300"),
        ("slurmctldparameters", "idle_on_node_suspend,enable_configless"),
    ]
    given = [("SlurmctldParameters", "Enable_Configless,idle_on_node_suspend")]
    assert configless_parameters(given) == (given, [])
    merged, sections = configless_parameters([("SlurmdTimeout", "300")])
    assert merged == [("SlurmdTimeout", "300")]
    assert [s.settings for s in sections] == [[("SlurmctldParameters", "enable_configless")]]


def test_plan_says_a_slurm_conf_change_is_served_and_changes_no_compute_node(
    cli,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    spec = tmp_path / "pr" / ML.name
    spec.parent.mkdir()
    spec.write_text(edited(ML.read_text(encoding="utf-8"), CONFIGLESS), encoding="utf-8")
    tree = tmp_path / "tree"
    assert cli("render", str(spec), "-o", str(tree)).code == 0
    spec.write_text(
        edited(spec.read_text(encoding="utf-8"), ('max_time: "01:00:00"', 'max_time: "02:00:00"')),
        encoding="utf-8",
    )
    result = cli("plan", str(spec), "-o", str(tree), "--format", "json")
    assert result.code == ExitCode.PLAN_CHANGES, result.err
    steps = json.loads(result.out)["steps"]
    assert [(s["action"], s["service"], s["nodes"]) for s in steps] == [
        ("reconfigure", "slurmctld", ["slurm-head"])
    ]
    assert steps[0]["reasons"] == [
        "slurm/slurm.conf changed (installed at /etc/slurm/slurm.conf; " + SERVED_NOTE + ")"
    ]
