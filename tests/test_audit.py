"""`clustergen audit` on recorded outputs of the real tools (tests/data/audit/): a healthy
GPU node of examples/ml-training-8node.yaml reports nothing; each fault file replaces
some of its reports and names, on its `# expect:` lines, every finding it must give (code
and node), no more. The topology table is checked on examples/superpod-rail-128node.yaml,
the reference spec that has one."""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from clustergen.base.codes import CODES
from clustergen.base.errors import LocatedProblem, UsageError
from clustergen.cli import main
from clustergen.commands.audit.compare import Report, check_pull, check_topology
from clustergen.commands.audit.expect import AppliedTree, NodeExpectation, expectations, read_tree
from clustergen.commands.audit.facts import NodeFacts, parse_facts
from clustergen.commands.audit.run import audit_facts
from clustergen.resolve import ResolvedCluster
from clustergen.spec.load import LoadedSpec, load_spec
from clustergen.validate import validate_cluster

from support.audit_facts import healthy_facts
from support.paths import DATA, EXAMPLES, GOLDEN, REPO

RECORDED = DATA / "audit"
HEALTHY = RECORDED / "healthy" / "gpu01.txt"
FAULTS = sorted((RECORDED / "faults").glob("*.txt"))
TOPOLOGY = RECORDED / "topology"
NEVER_PULLED = RECORDED / "pull" / "never-pulled.txt"
ML = EXAMPLES / "ml-training-8node.yaml"
SUPERPOD = EXAMPLES / "superpod-rail-128node.yaml"
_EXPECT = re.compile(r"^# expect: (\S+) (\S+)$", re.M)


def _cluster(spec: Path) -> ResolvedCluster:
    cluster, problems = validate_cluster(load_spec(str(spec)), [])
    assert cluster is not None, problems
    return cluster


@pytest.fixture(scope="module")
def ml() -> ResolvedCluster:
    return _cluster(ML)


def expected_findings(path: Path) -> Counter[tuple[str, str]]:
    return Counter((code, node) for code, node in _EXPECT.findall(path.read_text()))


def with_fault(fault: Path) -> NodeFacts:
    """The healthy node's reports, those the fault file gives replaced by its own."""
    healthy = parse_facts(HEALTHY.read_text(), str(HEALTHY))
    patch = parse_facts(fault.read_text(), f"facts/{fault.stem}.txt")
    if patch.node != healthy.node:
        return patch
    healthy.path = patch.path
    healthy.sections.update(patch.sections)
    return healthy


def found(problems: list[LocatedProblem]) -> Counter[tuple[str, str]]:
    return Counter((p.code.name, str(p.path[0])) for p in problems)


def fault_findings(cluster: ResolvedCluster, fault: Path) -> list[LocatedProblem]:
    return audit_facts(cluster, read_tree(REPO), [with_fault(fault)]).findings


def test_healthy_node_reports_nothing_and_every_report_was_read(ml: ResolvedCluster) -> None:
    facts = parse_facts(HEALTHY.read_text(), str(HEALTHY))
    result = audit_facts(ml, read_tree(REPO), [facts])
    assert result.findings == [], [p.format() for p in result.findings]
    assert (result.reported, result.nodes) == (1, 14)
    assert result.not_checked == ()
    # Not vacuous: the expectations name what the reports hold, and each was read.
    node = expectations(ml, read_tree(REPO))["gpu01"]
    assert (node.gpu_count, len(node.hcas), node.cpus, node.rate_gbits) == (8, 8, 256, 200)
    assert len(node.packages) == 28 and node.lnet == (("o2ib0", "ib0"),)
    assert len(node.cables) == 8 and len(node.addresses) == 2


def test_each_recorded_fault_gives_exactly_its_findings(ml: ResolvedCluster) -> None:
    assert len(FAULTS) >= 18
    wrong = {}
    for fault in FAULTS:
        want = expected_findings(fault)
        assert want, f"{fault.name} names no '# expect:' finding"
        got = fault_findings(ml, fault)
        if found(got) != want:
            wrong[fault.name] = (dict(want), [p.format() for p in got])
    assert not wrong, wrong


