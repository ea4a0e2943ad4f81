"""Configless Slurm (slurm.configless): slurmctld serves the configuration files and
slurmd on the compute nodes fetches them, instead of each node receiving its copy.

SchedMD's configless_slurm page (Slurm 20.02 on) and src/common/fetch_config.c
(slurmd_config_files) give what slurmctld serves to slurmd: of clustergen's files,
slurm.conf, cgroup.conf, gres.conf, job_container.conf, topology.conf and, from
25.05.2, topology.yaml. Prolog and Epilog scripts are served only when slurm.conf names
them without a path (from 23.11: fetch_config.c at slurm-23-11-0-1; never before);
clustergen names them by absolute path, so they stay installed on the compute nodes, as
do its other files there (slurmd's drop-ins, the record of its NodeName lines,
pam_slurm_adopt's lines).

slurmctld reads the files it serves when it starts and at `scontrol reconfigure`
(src/slurmctld/proc_req.c configless_setup_load, configless_update), and the
reconfigure sends them to every slurmd. A file slurmd reads only when it starts
(gres.conf, cgroup.conf, job_container.conf) needs slurmd restarted after slurmctld
has it: on the controllers such a change restarts slurmctld, and the compute nodes'
drop-in carries the file's sha256, so that it changes too and restarts slurmd after
slurmctld (the slurm role's handlers run in that order).
"""

from __future__ import annotations

import hashlib
import ipaddress

from clustergen.base.artifacts import Artifact, Install, NodeChange
from clustergen.catalog.groups import SLURM_CONF_GROUP
from clustergen.outputs.slurm.derive import SLURM_DEFAULTS
from clustergen.resolve import ResolvedCluster

# The files of the slurm family that slurmctld serves (src/common/fetch_config.c
# slurmd_config_files, slurm-22-05-7-1 to slurm-26-05-3-1).
SERVED = ("slurm.conf", "cgroup.conf", "gres.conf", "job_container.conf", "topology.conf")
# topology.yaml joined the list in 25.05.2 (validation refuses it before:
# slurm.configless-topology-yaml).
TOPOLOGY_YAML = "topology.yaml"
DROPIN = "/etc/systemd/system/slurmd.service.d/clustergen-configless.conf"
# The DNS SRV record slurmd looks up without --conf-server (configless_slurm page).
SRV_FILE = "slurm/configless-srv.txt"
SRV_NAME = "_slurmctld._tcp"
SRV_TTL_S = 3600
# slurmctld restarts: it reads the served files only when it starts or reconfigures, and
# a restart comes before the compute nodes' slurmd restart in the role's handlers.
RESTART_SLURMCTLD = NodeChange("restart", "slurmctld")
SERVED_NOTE = "slurmctld serves it to the compute nodes (slurm.configless), which install no copy"
DEFAULT_SLURMCTLD_PORT = dict(SLURM_DEFAULTS)["SlurmctldPort"]


def is_served(name: str) -> bool:
    """Whether slurmctld serves the slurm family's file `name` to configless slurmd."""
    return name in SERVED or name == TOPOLOGY_YAML


def served_install(dest: str, change: NodeChange) -> Install:
    """Where a served file goes: the nodes that keep the files. A change slurmd reads only
    when it starts restarts slurmctld here (the drop-in restarts slurmd after it)."""
    if change.action == "restart" and change.service == "slurmd":
        change = RESTART_SLURMCTLD
    return Install(dest, SLURM_CONF_GROUP, change, served=SERVED_NOTE)


def slurmctld_port(cluster: ResolvedCluster) -> str:
    """slurmctld's port: slurm.options' SlurmctldPort (any case; a range's first port,
    slurm.conf(5)) or clustergen's default."""
    for key, value in cluster.spec.slurm.options.items():
        if key.lower() == "slurmctldport":
            return str(value).split("-")[0]
    return DEFAULT_SLURMCTLD_PORT


