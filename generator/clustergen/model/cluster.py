"""cluster: the cluster's identity."""

from __future__ import annotations

from pydantic import Field

from clustergen.model.common import Identifier, StrictModel
from clustergen.model.syntax import ClusterName, DnsDomain, TimeServer


class Account(StrictModel):
    """A service account created with the same IDs on every node."""

    uid: int = Field(ge=1, le=2**31 - 2, description="User ID (also the group's ID).")


class Accounts(StrictModel):
    """The service accounts every node creates before any package that would create
    them with a node-local ID: slurmd rejects RPCs from a controller whose slurm UID
    differs, and munge must own the key on every node."""

    slurm: Account = Field(
        default_factory=lambda: Account(uid=64030),
        description="SlurmUser (default UID/GID 64030).",
    )
    munge: Account = Field(
        default_factory=lambda: Account(uid=64031),
        description="The munge daemon's user (default UID/GID 64031).",
    )


class Cluster(StrictModel):
    """The cluster's identity: its Slurm name and DNS domain."""

    name: ClusterName = Field(
        description="Cluster name (Slurm ClusterName): lowercase, as slurmdbd stores it.",
    )
    domain: DnsDomain = Field(
        max_length=253,
        description="DNS domain of the node names.",
    )
    accounts: Accounts = Field(
        default_factory=Accounts,
        description="Fixed UIDs/GIDs of the slurm and munge accounts on every node.",
    )
    hosts_file: bool = Field(
        default=True,
        description="Write every node's name, name.domain and management address into "
        "/etc/hosts on every node. Set false when the site's DNS serves the node names.",
    )
    time_sync: bool = Field(
        default=True,
        description="Install and run chrony on every node: MUNGE refuses credentials from a "
        "clock more than 5 minutes off, and job records need one time. Set false when the "
        "site's own configuration keeps time.",
    )
    time_servers: list[TimeServer] = Field(
        default_factory=list,
        max_length=16,
        description="NTP servers chrony follows (server NAME iburst), added to the "
        "distribution's configuration; empty: the distribution's default pool only (an "
        "air-gapped site must name its own).",
    )
    munge_key_variable: Identifier = Field(
        default="vault_munge_key",
        description="Ansible (vault) variable holding the cluster's MUNGE key, base64-encoded "
        "(e.g. `mungekey -c -k /dev/stdout | base64 -w0`); every node gets the same key.",
    )
    extra_roles: list[Identifier] = Field(
        default_factory=list,
        description="Roles beyond the built-in ones that nodes may carry; each becomes an "
        "Ansible group.",
    )
