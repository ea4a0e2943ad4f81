"""nodes: groups of identical nodes, their roles and their first addresses."""

from __future__ import annotations

from pydantic import Field

from clustergen.model.common import Hostlist, Int, IPv4, StrictModel
from clustergen.model.syntax import NodeFeature

# Roles clustergen gives a meaning to. A spec may add its own in cluster.extra_roles.
KNOWN_ROLES = (
    "compute",
    "login",
    "slurm_controller",
    "slurm_dbd",
    "lustre_mgs",
    "lustre_mds",
    "lustre_oss",
)


class NodeGroup(StrictModel):
    """A group of identical nodes with consecutive addresses."""

    names: Hostlist = Field(description="Hostlist of the group's node names, e.g. gpu[01-08].")
    hardware: str = Field(description="Name of a hardware profile under 'hardware'.")
    roles: list[str] = Field(
        min_length=1,
        description="Roles of every node in the group: compute, login, slurm_controller, "
        "slurm_dbd, lustre_mgs, lustre_mds, lustre_oss, or one of cluster.extra_roles. Each "
        "role is an Ansible group.",
    )
    management_ip: IPv4 = Field(
        description="Management address of the group's first node; the others follow in order."
    )
    bmc_ip: IPv4 | None = Field(
        default=None, description="BMC address of the first node; the others follow in order."
    )
    fabric_ip: IPv4 | None = Field(
        default=None, description="Fabric address of the first node; the others follow in order."
    )
    storage_ip: IPv4 | None = Field(
        default=None,
        description="Storage network address of the first node's first storage interface; the "
        "others follow in order (docs/networks.md).",
    )
    frontend_ip: IPv4 | None = Field(
        default=None,
        description="Front-end network address of the first node; the others follow in order.",
    )
    features: list[NodeFeature] = Field(
        default_factory=list,
        description="Extra Slurm node features. The hardware profile name and the GPU's GRES "
        "type are always features of compute nodes.",
    )
    weight: Int | None = Field(
        default=None, ge=0, description="Slurm node Weight: lower weights are allocated first."
    )
