"""`clustergen import slurm` on 32 real sites' Slurm configurations (tests/corpus/slurm/,
each with a SOURCE naming the public repository, commit and licence; docs/adopt.md), and
`--qos` on real `sacctmgr show qos` outputs (tests/corpus/qos/).

For each site: the import exits as expected (2 where slurmctld would refuse the file too,
at its line), every line it leaves out is named with its file and line, no password is
echoed, and the spec it writes validates, or fails with exactly the codes of the classes
import does not handle yet (named below, each with its sites): a class fixed moves its
sites to the first list, and a site that regresses fails here. The render of a spec that
validates means what the original means, but for what is named as not imported.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from clustergen.importer.reader import CONFIG_FOLDERS as CONFIG_FOLDERS_OF_SLURM

from support.paths import REPO
from support.slurm_meaning import meaning, unexplained

CORPUS = REPO / "tests" / "corpus" / "slurm"

# Sites whose imported spec validates.
VALIDATES = {
    # Host names with '_' (containers' names, AWS ParallelCluster's queue names), warned
    # about (nodes.hostname-not-dns); fully qualified node and controller names.
    "aalto-triton-role",
    "argo-power-slurm",
    "aws-pcluster-ref",
    "docker-include-topo",
    "scilifelab-pcons",
    "azure-ndv5-bench",
    # RebootProgram="/usr/bin/systemctl reboot": a quoted value with a space.
    "bai-chiang-lab",
    "bioinfo-br",  # AccountingStorageHost=<an address>: the host 'slurmdbd', to review
    "cinek810-test-docker",  # two Default=YES partitions: the last is the default
    "genomedk-aarhus",  # SlurmUser=munge left out, with why
    "hugin-munin",
    "idia-htc",  # StateSaveLocation=/tmp left out, with why
    "ipu-pod16",
    "iztakat",
    "jetstream-elastic",
    "llnl-mcr-2003",  # AuthType=auth/none, SlurmUser=jette left out
    "nec-sx-aurora",
    "nsm-ecc-azure",
    "nstda-tara",
    "openhpc-ref",
    "osmium-workstation",  # QOS only slurmdbd knows become slurm.qos entries to review
    "qfw-quantum",
    "scanlab-hope",
    "schedmd-example",
    "scopehal-ci",
    "shepherdgrid",
    "shine-lab",
    "ubccr-toolset",
    "uco-buddy",
    "virginis-spica",  # AccountingStoragePass left out, never echoed
}
# Not yet: a skeleton with no NodeName line, so no partition has a node.
NOT_YET = {"nimbix-jarvice": {"shape.wrong-length"}}
# slurmctld refuses these files too: import says where, and writes nothing.
REFUSED = {
    "dell-omnia": "slurm.conf:94: AccountingStoragePort= is not a whole number",
}
# Where the cluster keeps its configuration, beside /etc/slurm (absolute Include lines).
CONFIG_FOLDERS = {"aws-pcluster-ref": "/opt/slurm/etc"}
LICENCES = {
    "MIT",
    "Apache-2.0",
    "BSD-2-Clause",
    "BSD-2-Clause-Views",
    "BSD-3-Clause",
    "GPL-2.0-or-later",
    "GPL-3.0-only",
    "GPL-3.0-or-later",
    "AGPL-3.0-only",
    "AGPL-3.0-or-later",
}
_CODE = re.compile(r"\[([a-z0-9.-]+)\]$")


def _sites() -> list[str]:
    return sorted(p.name for p in CORPUS.iterdir() if p.is_dir())


def test_every_site_has_its_source_and_an_expectation() -> None:
    sites = _sites()
    assert len(sites) >= 30
    assert set(sites) == VALIDATES | set(NOT_YET) | set(REFUSED)
    assert not (VALIDATES & set(NOT_YET))
    for site in sites:
        fields = dict(re.findall(r"^(\w+): *(.*)$", (CORPUS / site / "SOURCE").read_text(), re.M))
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", fields.get("repository", "")), site
        assert re.fullmatch(r"[0-9a-f]{40}", fields.get("commit", "")), site
        assert fields.get("licence") in LICENCES, (site, fields.get("licence"))
        assert (CORPUS / site / "slurm.conf").is_file(), site
        assert sum(f.stat().st_size for f in (CORPUS / site).rglob("*")) < 200_000, site


@pytest.mark.parametrize("site", _sites())
def test_a_real_site_imports(site: str, tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "spec.yaml"
    folder = ["--config-folder", CONFIG_FOLDERS[site]] if site in CONFIG_FOLDERS else []
    result = cli("import", "slurm", *folder, str(CORPUS / site), "-o", str(out))
    if site in REFUSED:
        assert result.code == 2, result.err
        assert REFUSED[site] in result.err and not out.exists()
        return
    assert result.code == 0, result.err
    left_out = [line for line in result.err.splitlines() if line.startswith("not imported: ")]
    for line in left_out:
        assert re.match(r"not imported: [^:\s]+:\d+: ", line), line
    assert "REDACTED" not in result.err, "a password's line is echoed"
    checked = cli("validate", str(out))
    errors = {
        match[1]
        for line in checked.err.splitlines()
        if (match := _CODE.search(line)) and ": warning:" not in line
    }
    if site not in VALIDATES:
        assert checked.code == 1 and errors == NOT_YET[site], checked.err
        return
    assert checked.code == 0, checked.err
    # The render means the original's nodes (CPUs, sockets, cores, threads, memory, GPUs
    # by type, features) and partitions (nodes, keys, the default), both read by
    # clustergen's own reader with Slurm's defaults (tests/support/slurm_meaning.py):
    # every difference is a "not imported" line at the original's line, naming the key.
    assert cli("render", str(out), "-o", str(tmp_path / "render")).code == 0
    said = [line.removeprefix("not imported: ") for line in left_out]
    original = meaning(CORPUS / site, (*CONFIG_FOLDERS_OF_SLURM, *folder[1:]))
    assert unexplained(original, meaning(tmp_path / "render" / "slurm"), said) == []


QOS_CORPUS = REPO / "tests" / "corpus" / "qos"
QOS_SITE = """\
SlurmctldHost=head
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=head
NodeName=n[1-2] Sockets=2 CoresPerSocket=16 RealMemory=64000
PartitionName=p Nodes=n[1-2] Default=YES QOS={qos}
"""
# Each real `sacctmgr show qos --parsable2` output: (the QOS a partition names, the
# slurm.qos entries the import writes, how many settings it lists as not imported).
QOS_EXPECTED: dict[str, tuple[str, list[dict[str, object]], int]] = {
    "nersc-perlmutter": (
        "gpu_regular",
        [
            {
                "name": "gpu_debug",
                "priority": 69119,
                "preempt": ["debug_preempt", "sparewarmer"],
                "grace_time_s": 60,
            },
            {
                "name": "gpu_regular",
                "priority": 67679,
                "preempt": ["debug_preempt", "sparewarmer"],
                "grace_time_s": 60,
            },
            {"name": "gpu_shared", "priority": 67679, "preempt": ["debug_preempt", "sparewarmer"]},
            {
                "name": "gpu_preempt",
                "priority": 67679,
                "preempt": ["debug_preempt", "overrun", "sparewarmer"],
                "grace_time_s": 60,
            },
            {
                "name": "debug",
                "priority": 69119,
                "preempt": ["debug_preempt", "sparewarmer"],
                "grace_time_s": 60,
            },
            {"name": "regular_1", "priority": 67679, "preempt": ["debug_preempt", "sparewarmer"]},
            {
                "name": "preempt",
                "priority": 67679,
                "preempt": ["debug_preempt", "overrun", "sparewarmer"],
                "grace_time_s": 60,
            },
            {"name": "shared", "priority": 67679, "preempt": ["debug_preempt", "sparewarmer"]},
            # Named by Preempt lists, left out of the (filtered) output: Slurm's defaults.
            {"name": "debug_preempt"},
            {"name": "sparewarmer"},
            {"name": "overrun"},
        ],
        # Flags, MaxWall and MaxSubmitPU of each of the 8, MaxTRES of 6, MaxJobsPU of the
        # 2 debug ones, PreemptExemptTime of the 2 preempt ones.
        3 * 8 + 6 + 2 + 2,
    ),
    "meta-gcm-sample": (
        "normal3",
        [
            {"name": "normal1"},
            {"name": "normal2", "priority": 1},
            {"name": "normal3", "priority": 100, "preempt": ["lowest"]},
            {"name": "normal4", "priority": 10, "preempt": ["lowest"]},
            {"name": "normal5", "priority": 10, "preempt": ["lowest"]},
            {"name": "lowest"},
        ],
        # Flags of 4, GrpTRES of 3, MaxTRESPU of 2.
        4 + 3 + 2,
    ),
}


def test_every_qos_output_has_its_source_and_an_expectation() -> None:
    assert {p.name for p in QOS_CORPUS.iterdir()} == set(QOS_EXPECTED)
    for site in QOS_EXPECTED:
        fields = dict(
            re.findall(r"^(\w+): *(.*)$", (QOS_CORPUS / site / "SOURCE").read_text(), re.M)
        )
        assert re.fullmatch(r"[0-9a-f]{40}", fields.get("commit", "")), site
        assert fields.get("licence") in LICENCES, site


@pytest.mark.parametrize("site", sorted(QOS_EXPECTED))
@pytest.mark.parametrize("form", ["parsable2", "parsable", "windows-copy"])
def test_a_real_sites_qos_become_slurm_qos(site: str, form: str, tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """`import slurm --qos FILE`: each QOS with what slurm.qos models, each other setting
    named at its line, and the spec validates. `--parsable` ends every line with '|'; a copy
    saved on Windows starts with a BOM and ends its lines with CRLF."""
    partition_qos, entries, left_out = QOS_EXPECTED[site]
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "slurm.conf").write_text(QOS_SITE.format(qos=partition_qos))
    text = (QOS_CORPUS / site / "qos.txt").read_text()
    if form == "parsable":
        text = "".join(f"{line}|\n" for line in text.splitlines())
    if form == "windows-copy":  # saved by a Windows editor: a BOM and CRLF line ends
        text = "\ufeff" + text.replace("\n", "\r\n")
    (tmp_path / "qos.txt").write_bytes(text.encode("utf-8"))
    out = tmp_path / "spec.yaml"
    result = cli(
        "import", "slurm", str(tmp_path / "etc"), "--qos", str(tmp_path / "qos.txt"), "-o", str(out)
    )
    assert result.code == 0, result.err
    assert yaml.safe_load(out.read_text())["slurm"]["qos"] == entries
    settings = [
        line for line in result.err.splitlines() if line.startswith("not imported: qos.txt:")
    ]
    assert len(settings) == left_out, "\n".join(settings)
    assert all("sacctmgr modify qos" in line for line in settings)
    assert cli("validate", str(out)).code == 0


def test_a_qos_file_without_its_header_is_refused(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "slurm.conf").write_text(QOS_SITE.format(qos="normal"))
    rows = (QOS_CORPUS / "nersc-perlmutter" / "qos.txt").read_text().splitlines()[1:]
    (tmp_path / "qos.txt").write_text("\n".join(rows) + "\n")  # `sacctmgr -n`: no header
    out = tmp_path / "spec.yaml"
    result = cli(
        "import", "slurm", str(tmp_path / "etc"), "--qos", str(tmp_path / "qos.txt"), "-o", str(out)
    )
    assert result.code == 2 and not out.exists()
    assert "no header line naming a Name column" in result.err and "Traceback" not in result.err


def test_a_difference_no_line_names_is_found() -> None:
    """The comparison can fail: a feature changed, a node's memory changed and a partition's
    MaxTime changed are each found, and a "not imported" line naming the key explains it."""
    original = meaning(CORPUS / "shine-lab")
    node, partition = sorted(original.nodes)[0], sorted(original.partitions)[0]
    nodes = {name: dict(values) for name, values in original.nodes.items()}
    nodes[node]["features"] = ("other",)
    nodes[node]["memory"] = 123_456
    partitions = {name: dict(values) for name, values in original.partitions.items()}
    partitions[partition]["maxtime"] = "1"
    changed = replace(original, nodes=nodes, partitions=partitions)
    found = unexplained(original, changed, [])
    assert [line.split(":")[0] for line in found] == [
        f"node {node}",
        f"node {node}",
        f"partition {partition}",
    ], found
    where = original.where[node]
    explained = [f"{where}: RealMemory=64: why", f"{where}: Feature=x: why"]
    assert len(unexplained(original, changed, explained)) == 1
