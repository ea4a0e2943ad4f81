"""The cables ibnetdiscover sees against facility/cables.csv: each HCA on the switch and
port the plan says. Switch names are read from the switch's node description: a managed
NVIDIA switch's reads `MF0;ib-leaf01:MQM8700/U1`, a named one just its name."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from clustergen.base import codes
from clustergen.commands.audit.compare import Report
from clustergen.commands.audit.expect import NodeExpectation, PlannedCable
from clustergen.commands.audit.facts import NodeFacts
from clustergen.commands.audit.ibnet import parse_ibnetdiscover


def switch_name(description: str) -> str:
    if ";" in description:
        description = description.split(";", 1)[1].split(":", 1)[0]
    return description


def check_cables(
    facts: Iterable[NodeFacts], expected: Mapping[str, NodeExpectation]
) -> Report | None:
    """The findings, at the ibnetdiscover report of the first node that gave one; None
    when no node did (cabling is then not checked)."""
    scanner = next((f for f in facts if f.usable("ibnetdiscover") is not None), None)
    if scanner is None:
        return None
    section = scanner.sections["ibnetdiscover"]
    report = Report(scanner)
    seen: dict[tuple[str, str], PlannedCable] = {}
    for cable in parse_ibnetdiscover(section.text):
        if cable.peer_device:
            seen[(cable.peer, cable.peer_device)] = PlannedCable(
                switch_name(cable.switch), cable.port
            )
    if not seen:
        report.unreadable("ibnetdiscover")
        return report
    for name, node in expected.items():
        for hca, planned in node.cables.items():
            found = seen.get((name, hca))
            if found == planned:
                continue
            if found is None:
                code, text = codes.AUDIT_CABLE_NOT_SEEN, "ibnetdiscover does not see it"
            else:
                code = codes.AUDIT_CABLE_ELSEWHERE
                text = f"ibnetdiscover sees it on {found.switch} port {found.port}"
            message = (
                f"{name} {hca}: cables.csv cables it to {planned.switch} port {planned.port}; "
                + text
            )
            report.add(code, "ibnetdiscover", message, node=name)
    return report
