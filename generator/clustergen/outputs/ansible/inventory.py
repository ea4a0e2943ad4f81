"""The inventory's per-host data: host_vars with each node's addresses, the /etc/hosts
list, and host names folded into Ansible's ranges (gpu[01:08])."""

from __future__ import annotations

import re

from clustergen.base.artifacts import Artifact
from clustergen.catalog.architectures import (
    CPU_ARCHES,
    arch_group,
)
from clustergen.outputs.ansible.files import (
    json_quoted,
)
from clustergen.resolve import ResolvedCluster
from clustergen.spec.hosts import InterfaceAddress, compress


def host_vars(cluster: ResolvedCluster) -> list[Artifact]:
    """inventory/host_vars/<host>.yml for every host: its addresses (its rendered files
    are in files/hosts/). Ansible reads a host's file only when that host's variables are
    asked for, so listing the groups (--graph, --limit, a pull run on one node) never
    reads its peers' data. Written as text, not through the template: 16,384 files of a
    few lines each."""
    addresses = interface_addresses(cluster)
    name = cluster.spec.cluster.name
    artifacts = []
    for host in cluster.hosts:
        address = json_quoted(host.management_ip)
        lines = [
            f"# Ansible host_vars for {host.name}: its addresses",
            f"# Rendered by clustergen from the spec of cluster {name}. Do not edit this",
            "# file: change the spec and run `clustergen render` again; every render replaces it.",
            "---",
            f"ansible_host: {address}",
            f"clustergen_address: {address}",
        ]
        text = "\n".join(lines) + "\n" + addresses.get(host.name, "")
        artifacts.append(Artifact(f"inventory/host_vars/{host.name}.yml", text))
    return artifacts


# Every node's management address and name, one line each, for the cluster_base role's
# /etc/hosts block: read as one file, where a template over every host's hostvars would
# compute every node's variables on every node (16,384 x 16,384 at 16k nodes). In
# inventory/ as .txt, which Ansible does not parse as an inventory source
# (INVENTORY_IGNORE_EXTS).
HOSTS_LIST = "inventory/etc-hosts.txt"


def hosts_list(cluster: ResolvedCluster) -> str:
    """'address name' per node with a management address, in the order the role's
    template sorted the inventory's hosts before (Jinja's sort: case-insensitive)."""
    name = cluster.spec.cluster.name
    lines = [
        f"# The nodes of cluster {name} by management address: the cluster_base role's "
        "/etc/hosts block",
        f"# Rendered by clustergen from the spec of cluster {name}. Do not edit this",
        "# file: change the spec and run `clustergen render` again; every render replaces it.",
    ]
    hosts = sorted(cluster.hosts, key=lambda host: host.name.lower())
    lines += [f"{h.management_ip} {h.name}" for h in hosts if h.management_ip]
    return "\n".join(lines) + "\n"


def interface_addresses(cluster: ResolvedCluster) -> dict[str, str]:
    """Host name -> its host_vars lines of rail_ips, storage_ips and frontend_ip, for the
    hosts that have any (none without network.fabric.rail_prefix, network.storage and
    network.frontend). Written here, not by a template: a 16k-node cluster of 8 rails
    has 131,072 rail addresses (docs/networks.md shows the lines)."""
    network = cluster.spec.network
    fabric = network.fabric if network.fabric and network.fabric.rail_prefix else None
    storage, frontend = network.storage, network.frontend
    if fabric is None and storage is None and frontend is None:
        return {}
    found: dict[str, str] = {}
    for host in cluster.hosts:
        lines = _address_list("rail_ips", host.rail_addresses(fabric))
        lines += _address_list("storage_ips", host.storage_addresses(storage))
        front = host.frontend_address(frontend)
        if front is not None:
            lines += f"frontend_ip: {_flow(front)}\n"
        if lines:
            found.setdefault(host.name, lines)
    return found


def _address_list(key: str, addresses: tuple[InterfaceAddress, ...]) -> str:
    if not addresses:
        return ""
    return f"{key}:\n" + "".join(f"  - {_flow(a)}\n" for a in addresses)


def _flow(a: InterfaceAddress) -> str:
    """{netdev: "ib0", address: "10.10.1.11/19"}, as the tojson filter quotes them: a
    netdev is [A-Za-z0-9_.:-] (syntax.INTERFACE) and an address digits, dots and '/',
    which JSON writes as they are."""
    return f'{{netdev: "{a.netdev}", address: "{a.address}/{a.prefix}"}}'


_TRAILING_NUMBER = re.compile(r"^(?P<head>.*?)(?P<number>\d+)(?P<tail>\D*)$")


def host_patterns(names: list[str]) -> list[str]:
    """Names with runs of consecutive numbers folded into Ansible ranges (gpu[01:08]).

    A run is folded only when Ansible's own expansion of the range gives back exactly
    the run, so padding quirks (gpu9, gpu10 or gpu08, gpu100) never change a host.
    """
    patterns: list[str] = []
    run: list[tuple[str, re.Match[str] | None]] = []  # each name with its match, made once

    def flush() -> None:
        first, last = run[0][1], run[-1][1]
        if len(run) >= 2:
            assert first is not None and last is not None
            if _ansible_writes(first["number"], last["number"], [m for _, m in run]):
                patterns.append(
                    f"{first['head']}[{first['number']}:{last['number']}]{first['tail']}"
                )
                run.clear()
                return
        patterns.extend(name for name, _ in run)
        run.clear()

    for name in names:
        match = _TRAILING_NUMBER.match(name)
        if run and not _continues(run[-1][1], match):
            flush()
        run.append((name, match))
    if run:
        flush()
    return patterns


def _ansible_writes(begin: str, end: str, run: list[re.Match[str] | None]) -> bool:
    """Whether Ansible's range [begin:end] writes each number of the run as the run does
    (the run's names share head and tail and count up by one; _continues made sure).

    Ansible pads every number to the begin value's width when that value is zero-padded,
    and then needs begin and end of equal width; otherwise it writes numbers plainly.
    """
    if begin.startswith("0") and len(begin) > 1:
        return len(begin) == len(end)  # widths never shrink along a run, so all match
    return all(m is not None and (m["number"] == "0" or m["number"][0] != "0") for m in run)


def _continues(a: re.Match[str] | None, b: re.Match[str] | None) -> bool:
    """Whether the name matched as b follows the one matched as a in a range."""
    return (
        a is not None
        and b is not None
        and (a["head"], a["tail"]) == (b["head"], b["tail"])
        and int(b["number"]) == int(a["number"]) + 1
        and (len(a["number"]) == len(b["number"]) or not a["number"].startswith("0"))
    )


def arch_nodes(cluster: ResolvedCluster) -> dict[str, str]:
    """CPU architecture -> its nodes as a hostlist, where any node is aarch64; else empty
    (an all-x86_64 cluster's inventory and lock stay as they were)."""
    nodes: dict[str, str] = {}
    for arch in CPU_ARCHES:
        members = cluster.members.get(arch_group(arch), frozenset())
        if members:
            nodes[arch] = compress([host.name for host in cluster.hosts if host.name in members])
    return nodes