def test_a_report_nested_past_the_parsers_is_that_nodes_alone(ml: ResolvedCluster) -> None:
    """`ip -j addr` nested 100,000 deep (a hostile node's fact file) is that section's
    finding; it stopped the whole audit with "the spec is nested too deeply" and no
    finding for any node (a fresh round of attacks)."""
    facts = parse_facts(HEALTHY.read_text(), str(HEALTHY))
    section = facts.sections["ip-j-addr"]
    facts.sections["ip-j-addr"] = replace(section, text="[" * 100_000 + "]" * 100_000)
    result = audit_facts(ml, read_tree(REPO), [facts])
    assert [(p.code.name, [str(part) for part in p.path]) for p in result.findings] == [
        ("audit.report-unreadable", ["gpu01", "ip-j-addr"])
    ], [p.format() for p in result.findings]


def test_a_finding_is_located_and_worded_for_the_admin(ml: ResolvedCluster) -> None:
    (problem,) = fault_findings(ml, RECORDED / "faults" / "hca-rate.txt")
    assert problem.format() == (
        "facts/hca-rate.txt:4:1: gpu01.ibstat: mlx5_5 port 1 runs at 100 Gb/s; the "
        "fabric's rate is 200 Gb/s [audit.hca-rate]"
    )
    (cable,) = fault_findings(ml, RECORDED / "faults" / "cable-not-seen.txt")
    assert cable.message == (
        "gpu03 mlx5_4: cables.csv cables it to ib-leaf01 port 21; ibnetdiscover does not see it"
    )


def test_topology_table_against_topo_m() -> None:
    cluster = _cluster(SUPERPOD)
    node = expectations(cluster, read_tree(GOLDEN / "superpod-rail-128node"))["gpu001"]
    assert node.topology is not None
    for path, want in (
        (TOPOLOGY / "healthy.txt", Counter()),
        (TOPOLOGY / "gpu-hca-and-numa.txt", expected_findings(TOPOLOGY / "gpu-hca-and-numa.txt")),
    ):
        report = Report(parse_facts(path.read_text(), str(path)))
        check_topology(report, node)
        assert found(report.found) == want, [p.format() for p in report.found]


def test_a_tool_absent_where_the_spec_has_no_component_is_no_finding(
    ml: ResolvedCluster,
) -> None:
    """The head node has no GPUs and runs no slurmd, the Lustre servers neither, and no
    node has the other package manager: those tools absent are no finding. Every node's
    file synthesized healthy (collect.yml's shape) gives nothing."""
    expected = expectations(ml, read_tree(REPO))
    facts = [
        parse_facts(healthy_facts(name, node), f"facts/{name}.txt")
        for name, node in expected.items()
    ]
    head = next(f for f in facts if f.node == "slurm-head")
    assert head.sections["nvidia-smi-q-x"].absent and head.sections["slurmd-C"].absent
    result = audit_facts(ml, read_tree(REPO), facts)
    assert result.findings == [] and result.not_reported == ()


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["audit", str(ML), *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_command_line_formats_and_exit_codes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = _run(capsys, "-o", str(REPO), str(HEALTHY.parent))
    assert (code, out.splitlines()[-1]) == (0, f"{ML}: 0 finding(s) on 1 of 14 node(s) reported")
    assert "warning" not in err  # the spec's warnings are validate's
    # The healthy file with a later ibstat report, which replaces the first.
    fault = tmp_path / "gpu01.txt"
    down = (RECORDED / "faults" / "hca-down.txt").read_text()
    fault.write_text(HEALTHY.read_text() + down[down.index("#### clustergen-section") :])
    line = HEALTHY.read_text().count("\n") + 1
    code, out, err = _run(capsys, "-o", str(REPO), "--format", "github", str(fault))
    assert code == 1
    assert out.startswith(
        f"::error file={fault},line={line},col=1,title=audit.hca-down::gpu01.ibstat: "
    ), out
    code, out, err = _run(capsys, "-o", str(REPO), "--format", "json", str(fault))
    (record,) = json.loads(out)
    assert (code, record["code"], record["path"], record["line"]) == (
        1,
        "audit.hca-down",
        "gpu01.ibstat",
        line,
    )
    code, _, err = _run(capsys, "-o", str(REPO), "--ignore", "audit.cable-not-seen", str(fault))
    assert code == 1 and "[audit.hca-down]" in err
    garbage = tmp_path / "node.txt"
    garbage.write_text("hello\n")
    for args, why in (
        (("-o", str(REPO), str(tmp_path / "none")), "no such fact file"),
        (("-o", str(tmp_path), str(HEALTHY)), "versions.lock: cannot read it"),
        (("-o", str(REPO), str(garbage)), "not a fact file of collect.yml"),
        (("-o", str(REPO), "--ignore", "audit.hca-down", str(HEALTHY)), "cannot be ignored"),
    ):
        code, _, err = _run(capsys, *args)
        assert code == 2 and why in err and "Traceback" not in err, (args, err)


@functools.cache
def _pull_node() -> NodeExpectation:
    """gpu1 of the booted test's spec on Debian 13 with pull mode (ansible.pull), as
    tests/test_booted_cluster.py runs it."""
    data = yaml.safe_load((DATA / "booted-3node.yaml").read_text())
    data["software"].update(os="debian-13", slurm="24.11.5")
    data["ansible"] = {
        "pull": {"repository": "file:///srv/site.git", "branch": "approved", "unsigned": True}
    }
    cluster, problems = validate_cluster(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))
    assert cluster is not None, [p.format() for p in problems]
    node = expectations(cluster, AppliedTree("apt", {}, {}))["gpu1"]
    assert node.pull
    return node


