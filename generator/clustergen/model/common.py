"""Types shared by every spec section, each validated where it is parsed."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Any, Final

import hostlist
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

# RFC 1123 host name label: letters, digits and inner hyphens, 1-63 characters.
_LABEL = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")
_VERSION = re.compile(r"^\d+(?:\.\d+)+$")
_IDENTIFIER = re.compile(r"^[a-z][a-z0-9_-]*$")
_SIZE = re.compile(r"^(\d+)\s*(KiB|MiB|GiB|TiB|K|M|G|T)$")
_SIZE_FACTORS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


# Constrained strings: each regex (for the JSON Schema) with the words error
# messages use for it.
SLURM_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
CLUSTER_NAME = r"^[a-z][a-z0-9_-]{0,39}$"
DNS_DOMAIN = (
    r"^([A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*"
    r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$"
)
DATABASE_WORD = r"^[A-Za-z0-9_]+$"
URL = r"^(https?|file)://\S+$"
GRES_TYPE = r"^[a-z0-9][a-z0-9_]*$"
INTERFACE = r"^[A-Za-z0-9_.:-]{1,15}$"
BLOCK_DEVICE = r"^/dev/\S+$|^[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+$"
ABSOLUTE_PATH = r"^/\S*$"
LUSTRE_FSNAME = r"^[A-Za-z0-9_-]{1,8}$"
LNET_NETWORK = r"^(o2ib|tcp)\d*$"

PATTERN_MEANINGS: Final[Mapping[str, str]] = MappingProxyType(
    {
        SLURM_NAME: "letters, digits, '.', '_' and '-', starting with a letter or digit",
        CLUSTER_NAME: "up to 40 lowercase letters, digits, '-' and '_', starting with a letter",
        DNS_DOMAIN: "a DNS domain such as hpc.example.org",
        DATABASE_WORD: "letters, digits and '_'",
        URL: "an http://, https:// or file:// URL",
        GRES_TYPE: "lowercase letters, digits and '_'",
        INTERFACE: "a network interface name: 1-15 characters, no spaces or '/'",
        BLOCK_DEVICE: "a device path under /dev (best /dev/disk/by-id/...) or a zfs pool/dataset",
        ABSOLUTE_PATH: "an absolute path without spaces",
        LUSTRE_FSNAME: "1-8 letters, digits, '_' or '-'",
        LNET_NETWORK: "an LNet network such as o2ib0 or tcp0",
    }
)


class StrictModel(BaseModel):
    """Base of every spec model: unknown keys are errors, and YAML types are taken
    as written (the string "yes" is not a boolean, "300" is not a number)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def check_hostname(value: str) -> str:
    if not _LABEL.match(value):
        raise ValueError(
            f"'{value}' is not a valid host name (RFC 1123: letters, digits and inner "
            "hyphens, 1-63 characters)"
        )
    return value


def expand_hostlist(expression: str) -> list[str]:
    """Expand a Slurm hostlist expression, enforcing what Slurm itself enforces."""
    if not expression or expression != expression.strip():
        raise ValueError(f"'{expression}' is not a hostlist expression")
    opened = expression.count("[") - expression.count("]")
    if opened:
        missing = "a '[' is never closed" if opened > 0 else "a ']' has no matching '['"
        raise ValueError(f"hostlist '{expression}': {missing}")
    for part in _top_level_parts(expression):
        if "[" in part and not part.endswith("]"):
            head, _, tail = part.partition("[")
            ranges, _, rest = tail.partition("]")
            example = (
                f"{head}{rest}[{ranges}]" if "[" not in rest and rest.strip() else "gpu-ib[01-04]"
            )
            raise ValueError(
                f"hostlist '{part}': a bracketed range must end the name (Slurm reads "
                f"'{part}' differently); put the varying part last, e.g. '{example}'"
            )
    try:
        names: list[str] = hostlist.expand_hostlist(expression)
    except hostlist.BadHostlist as exc:
        raise ValueError(f"'{expression}' is not a valid hostlist expression: {exc}") from None
    for name in names:
        if name != expression and not _LABEL.match(name):
            raise ValueError(
                f"hostlist '{expression}' gives '{name}', which is not a valid host name "
                "(RFC 1123: letters, digits and inner hyphens, 1-63 characters)"
            )
        check_hostname(name)
    if len(set(names)) != len(names):
        duplicate = next(n for n in names if names.count(n) > 1)
        raise ValueError(f"hostlist '{expression}' names '{duplicate}' twice")
    return names


