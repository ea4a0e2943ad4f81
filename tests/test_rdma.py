"""The RDMA stack (software.rdma, roles/rdma, docs/rdma.md): who gets it, at which pins,
and what a spec says when clustergen installs none. The reference specs' render is in the
goldens; the converge check's device entry is in tests/test_converge_state.py."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import yaml

from clustergen.render import render_all
from clustergen.resolve import ResolvedCluster
from clustergen.spec.load import LoadedSpec, load_spec
from clustergen.validate import validate_cluster

from support.ci import skip_or_fail, tool
from support.paths import DATA, EXAMPLES, REPO

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


def test_doca_ofed_installs_doca_at_its_release_and_no_distribution_package(
    tmp_path: Path,
) -> None:
    """stack doca-ofed: DOCA-OFED's meta package at the release (any build), no package of
    the distribution's stack, the role told so (nvidia-peermem then loads), and no warning;
    a repository not in the spec is an error; an OS whose rdma-core the catalog does not
    know warns instead of pinning a guess."""
    repositories = (
        "  repositories:\n"
        "    - {name: doca, url: https://linux.mellanox.com/public/repo/doca/2.9.1/ubuntu24.04/"
        "x86_64/, key_url: https://linux.mellanox.com/public/repo/doca/GPG-KEY-Mellanox.pub}\n"
    )
    doca = _with_rdma("{stack: doca-ofed, version: 2.9.1, repository: doca}", repositories)
    cluster, problems = _validated(tmp_path, doca)
    assert cluster is not None, problems
    assert cluster.pins.by_concern["rdma"] == {}
    assert cluster.pins.by_concern["doca"] == {"doca-ofed": "2.9.1-*"}
    assert not [p for p in problems if p.startswith("software.rdma-unpinned")], problems
    tree = render_all(cluster)
    rdma_vars = yaml.safe_load(tree["inventory/group_vars/rdma.yml"].text)
    assert rdma_vars == {
        "rdma_packages": {},
        "doca_packages": {"doca-ofed": "2.9.1-*"},
        "rdma_stack": "doca-ofed",
    }
    lock = yaml.safe_load(tree["versions.lock"].text)
    assert lock["groups"]["rdma"]["packages"] == {"doca-ofed": "2.9.1-*"}
    # The distribution's stack installs no DOCA.
    cluster, _ = _validated(tmp_path, EDGE.read_text(encoding="utf-8"))
    assert cluster is not None and cluster.pins.by_concern["doca"] == {}
    assert cluster.pins.by_concern["rdma"]

    unknown = doca.replace("repository: doca}", "repository: mofed}")
    cluster, problems = _validated(tmp_path, unknown)
    assert cluster is None
    assert any(p.startswith("software.rdma-repository-unknown") for p in problems), problems

    # Ubuntu 26.04: the catalog knows no rdma-core there (and no driver before branch 595).
    resolute = (
        EDGE.read_text(encoding="utf-8")
        .replace("os: ubuntu-24.04", "os: ubuntu-26.04")
        .replace("nvidia_driver: 570.133.20", "nvidia_driver: 595.91.07")
    )
    cluster, problems = _validated(tmp_path, resolute)
    assert cluster is not None, problems
    assert cluster.pins.by_concern["rdma"] == {}
    assert any(
        p.startswith("software.rdma-unpinned") and "rdma-core version of Ubuntu 26.04" in p
        for p in problems
    ), problems


# --- the subnet manager (docs/subnet-manager.md) -----------------------------------

MIXED = DATA / "mixed-fleet.yaml"
# The opensm.conf keys clustergen writes, as OpenSM's option table spells them
# (opensm/osm_subnet.c of linux-rdma/opensm: sm_priority, routing_engine, root_guid_file,
# partition_config_file) and the engines opensm(8) lists for -R.
OPENSM_KEYS = {"sm_priority", "routing_engine", "root_guid_file", "partition_config_file"}
OPENSM_ENGINES = {"minhop", "updn", "dnup", "file", "ftree", "lash", "dor", "torus-2QoS"}


def _opensm_conf(text: str) -> dict[str, str]:
    """opensm.conf as OpenSM reads it: '#' comments, then one 'key value' a line."""
    pairs = [line.split(" ", 1) for line in text.splitlines() if line and line[0] != "#"]
    assert all(len(pair) == 2 for pair in pairs), pairs
    conf = dict((key, value) for key, value in pairs)
    assert len(conf) == len(pairs) and set(conf) <= OPENSM_KEYS, conf
    return conf


def test_opensm_runs_on_the_named_nodes_primary_first(tmp_path: Path) -> None:
    """mixed-fleet (a spine, so ftree then updn): slurm-head is master at priority 15 and
    mds01 stands by at 14, each with its own file on itself only; the partitions file is
    the default partition in opensm(8)'s grammar; root GUIDs, when given, are a file the
    configuration names; an explicit engine is taken as written."""
    cluster, problems = _validated(tmp_path, MIXED.read_text(encoding="utf-8"))
    assert cluster is not None, problems
    tree = render_all(cluster)
    confs = {n: _opensm_conf(tree[f"opensm/{n}/opensm.conf"].text) for n in ("slurm-head", "mds01")}
    assert [confs[n]["sm_priority"] for n in ("slurm-head", "mds01")] == ["15", "14"]
    for node, conf in confs.items():
        assert conf["routing_engine"] == "ftree,updn"
        assert set(conf["routing_engine"].split(",")) <= OPENSM_ENGINES
        assert conf["partition_config_file"] == "/etc/opensm/partitions.conf"
        install = tree[f"opensm/{node}/opensm.conf"].install
        assert install is not None and install.hosts == (node,)
        assert install.dest == "/etc/opensm/opensm.conf"
    rules = [line for line in tree["opensm/partitions.conf"].text.splitlines() if line[:1] != "#"]
    assert rules == ["Default=0x7fff, ipoib : ALL=full ;"]
    assert cluster.members["opensm"] == {"slurm-head", "mds01"}
    assert yaml.safe_load(tree["versions.lock"].text)["groups"]["opensm"]["packages"] == {
        "opensm": "3.3.23-2"
    }

    given = MIXED.read_text(encoding="utf-8").replace(
        "      nodes: [slurm-head, mds01]\n",
        "      nodes: [slurm-head, mds01]\n      routing_engine: updn\n"
        "      root_guids: ['0x0C42A10300A1B2C3']\n",
    )
    cluster, problems = _validated(tmp_path, given)
    assert cluster is not None, problems
    tree = render_all(cluster)
    conf = _opensm_conf(tree["opensm/mds01/opensm.conf"].text)
    assert conf["routing_engine"] == "updn"
    assert conf["root_guid_file"] == "/etc/opensm/clustergen-root-guids.conf"
    assert tree["opensm/root-guids.conf"].text == "0x0c42a10300a1b2c3\n"


def test_ufm_or_switch_renders_no_subnet_manager_and_no_node_is_left_without_hca(
    tmp_path: Path,
) -> None:
    text = MIXED.read_text(encoding="utf-8")
    ufm = text.replace(
        "      kind: opensm\n      nodes: [slurm-head, mds01]\n", "      kind: ufm\n"
    )
    cluster, problems = _validated(tmp_path, ufm)
    assert cluster is not None, problems
    assert not any(p.startswith("network.subnet-manager") for p in problems), problems
    tree = render_all(cluster)
    assert not [
        path for path in tree if path.startswith(("opensm/", "inventory/group_vars/opensm"))
    ]
    assert "opensm" not in cluster.members

    # login01 is not a node; a profile without HCAs cannot reach the fabric.
    unknown = text.replace("nodes: [slurm-head, mds01]", "nodes: [slurm-head, login01, slurm-head]")
    cluster, problems = _validated(tmp_path, unknown)
    assert cluster is None
    assert [p for p in problems if p.startswith("network.subnet-manager-node")] == [
        "network.subnet-manager-node subnet_manager node 'login01' is not a node of the spec",
        "network.subnet-manager-node subnet_manager node 'slurm-head' is named twice",
    ]


# --- OpenSM on the fabric's ports only (Debian and Ubuntu) ---------------------------


def _sysfs(root: Path, ports: dict[str, tuple[str, str]]) -> None:
    """HCA -> (link_layer, GID 0) of its port 1, as /sys/class/infiniband shows them."""
    for hca, (layer, gid) in ports.items():
        port = root / hca / "ports" / "1"
        (port / "gids").mkdir(parents=True)
        (port / "link_layer").write_text(layer + "\n")
        (port / "gids" / "0").write_text(gid + "\n")


def _start(tmp_path: Path, script: str, dropin: str, ports: dict[str, tuple[str, str]]):  # type: ignore[no-untyped-def]
    """Run the start script as opensm.service would with `dropin`'s environment, against
    a stand-in sysfs and a systemctl that logs its arguments."""
    sysfs, stubs = tmp_path / "sys-class-infiniband", tmp_path / "bin"
    for folder in (sysfs, stubs):
        shutil.rmtree(folder, ignore_errors=True)
    _sysfs(sysfs, ports)
    stubs.mkdir()
    (stubs / "systemctl").write_text(f'#!/bin/bash\necho "$*" >> "{tmp_path}/systemctl.calls"\n')
    (stubs / "systemctl").chmod(0o755)
    (tmp_path / "systemctl.calls").unlink(missing_ok=True)
    (environment,) = [line for line in dropin.splitlines() if line.startswith("Environment=")]
    value = environment.removeprefix('Environment="CLUSTERGEN_SM_PORTS=').removesuffix('"')
    env = {"PATH": f"{stubs}:/usr/bin:/bin", "SYSFS_IB": str(sysfs), "CLUSTERGEN_SM_PORTS": value}
    (tmp_path / "start").write_text(script)
    run = subprocess.run(
        ["bash", str(tmp_path / "start")], env=env, capture_output=True, text=True, timeout=30
    )
    calls = tmp_path / "systemctl.calls"
    return run, calls.read_text().splitlines() if calls.exists() else []


GUID_0 = "fe80:0000:0000:0000:0c42:a103:00a1:b2c3"
GUID_1 = "fe80:0000:0000:0000:0c42:a103:00a1:b2c4"


def test_opensm_starts_on_the_fabrics_ports_never_on_the_storage_hca(tmp_path: Path) -> None:
    """Debian's opensm.service starts OpenSM on every port `ibstat -p` lists (PORTS=ALL); a
    drop-in per node replaces that with the fabric's ports of its profile: mds01's mlx5_0
    and mlx5_1, not the storage HCA mlx5_8 beside them, whose subnet has its own SM."""
    cluster, problems = _validated(tmp_path, MIXED.read_text(encoding="utf-8"))
    assert cluster is not None, problems
    tree = render_all(cluster)
    dropin = tree["opensm/mds01/clustergen-ports.conf"]
    assert dropin.install is not None and dropin.install.hosts == ("mds01",)
    assert dropin.install.dest == "/etc/systemd/system/opensm.service.d/clustergen-ports.conf"
    assert 'Environment="CLUSTERGEN_SM_PORTS=mlx5_0:1 mlx5_1:1"' in dropin.text
    script = tree["opensm/clustergen-opensm-start"]
    assert script.install is not None and script.install.mode == 0o755
    assert script.install.dest == "/usr/local/sbin/clustergen-opensm-start"
    storage = ("InfiniBand", "fe80:0000:0000:0000:0c42:a103:00ff:0001")
    ports = {"mlx5_0": ("InfiniBand", GUID_0), "mlx5_1": ("InfiniBand", GUID_1), "mlx5_8": storage}
    run, calls = _start(tmp_path, script.text, dropin.text, ports)
    assert run.returncode == 0, run.stderr
    assert calls == ["start opensm@0x0c42a10300a1b2c3.service opensm@0x0c42a10300a1b2c4.service"]
    # A missing HCA and an Ethernet port are said and left out; none left fails the unit.
    run, calls = _start(tmp_path, script.text, dropin.text, {"mlx5_1": ("Ethernet", GUID_1)})
    assert run.returncode == 1 and calls == []
    assert "mlx5_0 port 1 not found" in run.stderr
    assert "mlx5_1 port 1 is Ethernet, not InfiniBand" in run.stderr
    # EL's opensm unit is the daemon itself: no drop-in there.
    rocky = (
        MIXED.read_text(encoding="utf-8")
        .replace("os: ubuntu-22.04", "os: rocky-9")
        .replace("/repos/ubuntu2204/", "/repos/rhel9/")
    )
    cluster, problems = _validated(tmp_path, rocky)
    assert cluster is not None, problems
    assert not [
        path for path in render_all(cluster) if "clustergen-ports" in path or "start" in path
    ]


def test_systemd_reads_the_drop_in_over_debians_opensm_unit(tmp_path: Path) -> None:
    """The drop-in over the opensm.service of Debian's own package (the mirror of this
    machine's apt sources): systemd-analyze accepts it, and refuses a start it cannot run."""
    analyze, apt_get = tool("systemd-analyze"), tool("apt-get")
    if analyze is None or apt_get is None:
        skip_or_fail("needs systemd-analyze and apt-get")
    download = subprocess.run(
        [apt_get, "download", "opensm"], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    debs = sorted(tmp_path.glob("opensm_*.deb"))
    if download.returncode != 0 or not debs:
        skip_or_fail(f"apt-get download opensm failed: {download.stderr}")
    subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(tmp_path / "deb")], check=True)
    units = tmp_path / "units"
    (units / "opensm.service.d").mkdir(parents=True)
    shutil.copy2(tmp_path / "deb/lib/systemd/system/opensm.service", units / "opensm.service")
    cluster, problems = _validated(tmp_path, MIXED.read_text(encoding="utf-8"))
    assert cluster is not None, problems
    tree = render_all(cluster)
    script = tmp_path / "clustergen-opensm-start"
    script.write_text(tree["opensm/clustergen-opensm-start"].text)
    script.chmod(0o755)
    dropin = tree["opensm/mds01/clustergen-ports.conf"].text
    placed = units / "opensm.service.d" / "clustergen-ports.conf"
    placed.write_text(dropin.replace("/usr/local/sbin/clustergen-opensm-start", str(script)))
    verify = [analyze, "verify", "--man=no", str(units / "opensm.service")]
    run = subprocess.run(verify, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and "clustergen-ports.conf" not in run.stderr, run.stderr
    placed.write_text(dropin.replace("/usr/local/sbin/", str(tmp_path / "no-such") + "/"))
    run = subprocess.run(verify, capture_output=True, text=True, timeout=60)
    assert run.returncode != 0 and "no-such" in run.stderr, run.stderr


def test_the_opensm_start_is_shellcheck_clean(tmp_path: Path) -> None:
    shellcheck = tool("shellcheck")
    if shellcheck is None:
        skip_or_fail("needs shellcheck")
    cluster, problems = _validated(tmp_path, MIXED.read_text(encoding="utf-8"))
    assert cluster is not None, problems
    script = tmp_path / "clustergen-opensm-start"
    script.write_text(render_all(cluster)["opensm/clustergen-opensm-start"].text)
    run = subprocess.run(
        [shellcheck, "--severity=style", str(script)], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout


def test_every_plane_needs_a_subnet_manager_and_joined_rails_are_one_plane(
    tmp_path: Path,
) -> None:
    """tests/invalid/subnet-manager-plane.yaml: OpenSM on head1 alone leaves both rails'
    planes without one. A GPU node has a port on each rail's plane: with it beside head1
    every plane has an SM. Joined rails (every leaf up to every spine) are one plane with
    head1's service switch still apart, and warn of nothing about rails."""
    text = (REPO / "tests" / "invalid" / "subnet-manager-plane.yaml").read_text()
    _, problems = _validated(tmp_path, text)
    assert [p.split(" ", 1)[0] for p in problems if "plane" in p.split(" ", 1)[0]] == [
        "network.subnet-manager-plane",
        "network.subnet-manager-plane",
    ]
    both = text.replace("nodes: [head1]}", "nodes: [head1, gpu1]}")
    cluster, problems = _validated(tmp_path, both)
    assert cluster is not None, problems
    assert "opensm/gpu1/clustergen-ports.conf" in render_all(cluster)
    joined = text.replace("        spines_per_rail: 2\n", "").replace("spine[1-4]", "spine[1-2]")
    _, problems = _validated(tmp_path, joined)
    codes = {p.split(" ", 1)[0] for p in problems}
    assert "network.rails-not-joined" not in codes
    # head1's service switch is still a plane of its own, which its OpenSM manages; the
    # joined rails are the other plane, with no OpenSM port on it.
    assert [p for p in problems if p.startswith("network.subnet-manager-plane")] == [
        "network.subnet-manager-plane the plane of rails 1, 2 has no OpenSM node cabled to "
        "it, so no subnet manager runs there and its links stay down: add a node with a port "
        "on it to subnet_manager.nodes, or join the planes"
    ]


def test_nvidias_doca_repository_follows_each_nodes_architecture() -> None:
    """NVIDIA's DOCA repository written once, with its x86_64 path: the aarch64 trays get
    its arm64-sbsa build and the x86_64 head node the x86_64 one, as for NVIDIA's CUDA
    repository, and validate does not ask for `architectures`."""
    data = yaml.safe_load(
        (EXAMPLES / "vera-rubin-nvl72-spectrumx.yaml").read_text(encoding="utf-8")
    )
    doca = next(r for r in data["software"]["repositories"] if r["name"] == "doca")
    doca.pop("architectures")
    doca["url"] = "https://linux.mellanox.com/public/repo/doca/3.2.1/ubuntu24.04/x86_64/"
    doca["key_url"] = "https://linux.mellanox.com/public/repo/doca/GPG-KEY-Mellanox.pub"
    cluster, problems = validate_cluster(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))
    assert cluster is not None and problems == [], [p.format() for p in problems]
    tree = render_all(cluster)
    urls = {}
    for arch in ("x86_64", "aarch64"):
        group = yaml.safe_load(tree[f"inventory/group_vars/arch_{arch}.yml"].text)
        [entry] = [r for r in group["repositories_list"] if r["name"] == "doca"]
        urls[arch] = entry["url"]
        assert entry["key_url"] == doca["key_url"]
    assert urls == {
        "x86_64": "https://linux.mellanox.com/public/repo/doca/3.2.1/ubuntu24.04/x86_64/",
        "aarch64": "https://linux.mellanox.com/public/repo/doca/3.2.1/ubuntu24.04/arm64-sbsa/",
    }
