"""Names and references: unique node names, and every name used refers to something."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from clustergen.base import codes
from clustergen.base.errors import Problem, SpecPath
from clustergen.base.suggest import did_you_mean, nearest
from clustergen.model import Spec
from clustergen.model.nodes import KNOWN_ROLES
from clustergen.model.storage import ServerTarget
from clustergen.resolve import ResolvedCluster
from clustergen.spec.hosts import Host


def node_groups(cluster: ResolvedCluster) -> list[Problem]:
    spec = cluster.spec
    hosts = cluster.hosts
    return [
        *_unique_node_names(hosts),
        *_dns_names(spec),
        *_hardware_exists(spec),
        *_roles_known(spec),
        *_unused_profiles(spec),
    ]


def racks(cluster: ResolvedCluster) -> list[Problem]:
    return _rack_positions(cluster.spec, cluster.by_name)


def storage(cluster: ResolvedCluster) -> list[Problem]:
    return _storage_nodes(cluster.spec, cluster.by_name)


def meant_roles(spec: Spec, roles: Iterable[str]) -> set[str]:
    """The roles as meant: an unknown role counts as the known role it misspells.

    Checks that need a role read roles through this, so a misspelt role is reported
    once (as unknown, with the suggestion) and not again as a missing role.
    """
    valid = (*KNOWN_ROLES, *spec.cluster.extra_roles)
    return {role if role in valid else (nearest(role, valid) or role) for role in roles}


def unknown_node(name: str, known: Mapping[str, Host]) -> str:
    return f"unknown node '{name}'{did_you_mean(name, known)}"


def _dns_names(spec: Spec) -> list[Problem]:
    """One warning per node group whose names hold an underscore (AWS ParallelCluster's
    queue names, containers' names): slurmctld, Ansible and the rendered /etc/hosts take
    them, but no DNS name may hold one (RFC 1123 section 2.1, RFC 952), and systemd's
    hostnamectl refuses it as the machine's static host name."""
    return [
        Problem(
            codes.NODES_HOSTNAME_NOT_DNS,
            ("nodes", index, "names"),
            f"'{group.names}' holds '_', which no DNS name may (RFC 1123) and systemd "
            "refuses in a static host name: the rendered /etc/hosts names these nodes, DNS "
            "may not; use '-' where DNS must name them",
        )
        for index, group in enumerate(spec.nodes)
        if "_" in group.names
    ]


def _unique_node_names(hosts: Sequence[Host]) -> list[Problem]:
    first_group: dict[str, int] = {}
    problems = []
    for host in hosts:
        earlier = first_group.setdefault(host.name, host.group_index)
        if earlier != host.group_index:
            problems.append(
                Problem(
                    codes.NODES_DUPLICATE_NAME,
                    ("nodes", host.group_index, "names"),
                    f"node '{host.name}' is already defined in nodes[{earlier}]",
                )
            )
    return problems


def _hardware_exists(spec: Spec) -> list[Problem]:
    return [
        Problem(
            codes.HARDWARE_UNKNOWN_PROFILE,
            ("nodes", index, "hardware"),
            f"unknown hardware profile '{group.hardware}'"
            + did_you_mean(group.hardware, spec.hardware),
        )
        for index, group in enumerate(spec.nodes)
        if group.hardware not in spec.hardware
    ]


def _roles_known(spec: Spec) -> list[Problem]:
    valid = (*KNOWN_ROLES, *spec.cluster.extra_roles)
    problems = []
    for index, group in enumerate(spec.nodes):
        for role_index, role in enumerate(group.roles):
            if role not in valid:
                problems.append(
                    Problem(
                        codes.NODES_UNKNOWN_ROLE,
                        ("nodes", index, "roles", role_index),
                        f"unknown role '{role}'{did_you_mean(role, valid)}; declare your own "
                        "roles in cluster.extra_roles",
                    )
                )
            elif role in group.roles[:role_index]:
                problems.append(
                    Problem(
                        codes.NODES_DUPLICATE_ROLE,
                        ("nodes", index, "roles", role_index),
                        f"role '{role}' is listed twice",
                    )
                )
    return problems


def _unused_profiles(spec: Spec) -> list[Problem]:
    used = {group.hardware for group in spec.nodes}
    if not used <= set(spec.hardware):
        return []  # a group names an unknown profile, likely the unused one misspelt
    return [
        Problem(
            codes.HARDWARE_UNUSED_PROFILE,
            ("hardware", name),
            f"hardware profile '{name}' is used by no node group",
            at="key",
        )
        for name in spec.hardware
        if name not in used
    ]


def _rack_positions(spec: Spec, known: Mapping[str, Host]) -> list[Problem]:
    placed: dict[str, str] = {}
    problems = []
    for rack_index, rack in enumerate(spec.racks):
        for device_index, device in enumerate(rack.devices):
            if device.node is None:
                continue
            path = ("racks", rack_index, "devices", device_index, "node")
            if device.node not in known:
                problems.append(
                    Problem(codes.RACKS_UNKNOWN_NODE, path, unknown_node(device.node, known))
                )
            elif device.node in placed:
                problems.append(
                    Problem(
                        codes.RACKS_NODE_PLACED_TWICE,
                        path,
                        f"node '{device.node}' is already placed at {placed[device.node]}",
                    )
                )
            else:
                placed[device.node] = f"{rack.name} U{device.u}"
    return problems


def _storage_nodes(spec: Spec, known: Mapping[str, Host]) -> list[Problem]:
    lustre = spec.storage.lustre if spec.storage else None
    if lustre is None:
        return []
    base: SpecPath = ("storage", "lustre")
    servers: list[tuple[SpecPath, ServerTarget]] = [((*base, "mgs"), lustre.mgs)]
    servers += [((*base, "mdts", i), t) for i, t in enumerate(lustre.mdts)]
    servers += [((*base, "osts", i), t) for i, t in enumerate(lustre.osts)]
    targets: list[tuple[SpecPath, str]] = []
    for path, server in servers:
        targets.append(((*path, "node"), server.node))
        targets += [((*path, "failover", i), name) for i, name in enumerate(server.failover)]
    problems = [
        Problem(codes.STORAGE_UNKNOWN_NODE, path, unknown_node(name, known))
        for path, name in targets
        if name not in known
    ]
    roles = (*KNOWN_ROLES, *spec.cluster.extra_roles)
    problems += [
        Problem(
            codes.STORAGE_UNKNOWN_ROLE,
            (*base, "mount", "clients", i),
            f"unknown role '{role}'{did_you_mean(role, roles)}",
        )
        for i, role in enumerate(lustre.mount.clients)
        if role not in roles
    ]
    return problems
