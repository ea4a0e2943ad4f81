"""slurm.conf keys each Slurm version's parser accepts, and the keys clustergen writes itself.

Source of slurm_keys/*.txt: the slurm_conf_options table (s_p_options_t) of
src/common/read_config.c at SchedMD's tag slurm-YY-MM-0-1 of each release: a key the
table marks _defunct_option is "defunct" (the daemon logs "error: The option ... is
defunct" and ignores it); a key whose value read_config.c answers with fatal("... has
been removed") is "removed" (slurmctld stops).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

from clustergen.catalog.versions import VersionTuple, parse_version

KEY_LIST_VERSIONS: tuple[VersionTuple, ...] = (
    (22, 5),
    (23, 2),
    (23, 11),
    (24, 5),
    (24, 11),
    (25, 5),
    (25, 11),
    (26, 5),
)

# Keys clustergen derives from the spec, with the spec key that sets them.
DERIVED_KEYS: dict[str, str] = {
    "ClusterName": "cluster.name",
    "SlurmctldHost": "slurm.controllers",
    "NodeName": "nodes and hardware",
    "PartitionName": "slurm.partitions",
    "GresTypes": "hardware.*.gpu",
    "SelectType": "(always select/cons_tres)",
    "ProctrackType": "(always proctrack/cgroup)",
    "TaskPlugin": "(always task/cgroup,task/affinity)",
    "JobAcctGatherType": "slurm.accounting (jobacct_gather/cgroup with accounting)",
    "TopologyPlugin": "network.fabric.switches and network.nvlink_domains (docs/slurm.md)",
    "AccountingStorageType": "slurm.accounting",
    "AccountingStorageHost": "slurm.accounting.host",
    "AccountingStoragePort": "slurm.accounting.port",
    "AccountingStorageTRES": "slurm.accounting",
    "PriorityType": "slurm.priority.type",
    "PriorityWeightAge": "slurm.priority.weights.age",
    "PriorityWeightFairshare": "slurm.priority.weights.fairshare",
    "PriorityWeightJobSize": "slurm.priority.weights.job_size",
    "PriorityWeightPartition": "slurm.priority.weights.partition",
    "PriorityWeightQOS": "slurm.priority.weights.qos",
    "PriorityDecayHalfLife": "slurm.priority.decay_half_life",
    "PriorityUsageResetPeriod": "slurm.priority.usage_reset_period",
    "PriorityMaxAge": "slurm.priority.max_age",
    "PriorityFlags": "slurm.priority.flags",
    "StateSaveLocation": "slurm.state_save.path",
    "PreemptType": "slurm.preemption.type",
    "PreemptMode": "slurm.preemption.mode",
    "Epilog": "slurm.health_check.epilog",
    "HealthCheckProgram": "software.nhc",
    "HealthCheckInterval": "slurm.health_check.interval_s",
    "HealthCheckNodeState": "slurm.health_check.node_state",
    "MpiDefault": "slurm.mpi",
    "DownNodes": "(not supported: drain nodes with scontrol)",
    "NodeSet": "(not supported: use partitions)",
    "FrontendName": "(not supported)",
}

# PrivateData with slurm.isolation.private_data: every user sees only their own jobs, usage
# and user record (slurm.conf(5) and slurmdbd.conf(5) PrivateData; each value accepted by
# both since before 22.05).
PRIVATE_DATA: tuple[str, ...] = ("jobs", "usage", "users")

# slurm.conf keys whose value is a password (slurm.conf is world-readable on every node;
# slurm.conf(5) AccountingStoragePass, JobCompPass): lower case -> as written.
SECRET_KEYS = {key.lower(): key for key in ("AccountingStoragePass", "JobCompPass")}

# Accepted by some parsers but deprecated: refused with the replacement.
DEPRECATED_KEYS: dict[str, str] = {
    "ControlMachine": "slurm.controllers (written as SlurmctldHost)",
    "ControlAddr": "slurm.controllers (written as SlurmctldHost)",
    "BackupController": "slurm.controllers (written as SlurmctldHost)",
    "BackupAddr": "slurm.controllers (written as SlurmctldHost)",
}


def release_name(version: VersionTuple) -> str:
    """(22, 5) -> '22.05', as Slurm names its releases."""
    return f"{version[0]}.{version[1]:02d}"


def key_list_version(slurm_version: str) -> VersionTuple | None:
    """The newest key list not newer than the pinned version; None if older than all."""
    pinned = parse_version(slurm_version)[:2]
    candidates = [v for v in KEY_LIST_VERSIONS if v <= pinned]
    return max(candidates) if candidates else None


@dataclass(frozen=True)
class SlurmKey:
    name: str  # as Slurm spells it
    defunct: bool  # parsed, but slurmctld logs an error and ignores it
    removed: bool = False  # parsed, but slurmctld stops with a fatal error
    note: str = ""  # the list's note, e.g. "removed: fatal, but FastSchedule=1 ..."


@cache
def accepted_keys(list_version: VersionTuple) -> dict[str, SlurmKey]:
    """Lowercased key -> SlurmKey, for one key list.

    A list line is a key, optionally followed by a note in parentheses, e.g.
    "SchedulerAuth (defunct: error logged, ignored)" or
    "SallocDefaultCommand (removed: fatal)"; lines starting with # are comments.
    """
    name = f"slurm.conf-{release_name(list_version)}.txt"
    text = (resources.files("clustergen.catalog") / "slurm_keys" / name).read_text()
    keys = {}
    for line in text.splitlines():
        key, _, note = line.strip().partition(" ")
        if key and not key.startswith("#"):
            note = note.strip().strip("()")
            keys[key.lower()] = SlurmKey(
                key,
                defunct=note.startswith("defunct"),
                removed=note.startswith("removed"),
                note=note,
            )
    return keys
