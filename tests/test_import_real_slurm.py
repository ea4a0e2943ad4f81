"""`clustergen import slurm`, judged by the real slurmctld (issue 26).

For each site's configuration set under tests/data/slurm-sites/, slurmctld (Debian 12's
22.05, tests/support/realslurm/) starts once on the ORIGINAL files and once on the
render of the imported spec; `scontrol show node/partition/topology`, parsed, must show
the same nodes (CPUs, sockets, cores, threads, memory, GRES, features, partitions), the
same partitions (nodes, limits) and the same switches (level, nodes, switches below).
And every spec clustergen renders today goes round: render -> import the rendered
slurm/ -> render -> the same cluster.

The test bed adapts both trees alike: it replaces the site's paths, ports, users and
controller host, drops keys the installed Slurm does not know (a set's removed keys,
e.g. FastSchedule in legacy-consres-2016, stay: slurmctld 22.05 logs and ignores
FastSchedule=1), and without slurmdbd removes the AccountingStorage keys of both.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from clustergen.importer.reader import read_conf
from clustergen.importer.records import expand_names, sort_lines

from support.paths import REPO
from support.realslurm.parse import ControllerReport
from support.realslurm.testbed import SlurmTestbed, require_real_slurm

pytestmark = pytest.mark.daemons

SITES = REPO / "tests" / "data" / "slurm-sites"
SITE_SETS = sorted(p for p in SITES.iterdir() if (p / "slurm.conf").is_file())
ROUND_TRIP = [
    *sorted((REPO / "examples").glob("*.yaml")),
    *sorted((REPO / "tests" / "data").glob("*.yaml")),
    # Nodes named as real sites name them: with '_', and by a fully qualified name.
    REPO / "tests" / "warnings" / "hostname-underscore.yaml",
]
# Partition fields slurmctld derives from global keys that clustergen writes on its own
# (SelectTypeParameters, the TRES list of GresTypes and AccountingStorageTRES), not
# from the partition's line. Nodes and NodeSets are how the line names its nodes (a
# NodeSet's name, or the hostlist it stands for): the members are compared instead.
PARTITION_IGNORED = frozenset({"Nodes", "NodeSets", "SelectTypeParameters", "TRES"})
SOCKETS = re.compile(r"\(S:[0-9,-]+\)")


def node_names(directory: Path) -> list[str]:
    """Every NodeName of a set, Include files too (the bed's hosts file needs them)."""
    conf = sort_lines(read_conf(directory, "slurm.conf").lines)
    names = [name for record in conf.nodes for name in expand_names(record.name)]
    for _line, value in conf.lines_of("ControlMachine") + conf.lines_of("BackupController"):
        names.append(value)
    for _line, value in conf.lines_of("SlurmctldHost"):
        names.append(value.split("(")[0])
    return names


def cluster_view(report: ControllerReport) -> dict[str, object]:
    """What the contract compares, parsed: nodes, partitions, switches."""
    nodes = {
        n.name: (
            n.cpus,
            n.boards * n.sockets,
            n.cores_per_socket,
            n.threads_per_core,
            n.real_memory_mib,
            SOCKETS.sub("", n.gres),
            tuple(sorted(n.features)),
            tuple(sorted(n.partitions)),
        )
        for n in report.nodes.values()
    }
    members: dict[str, list[str]] = {}
    for node in report.nodes.values():
        for partition in node.partitions:
            members.setdefault(partition, []).append(node.name)
    partitions = {
        p.name: (
            tuple(sorted(members.get(p.name, []))),
            {k: v for k, v in p.fields.items() if k not in PARTITION_IGNORED},
        )
        for p in report.partitions.values()
    }
    switches = {s.name: (s.level, s.nodes, s.switches) for s in report.switches.values()}
    return {"nodes": nodes, "partitions": partitions, "switches": switches}


def _restore_includes(original: Path, adapted: Path) -> None:
    """The bed's rewrite drops lines whose first word is no slurm.conf key, Include
    among them: put the original's Include lines back, in their order, at the end (a
    relative path is read from the bed's etc/, where the files were copied)."""
    includes = [
        line
        for line in original.read_text(encoding="utf-8").splitlines()
        if line.lower().startswith("include ")
    ]
    if includes:
        text = adapted.read_text(encoding="utf-8")
        adapted.write_text(text + "\n".join(includes) + "\n", encoding="utf-8")


def controller_view(
    source: Path, work: Path, names: list[str], *, original: bool = False
) -> dict[str, object]:
    """slurmctld on `source` (with slurmdbd where it uses accounting). The render must
    give slurmctld nothing to complain about; an original may (an obsolete key it
    ignores, such as FastSchedule=1, which the import reports and leaves out)."""
    with SlurmTestbed(source, work, names) as bed:
        for folder in source.iterdir():  # Include files in sub-folders
            if folder.is_dir():
                shutil.copytree(folder, bed.paths.etc / folder.name)
        _restore_includes(source / "slurm.conf", bed.paths.slurm_conf)
        report = bed.start_controller()
    print(report.summary())
    if not original:
        assert report.config_problems() == [], report.slurmctld_log
    return cluster_view(report)


def imported_render(source: Path, tmp_path: Path, cli) -> Path:  # type: ignore[no-untyped-def]
    spec = tmp_path / "imported.yaml"
    result = cli("import", "slurm", str(source), "-o", str(spec))
    assert result.code == 0, result.err
    check = cli("validate", str(spec))
    assert check.code == 0, check.err
    out = tmp_path / "render"
    result = cli("render", str(spec), "-o", str(out))
    assert result.code == 0, result.err
    return out / "slurm"


def assert_same_cluster(before: dict[str, object], after: dict[str, object]) -> None:
    for part in ("nodes", "partitions", "switches"):
        old, new = before[part], after[part]
        assert isinstance(old, dict) and isinstance(new, dict)
        assert sorted(old) == sorted(new), part
        for name in old:
            if old[name] != new[name] and isinstance(old[name], tuple):
                fields = [
                    (key, a.get(key), b.get(key))
                    for a, b in zip(old[name], new[name], strict=True)
                    if isinstance(a, dict) and isinstance(b, dict)
                    for key in sorted(a.keys() | b.keys())
                    if a.get(key) != b.get(key)
                ]
                print(f"{part} {name}: {fields}")
            assert old[name] == new[name], f"{part} {name}"


@pytest.mark.parametrize("site", SITE_SETS, ids=lambda p: p.name)
def test_slurmctld_reads_the_render_of_an_import_as_the_original(
    site: Path, tmp_path: Path, cli
) -> None:  # type: ignore[no-untyped-def]
    require_real_slurm()
    names = node_names(site)
    original = controller_view(site, tmp_path / "bed-original", names, original=True)
    rendered = imported_render(site, tmp_path, cli)
    assert_same_cluster(original, controller_view(rendered, tmp_path / "bed-render", names))


@pytest.mark.parametrize("spec_path", ROUND_TRIP, ids=lambda p: p.stem)
def test_render_import_render_is_the_same_cluster(spec_path: Path, tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    require_real_slurm()
    first = tmp_path / "first"
    result = cli("render", str(spec_path), "-o", str(first))
    assert result.code == 0, result.err
    names = node_names(first / "slurm")
    original = controller_view(first / "slurm", tmp_path / "bed-first", names)
    again = imported_render(first / "slurm", tmp_path, cli)
    assert_same_cluster(original, controller_view(again, tmp_path / "bed-again", names))
