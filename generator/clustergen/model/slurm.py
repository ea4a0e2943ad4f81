"""slurm: controllers, accounting, partitions, scheduling policy and extra slurm.conf keys."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, model_validator
from typing_extensions import Self

from clustergen.base import codes
from clustergen.base.codes import invalid
from clustergen.model.common import (
    ConfValue,
    Hostlist,
    Hostname,
    Int,
    SlurmConfValue,
    SlurmTime,
    StrictModel,
    keys_set,
    when_equal,
)
from clustergen.model.nccl import NcclSettings
from clustergen.model.syntax import (
    CONF_VALUE_PATTERN,
    SLURM_CONF_VALUE_PATTERN,
    WORDS_KEYS_PATTERN,
    AbsolutePath,
    DatabaseWord,
    SlurmConfKey,
    SlurmName,
    UnixName,
    VariableName,
)

# One word of a slurm.conf value list: nothing that would split or end the value.
SlurmWord = SlurmName


class AccountingDatabase(StrictModel):
    """The MariaDB/MySQL database behind slurmdbd."""

    host: Hostname = Field(
        default="localhost",
        description="MariaDB/MySQL host seen from slurmdbd: a host name, domain name or IPv4 "
        "address. localhost (or the slurmdbd node): the playbook installs MariaDB there; any "
        "other host is an external server the site provides with the database, user and grant "
        "(docs/ansible.md).",
    )
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


class BillingWeights(StrictModel):
    """TRESBillingWeights of a partition: what one unit of each resource is billed."""

    cpu: float | None = Field(default=None, ge=0, description="Weight of one CPU (CPU=).")
    mem_per_gib: float | None = Field(
        default=None, ge=0, description="Weight of one GiB of memory (Mem=<w>G)."
    )
    gpu: float | None = Field(default=None, ge=0, description="Weight of one GPU (GRES/gpu=).")


class Partition(StrictModel):
    """A Slurm partition (PartitionName line)."""

    name: SlurmName = Field(
        description="Partition name: up to 64 letters, digits, ._- (it names a directory of "
        "acceptance jobs)."
    )
    nodes: Hostlist = Field(description="Hostlist of the partition's nodes (Slurm compute nodes).")
    default: bool = Field(default=False, description="The default partition (at most one).")
    max_time: SlurmTime | None = Field(default=None, description="MaxTime: longest job time.")
    default_time: SlurmTime | None = Field(
        default=None,
        description="DefaultTime: the time limit of a job that asks for none. Default 1:00:00, "
        "or max_time when that is shorter, so backfill always has a limit to plan with.",
    )
    priority_tier: Int | None = Field(default=None, ge=0, le=65533, description="PriorityTier.")
    state: Literal["UP", "DOWN", "DRAIN", "INACTIVE"] = Field(default="UP", description="State.")
    oversubscribe: Literal["NO", "YES", "EXCLUSIVE", "FORCE"] | None = Field(
        default=None, description="OverSubscribe."
    )
    allow_accounts: list[SlurmWord] = Field(default_factory=list, description="AllowAccounts.")
    allow_groups: list[SlurmWord] = Field(default_factory=list, description="AllowGroups.")
    allow_qos: list[SlurmWord] = Field(default_factory=list, description="AllowQos.")
    qos: SlurmWord | None = Field(default=None, description="Partition QOS.")
    def_cpu_per_gpu: Int | None = Field(
        default=None,
        ge=1,
        description="DefCpuPerGPU. Default on a partition with GPU nodes: the node's cores "
        "left after hardware.*.system_reserved.cores, shared evenly among its GPUs in whole "
        "cores (the smallest share among the partition's GPU profiles).",
    )
    def_mem_per_gpu_mib: Int | None = Field(
        default=None,
        ge=1,
        description="DefMemPerGPU in MiB. Default on a partition with GPU nodes: RealMemory less "
        "hardware.*.system_reserved.memory_gib, shared evenly among the GPUs (the smallest share "
        "among the partition's GPU profiles); not derived when slurm.options sets DefMemPerCPU "
        "or DefMemPerNode.",
    )
    billing_weights: BillingWeights | None = Field(
        default=None,
        description="TRESBillingWeights, written exactly as given; needs slurm.accounting "
        "(billing is kept by slurmdbd). Default on a partition with GPU nodes, with accounting: "
        "CPU=1, and memory and GPUs weighted so that all of a node's memory, or all "
        "of its GPUs, bill as much as all of its CPUs (with PriorityFlags MAX_TRES a job is "
        "billed for the largest share of a node it takes).",
    )
    preempt_mode: Literal["OFF", "CANCEL", "REQUEUE", "SUSPEND"] | None = Field(
        default=None, description="PreemptMode of this partition."
    )
    nccl: NcclSettings | None = Field(
        default=None,
        description="NCCL settings for jobs in this partition (its acceptance jobs' "
        "environment), over the profile's and the global ones.",
    )
    options: dict[SlurmConfKey, ConfValue] = Field(
        default_factory=dict,
        description="Further keys of this partition's PartitionName line (e.g. MaxNodes, "
        "DefMemPerCPU, Hidden), written as given after clustergen's own, before State; what "
        "`clustergen import` reads and the spec does not model. A value is one word.",
    )
    max_blocking: float | None = Field(
        default=None,
        ge=1,
        le=1024,
        description="Largest blocking factor accepted on a leaf switch that holds nodes of "
        "this partition: the leaf's HCA ports x link rate over its uplink cables x link "
        "rate (1 is non-blocking, 2 is 2:1). A leaf above it warns "
        "(network.leaf-oversubscribed) when the partition also has nodes under other "
        "leaves. Default 1 for a partition whose nodes all have GPUs; other partitions "
        "are not checked unless it is given.",
    )


class PriorityWeights(StrictModel):
    """Multifactor priority weights."""

    age: Int = Field(default=0, ge=0, description="PriorityWeightAge.")
    fairshare: Int = Field(default=0, ge=0, description="PriorityWeightFairshare.")
    job_size: Int = Field(default=0, ge=0, description="PriorityWeightJobSize.")
    partition: Int = Field(default=0, ge=0, description="PriorityWeightPartition.")
    qos: Int = Field(default=0, ge=0, description="PriorityWeightQOS.")


PriorityFlag = Literal[
    "ACCRUE_ALWAYS",
    "CALCULATE_RUNNING",
    "DEPTH_OBLIVIOUS",
    "NO_FAIR_TREE",
    "INCR_ONLY",
    "MAX_TRES",
    "NO_NORMAL_ALL",
    "NO_NORMAL_ASSOC",
    "NO_NORMAL_PART",
    "NO_NORMAL_QOS",
    "NO_NORMAL_TRES",
    "SMALL_RELATIVE_TO_TIME",
]


def _default_priority_flags() -> list[PriorityFlag]:
    return ["MAX_TRES"]


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
    flags: list[PriorityFlag] = Field(
        default_factory=_default_priority_flags,
        description="PriorityFlags. Default [MAX_TRES]: a job is billed for the largest share "
        "of a node it takes (of CPUs, memory or GPUs), so an 8-GPU 1-CPU job is not billed as "
        "one CPU. Without slurm.priority, the default is written when slurm.accounting is set; "
        "[] writes none.",
    )

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


class Qos(StrictModel):
    """A QOS that clustergen creates in slurmdbd (sacctmgr), e.g. for preemption."""

    name: SlurmName = Field(description="QOS name.")
    priority: Int | None = Field(default=None, ge=0, description="Priority of the QOS.")
    preempt: list[SlurmName] = Field(
        default_factory=list,
        description="QOS whose jobs this QOS may preempt (Preempt=); each must be in slurm.qos "
        "or be 'normal', which slurmdbd always has.",
    )
    preempt_mode: Literal["CANCEL", "REQUEUE", "SUSPEND"] | None = Field(
        default=None,
        description="PreemptMode of jobs of this QOS when they are preempted; unset uses "
        "slurm.preemption.mode. REQUEUE with a grace_time_s is what training sites usually want.",
    )
    grace_time_s: Int | None = Field(
        default=None,
        ge=0,
        description="GraceTime in seconds: how long a preempted job of this QOS gets to "
        "checkpoint (it receives SIGTERM) before it is requeued or cancelled.",
    )


class StateSave(StrictModel):
    """Where slurmctld keeps its state (StateSaveLocation)."""

    path: AbsolutePath = Field(
        default="/var/spool/slurmctld",
        description="StateSaveLocation directory (letters, digits and _.+@,:=~/- only).",
    )
    shared: bool = Field(
        default=False,
        description="The directory is on storage every controller mounts read-write (NFS, "
        "Lustre). Required with more than one controller: a takeover from a local directory "
        "loses the queue.",
    )


# HealthCheckNodeState's words (slurm.conf(5); the parser in src/common/read_config.c of
# each release: NONDRAINED_IDLE from 23.02, START_ONLY from 25.11).
HealthCheckNodeState = Literal[
    "ALLOC", "ANY", "CYCLE", "IDLE", "MIXED", "NONDRAINED_IDLE", "START_ONLY"
]


def _default_health_states() -> list[HealthCheckNodeState]:
    return ["ANY", "CYCLE"]


class HealthCheck(StrictModel):
    """GPU health checks run by Slurm: the Epilog after every job and, when software.nhc
    pins LBNL NHC, slurmd's HealthCheckProgram between jobs (docs/health.md)."""

    epilog: bool = Field(
        default=False,
        description="Install a GPU health-check Epilog, run after every job: GPU count, "
        "uncorrectable ECC errors since the driver loaded (volatile), pending or failed row "
        "remaps, Xid 48/63/64/74/79/94/95/119, the Blackwell NVLink Xids 144-150 and 154 "
        "(a recovery action other than None) logged since the previous check, each compute "
        "HCA port ACTIVE at the fabric's rate and, on NVSwitch nodes, the fabric manager. A "
        "failing node is drained with the reason (never set DOWN); every command runs under "
        "`timeout`.",
    )
    max_gpu_temp_c: Int = Field(
        default=85,
        ge=30,
        le=120,
        description="A GPU hotter than this at job end is logged (syslog tag clustergen-epilog), "
        "never drained: right after a job a GPU is at its hottest, so a drain would be false.",
    )
    interval_s: Int = Field(
        default=300,
        ge=1,
        le=86400,
        description="HealthCheckInterval: seconds between two runs of LBNL NHC by slurmd "
        "(the HealthCheckProgram), written only when software.nhc pins NHC. Default 300, "
        "the interval NHC's README gives for Slurm; slurmd kills a run after 60 s "
        "(slurm.conf(5) HealthCheckProgram), so NHC's own watchdog is set below that "
        "(docs/health.md).",
    )
    node_state: list[HealthCheckNodeState] = Field(
        default_factory=_default_health_states,
        min_length=1,
        description="HealthCheckNodeState: the node states in which NHC runs, written as "
        "given. Default [ANY, CYCLE]: every node whatever its state, spread over the "
        "interval (CYCLE) so the nodes do not all run NHC at once. NONDRAINED_IDLE needs "
        "Slurm 23.02, START_ONLY 25.11 (slurm.conf(5); src/common/read_config.c).",
    )


