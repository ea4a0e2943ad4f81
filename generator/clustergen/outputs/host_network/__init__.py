"""Host network configuration: each node's interfaces the spec names, in its OS's own
format, and the RoCE QoS (DSCP trust, PFC, ECN) of the nodes with RoCE HCAs.

The format is the distribution's (catalog/distributions.py): systemd-networkd .network
files on Debian, one netplan file on Ubuntu, NetworkManager keyfiles on EL. Every node
also gets the list of what must come up (`expected`), which roles/host_network checks
after applying, rolling back to the previous files when it does not
(docs/networks.md#host-network-configuration).
"""

from __future__ import annotations

import jinja2

from clustergen.base.artifacts import Artifact, Install, NodeChange
from clustergen.catalog.distributions import DISTRIBUTIONS
from clustergen.catalog.groups import HOST_NETWORK_GROUP
from clustergen.outputs.host_network.derive import (
    HostLink,
    NodeNetwork,
    node_links,
    node_networks,
    roce_qos,
)
from clustergen.resolve import ResolvedCluster
from clustergen.templating import render_template

# Its role includes rendered_files for it and defines the handlers it notifies.
OWN_ROLE = True

RECONFIGURE = NodeChange("reconfigure", "host-network")
REAPPLY_QOS = NodeChange("reconfigure", "roce-qos")
EXPECTED = "/etc/clustergen/host-network.expected"
QOS_SCRIPT = "/usr/local/sbin/clustergen-roce-qos"
QOS_UNIT = "/etc/systemd/system/clustergen-roce-qos.service"
# Where each format's files go, and each file's name; 60-: after the distribution's own
# (systemd.network(5) and netplan read their directories in lexical order).
NETWORKD_DIR = "/etc/systemd/network"
NETPLAN_FILE = "/etc/netplan/60-clustergen.yaml"
NM_DIR = "/etc/NetworkManager/system-connections"


def host_format(cluster: ResolvedCluster) -> str:
    """networkd (Debian), netplan (Ubuntu) or networkmanager (EL)."""
    distribution = DISTRIBUTIONS[cluster.spec.software.os]
    if distribution.family == "dnf":
        return "networkmanager"
    return "netplan" if distribution.name.startswith("ubuntu") else "networkd"


def _networkd_prefix(link: HostLink) -> str:
    """systemd-networkd applies the first .network file (in lexical order) that matches a
    link and ignores the rest (systemd.network(5)): a NIC that carries the management
    network already has the installer's file (10-*, 50-cloud-init ...), which clustergen's
    must come before to apply at all; other NICs have none, and theirs come after the
    distribution's own (60)."""
    return "05" if link.carries_management else "60"


def _node_files(
    cluster: ResolvedCluster, env: jinja2.Environment, node: NodeNetwork, format_: str
) -> list[Artifact]:
    def install(dest: str, mode: int = 0o644) -> Install:
        return Install(dest, HOST_NETWORK_GROUP, RECONFIGURE, mode=mode, hosts=(node.node,))

    at = f"host_network/{node.node}"
    links = node_links(cluster, node)  # grouped once, for the templates and the files
    values = {"node": node.node, "interfaces": node.interfaces, "links": links}
    artifacts = []
    if format_ == "netplan":
        text = render_template(env, "host_network/netplan.yaml.j2", cluster, **values)
        # netplan warns of a file others can read ("Permissions ... are too open").
        artifacts.append(
            Artifact(f"{at}/60-clustergen.yaml", text, install=install(NETPLAN_FILE, 0o600))
        )
    # One file per netdev, with every address the spec gives it: a netdev matches one
    # file, so a NIC carrying two networks split over two files would lose one.
    for link in links if format_ != "netplan" else ():
        if format_ == "networkd":
            name, dest, mode = (
                f"{_networkd_prefix(link)}-clustergen-{link.netdev}.network",
                NETWORKD_DIR,
                0o644,
            )
            template = "host_network/networkd.network.j2"
        else:
            name, dest, mode = f"clustergen-{link.netdev}.nmconnection", NM_DIR, 0o600
            template = "host_network/keyfile.nmconnection.j2"
        text = render_template(env, template, cluster, node=node.node, link=link)
        artifacts.append(Artifact(f"{at}/{name}", text, install=install(f"{dest}/{name}", mode)))
    expected = render_template(env, "host_network/expected.j2", cluster, format=format_, **values)
    artifacts.append(Artifact(f"{at}/host-network.expected", expected, install=install(EXPECTED)))
    return artifacts


def render(cluster: ResolvedCluster, env: jinja2.Environment) -> list[Artifact]:
    format_ = host_format(cluster)
    artifacts = []
    for node in node_networks(cluster):
        artifacts += _node_files(cluster, env, node, format_)
    qos = roce_qos(cluster)
    for q in qos:
        artifacts.append(
            Artifact(
                f"host_network/roce-qos/{q.profile}.sh",
                render_template(env, "host_network/roce-qos.sh.j2", cluster, q=q),
                install=Install(
                    QOS_SCRIPT, HOST_NETWORK_GROUP, REAPPLY_QOS, mode=0o755, hosts=q.nodes
                ),
            )
        )
    if qos:
        nodes = tuple(n for q in qos for n in q.nodes)
        artifacts.append(
            Artifact(
                "host_network/clustergen-roce-qos.service",
                render_template(env, "host_network/clustergen-roce-qos.service.j2", cluster),
                install=Install(QOS_UNIT, HOST_NETWORK_GROUP, REAPPLY_QOS, hosts=nodes),
            )
        )
    return artifacts
