"""`clustergen lock`: every package pin of a spec against its repositories' package indexes.

A pin clustergen derives carries a packaging revision (`-1`, `-0ubuntu1`, `.el9`) that
only the repository knows. This reads the indexes the site downloaded (apt's `Packages`,
dnf's `primary.xml`, plain or compressed with gzip, xz or bzip2; clustergen itself never
touches the network) and reports every pin that no index carries, with the versions of
that package the indexes do carry nearest to it. It changes no pin: the fix is the
spec's version, or an exact string in `software.packages`.

Formats: apt's Packages file is a series of deb822 stanzas with `Package:` and `Version:`
fields [Debian Policy 5.3, the `Packages` index]; dnf's primary.xml holds one `<package
type="rpm">` per build with `<name>` and `<version epoch= ver= rel=>` [createrepo_c, the
repodata primary format]. An RPM version string is `epoch:version-release`, written
without the epoch when it is 0.
"""

from __future__ import annotations

import bz2
import fnmatch
import gzip
import io
import lzma
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, cast

from clustergen.base.errors import UsageError
from clustergen.catalog.distributions import PackageFamily
from clustergen.catalog.pins import upstream_version

# How many of a package's versions a report names.
NEAREST = 3

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x1f\x8b", "gzip"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"BZh", "bzip2"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
)
_RPM_NAMESPACE = "{http://linux.duke.edu/metadata/common}"


@dataclass(frozen=True)
class PackageIndex:
    """One index file: the versions it carries of each package name."""

    path: str
    family: PackageFamily
    versions: Mapping[str, frozenset[str]]


@dataclass(frozen=True)
class MissingPin:
    """A pinned package version no index carries."""

    name: str
    version: str
    groups: tuple[str, ...]  # the inventory groups whose nodes install it
    nearest: tuple[str, ...]  # the versions the indexes carry, nearest first; none: no package

    def describe(self) -> str:
        what = f"{self.name} {self.version} (groups: {', '.join(self.groups)})"
        if not self.nearest:
            return f"{what}: no index carries a package of that name"
        return f"{what}: not in the indexes; nearest carried: {', '.join(self.nearest)}"


# An index is read and decompressed at most this large: Debian's largest (main, amd64) is
# under 100 MiB decompressed and EPEL's primary.xml about as large, while a small file
# that expands without end (a 1 MB gzip of a GiB of zeros) must stop at a clear refusal.
MAX_INDEX_BYTES = 256 * 1024 * 1024


def _decompressing(kind: str, raw: IO[bytes]) -> io.BufferedIOBase | None:
    if kind == "gzip":
        return gzip.GzipFile(fileobj=raw)
    if kind == "xz":
        return lzma.LZMAFile(raw)
    if kind == "bzip2":
        return bz2.BZ2File(raw)
    return None


def _bounded(path: Path, stream: IO[bytes] | io.BufferedIOBase, what: str) -> bytes:
    """At most MAX_INDEX_BYTES of a stream, read in pieces; UsageError past it."""
    pieces, size = [], 0
    while piece := stream.read(1024 * 1024):
        size += len(piece)
        if size > MAX_INDEX_BYTES:
            raise UsageError(
                f"{path}: {what} larger than {MAX_INDEX_BYTES // 2**20} MiB, more than any "
                "distribution's index: not read"
            )
        pieces.append(piece)
    return b"".join(pieces)


def _read_decompressed(path: Path) -> bytes:
    """The index's bytes, decompressed as its magic says, streamed and bounded."""
    with path.open("rb") as raw:
        head = raw.read(8)
        raw.seek(0)
        for magic, kind in _MAGIC:
            if not head.startswith(magic):
                continue
            stream = _decompressing(kind, raw)
            if stream is None:
                raise UsageError(f"{path}: {kind}-compressed; decompress it first (unzstd)")
            try:
                with stream:
                    return _bounded(path, stream, "decompressed, it is")
            except (OSError, EOFError, lzma.LZMAError, ValueError) as exc:
                raise UsageError(f"{path}: cannot decompress it ({kind}): {exc}") from None
        return _bounded(path, raw, "it is")


def read_index(path: Path) -> PackageIndex:
    """Read one index file; an unreadable or unrecognised file is a UsageError (exit 2)."""
    try:
        data = _read_decompressed(path)
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory, not a package index") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not a text file (an apt Packages or dnf primary.xml)") from None
    if text.lstrip().startswith("<"):
        return PackageIndex(str(path), "dnf", parse_primary_xml(text, str(path)))
    versions = parse_apt_packages(text, str(path))
    if not versions:
        raise UsageError(
            f"{path}: neither an apt Packages index (Package:/Version: stanzas) nor a dnf "
            "primary.xml"
        )
    return PackageIndex(str(path), "apt", versions)


# A distribution's index carries some 100,000 package versions (Debian's main, amd64); an
# index with more is refused before its table grows past memory.
MAX_INDEX_ENTRIES = 500_000


def _too_many(origin: str) -> UsageError:
    return UsageError(
        f"{origin}: more than {MAX_INDEX_ENTRIES} package versions, more than any "
        "distribution's index: not read"
    )


# The only fields of a stanza the lock reads, and what ends a stanza (an empty line, or
# one of blanks: apt takes both). Found in the text as it is, never split into a list of
# lines: an index of 256 MiB of empty lines made 268 million of them (2.6 GB).
_APT_FIELD = re.compile(r"^(Package|Version):[ \t]*(.*?)[ \t\r]*$", re.M)
_APT_STANZA_END = re.compile(r"\n[ \t\r]*\n")


