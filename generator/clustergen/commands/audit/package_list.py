"""The node's installed packages: name -> version.

dpkg-query (dpkg-query(1), --showformat): collect.yml asks
`${db:Status-Abbrev}\t${Package}\t${Version}\n`. The abbreviation's three characters are
the wanted action, the status and the error flag: `ii ` is installed, `hi ` installed and
held (every package site.yml pins), `rc ` removed with its configuration files left, which
is not installed; only a status `i` counts. The two-column form
`${Package}\t${Version}` is read too. rpm (rpm(8) --queryformat): collect.yml asks
`%{NAME}\t%|EPOCH?{%{EPOCH}:}:{}|%{VERSION}-%{RELEASE}\n`, the epoch written only when
set, as versions.lock writes it."""

from __future__ import annotations


def parse_dpkg(text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in text.splitlines():
        cells = line.split("\t")
        if len(cells) == 3:
            status, name, version = cells
            if status[1:2] != "i":
                continue
        elif len(cells) == 2:
            name, version = cells
        else:
            continue
        if name and version:
            found[name.split(":")[0]] = version.strip()
    return found


def parse_rpm(text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in text.splitlines():
        name, _, version = line.partition("\t")
        if name and version:
            found[name] = version.strip().removeprefix("(none):")
    return found
