"""The Slurm family's node, partition and GRES lines: NodeName lines grouped by
profile, features and weight (with NodeAddr runs), PartitionName lines with the
per-GPU defaults and billing weights each profile's share gives, and gres.conf's
lines with the cores of each GPU's socket or NUMA node."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from clustergen.catalog.gpus import profile_gpu_count, profile_gpu_sets, superchip_cores
from clustergen.model import Spec
from clustergen.model.common import parse_slurm_time
from clustergen.model.gpu_topology import core_ids
from clustergen.model.hardware import HardwareProfile
from clustergen.model.slurm import Partition
from clustergen.resolve import ResolvedCluster
from clustergen.resolve.slurm_topology import SlurmTopology
from clustergen.spec.hosts import NUMBERED_NAME, Host, compress

# DefaultTime of a partition whose spec sets none (capped at its MaxTime).
DEFAULT_PARTITION_TIME_MIN = 60


# The longest window Slurm's backfill plans, 30 days: what a DefaultTime of UNLIMITED counts as.
BF_WINDOW_MAX_MIN = 43200


# A Key=Value setting of a Slurm file, as every module of the family writes it.
Setting = tuple[str, str]


@dataclass(frozen=True)
class NodeLine:
    names: str  # compressed hostlist
    settings: list[Setting]


@dataclass(frozen=True)
class GresLine:
    names: str
    gres_type: str
    files: str
    cores: str | None = None  # Cores=: the sockets of the topology table's or superchip's cores


def _groups_in_order(hosts: Sequence[Host], key_of: Callable[[Host], Hashable]) -> list[list[Host]]:
    """Hosts grouped by key_of, groups in order of first appearance."""
    groups: dict[Hashable, list[Host]] = {}
    for host in hosts:
        groups.setdefault(key_of(host), []).append(host)
    return list(groups.values())


def _node_features(spec: Spec, host: Host) -> list[str]:
    group = spec.nodes[host.group_index]
    if spec.slurm.keep_imported:  # an imported cluster keeps the features it has
        return list(dict.fromkeys(group.features))
    types = [s.gres_type for s in profile_gpu_sets(host.hardware)]
    features = [host.hardware_name, *types, *group.features]
    return list(dict.fromkeys(f for f in features if f))


def _next_name(previous: str, name: str) -> bool:
    """gpu08 -> gpu09: same prefix and width, number one up."""
    a, b = NUMBERED_NAME.match(previous), NUMBERED_NAME.match(name)
    return bool(a and b and a[1] == b[1] and len(a[2]) == len(b[2]) and int(b[2]) == int(a[2]) + 1)


def _address_runs(hosts: Sequence[Host]) -> list[list[Host]]:
    """Hosts split where names or management addresses stop counting up by one, so each
    run's names and addresses expand in the same order."""
    runs: list[list[Host]] = []
    for host in hosts:
        if runs:
            previous = runs[-1][-1]
            address = ipaddress.IPv4Address(str(host.management_ip))
            if address == ipaddress.IPv4Address(str(previous.management_ip)) + 1 and _next_name(
                previous.name, host.name
            ):
                runs[-1].append(host)
                continue
        runs.append([host])
    return runs


def address_hostlist(addresses: Sequence[str]) -> str:
    """Consecutive IPv4 addresses as a Slurm hostlist, one range per /24 in ascending order:
    10.0.1.[250-255],10.0.2.[0-3]."""
    by_prefix: dict[str, list[int]] = {}
    for address in addresses:
        prefix, _, last = address.rpartition(".")
        by_prefix.setdefault(prefix, []).append(int(last))
    parts = []
    for prefix, numbers in by_prefix.items():
        low, high = numbers[0], numbers[-1]
        parts.append(f"{prefix}.{low}" if low == high else f"{prefix}.[{low}-{high}]")
    return ",".join(parts)


