"""The Slurm family's derive step: everything its templates print, ready to print.

Templates only lay values out; hostlists, GRES strings, memory arithmetic and
key order are decided here, from the resolved cluster.
"""

from __future__ import annotations

from dataclasses import dataclass

from clustergen.catalog.monitoring import SLURM_METRICS_PRIVATE_FIRST
from clustergen.catalog.slurm_keys import PRIVATE_DATA
from clustergen.catalog.versions import VersionTuple, parse_version
from clustergen.catalog.xids import DRAIN_XIDS, DrainXid
from clustergen.model import Spec
from clustergen.model.common import parse_slurm_time
from clustergen.model.network import LINK_GBITS
from clustergen.model.slurm import HealthCheck, Priority
from clustergen.outputs.slurm.epilog import (
    EPILOG_TIMEOUTS,
    EpilogProfile,
    EpilogTimeouts,
    GpuNodeCheck,
    ImexScripts,
    epilog_checks,
    epilog_profiles,
    imex_trays,
)
from clustergen.outputs.slurm.nodes import (
    BF_WINDOW_MAX_MIN,
    GresLine,
    NodeLine,
    Setting,
    gres_lines,
    node_lines,
    partition_default_time_min,
    partition_lines,
)
from clustergen.resolve import ResolvedCluster, slurm_metrics
from clustergen.resolve.imex_mode import (
    EPILOG_DIR,
    PROLOG_PATH,
    SWITCH_IMEX,
    imex_start,
)
from clustergen.resolve.slurm_topology import SlurmTopology, SwitchLine, slurm_topology

SLURM_ETC = "/etc/slurm"
# pam_slurm_adopt on compute nodes: the account lines sshd's PAM stack includes, and the
# pam_access file of who may log in without a job (SchedMD, pam_slurm_adopt.html).
PAM_ADOPT_INCLUDE = "/etc/pam.d/clustergen-slurm-adopt"
PAM_ADOPT_ACCESS = "/etc/security/clustergen-ssh-admins.conf"
# job_container.conf's Dirs (job_container.conf(5)): 22.05 mounts /tmp and /dev/shm
# without the key (its plugin knows BasePath, AutoBasePath, InitScript, NodeName only);
# the man page of 23.11 documents Dirs, whose default is the same two.
JOB_TMPFS_DIRS = "/tmp,/dev/shm"
JOB_TMPFS_DIRS_FROM: VersionTuple = (23, 11)
# Slurm 25.11 names the per-job namespace plugin NamespaceType=namespace/tmpfs (slurm.conf(5)
# of 25.11, job_container.conf(5)); before, JobContainerType=job_container/tmpfs.
NAMESPACE_TYPE_FROM: VersionTuple = (25, 11)
EPILOG_NAME = "health-epilog.sh"
QOS_SCRIPT_NAME = "clustergen-qos.sh"

