"""Validate and render time, and slurm.conf size, as the cluster grows.

Run: python benchmarks/bench_scale.py  (writes nothing; prints a Markdown table)

The spec is the 8-node reference spec with its GPU group widened to N nodes,
the networks widened to fit and one leaf switch per 32 nodes. Each figure is
the best of 3 runs, in-process, from YAML text to rendered files in memory.
"""

from __future__ import annotations

import copy
import io
import time
from pathlib import Path

from ruamel.yaml import YAML

from clustergen.render import render_all
from clustergen.spec.load import parse_spec
from clustergen.validate import validate_cluster

REFERENCE = Path(__file__).resolve().parent.parent / "examples" / "ml-training-8node.yaml"
SIZES = (8, 256, 2048, 16384)


def scaled_spec(nodes: int) -> str:
    yaml = YAML(typ="safe")
    document = yaml.load(REFERENCE.read_text())
    document = copy.deepcopy(document)
    width = len(str(nodes))
    names = f"gpu[{1:0{width}d}-{nodes:0{width}d}]"
    document["network"]["management"] = {"cidr": "10.0.0.0/16", "gateway": "10.0.0.1"}
    document["network"]["bmc"] = {"cidr": "10.1.0.0/16"}
    document["network"]["fabric"]["cidr"] = "10.10.0.0/16"
    group = document["nodes"][0]
    group.update(names=names, management_ip="10.0.1.1", bmc_ip="10.1.1.1", fabric_ip="10.10.1.1")
    for offset, other in enumerate(document["nodes"][1:]):
        other.update(
            management_ip=f"10.0.0.{10 + offset * 8}",
            bmc_ip=f"10.1.0.{10 + offset * 8}",
            fabric_ip=f"10.10.0.{10 + offset * 8}",
        )
    leaves = [
        {
            "name": f"leaf{i + 1:04d}",
            "nodes": f"gpu[{start:0{width}d}-{min(start + 31, nodes):0{width}d}]",
        }
        for i, start in enumerate(range(1, nodes + 1, 32))
    ]
    leaves.append({"name": "leaf-svc", "nodes": "slurm-head,mds01,oss[01-04]"})
    document["network"]["fabric"]["switches"] = [
        *leaves,
        {"name": "spine", "switches": ",".join(leaf["name"] for leaf in leaves)},
    ]
    document["slurm"]["partitions"] = [
        {"name": "gpu-training", "nodes": names, "default": True, "max_time": "UNLIMITED"}
    ]
    document["racks"] = []
    buffer = io.StringIO()
    YAML().dump(document, buffer)
    return buffer.getvalue()


def best_of(runs: int, action):  # type: ignore[no-untyped-def]
    best, result = float("inf"), None
    for _ in range(runs):
        start = time.perf_counter()
        result = action()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    print("| nodes | validate (s) | validate + render (s) | slurm.conf lines | slurm.conf bytes |")
    print("|---:|---:|---:|---:|---:|")
    for nodes in SIZES:
        text = scaled_spec(nodes)

        def check(text: str = text):  # type: ignore[no-untyped-def]
            cluster, problems = validate_cluster(parse_spec(text, "bench.yaml", "bench.yaml"))
            assert cluster is not None, [p.format() for p in problems[:5]]
            return cluster

        validate_s, _ = best_of(3, check)
        total_s, files = best_of(3, lambda check=check: render_all(check()))
        conf = files["slurm/slurm.conf"].text
        row = [nodes, f"{validate_s:.3f}", f"{total_s:.3f}", len(conf.splitlines()), len(conf)]
        print("| " + " | ".join(str(cell) for cell in row) + " |")


if __name__ == "__main__":
    main()
