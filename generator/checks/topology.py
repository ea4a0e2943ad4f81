"""Fabric topology: the switches form one tree, and every Slurm node hangs from one leaf."""

from __future__ import annotations

import hostlist

from clustergen.checks.references import unknown_node
from clustergen.errors import Problem
from clustergen.hosts import Host
from clustergen.model import Spec
from clustergen.model.common import expand_hostlist
from clustergen.suggest import did_you_mean


def check(spec: Spec, hosts: list[Host]) -> list[Problem]:
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
                    (*base, index, "name"),
                    f"switch '{switch.name}' is already defined at "
                    f"network.fabric.switches[{index_of[switch.name]}]",
                )
            )
        index_of.setdefault(switch.name, index)

    parent_of: dict[str, str] = {}
    for index, switch in enumerate(fabric.switches):
        for child in expand_hostlist(switch.switches) if switch.switches else []:
            path = (*base, index, "switches")
            if child not in index_of:
                problems.append(
                    Problem(path, f"unknown switch '{child}'{did_you_mean(child, index_of)}")
                )
            elif child == switch.name:
                problems.append(Problem(path, f"switch '{child}' cannot be its own child"))
            elif child in parent_of:
                problems.append(
                    Problem(path, f"switch '{child}' already hangs from '{parent_of[child]}'")
                )
            else:
                parent_of[child] = switch.name

    problems += _one_tree(fabric.switches, parent_of, base)
    problems += _leaf_membership(fabric.switches, hosts, base)
    return problems


def _one_tree(switches: list, parent_of: dict[str, str], base: tuple) -> list[Problem]:  # type: ignore[type-arg]
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
    looped = [name for name in dict.fromkeys(names) if name not in reached]
    if looped:
        problems.append(Problem(base, f"switches {', '.join(looped)} form a cycle", at="key"))
    if len(roots) > 1:
        problems.append(
            Problem(
                base,
                f"the switches form {len(roots)} separate trees (tops: "
                f"{', '.join(roots)}); add a spine switch over them",
                at="key",
            )
        )
    return problems


def _leaf_membership(switches: list, hosts: list[Host], base: tuple) -> list[Problem]:  # type: ignore[type-arg]
    known = {host.name: host for host in hosts}
    leaf_of: dict[str, str] = {}
    problems = []
    for index, switch in enumerate(switches):
        if not switch.nodes:
            continue
        path = (*base, index, "nodes")
        for name in expand_hostlist(switch.nodes):
            if name not in known:
                problems.append(Problem(path, unknown_node(name, hosts)))
            elif name in leaf_of:
                problems.append(
                    Problem(path, f"node '{name}' already hangs from leaf '{leaf_of[name]}'")
                )
            else:
                leaf_of[name] = switch.name
    missing = [h.name for h in hosts if h.is_slurm_compute and h.name not in leaf_of]
    if missing:
        problems.append(
            Problem(
                base,
                f"Slurm compute nodes {hostlist.collect_hostlist(missing)} hang from no "
                "leaf switch; topology/tree would leave them out of multi-node jobs",
                at="key",
            )
        )
    return problems
