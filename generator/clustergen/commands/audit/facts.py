"""A node's fact file, as collect.yml writes it: one file per node, each report in a
section that starts with a header line

    #### clustergen-section NAME rc=N      (the tool ran; N is its exit status)
    #### clustergen-section NAME absent    (the tool is not installed on the node)

and runs to the next header. The first line names the node:
`#### clustergen-facts 1 host=NAME`; without it the file's name (less `.txt`) does.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from clustergen.base.errors import UsageError

HEADER = "#### clustergen-facts"
SECTION = "#### clustergen-section"
FORMAT_VERSION = "1"
_SECTION_LINE = re.compile(r"#### clustergen-section (\S+) (absent|rc=(\d+))\s*$")
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


# What str.splitlines breaks lines at besides "\n".
_OTHER_BREAKS = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def parse_facts(text: str, path: str) -> NodeFacts:
    plain = _OTHER_BREAKS.search(text) is None
    if plain:
        end = text.find("\n")
        first = text if end < 0 else text[:end]
    else:
        first = next(iter(text.splitlines()), "")
    host = Path(path).name.removesuffix(".txt")
    if first.startswith(HEADER):
        match = _HOST.search(first)
        host = match[1] if match else host
    facts = NodeFacts(host, path)
    (_sections_of_text if plain else _sections_of_lines)(facts, text)
    return facts


def _sections_of_lines(facts: NodeFacts, text: str) -> None:
    """Each section, its header and its text, line by line (str.splitlines' lines)."""
    current: tuple[str, int, int | None] | None = None
    body: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        match = _SECTION_LINE.match(line) if line.startswith(SECTION) else None
        if match is None:
            if current is not None:
                body.append(line)
            continue
        _close(facts, current, body)
        rc = None if match[2] == "absent" else int(match[3])
        current, body = (match[1], number, rc), []
    _close(facts, current, body)


def _sections_of_text(facts: NodeFacts, text: str) -> None:
    """_sections_of_lines for a file broken into lines by "\n" alone: each section's text
    cut from the file at its headers, as the line-by-line reading joins its lines (a
    node's file is 8 kB of reports; 65,536 of them are half a gigabyte)."""
    headers: list[tuple[int, int, re.Match[str]]] = []  # (start, end, match) of each line
    at = text.find(SECTION)
    while at >= 0:
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        if at == 0 or text[at - 1] == "\n":
            match = _SECTION_LINE.match(text, at, end)  # (no `^`: it fails past pos 0)
            if match is not None:
                headers.append((at, end, match))
        at = text.find(SECTION, end)
    line, counted = 1, 0
    for k, (start, end, match) in enumerate(headers):
        line += text.count("\n", counted, start)
        counted = start
        stop = headers[k + 1][0] if k + 1 < len(headers) else len(text)
        body = text[end + 1 : stop] if end + 1 < stop else ""
        if body and not body.endswith("\n"):
            body += "\n"
        rc = None if match[2] == "absent" else int(match[3])
        facts.sections[match[1]] = Section(match[1], line, rc, body)


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
            # scandir's entries know their type without a stat each (65,536 files).
            with os.scandir(path) as entries:
                names = [e.name for e in entries if e.name.endswith(".txt") and e.is_file()]
            found += [path / name for name in sorted(names)]
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