def _top_level_parts(expression: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in expression:
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return parts


def _check_hostlist(value: str) -> str:
    expand_hostlist(value)
    return value


def _check_ipv4(value: str) -> str:
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        raise ValueError(f"'{value}' is not an IP address") from None
    if address.version != 4:
        raise ValueError(f"'{value}': only IPv4 addresses are supported")
    return value


def _check_cidr(value: str) -> str:
    try:
        network = ipaddress.ip_network(value, strict=True)
    except ValueError as exc:
        raise ValueError(f"'{value}' is not a network in CIDR notation: {exc}") from None
    if network.version != 4:
        raise ValueError(f"'{value}': only IPv4 networks are supported")
    if network.prefixlen > 30:
        raise ValueError(f"'{value}' leaves no room for hosts (use a /30 or larger network)")
    return value


def _check_version(value: str) -> str:
    if not _VERSION.match(value):
        hint = ""
        if re.match(r"^\d+(?:\.\d+)+[-+~]", value):
            hint = "; an exact package version with a revision goes in software.packages"
        raise ValueError(f"'{value}' is not a version (dotted numbers such as 12.4.1){hint}")
    return value


def _check_identifier(value: str) -> str:
    if not _IDENTIFIER.match(value):
        raise ValueError(
            f"'{value}' is not a valid name (lowercase letters, digits, '-' and '_', "
            "starting with a letter)"
        )
    return value


def parse_slurm_time(value: str) -> int | None:
    """Minutes for a Slurm time string; None for UNLIMITED. Raises ValueError if malformed.

    Slurm accepts: min, min:sec, h:m:s, d-h, d-h:m, d-h:m:s, UNLIMITED/INFINITE.
    """
    text = value.strip()
    if text.upper() in ("UNLIMITED", "INFINITE"):
        return None
    days = 0
    minutes_bounded = True  # in "min" and "min:sec" the minutes may exceed 59
    if "-" in text:
        day_text, _, text = text.partition("-")
        if not day_text.isdigit():
            raise ValueError(value)
        days = int(day_text)
        fields = text.split(":")
        if not 1 <= len(fields) <= 3 or not all(f.isdigit() for f in fields):
            raise ValueError(value)
        hours, minutes, seconds = ([int(f) for f in fields] + [0, 0])[:3]
        if hours > 23:
            raise ValueError(value)
    else:
        fields = text.split(":")
        if not 1 <= len(fields) <= 3 or not all(f.isdigit() for f in fields):
            raise ValueError(value)
        numbers = [int(f) for f in fields]
        minutes_bounded = len(numbers) == 3
        if len(numbers) == 1:
            hours, minutes, seconds = 0, numbers[0], 0
        elif len(numbers) == 2:
            hours, (minutes, seconds) = 0, numbers
        else:
            hours, minutes, seconds = numbers
    if (minutes_bounded and minutes > 59) or seconds > 59:
        raise ValueError(value)
    return days * 1440 + hours * 60 + minutes + (1 if seconds else 0)


def _check_slurm_time(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | str):
        shown = str(value).lower() if isinstance(value, bool) else repr(value)
        raise ValueError(f"{shown} is not a Slurm time")
    text = str(value)
    try:
        parse_slurm_time(text)
    except ValueError:
        raise ValueError(
            f"'{text}' is not a Slurm time (use minutes, 'h:m:s', 'd-h', 'd-h:m:s' or UNLIMITED)"
        ) from None
    return text


def parse_size(value: str) -> int:
    """'4MiB' -> bytes. Binary units only, as Lustre uses them."""
    match = _SIZE.match(value.strip())
    if not match:
        raise ValueError(
            f"'{value}' is not a size (a whole number with KiB, MiB, GiB or TiB, e.g. 4MiB)"
        )
    return int(match.group(1)) * _SIZE_FACTORS[match.group(2)[0]]


def _check_size(value: str) -> str:
    parse_size(value)
    return value


def _check_no_conf_breakers(value: Any) -> Any:
    text = str(value)
    if "\n" in text or "\r" in text:
        raise ValueError("a value may not contain a line break")
    if "#" in text:
        raise ValueError(f"'{text}': a value may not contain '#' (it starts a comment)")
    return value


def _reject_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError(
            f"{str(value).lower()} is a YAML boolean here; write the value Slurm expects "
            "(e.g. YES/NO)"
        )
    return value


Hostname = Annotated[str, AfterValidator(check_hostname)]
Hostlist = Annotated[
    str,
    AfterValidator(_check_hostlist),
    Field(description="Slurm hostlist expression, e.g. gpu[01-08] or gpu[01-04],login1"),
]
IPv4 = Annotated[str, AfterValidator(_check_ipv4)]
CIDR = Annotated[str, AfterValidator(_check_cidr)]
Version = Annotated[str, AfterValidator(_check_version)]
Identifier = Annotated[str, AfterValidator(_check_identifier)]
SlurmTime = Annotated[
    str | int,
    BeforeValidator(_check_slurm_time),
    Field(json_schema_extra={"examples": ["UNLIMITED", "01:00:00", "2-00:00:00", 60]}),
]
Size = Annotated[str, AfterValidator(_check_size)]
ConfValue = Annotated[
    str | int,
    BeforeValidator(_reject_bool),
    AfterValidator(_check_no_conf_breakers),
]
