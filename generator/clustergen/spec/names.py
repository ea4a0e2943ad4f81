"""The names a spec gives its elements, for telling which words of a problem's message
are names (errors.collapse_alike): validation and the facility overview both collapse
alike problems with them.
"""

from __future__ import annotations

from typing import Any

from pydantic_core import PydanticCustomError

from clustergen.model.common import expand_hostlist


def element_names(*documents: Any) -> frozenset[str]:
    """Every name the spec gives an element: the values of `name`, `node` and the
    hostlists of `names` and `nodes` anywhere in it (nodes, racks, PDUs, rack devices,
    switches, partitions), and the hardware profiles; for telling which words of a
    problem's message are names (errors.collapse_alike)."""
    found: set[str] = set()
    stack = list(documents)
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack += item
        elif isinstance(item, dict):
            for key, value in item.items():
                if key in ("name", "node") and isinstance(value, str):
                    found.add(value)
                elif key in ("names", "nodes") and isinstance(value, str):
                    found.update(_hostlist_names(value))
                elif key == "hardware" and isinstance(value, dict):
                    found.update(name for name in value if isinstance(name, str))
                    stack.append(value)
                else:
                    stack.append(value)
    return frozenset(found)


def _hostlist_names(expression: str) -> tuple[str, ...]:
    try:
        return expand_hostlist(expression)
    except (PydanticCustomError, ValueError):  # reported by the shape checks
        return ()