# slurm.conf settings clustergen writes unless slurm.options sets them: site paths,
# ports and sensible defaults for a GPU cluster.
SLURM_DEFAULTS: tuple[tuple[str, str], ...] = (
    ("SlurmUser", "slurm"),
    ("SlurmctldPort", "6817"),
    ("SlurmdPort", "6818"),
    ("AuthType", "auth/munge"),
    ("CredType", "cred/munge"),
    ("SlurmdSpoolDir", "/var/spool/slurmd"),
    ("SlurmctldPidFile", "/run/slurmctld.pid"),
    ("SlurmdPidFile", "/run/slurmd.pid"),
    ("SlurmctldLogFile", "/var/log/slurm/slurmctld.log"),
    ("SlurmdLogFile", "/var/log/slurm/slurmd.log"),
    ("SchedulerType", "sched/backfill"),
    ("SelectTypeParameters", "CR_Core_Memory"),
    # slurm.mpi's value replaces this one (_slurm_sections); none is slurm.mpi's default.
    ("MpiDefault", "none"),
    # RDMA (InfiniBand, RoCE) pins the buffers it registers: jobs need unlimited locked
    # memory. Slurm gives a job the limits of the shell it was submitted from, often a
    # login node's 64 KiB; without MEMLOCK propagated, tasks keep slurmd's own limit,
    # which the slurm role sets to infinity (Slurm FAQ "memlock", slurm.conf(5)).
    ("PropagateResourceLimitsExcept", "MEMLOCK"),
    ("ReturnToService", "2"),
    # Alloc runs the Prolog when a job is allocated; Contain adds the extern step that
    # pam_slurm_adopt puts SSH sessions into, so they stay in the job's cgroup.
    ("PrologFlags", "Alloc,Contain"),
    # Slurm waits for ever by default; an Epilog stuck on a GPU that fell off the bus
    # (a process in uninterruptible sleep outlives `timeout`) would leave the node
    # COMPLETING. Above the health Epilog's worst case (EpilogTimeouts.worst_case_s).
    ("PrologEpilogTimeout", "180"),
    # A job over a partition's limits (MaxTime, MaxNodes) is refused at submission, not
    # left PENDING for ever with reason PartitionTimeLimit. ANY, not ALL, so a job
    # submitted to several partitions is accepted when it fits one of them.
    ("EnforcePartLimits", "ANY"),
)

# slurm.conf's MessageTimeout when the site sets none.
MESSAGE_TIMEOUT_DEFAULT_S = 10
# UnkillableStepTimeout: long enough for a GPU job's processes to release the device;
# Slurm wants at least 5 x MessageTimeout, or nodes go down with KillTaskFailed.
UNKILLABLE_STEP_TIMEOUT_S = 180
# Backfill plans at least Slurm's default day ahead and at most the 30 days it accepts.
BF_WINDOW_MIN_MIN = 1440
# bf_resolution grows with the window so the plan keeps about a day of one-minute
# slots; Slurm caps it at an hour.
BF_SLOTS = 1440
BF_RESOLUTION_MAX_S = 3600


@dataclass(frozen=True)
class ConfSection:
    title: str
    settings: list[Setting]


@dataclass(frozen=True)
class QosLine:
    """One QOS as `sacctmgr show qos -nP` prints it, and the sacctmgr settings that make it."""

    name: str
    shown: str  # Name|Priority|Preempt|PreemptMode|GraceTime as sacctmgr prints them
    settings: list[Setting]


@dataclass(frozen=True)
class SshAdopt:
    """pam_access lines, in order: who may ssh to a compute node without a job."""

    access: list[str]
    access_file: str = PAM_ADOPT_ACCESS


@dataclass(frozen=True)
class SlurmContext:
    sections: list[ConfSection]
    nodes: list[NodeLine]
    partitions: list[NodeLine]
    gres: list[GresLine]
    topology: list[SwitchLine]  # topology/tree's switches, when Slurm is given the tree
    network: SlurmTopology  # the tree, the blocks, and which of them Slurm is given
    cgroup: list[Setting]
    slurmdbd: list[Setting] | None
    password_variable: str | None
    epilog_checks: list[GpuNodeCheck] | None
    epilog_profiles: list[EpilogProfile]
    link_gbits: int | None  # the fabric's link rate; None without a fabric
    drain_xids: tuple[DrainXid, ...]
    max_gpu_temp_c: int
    qos: list[QosLine]
    ssh_adopt: SshAdopt | None  # pam_slurm_adopt on the compute nodes
    job_container: list[Setting] | None  # job_container.conf
    imex: ImexScripts | None  # the IMEX Prolog and Epilog (slurm.imex per job, prolog mode)
    epilog_timeouts: EpilogTimeouts = EPILOG_TIMEOUTS


