"""Known NCCL environment variables and the syntax of their values.

Source: NCCL's "Environment Variables" page of the user guide
(docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html, read for the 2.21 and
2.26 releases the reference specs pin), plus NCCL_IBEXT_DISABLE, the SHARP plugin's own
(NVIDIA HPC-X "NCCL-RDMA-SHARP Plugins"). The table holds the system-configuration
variables an admin sets in /etc/nccl.conf; a name not listed here warns with the
nearest known one rather than failing, because NCCL adds variables between releases.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from clustergen.catalog.versions import VersionTuple, parse_version


@dataclass(frozen=True)
class IntRange:
    low: int
    high: int


@dataclass(frozen=True)
class Choice:
    words: tuple[str, ...]


@dataclass(frozen=True)
class InterfaceList:
    """`[^][=]name[:port],...`: the prefixes apply to the whole list; ports only for HCAs."""

    ports: bool


@dataclass(frozen=True)
class FreeText:
    """A path or free word NCCL does not constrain further."""


ValueSyntax = IntRange | Choice | InterfaceList | FreeText

_BOOL = IntRange(0, 1)
_GDR_LEVELS = Choice(("LOC", "PIX", "PXB", "PHB", "SYS", "0", "1", "2", "3", "4", "5"))

NCCL_VARIABLES: Mapping[str, ValueSyntax] = MappingProxyType(
    {
        "NCCL_ALGO": FreeText(),
        "NCCL_BUFFSIZE": IntRange(1, 2**31 - 1),
        "NCCL_COLLNET_ENABLE": _BOOL,
        "NCCL_COLLNET_NODE_THRESHOLD": IntRange(1, 2**31 - 1),
        "NCCL_CONF_FILE": FreeText(),
        "NCCL_CROSS_NIC": IntRange(0, 2),
        "NCCL_CUMEM_ENABLE": _BOOL,
        "NCCL_DEBUG": Choice(("VERSION", "WARN", "INFO", "ABORT", "TRACE")),
        "NCCL_DEBUG_FILE": FreeText(),
        "NCCL_DEBUG_SUBSYS": FreeText(),
        "NCCL_DMABUF_ENABLE": _BOOL,
        "NCCL_IB_ADAPTIVE_ROUTING": _BOOL,
        "NCCL_IB_ADDR_FAMILY": Choice(("AF_INET", "AF_INET6")),
        "NCCL_IB_ADDR_RANGE": FreeText(),
        "NCCL_IB_AR_THRESHOLD": IntRange(0, 2**31 - 1),
        "NCCL_IB_DISABLE": _BOOL,
        "NCCL_IB_GID_INDEX": IntRange(-1, 255),
        "NCCL_IB_HCA": InterfaceList(ports=True),
        # The NCCL-RDMA-SHARP plugin's switch (HPC-X 2.26 'NCCL-RDMA-SHARP Plugins':
        # NCCL_IBEXT_DISABLE=1 falls back to NCCL's internal transport).
        "NCCL_IBEXT_DISABLE": _BOOL,
        "NCCL_IB_PCI_RELAXED_ORDERING": IntRange(0, 2),
        "NCCL_IB_QPS_PER_CONNECTION": IntRange(1, 128),
        "NCCL_IB_RETRY_CNT": IntRange(0, 7),
        "NCCL_IB_ROCE_VERSION_NUM": IntRange(1, 2),
        "NCCL_IB_SL": IntRange(0, 15),
        "NCCL_IB_SPLIT_DATA_ON_QPS": _BOOL,
        "NCCL_IB_TC": IntRange(0, 255),
        "NCCL_IB_TIMEOUT": IntRange(1, 31),
        "NCCL_IGNORE_CPU_AFFINITY": _BOOL,
        "NCCL_MAX_NCHANNELS": IntRange(1, 64),
        "NCCL_MNNVL_ENABLE": IntRange(0, 2),
        "NCCL_MIN_NCHANNELS": IntRange(1, 64),
        "NCCL_NET": FreeText(),
        "NCCL_NET_GDR_LEVEL": _GDR_LEVELS,
        "NCCL_NET_GDR_READ": _BOOL,
        "NCCL_NET_PLUGIN": FreeText(),
        "NCCL_NSOCKS_PERTHREAD": IntRange(1, 64),
        "NCCL_NVLS_ENABLE": IntRange(0, 2),
        "NCCL_P2P_DISABLE": _BOOL,
        "NCCL_P2P_LEVEL": Choice(
            ("LOC", "NVL", "PIX", "PXB", "PHB", "SYS", "0", "1", "2", "3", "4", "5")
        ),
        "NCCL_PROTO": FreeText(),
        "NCCL_PXN_DISABLE": _BOOL,
        "NCCL_SHM_DISABLE": _BOOL,
        "NCCL_SOCKET_FAMILY": Choice(("AF_INET", "AF_INET6")),
        "NCCL_SOCKET_IFNAME": InterfaceList(ports=False),
        "NCCL_SOCKET_NTHREADS": IntRange(1, 16),
        "NCCL_TOPO_DUMP_FILE": FreeText(),
        "NCCL_TOPO_FILE": FreeText(),
    }
)

# The first NCCL release that reads each variable of the rail-optimised fabric, SHARP
# and NVLink settings (docs/nccl.md): the first release tag of github.com/NVIDIA/nccl
# whose src/ names it (NCCL_PARAM or ncclGetEnv), the tag before it not.
NCCL_VARIABLE_SINCE: Mapping[str, VersionTuple] = MappingProxyType(
    {
        "NCCL_CROSS_NIC": (2, 5, 6),
        "NCCL_COLLNET_ENABLE": (2, 6, 4),
        "NCCL_COLLNET_NODE_THRESHOLD": (2, 9, 9),
        "NCCL_IB_QPS_PER_CONNECTION": (2, 10, 3),
        "NCCL_NVLS_ENABLE": (2, 17, 1),
        "NCCL_IB_SPLIT_DATA_ON_QPS": (2, 18, 1),
        "NCCL_MNNVL_ENABLE": (2, 21, 5),
    }
)

# Settings that only mean something on RoCE: on InfiniBand they are ignored or harmful.
ROCE_ONLY: frozenset[str] = frozenset(
    {"NCCL_IB_GID_INDEX", "NCCL_IB_ROCE_VERSION_NUM", "NCCL_IB_ADDR_FAMILY", "NCCL_IB_ADDR_RANGE"}
)

_LIST_ITEM = re.compile(r"[A-Za-z0-9_.-]+(:[0-9]+)?")


def parse_interface_list(value: str) -> tuple[bool, bool, list[tuple[str, int | None]]] | str:
    """(exclude, exact, [(name, port)]) for `[^][=]a[:1],b`, or why the value is malformed."""
    rest = value
    exclude = rest.startswith("^")
    rest = rest.removeprefix("^")
    exact = rest.startswith("=")
    rest = rest.removeprefix("=")
    items = []
    for item in rest.split(","):
        if not _LIST_ITEM.fullmatch(item):
            return (
                f"'{item}' is not a name with an optional ':port' (the '^' and '=' prefixes "
                "go once, before the whole list)"
            )
        name, _, port = item.partition(":")
        items.append((name, int(port) if port else None))
    return exclude, exact, items


def value_problem(syntax: ValueSyntax, value: str | int) -> str | None:
    """Why `value` is not valid for a variable of this syntax, or None."""
    text = str(value)
    if isinstance(syntax, IntRange):
        if not re.fullmatch(r"-?[0-9]+", text):
            return f"'{text}' is not an integer"
        if not syntax.low <= int(text) <= syntax.high:
            return f"{text} is outside {syntax.low}-{syntax.high}"
        return None
    if isinstance(syntax, Choice):
        if text not in syntax.words:
            return f"'{text}' is not one of {', '.join(syntax.words)}"
        return None
    if isinstance(syntax, InterfaceList):
        parsed = parse_interface_list(text)
        if isinstance(parsed, str):
            return parsed
        if not syntax.ports and any(port is not None for _, port in parsed[2]):
            return "interface names take no ':port'"
        return None
    return None


# NCCL chooses a RoCE GID itself when NCCL_IB_GID_INDEX is unset from 2.21 (its
# net_ib.cc: the GID of the netdev's address, RoCE v2 first, NCCL_IB_ROCE_VERSION_NUM and
# NCCL_IB_ADDR_FAMILY narrowing the choice); a set value is used unchecked. Before 2.21
# it took GID index 0, RoCE v1 on most NICs, so a fixed index was needed.
NCCL_CHOOSES_GID_FROM: VersionTuple = (2, 21)
# The GID index clustergen wrote where NCCL did not choose: RoCE v2 over IPv4 on most NICs.
ROCE_V2_IPV4_GID_INDEX = 3


def roce_gid_index(given: int | None, nccl: str) -> int | None:
    """NCCL_IB_GID_INDEX for a RoCE fabric: the spec's, else none from NCCL 2.21 (NCCL
    chooses), else 3."""
    if given is not None:
        return given
    if parse_version(nccl)[:2] >= NCCL_CHOOSES_GID_FROM:
        return None
    return ROCE_V2_IPV4_GID_INDEX
