"""`ip -j addr` (iproute2, ip-address(8) with -json): a JSON array of links, each with
`ifname` and `addr_info`, a list of `{"family": "inet", "local": "10.0.1.11",
"prefixlen": 24, ...}`."""

from __future__ import annotations

import json


def parse_ip_addr(text: str) -> dict[str, set[str]] | None:
    """Interface -> its addresses as `address/prefix`, or None when not ip's JSON."""
    try:
        links = json.loads(text)
    except ValueError:
        return None
    if not isinstance(links, list):
        return None
    found: dict[str, set[str]] = {}
    for link in links:
        if not isinstance(link, dict) or "ifname" not in link:
            continue
        addresses = found.setdefault(str(link["ifname"]), set())
        for info in link.get("addr_info") or []:
            if isinstance(info, dict) and "local" in info:
                addresses.add(f"{info['local']}/{info.get('prefixlen', '')}")
    return found
