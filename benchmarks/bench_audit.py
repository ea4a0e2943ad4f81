"""`clustergen audit` at 1,024, 4,096 and 16,384 nodes, against the render of the same spec,
measured in the same run.

Run: python benchmarks/bench_audit.py [--sizes 1024,4096,16384]  (prints Markdown; writes
nothing)

The spec is clustergen.dev.large_spec.compact_spec (bench_render's "compact"): 8-GPU HGX
nodes with 8 HCAs each on an HDR tree, Lustre on every node. Every node gets a fact file
synthesized healthy in the tools' formats (tests/support/audit_facts.py: slurmd -C,
nvidia-smi -q -x, ibstat, lnetctl, the dpkg list, ip -j addr; the first node also carries
ibnetdiscover of the whole fabric, one line per HCA cable), so audit reads every report
and every check runs; healthy input gives no finding, which the run asserts.

Measured in-process, each in a fresh validated cluster (validation is neither's cost):
- render: `render_all` (every file in memory, no writes);
- audit: splitting every fact file, the expectations from spec and tree, every check.
Audit's per-node time must stay flat from 1k to 16k nodes (linear growth). Targets live
here and in RESULTS.md, never in tests.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from clustergen.commands.audit.expect import applied_tree, expectations
from clustergen.commands.audit.facts import parse_facts
from clustergen.commands.audit.run import audit_facts
from clustergen.dev.large_spec import compact_spec
from clustergen.render import render_all
from clustergen.resolve import ResolvedCluster
from clustergen.spec.load import parse_spec
from clustergen.validate import validate_cluster

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from support.audit_facts import healthy_facts, ibnetdiscover

SIZES = (1024, 4096, 16384)


def _cluster(text: str) -> ResolvedCluster:
    cluster, problems = validate_cluster(parse_spec(text, "large.yaml", "large.yaml"))
    assert cluster is not None, problems[:3]
    return cluster


def measure(nodes: int) -> tuple[int, float, float, int]:
    """(hosts, render seconds, audit seconds, fact bytes)."""
    text = compact_spec(nodes)
    rendered = _cluster(text)
    start = time.perf_counter()
    files = render_all(rendered)
    render = time.perf_counter() - start
    tree = applied_tree(files["versions.lock"].text, files["facility/cables.csv"].text)
    expected = expectations(rendered, tree)
    scan = ibnetdiscover(expected)
    first = next(iter(expected))
    texts = [
        (name, healthy_facts(name, node, scan if name == first else None))
        for name, node in expected.items()
    ]
    cluster = _cluster(text)
    start = time.perf_counter()
    facts = [parse_facts(body, f"facts/{name}.txt") for name, body in texts]
    result = audit_facts(cluster, tree, facts)
    audit = time.perf_counter() - start
    assert result.findings == [] and result.reported == len(expected), result.findings[:3]
    return len(expected), render, audit, sum(len(body) for _, body in texts)


def main() -> None:
    sizes = SIZES
    if "--sizes" in sys.argv:
        sizes = tuple(int(n) for n in sys.argv[sys.argv.index("--sizes") + 1].split(","))
    print(
        "| GPU nodes | hosts | fact files (MB) | render (s) | audit (s) | audit / render "
        "| audit per host (ms) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    per_host = {}
    for nodes in sizes:
        hosts, render, audit, size = measure(nodes)
        per_host[nodes] = audit / hosts
        print(
            f"| {nodes} | {hosts} | {size / 1e6:.0f} | {render:.2f} | {audit:.2f} | "
            f"{audit / render:.2f} | {1000 * audit / hosts:.3f} |"
        )
    growth = per_host[sizes[-1]] / per_host[sizes[0]]
    print(f"\nper-host audit time, {sizes[-1]} / {sizes[0]} nodes: {growth:.2f} (1.00 is linear)")


if __name__ == "__main__":
    main()
