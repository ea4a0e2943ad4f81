"""Types shared by every spec section, each validated where it is parsed."""

from __future__ import annotations

import functools
import ipaddress
import re
from typing import Annotated, Any

import hostlist
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from clustergen.base import codes
from clustergen.base.codes import invalid
from clustergen.model.syntax import (
    CIDR_PATTERN,
    CONF_VALUE_PATTERN,
    HOSTLIST_PATTERN,
    HOSTNAME_PATTERN,
    IDENTIFIER_PATTERN,
    IPV4_PATTERN,
    SIZE_PATTERN,
    SLURM_CONF_VALUE_PATTERN,
    SLURM_TIME_PATTERN,
    VERSION_PATTERN,
    SchemaPattern,
    Syntax,
)

_SIZE_FACTORS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_HOST_NAME = re.compile(HOSTNAME_PATTERN)  # labels joined by dots, 253 characters at most
# What a host name may be, in check_hostname's errors and the schema's description.
HOST_NAME_RULE = (
    "letters, digits and inner '-' and '_', 1-63 characters a label, labels joined by dots, "
    "253 characters in all"
)


def keys_set(*keys: str, unset: tuple[str, ...] = ()) -> dict[str, Any]:
    """JSON Schema for "these keys have values; those are absent or null" (for the
    models whose validators want exactly one of several keys)."""
    properties: dict[str, Any] = {key: {"not": {"type": "null"}} for key in keys}
    properties.update({key: {"type": "null"} for key in unset})
    return {"required": list(keys), "properties": properties}


def when_equal(key: str, value: str, then: dict[str, Any]) -> dict[str, Any]:
    """JSON Schema for "if `key` is `value`, then `then`"."""
    return {"if": {"required": [key], "properties": {key: {"const": value}}}, "then": then}


class StrictModel(BaseModel):
    """Base of every spec model: unknown keys are errors, and YAML types are taken
    as written (the string "yes" is not a boolean, "300" is not a number)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)


def check_hostname(value: str) -> str:
    if not _HOST_NAME.fullmatch(value):
        raise invalid(
            codes.SYNTAX_HOSTNAME, f"'{_shown(value)}' is not a valid host name ({HOST_NAME_RULE})"
        )
    return value


# The most names one hostlist expression may give, and all expressions of one validation
# together (counted before any is expanded): four times the largest cluster clustergen is
# built for (65,536 nodes), as `import slurm` allows. A spec of 8 KB naming fifty ranges of
# 100,000 in one switch's `nodes` took 3 GB and 74 s before it (a fresh round of attacks).
MAX_HOSTLIST_NAMES = 262_144
MAX_SPEC_HOSTLIST_NAMES = 4 * MAX_HOSTLIST_NAMES
_BRACKETS = re.compile(r"\[([^\]]*)\]")
_RANGE = re.compile(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?")


def hostlist_size(expression: str) -> int:
    """How many names `expression` gives, counted from its ranges without expanding them
    (a range hostlist cannot read counts as one name: expansion then says why)."""
    if "[" not in expression and "]" not in expression:  # names only
        return expression.count(",") + 1
    total = 0
    for part in hostlist_parts(expression):
        size = 1
        for inside in _BRACKETS.findall(part):
            count = 0
            for item in inside.split(","):
                match = _RANGE.fullmatch(item)
                if match is None:
                    count += 1
                    continue
                low, high = int(match[1]), int(match[2] or match[1])
                count += max(high - low + 1, 1)
            size *= count
        total += size
    return total


class HostlistBudget:
    """The names one validation may expand in all (MAX_SPEC_HOSTLIST_NAMES), each new
    expression counted before it is expanded; `with HostlistBudget():` around the work."""

    _current: HostlistBudget | None = None

    def __init__(self) -> None:
        self.left = MAX_SPEC_HOSTLIST_NAMES
        self.seen: set[str] = set()  # each expression is spent once, however often asked
        self._outer: HostlistBudget | None = None

    def __enter__(self) -> HostlistBudget:
        self._outer, HostlistBudget._current = HostlistBudget._current, self
        return self

    def __exit__(self, *exc: object) -> None:
        HostlistBudget._current = self._outer

    @classmethod
    def spend(cls, expression: str, names: int) -> None:
        budget = cls._current
        if budget is None or expression in budget.seen:
            return
        budget.seen.add(expression)
        budget.left -= names
        if budget.left < 0:
            raise invalid(
                codes.SYNTAX_HOSTLIST,
                f"hostlist '{_shown(expression)}' is not read: the spec's hostlists give more "
                f"than the {MAX_SPEC_HOSTLIST_NAMES:,} host names one spec may give in all "
                "(four times 65,536 nodes, each named in a few places)",
            )


def _shown(expression: str) -> str:
    return expression if len(expression) <= 80 else expression[:77] + "..."


def expand_hostlist(expression: str) -> tuple[str, ...]:
    """Expand a Slurm hostlist expression, enforcing what Slurm itself enforces, within
    MAX_HOSTLIST_NAMES names, and within the running validation's HostlistBudget."""
    size = hostlist_size(expression)
    if size > MAX_HOSTLIST_NAMES:
        raise invalid(
            codes.SYNTAX_HOSTLIST,
            f"hostlist '{_shown(expression)}' gives {size:,} names, more than the "
            f"{MAX_HOSTLIST_NAMES:,} one expression may give",
        )
    HostlistBudget.spend(expression, size)
    return _expand_hostlist(expression)


