"""Output families. Each renders artifacts from the resolved cluster (see
docs/architecture.md for adding one); the Ansible family installs them and the
site family carries the playbooks and roles."""

from __future__ import annotations

from collections.abc import Callable

import jinja2

from clustergen.artifacts import Artifact
from clustergen.outputs import (
    acceptance,
    facility,
    host_network,
    imex,
    lustre,
    monitoring,
    nccl,
    nfs,
    nhc,
    opensm,
    pull,
    slurm,
)
from clustergen.resolve import ResolvedCluster

Family = Callable[[ResolvedCluster, jinja2.Environment], list[Artifact]]

# The content families, by name: the name is the family's directory in the output
# tree and the value of `family` in the install lists Ansible reads.
FAMILIES: dict[str, Family] = {
    "slurm": slurm.render,
    "lustre": lustre.render,
    "nfs": nfs.render,
    "nccl": nccl.render,
    "acceptance": acceptance.render,
    "facility": facility.render,
    "imex": imex.render,
    "opensm": opensm.render,
    "nhc": nhc.render,
    "host_network": host_network.render,
    "monitoring": monitoring.render,
    "pull": pull.render,
}

# The families whose files stay in the output tree: none is installed on a node, so
# the Ansible family needs none of their artifacts, and a large spec renders and
# writes them in a second process beside the rest (clustergen.parallel).
UNINSTALLED = frozenset({"acceptance", "facility"})
