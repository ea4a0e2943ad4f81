"""Slurm: controllers, accounting, partitions and extra slurm.conf keys."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Sequence

from clustergen import codes
from clustergen.catalog.folders import RELATIVE, root_owned, system_folder, user_writable
from clustergen.catalog.packages import OS_PACKAGE_FAMILY
from clustergen.catalog.slurm_keys import (
    DEPRECATED_KEYS,
    DERIVED_KEYS,
    KEY_LIST_VERSIONS,
    PRIVATE_DATA,
    accepted_keys,
    key_list_version,
    release_name,
)
from clustergen.catalog.versions import VersionTuple, parse_version
from clustergen.checks.references import meant_roles, unknown_node
from clustergen.checks.trusted_paths import shared_mounts
from clustergen.errors import Problem, SpecPath
from clustergen.hosts import Host
from clustergen.model import Spec
from clustergen.model.common import parse_slurm_time
from clustergen.model.hardware import HardwareProfile
from clustergen.model.slurm import Partition
from clustergen.resolve import ResolvedCluster
from clustergen.suggest import did_you_mean

# Keys from blog posts that no parser since 22.05 accepts, with where the setting lives now.
_FOLKLORE_KEYS = {
    "maxjobsperuser": "per-user job limits belong to QOS or associations (sacctmgr)",
    "maxconcurrentjobs": "job limits belong to QOS or associations (sacctmgr)",
    "cachegroups": "removed from Slurm; group caching is automatic",
    "schedulerport": "removed from Slurm (the builtin/backfill schedulers need no port)",
    "memlimitenforce": "removed from Slurm; memory is enforced by cgroup.conf ConstrainRAMSpace",
}


def nodes(cluster: ResolvedCluster) -> list[Problem]:
    """Controllers, accounting and partitions against the nodes that exist."""
    return [
        *_compute_nodes_exist(cluster.spec, cluster.hosts),
        *_controllers(cluster),
        *_accounting(cluster),
        *_partitions(cluster),
        *_imported(cluster.spec),
        *_reboot(cluster),
    ]


def options(cluster: ResolvedCluster) -> list[Problem]:
    """slurm.options against the keys of the pinned Slurm, the scheduling policies and QOS."""
    spec = cluster.spec
    return [
        *_options(spec),
        *_weakening(spec),
        *_open_metrics(spec),
        *_slurm_user(spec),
        *_policies(spec),
        *_qos(spec),
        *_timeouts(spec),
        *_backfill_window(spec),
        *_srun_ports(spec),
        *_health_check(spec),
        *_configless(spec),
    ]


def _reboot(cluster: ResolvedCluster) -> list[Problem]:
    """slurm.reboot where Slurm cannot roll the reboots: a bound that lets no node out,
    or, in slurm mode, a GPU node (whose driver change needs a reboot) that slurmctld does
    not know, so `scontrol reboot` cannot reboot it."""
    reboot = cluster.spec.slurm.reboot
    if reboot is None:
        return []
    problems = []
    if reboot.max_per_partition < 1:
        problems.append(
            Problem(
                codes.SLURM_REBOOT_BOUND,
                ("slurm", "reboot", "max_per_partition"),
                f"max_per_partition is {reboot.max_per_partition}: the roll-out would wait "
                "for ever; give 1 or more",
            )
        )
    if reboot.mode == "slurm":
        slurm_nodes = {host.name for host in cluster.compute}
        outside = [h.name for h in cluster.hosts if h.hardware.gpu and h.name not in slurm_nodes]
        if outside:
            problems.append(
                Problem(
                    codes.SLURM_REBOOT_NODE_OUTSIDE_SLURM,
                    ("slurm", "reboot", "mode"),
                    f"GPU node(s) {', '.join(outside)} are no Slurm compute node: "
                    "`scontrol reboot` cannot roll a driver change through them; give them "
                    "the compute role or use mode ansible",
                )
            )
    return problems


# slurmd expands %n in these only when started with -N: configless, it fetches them before
# it knows its node name (SchedMD's configless_slurm page, "Limitations";
# src/slurmd/slurmd/slurmd.c _establish_configuration).
_CONFIGLESS_NODE_PATHS = ("slurmdspooldir", "slurmdpidfile")


def _configless(spec: Spec) -> list[Problem]:
    """slurm.configless against the slurm.options it cannot work with."""
    if not spec.slurm.configless:
        return []
    return [
        Problem(
            codes.SLURM_CONFIGLESS_NODE_NAME_IN_PATH,
            ("slurm", "options", key),
            f"{key}={value}: with slurm.configless slurmd fetches slurm.conf before it knows "
            "its node name, so %n is not replaced by it; give a path without %n",
        )
        for key, value in spec.slurm.options.items()
        if key.lower() in _CONFIGLESS_NODE_PATHS and "%n" in str(value)
    ]


# Authentication clustergen accepts: MUNGE, or Slurm's own auth/slurm and cred/slurm from
# 23.11, where they first shipped (slurm.conf(5) AuthType, CredType; SchedMD's
# authentication.html). auth/none and cred/none let anyone act as any user.
_AUTH_TYPES: tuple[tuple[str, VersionTuple], ...] = (("auth/munge", (0,)), ("auth/slurm", (23, 11)))
_CRED_TYPES: tuple[tuple[str, VersionTuple], ...] = (("cred/munge", (0,)), ("cred/slurm", (23, 11)))


def _words(value: object) -> set[str]:
    return {word.strip().lower() for word in str(value).split(",") if word.strip()}


def _open_metrics(spec: Spec) -> list[Problem]:
    """MetricsParameters=ignore_private_data while slurm.isolation.private_data is on."""
    return [
        Problem(
            codes.SLURM_OPTION_WEAKENS_SECURITY,
            ("slurm", "options", key),
            f"MetricsParameters={value} shows every user's jobs to anyone who reaches "
            "slurmctld's port, which slurm.isolation.private_data keeps private; name the "
            "scraper's account in monitoring.slurm.auth_users instead, or set "
            "private_data: false",
        )
        for key, value in spec.slurm.options.items()
        if key.lower() == "metricsparameters"
        and "ignore_private_data" in _words(value)
        and spec.slurm.isolation.private_data
    ]


def _weakening(spec: Spec) -> list[Problem]:
    """slurm.options that loosen what clustergen writes for authentication and containment,
    each allowed only by the spec key that turns that protection off."""
    release = parse_version(spec.software.slurm)[:2]
    isolation = spec.slurm.isolation
    problems = []

    def weakens(key: str, message: str) -> None:
        problems.append(
            Problem(codes.SLURM_OPTION_WEAKENS_SECURITY, ("slurm", "options", key), message)
        )

    for key, value in spec.slurm.options.items():
        lowered, words = key.lower(), _words(value)
        for name, allowed_types, what, harm in (
            ("authtype", _AUTH_TYPES, "AuthType", "lets any process claim any user's identity"),
            (
                "credtype",
                _CRED_TYPES,
                "CredType",
                "lets slurmd accept job credentials nobody signed",
            ),
        ):
            if lowered != name:
                continue
            allowed = [kind for kind, since in allowed_types if release >= since]
            if str(value).strip().lower() not in allowed:
                weakens(
                    key,
                    f"{what}={value} {harm}; Slurm {spec.software.slurm} takes "
                    f"{' or '.join(allowed)} here (clustergen writes {allowed[0]}), and no "
                    "spec key allows another",
                )
        contained = words & {"contain", "x11"}  # X11 implies Contain (slurm.conf(5))
        if lowered == "prologflags" and not contained:
            needs = [
                name
                for name, on in (
                    ("ssh_adopt", isolation.ssh_adopt),
                    ("job_tmpfs", isolation.job_tmpfs),
                )
                if on
            ]
            if needs:
                weakens(
                    key,
                    f"PrologFlags={value} drops Contain, which "
                    + " and ".join(f"slurm.isolation.{name}" for name in needs)
                    + " need (the extern step that ssh sessions and the job's private /tmp "
                    "live in); add Contain, or set "
                    + " and ".join(f"slurm.isolation.{name}: false" for name in needs),
                )
        missing = [word for word in PRIVATE_DATA if word not in words]
        if lowered == "privatedata" and isolation.private_data and missing:
            weakens(
                key,
                f"PrivateData={value} lets users see each other's {', '.join(missing)}; "
                f"keep {','.join(PRIVATE_DATA)} in it, or set slurm.isolation.private_data: "
                "false",
            )
        if lowered in ("jobcontainertype", "namespacetype") and isolation.job_tmpfs:
            weakens(
                key,
                f"clustergen writes the per-job /tmp and /dev/shm plugin itself from "
                f"slurm.isolation.job_tmpfs; set job_tmpfs: false to choose {value}",
            )
        if (
            lowered == "launchparameters"
            and isolation.ssh_adopt
            and "ulimit_pam_adopt" not in words
        ):
            weakens(
                key,
                f"LaunchParameters={value} lacks ulimit_pam_adopt, so an ssh session "
                "adopted into a job keeps sshd's limits, not the job's; add it, or set "
                "slurm.isolation.ssh_adopt: false",
            )
    return problems


# The accounts clustergen's roles know: the slurm account they create, or root.
_SLURM_USERS = ("slurm", "root")


def _slurm_user(spec: Spec) -> list[Problem]:
    """A SlurmUser the roles create (checks/trusted_paths: the paths the options name)."""
    return [
        Problem(
            codes.SLURM_OPTION_WEAKENS_SECURITY,
            ("slurm", "options", key),
            f"SlurmUser={value}: slurmctld would run as an account the roles do not "
            "create, with the state, keys and programs of the cluster; give slurm "
            "(the account clustergen creates) or root",
        )
        for key, value in spec.slurm.options.items()
        if key.lower() == "slurmuser" and str(value).strip() not in _SLURM_USERS
    ]


# PartitionName keys clustergen writes from partition keys (outputs/slurm/derive.py
# _partition_lines): a partition's options may not set them.
_PARTITION_KEYS = frozenset(
    {
        "partitionname", "nodes", "default", "maxtime", "defaulttime", "prioritytier",
        "state", "oversubscribe", "allowaccounts", "allowgroups", "allowqos", "qos",
        "defcpupergpu", "defmempergpu", "tresbillingweights", "preemptmode", "topology",
    }
)  # fmt: skip


def _imported(spec: Spec) -> list[Problem]:
    """Partition options that clash with partition keys; what slurm.keep_imported keeps."""
    problems = [
        Problem(
            codes.SLURM_PARTITION_OPTION_MODELLED,
            ("slurm", "partitions", index, "options", key),
            f"{key} is written from this partition's own keys; set it there, not in options",
            at="key",
        )
        for index, partition in enumerate(spec.slurm.partitions)
        for key in partition.options
        if key.lower() in _PARTITION_KEYS
    ]
    if spec.slurm.keep_imported:
        problems.append(
            Problem(
                codes.SLURM_KEEPS_IMPORTED_VALUES,
                ("slurm", "keep_imported"),
                "the render keeps what the imported cluster runs with: node Features only "
                "from nodes[].features (not the profile name and GPU type), and each "
                "partition's DefaultTime, DefCpuPerGPU, DefMemPerGPU and TRESBillingWeights "
                "only where it gives them, so a first render changes no node or partition; "
                "remove keep_imported to take clustergen's derived defaults (docs/adopt.md)",
                at="key",
            )
        )
    return problems


def _compute_nodes_exist(spec: Spec, hosts: Sequence[Host]) -> list[Problem]:
    if any("compute" in meant_roles(spec, host.roles) for host in hosts):
        return []
    return [
        Problem(
            codes.SLURM_NO_COMPUTE_NODES,
            ("nodes",),
            "no node group has the compute role, so Slurm has no nodes",
            at="key",
        )
    ]


def _controllers(cluster: ResolvedCluster) -> list[Problem]:
    spec, hosts, table = cluster.spec, cluster.hosts, cluster.by_name
    problems = []
    seen: set[str] = set()
    for index, entry in enumerate(cluster.controller_entries):
        path = ("slurm", "controllers", index)
        for name in entry:
            host = table.get(name)
            if host is None:
                problems.append(Problem(codes.SLURM_UNKNOWN_NODE, path, unknown_node(name, table)))
            elif "slurm_controller" not in meant_roles(spec, host.roles):
                problems.append(
                    Problem(
                        codes.SLURM_CONTROLLER_WITHOUT_ROLE,
                        path,
                        f"node '{name}' does not have the slurm_controller role",
                    )
                )
            elif name in seen:
                problems.append(
                    Problem(
                        codes.SLURM_CONTROLLER_LISTED_TWICE,
                        path,
                        f"controller '{name}' is listed twice",
                    )
                )
            seen.add(name)
    if len(seen) > 1 and not spec.slurm.state_save.shared:
        problems.append(
            Problem(
                codes.SLURM_HA_STATE_NOT_SHARED,
                ("slurm", "controllers"),
                f"{len(seen)} controllers need one StateSaveLocation they all read and write, "
                "or a takeover loses the queue: put slurm.state_save.path on shared storage "
                "(NFS, Lustre) and set slurm.state_save.shared: true",
            )
        )
    listed = seen
    if not listed <= set(table):
        return problems  # an unknown controller may be a misspelt node; said above
    for host in hosts:
        if "slurm_controller" in host.roles and host.name not in listed:
            problems.append(
                Problem(
                    codes.SLURM_CONTROLLER_NOT_LISTED,
                    ("nodes", host.group_index, "roles"),
                    f"node '{host.name}' has the slurm_controller role but is not "
                    "in slurm.controllers",
                )
            )
    return problems


def _accounting(cluster: ResolvedCluster) -> list[Problem]:
    spec, hosts = cluster.spec, cluster.hosts
    accounting = spec.slurm.accounting
    dbd_hosts = [h for h in hosts if "slurm_dbd" in h.roles]
    if accounting is None:
        if dbd_hosts:
            return [
                Problem(
                    codes.SLURM_DBD_WITHOUT_ACCOUNTING,
                    ("nodes", dbd_hosts[0].group_index, "roles"),
                    f"node '{dbd_hosts[0].name}' has the slurm_dbd role but slurm.accounting "
                    "is not set, so slurmdbd is not configured",
                )
            ]
        return []
    host = cluster.by_name.get(accounting.host)
    path = ("slurm", "accounting", "host")
    if host is None:
        message = unknown_node(accounting.host, cluster.by_name)
        return [Problem(codes.SLURM_UNKNOWN_NODE, path, message)]
    if "slurm_dbd" not in meant_roles(spec, host.roles):
        return [
            Problem(
                codes.SLURM_ACCOUNTING_HOST_WITHOUT_ROLE,
                path,
                f"node '{accounting.host}' does not have the slurm_dbd role",
            )
        ]
    # The slurm role installs and starts slurmdbd on every node of the role; only the
    # accounting host's is the one slurmctld talks to (AccountingStorageHost).
    return [
        Problem(
            codes.SLURM_DBD_ROLE_ELSEWHERE,
            ("nodes", other.group_index, "roles"),
            f"node '{other.name}' has the slurm_dbd role, but slurm.accounting.host is "
            f"'{accounting.host}': site.yml would install and start a second slurmdbd there, "
            "which no slurmctld talks to, with the database password in its slurmdbd.conf; "
            f"remove the role from '{other.name}'",
        )
        for other in _first_of_each_group(h for h in dbd_hosts if h.name != accounting.host)
    ]


def state_save(cluster: ResolvedCluster) -> list[Problem]:
    """With slurm.state_save.shared, every controller mounts the file system that holds
    the state folder: one the spec mounts (storage.nfs, storage.lustre) on them all, or,
    where none of its mounts holds the folder, one the site mounts itself (a warning)."""
    slurm = cluster.spec.slurm
    if not slurm.state_save.shared:
        return []
    path = slurm.state_save.path
    at = ("slurm", "state_save", "shared")
    holding = [
        (mount, clients)
        for mount, clients in _mounts_and_clients(cluster)
        if path == mount or path.startswith(mount.rstrip("/") + "/")
    ]
    if not holding:
        return [
            Problem(
                codes.SLURM_STATE_SAVE_UNMOUNTED,
                at,
                f"slurm.state_save.shared is true, but {path} lies on none of the spec's NFS "
                "or Lustre mounts: clustergen mounts nothing there, so unless the site mounts "
                "one file system there on every controller, each keeps its own state and a "
                "takeover loses the queue; put state_save.path under a storage.nfs mount "
                "that the controllers mount (roles: [slurm_controller])",
            )
        ]
    mount, clients = max(holding, key=lambda held: len(held[0]))  # the innermost mount
    missing = [name for name in slurm.controllers if name not in clients]
    if not missing:
        return []
    return [
        Problem(
            codes.SLURM_STATE_SAVE_NOT_ON_CONTROLLERS,
            at,
            f"slurm.state_save.path {path} lies on the mount {mount}, which controller(s) "
            f"{', '.join(missing)} do not mount: there slurmctld writes its state to the "
            "local folder beneath, and a takeover loses the queue; add slurm_controller to "
            "the mount's roles (storage.nfs[].roles, storage.lustre.mount.clients)",
        )
    ]


def _mounts_and_clients(cluster: ResolvedCluster) -> list[tuple[str, frozenset[str]]]:
    """Each network mount of the spec (NFS, Lustre) with the nodes that mount it."""
    storage = cluster.spec.storage
    if storage is None:
        return []
    mounts = [
        (mount.path, frozenset(clients))
        for mount, clients in zip(storage.nfs, cluster.nfs_clients, strict=True)
    ]
    if storage.lustre is not None:
        mounts.append((storage.lustre.mount.path, cluster.lustre_clients))
    return mounts


def _first_of_each_group(hosts: Iterable[Host]) -> list[Host]:
    """One host per node group: a group's nodes share its roles, so one problem says it."""
    seen: dict[int, Host] = {}
    for host in hosts:
        seen.setdefault(host.group_index, host)
    return list(seen.values())