def _pull_findings(text: str, path: str = "facts/gpu1.txt") -> list[LocatedProblem]:
    report = Report(parse_facts(text, path))
    check_pull(report, _pull_node())
    return report.found


def test_pull_records_against_pull_mode(ml: ResolvedCluster) -> None:
    """A pull-mode node with no record has never pulled (a warning); its record of a run
    that succeeded is no finding, of one that failed is, naming both commits and what
    failed; a record audit cannot read says so. A node of a spec without pull mode that
    reports no record is no finding."""
    never = _pull_findings(NEVER_PULLED.read_text())
    assert found(never) == expected_findings(NEVER_PULLED)
    assert never[0].format().startswith("facts/gpu1.txt:1:1: gpu1.pull-record: warning: ")
    header = "#### clustergen-facts 1 host=gpu1\n#### clustergen-section pull-record rc=0\n"
    ok = {"ref": "approved", "commit": "c2", "result": "ok", "last_good": "c2", "time": "t"}
    assert _pull_findings(header + json.dumps(ok) + "\n") == []
    failed = (RECORDED / "faults" / "pull-failed.txt").read_text().replace("gpu01", "gpu1")
    (problem,) = _pull_findings(failed)
    assert (problem.code.name, problem.path) == ("audit.pull-failed", ("gpu1", "pull-record"))
    assert problem.message.startswith(
        "its last pull run (2026-11-28T10:02:11Z) failed at commit 5e0c41f2b7a9d3c8e1f0a6b4c2d9e8f"
        "7a1b3c5d7 of approved; it keeps its last good commit 91a2d4c6e8f0a1b3c5d7e9f1a3b5c7d9e1"
        "f3a5b7: failed: [gpu1] (item=/etc/systemd/system/clustergen-pull.timer"
    ), problem.message
    (garbled,) = _pull_findings(header + "{not json\n")
    assert garbled.code.name == "audit.report-unreadable"
    healthy = parse_facts(HEALTHY.read_text(), str(HEALTHY))
    assert audit_facts(ml, read_tree(REPO), [healthy]).findings == []


def test_every_audit_code_is_produced_by_a_recorded_fault() -> None:
    produced = {
        code
        for path in [*FAULTS, TOPOLOGY / "gpu-hca-and-numa.txt", NEVER_PULLED]
        for code, _ in expected_findings(path)
    }
    assert produced == {name for name in CODES if name.startswith("audit.")}