@functools.lru_cache(maxsize=4096)
def _expand_hostlist(expression: str) -> tuple[str, ...]:
    """Expand a Slurm hostlist expression, enforcing what Slurm itself enforces.

    Kept per expression, so the shape check and the resolved cluster share one
    expansion (a failure is not kept: it raises again, with the same message).
    """
    if not expression or expression != expression.strip():
        raise invalid(codes.SYNTAX_HOSTLIST, f"'{expression}' is not a hostlist expression")
    opened = expression.count("[") - expression.count("]")
    if opened:
        missing = "a '[' is never closed" if opened > 0 else "a ']' has no matching '['"
        raise invalid(codes.SYNTAX_HOSTLIST, f"hostlist '{expression}': {missing}")
    for part in hostlist_parts(expression):
        if "[" in part and not part.endswith("]"):
            head, _, tail = part.partition("[")
            ranges, _, rest = tail.partition("]")
            example = (
                f"{head}{rest}[{ranges}]" if "[" not in rest and rest.strip() else "gpu-ib[01-04]"
            )
            raise invalid(
                codes.SYNTAX_HOSTLIST,
                f"hostlist '{part}': a bracketed range must end the name (Slurm reads "
                f"'{part}' differently); put the varying part last, e.g. '{example}'",
            )
    try:
        names: list[str] = hostlist.expand_hostlist(expression)
    except hostlist.BadHostlist as exc:
        raise invalid(
            codes.SYNTAX_HOSTLIST, f"'{expression}' is not a valid hostlist expression: {exc}"
        ) from None
    for name in names:
        if name != expression and not _HOST_NAME.fullmatch(name):
            raise invalid(
                codes.SYNTAX_HOSTLIST,
                f"hostlist '{_shown(expression)}' gives '{_shown(name)}', which is not a valid "
                f"host name ({HOST_NAME_RULE})",
            )
        check_hostname(name)
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise invalid(codes.SYNTAX_HOSTLIST, f"hostlist '{expression}' names '{name}' twice")
        seen.add(name)
    return tuple(names)


def hostlist_parts(expression: str) -> list[str]:
    """A hostlist expression split at its top-level commas (not those inside brackets)."""
    if "[" not in expression and "]" not in expression:
        return expression.split(",")
    parts, depth, start = [], 0, 0
    for index, char in enumerate(expression):
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(expression[start:index])
            start = index + 1
    parts.append(expression[start:])
    return parts


def _check_ipv4(value: str) -> str:
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        raise invalid(codes.SYNTAX_IP_ADDRESS, f"'{value}' is not an IP address") from None
    if address.version != 4:
        raise invalid(codes.SYNTAX_IP_ADDRESS, f"'{value}': only IPv4 addresses are supported")
    return value


