"""cluster: the cluster's identity."""

from __future__ import annotations

from pydantic import Field

from clustergen.model.common import Identifier, StrictModel


class Cluster(StrictModel):
    """The cluster's identity: its Slurm name and DNS domain."""

    name: str = Field(
        pattern=r"^[a-z][a-z0-9_-]{0,39}$",
        description="Cluster name (Slurm ClusterName): lowercase, as slurmdbd stores it.",
    )
    domain: str = Field(
        max_length=253,
        pattern=r"^([A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*"
        r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$",
        description="DNS domain of the node names.",
    )
    extra_roles: list[Identifier] = Field(
        default_factory=list,
        description="Roles beyond the built-in ones that nodes may carry; each becomes an "
        "Ansible group.",
    )