def _is_compute(spec: Spec, roles: tuple[str, ...], known: dict[tuple[str, ...], bool]) -> bool:
    """Whether roles, as meant, make a compute node; `known` keeps the answer for the
    next node of the same roles (a group's nodes share one tuple of them)."""
    if roles not in known:
        known[roles] = "compute" in meant_roles(spec, roles)
    return known[roles]


def _partitions(cluster: ResolvedCluster) -> list[Problem]:
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
            assert profile.gpu is not None
            count = profile.gpu.count
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


# slurm.conf keys whose value is a password (slurm.conf is world-readable on every node).
_SECRET_KEYS = {key.lower(): key for key in ("AccountingStoragePass", "JobCompPass")}
# A credential inside any value: a URL's user:password@ (RFC 3986 3.2.1 userinfo, e.g.
# JobCompLoc=https://elastic:pw@host for jobcomp/elasticsearch), or a token or password
# passed as a parameter.
_CREDENTIAL = re.compile(
    r"[a-z][a-z0-9+.-]*://[^/\s@]*:[^/\s@]*@|(?:^|[?&,;\s])"
    r"(?:password|passwd|pass|token|secret|api_?key)=",
    re.IGNORECASE,
)


def _credential(key: str) -> Problem:
    """A key that holds a password (_SECRET_KEYS), or a value with a credential in it."""
    lowered = key.lower()
    if lowered in _SECRET_KEYS:
        return Problem(
            codes.SLURM_OPTION_SECRET,
            ("slurm", "options", key),
            f"{_SECRET_KEYS[lowered]} holds a password, which would be written into "
            "slurm.conf for anyone who reads the rendered tree; clustergen renders no "
            "secret (slurmdbd's comes from the vault: "
            "slurm.accounting.database.password_variable)",
            at="key",
        )
    return Problem(
        codes.SLURM_OPTION_SECRET,
        ("slurm", "options", key),
        f"{key} holds a credential (a user:password@ or a token in its value), which would "
        "be written into slurm.conf, readable by every user on every node and by anyone who "
        "reads the rendered tree; clustergen renders no secret: give the service its "
        "credential another way (a file only SlurmUser reads, or the service's own "
        "configuration)",
    )