def node_lines(spec: Spec, compute: Sequence[Host]) -> list[NodeLine]:
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
            ("RealMemory", str(profile.slurm_real_memory_mib())),
        ]
        reserve = profile.system_reserved
        if reserve is not None and reserve.cores:
            settings.append(("CoreSpecCount", str(reserve.cores)))
        if reserve is not None and reserve.memory_gib:
            settings.append(("MemSpecLimit", str(reserve.memory_gib * 1024)))
        if profile.gpu is not None:
            gres = ",".join(f"gpu:{s.gres_type}:{s.count}" for s in profile_gpu_sets(profile))
            settings.append(("Gres", gres))
        if _node_features(spec, first):
            settings.append(("Features", ",".join(_node_features(spec, first))))
        weight = spec.nodes[first.group_index].weight
        if weight is not None:
            settings.append(("Weight", str(weight)))
        settings.append(("State", "UNKNOWN"))
        if not spec.slurm.node_addr_from_management:
            lines.append(NodeLine(compress([h.name for h in members]), settings))
            continue
        for run in _address_runs(members):
            ips = [h.management_ip for h in run if h.management_ip is not None]
            assert len(ips) == len(run)  # every node of a valid spec has one
            addresses = address_hostlist(ips)
            names = compress([h.name for h in run])
            lines.append(NodeLine(names, [("NodeAddr", addresses), *settings]))
    return lines


def partition_default_time_min(partition: Partition) -> int:
    """DefaultTime in minutes: the spec's, or an hour capped at MaxTime."""
    if partition.default_time is not None:
        return parse_slurm_time(str(partition.default_time)) or BF_WINDOW_MAX_MIN
    max_minutes = parse_slurm_time(str(partition.max_time or "UNLIMITED"))
    if max_minutes is None:
        return DEFAULT_PARTITION_TIME_MIN
    return min(DEFAULT_PARTITION_TIME_MIN, max_minutes)


def _default_time(partition: Partition, keep_imported: bool = False) -> str:
    if partition.default_time is not None or keep_imported:
        return str(partition.default_time or "")
    minutes = partition_default_time_min(partition)
    return f"{minutes // 60:02d}:{minutes % 60:02d}:00"


@dataclass(frozen=True)
class GpuShare:
    """What one GPU of a profile gets by default, after the system reserve."""

    cpus: int  # CPUs per GPU: whole cores' worth, or threads where GPUs outnumber cores
    memory_mib: int
    gpus: int
    node_cpus: int  # CPUs jobs may use on the node
    node_memory_mib: int  # memory jobs may use on the node


def gpu_share(profile: HardwareProfile) -> GpuShare | None:
    """A GPU's even share of what jobs may use on the node, so that a job asking for every
    GPU of the node still fits it with the per-GPU defaults: count x share never exceeds
    the node's CPUs (after CoreSpecCount) or memory (after MemSpecLimit). Whole cores per
    GPU where there are enough; where GPUs outnumber cores (1 core x 2 threads, 2 GPUs),
    the CPUs shared out (1 each). cpus is 0 where GPUs outnumber even the CPUs."""
    if profile.gpu is None:
        return None
    threads = profile.cpu.threads_per_core
    node_cpus, memory = profile.job_cpus(), profile.job_memory_mib()
    count = profile_gpu_count(profile)  # a job may take every GPU of every type
    cores_each = node_cpus // threads // count
    return GpuShare(
        cpus=cores_each * threads if cores_each else node_cpus // count,
        memory_mib=memory // count,
        gpus=count,
        node_cpus=node_cpus,
        node_memory_mib=memory,
    )


def _weight(value: float) -> str:
    """A billing weight as Slurm reads it: a plain decimal, at most four places."""
    text = f"{value:.4f}".rstrip("0").rstrip(".")
    return text or "0"


def billing_weights(shares: Sequence[GpuShare]) -> str:
    """CPU=1 and memory and GPUs weighted so that a whole node bills the same by each; from
    the profile with the fewest CPUs per GPU when a partition mixes profiles."""
    share = min(shares, key=lambda s: s.node_cpus / s.gpus)
    mem_per_gib = share.node_cpus / (share.node_memory_mib / 1024)
    gpu = share.node_cpus / share.gpus
    return f"CPU=1,Mem={_weight(mem_per_gib)}G,GRES/gpu={_weight(gpu)}"


