"""Lustre: target indices, roles and devices, NID networks, layouts, pools and tuning."""

from __future__ import annotations

import re
from ipaddress import IPv4Network
from pathlib import PurePosixPath

from clustergen.base import codes
from clustergen.base.errors import Problem, SpecPath
from clustergen.base.suggest import did_you_mean
from clustergen.base.systemd import UNIT_NAME_MAX, unit_name
from clustergen.catalog.distributions import DISTRIBUTIONS
from clustergen.catalog.gpus import profile_cpu_arch
from clustergen.catalog.groups import LUSTRE_SERVER_ROLES
from clustergen.catalog.lustre import (
    ARM64_DKMS_CLIENT_FROM,
    BRW_SIZE_KEY,
    MAX_STRIPE_SIZE,
    PAGE,
    PAGES_PER_RPC_KEY,
    STRIPE_ALIGN,
    TUNING,
    UBUNTU_2404_FROM,
    brw_size_mib,
    networks,
)
from clustergen.catalog.versions import parse_version
from clustergen.model.common import parse_size
from clustergen.model.storage import LayoutComponent, Lustre, LustreLayout, ServerTarget
from clustergen.resolve import ResolvedCluster
from clustergen.spec.hosts import Host, compress

BASE: SpecPath = ("storage", "lustre")
# Kernel names that can change between boots.
_KERNEL_NAME = re.compile(r"^/dev/(?:sd[a-z]+|vd[a-z]+|xvd[a-z]+|nvme[0-9]+n[0-9]+)[0-9p]*$")
_ROLE = {"mgs": "lustre_mgs", "mdts": "lustre_mds", "osts": "lustre_oss"}
_LABEL = {"mgs": "MGS", "mdts": "MDT", "osts": "OST"}


def _lustre(cluster: ResolvedCluster) -> Lustre | None:
    storage = cluster.spec.storage
    return storage.lustre if storage else None


def _targets(lustre: Lustre) -> list[tuple[SpecPath, str, ServerTarget]]:
    """(path, kind, target) of the MGS, every MDT and every OST."""
    found: list[tuple[SpecPath, str, ServerTarget]] = [((*BASE, "mgs"), "mgs", lustre.mgs)]
    found += [((*BASE, "mdts", i), "mdts", t) for i, t in enumerate(lustre.mdts)]
    found += [((*BASE, "osts", i), "osts", t) for i, t in enumerate(lustre.osts)]
    return found


def indices(cluster: ResolvedCluster) -> list[Problem]:
    """Each MDT and OST index once; a duplicate is reported at both."""
    lustre = _lustre(cluster)
    if lustre is None:
        return []
    problems = []
    for kind, targets in (("mdts", lustre.mdts), ("osts", lustre.osts)):
        first: dict[int, int] = {}
        for i, target in enumerate(targets):
            if target.index not in first:
                first[target.index] = i
                continue
            j = first[target.index]
            label = _LABEL[kind]
            for here, there in ((j, i), (i, j)):
                problems.append(
                    Problem(
                        codes.STORAGE_DUPLICATE_INDEX,
                        (*BASE, kind, here, "index"),
                        f"{label} index {target.index} is also given to {kind}[{there}]",
                    )
                )
    return problems


def servers(cluster: ResolvedCluster) -> list[Problem]:
    """Target nodes carry the role; their NID network is on their LNet interfaces;
    devices suit the backend."""
    lustre = _lustre(cluster)
    if lustre is None:
        return []
    hosts = cluster.by_name
    nets = {net.name: net for net in networks(cluster.spec, lustre)}
    problems: list[Problem] = []
    for path, kind, target in _targets(lustre):
        role = _ROLE[kind]
        nodes = [((*path, "node"), target.node)]
        nodes += [((*path, "failover", i), n) for i, n in enumerate(target.failover)]
        for node_path, name in nodes:
            host = hosts.get(name)
            if host is None:
                continue  # references.storage reports unknown nodes
            if role not in host.roles:
                problems.append(
                    Problem(
                        codes.STORAGE_TARGET_ROLE,
                        node_path,
                        f"node '{name}' serves an {_LABEL[kind]} but lacks the role {role}",
                    )
                )
            net = nets.get(lustre.lnet)
            # The NID is on the storage address with storage interfaces (a group without
            # storage_ip is reported by the addresses check), else on fabric_ip, else on
            # tcp on management_ip.
            address = host.lnet_address(lustre.lnet)
            if address is None and not host.storage_netdevs:
                problems.append(
                    Problem(
                        codes.STORAGE_NID_NETWORK,
                        node_path,
                        f"node '{name}' has no fabric_ip for its NID on {lustre.lnet}",
                    )
                )
            elif address is not None and (
                net is None or not net.interfaces.get(host.hardware_name)
            ):
                problems.append(
                    Problem(
                        codes.STORAGE_NID_NETWORK,
                        node_path,
                        f"node '{name}' (hardware '{host.hardware_name}') has no LNet "
                        f"interface on {lustre.lnet}, the network of its NID",
                    )
                )
        problems += _device(lustre, path, target)
    return problems