@functools.cache
def audit_examples() -> dict[str, str]:
    """One finding of each audit code as `clustergen audit` prints it, for docs/errors.md."""
    cluster = _cluster(ML)
    examples: dict[str, str] = {}
    for fault in FAULTS:
        for problem in fault_findings(cluster, fault):
            examples.setdefault(problem.code.name, problem.format())
    node = expectations(_cluster(SUPERPOD), read_tree(GOLDEN / "superpod-rail-128node"))["gpu001"]
    path = TOPOLOGY / "gpu-hca-and-numa.txt"
    report = Report(parse_facts(path.read_text(), f"facts/{node.host.name}.txt"))
    check_topology(report, node)
    for problem in [*report.found, *_pull_findings(NEVER_PULLED.read_text())]:
        examples.setdefault(problem.code.name, problem.format())
    return examples


def test_a_check_that_could_not_run_is_said(ml: ResolvedCluster, tmp_path: Path) -> None:
    """A clean audit says what it proved: without an ibnetdiscover report, or a tree
    without a cable sheet, the cables are "not checked", never "0 findings" alone."""
    facts = parse_facts(HEALTHY.read_text(), str(HEALTHY))
    del facts.sections["ibnetdiscover"]
    result = audit_facts(ml, read_tree(REPO), [facts])
    assert result.findings == [], [p.format() for p in result.findings]
    assert result.not_checked == (
        "cables: no node's fact file holds an ibnetdiscover report (collect.yml runs it on "
        "one node of the fabric)",
    )
    (tmp_path / "versions.lock").write_bytes((REPO / "versions.lock").read_bytes())
    unracked = audit_facts(ml, read_tree(tmp_path), [parse_facts(HEALTHY.read_text(), "f")])
    assert unracked.not_checked == (
        "cables: the rendered tree has no cable sheet (facility/cables.csv, rendered where "
        "the spec places the nodes in racks)",
    )


def test_in_two_processes_audit_finds_and_refuses_what_one_does(
    ml: ResolvedCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past MIN_FILES files on two cores, the later half is read and checked in a second
    process: the same findings in the same order, the cables judged by the first
    ibnetdiscover report in file order (the later half's when only it has one), and an
    unreadable file in either half is the same refusal, the earlier half's first."""
    from clustergen.commands.audit import run
    from clustergen.commands.parallel import in_two

    expected = expectations(ml, read_tree(REPO))
    facts = tmp_path / "facts"
    facts.mkdir()
    for name, node in expected.items():
        (facts / f"{name}.txt").write_text(healthy_facts(name, node))
    down = (RECORDED / "faults" / "hca-down.txt").read_text()
    gpu01 = healthy_facts("gpu01", expected["gpu01"])  # no ibnetdiscover of its own
    (facts / "gpu01.txt").write_text(gpu01 + down[down.index("#### clustergen-section") :])
    # The cabling report only the last file (the second process's half) gives.
    scan = (RECORDED / "faults" / "cable-elsewhere.txt").read_text()
    last = sorted(facts.iterdir())[-1]
    last.write_text(last.read_text() + scan[scan.index("#### clustergen-section ibnetdiscover") :])
    monkeypatch.setenv("CLUSTERGEN_SERIAL", "1")
    serial = run.audit(ml, REPO, [str(facts)])
    monkeypatch.delenv("CLUSTERGEN_SERIAL")
    monkeypatch.setattr(run, "MIN_FILES", 2)
    monkeypatch.setattr(run, "two_cores", lambda: True)
    forked = []
    monkeypatch.setattr(run, "in_two", lambda *a: forked.append(1) or in_two(*a))
    both = run.audit(ml, REPO, [str(facts)])
    assert forked and both == serial
    assert {p.code.name for p in both.findings} >= {"audit.hca-down", "audit.cable-elsewhere"}
    assert all(p.code is CODES[p.code.name] for p in both.findings)
    # Unreadable files: the earlier half's refusal wins, as one process reads in order.
    names = sorted(facts.iterdir())
    names[-1].write_text("hello\n")
    with pytest.raises(UsageError, match=names[-1].name):
        run.audit(ml, REPO, [str(facts)])
    names[0].write_text("hello\n")
    with pytest.raises(UsageError, match=names[0].name):
        run.audit(ml, REPO, [str(facts)])