def _default_admin_users() -> list[str]:
    return ["root"]


def _default_admin_groups() -> list[str]:
    return ["sudo", "wheel"]


class SshAdmins(StrictModel):
    """Who may ssh to a compute node without a job there (pam_access, before pam_slurm_adopt)."""

    users: list[UnixName] = Field(
        default_factory=_default_admin_users,
        description="Users let in without a job. Default [root]. The user Ansible connects "
        "as must be here or in one of the groups, or the playbook cannot reach the compute "
        "nodes after its first run.",
    )
    groups: list[UnixName] = Field(
        default_factory=_default_admin_groups,
        description="Groups whose members are let in without a job. Default [sudo, wheel]: "
        "the groups that may become root on Debian/Ubuntu and EL, whose members could leave "
        "any job's cgroup anyway.",
    )


class Isolation(StrictModel):
    """What keeps users inside their jobs and out of each other's (docs/security.md)."""

    ssh_adopt: bool = Field(
        default=True,
        description="pam_slurm_adopt in sshd's PAM stack on the compute nodes: a user without "
        "a job on the node is refused, and a user's ssh session joins the cgroup of their job "
        "there, so it uses only the job's GPUs, cores and memory and ends with it "
        "(LaunchParameters=ulimit_pam_adopt, pam_systemd out of sshd's session stack). Turn "
        "off only where users must log in to compute nodes outside jobs, knowing that they "
        "then use the node's GPUs outside any job's limits and accounting.",
    )
    ssh_admins: SshAdmins = Field(
        default_factory=SshAdmins,
        description="Who may ssh to a compute node without a job (with ssh_adopt).",
    )
    private_data: bool = Field(
        default=True,
        description="PrivateData=jobs,usage,users in slurm.conf (and slurmdbd.conf): a user "
        "sees only their own jobs, usage and user record (squeue, sacct, sshare), not what "
        "others run, for how long, or under which names. Turn off where users are trusted to "
        "see each other's work, e.g. one team sharing a cluster.",
    )
    job_tmpfs: bool = Field(
        default=True,
        description="A private /tmp and /dev/shm per job (job_container/tmpfs, "
        "job_container.conf; NamespaceType=namespace/tmpfs from Slurm 25.11), removed when "
        "the job ends, so jobs neither read each other's files there nor fill them for the "
        "next job. Turn off only where jobs must share /tmp or /dev/shm with processes "
        "outside the job.",
    )
    job_tmpfs_base: AbsolutePath = Field(
        default="/var/spool/slurmd/job_tmpfs",
        description="BasePath of job_container.conf: the node-local directory under which "
        "each job's /tmp and /dev/shm are kept while it runs; it needs room for what jobs "
        "write to /tmp.",
    )
    firewall_sources: bool = Field(
        default=True,
        description="On EL (firewalld), open the Slurm ports only to the cluster's own "
        "networks (network.management.cidr, network.fabric.cidr), so no other host can talk "
        "to slurmctld, slurmd or slurmdbd. Turn off only where Slurm clients outside those "
        "networks (a submit host elsewhere) must reach the daemons.",
    )