def _duplicate_options(spec: Spec) -> list[Problem]:
    """A key given twice in different case: slurmctld reads keys in any case and keeps one
    of the two, while a reader (a reviewer, the slurm role) may take the other."""
    first: dict[str, str] = {}
    problems = []
    for key in spec.slurm.options:
        seen = first.setdefault(key.lower(), key)
        if seen != key:
            problems.append(
                Problem(
                    codes.SLURM_OPTION_DUPLICATE,
                    ("slurm", "options", key),
                    f"{key} is {seen} again, in other case: Slurm reads keys in any case, so "
                    "the file would say two things for one key; give it once",
                    at="key",
                )
            )
    return problems


def _options(spec: Spec) -> list[Problem]:
    list_version = key_list_version(spec.software.slurm)
    if list_version is None:
        return []  # the software check reports the unsupported version
    accepted = accepted_keys(list_version)
    derived = {key.lower(): (key, where) for key, where in DERIVED_KEYS.items()}
    deprecated = {key.lower(): (key, where) for key, where in DEPRECATED_KEYS.items()}
    problems = _duplicate_options(spec)
    for key in spec.slurm.options:
        path = ("slurm", "options", key)
        lowered = key.lower()
        if lowered in _SECRET_KEYS or _CREDENTIAL.search(str(spec.slurm.options[key])):
            problems.append(_credential(key))
        elif lowered in deprecated:
            name, where = deprecated[lowered]
            problems.append(
                Problem(
                    codes.SLURM_OPTION_DEPRECATED,
                    path,
                    f"{name} is deprecated and not written; use {where}",
                    at="key",
                )
            )
        elif lowered in derived:
            name, where = derived[lowered]
            problems.append(
                Problem(
                    codes.SLURM_OPTION_DERIVED,
                    path,
                    f"clustergen writes {name} itself from {where}",
                    at="key",
                )
            )
        elif lowered in accepted and accepted[lowered].defunct:
            problems.append(
                Problem(
                    codes.SLURM_OPTION_DEFUNCT,
                    path,
                    f"{accepted[lowered].name} is defunct in Slurm {release_name(list_version)}: "
                    "slurmctld logs an error and ignores it",
                    at="key",
                )
            )
        elif lowered in accepted and accepted[lowered].removed:
            problems.append(
                Problem(
                    codes.SLURM_OPTION_UNKNOWN,
                    path,
                    f"{accepted[lowered].name} was removed from Slurm: slurmctld "
                    f"{release_name(list_version)} stops with a fatal error on it"
                    f"{_removed_detail(accepted[lowered].name, accepted[lowered].note)}; "
                    "remove it",
                    at="key",
                )
            )
        elif lowered not in accepted:
            hint = _FOLKLORE_KEYS.get(lowered)
            live = (k.name for k in accepted.values() if not (k.defunct or k.removed))
            detail = f"; {hint}" if hint else _other_versions(lowered, list_version)
            detail = detail or did_you_mean(key, live)
            problems.append(
                Problem(
                    codes.SLURM_OPTION_UNKNOWN,
                    path,
                    f"'{key}' is not a slurm.conf key in {_slurm_label(spec, list_version)} "
                    f"(slurmctld would refuse to start){detail}",
                    at="key",
                )
            )
    return problems


