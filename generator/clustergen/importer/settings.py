"""slurm.conf's global keys: the ones the spec models become slurm.* keys, every other
key the pinned Slurm release accepts goes to slurm.options as written; the rest is
reported. Where the original leaves a key to Slurm's default and clustergen would write
its own, the import writes Slurm's default into slurm.options, so the render keeps it."""

from __future__ import annotations

import ipaddress
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from clustergen.catalog.folders import PROC, RELATIVE, system_folder, user_writable
from clustergen.catalog.slurm_keys import (
    DEPRECATED_KEYS,
    DERIVED_KEYS,
    SECRET_KEYS,
    accepted_keys,
    key_list_version,
)
from clustergen.catalog.slurm_programs import slurm_option_paths
from clustergen.importer.records import (
    ImportNotes,
    SlurmConf,
    Unrepresented,
    conf_number,
    expand_names,
)
from clustergen.importer.shapes import (
    IsolationShape,
    PreemptionShape,
    PriorityShape,
    SlurmShape,
    StateSaveShape,
)

# The Slurm release an imported spec pins until the admin sets the cluster's own
# (software.slurm); its key list decides what slurm.options may carry.
PINNED_SLURM = "24.11.5"

# Slurm's own defaults (slurm.conf(5) of 22.05, each key's "default"), for the keys whose
# default clustergen replaces (outputs/slurm/derive.py SLURM_DEFAULTS, UnkillableStepTimeout,
# SchedulerParameters). Written into slurm.options when the original does not set the key,
# so a first render keeps what the cluster runs with.
SLURM_BUILTIN_DEFAULTS: dict[str, str] = {
    "SlurmUser": "root",
    "SlurmctldPort": "6817",
    "SlurmdPort": "6818",
    "AuthType": "auth/munge",
    "CredType": "cred/munge",
    "SlurmdSpoolDir": "/var/spool/slurmd",
    "SlurmctldPidFile": "/var/run/slurmctld.pid",
    "SlurmdPidFile": "/var/run/slurmd.pid",
    "SchedulerType": "sched/backfill",
    "ReturnToService": "0",
    "PrologEpilogTimeout": "65534",
    "EnforcePartLimits": "NO",
    "UnkillableStepTimeout": "60",
    # bf_window and bf_resolution as slurm.conf(5) gives their defaults (minutes, seconds).
    "SchedulerParameters": "bf_window=1440,bf_resolution=60",
}
# Keys clustergen writes that have no value meaning "Slurm's default": the render changes
# them on a cluster that does not set them; said on stderr and in the spec's header.
NO_DEFAULT_SPELLING: dict[str, str] = {
    "SlurmctldLogFile": "/var/log/slurm/slurmctld.log (Slurm's default: syslog)",
    "SlurmdLogFile": "/var/log/slurm/slurmd.log (Slurm's default: syslog)",
    "SelectTypeParameters": "CR_Core_Memory",
    "PropagateResourceLimitsExcept": "MEMLOCK",
    "PrologFlags": "Alloc,Contain",
}
# Derived keys whose only value is clustergen's: accepted when the original says the same.
FIXED: dict[str, str] = {
    "selecttype": "select/cons_tres",
    "proctracktype": "proctrack/cgroup",
    "taskplugin": "task/cgroup,task/affinity",
    "jobacctgathertype": "jobacct_gather/cgroup",
    "grestypes": "gpu",
    "accountingstoragetres": "gres/gpu",
    "topologyplugin": "topology/tree",
}
# The folders the slurm role gives to Slurm (checks/slurm.py _CHOWNED_FOLDERS): key ->
# whether the value is the folder itself; one under a system folder is refused there.
CHOWNED = {"slurmctldlogfile": False, "slurmdlogfile": False, "slurmdspooldir": True}
PRIORITY_WEIGHTS = {
    "priorityweightage": "age",
    "priorityweightfairshare": "fairshare",
    "priorityweightjobsize": "job_size",
    "priorityweightpartition": "partition",
    "priorityweightqos": "qos",
}
PRIORITY_TIMES: dict[str, Literal["decay_half_life", "usage_reset_period", "max_age"]] = {
    "PriorityDecayHalfLife": "decay_half_life",
    "PriorityUsageResetPeriod": "usage_reset_period",
    "PriorityMaxAge": "max_age",
}
PRIORITY_FLAGS = {
    "ACCRUE_ALWAYS", "CALCULATE_RUNNING", "DEPTH_OBLIVIOUS", "NO_FAIR_TREE", "INCR_ONLY",
    "MAX_TRES", "NO_NORMAL_ALL", "NO_NORMAL_ASSOC", "NO_NORMAL_PART", "NO_NORMAL_QOS",
    "NO_NORMAL_TRES", "SMALL_RELATIVE_TO_TIME",
}  # fmt: skip
# Keys read here into slurm.* (besides FIXED and the priority weights).
HANDLED = frozenset(
    {
        "clustername", "slurmctldhost", "controlmachine", "controladdr", "backupcontroller",
        "backupaddr", "statesavelocation", "accountingstoragetype", "accountingstoragehost",
        "accountingstorageport", "prioritytype", "prioritydecayhalflife",
        "priorityusageresetperiod", "prioritymaxage", "priorityflags", "preempttype",
        "preemptmode", "mpidefault", "privatedata", "jobcontainertype",
    }
)  # fmt: skip


