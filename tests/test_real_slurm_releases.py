"""The newer Slurm releases Debian ships, on their real daemons: trixie's 24.11 and sid's
26.05, each in a debootstrap chroot built once per test session
(tests/support/realslurm/chroot.py; shared/reference/testbed.md, "Newer Slurm").

- Both reference specs, pinned to 24.11.5 and to 26.05.5, render, and that release's
  slurmctld (with slurmdbd and MariaDB: accounting is tested, not removed) reports every
  node, partition, GRES and switch as the spec says; `slurmd -G` is clean per GPU profile;
  every error, fatal or warning line is explained.
- The topology syntax clustergen needs next, proven on the daemons: topology/block in
  topology.conf (24.11), topology.yaml with a tree and a block topology and partitions
  naming them (26.05), and what topology/tree does with hostlist switch names and with a
  switch under two parents.

In CI (CI=true) every test builds its chroot and none skips.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from clustergen.catalog.gpus import profile_gres_type
from clustergen.outputs.slurm.derive import derive_slurm
from clustergen.spec.load import load_spec
from clustergen.validate import validate_cluster

from support.paths import REFERENCE_SPECS
from support.realslurm.chroot import (
    ControllerFailed,
    ReleaseChroot,
    release_chroot,
    run_controller,
    run_slurmd_gres,
)
from support.realslurm.expect import assert_report_matches

pytestmark = pytest.mark.daemons

# Slurm series -> the release Debian ships (and the spec is pinned to).
RELEASES = {"24.11": "24.11.5", "26.05": "26.05.5"}

ChrootFor = Callable[[str], ReleaseChroot]


@pytest.fixture(scope="session")
def chroot_for(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> ChrootFor:
    """Each release's chroot, built on first use in this session (cached under its scratch)."""
    trees: dict[str, ReleaseChroot] = {}

    def get(series: str) -> ReleaseChroot:
        if series not in trees:
            trees[series] = release_chroot(series, tmp_path_factory.getbasetemp())
            tree = trees[series]
            built = "cached" if tree.build_seconds is None else f"built in {tree.build_seconds} s"
            # To the terminal, past every capture: CI's log shows each build's time.
            capture = request.config.pluginmanager.get_plugin("capturemanager")
            with capture.global_and_fixture_disabled():
                print(f"\nSlurm {tree.version} ({tree.suite}) chroot {built}", flush=True)
        return trees[series]

    return get


def pinned_spec(spec_path: Path, version: str, directory: Path) -> Path:
    """A copy of the spec with software.slurm changed to `version`."""
    text = spec_path.read_text(encoding="utf-8")
    pinned, count = re.subn(r"(?m)^(  slurm: )\S+", rf"\g<1>{version}", text, count=1)
    assert count == 1, f"{spec_path} has no software.slurm line"
    path = directory / f"{spec_path.stem}-slurm-{version}.yaml"
    path.write_text(pinned, encoding="utf-8")
    return path


@pytest.mark.parametrize("series", sorted(RELEASES))
@pytest.mark.parametrize("spec_path", REFERENCE_SPECS, ids=lambda p: p.stem)
def test_release_runs_the_reference_spec(
    spec_path: Path, series: str, tmp_path: Path, chroot_for: ChrootFor, cli
) -> None:  # type: ignore[no-untyped-def]
    tree = chroot_for(series)
    assert tree.version == RELEASES[series]
    spec = pinned_spec(spec_path, RELEASES[series], tmp_path)
    metrics = series >= "25.11"  # slurmctld's own metrics (monitoring.slurm, openmetrics)
    if metrics:
        with spec.open("a", encoding="utf-8") as text:
            # nobody: an account every chroot has (slurmctld maps the names to uids).
            text.write("\nmonitoring:\n  slurm: {kind: openmetrics, auth_users: [nobody]}\n")
    result = cli("render", str(spec), "-o", str(tmp_path / "out"))
    assert result.code == 0, result.err
    cluster, _ = validate_cluster(load_spec(str(spec)))
    assert cluster is not None
    report = run_controller(tree, tmp_path / "out" / "slurm", tmp_path / "check")
    print(report.summary())
    print("\n".join(["overridden:", *report.overridden, "explained:", *report.explained_lines()]))
    assert report.config_problems() == []
    assert report.accounting == ("slurmdbd" if cluster.spec.slurm.accounting else "none")
    assert_report_matches(report, cluster, derive_slurm(cluster))
    if metrics:
        conf = (tmp_path / "out" / "slurm" / "slurm.conf").read_text(encoding="utf-8")
        _metrics_refuse_an_unauthenticated_scrape(report.raw["metrics /metrics/nodes"], conf)


