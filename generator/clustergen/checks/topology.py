"""Fabric topology: the switches form a graph without cycles in which each plane is joined,
and every HCA of a node is cabled to one leaf (every HCA to one leaf, or one leaf per rail)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from clustergen.base import codes
from clustergen.base.errors import Problem, SpecPath
from clustergen.base.suggest import did_you_mean
from clustergen.checks.references import unknown_node
from clustergen.model.network import LINK_GBITS, Switch
from clustergen.resolve import ResolvedCluster
from clustergen.resolve.fabric import Blocking, blocking, nodes_below, planes, ratio, tiers
from clustergen.spec.hosts import Host, compress


def check(cluster: ResolvedCluster) -> list[Problem]:
    spec = cluster.spec
    fabric = spec.network.fabric
    if fabric is None or not fabric.switches:
        return []
    base = ("network", "fabric", "switches")
    problems: list[Problem] = []
    index_of: dict[str, int] = {}
    for index, switch in enumerate(fabric.switches):
        if switch.name in index_of:
            problems.append(
                Problem(
                    codes.NETWORK_DUPLICATE_SWITCH,
                    (*base, index, "name"),
                    f"switch '{switch.name}' is already defined at "
                    f"network.fabric.switches[{index_of[switch.name]}]",
                )
            )
        index_of.setdefault(switch.name, index)

    children: dict[str, list[str]] = {}
    unknown_child = False
    for index, switch in enumerate(fabric.switches):
        path = (*base, index, "switches")
        for child in cluster.switch_children[index]:
            if child not in index_of:
                unknown_child = True
                problems.append(
                    Problem(
                        codes.NETWORK_UNKNOWN_SWITCH,
                        path,
                        f"unknown switch '{child}'{did_you_mean(child, index_of)}",
                    )
                )
            elif child == switch.name:
                problems.append(
                    Problem(
                        codes.NETWORK_SWITCH_OWN_CHILD,
                        path,
                        f"switch '{child}' cannot be its own child",
                    )
                )
            else:
                children.setdefault(switch.name, []).append(child)

    cycles = _cycles(children, index_of, base)
    problems += cycles
    if not cycles and not unknown_child:  # an unknown child leaves its switch unjoined
        problems += _planes_joined(fabric.switches, children, base)
        problems += _rails_not_joined(cluster, base)
    problems += _leaf_membership(cluster, base)
    problems += _uncabled_rails(cluster, base)
    problems += uneven_uplinks(cluster)
    return problems


def storage_switches(cluster: ResolvedCluster) -> list[Problem]:
    """The storage fabric's switches are not drawn yet: refused, so that none is silently
    left off the cable sheets and port budgets."""
    storage = cluster.spec.network.storage
    if storage is None or not storage.switches:
        return []
    return [
        Problem(
            codes.NETWORK_STORAGE_SWITCHES,
            ("network", "storage", "switches"),
            "the storage fabric's switches are not modelled: clustergen derives cabling, "
            "ports and topology from network.fabric only, so these would be left off every "
            "sheet; leave them out (docs/networks.md)",
            at="key",
        )
    ]


def _cycles(
    children: dict[str, list[str]], index_of: dict[str, int], base: tuple[str | int, ...]
) -> list[Problem]:
    """Every cycle of 'switches' lists once, at the entry of it listed last."""
    state: dict[str, int] = {}  # 1 on the path being walked, 2 done
    problems = []
    for root in index_of:
        if root in state:
            continue
        trail = [root]
        walks = [iter(children.get(root, ()))]
        state[root] = 1
        while walks:
            child = next(walks[-1], None)
            if child is None:
                state[trail.pop()] = 2
                walks.pop()
            elif state.get(child) == 1:
                cycle = trail[trail.index(child) :]
                closing = max(cycle, key=lambda member: index_of[member])
                at = cycle.index(closing)
                # From the entry listed last, each lists the next under 'switches'.
                chain = [*cycle[at:], *cycle[:at], closing][::-1]
                problems.append(
                    Problem(
                        codes.NETWORK_SWITCH_CYCLE,
                        (*base, index_of[closing], "switches"),
                        f"switch cycle {' > '.join(chain)} (each lists the next under "
                        "'switches'); a switch must never be below itself",
                    )
                )
            elif child not in state:
                state[child] = 1
                trail.append(child)
                walks.append(iter(children.get(child, ())))
    return problems


def _planes_joined(
    switches: Sequence[Switch], children: dict[str, list[str]], base: tuple[str | int, ...]
) -> list[Problem]:
    """The leaves of each plane (a rail, or the leaves that carry every HCA) are joined by
    cables through the switches above them; different rails need not be."""
    part = _parts([s.name for s in switches], children)
    by_rail: dict[int | None, dict[int, list[str]]] = {}
    for switch in switches:
        if switch.nodes is not None:
            by_rail.setdefault(switch.rail, {}).setdefault(part[switch.name], []).append(
                switch.name
            )
    problems = []
    for rail, parts in by_rail.items():
        if len(parts) < 2:
            continue
        plane = "the leaves" if rail is None else f"the leaves of rail {rail}"
        groups = "; ".join(compress(leaves) for leaves in parts.values())
        problems.append(
            Problem(
                codes.NETWORK_SWITCH_FOREST,
                base,
                f"{plane} form {len(parts)} parts that no switch joins ({groups}): list "
                "each leaf under every spine it is cabled to, or add the spine that joins "
                "them",
                at="key",
            )
        )
    return problems


def _rails_not_joined(cluster: ResolvedCluster, base: SpecPath) -> list[Problem]:
    """Rails that no switch joins are fabrics of their own. NCCL's documentation of
    NCCL_CROSS_NIC: rails "still need to be connected at the top" for traffic between
    rails; NVIDIA's DGX SuperPOD reference architectures cable every leaf of every rail to
    the spines. Disjoint planes are a choice that a spec may make, never the default
    (RailFabric: every leaf goes up to every spine unless spines_per_rail splits them)."""
    railed = [plane for plane in planes(cluster) if plane.rails]
    if len(railed) < 2:
        return []
    return [
        Problem(
            codes.NETWORK_RAILS_NOT_JOINED,
            base,
            f"the fabric's {len(railed)} rails are {len(railed)} separate planes, as no "
            "switch joins two rails: a GPU reaches another node's GPU on another rail only "
            "through its own node, NCCL keeps each ring and tree on one rail "
            "(NCCL_CROSS_NIC=0; NCCL's documentation: rails \"still need to be connected at "
            "the top\"), losing a spine cuts one rail's bandwidth alone, and on InfiniBand "
            "every plane needs a subnet manager of its own; join them (every leaf up to "
            "every spine: leave out spines_per_rail, or add cores above the rails' spines) "
            "unless the planes are meant",
            at="key",
        )
    ]


def _parts(names: list[str], children: dict[str, list[str]]) -> dict[str, int]:
    """Each switch's connected part (cables in either direction), numbered in spec order."""
    neighbours: dict[str, list[str]] = {name: [] for name in names}
    for parent, below in children.items():
        for child in below:
            neighbours[parent].append(child)
            neighbours[child].append(parent)
    part: dict[str, int] = {}
    for name in names:
        if name in part:
            continue
        number = len(set(part.values()))
        stack = [name]
        while stack:
            here = stack.pop()
            if here not in part:
                part[here] = number
                stack.extend(neighbours[here])
    return part


