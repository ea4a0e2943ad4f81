"""Inventory group names: the groups clustergen derives from the hardware and the roles
(site.yml's plays target them; each family installs its files on one), what each is
for, and the group of a spec role or hardware profile. The package catalog pins
packages per group; a dozen modules name groups without any package."""

from __future__ import annotations

import re

# Inventory groups that carry the pins. Role groups are the spec's roles; these are
# derived from the hardware and the roles, and site.yml targets them.
GPU_GROUP = "nvidia_gpu"  # nodes whose hardware profile has GPUs
NVSWITCH_GROUP = "nvswitch"  # nodes whose GPUs sit on NVSwitch (fabric manager)
# Compute trays of multi-node NVLink domains (gpu.nvlink_domain): IMEX. The inventory has
# the group only when the spec has such trays.
NVLINK_GROUP = "nvlink_tray"
# Each multi-node NVLink domain's trays, a group per domain named after it: the driver
# roll-out (site.yml) takes a domain's trays in one batch. Only in a spec with domains.
NVLINK_DOMAIN_PREFIX = "nvlink_domain_"
SLURM_GROUP = "slurm"  # every node with a Slurm role
# With slurm.configless: the Slurm nodes that keep the configuration files slurmctld
# serves to the compute nodes (controllers, login nodes, the slurmdbd host); the
# inventory has the group only then.
SLURM_CONF_GROUP = "slurm_conf"
SLURM_CONF_ROLES: tuple[str, ...] = ("login", "slurm_controller", "slurm_dbd")
LUSTRE_CLIENT_GROUP = "lustre_client"  # nodes of the roles that mount Lustre
LUSTRE_SERVER_GROUP = "lustre_server"  # nodes with lustre_mgs, lustre_mds or lustre_oss
LUSTRE_SERVER_ROLES: tuple[str, ...] = ("lustre_mgs", "lustre_mds", "lustre_oss")
# The service nodes (primary and failover) of the targets of each backend.
LUSTRE_LDISKFS_GROUP = "lustre_ldiskfs"
LUSTRE_ZFS_GROUP = "lustre_zfs"
# Nodes whose hardware profile has fabric HCAs, in a spec with network.fabric or
# network.storage: the RDMA stack (roles/rdma). The inventory has it only then.
RDMA_GROUP = "rdma"
# The nodes network.fabric.subnet_manager names with kind opensm (roles/opensm); the
# inventory has the group only then.
OPENSM_GROUP = "opensm"
# Nodes that mount NFS (storage.nfs), and the nodes of the spec that export it. The
# inventory has them only when the spec has NFS mounts.
NFS_CLIENT_GROUP = "nfs_client"
NFS_SERVER_GROUP = "nfs_server"
# Nodes whose interfaces clustergen configures (network.hosts), or whose RoCE HCAs get
# the RoCE QoS (roles/host_network); the inventory has the group only when one does.
HOST_NETWORK_GROUP = "host_network"
# The exporters of monitoring: (roles/monitoring); the inventory has each group only where
# the spec asks for its exporter: node_exporter every node, dcgm_exporter the GPU nodes,
# slurm_exporter the controllers (monitoring.slurm kind exporter).
NODE_EXPORTER_GROUP = "node_exporter"
DCGM_EXPORTER_GROUP = "dcgm_exporter"
SLURM_EXPORTER_GROUP = "slurm_exporter"
# Their parent, which site.yml's monitoring play targets (one play for all three).
EXPORTERS_GROUP = "prometheus_exporters"
# Every node, in a spec with ansible.pull: ansible and git, the pull script and timer
# (roles/ansible_pull); the inventory has the group only then.
ANSIBLE_PULL_GROUP = "ansible_pull"
DERIVED_GROUPS: tuple[str, ...] = (
    GPU_GROUP,
    NVSWITCH_GROUP,
    NVLINK_GROUP,
    SLURM_GROUP,
    SLURM_CONF_GROUP,
    LUSTRE_CLIENT_GROUP,
    LUSTRE_SERVER_GROUP,
    LUSTRE_LDISKFS_GROUP,
    LUSTRE_ZFS_GROUP,
    RDMA_GROUP,
    OPENSM_GROUP,
    NFS_CLIENT_GROUP,
    NFS_SERVER_GROUP,
    HOST_NETWORK_GROUP,
    NODE_EXPORTER_GROUP,
    DCGM_EXPORTER_GROUP,
    SLURM_EXPORTER_GROUP,
    EXPORTERS_GROUP,
    ANSIBLE_PULL_GROUP,
)
# What each group is, for the comments of its group_vars file.
GROUP_TITLES: dict[str, str] = {
    GPU_GROUP: "The pinned NVIDIA stack on every GPU node",
    NVSWITCH_GROUP: "NVIDIA fabric manager on NVSwitch nodes (equal to the driver)",
    NVLINK_GROUP: "NVIDIA IMEX on the compute trays of NVLink domains (equal to the driver)",
    SLURM_GROUP: "Every Slurm node",
    SLURM_CONF_GROUP: "Slurm nodes that keep the files slurmctld serves (slurm.configless)",
    LUSTRE_CLIENT_GROUP: "Lustre clients",
    LUSTRE_SERVER_GROUP: "Lustre servers (MGS, MDS, OSS)",
    LUSTRE_LDISKFS_GROUP: "Lustre servers of ldiskfs targets (the ldiskfs OSD)",
    LUSTRE_ZFS_GROUP: "Lustre servers of zfs targets (the zfs OSD and OpenZFS)",
    RDMA_GROUP: "Nodes with fabric HCAs: the RDMA stack, nvidia-peermem, locked memory",
    OPENSM_GROUP: "OpenSM, the InfiniBand subnet manager (network.fabric.subnet_manager)",
    NFS_CLIENT_GROUP: "NFS clients (storage.nfs)",
    NFS_SERVER_GROUP: "NFS servers: nodes of the spec that export storage.nfs paths",
    HOST_NETWORK_GROUP: "Host network configuration (network.hosts) and RoCE QoS",
    NODE_EXPORTER_GROUP: "Prometheus node_exporter (monitoring.node_exporter)",
    DCGM_EXPORTER_GROUP: "NVIDIA dcgm-exporter on GPU nodes (monitoring.dcgm_exporter)",
    SLURM_EXPORTER_GROUP: "prometheus-slurm-exporter on the controllers (monitoring.slurm)",
    EXPORTERS_GROUP: "Every node with a Prometheus exporter of monitoring (the groups above)",
    ANSIBLE_PULL_GROUP: "Pull mode (ansible.pull): every node converges itself with ansible-pull",
    "compute": "Slurm compute nodes",
    "login": "Login nodes",
    "slurm_controller": "Slurm controllers",
    "slurm_dbd": "Slurm accounting (slurmdbd)",
}
SLURM_ROLES: tuple[str, ...] = ("compute", "login", "slurm_controller", "slurm_dbd")

_NOT_IN_GROUP_NAME = re.compile(r"[^A-Za-z0-9_]")


def role_group(role: str) -> str:
    """Ansible group of a role: group names allow letters, digits and '_' only."""
    return _NOT_IN_GROUP_NAME.sub("_", role)


def nvlink_domain_group(domain: str) -> str:
    """Ansible group of an NVLink domain's trays."""
    return NVLINK_DOMAIN_PREFIX + _NOT_IN_GROUP_NAME.sub("_", domain)


def hardware_group(profile: str) -> str:
    """Ansible group of a hardware profile; the prefix keeps it apart from role groups."""
    return "hw_" + _NOT_IN_GROUP_NAME.sub("_", profile)
