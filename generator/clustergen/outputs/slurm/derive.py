"""The Slurm family's derive step: everything its templates print, ready to print.

Templates only lay values out; hostlists, GRES strings, memory arithmetic and
key order are decided here, from the resolved cluster.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import hostlist

from clustergen.catalog.gpus import GPU_MODELS
from clustergen.hosts import Host
from clustergen.model import Spec
from clustergen.model.hardware import HardwareProfile
from clustergen.resolve import Cluster

SLURM_ETC = "/etc/slurm"
EPILOG_NAME = "health-epilog.sh"

# slurm.conf settings clustergen writes unless slurm.options sets them: site paths,
# ports and sensible defaults for a GPU cluster.
SLURM_DEFAULTS: tuple[tuple[str, str], ...] = (
    ("SlurmUser", "slurm"),
    ("SlurmctldPort", "6817"),
    ("SlurmdPort", "6818"),
    ("AuthType", "auth/munge"),
    ("CredType", "cred/munge"),
    ("StateSaveLocation", "/var/spool/slurmctld"),
    ("SlurmdSpoolDir", "/var/spool/slurmd"),
    ("SlurmctldPidFile", "/run/slurmctld.pid"),
    ("SlurmdPidFile", "/run/slurmd.pid"),
    ("SlurmctldLogFile", "/var/log/slurm/slurmctld.log"),
    ("SlurmdLogFile", "/var/log/slurm/slurmd.log"),
    ("SchedulerType", "sched/backfill"),
    ("SelectTypeParameters", "CR_Core_Memory"),
    ("MpiDefault", "none"),
    ("ReturnToService", "2"),
)

Setting = tuple[str, str]


@dataclass(frozen=True)
class ConfSection:
    title: str
    settings: list[Setting]


@dataclass(frozen=True)
class NodeLine:
    names: str  # compressed hostlist
    settings: list[Setting]


@dataclass(frozen=True)
class GresLine:
    names: str
    gres_type: str
    files: str
    cores: str | None = None  # Cores= from the profile's topology table, one line per GPU


@dataclass(frozen=True)
class SwitchLine:
    name: str
    nodes: str | None
    switches: str | None


@dataclass(frozen=True)
class GpuNodeCheck:
    """Epilog: nodes that must show this many GPUs."""

    names: list[str]
    gpu_count: int


@dataclass(frozen=True)
class SlurmContext:
    sections: list[ConfSection]
    nodes: list[NodeLine]
    partitions: list[NodeLine]
    gres: list[GresLine]
    topology: list[SwitchLine]
    cgroup: list[Setting]
    slurmdbd: list[Setting] | None
    password_variable: str | None
    epilog_checks: list[GpuNodeCheck] | None
    max_gpu_temp_c: int


_NUMBERED = re.compile(r"^(.*?)([0-9]+)$")


def compress(names: Sequence[str]) -> str:
    """Slurm hostlist of names, e.g. gpu[01-08], exactly as python-hostlist writes it.

    The common case (one prefix, numbers of one width) is folded here in one pass;
    python-hostlist is slow on thousands of names and handles every other case.
    """
    matches = [_NUMBERED.match(name) for name in names]
    if len(names) < 2 or any(m is None for m in matches):
        return str(hostlist.collect_hostlist(list(names)))
    prefixes = {m[1] for m in matches if m is not None}
    widths = {len(m[2]) for m in matches if m is not None}
    numbers = sorted({int(m[2]) for m in matches if m is not None})
    if len(prefixes) != 1 or len(widths) != 1 or len(numbers) != len(names):
        return str(hostlist.collect_hostlist(list(names)))
    (prefix,), (width,) = prefixes, widths
    ranges = []
    start = previous = numbers[0]
    for number in [*numbers[1:], None]:
        if number is not None and number == previous + 1:
            previous = number
            continue
        low, high = f"{start:0{width}d}", f"{previous:0{width}d}"
        ranges.append(low if start == previous else f"{low}-{high}")
        if number is not None:
            start = previous = number
    return f"{prefix}[{','.join(ranges)}]"


def gres_type(profile: HardwareProfile) -> str | None:
    if profile.gpu is None:
        return None
    return profile.gpu.gres_type or GPU_MODELS[profile.gpu.model].gres_type


def real_memory_mib(profile: HardwareProfile) -> int:
    return (profile.memory_gib - (profile.reserved_memory_gib or 0)) * 1024


def derive_slurm(cluster: Cluster) -> SlurmContext:
    spec, compute = cluster.spec, cluster.compute
    health = spec.slurm.health_check
    epilog = health is not None and health.epilog
    accounting = spec.slurm.accounting
    return SlurmContext(
        sections=_slurm_sections(cluster, epilog),
        nodes=_node_lines(spec, compute),
        partitions=_partition_lines(cluster),
        gres=_gres_lines(spec, compute),
        topology=_switch_lines(cluster),
        cgroup=[
            ("ConstrainCores", "yes"),
            ("ConstrainDevices", "yes"),
            ("ConstrainRAMSpace", "yes"),
        ],
        slurmdbd=_slurmdbd(spec) if accounting else None,
        password_variable=accounting.database.password_variable if accounting else None,
        epilog_checks=_epilog_checks(spec, compute) if epilog else None,
        max_gpu_temp_c=health.max_gpu_temp_c if health else 0,
    )


def _slurm_sections(cluster: Cluster, epilog: bool) -> list[ConfSection]:
    spec, compute = cluster.spec, cluster.compute
    slurm = spec.slurm
    table = cluster.by_name
    overridden = {key.lower() for key in slurm.options}
    sections = [
        ConfSection(
            "Cluster and controllers (slurm.controllers: primary first)",
            [("ClusterName", spec.cluster.name)]
            + [
                ("SlurmctldHost", f"{name}({table[name].management_ip})")
                for name in cluster.controllers
            ],
        ),
        ConfSection(
            "Daemons, paths and defaults (override any of these in slurm.options)",
            [(key, value) for key, value in SLURM_DEFAULTS if key.lower() not in overridden],
        ),
    ]
    resources: list[Setting] = [("SelectType", "select/cons_tres")]
    if any(h.hardware.gpu for h in compute):
        resources.append(("GresTypes", "gpu"))
    resources += [
        ("ProctrackType", "proctrack/cgroup"),
        ("TaskPlugin", "task/cgroup,task/affinity"),
    ]
    sections.append(ConfSection("Resources and isolation", resources))
    if slurm.accounting is not None:
        # Gathering job usage without storing it makes slurmctld log errors, so
        # the gather plugin comes only with accounting.
        sections.append(
            ConfSection(
                "Accounting (slurm.accounting)",
                [
                    ("JobAcctGatherType", "jobacct_gather/cgroup"),
                    ("AccountingStorageType", "accounting_storage/slurmdbd"),
                    ("AccountingStorageHost", slurm.accounting.host),
                    ("AccountingStoragePort", str(slurm.accounting.port)),
                    ("AccountingStorageTRES", "gres/gpu"),
                ],
            )
        )
    scheduling = _priority_settings(spec) + _preemption_settings(spec)
    if scheduling:
        sections.append(
            ConfSection("Priority and preemption (slurm.priority, slurm.preemption)", scheduling)
        )
    if epilog:
        sections.append(
            ConfSection(
                "Health check (slurm.health_check)", [("Epilog", f"{SLURM_ETC}/{EPILOG_NAME}")]
            )
        )
    if spec.network.fabric is not None and spec.network.fabric.switches:
        sections.append(
            ConfSection("Topology (network.fabric.switches)", [("TopologyPlugin", "topology/tree")])
        )
    if slurm.options:
        sections.append(
            ConfSection(
                "Site options (slurm.options)", [(k, str(v)) for k, v in slurm.options.items()]
            )
        )
    return sections


def _priority_settings(spec: Spec) -> list[Setting]:
    priority = spec.slurm.priority
    if priority is None:
        return []
    settings: list[Setting] = [("PriorityType", f"priority/{priority.type}")]
    if priority.weights is not None:
        weights = priority.weights
        settings += [
            ("PriorityWeightAge", str(weights.age)),
            ("PriorityWeightFairshare", str(weights.fairshare)),
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


def _groups_in_order(hosts: Sequence[Host], key_of: Callable[[Host], Hashable]) -> list[list[Host]]:
    """Hosts grouped by key_of, groups in order of first appearance."""
    groups: dict[Hashable, list[Host]] = {}
    for host in hosts:
        groups.setdefault(key_of(host), []).append(host)
    return list(groups.values())


def _node_features(spec: Spec, host: Host) -> list[str]:
    group = spec.nodes[host.group_index]
    features = [host.hardware_name, gres_type(host.hardware), *group.features]
    return list(dict.fromkeys(f for f in features if f))


def _node_lines(spec: Spec, compute: Sequence[Host]) -> list[NodeLine]:
    def key_of(host: Host) -> tuple[object, ...]:
        return (
            host.hardware_name,
            tuple(_node_features(spec, host)),
            spec.nodes[host.group_index].weight,
        )

    lines = []
    for members in _groups_in_order(compute, key_of):
        first = members[0]
        profile = first.hardware
        cpu = profile.cpu
        settings: list[Setting] = [
            ("CPUs", str(cpu.cpus)),
            ("Boards", "1"),
            ("SocketsPerBoard", str(cpu.sockets)),
            ("CoresPerSocket", str(cpu.cores_per_socket)),
            ("ThreadsPerCore", str(cpu.threads_per_core)),
            ("RealMemory", str(real_memory_mib(profile))),
        ]
        if profile.gpu is not None:
            settings.append(("Gres", f"gpu:{gres_type(profile)}:{profile.gpu.count}"))
        settings.append(("Features", ",".join(_node_features(spec, first))))
        weight = spec.nodes[first.group_index].weight
        if weight is not None:
            settings.append(("Weight", str(weight)))
        settings.append(("State", "UNKNOWN"))
        lines.append(NodeLine(compress([h.name for h in members]), settings))
    return lines


def _partition_lines(cluster: Cluster) -> list[NodeLine]:
    lines = []
    for partition, members in zip(
        cluster.spec.slurm.partitions, cluster.partition_nodes, strict=True
    ):
        settings: list[Setting] = []
        if partition.default:
            settings.append(("Default", "YES"))
        optional: list[tuple[str, object]] = [
            ("MaxTime", partition.max_time),
            ("DefaultTime", partition.default_time),
            ("PriorityTier", partition.priority_tier),
            ("OverSubscribe", partition.oversubscribe),
            ("AllowAccounts", ",".join(partition.allow_accounts)),
            ("AllowGroups", ",".join(partition.allow_groups)),
            ("AllowQos", ",".join(partition.allow_qos)),
            ("QOS", partition.qos),
            ("DefCpuPerGPU", partition.def_cpu_per_gpu),
            ("DefMemPerGPU", partition.def_mem_per_gpu_mib),
            ("PreemptMode", partition.preempt_mode),
        ]
        settings += [(key, str(value)) for key, value in optional if value not in (None, "")]
        settings.append(("State", partition.state))
        lines.append(NodeLine(partition.name, [("Nodes", compress(members)), *settings]))
    return lines


def _gres_lines(spec: Spec, compute: Sequence[Host]) -> list[GresLine]:
    gpu_hosts = [h for h in compute if h.hardware.gpu is not None]
    lines = []
    for members in _groups_in_order(gpu_hosts, lambda h: h.hardware_name):
        profile = members[0].hardware
        assert profile.gpu is not None
        count = profile.gpu.count
        names, kind = compress([h.name for h in members]), str(gres_type(profile))
        if profile.topology is not None and profile.topology.gpus:
            lines += [
                GresLine(names, kind, f"/dev/nvidia{gpu.index}", gpu.cores)
                for gpu in sorted(profile.topology.gpus, key=lambda g: g.index)
            ]
            continue
        files = "/dev/nvidia0" if count == 1 else f"/dev/nvidia[0-{count - 1}]"
        lines.append(GresLine(names, kind, files))
    return lines


def _switch_lines(cluster: Cluster) -> list[SwitchLine]:
    fabric = cluster.spec.network.fabric
    if fabric is None:
        return []
    slurm_names = {host.name for host in cluster.compute}
    kept: dict[str, SwitchLine] = {}
    # Leaves first, then parents in spec order until nothing changes, so a spine
    # whose leaves hold no Slurm node is dropped too.
    for switch, nodes in zip(fabric.switches, cluster.switch_nodes, strict=True):
        if switch.nodes is not None:
            members = [n for n in nodes if n in slurm_names]
            if members:
                kept[switch.name] = SwitchLine(switch.name, compress(members), None)
    changed = True
    while changed:
        changed = False
        for switch, child_names in zip(fabric.switches, cluster.switch_children, strict=True):
            if switch.switches is None or switch.name in kept:
                continue
            children = [c for c in child_names if c in kept]
            if children:
                kept[switch.name] = SwitchLine(switch.name, None, compress(children))
                changed = True
    return [kept[s.name] for s in fabric.switches if s.name in kept]


def _slurmdbd(spec: Spec) -> list[Setting]:
    accounting = spec.slurm.accounting
    assert accounting is not None
    database = accounting.database
    overridden = {key.lower() for key in spec.slurm.options}
    settings: list[Setting] = [
        ("AuthType", "auth/munge"),
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
    # slurmdbd must run as the same user as slurmctld.
    if "slurmuser" in overridden:
        user = next(str(v) for k, v in spec.slurm.options.items() if k.lower() == "slurmuser")
        settings = [(k, user if k == "SlurmUser" else v) for k, v in settings]
    return settings


def _epilog_checks(spec: Spec, compute: Sequence[Host]) -> list[GpuNodeCheck]:
    by_count: dict[int, list[str]] = {}
    for host in compute:
        if host.hardware.gpu is not None:
            by_count.setdefault(host.hardware.gpu.count, []).append(host.name)
    return [GpuNodeCheck(names, count) for count, names in by_count.items()]
