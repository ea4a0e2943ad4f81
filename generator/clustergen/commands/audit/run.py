"""`clustergen audit`: read every fact file, compare each node with the spec and the
rendered tree, and return the findings in node order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from clustergen.base import codes
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
from clustergen.resolve import ResolvedCluster


@dataclass(frozen=True)
class Audit:
    findings: list[LocatedProblem]
    reported: int  # nodes of the spec with a fact file
    nodes: int  # nodes of the spec
    not_reported: tuple[str, ...]  # nodes of the spec without one
    not_checked: tuple[str, ...] = ()  # whole checks that could not run, and why


def audit_facts(cluster: ResolvedCluster, tree: AppliedTree, facts: Sequence[NodeFacts]) -> Audit:
    expected = expectations(cluster, tree)
    findings: list[LocatedProblem] = []
    seen = set()
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
    cables = check_cables(facts, expected)
    if cables is not None:
        findings += cables.found
    missing = tuple(name for name in expected if name not in seen)
    return Audit(
        findings, len(seen), len(expected), missing, _not_checked(cluster, expected, cables)
    )


def _not_checked(
    cluster: ResolvedCluster, expected: Mapping[str, NodeExpectation], cables: Report | None
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
    facts = [read_facts(path) for path in fact_files(arguments)]
    return audit_facts(cluster, read_tree(out_dir), facts)