def _metrics_refuse_an_unauthenticated_scrape(answer: str, conf: str) -> None:
    """The rendered MetricsType with the reference specs' PrivateData (26.05:
    MetricsAuthUsers, never MetricsParameters=ignore_private_data): slurmctld serves its
    endpoints, and refuses /metrics/nodes to a request without authentication, so no
    user reads another's jobs from it."""
    assert "\nMetricsAuthUsers=nobody\n" in conf and "ignore_private_data" not in conf
    status = answer.split("\n", 1)[0]
    assert status.startswith("HTTP/1."), answer[:500]
    assert status.split()[1] in ("401", "403"), answer[:500]
    assert "slurm_node_cpus" not in answer, answer[:2000]


@pytest.mark.parametrize("series", sorted(RELEASES))
@pytest.mark.parametrize("spec_path", REFERENCE_SPECS, ids=lambda p: p.stem)
def test_release_slurmd_reads_the_rendered_gres_conf(
    spec_path: Path, series: str, tmp_path: Path, chroot_for: ChrootFor, cli
) -> None:  # type: ignore[no-untyped-def]
    spec = pinned_spec(spec_path, RELEASES[series], tmp_path)
    assert cli("render", str(spec), "-o", str(tmp_path / "out")).code == 0
    cluster, _ = validate_cluster(load_spec(str(spec)))
    assert cluster is not None
    first_of_profile = {}
    for host in cluster.hosts:
        if host.is_slurm_compute and host.hardware.gpu is not None:
            first_of_profile.setdefault(host.hardware_name, host)
    assert first_of_profile, "each reference spec has GPU nodes"
    gpus = {host.name: host.hardware.gpu.count for host in first_of_profile.values()}  # type: ignore[union-attr]
    reports = run_slurmd_gres(chroot_for(series), tmp_path / "out" / "slurm", tmp_path, gpus)
    for host in first_of_profile.values():
        report = reports[host.name]
        assert report.ok, report.output
        assert report.gpu_count(profile_gres_type(host.hardware)) == gpus[host.name], report.output


@pytest.mark.parametrize("series", sorted(RELEASES))
def test_release_takes_several_gpu_types_and_a_quoted_value(
    series: str, tmp_path: Path, chroot_for: ChrootFor, cli
) -> None:  # type: ignore[no-untyped-def]
    """What a real site's files hold that the reference specs do not (issue 41), on each
    release: a node of three GPU models (Gres= lists each type, gres.conf gives each its
    device files) and InteractiveStepOptions with spaces, written quoted."""
    spec = pinned_spec(
        REFERENCE_SPECS[0].parent / "ml-training-8node.yaml", RELEASES[series], tmp_path
    )
    text = spec.read_text(encoding="utf-8")
    gpu = "    gpu: {model: h100-sxm5-80gb, count: 8, nvswitch: true}\n"
    others = "    other_gpus: [{model: l40s, count: 2}, {model: a100-pcie-80gb, count: 1}]\n"
    assert gpu in text
    option = "    InteractiveStepOptions: --interactive --preserve-env --pty $SHELL\n"
    given = "    SlurmdTimeout: 300\n"
    assert given in text
    text = text.replace(gpu, gpu + others, 1).replace(given, given + option, 1)
    spec.write_text(text, encoding="utf-8")
    result = cli("render", str(spec), "-o", str(tmp_path / "out"))
    assert result.code == 0, result.err
    conf = (tmp_path / "out" / "slurm" / "slurm.conf").read_text(encoding="utf-8")
    assert 'InteractiveStepOptions="--interactive --preserve-env --pty $SHELL"\n' in conf
    cluster, _ = validate_cluster(load_spec(str(spec)))
    assert cluster is not None
    tree = chroot_for(series)
    report = run_controller(tree, tmp_path / "out" / "slurm", tmp_path / "check")
    print(report.summary())
    assert report.config_problems() == []
    assert_report_matches(report, cluster, derive_slurm(cluster))
    config = report.raw["scontrol show config"]
    assert re.search(
        r"(?m)^InteractiveStepOptions += --interactive --preserve-env --pty \$SHELL$", config
    ), config
    gres = run_slurmd_gres(tree, tmp_path / "out" / "slurm", tmp_path, {"gpu01": 11})["gpu01"]
    assert gres.ok, gres.output
    counts = {kind: gres.gpu_count(kind) for kind in ("h100", "l40s", "a100")}
    assert counts == {"h100": 8, "l40s": 2, "a100": 1}, gres.output