def _leaf_membership(cluster: ResolvedCluster, base: tuple[str | int, ...]) -> list[Problem]:
    """Every HCA cabled once: a node hangs from one leaf that takes all its HCAs, or from
    one leaf per rail; a rail the node has no compute HCA for is reported."""
    fabric = cluster.spec.network.fabric
    assert fabric is not None
    switches, hosts, known = fabric.switches, cluster.hosts, cluster.by_name
    leaf_of: dict[str, dict[int | None, str]] = {}  # node -> rail -> leaf
    hca_count = _hca_counter()
    problems = []
    for index, switch in enumerate(switches):
        if not switch.nodes:
            continue
        path = (*base, index, "nodes")
        unknown, short = [], []
        for name in cluster.switch_nodes[index]:
            if name not in known:
                unknown.append(name)
                continue
            taken = leaf_of.setdefault(name, {})
            clash = taken.get(switch.rail) or (
                next(iter(taken.values()), None) if switch.rail is None else taken.get(None)
            )
            if clash is not None:
                problems.append(_two_leaves(path, name, clash, switch.rail))
                continue
            taken[switch.rail] = switch.name
            host = known[name]
            rails = hca_count(host) if host.profiled else None
            if switch.rail is not None and rails is not None and switch.rail > rails:
                short.append(name)
        problems += _unknown_nodes(path, unknown, known)
        if short:
            problems.append(
                Problem(
                    codes.NETWORK_RAIL_WITHOUT_HCA,
                    path,
                    f"leaf '{switch.name}' carries rail {switch.rail}, but "
                    f"{_nodes(short)} {'have' if len(short) > 1 else 'has'} fewer than "
                    f"{switch.rail} compute HCAs (hardware fabric_hcas or topology.hcas)",
                )
            )
    missing = [h.name for h in hosts if h.is_slurm_compute and h.name not in leaf_of]
    if missing:
        problems.append(
            Problem(
                codes.NETWORK_COMPUTE_NODE_NO_LEAF,
                base,
                f"Slurm compute node{'s' if len(missing) > 1 else ''} "
                f"{compress(missing)} hang{'' if len(missing) > 1 else 's'} "
                "from no leaf switch; topology/tree would leave "
                f"{'them' if len(missing) > 1 else 'it'} out of multi-node jobs",
                at="key",
            )
        )
    return problems


