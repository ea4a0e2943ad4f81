"""The cables ibnetdiscover sees against facility/cables.csv: each HCA on the switch and
port the plan says. Names come from the node descriptions (ibnet.node_name): where a
node's description names its host but not the device (MLNX_OFED's `gpu01 HCA-1`), its
HCAs are matched by switch and port: each planned cable of the host must be one the host
is seen on."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from clustergen.base import codes
from clustergen.commands.audit.compare import Report
from clustergen.commands.audit.expect import NodeExpectation, PlannedCable
from clustergen.commands.audit.facts import NodeFacts
from clustergen.commands.audit.ibnet import parse_ibnetdiscover


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
    by_host: dict[str, set[PlannedCable]] = {}  # hosts whose descriptions name no device
    for cable in parse_ibnetdiscover(section.text):
        landing = PlannedCable(cable.switch, cable.port)
        if cable.peer_device and not cable.peer_device.startswith("HCA-"):
            seen[(cable.peer, cable.peer_device)] = landing
        else:
            by_host.setdefault(cable.peer, set()).add(landing)
    if not seen and not by_host:
        report.unreadable("ibnetdiscover")
        return report
    for name, node in expected.items():
        for hca, planned in node.cables.items():
            found = seen.get((name, hca))
            if found == planned or (found is None and planned in by_host.get(name, ())):
                continue
            if found is not None:
                code = codes.AUDIT_CABLE_ELSEWHERE
                text = f"ibnetdiscover sees it on {found.switch} port {found.port}"
            elif name in by_host:
                code = codes.AUDIT_CABLE_ELSEWHERE
                where = ", ".join(
                    f"{c.switch} port {c.port}"
                    for c in sorted(by_host[name], key=lambda c: (c.switch, c.port))
                )
                text = f"ibnetdiscover sees {name}'s HCAs (not named by device) on {where}"
            else:
                code, text = codes.AUDIT_CABLE_NOT_SEEN, "ibnetdiscover does not see it"
            message = (
                f"{name} {hca}: cables.csv cables it to {planned.switch} port {planned.port}; "
                + text
            )
            report.add(code, "ibnetdiscover", message, node=name)
    return report