def _removed_detail(name: str, note: str) -> str:
    """' (FastSchedule=1 only logs ...)' from a key list's note 'removed: fatal, but =1 ...'."""
    _, _, exception = note.partition(", but ")
    return f" ({name}{exception})" if exception else ""


def _slurm_label(spec: Spec, list_version: tuple[int, ...]) -> str:
    """'Slurm 23.11', or for a release between key lists, which list it was checked against."""
    pinned = spec.software.slurm
    if release_name(list_version) == ".".join(pinned.split(".")[:2]):
        return f"Slurm {release_name(list_version)}"
    return f"Slurm {pinned} (checked against the {release_name(list_version)} key list)"


def _other_versions(lowered: str, list_version: tuple[int, ...]) -> str:
    """'; ... only from Slurm 24.11 on' when another release's parser acts on the key."""
    live_in = [
        v
        for v in KEY_LIST_VERSIONS
        if lowered in accepted_keys(v)
        and not (accepted_keys(v)[lowered].defunct or accepted_keys(v)[lowered].removed)
    ]
    newer = [v for v in live_in if v > list_version]
    older = [v for v in live_in if v < list_version]
    if newer and not older:
        name = accepted_keys(newer[0])[lowered].name
        return f"; {name} is a slurm.conf key only from Slurm {release_name(newer[0])} on"
    if older:
        name = accepted_keys(older[-1])[lowered].name
        return f"; Slurm {release_name(older[-1])} was the last to accept {name}"
    ignored_in = [v for v in KEY_LIST_VERSIONS if v < list_version and lowered in accepted_keys(v)]
    if ignored_in:
        name = accepted_keys(ignored_in[-1])[lowered].name
        return (
            f"; {name} was defunct (read and ignored) up to Slurm "
            f"{release_name(ignored_in[-1])} and is gone since"
        )
    return ""