def _hca_counter() -> Callable[[Host], int]:
    """The number of compute HCAs of a host's profile, counted once per profile."""
    counts: dict[str, int] = {}

    def count(host: Host) -> int:
        if host.hardware_name not in counts:
            counts[host.hardware_name] = len(host.hardware.compute_hcas())
        return counts[host.hardware_name]

    return count


def _two_leaves(path: SpecPath, name: str, clash: str, rail: int | None) -> Problem:
    what = f"rail {rail} of node '{name}' is" if rail is not None else f"node '{name}'"
    where = "cabled to" if rail is not None else "hangs from"
    return Problem(
        codes.NETWORK_NODE_TWO_LEAVES,
        path,
        f"{what} already {where} leaf '{clash}'"
        + ("" if rail is not None else "; the leaves of a rail-optimised fabric say their 'rail'"),
    )


def _unknown_nodes(path: SpecPath, unknown: list[str], known: Mapping[str, Host]) -> list[Problem]:
    """One problem for a few unknown names, each with its suggestion; one with the count for
    many (a pattern's leaves list the same wrong range many times)."""
    if len(unknown) <= 4:
        return [Problem(codes.NETWORK_UNKNOWN_NODE, path, unknown_node(n, known)) for n in unknown]
    return [
        Problem(
            codes.NETWORK_UNKNOWN_NODE,
            path,
            f"{len(unknown)} unknown nodes {compress(unknown)}",
        )
    ]


def _nodes(names: list[str]) -> str:
    return f"node {names[0]}" if len(names) == 1 else f"{len(names)} nodes {compress(names)}"


def _uncabled_rails(cluster: ResolvedCluster, base: tuple[str | int, ...]) -> list[Problem]:
    """A node on rail leaves whose compute HCAs are not all cabled: once per group of nodes
    missing the same rails."""
    fabric = cluster.spec.network.fabric
    assert fabric is not None
    rails: dict[str, set[int]] = {}
    for switch, nodes in zip(fabric.switches, cluster.switch_nodes, strict=True):
        if switch.rail is not None:
            for name in nodes:
                rails.setdefault(name, set()).add(switch.rail)
    missing: dict[tuple[int, ...], list[str]] = {}
    hca_count = _hca_counter()
    for name, cabled in rails.items():
        host = cluster.by_name.get(name)
        if host is None or not host.profiled:
            continue
        count = hca_count(host)
        absent = tuple(r for r in range(1, count + 1) if r not in cabled)
        if absent:
            missing.setdefault(absent, []).append(name)
    return [
        Problem(
            codes.NETWORK_HCA_UNCABLED,
            base,
            f"{_nodes(names)} hang{'s' if len(names) == 1 else ''} from rail leaves, but "
            f"{'rail' if len(absent) == 1 else 'rails'} {', '.join(map(str, absent))} of "
            f"{'its' if len(names) == 1 else 'their'} compute HCAs "
            f"{'is' if len(absent) == 1 else 'are'} cabled to no leaf",
            at="key",
        )
        for absent, names in missing.items()
    ]


def uneven_uplinks(cluster: ResolvedCluster) -> list[Problem]:
    """Switches of one tier that send different numbers of cables up: once per tier, at the
    first switch that differs from the most common count."""
    tier = tiers(cluster)
    counts: dict[int, list[tuple[int, int, str]]] = {}
    for row in cluster.switch_ports:
        if row.up:
            up = sum(n for _, n in row.up)
            counts.setdefault(tier.get(row.name, 0), []).append((up, row.index, row.name))
    problems = []
    for level, rows in sorted(counts.items()):
        usual = max({up for up, _, _ in rows}, key=lambda n: sum(1 for up, _, _ in rows if up == n))
        odd = [(up, index, name) for up, index, name in rows if up != usual]
        if not odd:
            continue
        up, index, name = odd[0]
        kind = TIER_NAMES[min(level, 2)]
        kinds = "leaves" if kind == "leaf" else f"{kind}s"
        one = len(odd) == 1
        problems.append(
            Problem(
                codes.NETWORK_UPLINKS_UNEVEN,
                ("network", "fabric", "switches", index),
                f"{kind} '{name}'{'' if one else f' and {len(odd) - 1} more'} "
                f"send{'s' if one else ''} {up} cable{'s' if up != 1 else ''} up, the other "
                f"{kinds} {usual}: traffic through {'it' if one else 'them'} gets another share "
                "of the tier above",
            )
        )
    return problems


