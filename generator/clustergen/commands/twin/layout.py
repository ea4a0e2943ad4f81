"""What the twin runs, decided from the resolved cluster and its rendered Slurm files
before anything starts: which nodes get a slurmd, and the files adapted to the local
daemons (every adaptation listed). Pure functions."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import hostlist

from clustergen.catalog.gpus import profile_gpu_count
from clustergen.commands.twin.conf import (
    SITE_ONLY_ACCOUNTING_SLURM_CONF,
    SITE_ONLY_SLURM_CONF,
    SkippedLine,
    conf_values,
    rewrite_conf,
)
from clustergen.resolve import ResolvedCluster

# Up to this many compute nodes every one gets a slurmd; above it, by default, the
# first DEFAULT_NODES_PER_GROUP of each hardware group (a slurmd costs ~10 MB and
# some CPU at registration; the twin runs on one machine).
MAX_NODES_ALL = 32
DEFAULT_NODES_PER_GROUP = 2

# The slurm.conf keys the twin keeps: scheduling, limits, priorities, timeouts and the
# node and partition lines, none of which names a program, a plugin folder, a script's
# file or a credential. Every other key of the rendered slurm.conf is dropped and listed,
# so the twin runs nothing a spec pull request names, though it runs its daemons as root
# (docs/ci.md "What the twin may be trusted with"): Prolog, Epilog and the other
# programs, PluginDir, JobSubmitPlugins (lua reads job_submit.lua), CliFilterPlugins,
# BurstBufferType, NodeFeaturesPlugins (helpers runs helpers.conf's programs),
# PlugStackConfig (SPANK plugins), JobComp*, the power-saving programs, Include.
TWIN_KEYS = frozenset(
    {
        "accountingstorageenforce", "accountingstoragehost", "accountingstorageport",
        "accountingstoragetres", "accountingstoragetype", "authtype", "batchstarttimeout",
        "clustername", "completewait", "cpufreqdef", "cpufreqgovernors", "credtype",
        "debugflags", "downnodes", "enforcepartlimits", "fairsharedampeningfactor",
        "firstjobid", "gpufreqdef", "grestypes", "inactivelimit", "jobacctgatherfrequency",
        "jobacctgatherparams", "jobacctgathertype", "jobrequeue", "killonbadexit",
        "killwait", "launchparameters", "maxarraysize", "maxjobcount", "maxjobid",
        "maxstepcount", "maxtaskspernode", "messagetimeout", "minjobage", "mpidefault",
        "mpiparams", "nodename", "nodeset", "overtimelimit", "partitionname",
        "preemptexempttime", "preemptmode", "preemptparameters", "preempttype",
        "privatedata", "proctracktype", "prologepilogtimeout", "prologflags",
        "propagateprioprocess", "propagateresourcelimits", "propagateresourcelimitsexcept",
        "reconfigflags", "requeueexit", "requeueexithold", "resvoverrun", "returntoservice",
        "schedulerparameters", "schedulertimeslice", "schedulertype", "selecttype",
        "selecttypeparameters", "slurmctlddebug", "slurmctldhost", "slurmctldlogfile",
        "slurmctldparameters", "slurmctldpidfile", "slurmctldport", "slurmctldtimeout",
        "slurmddebug", "slurmdlogfile", "slurmdparameters", "slurmdpidfile", "slurmdport",
        "slurmdspooldir", "slurmdtimeout", "slurmuser", "slurmduser", "statesavelocation",
        "switchtype", "taskplugin", "taskpluginparam", "tcptimeout", "topologyparam",
        "topologyplugin", "treewidth", "unkillablesteptimeout", "vsizefactor", "waittime",
    }
)  # fmt: skip
# Key families of the same kind: per-job defaults and limits (DefMemPerCPU, MaxMemPerNode,
# ...), priority weights and settings, and other timeouts.
_TWIN_KEY_PREFIXES = ("def", "max", "min", "priority")
_TWIN_KEY_SUFFIXES = ("timeout",)
# The rendered Slurm files the twin writes beside its slurm.conf: data its daemons read,
# never a script (the rendered Epilog and health checks are for the real nodes).
TWIN_FILES = frozenset(
    {"slurm.conf", "cgroup.conf", "gres.conf", "topology.conf", "topology.yaml", "slurmdbd.conf"}
)


def twin_keeps(key: str) -> bool:
    """Whether the twin keeps a slurm.conf key (lower-case) of the rendered file."""
    return (
        key in TWIN_KEYS or key.startswith(_TWIN_KEY_PREFIXES) or key.endswith(_TWIN_KEY_SUFFIXES)
    )


@dataclass(frozen=True)
class TwinNode:
    name: str
    hardware: str
    gpu_count: int


@dataclass(frozen=True)
class NodeChoice:
    started: tuple[TwinNode, ...]
    not_started: tuple[str, ...]
    subset: bool  # a representative subset per hardware group, not every node

    def describe(self) -> list[str]:
        started = hostlist.collect_hostlist([node.name for node in self.started])
        if not self.subset:
            return [f"nodes: one slurmd per compute node, {len(self.started)}: {started}"]
        groups: dict[str, list[str]] = {}
        for node in self.started:
            groups.setdefault(node.hardware, []).append(node.name)
        lines = [
            f"nodes: a representative subset, {len(self.started)} of "
            f"{len(self.started) + len(self.not_started)} compute nodes: "
            + "; ".join(
                f"{hostlist.collect_hostlist(names)} for hardware {hardware}"
                for hardware, names in groups.items()
            )
        ]
        if self.not_started:
            lines.append(
                f"not started (set DOWN): {hostlist.collect_hostlist(list(self.not_started))}"
            )
        return lines


def choose_nodes(cluster: ResolvedCluster, nodes_per_group: int | None) -> NodeChoice:
    """Every compute node, or the first `nodes_per_group` of each hardware group (by
    default only when there are more than MAX_NODES_ALL), plus the first node of any
    partition that would otherwise have none, so that every partition can run a job."""
    compute = cluster.compute
    if nodes_per_group is None and len(compute) > MAX_NODES_ALL:
        nodes_per_group = DEFAULT_NODES_PER_GROUP
    chosen: set[str] = set()
    per_group: dict[str, int] = {}
    for host in compute:
        taken = per_group.get(host.hardware_name, 0)
        if nodes_per_group is None or taken < nodes_per_group:
            per_group[host.hardware_name] = taken + 1
            chosen.add(host.name)
    compute_names = {host.name for host in compute}
    for members in cluster.partition_nodes:
        in_partition = [name for name in members if name in compute_names]
        if in_partition and not chosen.intersection(in_partition):
            chosen.add(in_partition[0])
    started = tuple(
        TwinNode(host.name, host.hardware_name, profile_gpu_count(host.hardware))
        for host in compute
        if host.name in chosen
    )
    not_started = tuple(host.name for host in compute if host.name not in chosen)
    return NodeChoice(started, not_started, bool(not_started))


@dataclass(frozen=True)
class TwinPaths:
    """Configuration (etc), state, logs, pid files, MariaDB, client wrappers (bin)."""

    root: Path
    # slurmstepd's Unix sockets live in the spool, and a socket path must fit in 108
    # bytes: the spool gets a short path of its own (e.g. under /run).
    spool: Path
    etc: Path
    state: Path
    log: Path
    run: Path
    db: Path
    bin: Path

    @classmethod
    def under(cls, root: Path, spool: Path) -> TwinPaths:
        """The directories below root (made here), and the spool (made here too)."""
        names = ("etc", "state", "log", "run", "db", "bin")
        paths = cls(root, spool, *(root / name for name in names))
        for directory in (spool, *(root / name for name in names)):
            directory.mkdir(parents=True, exist_ok=True)
        return paths

    @property
    def slurm_conf(self) -> Path:
        return self.etc / "slurm.conf"


@dataclass(frozen=True)
class AdaptedConf:
    text: str
    dropped: list[SkippedLine]  # rendered lines removed, with why
    overridden: list[str]  # rendered lines replaced by the twin's values
    added: list[str]  # `Key=value` lines the twin sets


def controller_name(rendered_conf: str) -> str:
    hosts = conf_values(rendered_conf, "SlurmctldHost")
    return hosts[0].split("(", 1)[0] if hosts else "localhost"


def uses_slurmdbd(rendered_conf: str) -> bool:
    storage = [value.lower() for value in conf_values(rendered_conf, "AccountingStorageType")]
    return "accounting_storage/slurmdbd" in storage


def adapt_slurm_conf(
    rendered: str,
    *,
    controller: str,
    controller_address: str,
    paths: TwinPaths,
    slurm_version: str,
    known_keys: frozenset[str],
    dbd_port: int,
) -> AdaptedConf:
    """The rendered slurm.conf for the twin: site addresses, credentials and paths
    replaced; keys the local Slurm lacks dropped; plugins the namespaces cannot serve
    (cgroups) replaced by ones that need nothing."""
    replace = {
        "SlurmctldHost": f"{controller}({controller_address})",
        "AuthType": "auth/none",  # no MUNGE key on this machine
        "CredType": "cred/none",
        "SlurmUser": "root",
        "SlurmdUser": "root",
        "StateSaveLocation": str(paths.state),
        # %n: each slurmd its own spool, pid and log, named after its node.
        "SlurmdSpoolDir": str(paths.spool / "%n"),
        "SlurmctldPidFile": str(paths.run / "slurmctld.pid"),
        "SlurmdPidFile": str(paths.run / "slurmd-%n.pid"),
        "SlurmctldLogFile": str(paths.log / "slurmctld.log"),
        "SlurmdLogFile": str(paths.log / "slurmd-%n.log"),
        # The namespaces have no cgroup hierarchy of their own.
        "ProctrackType": "proctrack/linuxproc",
        "TaskPlugin": "task/none",
        # The twin's nodes are this machine: take the rendered CPUs and memory as given.
        "SlurmdParameters": "config_overrides",
    }
    if conf_values(rendered, "JobAcctGatherType"):
        replace["JobAcctGatherType"] = "jobacct_gather/linux"
    drop = set(SITE_ONLY_SLURM_CONF)
    # Contain (and X11, which implies it) needs proctrack/cgroup; slurmctld says so.
    for flags in conf_values(rendered, "PrologFlags")[-1:]:
        kept = [flag for flag in flags.split(",") if flag.lower() not in ("contain", "x11")]
        if kept:
            replace["PrologFlags"] = ",".join(kept)
        else:
            drop.add("prologflags")
    # The per-job /tmp (job_container/tmpfs, namespace/tmpfs) needs Contain, gone above,
    # and would mount under job_container.conf's BasePath on this machine.
    drop |= {"jobcontainertype", "namespacetype"}
    if uses_slurmdbd(rendered):
        replace["AccountingStorageHost"] = "localhost"
        replace["AccountingStoragePort"] = str(dbd_port)
        drop |= SITE_ONLY_ACCOUNTING_SLURM_CONF
    rewrite = rewrite_conf(
        rendered,
        replace=replace,
        drop=drop,
        known_keys=known_keys,
        keep=twin_keeps,
        keep_reason="not on the twin's list of keys it keeps (twin/layout.py TWIN_KEYS): the "
        "twin runs no program, plugin or script a spec names",
        unknown_reason=f"not a slurm.conf key of the local Slurm {slurm_version}",
        banner="clustergen twin: overrides for the local daemons",
    )
    return AdaptedConf(
        rewrite.text,
        rewrite.skipped,
        rewrite.overridden,
        [f"{key}={value}" for key, value in replace.items()],
    )


def adapt_cgroup_conf(rendered: str) -> str:
    # Autodetection fails in a network namespace ("No filesystem mounted on
    # /sys/fs/cgroup"); with task/none and proctrack/linuxproc nothing uses it.
    return rewrite_conf(
        rendered,
        replace={"CgroupPlugin": "cgroup/v1"},
        banner="clustergen twin: overrides for the local daemons",
    ).text


_CORES = re.compile(r"\s+Cores=([0-9,-]+)")


def adapt_gres_conf(rendered: str, cores: int) -> tuple[str, list[str]]:
    """gres.conf without the Cores= that name a core this machine lacks (slurmd checks
    Cores= against the CPUs it runs on: "Invalid GRES data"), and what was dropped. The
    rendered affinity stays proven by its own test on a table fitted to this machine."""
    dropped: list[str] = []

    def fit(line: str) -> str:
        match = _CORES.search(line)
        if match is None:
            return line
        highest = max(int(part.split("-")[-1]) for part in match[1].split(","))
        if highest < cores:
            return line
        dropped.append(match[0].strip())
        return line[: match.start()] + line[match.end() :]

    lines = [fit(line) for line in rendered.splitlines(keepends=True)]
    notes = (
        [f"gres.conf: {', '.join(dict.fromkeys(dropped))} dropped (this machine has {cores} cores)"]
        if dropped
        else []
    )
    return "".join(lines), notes