def _policies(spec: Spec) -> list[Problem]:
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


# slurmdbd creates this QOS itself; a spec may name it without defining it.
BUILTIN_QOS = "normal"


def _qos(spec: Spec) -> list[Problem]:
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
    enforce = next(
        (str(v) for k, v in slurm.options.items() if k.lower() == "accountingstorageenforce"), None
    )
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


def _timeouts(spec: Spec) -> list[Problem]:
    options = {k.lower(): (k, v) for k, v in spec.slurm.options.items()}
    if "unkillablesteptimeout" not in options:
        return []  # clustergen derives it from MessageTimeout
    key, unkillable = options["unkillablesteptimeout"]
    message = options.get("messagetimeout", ("MessageTimeout", 10))[1]
    try:
        too_short = int(str(unkillable)) < 5 * int(str(message))
    except ValueError:
        return []
    if not too_short:
        return []
    return [
        Problem(
            codes.SLURM_UNKILLABLE_BELOW_MESSAGE_TIMEOUT,
            ("slurm", "options", key),
            f"UnkillableStepTimeout={unkillable} is below 5 x MessageTimeout ({message}): "
            "nodes go down with KillTaskFailed while a GPU job is still letting go of its "
            "devices",
        )
    ]


# slurm.conf(5), SchedulerParameters (24.11): bf_window defaults to 1440 minutes (one day)
# and may be at most 43200 (30 days); "A value at least as long as the highest allowed time limit
# is generally advisable to prevent job starvation."
BF_WINDOW_DEFAULT_MIN = 1440
BF_WINDOW_LIMIT_MIN = 43200


