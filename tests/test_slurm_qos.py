"""slurm.qos: the rendered sacctmgr script run against a real slurmdbd (MariaDB behind it).

The script must create every QOS with its Preempt list, PreemptMode and GraceTime,
report "changed" only when it changed something, and set back a QOS changed by hand.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.ansible_testbed import parse_recap
from support.ci import require, tool
from support.paths import EXAMPLES
from support.realslurm.testbed import SlurmTestbed, require_real_slurm

pytestmark = pytest.mark.daemons

QOS = """\
  preemption: {type: qos, mode: REQUEUE}
  qos:
    - {name: low, preempt_mode: REQUEUE, grace_time_s: 300}
    - {name: high, priority: 100, preempt: [low, normal]}
    - {name: urgent, priority: 1000, preempt: [high, low], grace_time_s: 90061}
"""


def qos_spec(tmp_path: Path) -> Path:
    text = (EXAMPLES / "ml-training-8node.yaml").read_text()
    old = "  preemption: {type: qos, mode: CANCEL}\n"
    assert old in text
    spec = tmp_path / "qos.yaml"
    spec.write_text(text.replace(old, QOS))
    return spec


def test_qos_script_creates_the_qos_once(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    require_real_slurm()
    out = tmp_path / "out"
    result = cli("render", str(qos_spec(tmp_path)), "-o", str(out))
    assert result.code == 0, result.err
    script = out / "slurm" / "clustergen-qos.sh"
    slurm_conf = (out / "slurm" / "slurm.conf").read_text()
    assert "AccountingStorageEnforce=associations,limits,qos" in slurm_conf
    with SlurmTestbed(out, tmp_path / "bed") as bed:
        report = bed.start_controller()
        assert report.accounting == "slurmdbd"

        def show() -> list[str]:
            listing = bed.client(
                "sacctmgr",
                "-nP",
                "show",
                "qos",
                "format=Name,Priority,Preempt,PreemptMode,GraceTime",
            )
            return sorted(listing.splitlines())

        first = bed.client("bash", str(script))
        assert sorted(first.splitlines()) == [
            "changed: high",
            "changed: high",
            "changed: low",
            "changed: low",
            "changed: urgent",
            "changed: urgent",
        ]
        assert show() == [
            "high|100|low,normal|cluster|00:00:00",
            "low|0||requeue|00:05:00",
            "normal|0||cluster|00:00:00",
            "urgent|1000|high,low|cluster|1-01:01:01",
        ]
        assert bed.client("bash", str(script)) == ""  # nothing to change

        bed.client("sacctmgr", "-i", "modify", "qos", "where", "name=low", "set", "GraceTime=5")
        bed.client("sacctmgr", "-i", "modify", "qos", "where", "name=high", "set", "Preempt=")
        bed.client("sacctmgr", "-i", "modify", "qos", "where", "name=urgent", "set", "Priority=1")
        assert sorted(bed.client("bash", str(script)).splitlines()) == [
            "changed: high",
            "changed: low",
            "changed: urgent",
        ]
        assert show() == [
            "high|100|low,normal|cluster|00:00:00",
            "low|0||requeue|00:05:00",
            "normal|0||cluster|00:00:00",
            "urgent|1000|high,low|cluster|1-01:01:01",
        ]
        assert bed.client("bash", str(script)) == ""


def run_role(out: Path, bed: SlurmTestbed, tmp_path: Path) -> tuple[dict[str, int], str]:
    """The rendered tree's slurm_accounting role on this machine, as the controller."""
    script = out / "slurm" / "clustergen-qos.sh"
    play = [
        {
            "name": "QOS",
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": False,
            "environment": {"SLURM_CONF": str(bed.paths.slurm_conf)},
            "vars": {
                "ansible_python_interpreter": sys.executable,
                "slurm_accounting_qos_script": str(script),
                # What clustergen_files (group_vars/all.yml) gives the controllers.
                "clustergen_files": [{"dest": str(script)}],
            },
            "roles": ["slurm_accounting"],
        }
    ]
    playbook = tmp_path / "qos.yml"
    playbook.write_text(json.dumps(play))
    env = {
        **os.environ,
        "ANSIBLE_ROLES_PATH": str(out / "roles"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_LOCALHOST_WARNING": "0",
        "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0",
    }
    ansible_playbook = tool("ansible-playbook")
    assert ansible_playbook is not None
    result = subprocess.run(
        [ansible_playbook, "-i", "localhost,", str(playbook)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    return parse_recap(result.stdout)["localhost"], output


def test_slurm_accounting_role_reports_changed_only_on_change(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    require_real_slurm()
    require("ansible-playbook")
    out = tmp_path / "out"
    result = cli("render", str(qos_spec(tmp_path)), "-o", str(out))
    assert result.code == 0, result.err
    with SlurmTestbed(out, tmp_path / "bed") as bed:
        bed.start_controller()
        first, output = run_role(out, bed, tmp_path)
        assert first["changed"] == 1, output
        assert "urgent" in bed.client("sacctmgr", "-nP", "show", "qos", "format=Name")
        second, output = run_role(out, bed, tmp_path)
        assert (second["changed"], second["failed"]) == (0, 0), output
        bed.client("sacctmgr", "-i", "modify", "qos", "where", "name=low", "set", "GraceTime=5")
        third, output = run_role(out, bed, tmp_path)
        assert third["changed"] == 1, output
