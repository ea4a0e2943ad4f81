"""collect.yml run by real ansible-playbook on this machine (a local connection): the
tools are stand-ins that print the recorded healthy reports of tests/data/audit/, each
from its own section; the one fact file the play keeps on the controller is read back by
`clustergen audit`, which finds nothing, and holds every report, with the tools this
machine lacks recorded as absent. The booted cluster test runs it on real nodes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_audit import HEALTHY

from clustergen.cli import main
from clustergen.commands.audit.facts import parse_facts

from support.ci import skip_or_fail, tool
from support.paths import EXAMPLES, REPO

# The stand-in of each tool: the section of the recorded file it prints.
STAND_INS = {
    "slurmd": "slurmd-C",
    "ibstat": "ibstat",
    "ibv_devinfo": "ibv_devinfo-v",
    "ibstatus": "ibstatus",
    "ibnetdiscover": "ibnetdiscover",
    "lnetctl": "lnetctl-net-show",
    "dpkg-query": "dpkg-query",
    "ip": "ip-j-addr",
}


def _stand_ins(folder: Path) -> None:
    recorded = parse_facts(HEALTHY.read_text(), str(HEALTHY))
    folder.mkdir()
    for command, section in STAND_INS.items():
        (folder / f"{command}.out").write_text(recorded.sections[section].text)
        script = folder / command
        script.write_text(f'#!/bin/sh\ncat "{folder / command}.out"\n')
        script.chmod(0o755)
    # nvidia-smi answers -q -x and topo -m, each from its section.
    for flag, section in (("q", "nvidia-smi-q-x"), ("topo", "nvidia-smi-topo-m")):
        (folder / f"nvidia-smi-{flag}.out").write_text(recorded.sections[section].text)
    smi = folder / "nvidia-smi"
    smi.write_text(
        '#!/bin/sh\nif [ "$1" = topo ]; then cat "'
        + str(folder / "nvidia-smi-topo.out")
        + '"; else cat "'
        + str(folder / "nvidia-smi-q.out")
        + '"; fi\n'
    )
    smi.chmod(0o755)


@pytest.mark.slow
def test_collect_playbook_writes_one_fact_file_audit_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    playbook = tool("ansible-playbook")
    if playbook is None:
        skip_or_fail("needs ansible-playbook")
    bin_dir, facts = tmp_path / "bin", tmp_path / "facts"
    _stand_ins(bin_dir)
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        "all:\n  hosts:\n    gpu01:\n      ansible_connection: local\n"
        f"      ansible_python_interpreter: {sys.executable}\n"
    )
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"),
        "NO_COLOR": "1",
    }
    run = subprocess.run(
        [
            playbook,
            str(REPO / "collect.yml"),
            "-i",
            str(inventory),
            "-e",
            f"collect_facts_dir={facts}",
            "-e",
            "ansible_become=false",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    # The node's task changes nothing; only the controller's facts folder and file are new.
    node_task = run.stdout.split("TASK [Print every report")[1].split("TASK [")[0]
    assert "ok: [gpu01]" in node_task and "changed" not in node_task, run.stdout
    (written,) = sorted(facts.iterdir())
    assert written.name == "gpu01.txt"
    got = parse_facts(written.read_text(), str(written))
    recorded = parse_facts(HEALTHY.read_text(), str(HEALTHY))
    for section in [*STAND_INS.values(), "nvidia-smi-q-x", "nvidia-smi-topo-m"]:
        assert got.sections[section].rc == 0
        # $(...) drops trailing newlines, as every shell does.
        assert got.sections[section].text.rstrip() == recorded.sections[section].text.rstrip()
    assert set(got.sections) == {*recorded.sections}
    code = main(["audit", str(EXAMPLES / "ml-training-8node.yaml"), "-o", str(REPO), str(facts)])
    out, err = capsys.readouterr()
    assert code == 0, out + err
