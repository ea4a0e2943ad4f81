"""`clustergen audit`: read every fact file, compare each node with the spec and the
rendered tree, and return the findings in node order."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from clustergen.base import codes
from clustergen.base.cores import two_cores
from clustergen.base.errors import LocatedProblem
from clustergen.commands.audit.cabling import check_cables
from clustergen.commands.audit.compare import NODE_CHECKS, Report
from clustergen.commands.audit.expect import (
    AppliedTree,
    NodeExpectation,
    expectations,
    read_tree,
)
from clustergen.commands.audit.facts import NodeFacts, fact_files, read_facts
from clustergen.commands.parallel import in_two
from clustergen.resolve import ResolvedCluster

# Below this many fact files a second process costs more than it saves (a file takes
# about half a millisecond to read and check).
MIN_FILES = 1024


@dataclass(frozen=True)
class Audit:
    findings: list[LocatedProblem]
    reported: int  # nodes of the spec with a fact file
    nodes: int  # nodes of the spec
    not_reported: tuple[str, ...]  # nodes of the spec without one
    not_checked: tuple[str, ...] = ()  # whole checks that could not run, and why


@dataclass(frozen=True)
class _Checked:
    """A share of the fact files, checked node by node: the findings in file order, the
    nodes reported, and the cables' findings by the share's first usable ibnetdiscover
    report (None: it has none). The audit's cables are the first share's that has one:
    its report is the first in the files' order."""

    findings: list[LocatedProblem]
    seen: set[str]
    cables: list[LocatedProblem] | None


def audit_facts(cluster: ResolvedCluster, tree: AppliedTree, facts: Iterable[NodeFacts]) -> Audit:
    expected = expectations(cluster, tree)
    return _joined(cluster, expected, [_check_nodes(cluster, expected, facts)])


def _check_nodes(
    cluster: ResolvedCluster, expected: Mapping[str, NodeExpectation], facts: Iterable[NodeFacts]
) -> _Checked:
    findings: list[LocatedProblem] = []
    seen = set()
    scanner = None
    for node_facts in facts:
        report = Report(node_facts)
        node = expected.get(node_facts.node)
        if node is None:
            report.add(
                codes.AUDIT_UNKNOWN_NODE,
                next(iter(node_facts.sections)),
                f"not a node of {cluster.spec.cluster.name}'s spec",
            )
        else:
            seen.add(node_facts.node)
            for check in NODE_CHECKS:
                check(report, node)
        findings += report.found
        if scanner is None and node_facts.usable("ibnetdiscover") is not None:
            scanner = node_facts
    cables = check_cables([scanner], expected) if scanner is not None else None
    return _Checked(findings, seen, cables.found if cables is not None else None)


def _joined(
    cluster: ResolvedCluster, expected: Mapping[str, NodeExpectation], shares: list[_Checked]
) -> Audit:
    findings = [finding for share in shares for finding in share.findings]
    seen = set().union(*(share.seen for share in shares))
    cables = next((share.cables for share in shares if share.cables is not None), None)
    findings += cables or []
    missing = tuple(name for name in expected if name not in seen)
    return Audit(
        findings, len(seen), len(expected), missing, _not_checked(cluster, expected, cables)
    )


def _not_checked(
    cluster: ResolvedCluster,
    expected: Mapping[str, NodeExpectation],
    cables: list[LocatedProblem] | None,
) -> tuple[str, ...]:
    """The checks that could not run at all, so that a clean audit says what it proved."""
    if cluster.spec.network.fabric is None:
        return ()
    if not any(node.cables for node in expected.values()):
        return (
            "cables: the rendered tree has no cable sheet (facility/cables.csv, "
            "rendered where the spec places the nodes in racks)",
        )
    if cables is None:
        return (
            "cables: no node's fact file holds an ibnetdiscover report (collect.yml "
            "runs it on one node of the fabric)",
        )
    return ()


def audit(cluster: ResolvedCluster, out_dir: Path, arguments: Sequence[str]) -> Audit:
    """The fact files the arguments name against the spec and the tree in out_dir. Each
    file is read and checked in turn, and let go of; past MIN_FILES files on two cores,
    the later half in a second process (commands/parallel.in_two)."""
    paths = fact_files(arguments)
    expected = expectations(cluster, read_tree(out_dir))

    def check(share: Sequence[Path]) -> Callable[[], _Checked]:
        return lambda: _check_nodes(cluster, expected, map(read_facts, share))

    if len(paths) >= MIN_FILES and two_cores():
        half = (len(paths) + 1) // 2
        both = in_two(check(paths[:half]), check(paths[half:]), "checking fact files")
        if both is not None:
            return _joined(cluster, expected, list(both))
    return _joined(cluster, expected, [check(paths)()])