def derive_slurm(cluster: ResolvedCluster) -> SlurmContext:
    spec, compute = cluster.spec, cluster.compute
    health = spec.slurm.health_check
    epilog = health is not None and health.epilog
    accounting = spec.slurm.accounting
    network = slurm_topology(cluster)
    return SlurmContext(
        sections=_slurm_sections(cluster, epilog, network),
        nodes=node_lines(spec, compute),
        partitions=partition_lines(cluster, network),
        gres=gres_lines(spec, compute),
        topology=network.switches if network.kind in ("tree", "yaml") else [],
        network=network,
        cgroup=[
            ("ConstrainCores", "yes"),
            ("ConstrainDevices", "yes"),
            ("ConstrainRAMSpace", "yes"),
            # Jobs are OOM-killed at their memory limit instead of swapping.
            ("ConstrainSwapSpace", "yes"),
            ("AllowedSwapSpace", "0"),
        ],
        slurmdbd=_slurmdbd(spec) if accounting else None,
        password_variable=accounting.database.password_variable if accounting else None,
        epilog_checks=epilog_checks(compute) if epilog else None,
        epilog_profiles=epilog_profiles(cluster) if epilog else [],
        link_gbits=LINK_GBITS[spec.network.fabric.rate] if spec.network.fabric else None,
        drain_xids=DRAIN_XIDS,
        max_gpu_temp_c=health.max_gpu_temp_c if health else 0,
        qos=_qos_lines(spec),
        ssh_adopt=_ssh_adopt(spec) if spec.slurm.isolation.ssh_adopt else None,
        job_container=_job_container(spec) if spec.slurm.isolation.job_tmpfs else None,
        imex=ImexScripts(imex_trays(cluster)) if _imex_scripts(cluster) else None,
    )


def _imex_scripts(cluster: ResolvedCluster) -> bool:
    start = imex_start(cluster)
    return start is not None and start.mode == "prolog"


def _ssh_adopt(spec: Spec) -> SshAdopt:
    admins = spec.slurm.isolation.ssh_admins
    allowed = [*admins.users, *(f"({group})" for group in admins.groups)]
    # pam_access: the first line that matches decides; everyone else is left to
    # pam_slurm_adopt, which lets in only users with a job on the node.
    access = [f"+:{' '.join(allowed)}:ALL"] if allowed else []
    return SshAdopt([*access, "-:ALL:ALL"])


def slurm_release(spec: Spec) -> VersionTuple:
    return parse_version(spec.software.slurm)[:2]


def _job_container(spec: Spec) -> list[Setting]:
    # AutoBasePath: slurmd creates BasePath when it is missing (job_container.conf(5)).
    settings: list[Setting] = [
        ("AutoBasePath", "true"),
        ("BasePath", spec.slurm.isolation.job_tmpfs_base),
    ]
    if slurm_release(spec) >= JOB_TMPFS_DIRS_FROM:
        settings.append(("Dirs", JOB_TMPFS_DIRS))
    return settings


def metrics_settings(cluster: ResolvedCluster) -> list[Setting]:
    """slurmctld's own OpenMetrics endpoints (monitoring.slurm kind openmetrics, 25.11 on;
    catalog/monitoring.py): MetricsType, and on 26.05 on with PrivateData set
    MetricsAuthUsers, the accounts that may read them once authenticated (never
    MetricsParameters=ignore_private_data, which opens every user's jobs to anyone).
    Nothing with kind exporter or without monitoring.slurm."""
    spec = cluster.spec
    if slurm_metrics(spec) != "openmetrics":
        return []
    settings: list[Setting] = [("MetricsType", "metrics/openmetrics")]
    metrics = spec.monitoring.slurm if spec.monitoring else None
    private = spec.slurm.isolation.private_data
    if metrics and private and slurm_release(spec) >= SLURM_METRICS_PRIVATE_FIRST:
        settings.append(("MetricsAuthUsers", ",".join(metrics.auth_users)))
    overridden = {key.lower() for key in spec.slurm.options}
    return [(key, value) for key, value in settings if key.lower() not in overridden]