def conf_servers(cluster: ResolvedCluster) -> str:
    """--conf-server's value: each controller, primary first, at slurmctld's port, by
    the address slurm.conf's SlurmctldHost gives it (its name for IPv6)."""
    first = slurmctld_port(cluster)
    servers = []
    for name in cluster.controllers:
        address = cluster.by_name[name].management_ip
        host = address if address and ipaddress.ip_address(address).version == 4 else name
        servers.append(f"{host}:{first}")
    return ",".join(servers)


def dropin(
    cluster: ResolvedCluster, restart_files: list[Artifact], replaced: tuple[str, ...]
) -> Artifact:
    """slurmd's drop-in on the compute nodes: the unit's condition on a local slurm.conf
    cleared, --conf-server in SLURMD_OPTIONS, and the sha256 of the served files slurmd
    reads only when it starts (a change to one restarts slurmd). A compute node that
    keeps no files must have no copy of the served ones (`replaced`): left from before,
    the Slurm commands there would read it instead of slurmd's cache."""
    name = cluster.spec.cluster.name
    servers = conf_servers(cluster)
    lines = [
        f"# slurmd's systemd drop-in for cluster {name}: configless Slurm (slurm.configless)",
        f"# Rendered by clustergen from the spec of cluster {name}. Do not edit this",
        "# file: change the spec and run `clustergen render` again; every render replaces it.",
        "# slurmd fetches slurm.conf and the files beside it from slurmctld and caches them",
        "# in SlurmdSpoolDir/conf-cache (linked from /run/slurm/conf). Debian 12's unit",
        "# (Slurm 22.05) starts slurmd only where /etc/slurm/slurm.conf exists: the empty",
        "# assignment clears that condition (systemd.unit(5)). The packages' units read",
        "# SLURMD_OPTIONS from /etc/default/slurmd or /etc/sysconfig/slurmd, which win over",
        "# Environment= here: leave SLURMD_OPTIONS unset there.",
        "[Unit]",
        "ConditionPathExists=",
        "",
        "[Service]",
        f'Environment="SLURMD_OPTIONS=--conf-server {servers}"',
    ]
    if restart_files:
        lines += [
            "",
            "# The served files slurmd reads only when it starts: a change to one changes",
            "# this file, which restarts slurmd once slurmctld has the new file.",
        ]
        lines += [
            f"# {artifact.path.rsplit('/', 1)[-1]} "
            f"sha256 {hashlib.sha256(artifact.text.encode('utf-8')).hexdigest()}"
            for artifact in restart_files
        ]
    install = Install(DROPIN, "compute", NodeChange("restart", "slurmd"), absent=replaced)
    return Artifact("slurm/slurmd-configless.conf", "\n".join(lines) + "\n", install=install)


def srv_records(cluster: ResolvedCluster) -> Artifact:
    """The DNS SRV records for the site's DNS, the alternative to --conf-server: the
    primary controller at the lowest priority value (configless_slurm page). Not
    installed: the rendered drop-in names the controllers already."""
    spec = cluster.spec
    first = slurmctld_port(cluster)
    domain = spec.cluster.domain
    lines = [
        f"; DNS SRV records of cluster {spec.cluster.name}'s slurmctld (slurm.configless), for",
        f"; the zone {domain}: slurmd and the Slurm commands on a node without slurm.conf and",
        "; without --conf-server find slurmctld by them (SchedMD's configless_slurm page).",
        "; Rendered by clustergen; not installed on any node.",
    ]
    # A controller the spec names by its fully qualified name (a dot in it) is that name.
    lines += [
        f"{SRV_NAME}.{domain}. {SRV_TTL_S} IN SRV {10 * index} 0 {first} "
        f"{name if '.' in name else f'{name}.{domain}'}."
        for index, name in enumerate(cluster.controllers)
    ]
    return Artifact(SRV_FILE, "\n".join(lines) + "\n", install=None)