@dataclass
class ControllerHosts:
    """The hosts slurm.conf names for slurmctld and slurmdbd."""

    controllers: list[str] = field(default_factory=list)
    service_hosts: dict[str, list[str]] = field(default_factory=dict)  # not compute nodes
    roles_on_compute: list[tuple[str, str]] = field(default_factory=list)
    compute: set[str] = field(default_factory=set)

    @property
    def needs_controller_profile(self) -> bool:
        return bool(self.service_hosts)

    def add(self, name: str, role: str) -> None:
        if name in self.compute:
            self.roles_on_compute.append((name, role))
            return
        roles = self.service_hosts.setdefault(name, [])
        if role not in roles:
            roles.append(role)


def _controllers(conf: SlurmConf, report: Callable[[Unrepresented], None]) -> list[str]:
    names = [value.split("(", 1)[0] for _, value in conf.lines_of("SlurmctldHost")]
    if not names:
        for _, value in conf.lines_of("ControlMachine") + conf.lines_of("BackupController"):
            names += value.split(",")
    for line, value in conf.lines_of("ControlAddr") + conf.lines_of("BackupAddr"):
        report(
            Unrepresented(
                line.where,
                f"{line.pairs[0][0]}={value}",
                "the controller's address is its "
                "node group's management_ip (SlurmctldHost=name(management_ip))",
            )
        )
    return list(dict.fromkeys(n for n in names if n))


def _priority(
    conf: SlurmConf, accounting: bool, report: Callable[[Unrepresented], None]
) -> PriorityShape | None:
    kind = (conf.value("PriorityType") or "priority/basic").split("/")[-1]
    flags = [f for f in (conf.value("PriorityFlags") or "").upper().split(",") if f]
    unknown = [f for f in flags if f not in PRIORITY_FLAGS]
    for line, value in conf.lines_of("PriorityFlags"):
        if unknown:
            report(
                Unrepresented(
                    line.where, f"PriorityFlags={value}", f"{','.join(unknown)} not modelled"
                )
            )
    flags = [f for f in flags if f in PRIORITY_FLAGS]
    if kind != "multifactor":
        return {"type": "basic", "flags": flags} if accounting or flags else None
    priority: PriorityShape = {"type": "multifactor"}
    given = {name: conf.value(key) for key, name in PRIORITY_WEIGHTS.items()}
    weights = {name: int(v) for name, v in given.items() if v is not None and v.isdigit()}
    if weights:
        priority["weights"] = weights
    for key, name in PRIORITY_TIMES.items():
        found = conf.value(key)
        if found is not None:
            priority[name] = found.upper() if name == "usage_reset_period" else found
    priority["flags"] = flags
    return priority


