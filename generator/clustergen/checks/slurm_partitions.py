"""Slurm partitions (their nodes, settings and GPU defaults), the scheduling policies
and the QOS."""

from __future__ import annotations

from clustergen.base import codes
from clustergen.base.errors import Problem, SpecPath
from clustergen.base.suggest import did_you_mean
from clustergen.catalog.gpus import profile_gpu_count
from clustergen.checks.references import meant_roles, unknown_node
from clustergen.model import Spec
from clustergen.model.common import parse_slurm_time
from clustergen.model.hardware import HardwareProfile
from clustergen.model.slurm import Partition
from clustergen.resolve import ResolvedCluster

# slurmdbd creates this QOS itself; a spec may name it without defining it.
BUILTIN_QOS = "normal"


def partitions_against_nodes(cluster: ResolvedCluster) -> list[Problem]:
    """Each partition: its name, its nodes (known, compute, in one partition marked
    default), its settings and its GPU defaults."""
    spec, hosts, table = cluster.spec, cluster.hosts, cluster.by_name
    problems = []
    seen: dict[str, int] = {}
    defaults: list[int] = []
    in_some_partition: set[str] = set()
    compute_roles: dict[tuple[str, ...], bool] = {}
    for index, partition in enumerate(spec.slurm.partitions):
        base = ("slurm", "partitions", index)
        if partition.name in seen:
            problems.append(
                Problem(
                    codes.SLURM_DUPLICATE_PARTITION,
                    (*base, "name"),
                    f"partition '{partition.name}' is already defined at "
                    f"slurm.partitions[{seen[partition.name]}]",
                )
            )
        seen.setdefault(partition.name, index)
        if partition.default:
            defaults.append(index)
            if len(defaults) > 1:
                problems.append(
                    Problem(
                        codes.SLURM_TWO_DEFAULT_PARTITIONS,
                        (*base, "default"),
                        f"only one partition may be the default; "
                        f"slurm.partitions[{defaults[0]}] already is",
                    )
                )
        for name in cluster.partition_nodes[index]:
            host = table.get(name)
            if host is None:
                problems.append(
                    Problem(codes.SLURM_UNKNOWN_NODE, (*base, "nodes"), unknown_node(name, table))
                )
            elif not _is_compute(spec, host.roles, compute_roles):
                problems.append(
                    Problem(
                        codes.SLURM_PARTITION_NON_COMPUTE_NODE,
                        (*base, "nodes"),
                        f"node '{name}' is not a Slurm compute node (it has no compute role)",
                    )
                )
            in_some_partition.add(name)
        problems += _gpu_defaults_fit(cluster, index)
        problems += _partition_settings(spec, partition, base)
    for host in hosts:
        if host.is_slurm_compute and host.name not in in_some_partition:
            problems.append(
                Problem(
                    codes.SLURM_NODE_IN_NO_PARTITION,
                    ("nodes", host.group_index, "names"),
                    f"compute node '{host.name}' is in no partition, so no job can run on it",
                )
            )
    return problems


def _partition_settings(spec: Spec, partition: Partition, base: SpecPath) -> list[Problem]:
    """A partition's times, billing weights and memory default against the rest of the spec."""
    problems = []
    if partition.max_time is not None and partition.default_time is not None:
        max_minutes = parse_slurm_time(str(partition.max_time))
        default_minutes = parse_slurm_time(str(partition.default_time))
        if (default_minutes is None and max_minutes is not None) or (
            default_minutes is not None
            and max_minutes is not None
            and default_minutes > max_minutes
        ):
            problems.append(
                Problem(
                    codes.SLURM_DEFAULT_TIME_EXCEEDS_MAX,
                    (*base, "default_time"),
                    f"default_time {partition.default_time} exceeds max_time {partition.max_time}",
                )
            )
    if partition.billing_weights is not None and spec.slurm.accounting is None:
        problems.append(
            Problem(
                codes.SLURM_BILLING_WITHOUT_ACCOUNTING,
                (*base, "billing_weights"),
                "billing weights need slurm.accounting: without slurmdbd slurmctld has no "
                "gres/gpu TRES to weigh and refuses to start",
                at="key",
            )
        )
    if partition.def_mem_per_gpu_mib is not None:
        clash = [k for k in spec.slurm.options if k.lower() in ("defmempercpu", "defmempernode")]
        if clash:
            problems.append(
                Problem(
                    codes.SLURM_DEF_MEM_CONFLICT,
                    (*base, "def_mem_per_gpu_mib"),
                    f"DefMemPerGPU excludes slurm.options {clash[0]}",
                )
            )
    return problems


