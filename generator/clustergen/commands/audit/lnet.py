"""`lnetctl net show` (Lustre, lnet/utils/lnetctl.c; Lustre Operations Manual, "Displaying
Network Information"): YAML,

    net:
        - net type: o2ib
          local NI(s):
            - nid: 10.10.1.11@o2ib
              status: up
              interfaces:
                  0: ib0
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

# libyaml's loader where PyYAML was built with it: a node's report, thousands of times.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class LocalNi:
    net: str
    interface: str
    status: str


def parse_lnet(text: str) -> list[LocalNi] | None:
    """Every local NI with its interfaces, or None when the text is not lnetctl's YAML."""
    try:
        data = yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("net"), list):
        return None
    found = []
    for net in data["net"]:
        if not isinstance(net, dict):
            continue
        for ni in net.get("local NI(s)") or []:
            if not isinstance(ni, dict):
                continue
            interfaces = ni.get("interfaces") or {}
            names = interfaces.values() if isinstance(interfaces, dict) else interfaces
            for interface in names:
                found.append(
                    LocalNi(str(net.get("net type", "")), str(interface), str(ni.get("status")))
                )
    return found