def _preemption(conf: SlurmConf) -> PreemptionShape | None:
    kind = (conf.value("PreemptType") or "preempt/none").split("/")[-1]
    mode = (conf.value("PreemptMode") or "OFF").upper().split(",")[0]
    if kind == "none":
        return None
    return {"type": kind, "mode": mode}


def global_settings(
    conf: SlurmConf, result: ImportNotes, report: Callable[[Unrepresented], None]
) -> tuple[SlurmShape, ControllerHosts]:
    hosts = ControllerHosts(compute={name for r in conf.nodes for name in _names(r.name)})
    hosts.controllers = _controllers(conf, report)
    for name in hosts.controllers:
        hosts.add(name, "slurm_controller")
    slurm: SlurmShape = {"controllers": hosts.controllers}
    accounting = has_slurmdbd(conf)
    if accounting:
        host = conf.value("AccountingStorageHost") or (hosts.controllers or ["localhost"])[0]
        if _is_address(host):
            for line, _ in conf.lines_of("AccountingStorageHost")[-1:]:
                report(
                    Unrepresented(
                        line.where,
                        f"AccountingStorageHost={host}",
                        "an address, where the spec names hosts: slurmdbd's host is imported "
                        "as the node 'slurmdbd' (give it the name and management_ip of the "
                        f"host at {host})",
                    )
                )
            host = "slurmdbd"
        hosts.add(host, "slurm_dbd")
        slurm["accounting"] = {"host": host}
        for line, port in conf.lines_of("AccountingStoragePort")[-1:]:
            slurm["accounting"]["port"] = conf_number(line.where, "AccountingStoragePort", port)
    state: StateSaveShape = {}
    for line, path in conf.lines_of("StateSaveLocation")[-1:]:
        if _in_system_folder(path, True):
            report(
                Unrepresented(
                    line.where,
                    f"StateSaveLocation={path}",
                    f"the slurm role would chown {path}, a system folder (and /tmp is "
                    "emptied at boot, losing every job): the render writes clustergen's "
                    "(slurm.state_save.path; move the state there)",
                )
            )
        else:
            state["path"] = path
    if len(hosts.controllers) > 1:
        # A backup controller takes over only from state both controllers mount.
        state["shared"] = True
        result.changes.append(
            "slurm.state_save.shared: true, as the running cluster has a backup controller: "
            "check that StateSaveLocation is on storage both controllers mount"
        )
    if state:
        slurm["state_save"] = state
    if (priority := _priority(conf, accounting, report)) is not None:
        slurm["priority"] = priority
    if (preemption := _preemption(conf)) is not None:
        slurm["preemption"] = preemption
    mpi = (conf.value("MpiDefault") or "none").lower()
    slurm["isolation"] = _isolation(conf)
    options = _options(conf, result, report, mpi)
    if mpi in ("none", "pmix"):
        slurm["mpi"] = mpi
    if options:
        slurm["options"] = options
    return slurm, hosts


def _names(expression: str) -> list[str]:
    return expand_names(expression)


def has_slurmdbd(conf: SlurmConf) -> bool:
    """slurm.conf sends accounting to slurmdbd (which alone keeps QOS)."""
    return (conf.value("AccountingStorageType") or "").endswith("/slurmdbd")


def _isolation(conf: SlurmConf) -> IsolationShape:
    private = {w.lower() for w in (conf.value("PrivateData") or "").split(",") if w}
    return {
        "private_data": {"jobs", "usage", "users"} <= private,
        "job_tmpfs": (conf.value("JobContainerType") or "").lower() == "job_container/tmpfs",
        "ssh_adopt": "contain" in (conf.value("PrologFlags") or "").lower(),
    }