def _check_cidr(value: str) -> str:
    try:
        network = ipaddress.ip_network(value, strict=True)
    except ValueError as exc:
        raise invalid(
            codes.SYNTAX_CIDR, f"'{value}' is not a network in CIDR notation: {exc}"
        ) from None
    if network.version != 4:
        raise invalid(codes.SYNTAX_CIDR, f"'{value}': only IPv4 networks are supported")
    if network.prefixlen > 30:
        raise invalid(
            codes.SYNTAX_CIDR, f"'{value}' leaves no room for hosts (use a /30 or larger network)"
        )
    return value


def _check_version(value: str) -> str:
    if not VERSION.matches(value):
        hint = ""
        if re.match(r"^\d+(?:\.\d+)+[-+~]", value):
            hint = "; an exact package version with a revision goes in software.packages"
        raise invalid(
            codes.SYNTAX_VERSION,
            f"'{value}' is not a version (dotted numbers such as 12.4.1){hint}",
        )
    return value


def _check_identifier(value: str) -> str:
    if not IDENTIFIER.matches(value):
        raise invalid(
            codes.SYNTAX_IDENTIFIER,
            f"'{value}' is not a valid name (up to 64 lowercase letters, digits, '-' and '_', "
            "starting with a letter)",
        )
    return value


def parse_slurm_time(value: str) -> int | None:
    """Minutes for a Slurm time string; None for UNLIMITED. Raises ValueError if malformed.

    Slurm accepts: min, min:sec, h:m:s, d-h, d-h:m, d-h:m:s, UNLIMITED/INFINITE.
    """
    if not SLURM_TIME.matches(value):
        raise invalid(
            codes.SYNTAX_SLURM_TIME,
            f"'{value}' is not a Slurm time (use minutes, 'h:m:s', 'd-h', 'd-h:m:s' or UNLIMITED)",
        )
    if value.upper() in ("UNLIMITED", "INFINITE"):
        return None
    days, _, clock = value.rpartition("-")
    numbers = [int(part) for part in clock.split(":")]
    if days:
        hours, minutes, seconds = [*numbers, 0, 0][:3]
    elif len(numbers) == 3:
        hours, minutes, seconds = numbers
    else:  # "min" or "min:sec"
        hours, (minutes, seconds) = 0, [*numbers, 0][:2]
    return int(days or 0) * 1440 + hours * 60 + minutes + (1 if seconds else 0)


def _check_slurm_time(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | str):
        shown = str(value).lower() if isinstance(value, bool) else repr(value)
        raise invalid(codes.SYNTAX_SLURM_TIME, f"{shown} is not a Slurm time")
    text = str(value)
    parse_slurm_time(text)
    return text


def parse_size(value: str) -> int:
    """'4MiB' -> bytes. Binary units only, as Lustre uses them."""
    match = SIZE.regex.fullmatch(value)
    if not match:
        raise invalid(
            codes.SYNTAX_SIZE,
            f"'{value}' is not a size (a whole number with KiB, MiB, GiB or TiB, e.g. 4MiB)",
        )
    return int(match.group(1)) * _SIZE_FACTORS[match.group(2)[0]]


def _check_conf_words(value: Any) -> Any:
    """A slurm.conf value of words with single spaces between them (rendered quoted)."""
    return _check_no_conf_breakers(value, spaces=True)


