"""OpenSM: the InfiniBand subnet manager on the nodes network.fabric.subnet_manager names
(kind opensm). Nothing for kind ufm or switch, a RoCE fabric, or no fabric.
docs/subnet-manager.md.

[src: opensm(8) and opensm/osm_subnet.c of linux-rdma/opensm: the opensm.conf keys
sm_priority (0 lowest to 15 highest; the highest is master, the others standby and take
over), routing_engine (a comma list tried in order, min hop last unless no_fallback;
ftree detects the roots itself when no root_guid_file is given), root_guid_file,
partition_config_file; "PARTITION CONFIGURATION": without a rule for the default partition
the other ports are limited members, and `Default=0x7fff,ipoib:ALL=full;` is how OpenSM ran
before the partition manager.] The configuration directory is the packages' own:
/etc/opensm on Debian and Ubuntu (the opensm binary's compiled-in default, opensm
3.3.23-2+b1 of Debian 12), /etc/rdma on EL (Red Hat Enterprise Linux 7 Networking Guide,
"Configuring the Subnet Manager").
"""

from __future__ import annotations

import jinja2

from clustergen.base.artifacts import Artifact, Install, NodeChange
from clustergen.catalog.groups import OPENSM_GROUP
from clustergen.model.network import SM_PRIORITY_MAX, Fabric
from clustergen.resolve import ResolvedCluster, opensm_nodes
from clustergen.templating import render_template

# Its role includes rendered_files for it and defines the handlers it notifies.
OWN_ROLE = True

RESTART_OPENSM = NodeChange("restart", "opensm")
CONF_DIR = {"apt": "/etc/opensm", "dnf": "/etc/rdma"}
# Debian's and Ubuntu's opensm.service is a oneshot that starts opensm@<port GUID> on every
# port `ibstat -p` lists (PORTS=ALL in /etc/default/opensm; opensm 3.3.23-2+b1 of Debian
# 12, lib/systemd/system/opensm.service and opensm@.service): a drop-in replaces its start
# with clustergen's, which starts one on each of the fabric's ports only.
START_SCRIPT = "/usr/local/sbin/clustergen-opensm-start"
PORTS_DROPIN = "/etc/systemd/system/opensm.service.d/clustergen-ports.conf"


def routing_engine(fabric: Fabric) -> str:
    """The spec's engine, else fat-tree routing (falling back to up/down) where the fabric
    has spine switches, else up/down."""
    manager = fabric.subnet_manager
    if manager is not None and manager.routing_engine is not None:
        return manager.routing_engine
    return "ftree,updn" if any(s.switches for s in fabric.switches) else "updn"


def render(cluster: ResolvedCluster, env: jinja2.Environment) -> list[Artifact]:
    """One opensm.conf per OpenSM node (its priority is its own), the partitions and,
    when the spec gives them, the root GUIDs."""
    fabric = cluster.spec.network.fabric
    nodes = opensm_nodes(cluster.spec.network)
    if fabric is None or fabric.subnet_manager is None or not nodes:
        return []
    conf_dir = CONF_DIR[cluster.pins.family]
    root_guids = fabric.subnet_manager.root_guids
    root_file = f"{conf_dir}/clustergen-root-guids.conf" if root_guids else None
    artifacts = []
    for index, node in enumerate(nodes):
        text = render_template(
            env,
            "opensm/opensm.conf.j2",
            cluster,
            node=node,
            primary=nodes[0],
            priority=SM_PRIORITY_MAX - index,
            routing_engine=routing_engine(fabric),
            root_file=root_file,
            partitions=f"{conf_dir}/partitions.conf",
        )
        install = Install(f"{conf_dir}/opensm.conf", OPENSM_GROUP, RESTART_OPENSM, hosts=(node,))
        artifacts.append(Artifact(f"opensm/{node}/opensm.conf", text, install=install))
        if cluster.pins.family == "apt":
            artifacts.append(_ports_dropin(cluster, env, node))
    if cluster.pins.family == "apt":
        text = render_template(env, "opensm/opensm-start.sh.j2", cluster)
        install = Install(START_SCRIPT, OPENSM_GROUP, RESTART_OPENSM, mode=0o755)
        artifacts.append(
            Artifact("opensm/clustergen-opensm-start", text, mode=0o755, install=install)
        )
    text = render_template(env, "opensm/partitions.conf.j2", cluster)
    install = Install(f"{conf_dir}/partitions.conf", OPENSM_GROUP, RESTART_OPENSM)
    artifacts.append(Artifact("opensm/partitions.conf", text, install=install))
    if root_file is not None:
        # opensm(8): one GUID per line; the file carries nothing else.
        text = "".join(f"{guid.lower()}\n" for guid in root_guids)
        install = Install(root_file, OPENSM_GROUP, RESTART_OPENSM)
        artifacts.append(Artifact("opensm/root-guids.conf", text, install=install))
    return artifacts


def _ports_dropin(cluster: ResolvedCluster, env: jinja2.Environment, node: str) -> Artifact:
    """The node's opensm.service drop-in: the fabric's ports of its hardware profile (the
    node's compute HCAs: topology hcas of role compute, else fabric_hcas on port 1)."""
    host = next(h for h in cluster.hosts if h.name == node)
    ports = [f"{hca}:{port}" for hca, port in host.hardware.compute_hcas()]
    text = render_template(
        env, "opensm/opensm-ports.conf.j2", cluster, node=node, ports=ports, script=START_SCRIPT
    )
    install = Install(PORTS_DROPIN, OPENSM_GROUP, RESTART_OPENSM, hosts=(node,))
    return Artifact(f"opensm/{node}/clustergen-ports.conf", text, install=install)