def _options(
    conf: SlurmConf, result: ImportNotes, report: Callable[[Unrepresented], None], mpi: str
) -> dict[str, str]:
    release = key_list_version(PINNED_SLURM)
    assert release is not None
    known = accepted_keys(release)
    derived = {k.lower() for k in DERIVED_KEYS} | {k.lower() for k in DEPRECATED_KEYS}
    options: dict[str, str] = {}
    for line, key, value in conf.globals:
        lower = key.lower()
        if lower in FIXED:
            if value.lower() != FIXED[lower] and not (lower == "grestypes" and value == ""):
                report(
                    Unrepresented(line.where, f"{key}={value}", f"clustergen writes {FIXED[lower]}")
                )
            continue
        if lower in HANDLED or lower in PRIORITY_WEIGHTS:
            if lower == "mpidefault" and mpi not in ("none", "pmix"):
                report(Unrepresented(line.where, f"{key}={value}", "slurm.mpi is none or pmix"))
            if lower == "privatedata" and not _isolation(conf)["private_data"]:
                options[key] = value
                result.option_sources[key] = line.where
            if lower == "jobcontainertype" and not _isolation(conf)["job_tmpfs"]:
                options[key] = value
                result.option_sources[key] = line.where
            continue
        if lower in CHOWNED and _in_system_folder(value, CHOWNED[lower]):
            folder = value if CHOWNED[lower] else posixpath.dirname(value)
            report(
                Unrepresented(
                    line.where,
                    f"{key}={value}",
                    f"the slurm role would chown {folder}, a system folder: the render "
                    "writes clustergen's path (move it)",
                )
            )
            continue
        entry = known.get(lower)
        if entry is None or entry.removed or entry.defunct or lower in derived:
            why = (
                entry.note
                if entry is not None and entry.note
                else (
                    f"not a Slurm {PINNED_SLURM} slurm.conf key"
                    if entry is None
                    else f"derived from the spec ({DERIVED_KEYS.get(entry.name, 'see docs')})"
                )
            )
            report(Unrepresented(line.where, f"{key}={value}", why))
            continue
        if lower in SECRET_KEYS:
            report(
                Unrepresented(
                    line.where,
                    f"{key}=(a password: not shown)",
                    "clustergen writes no password into slurm.conf, which every node can "
                    "read: slurmdbd's database password is the vault variable "
                    "vault_slurmdbd_storage_pass (docs/security.md)",
                )
            )
            continue
        untrusted = _untrusted(key, value, conf)
        if untrusted:
            report(Unrepresented(line.where, f"{key}={value}", untrusted))
            continue
        options[key] = value
        result.option_sources[key] = line.where
    _builtin_defaults(options, result)
    return options


def _untrusted(key: str, value: str, conf: SlurmConf) -> str | None:
    """Why a program, plugin folder or key file the option names may not be imported: it
    lies where users can write (checks/trusted_paths.py refuses it in a spec)."""
    context = {k: v for _, k, v in conf.globals if k.lower() == "jobcomptype"}
    for named, path, trust in slurm_option_paths({**context, key: value}):
        where = user_writable(path)
        if where is not None and named == key:
            place = {RELATIVE: "is a relative path", PROC: "leads through /proc"}.get(
                where, f"lies in {where}"
            )
            return (
                f"{path} {place}, where users can write, and {trust}: install it where only "
                "root writes and name that path"
            )
    return None


def _is_address(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _in_system_folder(path: str, is_folder: bool) -> bool:
    if not path.startswith("/"):
        return False
    return system_folder(path if is_folder else posixpath.dirname(path)) is not None


def _builtin_defaults(options: dict[str, str], result: ImportNotes) -> None:
    given = {k.lower() for k in options}
    for key, value in SLURM_BUILTIN_DEFAULTS.items():
        if key.lower() not in given:
            options[key] = value
            result.option_sources[key] = "Slurm's default, which the original relies on"
    for key, written in NO_DEFAULT_SPELLING.items():
        if key.lower() not in given:
            result.changes.append(f"{key}: not set in the original; render writes {written}")