def _days(minutes: int) -> str:
    days = minutes / 1440
    return f"{days:g} day{'' if days == 1 else 's'}"


def _backfill_window(spec: Spec) -> list[Problem]:
    """A site's SchedulerParameters replaces clustergen's bf_window (the longest MaxTime);
    a shorter window never plans a job with a longer limit, so it can starve."""
    given = next(
        ((k, str(v)) for k, v in spec.slurm.options.items() if k.lower() == "schedulerparameters"),
        None,
    )
    scheduler = next(
        (str(v) for k, v in spec.slurm.options.items() if k.lower() == "schedulertype"),
        "sched/backfill",
    )
    if given is None or not spec.slurm.partitions or scheduler != "sched/backfill":
        return []  # bf_window "applies only to SchedulerType=sched/backfill"
    key, value = given
    window_text = next(
        (
            p.partition("=")[2]
            for p in value.split(",")
            if p.strip().lower().startswith("bf_window=")
        ),
        None,
    )
    if window_text is not None and not window_text.strip().isdigit():
        return []
    window = BF_WINDOW_DEFAULT_MIN if window_text is None else int(window_text)
    longest, name = 0, ""
    for partition in spec.slurm.partitions:
        minutes = parse_slurm_time(str(partition.max_time or "UNLIMITED"))
        minutes = BF_WINDOW_LIMIT_MIN if minutes is None else minutes
        if minutes > longest:
            longest, name = minutes, partition.name
    wanted = min(longest, BF_WINDOW_LIMIT_MIN)
    if window >= wanted:
        return []
    stated = (
        f"bf_window={window}"
        if window_text is not None
        else f"no bf_window, so Slurm's default {window}"
    )
    limit = next(p.max_time or "UNLIMITED" for p in spec.slurm.partitions if p.name == name)
    finite = parse_slurm_time(str(limit)) is not None
    advice = (
        f"bf_window={wanted}"
        if finite and wanted == longest
        else f"bf_window={wanted}, the most Slurm accepts"
    )
    return [
        Problem(
            codes.SLURM_BACKFILL_WINDOW_SHORT,
            ("slurm", "options", key),
            f"SchedulerParameters sets {stated} ({_days(window)}), shorter than the longest "
            f"MaxTime, {limit}{f' ({_days(longest)})' if finite else ''} of partition "
            f"'{name}': backfill plans only {_days(window)} ahead, so a job with a longer time "
            "limit is never planned and can starve; slurm.conf(5) advises a window at least "
            f"as long as the longest time limit: {advice}, or leave SchedulerParameters to "
            "clustergen",
        )
    ]