def isolation_settings(spec: Spec) -> list[Setting]:
    """slurm.conf's isolation keys from slurm.isolation, less those slurm.options sets (the
    checks refuse an option that weakens them)."""
    isolation = spec.slurm.isolation
    settings: list[Setting] = []
    if isolation.job_tmpfs:
        if slurm_release(spec) >= NAMESPACE_TYPE_FROM:
            settings.append(("NamespaceType", "namespace/tmpfs"))
        else:
            settings.append(("JobContainerType", "job_container/tmpfs"))
    if isolation.ssh_adopt:
        # The limits of the job's steps on an adopted ssh session, not sshd's.
        settings.append(("LaunchParameters", "ulimit_pam_adopt"))
    if isolation.private_data:
        settings.append(("PrivateData", ",".join(PRIVATE_DATA)))
    overridden = {key.lower() for key in spec.slurm.options}
    return [(key, value) for key, value in settings if key.lower() not in overridden]


def uses_qos(spec: Spec) -> bool:
    preemption = spec.slurm.preemption
    return bool(spec.slurm.qos) or (preemption is not None and preemption.type == "qos")


def unkillable_step_timeout_s(spec: Spec) -> int:
    message_timeout = spec.slurm.option("MessageTimeout") or ""
    seconds = int(message_timeout) if message_timeout.isdigit() else MESSAGE_TIMEOUT_DEFAULT_S
    return max(UNKILLABLE_STEP_TIMEOUT_S, 5 * seconds)


