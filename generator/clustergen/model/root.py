"""The whole spec: one model per section, composed."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, Field

from clustergen.base.codes import WARNINGS, ignorable
from clustergen.model.ansible import Ansible
from clustergen.model.cluster import Cluster
from clustergen.model.common import StrictModel, whole_number
from clustergen.model.hardware import HardwareProfile
from clustergen.model.monitoring import Monitoring
from clustergen.model.nccl import Nccl
from clustergen.model.network import Network
from clustergen.model.nodes import NodeGroup
from clustergen.model.racks import Facility, Rack
from clustergen.model.slurm import Slurm
from clustergen.model.software import Software
from clustergen.model.storage import Storage
from clustergen.model.syntax import SlurmName


class Spec(StrictModel):
    """A GPU cluster, described once: clustergen checks it and renders everything from it."""

    version: Annotated[Literal[1], BeforeValidator(whole_number)] = Field(
        description="Spec language version; 1."
    )
    cluster: Cluster
    software: Software = Field(description="The pinned software stack.")
    hardware: dict[SlurmName, HardwareProfile] = Field(
        min_length=1,
        description="Hardware profiles by name: up to 64 letters, digits, '.', '_' and '-', "
        "starting with a letter or digit (the name becomes a Slurm feature, an inventory group "
        "and a file name).",
    )
    network: Network
    nodes: list[NodeGroup] = Field(min_length=1, description="Node groups.")
    racks: list[Rack] = Field(default_factory=list, description="Racks and what is in them.")
    facility: Facility | None = Field(default=None, description="Site-wide limits.")
    slurm: Slurm = Field(description="The Slurm configuration.")
    storage: Storage | None = Field(default=None, description="Shared storage.")
    nccl: Nccl | None = Field(default=None, description="NCCL settings for GPU nodes.")
    monitoring: Monitoring | None = Field(
        default=None,
        description="Prometheus endpoints (node_exporter, dcgm-exporter, Slurm's metrics); "
        "absent: none installed.",
    )
    ansible: Ansible | None = Field(
        default=None,
        description="How the rendered tree is applied besides push: pull mode "
        "(ansible-pull on every node); absent: push only.",
    )
    ignore: list[Annotated[str, AfterValidator(ignorable)]] = Field(
        default_factory=list,
        description="Codes of warnings this cluster accepts (e.g. packages.cudnn8-cuda-suffix); "
        "they are not reported. Errors cannot be ignored.",
        json_schema_extra={"items": {"type": "string", "enum": list(WARNINGS)}},
    )
