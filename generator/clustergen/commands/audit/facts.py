"""A node's fact file, as collect.yml writes it: one file per node, each report in a
section that starts with a header line

    #### clustergen-section NAME rc=N      (the tool ran; N is its exit status)
    #### clustergen-section NAME absent    (the tool is not installed on the node)

and runs to the next header. The first line names the node:
`#### clustergen-facts 1 host=NAME`; without it the file's name (less `.txt`) does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from clustergen.base.errors import UsageError

HEADER = "#### clustergen-facts"
SECTION = "#### clustergen-section"
FORMAT_VERSION = "1"
_SECTION_LINE = re.compile(r"^#### clustergen-section (\S+) (absent|rc=(\d+))\s*$")
_HOST = re.compile(r"host=(\S+)")

# The reports collect.yml gathers, by section name, with the command that makes each.
SECTIONS: dict[str, str] = {
    "slurmd-C": "slurmd -C",
    "nvidia-smi-q-x": "nvidia-smi -q -x",
    "nvidia-smi-topo-m": "nvidia-smi topo -m",
    "ibstat": "ibstat",
    "ibv_devinfo-v": "ibv_devinfo -v",
    "ibstatus": "ibstatus",
    "ibnetdiscover": "ibnetdiscover",
    "lnetctl-net-show": "lnetctl net show",
    "dpkg-query": "dpkg-query -W -f='${db:Status-Abbrev}\\t${Package}\\t${Version}\\n'",
    "rpm-qa": "rpm -qa --qf '%{NAME}\\t%|EPOCH?{%{EPOCH}:}:{}|%{VERSION}-%{RELEASE}\\n'",
    "ip-j-addr": "ip -j addr",
    # Pull mode's record of the node's last run (docs/ansible.md "Pull mode"), only where
    # there is one.
    "pull-record": "cat /var/lib/clustergen/pull.json",
}


@dataclass(frozen=True)
class Section:
    name: str
    line: int  # the header's line in the file, 1-based
    rc: int | None  # None: the tool is absent on the node
    text: str

    @property
    def absent(self) -> bool:
        return self.rc is None


@dataclass
class NodeFacts:
    node: str
    path: str
    sections: dict[str, Section] = field(default_factory=dict)

    def usable(self, name: str) -> Section | None:
        """The section if the tool ran and printed something; None if absent or empty."""
        section = self.sections.get(name)
        if section is None or section.absent or not section.text.strip():
            return None
        return section


def parse_facts(text: str, path: str) -> NodeFacts:
    lines = text.splitlines()
    host = Path(path).name.removesuffix(".txt")
    if lines and lines[0].startswith(HEADER):
        match = _HOST.search(lines[0])
        host = match[1] if match else host
    facts = NodeFacts(host, path)
    current: tuple[str, int, int | None] | None = None
    body: list[str] = []
    for number, line in enumerate(lines, 1):
        match = _SECTION_LINE.match(line) if line.startswith(SECTION) else None
        if match is None:
            if current is not None:
                body.append(line)
            continue
        _close(facts, current, body)
        rc = None if match[2] == "absent" else int(match[3])
        current, body = (match[1], number, rc), []
    _close(facts, current, body)
    return facts


def _close(facts: NodeFacts, current: tuple[str, int, int | None] | None, body: list[str]) -> None:
    if current is not None:
        name, line, rc = current
        facts.sections[name] = Section(name, line, rc, "\n".join(body) + "\n" if body else "")


def fact_files(arguments: Iterable[str]) -> list[Path]:
    """Every fact file the arguments name: a file, or each *.txt file of a directory."""
    found: list[Path] = []
    for argument in arguments:
        path = Path(argument)
        if path.is_dir():
            found += sorted(p for p in path.glob("*.txt") if p.is_file())
        elif path.is_file():
            found.append(path)
        else:
            raise UsageError(f"{path}: no such fact file or directory")
    if not found:
        raise UsageError("no fact files (*.txt) in " + ", ".join(arguments))
    return found


def read_facts(path: Path) -> NodeFacts:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UsageError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    facts = parse_facts(text, str(path))
    if not facts.sections:
        raise UsageError(f"{path}: not a fact file of collect.yml (no '{SECTION}' line)")
    return facts