def backfill_parameters(spec: Spec) -> str:
    """bf_window covering the longest finite MaxTime or DefaultTime (minutes), within what
    Slurm accepts; the whole range when a partition's MaxTime is UNLIMITED."""
    limits = [partition_default_time_min(p) for p in spec.slurm.partitions]
    unbounded = False
    for partition in spec.slurm.partitions:
        minutes = parse_slurm_time(str(partition.max_time or "UNLIMITED"))
        unbounded = unbounded or minutes is None
        limits.append(minutes or 0)
    longest = BF_WINDOW_MAX_MIN if unbounded else max(limits)
    window = min(max(longest, BF_WINDOW_MIN_MIN), BF_WINDOW_MAX_MIN)
    resolution = min(max(60, window * 60 // BF_SLOTS), BF_RESOLUTION_MAX_S)
    return f"bf_window={window},bf_resolution={resolution}"


def _slurm_sections(
    cluster: ResolvedCluster, epilog: bool, network: SlurmTopology
) -> list[ConfSection]:
    spec, compute = cluster.spec, cluster.compute
    slurm = spec.slurm
    table = cluster.by_name
    overridden = {key.lower() for key in slurm.options}
    defaults = [
        *((key, slurm.mpi if key == "MpiDefault" else value) for key, value in SLURM_DEFAULTS),
        ("UnkillableStepTimeout", str(unkillable_step_timeout_s(spec))),
        ("SchedulerParameters", backfill_parameters(spec)),
    ]
    sections = [
        ConfSection(
            "Cluster and controllers (slurm.controllers: primary first; slurm.state_save)",
            [("ClusterName", spec.cluster.name)]
            + [
                ("SlurmctldHost", f"{name}({table[name].management_ip})")
                for name in cluster.controllers
            ]
            + [("StateSaveLocation", slurm.state_save.path)],
        ),
        ConfSection(
            "Daemons, paths and defaults (override any of these in slurm.options)",
            [(key, value) for key, value in defaults if key.lower() not in overridden],
        ),
    ]
    resources: list[Setting] = [("SelectType", "select/cons_tres")]
    if any(h.hardware.gpu for h in compute):
        resources.append(("GresTypes", "gpu"))
    resources += [
        ("ProctrackType", "proctrack/cgroup"),
        ("TaskPlugin", "task/cgroup,task/affinity"),
        *isolation_settings(spec),
    ]
    sections.append(ConfSection("Resources and isolation", resources))
    if slurm.accounting is not None:
        # Gathering job usage without storing it makes slurmctld log errors, so
        # the gather plugin comes only with accounting.
        accounting: list[Setting] = [
            ("JobAcctGatherType", "jobacct_gather/cgroup"),
            ("AccountingStorageType", "accounting_storage/slurmdbd"),
            ("AccountingStorageHost", slurm.accounting.host),
            ("AccountingStoragePort", str(slurm.accounting.port)),
            ("AccountingStorageTRES", "gres/gpu"),
        ]
        # QOS act only when enforced; qos implies associations, limits makes QOS limits count.
        if uses_qos(spec) and "accountingstorageenforce" not in overridden:
            accounting.append(("AccountingStorageEnforce", "associations,limits,qos"))
        sections.append(
            ConfSection("Accounting (slurm.accounting; enforcement with QOS)", accounting)
        )
    metrics = metrics_settings(cluster)
    if metrics:
        sections.append(ConfSection("Metrics for Prometheus (monitoring.slurm)", metrics))
    scheduling = _priority_settings(spec) + _preemption_settings(spec)
    if scheduling:
        sections.append(
            ConfSection("Priority and preemption (slurm.priority, slurm.preemption)", scheduling)
        )
    sections += _script_sections(cluster, epilog)
    sections += health_program_section(cluster.spec)
    sections += reboot_section(spec, overridden)
    # topology.yaml, when rendered, names each topology's plugin and is read instead of
    # TopologyPlugin (topology.yaml(5), src/interfaces/topology.c of 25.05).
    if network.kind == "tree":
        sections.append(
            ConfSection("Topology (network.fabric.switches)", [("TopologyPlugin", "topology/tree")])
        )
    elif network.kind == "block":
        sections.append(
            ConfSection("Topology (network.nvlink_domains)", [("TopologyPlugin", "topology/block")])
        )
    options = [(k, str(v)) for k, v in slurm.options.items()]
    if slurm.configless:
        options, configless = configless_parameters(options)
        sections += configless
    if options:
        sections.append(ConfSection("Site options (slurm.options)", list(map(conf_value, options))))
    return sections


# slurm.reboot mode slurm: slurmd runs this once `scontrol reboot` finds the node idle
# (slurm.conf(5) RebootProgram; outputs/slurm/reboot.py renders it).
REBOOT_PROGRAM = "/etc/slurm/clustergen-reboot.sh"


def reboot_section(spec: Spec, overridden: set[str]) -> list[ConfSection]:
    """slurm.reboot mode slurm: RebootProgram, and ResumeTimeout from its timeout_s.
    slurm.conf(5), 22.05 to 24.11: RebootProgram runs on each node once it becomes idle
    after `scontrol reboot`; a node that does not register again within ResumeTimeout
    (seconds; default 60) is marked DOWN ("reboot timed out", scontrol(1) reboot).
    A key slurm.options gives is written there instead."""
    reboot = spec.slurm.reboot
    if reboot is None or reboot.mode != "slurm":
        return []
    settings = [("RebootProgram", REBOOT_PROGRAM), ("ResumeTimeout", str(reboot.timeout_s))]
    kept = [(key, value) for key, value in settings if key.lower() not in overridden]
    return [ConfSection("Reboots rolled by Slurm (slurm.reboot)", kept)] if kept else []


# slurmctld serves the configuration files to slurmd (and to the commands of nodes
# without files) only with this (slurm.conf(5) SlurmctldParameters; SchedMD's
# configless_slurm page, Slurm 20.02 on).
ENABLE_CONFIGLESS = "enable_configless"


def conf_value(setting: Setting) -> Setting:
    """A slurm.options setting as slurm.conf takes it: its value in double quotes where it
    has a space (Slurm's parser reads a quoted value whole, without its quotes)."""
    key, value = setting
    return (key, f'"{value}"' if " " in str(value) else value)


def configless_parameters(options: list[Setting]) -> tuple[list[Setting], list[ConfSection]]:
    """slurm.configless: enable_configless joins the SlurmctldParameters slurm.options
    gives (one line, its values kept in order), or has a section of its own."""
    merged: list[Setting] = []
    for key, value in options:
        if key.lower() == "slurmctldparameters":
            words = [word for word in value.split(",") if word]
            if ENABLE_CONFIGLESS not in {word.lower() for word in words}:
                value = ",".join([*words, ENABLE_CONFIGLESS])
            return [*merged, (key, value), *options[len(merged) + 1 :]], []
        merged.append((key, value))
    title = "Configless (slurm.configless: slurmd fetches these files from slurmctld)"
    return options, [ConfSection(title, [("SlurmctldParameters", ENABLE_CONFIGLESS)])]


def health_epilog_path(cluster: ResolvedCluster) -> str:
    """Where the health Epilog goes: beside the IMEX Epilog in the Epilog directory when
    the Prolog and Epilog start IMEX per job (slurm.conf's Epilog is then a glob)."""
    start = imex_start(cluster)
    if start is not None and start.mode == "prolog":
        return f"{EPILOG_DIR}/{EPILOG_NAME}"
    return f"{SLURM_ETC}/{EPILOG_NAME}"


# Where NHC's packages install it (lbnl-nhc.spec.in: %{_sbindir}/nhc), the path NHC's
# README gives for slurm.conf.
NHC_PROGRAM = "/usr/sbin/nhc"


def health_program_section(spec: Spec) -> list[ConfSection]:
    """slurmd runs LBNL NHC between jobs where software.nhc pins it (slurm.conf(5)
    HealthCheckProgram, HealthCheckInterval, HealthCheckNodeState)."""
    if spec.software.nhc is None:
        return []
    health = spec.slurm.health_check or HealthCheck()
    settings: list[Setting] = [
        ("HealthCheckProgram", NHC_PROGRAM),
        ("HealthCheckInterval", str(health.interval_s)),
        ("HealthCheckNodeState", ",".join(health.node_state)),
    ]
    return [ConfSection("Node health check between jobs: LBNL NHC (software.nhc)", settings)]


def _script_sections(cluster: ResolvedCluster, epilog: bool) -> list[ConfSection]:
    """The health Epilog (slurm.health_check) and how IMEX starts per job (slurm.imex,
    clustergen.resolve.imex_mode): switch/nvidia_imex, or the Prolog and an Epilog of its own."""
    start = imex_start(cluster)
    if start is None or start.mode == "global":
        if not epilog:
            return []
        return [
            ConfSection(
                "Health check (slurm.health_check)", [("Epilog", f"{SLURM_ETC}/{EPILOG_NAME}")]
            )
        ]
    if start.mode == "switch":
        # A site that wrote SwitchType in slurm.options already has its line there.
        overridden = {key.lower() for key in cluster.spec.slurm.options}
        imex: list[Setting] = [] if "switchtype" in overridden else [("SwitchType", SWITCH_IMEX)]
        health = [("Epilog", f"{SLURM_ETC}/{EPILOG_NAME}")] if epilog else []
        return [
            *([ConfSection("Health check (slurm.health_check)", health)] if health else []),
            *([ConfSection("IMEX per job (slurm.imex: a channel per job)", imex)] if imex else []),
        ]
    what = "the IMEX Epilog and the health Epilog" if epilog else "the IMEX Epilog"
    return [
        ConfSection(
            f"IMEX per job (slurm.imex): the Prolog starts it; Epilog runs {what}",
            [("Prolog", PROLOG_PATH), ("Epilog", f"{EPILOG_DIR}/*")],
        )
    ]


def _priority_settings(spec: Spec) -> list[Setting]:
    priority = spec.slurm.priority
    flags = Priority().flags if priority is None else priority.flags
    flag_settings: list[Setting] = [("PriorityFlags", ",".join(flags))] if flags else []
    if priority is None:
        # Billing (what MAX_TRES shapes) is kept by slurmdbd.
        return flag_settings if spec.slurm.accounting is not None else []
    settings: list[Setting] = [("PriorityType", f"priority/{priority.type}"), *flag_settings]
    if priority.weights is not None:
        weights = priority.weights
        if spec.slurm.accounting is not None:
            # Without slurmdbd slurmctld logs "PriorityWeightAge can only be used with
            # SlurmDBD, ignoring" (and so for Fairshare) and sets both to 0.
            settings += [
                ("PriorityWeightAge", str(weights.age)),
                ("PriorityWeightFairshare", str(weights.fairshare)),
            ]
        settings += [
            ("PriorityWeightJobSize", str(weights.job_size)),
            ("PriorityWeightPartition", str(weights.partition)),
            ("PriorityWeightQOS", str(weights.qos)),
        ]
    if priority.decay_half_life is not None:
        settings.append(("PriorityDecayHalfLife", str(priority.decay_half_life)))
    if priority.usage_reset_period is not None:
        settings.append(("PriorityUsageResetPeriod", priority.usage_reset_period))
    if priority.max_age is not None:
        settings.append(("PriorityMaxAge", str(priority.max_age)))
    return settings


def _preemption_settings(spec: Spec) -> list[Setting]:
    preemption = spec.slurm.preemption
    if preemption is None:
        return []
    mode = "SUSPEND,GANG" if preemption.mode == "SUSPEND" else preemption.mode
    return [("PreemptType", f"preempt/{preemption.type}"), ("PreemptMode", mode)]


def _slurmdbd(spec: Spec) -> list[Setting]:
    accounting = spec.slurm.accounting
    assert accounting is not None
    database = accounting.database
    # slurmdbd authenticates as slurmctld does (slurm.options may choose auth/slurm).
    auth = spec.slurm.option("AuthType") or "auth/munge"
    settings: list[Setting] = [
        ("AuthType", auth),
        ("DbdHost", accounting.host),
        ("DbdPort", str(accounting.port)),
        ("SlurmUser", "slurm"),
        ("LogFile", "/var/log/slurm/slurmdbd.log"),
        ("PidFile", "/run/slurmdbd.pid"),
        ("StorageType", "accounting_storage/mysql"),
        ("StorageHost", database.host),
        ("StoragePort", str(database.port)),
        ("StorageLoc", database.name),
        ("StorageUser", database.user),
    ]
    if spec.slurm.isolation.private_data:
        settings.append(("PrivateData", ",".join(PRIVATE_DATA)))
    # slurmdbd must run as the same user as slurmctld.
    user = spec.slurm.option("SlurmUser")
    if user is not None:
        settings = [(k, user if k == "SlurmUser" else v) for k, v in settings]
    return settings


def grace_time(seconds: int) -> str:
    """GraceTime as sacctmgr prints it: [days-]hh:mm:ss."""
    days, rest = divmod(seconds, 86400)
    clock = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{clock}" if days else clock


def _qos_lines(spec: Spec) -> list[QosLine]:
    """Each QOS with every setting clustergen manages, unset ones at slurmdbd's defaults, so
    a QOS changed by hand is set back."""
    lines = []
    for qos in spec.slurm.qos:
        priority = str(qos.priority or 0)
        preempt = ",".join(sorted(qos.preempt))
        mode = (qos.preempt_mode or "cluster").lower()
        grace = qos.grace_time_s or 0
        shown = "|".join((qos.name, priority, preempt, mode, grace_time(grace)))
        settings: list[Setting] = [("Priority", priority)]
        # An empty list is cleared by the script only where slurmdbd holds one.
        settings += [("Preempt", preempt)] if preempt else []
        settings += [("PreemptMode", mode), ("GraceTime", str(grace))]
        lines.append(QosLine(qos.name, shown, settings))
    return lines