def _check_no_conf_breakers(value: Any, *, spaces: bool = False) -> Any:
    text = str(value)
    if "\n" in text or "\r" in text:
        raise invalid(codes.SYNTAX_CONF_VALUE, "a value may not contain a line break")
    if "#" in text:
        raise invalid(
            codes.SYNTAX_CONF_VALUE, f"'{text}': a value may not contain '#' (it starts a comment)"
        )
    if "\\" in text or '"' in text:
        # Slurm's parser (src/common/parse_config.c) drops every backslash and takes the
        # character after it as it is, and takes a value in double quotes without them:
        # `/\tmp/x` and `"/tmp/x"` are /tmp/x to the daemons, whatever a check of the text
        # saw. No value of a key the spec writes needs either.
        raise invalid(
            codes.SYNTAX_CONF_VALUE,
            f"'{text}': a value may not contain a backslash or a double quote (Slurm reads "
            "a backslash as an escape and drops double quotes, so the daemons would read "
            "another value than the one checked)",
        )
    if spaces:
        if any((c.isspace() and c != " ") or not c.isprintable() for c in text):
            raise invalid(
                codes.SYNTAX_CONF_VALUE,
                f"'{text}': a value may not contain tabs or control characters",
            )
        if text != text.strip(" ") or "  " in text:
            raise invalid(
                codes.SYNTAX_CONF_VALUE,
                f"'{text}': words with one space between them, none before or after (the "
                "daemons read a quoted value as written)",
            )
    elif any(c.isspace() or not c.isprintable() for c in text):
        raise invalid(
            codes.SYNTAX_CONF_VALUE,
            f"'{text}': a value may not contain spaces or control characters (a space ends "
            "the value on a key=value line)",
        )
    return value


def _reject_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise invalid(
            codes.SYNTAX_CONF_BOOLEAN,
            f"{str(value).lower()} is a YAML boolean here; write the value Slurm expects "
            "(e.g. YES/NO)",
        )
    return value


def whole_number(value: Any) -> Any:
    """2048.0 is the whole number 2048, as in JSON Schema, which cannot tell them apart."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


HOSTNAME = Syntax(
    HOSTNAME_PATTERN,
    f"a host name ({HOST_NAME_RULE})",
    check_hostname,
)
HOSTLIST = Syntax(
    HOSTLIST_PATTERN,
    "a Slurm hostlist such as gpu[01-08] or gpu[01-04],login1",
    expand_hostlist,
    beyond_pattern=True,
)
IPV4 = Syntax(IPV4_PATTERN, "an IPv4 address such as 10.0.1.11", _check_ipv4)
CIDR_NETWORK = Syntax(
    CIDR_PATTERN, "an IPv4 network such as 10.0.1.0/24", _check_cidr, beyond_pattern=True
)
VERSION = Syntax(VERSION_PATTERN, "a version: dotted numbers such as 12.4.1", _check_version)
IDENTIFIER = Syntax(
    IDENTIFIER_PATTERN,
    "up to 64 lowercase letters, digits, '-' and '_', starting with a letter",
    _check_identifier,
)
SIZE = Syntax(
    SIZE_PATTERN, "a size such as 4MiB (a whole number with KiB, MiB, GiB or TiB)", parse_size
)
SLURM_TIME = Syntax(
    SLURM_TIME_PATTERN, "a Slurm time: minutes, 'h:m:s', 'd-h', 'd-h:m:s' or UNLIMITED"
)

Int = Annotated[int, BeforeValidator(whole_number)]
Hostname = Annotated[str, HOSTNAME]
Hostlist = Annotated[
    str,
    HOSTLIST,
    Field(description="Slurm hostlist expression, e.g. gpu[01-08] or gpu[01-04],login1"),
]
IPv4 = Annotated[str, IPV4]
CIDR = Annotated[str, CIDR_NETWORK]
Version = Annotated[str, VERSION]
Identifier = Annotated[str, IDENTIFIER]
SlurmTime = Annotated[
    Annotated[str, SchemaPattern(SLURM_TIME_PATTERN)] | Annotated[int, Field(ge=0)],
    BeforeValidator(_check_slurm_time),
    Field(json_schema_extra={"examples": ["UNLIMITED", "01:00:00", "2-00:00:00", 60]}),
]
Size = Annotated[str, SIZE]
ConfValue = Annotated[
    Annotated[str, SchemaPattern(CONF_VALUE_PATTERN)] | int,
    BeforeValidator(_reject_bool),
    AfterValidator(_check_no_conf_breakers),
]
# A slurm.conf value: words with single spaces between them, quoted where rendered.
SlurmConfValue = Annotated[
    Annotated[str, SchemaPattern(SLURM_CONF_VALUE_PATTERN)] | int,
    BeforeValidator(_reject_bool),
    AfterValidator(_check_conf_words),
]
