"""The RDMA stack (software.rdma, roles/rdma, docs/rdma.md): who gets it, at which pins,
and what a spec says when clustergen installs none. The reference specs' render is in the
goldens; the converge check's device entry is in tests/test_converge_state.py."""

from __future__ import annotations

from pathlib import Path

import yaml

from clustergen.load import load_spec
from clustergen.render import render_all
from clustergen.resolve import ResolvedCluster
from clustergen.validate import validate_cluster

from support.paths import DATA, EXAMPLES

EDGE = EXAMPLES / "edge-roce-2node.yaml"


def _validated(tmp_path: Path, text: str) -> tuple[ResolvedCluster | None, list[str]]:
    path = tmp_path / "spec.yaml"
    path.write_text(text, encoding="utf-8")
    cluster, problems = validate_cluster(load_spec(str(path)))
    return cluster, [f"{p.code} {p.message}" for p in problems]


def _with_rdma(rdma: str, repositories: str = "") -> str:
    text = EDGE.read_text(encoding="utf-8")
    old = "  slurm: 24.11.5\n"
    assert text.count(old) == 1
    return text.replace(old, f"{old}  rdma: {rdma}\n{repositories}")


def test_nodes_with_hcas_get_the_distributions_stack_and_no_other_node_does(
    tmp_path: Path,
) -> None:
    """The edge example (RoCE, Ubuntu 24.04, no software.rdma): only lab1 and lab2 carry
    HCAs, and they get noble's rdma-core and perftest, pinned; a spec given its own
    versions pins those; the booted spec (no fabric) has no rdma group, file or pin."""
    cluster, _ = _validated(tmp_path, EDGE.read_text(encoding="utf-8"))
    assert cluster is not None
    assert cluster.members["rdma"] == {"lab1", "lab2"}
    tree = render_all(cluster)
    lock = yaml.safe_load(tree["versions.lock"].text)["groups"]
    assert lock["rdma"] == {
        "nodes": "lab[1-2]",
        "packages": {
            "ibverbs-utils": "50.0-*",
            "infiniband-diags": "50.0-*",
            "perftest": "24.01.0+0.38-1build2",
            "rdma-core": "50.0-*",
        },
    }
    rdma_vars = yaml.safe_load(tree["inventory/group_vars/rdma.yml"].text)
    assert rdma_vars["rdma_stack"] == "distribution"
    profile = yaml.safe_load(tree["inventory/group_vars/hw_l40s_4gpu.yml"].text)
    assert profile["rdma_devices"] == ["mlx5_0", "mlx5_1"]
    assert "inventory/group_vars/hw_small_server.yml" not in tree  # lab-head: no HCA

    own, problems = _validated(tmp_path, _with_rdma('{version: "50.1", perftest: 24.01.0-1}'))
    assert own is not None, problems
    assert own.pins.by_concern["rdma"]["rdma-core"] == "50.1-*"
    assert own.pins.by_concern["rdma"]["perftest"] == "24.01.0-1"

    bare, problems = _validated(tmp_path, (DATA / "booted-3node.yaml").read_text("utf-8"))
    assert bare is not None, problems
    bare_tree = render_all(bare)
    assert "rdma" not in bare.members
    assert "inventory/group_vars/rdma.yml" not in bare_tree
    assert "rdma" not in yaml.safe_load(bare_tree["versions.lock"].text)["groups"]
    assert not any("rdma_devices" in a.text for p, a in bare_tree.items() if "group_vars" in p)


def test_doca_ofed_installs_nothing_and_says_so(tmp_path: Path) -> None:
    """stack doca-ofed: no RDMA pin, the role told so (nvidia-peermem then loads), and a
    warning naming what the site must install; a repository not in the spec is an error;
    an OS whose rdma-core the catalog does not know warns instead of pinning a guess."""
    repositories = (
        "  repositories:\n"
        "    - {name: doca, url: https://linux.mellanox.com/public/repo/doca/2.9.1/ubuntu24.04/"
        "x86_64/, key_url: https://linux.mellanox.com/public/repo/doca/GPG-KEY-Mellanox.pub}\n"
    )
    doca = _with_rdma("{stack: doca-ofed, version: 2.9.1, repository: doca}", repositories)
    cluster, problems = _validated(tmp_path, doca)
    assert cluster is not None, problems
    assert cluster.pins.by_concern["rdma"] == {}
    [warning] = [p for p in problems if p.startswith("software.rdma-unpinned")]
    assert "DOCA-OFED 2.9.1 from repository 'doca'" in warning and "l40s-4gpu" in warning
    rdma_vars = yaml.safe_load(render_all(cluster)["inventory/group_vars/rdma.yml"].text)
    assert rdma_vars == {"rdma_packages": {}, "rdma_stack": "doca-ofed"}

    unknown = doca.replace("repository: doca}", "repository: mofed}")
    cluster, problems = _validated(tmp_path, unknown)
    assert cluster is None
    assert any(p.startswith("software.rdma-repository-unknown") for p in problems), problems

    trixie = EDGE.read_text(encoding="utf-8").replace("os: ubuntu-24.04", "os: debian-13")
    cluster, problems = _validated(tmp_path, trixie)
    assert cluster is not None, problems
    assert cluster.pins.by_concern["rdma"] == {}
    assert any(
        p.startswith("software.rdma-unpinned") and "rdma-core version of Debian 13" in p
        for p in problems
    ), problems
