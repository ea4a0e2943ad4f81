"""IMEX: NVIDIA's Internode Memory Exchange service on the compute trays of NVLink domains
(network.nvlink_domains), how it starts (slurm.imex) and its channels. Nothing without
NVLink domains. docs/imex.md.

[doc: NVIDIA IMEX Service User Guide (docs.nvidia.com/multi-node-nvlink-systems/imex-guide):
"Deployment Models" (nodes_config.cfg, IMEX_NODE_CONFIG_FILE: the IP addresses of the nodes
of the IMEX domain, one per line; every instance must be given the same list), "IMEX
Channels" (/dev/nvidia-caps-imex-channels/channelN, made by the administrator with the major
number of nvidia-caps-imex-channels from /proc/devices, lost at reboot; NVreg_CreateImexChannel0
makes channel 0 when the module loads); NVIDIA Mission Control administration guide, "Slurm
and IMEX": per job from the Slurm prolog and epilog, so that one user's job cannot read the
memory of another's.]

How IMEX starts, per slurm.imex and the pinned Slurm:
- per_job, Slurm 24.05.2 on: SwitchType=switch/nvidia_imex gives each job its own channel
  (slurm.conf(5) of 24.11, SwitchType and SwitchParameters; the plugin is in
  src/plugins/switch/nvidia_imex from slurm-24-05-0-1, and 24.05.2 fixed its channel access,
  CVE-2024-42511, NEWS). IMEX runs on every tray of the domain from boot with the domain's
  nodes_config.cfg; the plugin makes the channel devices.
- per_job, older Slurm: the Prolog (templates/slurm/imex-prolog.sh.j2, the Slurm family's)
  writes nodes_config.cfg with the job's trays of this node's domain, makes channel 0 and
  starts nvidia-imex; the Epilog stops it and removes the channel (NVIDIA's "Per-Job Wide"
  deployment model).
- global: IMEX runs on every tray of the domain from boot with the domain's
  nodes_config.cfg and channel 0 is made when the driver loads (NVreg_CreateImexChannel0=1):
  every job on the domain shares it.
"""

from __future__ import annotations

import jinja2

from clustergen.base.artifacts import Artifact, Install, NodeChange
from clustergen.catalog.groups import NVLINK_GROUP
from clustergen.resolve import ResolvedCluster, ResolvedDomain
from clustergen.resolve.imex_mode import (
    CHANNEL_CONF,
    IMEX_ETC,
    NODES_CONFIG,
    RESTART_IMEX,
    imex_start,
)
from clustergen.templating import render_template

# Its role includes rendered_files for it and defines the handlers it notifies.
OWN_ROLE = True


def domain_addresses(cluster: ResolvedCluster, domain: ResolvedDomain) -> list[tuple[str, str]]:
    """(name, management address) of each tray of the domain, in the domain's order."""
    table = cluster.by_name
    return [(name, table[name].management_ip or "") for name in domain.nodes if name in table]


def render(cluster: ResolvedCluster, env: jinja2.Environment) -> list[Artifact]:
    """Each domain's nodes_config.cfg (installed on its trays where IMEX runs from boot;
    in prolog mode the Prolog writes the job's own list there, and the file is the
    domain's list for review) and, in global mode, the driver option for channel 0. The
    Prolog and Epilog are the Slurm family's."""
    start = imex_start(cluster)
    if start is None:
        return []
    artifacts: list[Artifact] = []
    for domain in cluster.nvlink_domains:
        addresses = domain_addresses(cluster, domain)
        hosts = tuple(name for name, _ in addresses)
        # NVIDIA's format: one address per line and nothing else, so no header comment.
        text = "".join(f"{address}\n" for _, address in addresses)
        install = (
            Install(f"{IMEX_ETC}/{NODES_CONFIG}", NVLINK_GROUP, RESTART_IMEX, hosts=hosts)
            if start.always_on and hosts
            else None
        )
        artifacts.append(Artifact(f"imex/{domain.name}/{NODES_CONFIG}", text, install=install))
    if start.mode == "global":
        text = render_template(env, "imex/imex-channel0.conf.j2", cluster)
        # The module option acts when the driver loads: at the next boot.
        install = Install(CHANNEL_CONF, NVLINK_GROUP, NodeChange("reboot"))
        artifacts.append(Artifact("imex/imex-channel0.conf", text, install=install))
    return artifacts