# --- the topology syntax clustergen writes next, proven on the daemons -----------------


def lab_conf(  # type: ignore[no-untyped-def]
    series: str, tmp_path: Path, cli, slurm_lines: list[str], files: dict[str, str]
) -> Path:
    """The edge reference spec pinned to the series, rendered, with its two nodes made eight
    (lab[1-8]), its topology replaced by `files` and `slurm_lines` appended to slurm.conf."""
    edge = next(path for path in REFERENCE_SPECS if path.stem == "edge-roce-2node")
    spec = pinned_spec(edge, RELEASES[series], tmp_path)
    assert cli("render", str(spec), "-o", str(tmp_path / "out")).code == 0
    conf_dir = tmp_path / "lab"
    shutil.copytree(tmp_path / "out" / "slurm", conf_dir)
    conf = (conf_dir / "slurm.conf").read_text(encoding="utf-8")
    assert "NodeName=lab[1-2] " in conf and "Nodes=lab[1-2] " in conf
    conf = conf.replace("lab[1-2] ", "lab[1-8] ")
    conf = re.sub(r"(?m)^TopologyPlugin=.*\n", "", conf) + "\n".join(slurm_lines) + "\n"
    (conf_dir / "slurm.conf").write_text(conf, encoding="utf-8")
    (conf_dir / "topology.conf").unlink()
    for name, text in files.items():
        (conf_dir / name).write_text(text, encoding="utf-8")
    return conf_dir


BLOCKS = "BlockName=nvl1 Nodes=lab[1-4]\nBlockName=nvl2 Nodes=lab[5-8]\nBlockSizes=4,8\n"


@pytest.mark.parametrize("series", sorted(RELEASES))
def test_block_topology(series: str, tmp_path: Path, chroot_for: ChrootFor, cli) -> None:  # type: ignore[no-untyped-def]
    """topology/block (topology.conf(5), block_record.c, slurm-24-11-5-1): two blocks of 4
    and BlockSizes=4,8 give each block its BlockSize and one aggregated block of 8."""
    conf = lab_conf(
        series, tmp_path, cli, ["TopologyPlugin=topology/block"], {"topology.conf": BLOCKS}
    )
    report = run_controller(chroot_for(series), conf, tmp_path / "check")
    assert report.config_problems() == []
    assert report.raw["scontrol show topology"].splitlines() == [
        "BlockName=nvl1 BlockIndex=0 Nodes=lab[1-4] BlockSize=4",
        "BlockName=nvl2 BlockIndex=1 Nodes=lab[5-8] BlockSize=4",
        "AggregatedBlock=nvl[1-2] BlockIndex=2 Nodes=lab[1-8] BlockSize=8",
    ]


# Blocks smaller than the base block size: 5 + 3 nodes without BlockSizes (the first block
# sets the base), and blocks of 4 under BlockSizes=8.
UNEQUAL_BLOCKS = "BlockName=a Nodes=lab[1-5]\nBlockName=b Nodes=lab[6-8]\n"
BASE_LARGER = BLOCKS.replace("BlockSizes=4,8", "BlockSizes=8")


@pytest.mark.parametrize(
    ("series", "blocks", "fatal"),
    [
        (
            "24.11",
            UNEQUAL_BLOCKS,
            "Block configuration (b) children count lower than bblock_node_cnt",
        ),
        (
            "24.11",
            BASE_LARGER,
            "Block configuration (nvl1) children count lower than bblock_node_cnt",
        ),
        # A BlockSizes value that is not the base size times a power of two.
        ("24.11", BLOCKS.replace("4,8", "4,12"), "Invalid BlockSizes value: 12"),
        ("26.05", BLOCKS.replace("4,8", "4,12"), "Invalid BlockSizes value: 12"),
    ],
    ids=["24.11-unequal", "24.11-base-larger", "24.11-not-power-of-two", "26.05-not-power-of-two"],
)
def test_block_topology_refusals(
    series: str, blocks: str, fatal: str, tmp_path: Path, chroot_for: ChrootFor, cli
) -> None:  # type: ignore[no-untyped-def]
    """block_record.c, slurm-24-11-5-1 and slurm-26-05-3-1."""
    conf = lab_conf(
        series, tmp_path, cli, ["TopologyPlugin=topology/block"], {"topology.conf": blocks}
    )
    with pytest.raises(ControllerFailed) as failed:
        run_controller(chroot_for(series), conf, tmp_path / "check")
    assert f"fatal: {fatal}" in str(failed.value)


