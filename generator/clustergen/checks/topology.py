"""Fabric topology: the switches form one tree, and every Slurm node hangs from one leaf."""

from __future__ import annotations

from clustergen import codes
from clustergen.checks.references import unknown_node
from clustergen.errors import Problem
from clustergen.fabric import blocking, ratio
from clustergen.hosts import compress
from clustergen.model.network import LINK_GBITS
from clustergen.resolve import ResolvedCluster
from clustergen.suggest import did_you_mean


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

    parent_of: dict[str, str] = {}
    unknown_child = False
    for index, switch in enumerate(fabric.switches):
        for child in cluster.switch_children[index]:
            path = (*base, index, "switches")
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
            elif child in parent_of:
                problems.append(
                    Problem(
                        codes.NETWORK_SWITCH_TWO_PARENTS,
                        path,
                        f"switch '{child}' already hangs from '{parent_of[child]}'",
                    )
                )
            else:
                parent_of[child] = switch.name

    problems += _one_tree(fabric.switches, parent_of, index_of, base, unknown_child)
    problems += _leaf_membership(cluster, base)
    return problems


def _one_tree(
    switches: list,  # type: ignore[type-arg]
    parent_of: dict[str, str],
    index_of: dict[str, int],
    base: tuple,  # type: ignore[type-arg]
    unknown_child: bool,
) -> list[Problem]:
    names = [switch.name for switch in switches]
    roots = [name for name in dict.fromkeys(names) if name not in parent_of]
    children: dict[str, list[str]] = {}
    for child, parent in parent_of.items():
        children.setdefault(parent, []).append(child)
    reached: set[str] = set()
    stack = list(roots)
    while stack:
        name = stack.pop()
        if name not in reached:
            reached.add(name)
            stack.extend(children.get(name, []))
    problems = []
    on_a_cycle: set[str] = set()
    for name in dict.fromkeys(names):
        if name in reached or name in on_a_cycle:
            continue
        # Unreached switches all have parents, so walking up ends in a cycle.
        trail: list[str] = []
        while name not in trail:
            trail.append(name)
            name = parent_of[name]
        cycle = trail[trail.index(name) :]
        if on_a_cycle & set(cycle):
            continue
        on_a_cycle.update(cycle)
        closing = max(cycle, key=lambda member: index_of[member])  # the entry listed last
        chain = [closing]
        while len(chain) == 1 or chain[-1] != closing:
            chain.append(next(m for m in cycle if parent_of[m] == chain[-1]))
        problems.append(
            Problem(
                codes.NETWORK_SWITCH_CYCLE,
                (*base, index_of[closing], "switches"),
                f"switch cycle {' > '.join(chain)} (each lists the next under 'switches'); "
                "the switches must form one tree under a top switch",
            )
        )
    if len(roots) > 1 and not unknown_child:  # an unknown child leaves its switch a top
        problems.append(
            Problem(
                codes.NETWORK_SWITCH_FOREST,
                base,
                f"the switches form {len(roots)} separate trees (tops: "
                f"{', '.join(roots)}); add a spine switch over them",
                at="key",
            )
        )
    return problems


def _leaf_membership(cluster: ResolvedCluster, base: tuple[str | int, ...]) -> list[Problem]:
    fabric = cluster.spec.network.fabric
    assert fabric is not None
    switches, hosts, known = fabric.switches, cluster.hosts, cluster.by_name
    leaf_of: dict[str, str] = {}
    problems = []
    for index, switch in enumerate(switches):
        if not switch.nodes:
            continue
        path = (*base, index, "nodes")
        for name in cluster.switch_nodes[index]:
            if name not in known:
                problems.append(
                    Problem(codes.NETWORK_UNKNOWN_NODE, path, unknown_node(name, cluster.by_name))
                )
            elif name in leaf_of:
                problems.append(
                    Problem(
                        codes.NETWORK_NODE_TWO_LEAVES,
                        path,
                        f"node '{name}' already hangs from leaf '{leaf_of[name]}'",
                    )
                )
            else:
                leaf_of[name] = switch.name
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


def oversubscription(cluster: ResolvedCluster) -> list[Problem]:
    """A leaf blocked more than the max_blocking of a partition with nodes on it and on
    other leaves (default 1 for a GPU partition): its jobs across leaves get a fraction of
    their HCAs' bandwidth.

    The message names no leaf (the path does), so that leaves cabled alike read alike."""
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
    problems = []
    for switch in blocking(cluster):
        nodes = set(cluster.switch_nodes[switch.index])
        if switch.hca_ports == 0 or not nodes:
            continue
        # A partition whose nodes all hang here sends nothing up: its jobs stay on the leaf.
        on_leaf = [
            (t, i) for t, i, members in targets if members & nodes and (members & on_a_leaf) - nodes
        ]
        if not on_leaf:
            continue
        target, index = min(on_leaf)
        if switch.factor <= target:
            continue
        partition = spec.slurm.partitions[index]
        declared = (
            f"max_blocking {ratio(target)} of partition '{partition.name}'"
            if partition.max_blocking is not None
            else f"1:1 (non-blocking) that GPU partition '{partition.name}' gets by default "
            f"(slurm.partitions[{index}].max_blocking)"
        )
        problems.append(
            Problem(
                codes.NETWORK_LEAF_OVERSUBSCRIBED,
                ("network", "fabric", "switches", switch.index),
                f"leaf blocked {ratio(switch.factor)} ({switch.hca_ports} HCA ports down, "
                f"{switch.up_cables} uplink{'s' if switch.up_cables > 1 else ''} up, all at "
                f"{LINK_GBITS[fabric.rate]} Gb/s), above the {declared}; a job across leaves "
                f"gets 1/{round(switch.factor, 2):g} of its HCAs' bandwidth: add uplinks, or "
                "set max_blocking to the ratio the design accepts",
            )
        )
    return problems


def _all_gpu(cluster: ResolvedCluster, members: frozenset[str]) -> bool:
    hosts = [cluster.by_name[name] for name in members if name in cluster.by_name]
    return bool(hosts) and all(h.profiled and h.hardware.gpu is not None for h in hosts)
