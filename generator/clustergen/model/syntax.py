"""Constrained strings: one definition each, for the validator and the JSON Schema alike.

A `Syntax` is a pattern, the words error messages use for it, and optionally a
finer check with messages of its own. The validator accepts a string only if the
finer check passes and the pattern matches the whole string; the JSON Schema
carries the same pattern. So anything the schema rejects, `clustergen validate`
rejects too, and an editor flags a broken hostlist as you type it.

What a pattern cannot say (a hostlist that names a host twice, a CIDR with host
bits set) stays in the finer check; tests/test_schema_syntax.py keeps that list.

Patterns are written in the subset that Python's `re` and ECMA-262 (editors,
check-jsonschema) read alike: ASCII classes spelt out ([0-9], not \\d), no
lookbehind, anchored with ^ and $ and matched against the whole string.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Final

from pydantic import AfterValidator, GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

from clustergen.base import codes
from clustergen.base.codes import invalid


@dataclass(frozen=True)
class SchemaPattern:
    """Annotation that adds a pattern to a type's JSON Schema without checking it
    (the `Syntax` validator checks it, with better messages)."""

    pattern: str

    def __get_pydantic_json_schema__(
        self, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = handler(core_schema)
        schema["pattern"] = self.pattern
        return schema


@dataclass(frozen=True)
class Syntax:
    """Annotation for a constrained string: `Annotated[str, SLURM_NAME]`."""

    pattern: str
    meaning: str
    # Raises with words of its own for what is wrong. Called when the pattern fails,
    # and on every value when `beyond_pattern` says it enforces more than the pattern
    # can (a hostlist naming a host twice, a CIDR with host bits set).
    check: Callable[[str], object] | None = None
    beyond_pattern: bool = False
    regex: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "regex", re.compile(self.pattern))

    def matches(self, value: str) -> bool:
        return self.regex.fullmatch(value) is not None

    def validate(self, value: str) -> str:
        if self.matches(value):
            if self.beyond_pattern and self.check is not None:
                self.check(value)
            return value
        if self.check is not None:
            self.check(value)
        raise invalid(codes.SYNTAX_INVALID, f"'{value}' is not valid here; use {self.meaning}")

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        return core_schema.no_info_after_validator_function(self.validate, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        document = handler(schema)
        document["pattern"] = self.pattern
        return document


def any_case(word: str) -> str:
    """A pattern for `word` in any letter case ([Uu][Nn]...), as ECMA-262 has no inline flag."""
    return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else re.escape(c) for c in word)


LABEL: Final = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
# A host name as Slurm, Ansible and /etc/hosts take it, as real sites name their nodes:
# labels joined by dots (a fully qualified name, `login01.hpc.example.org`), each of
# letters, digits, inner '-' and inner '_' (AWS ParallelCluster's queue names, container
# names); at most 253 characters in all (RFC 1035's limit of a name). An underscore is no
# DNS name (RFC 1123): validate warns (nodes.hostname-not-dns).
HOST_LABEL: Final = r"[A-Za-z0-9](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?"
HOST_NAME: Final = rf"(?:{HOST_LABEL}\.)*{HOST_LABEL}"
_RANGES = r"\[[0-9]+(?:-[0-9]+)?(?:,[0-9]+(?:-[0-9]+)?)*\]"
# A hostlist part is a plain host name, or a name whose bracketed ranges end it
# (Slurm reads "gpu[1-2]-ib" differently from what its writer meant).
_HOSTLIST_PART = (
    rf"(?:(?:(?:{HOST_LABEL}\.)*[A-Za-z0-9][A-Za-z0-9_-]*)?{_RANGES}"
    rf"(?:[A-Za-z0-9_-]*{_RANGES})*|{HOST_NAME})"
)
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4 = rf"{_OCTET}(?:\.{_OCTET}){{3}}"
_CLOCK = r"[0-5]?[0-9]"
_NONSPACE = r"[^\x00-\x20\x7f]"
# What a path may hold: nothing a shell, a config file or a systemd unit reads as syntax
# (no space, quote, '$', '`', ';', '#', '%', '*', '&' or backslash).
_PATH_CHAR = r"[A-Za-z0-9_.+@,:=~/-]"

HOSTNAME_PATTERN: Final = rf"^(?=.{{1,253}}$){HOST_NAME}$"
HOSTLIST_PATTERN: Final = rf"^{_HOSTLIST_PART}(?:,{_HOSTLIST_PART})*$"
IPV4_PATTERN: Final = rf"^{_IPV4}$"
CIDR_PATTERN: Final = rf"^{_IPV4}/(?:30|[12]?[0-9])$"
VERSION_PATTERN: Final = r"^[0-9]+(?:\.[0-9]+)+$"
IDENTIFIER_PATTERN: Final = r"^[a-z][a-z0-9_-]{0,63}$"
SIZE_PATTERN: Final = r"^([0-9]+) ?(KiB|MiB|GiB|TiB|K|M|G|T)$"
SLURM_TIME_PATTERN: Final = (
    rf"^(?:{any_case('UNLIMITED')}|{any_case('INFINITE')}"
    rf"|[0-9]+(?::{_CLOCK}){{0,2}}"  # min, min:sec, h:m:s
    rf"|[0-9]+-(?:[01]?[0-9]|2[0-3])(?::{_CLOCK}){{0,2}})$"  # d-h, d-h:m, d-h:m:s
)
CONF_VALUE_PATTERN: Final = r'^[^#"\\\x00-\x20\x7f]*$'
# The slurm.conf keys whose value is words (slurm.conf(5)): InteractiveStepOptions, srun's
# options for salloc's interactive step; RebootProgram, a command line slurmd runs
# through a shell. Every other key takes one word, or a comma-separated list.
WORDS_KEYS: Final = ("InteractiveStepOptions", "RebootProgram")
WORDS_KEYS_PATTERN: Final = "^(?:" + "|".join(any_case(key) for key in WORDS_KEYS) + ")$"
# A slurm.conf value of words with single spaces between them, which the rendered file
# quotes (`InteractiveStepOptions="--interactive --preserve-env --pty $SHELL"`).
SLURM_CONF_VALUE_PATTERN: Final = r'^(?:[^#"\\\x00-\x20\x7f]+(?: [^#"\\\x00-\x20\x7f]+)*)?$'

# The constrained strings without a finer check.
# At most 64 characters: a name becomes part of file names (255 bytes at most).
SLURM_NAME = Syntax(
    r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$",
    "up to 64 letters, digits, '.', '_' and '-', starting with a letter or digit",
)
# A node feature as Slurm takes it (slurm.conf(5) Features): sites write `CPU_GEN:ICX`
# and `GPU_SKU:A100`; no character of a --constraint expression (&|,*[]()!) or space.
NODE_FEATURE = Syntax(
    r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$",
    "up to 64 letters, digits, '.', '_', ':' and '-', starting with a letter or digit",
)
CLUSTER_NAME = Syntax(
    r"^[a-z][a-z0-9_-]{0,39}$",
    "up to 40 lowercase letters, digits, '-' and '_', starting with a letter",
)
DNS_DOMAIN = Syntax(rf"^(?:{LABEL}\.)*{LABEL}$", "a DNS domain such as hpc.example.org")
TIME_SERVER = Syntax(
    rf"^(?:{LABEL}\.)*{LABEL}$",
    "an NTP server: a host name such as ntp1.example.org, or an IPv4 address",
)
DATABASE_WORD = Syntax(r"^[A-Za-z0-9_]+$", "letters, digits and '_'")
# Nothing else: quotes, '$', ';', '#' and braces reach apt lines and Ansible, which
# templates '{{ }}' in every variable it reads (a lookup there runs on the controller).
URL = Syntax(
    r"^(?:https?|file)://[A-Za-z0-9._~:/?@&+,=%\[\]-]+$",
    "an http://, https:// or file:// URL of letters, digits and ._~:/?@&+,=%[]- "
    "(percent-encode anything else)",
)
_FINGERPRINT_DIGITS = 40


def _key_fingerprint(value: str) -> None:
    digits = value.replace(" ", "")
    if digits[:2] in ("0x", "0X"):
        raise invalid(
            codes.SYNTAX_KEY_FINGERPRINT,
            f"'{value}' starts with '0x'; write the fingerprint's 40 hex digits alone",
        )
    if not re.fullmatch(r"[0-9A-Fa-f]*", digits):
        raise invalid(
            codes.SYNTAX_KEY_FINGERPRINT,
            f"'{value}' is not a key fingerprint: only hex digits 0-9 A-F and spaces",
        )
    if len(digits) in (8, 16):
        raise invalid(
            codes.SYNTAX_KEY_FINGERPRINT,
            f"'{value}' is a key id ({len(digits)} hex digits), which another key can share: "
            f"write the full fingerprint ({_FINGERPRINT_DIGITS} hex digits, gpg --show-keys "
            "prints it)",
        )
    if len(digits) != _FINGERPRINT_DIGITS:
        raise invalid(
            codes.SYNTAX_KEY_FINGERPRINT,
            f"'{value}' has {len(digits)} hex digits; an OpenPGP v4 fingerprint has "
            f"{_FINGERPRINT_DIGITS} (gpg --show-keys prints it)",
        )


# An OpenPGP v4 fingerprint (RFC 4880, 12.2: SHA-1, 160 bits), as gpg prints it or run
# together; KeyFingerprint normalises it to 40 uppercase digits.
KEY_FINGERPRINT = Syntax(
    r"^[0-9A-Fa-f](?: *[0-9A-Fa-f]){39}$",
    "a full OpenPGP v4 key fingerprint: 40 hex digits, spaces allowed",
    _key_fingerprint,
)
APT_SUITE = Syntax(
    r"^(?:[A-Za-z0-9][A-Za-z0-9._~+-]*|\.?/|[A-Za-z0-9][A-Za-z0-9._~+/-]*/)$",
    "an apt suite (bookworm, jammy-updates), or an exact path ending in '/' for a flat "
    "repository ('/', './', 'x86_64/')",
)
APT_COMPONENT = Syntax(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$", "an apt component, e.g. main")
DEVICE_MODEL = Syntax(
    r"^[A-Za-z0-9][A-Za-z0-9._/+-]{0,63}$",
    "a device model such as QM9700 or MQM8790-HS2F: letters, digits and ._/+- (no spaces), "
    "up to 64 characters",
)
PORT_GUID = Syntax(
    r"^0x[0-9a-fA-F]{16}$",
    "an InfiniBand port GUID as ibstat prints it: 0x and 16 hex digits",
)
# Slurm takes a GRES type's case as written (gres.conf(5) Type=): sites write `A100SXM4`.
GRES_TYPE = Syntax(r"^[A-Za-z0-9][A-Za-z0-9_]*$", "letters, digits and '_'")
INTERFACE = Syntax(
    r"^[A-Za-z0-9_.:-]{1,15}$", "a network interface name: 1-15 characters, no spaces or '/'"
)
# One path segment: not '.' or '..', which make a path lead elsewhere than it reads (root
# runs the layout script and the roles on these paths), and not empty ('//').
_PATH_SEGMENT = r"(?!\.\.?(?:/|$))[A-Za-z0-9_.+@,:=~-]+"
ABSOLUTE_PATH_PATTERN: Final = rf"^/(?:{_PATH_SEGMENT}(?:/|$))*$"


def _check_absolute_path(value: str, under: str = "") -> None:
    """A path (under `under`) of the allowed characters that has a '.', '..' or empty
    segment gets its own code and words; anything else falls through to the pattern's
    message."""
    if re.fullmatch(rf"{under}/{_PATH_CHAR}*", value):
        raise invalid(
            codes.SYNTAX_PATH_SEGMENT,
            f"'{value}' has a '.', '..' or empty segment; write the path as it is, without "
            "them (a path that climbs or repeats '/' leads elsewhere than it reads)",
        )


BLOCK_DEVICE = Syntax(
    rf"^/dev(?:/{_PATH_SEGMENT})+$|^[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+$",
    "a device path under /dev (best /dev/disk/by-id/...) of letters, digits and _.+@,:=~/- "
    "with no '.', '..' or empty segments, or a zfs pool/dataset",
    lambda value: _check_absolute_path(value, "/dev"),
)
ABSOLUTE_PATH = Syntax(
    ABSOLUTE_PATH_PATTERN,
    "an absolute path of letters, digits and _.+@,:=~/- with no '.', '..' or empty segments "
    "(no spaces, quotes, '$', ';', '#' or '%': the path is written into shell scripts, config "
    "files and systemd units)",
    _check_absolute_path,
)
LUSTRE_FSNAME = Syntax(r"^[A-Za-z0-9_-]{1,8}$", "1-8 letters, digits, '_' or '-'")
LNET_NETWORK = Syntax(r"^(?:o2ib|tcp)[0-9]*$", "an LNet network such as o2ib0 or tcp0")
# useradd's default NAME_REGEX (Debian adduser.conf, shadow-utils): what pam_access reads
# as one user or group name.
UNIX_NAME = Syntax(
    r"^[a-z_][a-z0-9_-]{0,31}$",
    "a user or group name: up to 32 lowercase letters, digits, '_' and '-', starting with a "
    "letter or '_'",
)
VARIABLE_NAME = Syntax(r"^[A-Za-z_][A-Za-z0-9_]*$", "an Ansible variable name")
# A key of a slurm.conf line (slurm.conf(5): letters and digits, e.g. MaxCPUsPerNode).
SLURM_KEY = Syntax(r"^[A-Za-z][A-Za-z0-9]{0,63}$", "a slurm.conf key: letters and digits")
ENV_NAME = Syntax(
    r"^[A-Za-z_][A-Za-z0-9_]*$",
    "an environment variable name: letters, digits and '_', not starting with a digit",
)
PACKAGE_VERSION = Syntax(
    r"^(?:[0-9]+:)?[0-9][A-Za-z0-9.+~_-]*$",
    "a package version as apt or dnf shows it, e.g. 2.21.5-1+cuda12.4",
)
KERNEL_RELEASE = Syntax(
    r"^[0-9]+\.[0-9]+\.[0-9]+[A-Za-z0-9.+_-]*$",
    "a kernel release as uname -r prints it, e.g. 5.15.0-106-generic",
)
# NVLSM's versions are its release dates [NVIDIA's CUDA repository: nvlsm_2025.01.5-1 beside
# driver 570.124.06, nvlsm_2025.06.10-1 in its ubuntu2404 folder (issue 39)], never the
# driver's: a pin shaped as the driver's names no package.
NVLSM_VERSION = Syntax(
    r"^20[2-9][0-9]\.(0[1-9]|1[0-2])\.[0-9]+$",
    "an NVLSM version, its release date YEAR.MONTH.N such as 2025.01.5 (NVLSM is not "
    "versioned as the driver it goes with)",
)
SHA256 = Syntax(
    r"^[0-9a-f]{64}$", "a sha256 digest: 64 lowercase hex digits, as sha256sum prints it"
)

SlurmName = Annotated[str, SLURM_NAME]
NodeFeature = Annotated[str, NODE_FEATURE]
SlurmConfKey = Annotated[str, SLURM_KEY]
ClusterName = Annotated[str, CLUSTER_NAME]
DnsDomain = Annotated[str, DNS_DOMAIN]
TimeServer = Annotated[str, TIME_SERVER]
DatabaseWord = Annotated[str, DATABASE_WORD]
Url = Annotated[str, URL]
KeyFingerprint = Annotated[
    str, KEY_FINGERPRINT, AfterValidator(lambda value: value.replace(" ", "").upper())
]
AptSuite = Annotated[str, APT_SUITE]
DeviceModel = Annotated[str, DEVICE_MODEL]
AptComponent = Annotated[str, APT_COMPONENT]
GresType = Annotated[str, GRES_TYPE]
InterfaceName = Annotated[str, INTERFACE]
PortGuid = Annotated[str, PORT_GUID]
BlockDevice = Annotated[str, BLOCK_DEVICE]
AbsolutePath = Annotated[str, ABSOLUTE_PATH]
LustreFsname = Annotated[str, LUSTRE_FSNAME]
LnetNetwork = Annotated[str, LNET_NETWORK]
VariableName = Annotated[str, VARIABLE_NAME]
UnixName = Annotated[str, UNIX_NAME]
EnvName = Annotated[str, ENV_NAME]
PackageVersion = Annotated[str, PACKAGE_VERSION]
Sha256 = Annotated[str, SHA256]
