"""cluster: the cluster's identity."""

from __future__ import annotations

from pydantic import Field

from clustergen.model.common import Identifier, StrictModel
from clustergen.model.syntax import ClusterName, DnsDomain


class Cluster(StrictModel):
    """The cluster's identity: its Slurm name and DNS domain."""

    name: ClusterName = Field(
        description="Cluster name (Slurm ClusterName): lowercase, as slurmdbd stores it.",
    )
    domain: DnsDomain = Field(
        max_length=253,
        description="DNS domain of the node names.",
    )
    extra_roles: list[Identifier] = Field(
        default_factory=list,
        description="Roles beyond the built-in ones that nodes may carry; each becomes an "
        "Ansible group.",
    )