class TopologySettings(StrictModel):
    """How Slurm is given the network beyond what network.fabric and network.nvlink_domains
    say (docs/slurm.md "Topology")."""

    block_sizes: list[Annotated[Int, Field(ge=1, le=65536)]] = Field(
        min_length=1,
        max_length=16,
        description="topology/block's BlockSizes (Slurm 24.05 and later): the base block's "
        "node count first, then the larger block sizes jobs are placed in, each the base "
        "times a power of two (e.g. [18, 36, 72] for NVL72 domains of 18 trays). Default: "
        "Slurm's (the first block's nodes, and 1, 2, 4, 8 and 16 base blocks).",
    )


class Reboot(StrictModel):
    """Who rolls a change that needs a reboot (a new NVIDIA driver) through the running GPU
    nodes (docs/ansible.md "Slurm-driven reboots")."""

    mode: Literal["ansible", "slurm"] = Field(
        default="ansible",
        description="ansible: site.yml's rolling play drains, upgrades, reboots and resumes "
        "the nodes in batches. slurm: site.yml only puts the new package list on the nodes; "
        "the rendered roll-out script on the controller hands the nodes to `scontrol reboot "
        "ASAP nextstate=RESUME`, slurmd runs the rendered RebootProgram once a node's jobs "
        "have ended, and a boot step installs the pinned packages before slurmd starts.",
    )
    # Checked by validation (slurm.reboot-bound), not by the schema, so that it is coded.
    max_per_partition: Int = Field(
        default=1,
        description="slurm mode: at most this many nodes of one partition rebooting or "
        "draining for a reboot at once (the roll-out script counts them with sinfo before "
        "each node it hands to Slurm). At least 1.",
    )
    timeout_s: Int = Field(
        default=1800,
        ge=60,
        le=65533,
        description="slurm mode: slurm.conf's ResumeTimeout, how long slurmctld waits for a "
        "rebooted node to register before it marks the node DOWN (slurm.conf(5) "
        "RebootProgram, ResumeTimeout); it covers the boot step's package install.",
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
    qos: list[Qos] = Field(
        default_factory=list,
        description="QOS created in slurmdbd by the playbook (role slurm_accounting, sacctmgr). "
        "Needs slurm.accounting. With QOS, AccountingStorageEnforce includes qos (and so "
        "associations and limits), so every user needs an association in slurmdbd.",
    )
    state_save: StateSave = Field(
        default_factory=StateSave, description="StateSaveLocation and whether it is shared."
    )
    node_addr_from_management: bool = Field(
        default=False,
        description="Write NodeAddr=<management address> on the NodeName lines, so Slurm "
        "reaches nodes at their management address whatever their names resolve to. Off by "
        "default: the names resolve through /etc/hosts (cluster.hosts_file) or the site's DNS. "
        "Set it where they do not resolve on every Slurm host, or resolve to another network "
        "(e.g. the fabric).",
    )
    health_check: HealthCheck | None = Field(default=None, description="GPU health checks.")
    topology: TopologySettings | None = Field(
        default=None,
        description="Slurm topology settings; the topology itself (topology.conf or, from "
        "Slurm 25.05, topology.yaml) is derived from network.fabric.switches and "
        "network.nvlink_domains (docs/slurm.md).",
    )
    imex: Literal["per_job", "global"] = Field(
        default="per_job",
        description="How NVIDIA IMEX runs on the trays of network.nvlink_domains (nothing without "
        "NVLink domains; docs/imex.md). per_job (NVIDIA's recommendation for Slurm): each job gets "
        "its own IMEX channel from SwitchType=switch/nvidia_imex (Slurm 24.05.2 on), or, on "
        "older Slurm, the Prolog starts IMEX on the job's trays only and the Epilog stops it, so "
        "one user's job cannot map another's GPU memory. global: IMEX runs on every tray of the "
        "domain from boot and every job shares channel 0 (one trusted user or tenant only).",
    )
    mpi: Literal["none", "pmix"] = Field(
        default="none",
        description="MpiDefault, the process-management interface srun gives job steps "
        "(slurm.conf(5); SchedMD's mpi_guide). pmix: MpiDefault=pmix, and the slurm role "
        "installs, pins and holds the PMIx runtime and the Slurm package whose mpi/pmix plugin "
        'loads it on every Slurm node (docs/slurm.md "MPI and PMIx"); the acceptance jobs '
        "start nccl-tests with --mpi=pmix. none: MpiDefault=none and no PMIx; the all-reduce "
        "jobs then refuse to start (nccl-tests, built with MPI, needs PMIx under srun) unless "
        "SRUN_MPI names a plugin the site installed.",
    )
    isolation: Isolation = Field(
        default_factory=Isolation,
        description="Users kept inside their jobs and out of each other's data: each part on "
        "by default, each switchable with the reason given (docs/security.md).",
    )
    configless: bool = Field(
        default=False,
        description="Configless Slurm (SchedMD's configless_slurm page, Slurm 20.02 on): "
        "slurm.conf gets SlurmctldParameters=enable_configless, and slurmd on every compute "
        "node fetches the configuration files from slurmctld (--conf-server, a systemd "
        "drop-in) instead of receiving them: slurm.conf, cgroup.conf, gres.conf, "
        "job_container.conf and topology.conf (or topology.yaml) are installed only on the "
        "controllers, the login nodes and the slurmdbd host; the Epilog, Prolog and other "
        'scripts stay installed on the compute nodes (docs/slurm.md "Configless Slurm").',
    )
    reboot: Reboot | None = Field(
        default=None,
        description="Who rolls a driver change that needs a reboot (docs/ansible.md "
        '"Slurm-driven reboots"). Absent: mode ansible, site.yml\'s rolling play.',
    )
    keep_imported: bool = Field(
        default=False,
        description="The spec was imported from a running cluster (`clustergen import "
        "slurm`, docs/adopt.md): the render keeps what the cluster runs with instead of "
        "deriving its own. Node Features are only nodes[].features (not the profile name "
        "and GPU type), and a partition's DefaultTime, DefCpuPerGPU, DefMemPerGPU and "
        "TRESBillingWeights are written only where the partition gives them; the acceptance "
        "jobs that pick a profile's nodes name them (--nodelist) instead of its feature. "
        "Validation "
        "warns (slurm.keeps-imported-values) that it does. Remove it once the cluster may "
        "take clustergen's derived defaults.",
    )
    options: dict[str, SlurmConfValue] = Field(
        default_factory=dict,
        # The schema says what validation says (checks/slurm_options._spaces): words only
        # for the keys that take them, in any case; one word for every other key.
        json_schema_extra={
            "patternProperties": {
                WORDS_KEYS_PATTERN: {
                    "anyOf": [
                        {"type": "string", "pattern": SLURM_CONF_VALUE_PATTERN},
                        {"type": "integer"},
                    ]
                }
            },
            "additionalProperties": {
                "anyOf": [{"type": "string", "pattern": CONF_VALUE_PATTERN}, {"type": "integer"}]
            },
        },
        description="Further slurm.conf keys, written as given after clustergen's own. Checked "
        "against the pinned Slurm version's parser; keys clustergen derives from the spec are "
        "refused with the spec key to use instead. A value is one word (no '#', quote, "
        "backslash or line break), but for the keys that take words, InteractiveStepOptions "
        "and RebootProgram (its program's arguments): words with one space between them, "
        "written quoted.",
    )

    def option(self, key: str) -> str | None:
        """The value `options` gives slurm.conf's `key`, which Slurm reads in any case;
        None where it gives none."""
        for name, value in self.options.items():
            if name.lower() == key.lower():
                return str(value)
        return None