def _srun_ports(spec: Spec) -> list[Problem]:
    """On EL, firewalld is on by default and the slurm role opens only the ports the
    rendered files name; srun's listening ports are named only by SrunPortRange."""
    if OS_PACKAGE_FAMILY[spec.software.os] != "dnf":
        return []
    if any(key.lower() == "srunportrange" for key in spec.slurm.options):
        return []
    return [
        Problem(
            codes.SLURM_SRUN_PORTS_FIREWALLED,
            ("slurm", "options"),
            f"on {spec.software.os} firewalld drops what srun listens on, and without "
            "SrunPortRange srun takes any free port, so slurmd and slurmctld cannot reach "
            "it and jobs hang at launch; set slurm.options.SrunPortRange (e.g. 60001-63000, "
            "which the playbook opens on login and compute nodes)",
            at="key",
        )
    ]


# The folders the slurm role creates and gives to a daemon (roles/slurm/defaults/main.yml
# slurm_directories): slurm.conf key, whether the key names the folder (or a file in
# it), the owner (None: SlurmUser) and mode the role sets, and clustergen's default.
# StateSaveLocation comes from slurm.state_save.path.
_CHOWNED_FOLDERS: tuple[tuple[str, bool, str | None, str, str], ...] = (
    ("SlurmdSpoolDir", True, "root", "0755", "/var/spool/slurmd"),
    ("SlurmctldLogFile", False, None, "0755", "/var/log/slurm/slurmctld.log"),
    ("SlurmdLogFile", False, None, "0755", "/var/log/slurm/slurmd.log"),
)


