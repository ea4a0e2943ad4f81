"""Slurm: controllers, accounting, the state and spool folders, the health check, reboots
and configless; the partitions and QOS (slurm_partitions) and the keys of slurm.options
(slurm_options) have modules of their own."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence

from clustergen.base import codes
from clustergen.base.errors import Problem
from clustergen.base.suggest import did_you_mean
from clustergen.catalog.folders import RELATIVE, root_owned, system_folder, user_writable
from clustergen.catalog.pins import OS_PACKAGE_FAMILY
from clustergen.catalog.versions import VersionTuple, parse_version
from clustergen.checks import slurm_partitions
from clustergen.checks.references import meant_roles, unknown_node
from clustergen.checks.trusted_paths import shared_mounts
from clustergen.model import Spec
from clustergen.model.common import parse_slurm_time
from clustergen.resolve import ResolvedCluster
from clustergen.spec.hosts import Host


def nodes(cluster: ResolvedCluster) -> list[Problem]:
    """Controllers, accounting and partitions against the nodes that exist."""
    return [
        *_compute_nodes_exist(cluster.spec, cluster.hosts),
        *_controllers(cluster),
        *_accounting(cluster),
        *slurm_partitions.partitions_against_nodes(cluster),
        *_imported(cluster.spec),
        *_reboot(cluster),
    ]


def options(cluster: ResolvedCluster) -> list[Problem]:
    """The scheduling policies, QOS, timeouts, backfill window, srun ports, health check
    and configless settings (slurm_options.check reads the keys themselves)."""
    spec = cluster.spec
    return [
        *slurm_partitions.policies(spec),
        *slurm_partitions.qos(spec),
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
        problems += _domains_over_bound(cluster, reboot.max_per_partition)
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


def _domains_over_bound(cluster: ResolvedCluster, bound: int) -> list[Problem]:
    """Mode slurm: the roll-out hands an NVLink domain's trays to Slurm together (a domain
    runs one driver and IMEX version across its trays), so a partition must let all of a
    domain's trays in it out at once."""
    problems = []
    for _, domain in cluster.nvlink_domain_groups:
        trays = set(domain.nodes)
        for index, members in enumerate(cluster.partition_nodes):
            count = len(trays.intersection(members))
            if count > bound >= 1:
                partition = cluster.spec.slurm.partitions[index].name
                problems.append(
                    Problem(
                        codes.SLURM_REBOOT_BOUND_BELOW_DOMAIN,
                        ("slurm", "reboot", "max_per_partition"),
                        f"NVLink domain {domain.name} has {count} trays in partition "
                        f"{partition}, and max_per_partition lets {bound} out at once: the "
                        "roll-out hands a domain's trays to Slurm together (one driver and "
                        "IMEX version across the domain) and stops there; raise it to "
                        f"{count} or more, or use mode ansible",
                    )
                )
                break
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


# PartitionName keys clustergen writes from partition keys (outputs/slurm/nodes.py,
# partition_lines): a partition's options may not set them.
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
    scheduler = spec.slurm.option("SchedulerType") or "sched/backfill"
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
    if spec.slurm.option("SrunPortRange") is not None:
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