def parse_apt_packages(text: str, origin: str = "Packages") -> dict[str, frozenset[str]]:
    """apt's Packages index: package name -> the versions its stanzas carry."""
    found: dict[str, set[str]] = {}
    name: str | None = None
    after = 0  # where the Package field of `name` ends
    entries = 0
    for fields, match in enumerate(_APT_FIELD.finditer(text), start=1):
        field, value = match[1], match[2]
        if fields > 4 * MAX_INDEX_ENTRIES:
            raise _too_many(origin)
        if field == "Package":
            name, after = value, match.end()
        elif name and not _APT_STANZA_END.search(text, after, match.start()):
            found.setdefault(name, set()).add(value)
            entries += 1
            if entries > MAX_INDEX_ENTRIES:
                raise _too_many(origin)
    return {name: frozenset(versions) for name, versions in found.items()}


def rpm_version(epoch: str | None, ver: str, rel: str | None) -> str:
    """`epoch:version-release`, without the epoch when it is 0 (as dnf and the lock write it)."""
    text = f"{ver}-{rel}" if rel else ver
    return f"{epoch}:{text}" if epoch and epoch != "0" else text


def parse_primary_xml(text: str, origin: str = "primary.xml") -> dict[str, frozenset[str]]:
    """dnf's primary.xml: package name -> its builds' `epoch:version-release`. Parsed
    as a stream, a piece at a time, each <package> dropped once read, so memory follows
    the table, not the file."""
    parser: ET.XMLPullParser[ET.Element] = ET.XMLPullParser(events=("start", "end"))
    found: dict[str, set[str]] = {}
    root: ET.Element | None = None
    depth = entries = 0
    piece = 1 << 20
    try:
        for start in range(0, max(len(text), 1), piece):
            parser.feed(text[start : start + piece])
            # Only start and end events are asked for: each is (event, its element).
            events = cast("Iterator[tuple[str, ET.Element]]", parser.read_events())
            for event, element in events:
                if event == "start":
                    depth += 1
                    if root is None:
                        root = element
                        if root.tag not in (f"{_RPM_NAMESPACE}metadata", "metadata"):
                            raise UsageError(
                                f"{origin}: an XML file, but not a dnf primary.xml (<metadata>)"
                            )
                    continue
                depth -= 1
                if depth != 1 or root is None:
                    continue
                entries += _package(element, found)
                root.remove(element)
                if entries > MAX_INDEX_ENTRIES:
                    raise _too_many(origin)
        parser.close()
    except ET.ParseError as exc:
        raise UsageError(f"{origin}: not a readable primary.xml ({exc})") from None
    return {name: frozenset(versions) for name, versions in found.items()}


def _package(package: ET.Element, found: dict[str, set[str]]) -> int:
    """Record one <package>'s name and version; how many it recorded (0 or 1)."""
    name = package.findtext(f"{_RPM_NAMESPACE}name") or package.findtext("name")
    version = package.find(f"{_RPM_NAMESPACE}version")
    if version is None:
        version = package.find("version")
    if not name or version is None or not version.get("ver"):
        return 0
    found.setdefault(name.strip(), set()).add(
        rpm_version(version.get("epoch"), version.get("ver", ""), version.get("rel"))
    )
    return 1


def _normal(version: str) -> str:
    return version[2:] if version.startswith("0:") else version


def carries(pin: str, versions: Iterable[str]) -> bool:
    """Whether an index version satisfies the pin: equal (an epoch 0 written or not), or
    matched by the pin's glob (a distribution's `22.05.8-*`)."""
    wanted = _normal(pin)
    glob = "*" in wanted
    return any(
        fnmatch.fnmatchcase(_normal(v), wanted) if glob else _normal(v) == wanted for v in versions
    )


def _shared_prefix(a: str, b: str) -> int:
    """How many leading characters two version strings share."""
    shared = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        shared += 1
    return shared


def nearest_versions(pin: str, versions: Iterable[str], count: int = NEAREST) -> tuple[str, ...]:
    """The carried versions nearest the pin: same upstream version first (a revision the
    catalog guessed wrong), then by the length of the prefix they share with it."""
    upstream = upstream_version(pin.replace("*", ""))

    def rank(version: str) -> tuple[int, int, str]:
        same = upstream_version(version) == upstream
        return (0 if same else 1, -_shared_prefix(_normal(version), _normal(pin)), version)

    return tuple(sorted(versions, key=rank)[:count])


def missing_pins(
    group_pins: Mapping[str, Mapping[str, str]], indexes: Iterable[PackageIndex]
) -> list[MissingPin]:
    """Every pinned package version the indexes do not carry, by package name; the pins
    are versions.lock's (inventory group -> package -> version)."""
    carried: dict[str, set[str]] = {}
    for index in indexes:
        for name, versions in index.versions.items():
            carried.setdefault(name, set()).update(versions)
    by_pin: dict[tuple[str, str], list[str]] = {}
    for group, packages in sorted(group_pins.items()):
        for name, version in packages.items():
            by_pin.setdefault((name, version), []).append(group)
    missing = []
    for (name, version), groups in sorted(by_pin.items()):
        offered = carried.get(name, set())
        if carries(version, offered):
            continue
        missing.append(MissingPin(name, version, tuple(groups), nearest_versions(version, offered)))
    return missing


def check_families(family: PackageFamily, os_name: str, indexes: Iterable[PackageIndex]) -> None:
    """An index of the other package manager is a wrong invocation, not a missing pin."""
    for index in indexes:
        if index.family != family:
            kind = "an apt Packages index" if index.family == "apt" else "a dnf primary.xml"
            raise UsageError(f"{index.path}: {kind}, but {os_name} installs with {family}")