def _device(lustre: Lustre, path: SpecPath, target: ServerTarget) -> list[Problem]:
    device: str = target.device
    at = (*path, "device")
    problems = []
    backend = lustre.backend_of(target)
    if backend == "ldiskfs":
        if not device.startswith("/"):
            problems.append(
                Problem(
                    codes.STORAGE_DEVICE_NOT_ABSOLUTE,
                    at,
                    f"'{device}' is a zfs dataset; an ldiskfs target needs a /dev path",
                )
            )
        for key in ("zpool", "dataset"):
            if getattr(target, key) is not None:
                problems.append(
                    Problem(
                        codes.STORAGE_ZFS_ON_LDISKFS,
                        (*path, key),
                        f"'{key}' is for zfs targets; backend is ldiskfs",
                        at="key",
                    )
                )
        disks = [(at, device)]
    else:
        if device.startswith("/") or device.count("/") < 1:
            problems.append(
                Problem(
                    codes.STORAGE_ZFS_DATASET,
                    at,
                    f"'{device}': a zfs target is pool/dataset, e.g. {lustre.fsname}-ost0/ost0",
                )
            )
        pool = target.zpool
        disks = (
            [((*path, "zpool", "devices", i), d) for i, d in enumerate(pool.devices)]
            if pool
            else []
        )
    problems += [
        Problem(
            codes.STORAGE_DEVICE_KERNEL_NAME,
            disk_path,
            f"'{disk}' can name another disk after a reboot; use /dev/disk/by-id/",
        )
        for disk_path, disk in disks
        if _KERNEL_NAME.match(disk)
    ]
    return problems


def lnet(cluster: ResolvedCluster) -> list[Problem]:
    """LNet interfaces name defined hardware profiles."""
    lustre = _lustre(cluster)
    if lustre is None:
        return []
    return [
        Problem(
            codes.STORAGE_UNKNOWN_PROFILE,
            (*BASE, "networks", i, "interfaces", profile),
            f"unknown hardware profile '{profile}'{did_you_mean(profile, cluster.spec.hardware)}",
            at="key",
        )
        for i, net in enumerate(lustre.networks)
        for profile in net.interfaces
        if profile not in cluster.spec.hardware
    ]