@pytest.mark.parametrize(
    ("blocks", "printed"),
    [
        (
            UNEQUAL_BLOCKS,
            [
                "BlockName=a BlockIndex=0 Nodes=lab[1-5] BlockSize=5",
                "BlockName=b BlockIndex=1 Nodes=lab[6-8] BlockSize=5",
                "AggregatedBlock=a,b BlockIndex=2 Nodes=lab[1-8] BlockSize=10",
            ],
        ),
        (
            BASE_LARGER,
            [
                "BlockName=nvl1 BlockIndex=0 Nodes=lab[1-4] BlockSize=8",
                "BlockName=nvl2 BlockIndex=1 Nodes=lab[5-8] BlockSize=8",
            ],
        ),
    ],
    ids=["unequal", "base-larger"],
)
def test_block_topology_26_05_takes_blocks_below_the_base_size_silently(
    blocks: str, printed: list[str], tmp_path: Path, chroot_for: ChrootFor, cli
) -> None:  # type: ignore[no-untyped-def]
    """What 24.11 refuses, 26.05 accepts without a word, printing the base size for a block
    that cannot hold it: clustergen must check block sizes itself."""
    conf = lab_conf(
        "26.05", tmp_path, cli, ["TopologyPlugin=topology/block"], {"topology.conf": blocks}
    )
    report = run_controller(chroot_for("26.05"), conf, tmp_path / "check")
    assert report.config_problems() == []
    assert report.raw["scontrol show topology"].splitlines() == printed


@pytest.mark.parametrize("series", sorted(RELEASES))
def test_block_topology_takes_a_node_in_two_blocks_silently(
    series: str, tmp_path: Path, chroot_for: ChrootFor, cli
) -> None:  # type: ignore[no-untyped-def]
    """slurmctld accepts lab4 in two blocks without a word: clustergen must refuse it."""
    blocks = BLOCKS.replace("lab[5-8]", "lab[4-8]")
    conf = lab_conf(
        series, tmp_path, cli, ["TopologyPlugin=topology/block"], {"topology.conf": blocks}
    )
    report = run_controller(chroot_for(series), conf, tmp_path / "check")
    assert report.config_problems() == []
    assert (
        "BlockName=nvl2 BlockIndex=1 Nodes=lab[4-8] BlockSize=4"
        in report.raw["scontrol show topology"].splitlines()
    )


TOPOLOGY_YAML = """\
---
- topology: fabric
  cluster_default: true
  tree:
    switches:
      - switch: spine
        children: leaf[1-2]
      - switch: leaf1
        nodes: lab[1-4]
      - switch: leaf2
        nodes: lab[5-8]
- topology: nvl
  cluster_default: false
  block:
    block_sizes:
      - 4
      - 8
    blocks:
      - block: nvl1
        nodes: lab[1-4]
      - block: nvl2
        nodes: lab[5-8]
"""
PARTITIONS = [
    "PartitionName=treepart Nodes=lab[1-8] Topology=fabric State=UP",
    "PartitionName=blockpart Nodes=lab[1-8] Topology=nvl State=UP",
]


