"""`lnetctl net show` (Lustre, lnet/utils/lnetctl.c; Lustre Operations Manual, "Displaying
Network Information"): YAML,

    net:
        - net type: o2ib
          local NI(s):
            - nid: 10.10.1.11@o2ib
              status: up
              interfaces:
                  0: ib0

An NI of a net configured without naming its interface (`lnetctl net add --net tcp`)
lists no `interfaces`. Where LNet is not running, lnetctl prints its error as YAML:

    show:
        - net:
              errno: -100
              descr: "cannot get networks: Network is down"
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from clustergen.base.yaml_loader import SAFE_LOADER


@dataclass(frozen=True)
class LocalNi:
    net: str
    interface: str  # "" where lnetctl names none
    status: str


@dataclass(frozen=True)
class LnetReport:
    nis: tuple[LocalNi, ...]
    error: str | None  # lnetctl's own error (LNet down), where it printed one


def parse_lnet(text: str) -> LnetReport | None:
    """Every local NI with its interfaces, or lnetctl's error; None when the text is not
    lnetctl's YAML."""
    try:
        data = yaml.load(text, Loader=SAFE_LOADER)
    except yaml.YAMLError:
        return None
    if not isinstance(data, dict):
        return None
    if isinstance(data.get("show"), list):
        errors = [
            entry["net"] for entry in data["show"] if isinstance(entry, dict) and entry.get("net")
        ]
        if errors and isinstance(errors[0], dict) and "errno" in errors[0]:
            error = errors[0]
            return LnetReport((), str(error.get("descr") or f"errno {error['errno']}"))
        return None
    if not isinstance(data.get("net"), list):
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
            for interface in list(names) or [""]:
                found.append(
                    LocalNi(str(net.get("net type", "")), str(interface), str(ni.get("status")))
                )
    return LnetReport(tuple(found), None)