TIER_NAMES = ("leaf", "spine", "core")


def oversubscription(cluster: ResolvedCluster) -> list[Problem]:
    """A switch blocked more than the max_blocking of a partition with nodes below it and
    elsewhere (default 1 for a GPU partition): its jobs across it get a fraction of their
    HCAs' bandwidth. A leaf's factor is its HCA ports over its uplinks, a spine's its
    leaves' cables over its own cables up.

    The message names no switch (the path does), so that switches cabled alike read alike."""
    spec = cluster.spec
    fabric = spec.network.fabric
    if fabric is None:
        return []
    targets: list[tuple[float, int, frozenset[str]]] = []
    for index, partition in enumerate(spec.slurm.partitions):
        members = frozenset(cluster.partition_nodes[index])
        target = partition.max_blocking
        if target is None and _all_gpu(cluster, members):
            target = 1.0
        if target is not None:
            targets.append((target, index, members))
    if not targets:
        return []
    on_a_leaf = {name for nodes in cluster.switch_nodes for name in nodes}
    # Each partition's nodes on a leaf: only these send traffic through the fabric.
    reaching = [(t, i, members & on_a_leaf) for t, i, members in targets]
    rows = blocking(cluster)
    below = nodes_below(cluster, {row.name for row in rows})
    problems = []
    for switch in rows:
        nodes = below[switch.name]
        if not nodes:
            continue
        # A partition whose nodes are all below here sends nothing up: its jobs stay here.
        # Not on a rail leaf: a transfer from one rail to another goes through the tier
        # above however few nodes there are (NCCL's PXN moves it onto the rail over NVLink
        # first, where the GPUs share an NVSwitch), so a rail leaf is judged as any leaf.
        rail = fabric.switches[switch.index].rail is not None
        crossing = [
            (t, i)
            for t, i, reach in reaching
            if not reach.isdisjoint(nodes) and (rail or len(reach & nodes) < len(reach))
        ]
        if not crossing:
            continue
        target, index = min(crossing)
        if switch.factor > target:
            problems.append(_blocked(cluster, switch, target, index, rail))
    return problems


def _blocked(
    cluster: ResolvedCluster, switch: Blocking, target: float, index: int, rail: bool
) -> Problem:
    spec = cluster.spec
    fabric = spec.network.fabric
    assert fabric is not None
    partition = spec.slurm.partitions[index]
    declared = (
        f"max_blocking {ratio(target)} of partition '{partition.name}'"
        if partition.max_blocking is not None
        else f"1:1 (non-blocking) that GPU partition '{partition.name}' gets by default "
        f"(slurm.partitions[{index}].max_blocking)"
    )
    ups = f"{switch.up_cables} uplink{'s' if switch.up_cables > 1 else ''} up"
    path = ("network", "fabric", "switches", switch.index)
    gbits = LINK_GBITS[fabric.rate]
    if switch.hca_ports:
        across = (
            "a transfer from one rail to another (or a job across scalable units)"
            if rail
            else "a job across leaves"
        )
        return Problem(
            codes.NETWORK_LEAF_OVERSUBSCRIBED,
            path,
            f"{'rail ' if rail else ''}leaf blocked {ratio(switch.factor)} "
            f"({switch.hca_ports} HCA ports down, {ups}, all at {gbits} Gb/s), above the "
            f"{declared}; {across} gets 1/{round(switch.factor, 2):g} of its HCAs' "
            "bandwidth: add uplinks, or set max_blocking to the ratio the design accepts",
        )
    return Problem(
        codes.NETWORK_SPINE_OVERSUBSCRIBED,
        path,
        f"spine blocked {ratio(switch.factor)} ({switch.down_ports} cables down, {ups}, all "
        f"at {gbits} Gb/s), above the {declared}; a job across spines gets "
        f"1/{round(switch.factor, 2):g} of its leaves' bandwidth: add cables to the cores, or "
        "set max_blocking to the ratio the design accepts",
    )


def _all_gpu(cluster: ResolvedCluster, members: frozenset[str]) -> bool:
    hosts = [cluster.by_name[name] for name in members if name in cluster.by_name]
    return bool(hosts) and all(h.profiled and h.hardware.gpu is not None for h in hosts)