def partition_lines(cluster: ResolvedCluster, network: SlurmTopology) -> list[NodeLine]:
    spec, compute = cluster.spec, cluster.compute
    profile_of = {h.name: h.hardware_name for h in compute}
    shares_of = {
        h.hardware_name: share for h in compute if (share := gpu_share(h.hardware)) is not None
    }
    mem_default_elsewhere = any(
        spec.slurm.option(key) is not None for key in ("DefMemPerCPU", "DefMemPerNode")
    )
    lines = []
    for partition, names in zip(spec.slurm.partitions, cluster.partition_nodes, strict=True):
        in_partition = dict.fromkeys(profile_of[n] for n in names if n in profile_of)
        shares = [shares_of[p] for p in in_partition if p in shares_of]
        def_cpu: int | None = partition.def_cpu_per_gpu
        def_mem: int | None = partition.def_mem_per_gpu_mib
        weights = _explicit_weights(partition)
        if shares and not spec.slurm.keep_imported:
            def_cpu = def_cpu or min(s.cpus for s in shares) or None
            if def_mem is None and not mem_default_elsewhere:
                def_mem = min(s.memory_mib for s in shares)
            # Without slurmdbd there is no gres/gpu TRES to weigh (slurmctld refuses it),
            # and nothing that bills.
            if spec.slurm.accounting is not None:
                weights = weights or billing_weights(shares)
        settings: list[Setting] = []
        if partition.default:
            settings.append(("Default", "YES"))
        optional: list[tuple[str, object]] = [
            ("MaxTime", partition.max_time),
            ("DefaultTime", _default_time(partition, spec.slurm.keep_imported)),
            ("PriorityTier", partition.priority_tier),
            ("OverSubscribe", partition.oversubscribe),
            ("AllowAccounts", ",".join(partition.allow_accounts)),
            ("AllowGroups", ",".join(partition.allow_groups)),
            ("AllowQos", ",".join(partition.allow_qos)),
            ("QOS", partition.qos),
            ("DefCpuPerGPU", def_cpu),
            ("DefMemPerGPU", def_mem),
            ("TRESBillingWeights", weights),
            ("PreemptMode", partition.preempt_mode),
            # The topology.yaml topology of its jobs (slurm.conf(5) of 25.05, Topology).
            ("Topology", network.partition_topology.get(partition.name)),
        ]
        settings += [(key, str(value)) for key, value in optional if value not in (None, "")]
        settings += [(key, str(value)) for key, value in partition.options.items()]
        settings.append(("State", partition.state))
        lines.append(NodeLine(partition.name, [("Nodes", compress(names)), *settings]))
    return lines


def _explicit_weights(partition: Partition) -> str | None:
    given = partition.billing_weights
    if given is None:
        return None
    parts = [
        f"{name}={_weight(value)}{unit}"
        for name, value, unit in (
            ("CPU", given.cpu, ""),
            ("Mem", given.mem_per_gib, "G"),
            ("GRES/gpu", given.gpu, ""),
        )
        if value is not None
    ]
    return ",".join(parts) or None


def gres_lines(spec: Spec, compute: Sequence[Host]) -> list[GresLine]:
    gpu_hosts = [h for h in compute if h.hardware.gpu is not None]
    lines = []
    for members in _groups_in_order(gpu_hosts, lambda h: h.hardware_name):
        profile = members[0].hardware
        names, sets = compress([h.name for h in members]), profile_gpu_sets(profile)
        kinds = {index: s.gres_type for s in sets for index in s.indexes}
        if profile.topology is not None and profile.topology.gpus:
            lines += [
                GresLine(
                    names,
                    kinds.get(gpu.index, sets[0].gres_type),
                    f"/dev/nvidia{gpu.index}",
                    _socket_cores(profile, gpu.cores),
                )
                for gpu in sorted(profile.topology.gpus, key=lambda g: g.index)
            ]
            continue
        cores = superchip_cores(profile)
        if cores is not None:  # a Grace superchip's GPUs: each by its own CPU's cores
            lines += [
                GresLine(names, kinds[index], f"/dev/nvidia{index}", core)
                for index, core in enumerate(cores)
            ]
            continue
        for gpus in sets:
            last = gpus.first + gpus.count - 1
            files = f"/dev/nvidia{last}" if gpus.count == 1 else f"/dev/nvidia[{gpus.first}-{last}]"
            lines.append(GresLine(names, gpus.gres_type, files))
    return lines


def _socket_cores(profile: HardwareProfile, cores: str) -> str:
    """Every core of the sockets, or NUMA nodes where cpu.numa_per_socket splits them
    (NPS2/NPS4, SNC), that a GPU's nearest cores lie on. Slurm co-allocates a GRES with
    CPUs per socket or NUMA node, never by cores within one (gres.conf(5), Cores: "it is
    not possible to preferentially assign GRES with different specific CPUs on the same
    NUMA or socket", so the option "should generally be used to identify all cores on
    some socket"): a slice of one promises an affinity Slurm does not give. A socket's
    NUMA nodes take its cores evenly, in order (the check holds that they divide)."""
    cpu = profile.cpu
    per = cpu.cores_per_socket // cpu.numa_per_socket
    domains = sorted({core // per for core in core_ids(cores)})
    return ",".join(
        f"{domain * per}-{domain * per + per - 1}" if per > 1 else str(domain) for domain in domains
    )
