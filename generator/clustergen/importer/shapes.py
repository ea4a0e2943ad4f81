"""The spec an import writes, typed key by key: the same plain data YAML dumps (so the
written spec keeps the order each part is built in), with every key and value checked by
mypy against the spec language (model/). Each part is built whole by the module that
reads it, and build.py joins them once: nothing is patched in afterwards.

A TypedDict's required keys are its base's (`_...Keys`), its optional ones the class's own
(`total=False`): Python 3.10 has no `NotRequired`."""

from __future__ import annotations

from typing import Literal, TypedDict


class CpuShape(TypedDict):
    sockets: int
    cores_per_socket: int
    threads_per_core: int


class ReservedShape(TypedDict):
    cores: int
    memory_gib: int


class _GpuKeys(TypedDict):
    model: str
    count: int


class GpuShape(_GpuKeys, total=False):
    gres_type: str


class OtherGpusShape(TypedDict):
    model: str
    count: int
    gres_type: str


class _InterfacesKeys(TypedDict):
    management: str


class InterfacesShape(_InterfacesKeys, total=False):
    fabric: str


class _ProfileKeys(TypedDict):
    rack_units: int
    cpu: CpuShape
    memory_gib: int


class ProfileShape(_ProfileKeys, total=False):
    real_memory_mib: int
    system_reserved: ReservedShape
    gpu: GpuShape
    other_gpus: list[OtherGpusShape]
    interfaces: InterfacesShape  # always written, and last, as the examples place it


class _SwitchKeys(TypedDict):
    name: str


class SwitchShape(_SwitchKeys, total=False):
    nodes: str
    switches: str


class FabricShape(TypedDict):
    type: Literal["infiniband"]
    rate: str
    cidr: str
    switches: list[SwitchShape]


class _ManagementKeys(TypedDict):
    cidr: str


class _NetworkKeys(TypedDict):
    management: _ManagementKeys


class NetworkShape(_NetworkKeys, total=False):
    fabric: FabricShape


class _NodeGroupKeys(TypedDict):
    names: str
    hardware: str
    roles: list[str]
    management_ip: str


class NodeGroupShape(_NodeGroupKeys, total=False):
    fabric_ip: str
    features: list[str]
    weight: int


class _PartitionKeys(TypedDict):
    name: str
    nodes: str


class PartitionShape(_PartitionKeys, total=False):
    default: bool
    max_time: str
    default_time: str
    qos: str
    priority_tier: int
    def_cpu_per_gpu: int
    def_mem_per_gpu_mib: int
    allow_accounts: list[str]
    allow_groups: list[str]
    allow_qos: list[str]
    state: str
    oversubscribe: str
    preempt_mode: str
    billing_weights: dict[str, float]
    options: dict[str, str]


class _QosKeys(TypedDict):
    name: str


class QosShape(_QosKeys, total=False):
    priority: int
    preempt: list[str]
    preempt_mode: str
    grace_time_s: int


class DatabaseShape(TypedDict, total=False):
    host: str
    port: int
    name: str
    user: str


class _AccountingKeys(TypedDict):
    host: str


class AccountingShape(_AccountingKeys, total=False):
    port: int
    database: DatabaseShape


class StateSaveShape(TypedDict, total=False):
    path: str
    shared: bool


class _PriorityKeys(TypedDict):
    type: Literal["basic", "multifactor"]


class PriorityShape(_PriorityKeys, total=False):
    weights: dict[str, int]
    decay_half_life: str
    usage_reset_period: str
    max_age: str
    flags: list[str]  # always written, and last


class PreemptionShape(TypedDict):
    type: str
    mode: str


class IsolationShape(TypedDict):
    private_data: bool
    job_tmpfs: bool
    ssh_adopt: bool


class _SlurmKeys(TypedDict):
    controllers: list[str]


class SlurmShape(_SlurmKeys, total=False):
    """In the order the spec is written: slurm.conf's global keys (settings.py), the
    partitions, the QOS and keep_imported (build.py joins them)."""

    accounting: AccountingShape
    state_save: StateSaveShape
    priority: PriorityShape
    preemption: PreemptionShape
    isolation: IsolationShape
    mpi: str
    options: dict[str, str]
    partitions: list[PartitionShape]
    qos: list[QosShape]
    keep_imported: bool


class ClusterShape(TypedDict):
    name: str
    domain: str


class SpecShape(TypedDict):
    version: int
    cluster: ClusterShape
    software: dict[str, str]
    hardware: dict[str, ProfileShape]
    network: NetworkShape
    nodes: list[NodeGroupShape]
    slurm: SlurmShape