def folders(cluster: ResolvedCluster) -> list[Problem]:
    """No folder the slurm role chowns is a system folder (catalog/folders.py)."""
    slurm = cluster.spec.slurm
    options = {key.lower(): (key, value) for key, value in slurm.options.items()}
    user = str(options.get("slurmuser", ("", "slurm"))[1])
    state = slurm.state_save.path
    # (where, path as written, the folder the role chowns, owner, mode, the default)
    chowned = [
        (("slurm", "state_save", "path"), state, state, user, "0750", "/var/spool/slurmctld")
    ]
    for name, is_folder, owner, mode, default in _CHOWNED_FOLDERS:
        key, value = options.get(name.lower(), (name, None))
        path = str(value)
        if value is None or not path.startswith("/"):
            continue
        folder = path if is_folder else posixpath.dirname(posixpath.normpath(path))
        chowned.append((("slurm", "options", key), path, folder, owner or user, mode, default))
    problems = []
    shared = shared_mounts(cluster.spec)
    for at, path, folder, owner, mode, default in chowned:
        system = system_folder(folder) or (root_owned(folder) if owner != "root" else None)
        # The state folder of several controllers lies on a shared file system by design
        # (slurm.state_save.shared); nothing else the role chowns may.
        users = user_writable(
            folder, () if at[1] == "state_save" and slurm.state_save.shared else shared
        )
        if system is None and users is not None and users != RELATIVE:
            problems.append(
                Problem(
                    codes.PATH_USERS_CAN_WRITE,
                    at,
                    f"'{path}': the slurm role would create {folder} and give it to {owner} "
                    f"as root, and {folder} lies in {users}, where users can write (a link "
                    "planted there makes root chown what it points to); use a path of "
                    f"Slurm's own, such as {default}",
                )
            )
        if system is None:
            continue
        folder = posixpath.normpath(folder)
        which = folder if folder == posixpath.normpath(path) else f"its folder {folder}"
        why = "a system folder" if system == folder else f"under {system}, which is the system's"
        problems.append(
            Problem(
                codes.SLURM_SYSTEM_FOLDER,
                at,
                f"'{path}': the slurm role would give {which} to {owner} (chown "
                f"{owner}:{owner}, chmod {mode}), and {folder} is {why}; use a path of "
                f"Slurm's own, such as {default}",
            )
        )
    return problems


# The first release whose HealthCheckNodeState parser knows each newer word
# (src/common/read_config.c: NONDRAINED_IDLE in 23.02, START_ONLY in 25.11).
_HEALTH_STATE_SINCE: dict[str, VersionTuple] = {"NONDRAINED_IDLE": (23, 2), "START_ONLY": (25, 11)}


def _health_check(spec: Spec) -> list[Problem]:
    """NHC pinned from a repository the spec lists; a health check without it warns; the
    node states against the pinned Slurm's parser."""
    health, nhc = spec.slurm.health_check, spec.software.nhc
    problems = []
    names = [repository.name for repository in spec.software.repositories]
    if nhc is not None and nhc.repository not in names:
        offered = f"; it has {', '.join(names)}" if names else ", which lists none"
        problems.append(
            Problem(
                codes.SOFTWARE_NHC_REPOSITORY_UNKNOWN,
                ("software", "nhc", "repository"),
                f"'{nhc.repository}' is not a repository of software.repositories"
                f"{did_you_mean(nhc.repository, names)}{offered}",
            )
        )
    if health is None:
        return problems
    if nhc is None:
        problems.append(
            Problem(
                codes.SLURM_HEALTH_CHECK_WITHOUT_NHC,
                ("slurm", "health_check"),
                "no HealthCheckProgram: software.nhc pins no LBNL NHC, so the nodes are "
                "checked only by the Epilog after jobs, and a node that fails between jobs "
                "takes the next one; pin NHC (software.nhc, from a repository of "
                "software.repositories: no distribution packages it) to check them every "
                f"{health.interval_s} s",
            )
        )
    pinned = parse_version(spec.software.slurm)
    for index, word in enumerate(health.node_state):
        since = _HEALTH_STATE_SINCE.get(word)
        if since is not None and pinned[:2] < since:
            problems.append(
                Problem(
                    codes.SLURM_HEALTH_CHECK_STATE_UNSUPPORTED,
                    ("slurm", "health_check", "node_state", index),
                    f"HealthCheckNodeState {word} needs Slurm "
                    f"{'.'.join(f'{n:02d}' if i else str(n) for i, n in enumerate(since))} or "
                    f"later; software.slurm pins {spec.software.slurm}",
                )
            )
    return problems