def _gpu_defaults_fit(cluster: ResolvedCluster, index: int) -> list[Problem]:
    """A job that asks for every GPU of a node (srun -N2 --gres=gpu:8) and nothing else gets
    DefCpuPerGPU and DefMemPerGPU times the GPUs; more than the node has for jobs (after
    CoreSpecCount and MemSpecLimit) and slurmctld refuses it: "Requested node configuration
    is not available"."""
    partition = cluster.spec.slurm.partitions[index]
    wanted = [
        ("def_cpu_per_gpu", "DefCpuPerGPU", partition.def_cpu_per_gpu, "CPUs"),
        ("def_mem_per_gpu_mib", "DefMemPerGPU", partition.def_mem_per_gpu_mib, "MiB"),
    ]
    if all(value is None for _, _, value, _ in wanted):
        return []
    profiles: dict[str, HardwareProfile] = {}
    for name in cluster.partition_nodes[index]:
        host = cluster.by_name.get(name)
        if host is not None and host.is_slurm_compute and host.hardware.gpu is not None:
            profiles.setdefault(host.hardware_name, host.hardware)
    problems = []
    for key, slurm_key, value, unit in wanted:
        if value is None:
            continue
        for name, profile in profiles.items():
            count = profile_gpu_count(profile)
            has = profile.job_cpus() if key == "def_cpu_per_gpu" else profile.job_memory_mib()
            if value * count > has:
                problems.append(
                    Problem(
                        codes.SLURM_GPU_DEFAULTS_EXCEED_NODE,
                        ("slurm", "partitions", index, key),
                        f"{slurm_key}={value} x {count} GPUs of hardware.{name} is "
                        f"{value * count} {unit}, more than the {has} {unit} its nodes have for "
                        "jobs (after system_reserved), so a job that asks for all their GPUs "
                        "and nothing else is refused (Requested node configuration is not "
                        f"available); at most {has // count}",
                    )
                )
                break
    return problems


def _is_compute(spec: Spec, roles: tuple[str, ...], known: dict[tuple[str, ...], bool]) -> bool:
    """Whether roles, as meant, make a compute node; `known` keeps the answer for the
    next node of the same roles (a group's nodes share one tuple of them)."""
    if roles not in known:
        known[roles] = "compute" in meant_roles(spec, roles)
    return known[roles]


def policies(spec: Spec) -> list[Problem]:
    problems = []
    preemption = spec.slurm.preemption
    if preemption is not None and preemption.type == "qos" and spec.slurm.accounting is None:
        problems.append(
            Problem(
                codes.SLURM_PREEMPT_QOS_WITHOUT_ACCOUNTING,
                ("slurm", "preemption", "type"),
                "preempt/qos needs slurm.accounting: QOS are kept by slurmdbd",
            )
        )
    priority = spec.slurm.priority
    weights = None if priority is None else priority.weights
    if weights is None or spec.slurm.accounting is not None:
        return problems
    # priority/multifactor without slurmdbd: "error: PriorityWeightAge can only be used
    # with SlurmDBD, ignoring" (and so for Fairshare); both become 0.
    for code, key, slurm_key, value in (
        (codes.SLURM_AGE_WITHOUT_ACCOUNTING, "age", "PriorityWeightAge", weights.age),
        (
            codes.SLURM_FAIRSHARE_WITHOUT_ACCOUNTING,
            "fairshare",
            "PriorityWeightFairshare",
            weights.fairshare,
        ),
    ):
        if value:
            problems.append(
                Problem(
                    code,
                    ("slurm", "priority", "weights", key),
                    f"without slurm.accounting slurmctld ignores {slurm_key} (it logs "
                    f'"{slurm_key} can only be used with SlurmDBD, ignoring"): '
                    "priority/multifactor weighs age and fairshare only with slurmdbd; "
                    "clustergen does not write it",
                )
            )
    return problems