def lnet_subnets(cluster: ResolvedCluster) -> list[Problem]:
    """An LNet network is nodes that reach each other directly (Lustre Operations Manual,
    "Understanding Lustre Networking": a network is "a group of nodes that communicate
    directly with each other"). o2ib finds a peer by its IPoIB address, so a server NID in
    an IPoIB subnet where a node has no port is one it cannot reach without a router; LNet
    Multi-Rail discovery still hands it that NID, and the failed connections count against
    the peer's health. Said per hardware profile of the nodes that lack a server subnet."""
    lustre = _lustre(cluster)
    if lustre is None:
        return []
    network = cluster.spec.network
    servers = {lustre.mgs.node, *lustre.mgs.failover}
    for target in (*lustre.mdts, *lustre.osts):
        servers |= {target.node, *target.failover}
    mounting = servers | set(cluster.lustre_clients)
    problems = []
    for net in networks(cluster.spec, lustre):
        subnets: dict[str, set[IPv4Network]] = {}
        for host in cluster.hosts:
            netdevs = net.interfaces.get(host.hardware_name) if host.name in mounting else None
            if not netdevs:
                continue
            found = (
                *host.storage_addresses(network.storage),
                *host.fabric_addresses(network.fabric),
            )
            address = {a.netdev: a for a in found}
            subnets[host.name] = {
                IPv4Network(f"{a.address}/{a.prefix}", strict=False)
                for netdev in netdevs
                if (a := address.get(netdev)) is not None
            }
        served = set().union(*(subnets[name] for name in servers if name in subnets))
        if len(served) < 2:
            continue
        lacking: dict[str, list[str]] = {}
        for host in cluster.hosts:
            if host.name in subnets and host.name not in servers and served - subnets[host.name]:
                lacking.setdefault(host.hardware_name, []).append(host.name)
        for profile, names in lacking.items():
            missing = sorted(served - subnets[names[0]])
            problems.append(
                Problem(
                    codes.STORAGE_LNET_SUBNET_UNREACHABLE,
                    ("hardware", profile, "interfaces"),
                    f"on LNet network {net.name} the Lustre servers have NIDs in "
                    f"{', '.join(map(str, sorted(served)))}, but {compress(names)} "
                    f"({profile}) have no port in {', '.join(map(str, missing))}: LNet "
                    "Multi-Rail discovery hands them the servers' NIDs there, which o2ib "
                    "cannot reach without a router (it finds a peer by its IPoIB address), so "
                    "those connections fail and count against the servers' health; give "
                    "these nodes a port in each of the servers' subnets, or the servers "
                    "their ports in the subnets every node has",
                    at="key",
                )
            )
    return problems


def mount(cluster: ResolvedCluster) -> list[Problem]:
    """The mount point's systemd unit has a name systemd accepts (and a file can have)."""
    lustre = _lustre(cluster)
    if lustre is None:
        return []
    unit = unit_name(lustre.mount.path, "mount")
    if len(unit) <= UNIT_NAME_MAX:
        return []
    return [
        Problem(
            codes.STORAGE_MOUNT_UNIT_NAME,
            (*BASE, "mount", "path"),
            f"the mount unit of this path is named with {len(unit)} characters "
            f"(systemd-escape --path), more than systemd's {UNIT_NAME_MAX}",
        )
    ]


def layouts(cluster: ResolvedCluster) -> list[Problem]:
    """Pools over defined OSTs; layouts under the mount, aligned, ascending, ending
    at eof, with DoM first and within the MDT's limit."""
    lustre = _lustre(cluster)
    if lustre is None:
        return []
    ost_indices = {t.index for t in lustre.osts}
    pools = {pool.name: len(set(pool.osts)) for pool in lustre.pools}
    problems = [
        Problem(
            codes.STORAGE_POOL_OST,
            (*BASE, "pools", i, "osts", j),
            f"pool '{pool.name}' lists OST {index}, which is not defined",
        )
        for i, pool in enumerate(lustre.pools)
        for j, index in enumerate(pool.osts)
        if index not in ost_indices
    ]
    for i, layout in enumerate(lustre.layouts):
        problems += _layout(lustre, (*BASE, "layouts", i), layout, len(lustre.osts), pools)
    for i, quota in enumerate(lustre.quotas):
        at = (*BASE, "quotas", i)
        if quota.type != "project":
            if quota.path is not None:
                problems.append(
                    Problem(
                        codes.STORAGE_QUOTA_PROJECT,
                        (*at, "path"),
                        f"a {quota.type} quota covers the whole file system; only project "
                        "quotas take a path",
                    )
                )
        elif not isinstance(quota.id, int):
            problems.append(
                Problem(codes.STORAGE_QUOTA_PROJECT, (*at, "id"), "a project id is a number")
            )
        elif quota.path is None or not under(quota.path, lustre.mount.path):
            problems.append(
                Problem(
                    codes.STORAGE_QUOTA_PROJECT,
                    (*at, "path") if quota.path else at,
                    f"a project quota needs a directory under {lustre.mount.path}",
                )
            )
    return problems


def under(path: str, mount: str) -> bool:
    """Is `path` the mount point or a directory below it, segment by segment (so
    /mnt/lustre2 is not under /mnt/lustre)? The paths have no '.', '..' or empty
    segments (model.syntax.ABSOLUTE_PATH), so their segments are where they lead."""
    parts, top = PurePosixPath(path).parts, PurePosixPath(mount).parts
    return parts[: len(top)] == top


