"""Read a spec file: YAML -> plain data plus a map from spec path to position.

Nothing here validates the spec; it only reads it. YAML syntax errors, duplicate
keys, tags and aliases that expand too far are spec problems (exit 1); a file
that cannot be read at all is a usage problem (exit 2).

libyaml (PyYAML's CParser) parses; a small composer here turns its events into
PyYAML's node graph, counting what aliases expand to as it goes; one walk over
the graph then builds the plain data, the positions and the floats as written.
The scalars read as YAML 1.2 reads them (spec/yaml_core.py) (`yes` and `on` are strings, `012` is
12), with no timestamps and no tags beyond the core ones. Without libyaml the
same composer runs on PyYAML's pure-Python parser: the same results, five times
slower, except that it refuses a tab between tokens where libyaml (and YAML 1.2)
take one.
"""

from __future__ import annotations

import gc
import math
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from yaml.composer import Composer, ComposerError
from yaml.error import Mark, MarkedYAMLError, YAMLError
from yaml.events import (
    AliasEvent,
    MappingEndEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.scanner import Scanner

from clustergen.base import codes
from clustergen.base.errors import LocatedProblem, Position, SpecInvalid, SpecPath, UsageError
from clustergen.spec.yaml_core import (
    TAG_BOOL,
    TAG_FLOAT,
    TAG_INT,
    TAG_MAP,
    TAG_MERGE,
    TAG_NULL,
    TAG_SEQ,
    TAG_STR,
    CoreResolver,
    float_value,
    int_value,
    tag_message,
)

# Specs are small; anything this large is not a spec and is refused before parsing.
MAX_SPEC_BYTES = 16 * 1024 * 1024
# A spec nests about eight levels deep; far deeper is not a spec (and would exhaust the stack).
MAX_NESTING_DEPTH = 100
# Aliases may repeat part of a spec, never multiply it (the "billion laughs"): the nodes
# they add may not pass 10 times the nodes written, with room for small specs and a ceiling
# far above the largest real spec (clustergen.dev.large_spec's 16,384 racked nodes write
# 216,000 nodes and add none).
ALIAS_GROWTH = 10
ALIAS_ALLOWANCE_MIN = 10_000
ALIAS_ALLOWANCE_MAX = 1_000_000
# Where libyaml refuses a spec, PyYAML's pure-Python parser reads it again for a better
# worded message (see _compose); that takes about 5 s per MiB, so only up to this size.
REWORD_MAX_CHARS = 512 * 1024

# Characters YAML does not allow in a stream (YAML 1.2 section 5.1, as PyYAML checks it).
_NOT_PRINTABLE = re.compile(
    "[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)


class Located(NamedTuple):
    key: Position  # where the mapping key (or sequence item) starts
    value: Position  # where its value starts


@dataclass
class LoadedSpec:
    """A spec as read: its data, where each part of it stands, and what it was called."""

    file: str  # the path as the user gave it, used in messages
    name: str  # the file's base name, used in rendered headers (stable across machines)
    data: Any
    positions: dict[SpecPath, Located] = field(default_factory=dict)
    # Floats as written (23.10), where the number read (23.1) loses what the user typed.
    float_texts: dict[SpecPath, str] = field(default_factory=dict)
    # After patterns are expanded (clustergen.spec.long_form): where an expanded element, or a
    # part of it, stands in the file, and the element's name.
    aliases: dict[SpecPath, SpecPath] = field(default_factory=dict)
    labels: dict[SpecPath, str] = field(default_factory=dict)

    def source(self, path: SpecPath) -> tuple[SpecPath, str | None]:
        """Where `path` of the expanded spec is written, and the name of the pattern
        element it lies in (None outside patterns)."""
        label = next(
            (self.labels[path[:n]] for n in range(len(path), 0, -1) if path[:n] in self.labels),
            None,
        )
        for length in range(len(path), 0, -1):
            alias = self.aliases.get(path[:length])
            if alias is not None:
                return (*alias, *path[length:]), label
        return path, label

    def locate(self, path: SpecPath, at: str = "value", *, expanded: bool = True) -> Position:
        """The position of `path` (of the expanded spec, or as written), or of its nearest
        ancestor that has one."""
        probe = self.source(path)[0] if expanded else path
        while True:
            located = self.positions.get(probe)
            if located is not None:
                return located.key if at == "key" else located.value
            if not probe:
                return Position(1, 1)
            probe = probe[:-1]


def load_spec(path: str) -> LoadedSpec:
    file = Path(path)
    try:
        size = file.stat().st_size
        if file.is_dir():
            raise UsageError(f"{path}: is a directory, not a spec file")
        if size > MAX_SPEC_BYTES:
            raise UsageError(f"{path}: {size} bytes is too large for a spec file")
        text = file.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except PermissionError:
        raise UsageError(f"{path}: permission denied") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror}") from None
    return parse_spec(text, file=path, name=file.name)


def parse_spec(text: str, file: str, name: str) -> LoadedSpec:
    with _collector_paused():
        return _parse(text, file, name)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector, paused while a spec is read.

    Reading allocates an object or more per node, and every so many allocations the
    collector walks everything alive, the whole node graph read so far included: for
    a large spec that is more than half the time. Nothing read holds a cycle, so
    nothing is left for it to find.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _parse(text: str, file: str, name: str) -> LoadedSpec:
    loaded = LoadedSpec(file=file, name=name, data=None)
    try:
        _refuse_unprintable(text)
        root = _compose(text)
        if root is None:
            return loaded
        if isinstance(root, MappingNode | SequenceNode):
            # The top level itself, for problems with the whole document (after any comments).
            start = _position(root.start_mark)
            loaded.positions[()] = Located(start, start)
        loaded.data = _Walk(loaded.positions, loaded.float_texts).value(root, (), 0)
    except _Refused as exc:
        raise SpecInvalid([LocatedProblem(file, exc.position, (), exc.message, exc.code)]) from None
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        position = _position(mark) if mark else Position(1, 1)
        message = _yaml_message(exc)
        raise SpecInvalid(
            [LocatedProblem(file, position, (), message, codes.YAML_SYNTAX)]
        ) from None
    except (YAMLError, RecursionError) as exc:
        message = "YAML nesting is too deep" if isinstance(exc, RecursionError) else str(exc)
        code = codes.YAML_TOO_DEEP if isinstance(exc, RecursionError) else codes.YAML_SYNTAX
        raise SpecInvalid([LocatedProblem(file, Position(1, 1), (), message, code)]) from None
    return loaded


def _compose(text: str) -> Node | None:
    """The document's node graph: libyaml parses, or PyYAML's pure-Python parser without it.

    libyaml's verdict stands, but where it refuses the text, the pure-Python parser is
    asked too: when it stops at the same place, its message is the one shown, as it
    names what it found there ("found character '\\t' that cannot start any token")
    where libyaml's does not, and so the message is the same with or without libyaml.
    Past REWORD_MAX_CHARS that second parse would take seconds and is not made.
    """
    if _LibyamlLoader is None:
        return _PurePythonLoader(text).get_single_node()
    try:
        return _LibyamlLoader(text).get_single_node()
    except MarkedYAMLError as found:
        if "maximum nesting depth" in (found.problem or ""):
            raise _nesting_refused(text, found) from None
        if len(text) <= REWORD_MAX_CHARS:
            try:
                _PurePythonLoader(text).get_single_node()
            except MarkedYAMLError as worded:
                if _error_mark(worded) == _error_mark(found):
                    raise worded from None
            except _Refused:
                pass
        raise


def _nesting_refused(text: str, found: MarkedYAMLError) -> _Refused:
    """The refusal of a document that nests past libyaml's own limit, as clustergen words it.

    libyaml 0.2.6 (bundled with PyYAML from 6.0.4) refuses nesting past 1,000 levels by
    itself, and meets that limit while it scans ahead of the composer (a '[' may start
    a key, so it reads on up to 1,024 characters), before the composer has counted
    MAX_NESTING_DEPTH levels. Those 1,000 levels hold the deepest level clustergen
    allows, opened earlier in the text: the pure-Python parser, which scans ahead
    without a limit of its own, reads the text up to libyaml's stop and is refused
    there, so the code, message and position are those of a PyYAML without the limit.
    Past REWORD_MAX_CHARS that parse would take seconds; the refusal then stands at
    libyaml's stop, with the same code and message.
    """
    mark = found.problem_mark or found.context_mark
    assert mark is not None  # libyaml marks every error it raises
    if mark.index <= REWORD_MAX_CHARS:
        try:
            _PurePythonLoader(text[: mark.index + 1]).get_single_node()
        except _Refused as refused:
            if refused.code is codes.YAML_TOO_DEEP:
                return refused
        except MarkedYAMLError:
            pass
    return _too_deep(mark)


def _error_mark(exc: MarkedYAMLError) -> tuple[int, int] | None:
    mark = exc.problem_mark or exc.context_mark
    return (mark.line, mark.column) if mark else None


class _Refused(Exception):
    """Something the reader will not read, at a place in the text."""

    def __init__(self, message: str, mark: _Mark, code: codes.Code = codes.YAML_SYNTAX) -> None:
        super().__init__(message)
        self.message = message
        self.position = _position(mark)
        self.code = code


def _too_deep(mark: _Mark) -> _Refused:
    return _Refused(
        f"YAML nesting is too deep (more than {MAX_NESTING_DEPTH} levels)",
        mark,
        codes.YAML_TOO_DEEP,
    )


class _Mark(Protocol):  # libyaml's marks and PyYAML's
    line: int
    column: int


def _position(mark: _Mark) -> Position:
    return Position(mark.line + 1, mark.column + 1)


def _refuse_unprintable(text: str) -> None:
    found = _NOT_PRINTABLE.search(text)
    if found is None:
        return
    line = text.count("\n", 0, found.start())
    column = found.start() - (text.rfind("\n", 0, found.start()) + 1)
    raise _Refused(
        f"YAML: character #x{ord(found.group()):04X} is not allowed in a YAML file "
        "(is this a binary file?)",
        Mark("", found.start(), line, column, "", 0),
    )


def _yaml_message(exc: MarkedYAMLError) -> str:
    problem = (exc.problem or "").strip()
    context = (exc.context or "").strip()
    opened = exc.context_mark
    if (
        context
        and opened is not None
        and exc.problem_mark is not None
        and ((opened.line, opened.column) != (exc.problem_mark.line, exc.problem_mark.column))
    ):
        # The problem is found where parsing failed; say where the unfinished part began.
        context += f" (started at line {opened.line + 1}, column {opened.column + 1})"
    parts = [p for p in (context, problem) if p]
    return "YAML syntax error: " + ", ".join(parts) if parts else "YAML syntax error"


# --- Composing: events -> nodes, with aliases counted -------------------------------


class _SpecComposer(Composer, CoreResolver):
    """PyYAML's composer with three guards.

    An anchor may be defined again (YAML 1.2: an alias names the latest); an alias may
    not point into the node that holds it (a structure that contains itself); and
    aliases may not expand the document past the allowance above. Nesting is bounded
    so that a deep document is refused at its place, not by Python's stack.
    """

    if TYPE_CHECKING:  # the parser's half of the loader, libyaml's or PyYAML's

        def check_event(self, *choices: Any) -> bool: ...
        def peek_event(self) -> Any: ...
        def get_event(self) -> Any: ...

    def __init__(self) -> None:
        Composer.__init__(self)
        self.written = 0  # nodes in the text
        self.expanded = 0  # nodes once every alias is replaced by what it names
        self.sizes: dict[str, int] = {}  # anchor -> its expanded size, once complete
        self.depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        event = self.get_event()
        kind = type(event)
        if kind is AliasEvent:
            return self._alias(event)
        self.depth += 1
        if self.depth > MAX_NESTING_DEPTH:
            raise _too_deep(event.start_mark)
        anchor = event.anchor
        if anchor is not None:
            self.sizes.pop(anchor, None)  # a new node under an old name: not complete yet
        before = self.expanded
        self.written += 1
        self.expanded += 1
        tag = event.tag
        node: Node
        if kind is ScalarEvent:
            if tag is None or tag == "!":
                tag = self.resolve(ScalarNode, event.value, event.implicit)
            node = ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
            if anchor is not None:
                self.anchors[anchor] = node
        elif kind is SequenceStartEvent:
            node = SequenceNode(TAG_SEQ if tag is None or tag == "!" else tag, [], event.start_mark)
            if anchor is not None:
                self.anchors[anchor] = node
            items = node.value
            while not self.check_event(SequenceEndEvent):
                items.append(self.compose_node(node, None))
            node.end_mark = self.get_event().end_mark
        else:  # MappingStartEvent: the parser emits nothing else here
            node = MappingNode(TAG_MAP if tag is None or tag == "!" else tag, [], event.start_mark)
            if anchor is not None:
                self.anchors[anchor] = node
            pairs = node.value
            while not self.check_event(MappingEndEvent):
                key = self.compose_node(node, None)
                pairs.append((key, self.compose_node(node, key)))
            node.end_mark = self.get_event().end_mark
        if anchor is not None:
            self.sizes[anchor] = self.expanded - before
        self.depth -= 1
        return node

    def _alias(self, event: Any) -> Node:
        anchor = event.anchor
        node: Node | None = self.anchors.get(anchor)
        if node is None:
            raise ComposerError(None, None, f"found undefined alias '{anchor}'", event.start_mark)
        size = self.sizes.get(anchor)
        if size is None:
            raise _Refused(
                f"YAML: alias '*{anchor}' points into the node it is part of; "
                "a spec cannot contain itself",
                event.start_mark,
                codes.YAML_ALIAS,
            )
        self.expanded += size
        allowance = min(ALIAS_ALLOWANCE_MAX, max(ALIAS_ALLOWANCE_MIN, ALIAS_GROWTH * self.written))
        if self.expanded - self.written > allowance:
            raise _Refused(
                f"YAML: alias '*{anchor}' expands the document past "
                f"{self.written + allowance:,} nodes ({self.written:,} written before it); "
                "aliases may repeat part of a spec, not multiply it",
                event.start_mark,
                codes.YAML_ALIAS,
            )
        return node


class _PurePythonLoader(_SpecComposer, Parser, Scanner, Reader):
    def __init__(self, text: str) -> None:
        Reader.__init__(self, text)
        Scanner.__init__(self)
        Parser.__init__(self)
        _SpecComposer.__init__(self)


def _libyaml_loader() -> Callable[[str], _SpecComposer] | None:
    try:
        from yaml._yaml import CParser
    except ImportError:  # PyYAML built without libyaml
        return None

    class LibyamlLoader(_SpecComposer, CParser):
        def __init__(self, text: str) -> None:
            CParser.__init__(self, text)
            _SpecComposer.__init__(self)

    return LibyamlLoader


_LibyamlLoader = _libyaml_loader()


# --- Walking: nodes -> plain data, positions and floats as written ------------------


class _Walk:
    def __init__(
        self, positions: dict[SpecPath, Located], float_texts: dict[SpecPath, str]
    ) -> None:
        self.positions = positions
        self.float_texts = float_texts

    def value(self, node: Node, path: SpecPath, depth: int) -> Any:
        if depth > MAX_NESTING_DEPTH:  # aliases can nest what the text does not
            raise _too_deep(node.start_mark)
        if isinstance(node, ScalarNode):
            scalar = _scalar(node)
            if type(scalar) is float and math.isfinite(scalar):
                self.float_texts[path] = node.value
            return scalar
        if isinstance(node, SequenceNode):
            _check_tag(node, TAG_SEQ)
            items = []
            for index, item in enumerate(node.value):
                child = (*path, index)
                at = _position(item.start_mark)
                self.positions[child] = Located(at, at)
                items.append(self.value(item, child, depth + 1))
            return items
        assert isinstance(node, MappingNode)
        _check_tag(node, TAG_MAP)
        out: dict[Any, Any] = {}
        for key, key_node, value_node, own in _pairs(node, depth):
            child = (*path, key)
            value = self.value(value_node, child, depth + 1)
            if own:  # merged (<<) keys have no position of their own
                key_at = _position(key_node.start_mark)
                # An empty value has no position of its own; the key is where it is missing.
                value_at = key_at if value is None else _position(value_node.start_mark)
                self.positions[child] = Located(key_at, value_at)
            out[key] = value
        return out


def _pairs(node: MappingNode, depth: int) -> list[tuple[Any, Node, Node, bool]]:
    """(key, key node, value node, written here) in order: the mapping's own keys, then
    those merged in with `<<` that it does not set itself, the first merged winning."""
    if depth > MAX_NESTING_DEPTH:  # merges of merges of merges...
        raise _too_deep(node.start_mark)
    pairs: list[tuple[Any, Node, Node, bool]] = []
    first_at: dict[Any, _Mark] = {}
    merges: list[tuple[Node, Node]] = []
    for key_node, value_node in node.value:
        if key_node.tag == TAG_MERGE and isinstance(key_node, ScalarNode):
            if merges:
                raise _duplicate(key_node, merges[0][0].start_mark)
            merges.append((key_node, value_node))
            continue
        if not isinstance(key_node, ScalarNode):
            kind = "list" if isinstance(key_node, SequenceNode) else "mapping"
            raise _Refused(
                f"YAML: a mapping key must be a single value, not a {kind}", key_node.start_mark
            )
        key = _scalar(key_node)
        if key in first_at:
            raise _duplicate(key_node, first_at[key])
        first_at[key] = key_node.start_mark
        pairs.append((key, key_node, value_node, True))
    for _merge_key, sources in merges:
        for source in _merge_sources(sources):
            for key, key_node, value_node, _own in _pairs(source, depth + 1):
                if key not in first_at:
                    first_at[key] = key_node.start_mark
                    pairs.append((key, key_node, value_node, False))
    return pairs


def _merge_sources(node: Node) -> list[MappingNode]:
    sources: list[MappingNode] = []
    for source in node.value if isinstance(node, SequenceNode) else [node]:
        if not isinstance(source, MappingNode):
            raise _Refused(
                "YAML: a merge key '<<' takes a mapping, or a list of mappings, to merge",
                source.start_mark,
            )
        _check_tag(source, TAG_MAP)
        sources.append(source)
    return sources


def _duplicate(key_node: Node, first: _Mark) -> _Refused:
    return _Refused(
        f"YAML: duplicate key '{key_node.value}' "
        f"(first at line {first.line + 1}, column {first.column + 1})",
        key_node.start_mark,
        codes.YAML_DUPLICATE_KEY,
    )


def _scalar(node: ScalarNode) -> Any:
    """A scalar node's value: str, int, float, bool or None."""
    tag, text = node.tag, node.value
    if tag in (TAG_STR, TAG_MERGE):  # `<<` anywhere but as a key is a string
        return text
    if tag == TAG_INT:
        number = int_value(text)
        if number is None:
            raise _Refused(f"YAML: '{text}' is not a whole number (tag '!!int')", node.start_mark)
        return number
    if tag == TAG_FLOAT:
        real = float_value(text)
        if real is None:
            raise _Refused(f"YAML: '{text}' is not a number (tag '!!float')", node.start_mark)
        return real
    if tag == TAG_BOOL:
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise _Refused(f"YAML: '{text}' is not true or false (tag '!!bool')", node.start_mark)
    if tag == TAG_NULL:
        return None
    raise _Refused(tag_message(tag, "a single value"), node.start_mark, codes.YAML_TAG)


def _check_tag(node: Node, expected: str) -> None:
    if node.tag != expected:
        kind = "list" if isinstance(node, SequenceNode) else "mapping"
        raise _Refused(tag_message(node.tag, f"a {kind}"), node.start_mark, codes.YAML_TAG)
