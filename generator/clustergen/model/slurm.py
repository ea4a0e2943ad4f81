"""slurm: controllers, accounting, partitions, scheduling policy and extra slurm.conf keys."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, model_validator
from typing_extensions import Self

from clustergen import codes
from clustergen.codes import invalid
from clustergen.model.common import (
    ConfValue,
    Hostlist,
    Hostname,
    Int,
    SlurmTime,
    StrictModel,
    keys_set,
    when_equal,
)
from clustergen.model.nccl import NcclSettings
from clustergen.model.syntax import DatabaseWord, SlurmName, VariableName

# One word of a slurm.conf value list: nothing that would split or end the value.
SlurmWord = SlurmName


class AccountingDatabase(StrictModel):
    """The MariaDB/MySQL database behind slurmdbd."""

    host: str = Field(default="localhost", description="MariaDB/MySQL host seen from slurmdbd.")
    port: Int = Field(default=3306, ge=1, le=65535, description="Database port.")
    name: DatabaseWord = Field(default="slurm_acct_db", description="Database name.")
    user: DatabaseWord = Field(default="slurm", description="Database user.")
    password_variable: VariableName = Field(
        default="vault_slurmdbd_storage_pass",
        description="Ansible (vault) variable holding the database password. The password "
        "never appears in rendered files; Ansible adds it when it installs slurmdbd.conf.",
    )


class Accounting(StrictModel):
    """Slurm accounting through slurmdbd."""

    host: Hostname = Field(description="Node running slurmdbd (it needs the slurm_dbd role).")
    port: Int = Field(default=6819, ge=1, le=65535, description="slurmdbd port (DbdPort).")
    database: AccountingDatabase = Field(
        default_factory=AccountingDatabase, description="The database behind slurmdbd."
    )


class Partition(StrictModel):
    """A Slurm partition (PartitionName line)."""

    name: SlurmName = Field(description="Partition name.")
    nodes: Hostlist = Field(description="Hostlist of the partition's nodes (Slurm compute nodes).")
    default: bool = Field(default=False, description="The default partition (at most one).")
    max_time: SlurmTime | None = Field(default=None, description="MaxTime: longest job time.")
    default_time: SlurmTime | None = Field(default=None, description="DefaultTime for jobs.")
    priority_tier: Int | None = Field(default=None, ge=0, le=65533, description="PriorityTier.")
    state: Literal["UP", "DOWN", "DRAIN", "INACTIVE"] = Field(default="UP", description="State.")
    oversubscribe: Literal["NO", "YES", "EXCLUSIVE", "FORCE"] | None = Field(
        default=None, description="OverSubscribe."
    )
    allow_accounts: list[SlurmWord] = Field(default_factory=list, description="AllowAccounts.")
    allow_groups: list[SlurmWord] = Field(default_factory=list, description="AllowGroups.")
    allow_qos: list[SlurmWord] = Field(default_factory=list, description="AllowQos.")
    qos: SlurmWord | None = Field(default=None, description="Partition QOS.")
    def_cpu_per_gpu: Int | None = Field(default=None, ge=1, description="DefCpuPerGPU.")
    def_mem_per_gpu_mib: Int | None = Field(default=None, ge=1, description="DefMemPerGPU in MiB.")
    preempt_mode: Literal["OFF", "CANCEL", "REQUEUE", "SUSPEND"] | None = Field(
        default=None, description="PreemptMode of this partition."
    )
    nccl: NcclSettings | None = Field(
        default=None,
        description="NCCL settings for jobs in this partition (its acceptance jobs' "
        "environment), over the profile's and the global ones.",
    )


class PriorityWeights(StrictModel):
    """Multifactor priority weights."""

    age: Int = Field(default=0, ge=0, description="PriorityWeightAge.")
    fairshare: Int = Field(default=0, ge=0, description="PriorityWeightFairshare.")
    job_size: Int = Field(default=0, ge=0, description="PriorityWeightJobSize.")
    partition: Int = Field(default=0, ge=0, description="PriorityWeightPartition.")
    qos: Int = Field(default=0, ge=0, description="PriorityWeightQOS.")


class Priority(StrictModel):
    """Job priority policy."""

    model_config = ConfigDict(
        json_schema_extra=when_equal(
            "type",
            "basic",
            keys_set(unset=("weights", "decay_half_life", "usage_reset_period", "max_age")),
        )
    )

    type: Literal["multifactor", "basic"] = Field(
        default="multifactor", description="PriorityType: priority/multifactor or priority/basic."
    )
    weights: PriorityWeights | None = Field(default=None, description="Multifactor weights.")
    decay_half_life: SlurmTime | None = Field(
        default=None, description="PriorityDecayHalfLife, e.g. 7-0 (days-hours)."
    )
    usage_reset_period: (
        Literal["NONE", "NOW", "DAILY", "WEEKLY", "MONTHLY", "QUARTERLY", "YEARLY"] | None
    ) = Field(default=None, description="PriorityUsageResetPeriod.")
    max_age: SlurmTime | None = Field(default=None, description="PriorityMaxAge.")

    @model_validator(mode="after")
    def _multifactor_settings(self) -> Self:
        if self.type == "basic" and (
            self.weights or self.decay_half_life or self.usage_reset_period or self.max_age
        ):
            raise invalid(
                codes.SLURM_PRIORITY_NEEDS_MULTIFACTOR,
                "weights, decay and reset settings need type multifactor",
            )
        return self


class Preemption(StrictModel):
    """Preemption policy."""

    type: Literal["qos", "partition_prio", "none"] = Field(
        description="PreemptType: preempt/qos, preempt/partition_prio or preempt/none."
    )
    mode: Literal["OFF", "CANCEL", "REQUEUE", "SUSPEND"] = Field(
        default="CANCEL", description="PreemptMode; SUSPEND is written as SUSPEND,GANG."
    )


class HealthCheck(StrictModel):
    """GPU health checks run by Slurm."""

    epilog: bool = Field(
        default=False,
        description="Install a GPU health-check Epilog: GPU count, ECC errors and temperature; "
        "a failing node is drained with a reason.",
    )
    max_gpu_temp_c: Int = Field(
        default=85, ge=30, le=120, description="Drain a node when a GPU is hotter than this."
    )


class Slurm(StrictModel):
    """The Slurm configuration: slurm.conf, gres.conf, cgroup.conf, topology.conf, slurmdbd.conf."""

    controllers: list[Hostlist] = Field(
        min_length=1,
        description="slurmctld hosts (each entry a hostlist expression), primary first; the "
        "rest are backups.",
    )
    accounting: Accounting | None = Field(default=None, description="slurmdbd accounting.")
    partitions: list[Partition] = Field(min_length=1, description="Slurm partitions.")
    priority: Priority | None = Field(default=None, description="Job priority policy.")
    preemption: Preemption | None = Field(default=None, description="Preemption policy.")
    health_check: HealthCheck | None = Field(default=None, description="GPU health checks.")
    options: dict[str, ConfValue] = Field(
        default_factory=dict,
        description="Further slurm.conf keys, written as given after clustergen's own. Checked "
        "against the pinned Slurm version's parser; keys clustergen derives from the spec are "
        "refused with the spec key to use instead.",
    )