def _layout(
    lustre: Lustre, path: SpecPath, layout: LustreLayout, osts: int, pools: dict[str, int]
) -> list[Problem]:
    problems = []
    if not under(layout.path, lustre.mount.path):
        problems.append(
            Problem(
                codes.STORAGE_LAYOUT_OUTSIDE_MOUNT,
                (*path, "path"),
                f"'{layout.path}' is not under the mount point {lustre.mount.path}",
            )
        )

    def stripes(at: SpecPath, count: int | None, pool: str | None, size: str | None) -> None:
        available = osts
        if pool is not None:
            if pool not in pools:
                problems.append(
                    Problem(
                        codes.STORAGE_UNKNOWN_POOL,
                        (*at, "pool"),
                        f"unknown OST pool '{pool}'{did_you_mean(pool, pools)}",
                    )
                )
            else:
                available = pools[pool]
        if count is not None and count > available:
            where = f"pool '{pool}' has" if pool in pools else "the file system has"
            problems.append(
                Problem(
                    codes.STORAGE_STRIPE_COUNT,
                    (*at, "stripe_count"),
                    f"stripe_count {count} but {where} {available} OSTs (-1 = all)",
                )
            )
        if size is not None:
            problems.extend(_aligned((*at, "stripe_size"), size, "stripe size"))

    stripes(path, layout.stripe_count, layout.pool, layout.stripe_size)
    components = layout.components or []
    for j, component in enumerate(components):
        stripes(
            (*path, "components", j), component.stripe_count, component.pool, component.stripe_size
        )
    problems += _components(lustre, (*path, "components"), components)
    return problems


def _aligned(at: SpecPath, size: str, what: str) -> list[Problem]:
    value = parse_size(size)
    if value % STRIPE_ALIGN or (value >= MAX_STRIPE_SIZE and what == "stripe size"):
        return [
            Problem(
                codes.STORAGE_STRIPE_ALIGN,
                at,
                f"{what} {size} must be a multiple of 64KiB"
                + (" below 4GiB" if what == "stripe size" else ""),
            )
        ]
    return []


def _components(lustre: Lustre, at: SpecPath, components: list[LayoutComponent]) -> list[Problem]:
    problems: list[Problem] = []
    previous = 0
    dom_limit = parse_size(lustre.dom_limit)
    for j, component in enumerate(components):
        end_at = (*at, j, "end")
        if component.end == "eof":
            if j != len(components) - 1:
                problems.append(
                    Problem(
                        codes.STORAGE_COMPONENT_ORDER,
                        end_at,
                        "only the last component may end at eof",
                    )
                )
        else:
            aligned = _aligned(end_at, component.end, "component end")
            problems += aligned
            end = parse_size(component.end)
            if end <= previous:
                problems.append(
                    Problem(
                        codes.STORAGE_COMPONENT_ORDER,
                        end_at,
                        f"component end {component.end} does not come after the previous end",
                    )
                )
            previous = max(previous, end)
        if component.mdt:
            if j != 0:
                problems.append(
                    Problem(
                        codes.STORAGE_DOM_PLACEMENT,
                        (*at, j, "mdt"),
                        "a Data-on-MDT component must be the first",
                    )
                )
            elif component.end == "eof" or parse_size(component.end) > dom_limit:
                problems.append(
                    Problem(
                        codes.STORAGE_DOM_PLACEMENT,
                        end_at,
                        f"a Data-on-MDT component ends at {component.end}, above the MDTs' "
                        f"DoM limit {lustre.dom_limit} (dom_limit)",
                    )
                )
    if components and components[-1].end != "eof":
        problems.append(
            Problem(
                codes.STORAGE_LAST_COMPONENT,
                (*at, len(components) - 1, "end"),
                f"the last component ends at {components[-1].end}; end it at eof so "
                "larger files have a layout",
            )
        )
    return problems