@pytest.mark.parametrize("plugin_line", [[], ["TopologyPlugin=topology/block"]], ids=["", "plugin"])
def test_topology_yaml_on_26_05(
    plugin_line: list[str], tmp_path: Path, chroot_for: ChrootFor, cli
) -> None:  # type: ignore[no-untyped-def]
    """topology.yaml(5), slurm-26-05-3-1: a tree and a block topology, each partition naming
    its own. With topology.yaml present slurmctld ignores TopologyPlugin (and topology.conf)
    without a word (src/interfaces/topology.c topology_g_init): the cluster_default one rules."""
    conf = lab_conf(
        "26.05", tmp_path, cli, [*plugin_line, *PARTITIONS], {"topology.yaml": TOPOLOGY_YAML}
    )
    report = run_controller(chroot_for("26.05"), conf, tmp_path / "check", ["fabric", "nvl"])
    assert report.config_problems() == []
    assert report.partitions["treepart"].fields["Topology"] == "fabric"
    assert report.partitions["blockpart"].fields["Topology"] == "nvl"
    assert "Topology" not in report.partitions["gpu"].fields
    tree = [
        "SwitchName=spine Level=1 LinkSpeed=0 Nodes=lab[1-8] Switches=leaf[1-2]",
        "SwitchName=leaf1 Level=0 LinkSpeed=0 Nodes=lab[1-4]",
        "SwitchName=leaf2 Level=0 LinkSpeed=0 Nodes=lab[5-8]",
    ]
    assert report.raw["scontrol show topology"].splitlines() == tree
    assert report.raw["scontrol show topology fabric"].splitlines() == tree
    assert report.raw["scontrol show topology nvl"].splitlines() == [
        "BlockName=nvl1 BlockIndex=0 Nodes=lab[1-4] BlockSize=4",
        "BlockName=nvl2 BlockIndex=1 Nodes=lab[5-8] BlockSize=4",
        "AggregatedBlock=nvl[1-2] BlockIndex=2 Nodes=lab[1-8] BlockSize=8",
    ]


def test_partition_naming_an_unknown_topology_is_fatal_on_26_05(
    tmp_path: Path, chroot_for: ChrootFor, cli
) -> None:  # type: ignore[no-untyped-def]
    lines = ["PartitionName=blockpart Nodes=lab[1-8] Topology=nosuch State=UP"]
    conf = lab_conf("26.05", tmp_path, cli, lines, {"topology.yaml": TOPOLOGY_YAML})
    with pytest.raises(ControllerFailed) as failed:
        run_controller(chroot_for("26.05"), conf, tmp_path / "check")
    assert "error: Invalid partition topology" in str(failed.value)
    assert "Requested topology configuration is not available" in str(failed.value)


@pytest.mark.parametrize("series", sorted(RELEASES))
def test_tree_switch_names_are_not_hostlists(
    series: str, tmp_path: Path, chroot_for: ChrootFor, cli
) -> None:  # type: ignore[no-untyped-def]
    """SwitchName=leaf[1-2] is one switch of that literal name (Switches= is a hostlist),
    so a parent listing leaf[1-2] names a leaf2 that does not exist: fatal."""
    topology = "SwitchName=leaf[1-2] Nodes=lab[1-8]\nSwitchName=spine Switches=leaf[1-2]\n"
    conf = lab_conf(
        series, tmp_path, cli, ["TopologyPlugin=topology/tree"], {"topology.conf": topology}
    )
    with pytest.raises(ControllerFailed) as failed:
        run_controller(chroot_for(series), conf, tmp_path / "check")
    assert "fatal: Switch configuration spine has invalid child (leaf2)" in str(failed.value)


@pytest.mark.parametrize("series", sorted(RELEASES))
def test_tree_takes_two_parents_silently_and_warns_of_a_node_on_two_leaves(
    series: str, tmp_path: Path, chroot_for: ChrootFor, cli
) -> None:  # type: ignore[no-untyped-def]
    """A leaf under two spines is accepted without a log line (each spine lists both leaves:
    two top-level switches); lab5 under two leaves is accepted with one warning
    (src/plugins/topology/tree/switch_record.c)."""
    topology = (
        "SwitchName=leaf1 Nodes=lab[1-5]\nSwitchName=leaf2 Nodes=lab[5-8]\n"
        "SwitchName=spine1 Switches=leaf[1-2]\nSwitchName=spine2 Switches=leaf[1-2]\n"
    )
    conf = lab_conf(
        series, tmp_path, cli, ["TopologyPlugin=topology/tree"], {"topology.conf": topology}
    )
    report = run_controller(chroot_for(series), conf, tmp_path / "check")
    assert [line.split("] ", 1)[1] for line in report.config_problems()] == [
        "warning: Multiple leaf switches contain nodes: lab5"
    ]
    assert report.switches["leaf1"].nodes == ("lab1", "lab2", "lab3", "lab4", "lab5")
    for spine in ("spine1", "spine2"):
        assert report.switches[spine].switches == ("leaf1", "leaf2")
        assert report.switches[spine].level == 1