def qos(spec: Spec) -> list[Problem]:
    slurm = spec.slurm
    problems = []
    if slurm.qos and slurm.accounting is None:
        problems.append(
            Problem(
                codes.SLURM_QOS_WITHOUT_ACCOUNTING,
                ("slurm", "qos"),
                "QOS live in slurmdbd: slurm.qos needs slurm.accounting",
                at="key",
            )
        )
    defined: dict[str, int] = {}
    for index, qos in enumerate(slurm.qos):
        if qos.name in defined:
            problems.append(
                Problem(
                    codes.SLURM_DUPLICATE_QOS,
                    ("slurm", "qos", index, "name"),
                    f"QOS '{qos.name}' is already defined at slurm.qos[{defined[qos.name]}]",
                )
            )
        defined.setdefault(qos.name, index)
    known = {*defined, BUILTIN_QOS}
    for index, qos in enumerate(slurm.qos):
        path = ("slurm", "qos", index, "preempt")
        if qos.name in qos.preempt:
            problems.append(
                Problem(
                    codes.SLURM_QOS_PREEMPTS_ITSELF,
                    path,
                    f"QOS '{qos.name}' cannot preempt itself",
                )
            )
        for name in qos.preempt:
            if name not in known:
                problems.append(Problem(codes.SLURM_UNKNOWN_QOS, path, _unknown_qos(name, defined)))
    for index, partition in enumerate(slurm.partitions):
        base = ("slurm", "partitions", index)
        named = [("qos", partition.qos)] if partition.qos else []
        named += [("allow_qos", name) for name in partition.allow_qos]
        for key, name in named:
            if name not in known and name.upper() != "ALL":
                problems.append(
                    Problem(codes.SLURM_UNKNOWN_QOS, (*base, key), _unknown_qos(name, defined))
                )
    preemption = slurm.preemption
    preempting = [q for q in slurm.qos if q.preempt]
    if (
        preemption is not None
        and preemption.type == "qos"
        and not preempting
        and slurm.accounting is not None  # else the error above says what is missing
    ):
        problems.append(
            Problem(
                codes.SLURM_PREEMPT_QOS_WITHOUT_QOS,
                ("slurm", "preemption", "type"),
                "preempt/qos preempts only jobs of a QOS that another QOS lists in its preempt "
                "list, and slurm.qos defines none, so no job is ever preempted; define them in "
                "slurm.qos (the playbook creates them in slurmdbd)",
            )
        )
    enforce = slurm.option("AccountingStorageEnforce")
    uses_qos = bool(slurm.qos) or (preemption is not None and preemption.type == "qos")
    if enforce is not None and uses_qos and "qos" not in enforce.lower().split(","):
        problems.append(
            Problem(
                codes.SLURM_ENFORCE_WITHOUT_QOS,
                ("slurm", "options", "AccountingStorageEnforce"),
                f"AccountingStorageEnforce={enforce} leaves out qos, so the QOS (and preemption "
                "by QOS) are not enforced; add qos or leave the key to clustergen",
            )
        )
    return problems


def _unknown_qos(name: str, defined: dict[str, int]) -> str:
    return (
        f"QOS '{name}' is not in slurm.qos (nor slurmdbd's own '{BUILTIN_QOS}')"
        f"{did_you_mean(name, defined)}"
    )