def tuning(cluster: ResolvedCluster) -> list[Problem]:
    """Known keys, in range, in the right place; max_pages_per_rpc within brw_size."""
    lustre = _lustre(cluster)
    if lustre is None:
        return []
    problems: list[Problem] = []
    brw_pages = brw_size_mib(lustre) * (1 << 20) // PAGE
    for section, values in (
        ("client_tuning", lustre.client_tuning),
        ("persistent_tuning", lustre.persistent_tuning),
    ):
        for key, value in values.items():
            at = (*BASE, section, key)
            param = TUNING.get(key)
            if param is None:
                problems.append(
                    Problem(
                        codes.STORAGE_TUNING_UNKNOWN,
                        at,
                        f"unknown parameter '{key}'{did_you_mean(key, TUNING)}; applied unchecked",
                        at="key",
                    )
                )
                continue
            if section == "client_tuning" and param.place == "server":
                problems.append(
                    Problem(
                        codes.STORAGE_TUNING_PLACE,
                        at,
                        f"'{key}' is a server parameter; set it in persistent_tuning",
                        at="key",
                    )
                )
            if not isinstance(value, int) or not param.low <= value <= param.high:
                unit = f" ({param.unit})" if param.unit else ""
                problems.append(
                    Problem(
                        codes.STORAGE_TUNING_RANGE,
                        at,
                        f"{key} = {value}: expected a whole number {param.low}-{param.high}{unit}",
                    )
                )
            elif key == PAGES_PER_RPC_KEY and value > brw_pages:
                problems.append(
                    Problem(
                        codes.STORAGE_PAGES_PER_RPC,
                        at,
                        f"{key} = {value} pages is above the servers' {BRW_SIZE_KEY} of "
                        f"{brw_size_mib(lustre)} MiB ({brw_pages} pages); raise brw_size in "
                        "persistent_tuning or lower this",
                    )
                )
    return problems


def packages(cluster: ResolvedCluster) -> list[Problem]:
    """Lustre's packages exist for the OS and architecture (catalog/lustre.py): its
    DKMS client on arm64 from 2.16 on, Ubuntu 24.04 from 2.16 on, and on apt the server
    modules only as the site's build for one kernel (software.lustre_server_kernel)."""
    lustre, software = _lustre(cluster), cluster.spec.software
    if lustre is None or software.lustre is None:
        return []
    release = parse_version(software.lustre)[:2]
    at = ("software", "lustre")
    shipped = f"Lustre {software.lustre}"
    problems = []
    if software.os == "ubuntu-24.04" and release < UBUNTU_2404_FROM:
        problems.append(
            Problem(
                codes.STORAGE_LUSTRE_RELEASE_FOR_OS,
                at,
                f"{shipped} does not build for Ubuntu 24.04: its ChangeLog names no Ubuntu "
                "24.04 kernel (2.16.0's is the first, 6.8.0-38), and ldiskfs has no patch "
                "series for it; pin Lustre 2.16 or later",
            )
        )
    family = DISTRIBUTIONS[software.os].family
    arm = sorted(name for name in cluster.lustre_clients if _is_arm(cluster.by_name[name]))
    if family == "apt" and arm and release < ARM64_DKMS_CLIENT_FROM:
        problems.append(
            Problem(
                codes.STORAGE_LUSTRE_CLIENT_ARCHITECTURE,
                at,
                f"{shipped} builds its client (lustre-client-modules-dkms) for no arm64 node: "
                "arm64 is in Lustre's debian/control from 2.16.0 on (LU-17256), so "
                f"{compress(arm)} would mount nothing; pin Lustre 2.16 or later",
            )
        )
    servers = any(set(LUSTRE_SERVER_ROLES) & set(h.roles) for h in cluster.hosts)
    if family == "apt" and servers and software.lustre_server_kernel is None:
        problems.append(
            Problem(
                codes.STORAGE_LUSTRE_SERVER_MODULES_UNPINNED,
                at,
                "Lustre's Debian packaging builds no DKMS package of the server modules, "
                "only lustre-server-modules-<kernel> for the kernel it is built on: the "
                "servers get lustre-server-utils and no modules to mount a target with; "
                "build the modules for the servers' kernel and name it in "
                "software.lustre_server_kernel (an ldiskfs server also needs a kernel "
                "Lustre's ldiskfs patches; zfs targets need only the site's zfs build)",
            )
        )
    return problems


def _is_arm(host: Host) -> bool:
    return host.profiled and profile_cpu_arch(host.hardware) == "aarch64"
