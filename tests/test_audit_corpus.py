"""audit's readers on real machines' outputs (tests/corpus/tools/, each beside a .SOURCE
naming the public repository, commit and licence it came from; docs/audit.md).

Each file's expected reading was taken by hand from the output itself: the GPUs and
their order, the NUMA node and nearest NICs of each GPU, the ports and their states, the
cables and the switches' names, the LNet NIs. A file without an expectation here fails,
so the corpus cannot grow past what is checked.
"""

from __future__ import annotations

import copy
import re
from dataclasses import replace
from pathlib import Path

import pytest
from test_audit import HEALTHY, ML, _cluster

from clustergen.catalog.gpus import GPU_MODELS
from clustergen.commands.audit.compare import (
    Report,
    check_gpus,
    check_hcas,
    check_topology,
    model_matches,
)
from clustergen.commands.audit.expect import expectations, read_tree
from clustergen.commands.audit.facts import parse_facts
from clustergen.commands.audit.hca_ports import parse_ibstat, parse_ibstatus, parse_ibv_devinfo
from clustergen.commands.audit.ibnet import parse_ibnetdiscover
from clustergen.commands.audit.lnet import LocalNi, parse_lnet
from clustergen.commands.audit.nvsmi import parse_smi_xml, parse_topo_m
from clustergen.commands.audit.run import audit_facts
from clustergen.commands.audit.slurmd import SlurmdHardware, parse_slurmd_c
from clustergen.model.network import INFINIBAND_RATES, LINK_GBITS

from support.paths import REPO
from support.specs import example_data, validated

CORPUS = REPO / "tests" / "corpus" / "tools"
LICENCES = {
    "MIT",
    "Apache-2.0",
    "BSD-3-Clause",
    "MPL-2.0",
    "GPL-2.0-or-later",
    "GPL-3.0-or-later",
}

# nvidia-smi -q -x: (driver, attached_gpus, products in nvidia-smi's index order, the
# first GPU's memory in MiB, bus IDs in index order).
SMI = {
    "a100-sxm4-40gb-mig-510": ("510.47.03", 1, ["NVIDIA A100-SXM4-40GB"], 40960),
    # telegraf kept one <gpu> of the four the report counts.
    "a100-sxm4-80gb-mig-535": ("535.54.03", 4, ["NVIDIA A100-SXM4-80GB"], 81920),
    "a10g-515": ("515.105.01", 1, ["NVIDIA A10G"], 23028),
    "grid-p4-1q-vgpu-win": ("513.46", 1, ["GRID P4-1Q"], 1024),
    # minor_number 1 is at 01:00.0, 0 at C1:00.0: the index follows the bus, not them.
    "l4-2gpu-555": ("555.42.06", 2, ["NVIDIA L4", "NVIDIA L4"], 23034),
    "p100-pcie-16gb-510": ("510.47.03", 1, ["Tesla P100-PCIE-16GB"], 16384),
    "rtx4000-sff-ada-595-v13": ("595.84", 1, ["NVIDIA RTX 4000 SFF Ada Generation"], 20475),
    "t4-515": ("515.105.01", 1, ["Tesla T4"], 15360),
    "v100-pcie-32gb-460": ("460.39", 1, ["Tesla V100-PCIE-32GB"], 32510),
}

# nvidia-smi -q -x: the first GPU's PCI device ID (vendor 10de); None where the report's
# copy zeroed it (a10g: 0x000000DE).
DEVICE_IDS = {
    "a100-sxm4-40gb-mig-510": 0x20B0,
    "a100-sxm4-80gb-mig-535": 0x20B2,
    "a10g-515": None,
    "grid-p4-1q-vgpu-win": 0x1BB3,
    "l4-2gpu-555": 0x27B8,
    "p100-pcie-16gb-510": 0x15F8,
    "rtx4000-sff-ada-595-v13": 0x27B0,
    "t4-515": 0x1EB8,
    "v100-pcie-32gb-460": 0x1DB6,
}

# nvidia-smi topo -m: GPU index -> (NUMA node, nearest NICs by RDMA device).
_DGX_A100_NICS = (
    ("mlx5_0", "mlx5_1"),
    ("mlx5_2", "mlx5_3"),
    ("mlx5_6", "mlx5_7"),
    ("mlx5_8", "mlx5_9"),
)
_A100_NICS = (
    ("mlx5_2", "mlx5_3"),
    ("mlx5_0", "mlx5_1"),
    ("mlx5_8", "mlx5_9"),
    ("mlx5_4", "mlx5_5"),
)
TOPO = {
    "a100-8gpu-10nic-numa": {gpu: (0 if gpu < 4 else 1, _A100_NICS[gpu // 2]) for gpu in range(8)},
    # Tabs turned into spaces in the copy; the NIC Legend names the devices.
    "asus-esc8000a-e12-rtx6000ada-spaces": {
        0: (0, ("mlx5_0", "mlx5_1")),
        1: (0, ("mlx5_0", "mlx5_1")),
        2: (1, ("mlx5_2", "mlx5_3")),
        3: (1, ("mlx5_2", "mlx5_3")),
    },
    # DGX A100s, two EPYC 7742 in NPS4 (8 NUMA nodes): NUMA 3, 1, 7, 5 by GPU pair.
    "dgx-a100-nps4-12nic": {
        gpu: ((3, 1, 7, 5)[gpu // 2], _DGX_A100_NICS[gpu // 2]) for gpu in range(8)
    },
    "dgx-a100-epyc7742-nps4-nic-legend": {
        gpu: ((3, 1, 7, 5)[gpu // 2], (f"mlx5_{gpu // 2 * 2}", f"mlx5_{gpu // 2 * 2 + 1}"))
        for gpu in range(8)
    },
    # Before NIC Legend and NUMA Affinity: NIC columns named mlx5_N, no NUMA column.
    "dgx1-v100-mlx5-cols": {gpu: (None, (f"mlx5_{gpu // 2}",)) for gpu in range(8)},
    "puget-wrx90-2gpu-spaces": {gpu: (0, ("mlx5_0", "mlx5_1")) for gpu in range(2)},
}

# ibstat: (ports, active ports, {(link layer, rate)}).
IBSTAT = {
    "a100-8ib-hdr-1eth": (9, 9, {("Ethernet", 200.0), ("InfiniBand", 200.0)}),
    "azure-a100-8hca-ibpanic": (8, 8, {("InfiniBand", 200.0)}),
    "cx3-2hca-fdr": (4, 4, {("InfiniBand", 56.0)}),
    "h100-mixed-3-down": (12, 9, {("Ethernet", 40.0), ("Ethernet", 100.0), ("InfiniBand", 400.0)}),
    "h100-ndr-8ib-1eth": (9, 9, {("Ethernet", 200.0), ("InfiniBand", 400.0)}),
    "h100-roce-12hca": (12, 12, {("Ethernet", 100.0), ("Ethernet", 400.0)}),
    "h100-roce-2-down": (12, 10, {("Ethernet", 40.0), ("Ethernet", 100.0), ("Ethernet", 400.0)}),
}

# ibv_devinfo: (device, port, state, rate in Gb/s: only -v prints width and speed).
IBV_DEVINFO = {
    "anl-cx6-hdr-cx5-roce": [
        ("mlx5_0", 1, "active", 200.0, "InfiniBand"),
        ("mlx5_1", 1, "active", 100.0, "Ethernet"),
        ("mlx5_2", 1, "active", 100.0, "Ethernet"),
    ],
    "cx3-2hca-ports-down": [
        ("mlx4_1", 1, "active", None, "InfiniBand"),
        ("mlx4_1", 2, "down", None, "InfiniBand"),
        ("mlx4_0", 1, "active", None, "InfiniBand"),
        ("mlx4_0", 2, "down", None, "InfiniBand"),
    ],
    "cx3-port2-down-v": [("mlx4_1", 2, "down", 10.0, "InfiniBand")],
}

# ibstatus: (device, port, state, rate, link layer) of every port.
_HDR = [(f"mlx5_{n}", 1, "active", 200.0, "InfiniBand") for n in range(8)]
IBSTATUS = {
    "azure-a100-8ib-hdr": [*_HDR, ("mlx5_8", 1, "active", 40.0, "Ethernet")],
    "azure-hbv2-an0-ib0": [
        ("mlx5_an0", 1, "active", 40.0, "Ethernet"),
        ("mlx5_ib0", 1, "active", 200.0, "InfiniBand"),
    ],
    "cx3-2port-fdr": [
        ("mlx4_0", 1, "active", 56.0, "InfiniBand"),
        ("mlx4_0", 2, "active", 56.0, "InfiniBand"),
    ],
}

# ibnetdiscover: (cables, switches by name, one cable (switch, port, peer, peer device)).
IBNETDISCOVER = {
    # Managed switches, `MF0;<name>:<model>/U1`: 40 of them, named as the site named them.
    "dgx-superpod-ndr-switches": (
        1646,
        40,
        ("A09-P1-IBLEAF-04-04", 1, "a08-p1-dgx-04-c01", "mlx5_5"),
    ),
    "gb200-lone-hca": (0, 0, None),
    # MLNX_OFED's `<host> HCA-1`; the switch describes itself by model: named by GUID.
    "ibm-pcm-2009-sdr": (2, 1, ("S-000b8cffff0053ee", 1, "compute-00-01", "HCA-1")),
    "nvidia-kb-edr-fdr-2016": (14, 2, ("switch-de779e", 2, "r-ufm101", "HCA-1")),
    "oracle-sun-dcs36-qdr": (1, 1, ("S-0021283a8389a0a0", 23, "nsn33-43", "HCA-1")),
}

LNET = {
    "lnet-down": ((), "cannot get networks: Network is down"),
    "o2ib-ib0-ib1-verbose": (
        (LocalNi("lo", "", "up"), LocalNi("o2ib", "ib0", "up"), LocalNi("o2ib", "ib1", "up")),
        None,
    ),
    "tcp-eth1-verbose": ((LocalNi("lo", "", "up"), LocalNi("tcp", "eth1", "up")), None),
    # A tcp NI configured without naming an interface.
    "tcp-no-interfaces-verbose": ((LocalNi("lo", "", "up"), LocalNi("tcp", "", "up")), None),
}

SLURMD_C = {
    "a100-pcie-l3cache-as-socket": SlurmdHardware(32, 8, 2, 2, 128762),
    "man-slurmd8-node1": SlurmdHardware(16, 1, 8, 2, 31848),
    "nebari-hpc02-test-vm": SlurmdHardware(4, 4, 1, 1, 7976),
}

EXPECTED = {
    "nvidia-smi-q-x": SMI,
    "nvidia-smi-topo-m": TOPO,
    "ibstat": IBSTAT,
    "ibv_devinfo": IBV_DEVINFO,
    "ibstatus": IBSTATUS,
    "ibnetdiscover": IBNETDISCOVER,
    "lnetctl-net-show": LNET,
    "slurmd-C": SLURMD_C,
}


def _outputs(tool: str) -> list[Path]:
    return sorted(p for p in (CORPUS / tool).iterdir() if p.suffix in (".txt", ".xml"))


def test_every_output_has_its_source_and_an_expectation() -> None:
    tools = {p.name for p in CORPUS.iterdir() if p.is_dir()}
    assert tools == set(EXPECTED)
    outputs = [path for tool in sorted(tools) for path in _outputs(tool)]
    assert len(outputs) >= 30
    for path in outputs:
        source = path.with_suffix(".SOURCE").read_text()
        fields = dict(re.findall(r"^(\w+): *(.*)$", source, re.M))
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", fields.get("repository", "")), path
        assert re.fullmatch(r"[0-9a-f]{40}", fields.get("commit", "")), path
        assert fields.get("licence") in LICENCES, (path, fields.get("licence"))
        assert path.stat().st_size < 200_000, path
    for tool, expected in EXPECTED.items():
        assert {p.stem for p in _outputs(tool)} == set(expected), tool


@pytest.mark.parametrize("name", sorted(SMI))
def test_nvidia_smi_xml(name: str) -> None:
    driver, attached, products, memory = SMI[name]
    report = parse_smi_xml((CORPUS / "nvidia-smi-q-x" / f"{name}.xml").read_text())
    assert report is not None
    assert (report.driver, report.attached) == (driver, attached)
    assert [g.product for g in report.gpus] == products
    assert [g.index for g in report.gpus] == list(range(len(products)))
    assert report.gpus[0].memory_mib == memory
    assert report.gpus[0].device_id == DEVICE_IDS[name]
    bus = [g.bus_id for g in report.gpus]
    assert bus == sorted(bus), "nvidia-smi lists its GPUs by PCI bus ID"


@pytest.mark.parametrize("name", sorted(TOPO))
def test_nvidia_smi_topo_m(name: str) -> None:
    placements = parse_topo_m((CORPUS / "nvidia-smi-topo-m" / f"{name}.txt").read_text())
    assert placements is not None
    got = {gpu: (p.numa_node, p.nearest_nics) for gpu, p in placements.items()}
    assert got == TOPO[name]


def test_topo_m_inside_a_slurm_job_keeps_the_numa_column() -> None:
    """A matrix printed inside a job whose cgroup hides the CPUs has empty CPU Affinity
    cells; the NUMA node is still the cell under NUMA Affinity, not the GPU NUMA ID."""
    text = (CORPUS / "nvidia-smi-topo-m" / "a100-8gpu-10nic-numa.txt").read_text()
    in_job = re.sub(r"^(GPU\d+\t(?:[^\t]*\t){18})[^\t]+", r"\1", text, flags=re.M)
    assert in_job != text and "\t\t0\t\tN/A" in in_job
    grace = in_job.replace("\t\tN/A", "\t\t7")  # a numeric GPU NUMA ID, as on Grace
    for variant in (in_job, grace):
        placements = parse_topo_m(variant)
        assert placements is not None
        assert {g: p.numa_node for g, p in placements.items()} == {
            g: (0 if g < 4 else 1) for g in range(8)
        }


def test_a_matrix_without_a_gpu_row_is_unreadable_not_empty() -> None:
    header = (CORPUS / "nvidia-smi-topo-m" / "puget-wrx90-2gpu-spaces.txt").read_text()
    assert parse_topo_m(header.splitlines()[0]) is None


@pytest.mark.parametrize("name", sorted(IBSTAT))
def test_ibstat(name: str) -> None:
    count, active, layers = IBSTAT[name]
    ports = parse_ibstat((CORPUS / "ibstat" / f"{name}.txt").read_text())
    assert len(ports) == count
    assert sum(p.state == "active" for p in ports) == active
    assert {(p.link_layer, p.rate_gbits) for p in ports} == layers


@pytest.mark.parametrize("name", sorted(IBV_DEVINFO))
def test_ibv_devinfo(name: str) -> None:
    ports = parse_ibv_devinfo((CORPUS / "ibv_devinfo" / f"{name}.txt").read_text())
    assert [(p.device, p.port, p.state, p.rate_gbits, p.link_layer) for p in ports] == (
        IBV_DEVINFO[name]
    )


@pytest.mark.parametrize("name", sorted(IBSTATUS))
def test_ibstatus(name: str) -> None:
    ports = parse_ibstatus((CORPUS / "ibstatus" / f"{name}.txt").read_text())
    assert [(p.device, p.port, p.state, p.rate_gbits, p.link_layer) for p in ports] == (
        IBSTATUS[name]
    )


def test_ibstatus_reports_the_ports_where_ibstat_printed_none() -> None:
    """ibstat failing with nothing read (exit 255 before any port), ibstatus (sysfs) still
    gives the ports, and they are checked."""
    text = (CORPUS / "ibstatus" / "azure-a100-8ib-hdr.txt").read_text()
    facts = parse_facts(HEALTHY.read_text(), str(HEALTHY))
    ibstat = facts.sections["ibstat"]
    facts.sections["ibstat"] = replace(ibstat, text="ibpanic: [1] main: stat of IB device", rc=255)
    facts.sections.pop("ibv_devinfo-v", None)  # the healthy node's second reader
    facts.sections["ibstatus"] = replace(ibstat, name="ibstatus", text=text, rc=0)
    result = audit_facts(_cluster(ML), read_tree(REPO), [facts])
    assert result.findings == [], [p.format() for p in result.findings]
    down = text.replace("4: ACTIVE", "1: DOWN", 1)
    facts.sections["ibstatus"] = replace(ibstat, name="ibstatus", text=down, rc=0)
    result = audit_facts(_cluster(ML), read_tree(REPO), [facts])
    assert [(p.code.name, p.message) for p in result.findings] == [
        ("audit.hca-down", "mlx5_0 port 1 is down")
    ]


@pytest.mark.parametrize("name", sorted(IBNETDISCOVER))
def test_ibnetdiscover(name: str) -> None:
    count, switches, sample = IBNETDISCOVER[name]
    cables = parse_ibnetdiscover((CORPUS / "ibnetdiscover" / f"{name}.txt").read_text())
    assert len(cables) == count
    assert len({c.switch for c in cables}) == switches
    if sample is not None:
        assert sample in {(c.switch, c.port, c.peer, c.peer_device) for c in cables}
    # No name is a vendor's word, a model, or a description with spaces.
    names = {c.switch for c in cables} | {c.peer for c in cables}
    assert not names & {"Mellanox", "SwitchIB", "Sun", "MT43132", "Technologies"}, names
    assert not any(" " in n or ";" in n for n in names), names


def test_ibnetdiscover_sees_the_superpod_cabled_leaf_to_spine() -> None:
    cables = parse_ibnetdiscover(
        (CORPUS / "ibnetdiscover" / "dgx-superpod-ndr-switches.txt").read_text()
    )
    switches = {c.switch for c in cables}
    uplinks = [c for c in cables if c.peer in switches]
    assert len(uplinks) == 1064
    assert all(c.peer_device == "" for c in uplinks)
    # The 40 SHARP aggregation nodes ("Mellanox Technologies Aggregation Node") and 69
    # HCAs left at their default ("MT4129 ConnectX7 Mellanox Technologies") name no
    # node: each is its own GUID, not one peer named "Mellanox".
    unnamed = [c for c in cables if c.peer.startswith("H-")]
    assert len(unnamed) == 109 and len({c.peer for c in unnamed}) == 109


@pytest.mark.parametrize("name", sorted(LNET))
def test_lnetctl(name: str) -> None:
    report = parse_lnet((CORPUS / "lnetctl-net-show" / f"{name}.txt").read_text())
    assert report is not None
    assert (report.nis, report.error) == LNET[name]


@pytest.mark.parametrize("name", sorted(SLURMD_C))
def test_slurmd_c(name: str) -> None:
    assert parse_slurmd_c((CORPUS / "slurmd-C" / f"{name}.txt").read_text()) == SLURMD_C[name]


def _audit_with(section: str, text: str, rc: int = 0) -> list[tuple[str, str]]:
    """The healthy GPU node of the 8-node example with one report replaced by `text`."""
    facts = parse_facts(HEALTHY.read_text(), str(HEALTHY))
    facts.sections[section] = replace(facts.sections[section], text=text, rc=rc)
    result = audit_facts(_cluster(ML), read_tree(REPO), [facts])
    return [(p.code.name, p.message) for p in result.findings]


def test_ibstat_that_exits_255_after_its_ports_is_read_and_said_partial() -> None:
    text = (CORPUS / "ibstat" / "azure-a100-8hca-ibpanic.txt").read_text()
    findings = _audit_with("ibstat", text, rc=255)
    # Its 8 HDR ports are the profile's mlx5_0..7, all Active at 200 Gb/s: read, they
    # match; unread, every HCA check was hidden behind audit.report-unreadable.
    assert findings == [
        (
            "audit.report-partial",
            "`ibstat` exited 255 after printing 8 ports: they are checked, any port after "
            "them is not",
        )
    ]
    down = text.replace("State: Active", "State: Down", 1)
    assert ("audit.hca-down", "mlx5_0 port 1 is down") in _audit_with("ibstat", down, rc=255)


def test_gpus_of_a_model_the_catalog_lacks_are_one_finding() -> None:
    text = (CORPUS / "nvidia-smi-q-x" / "l4-2gpu-555.xml").read_text()
    findings = dict(_audit_with("nvidia-smi-q-x", text))
    assert findings["audit.gpu-model"] == (
        "GPUs 0, 1 are NVIDIA L4, 23034 MiB (a model clustergen's catalog does not know, PCI "
        "device 10de:27b8); profile hgx-h100 has h100-sxm5-80gb"
    )
    assert findings["audit.gpu-missing"].startswith("2 GPUs, profile hgx-h100 has 8")


def test_a_report_that_lists_fewer_gpus_than_it_counts_is_partial() -> None:
    text = (CORPUS / "nvidia-smi-q-x" / "a100-sxm4-80gb-mig-535.xml").read_text()
    findings = _audit_with("nvidia-smi-q-x", text)
    assert (
        "audit.report-partial",
        "the report counts 4 attached GPUs but lists 1: the others are not checked",
    ) in findings


def test_a_gpu_is_known_by_its_pci_device_id_whatever_its_name() -> None:
    """A board's PCI device ID decides its model where the catalog knows the ID: an
    engineering name nvidia-smi prints matches, and a board of another model of the same
    generation and memory is told apart (a real V100 PCIe 32GB, 10de:1db6)."""
    a100 = (CORPUS / "nvidia-smi-q-x" / "a100-sxm4-80gb-mig-535.xml").read_text()
    renamed = a100.replace("NVIDIA A100-SXM4-80GB", "NVIDIA Graphics Device").replace(
        "20B210DE", "233010DE"
    )
    assert not [f for f in _audit_with("nvidia-smi-q-x", renamed) if f[0] == "audit.gpu-model"]
    findings = dict(_audit_with("nvidia-smi-q-x", a100))
    assert findings["audit.gpu-model"] == (
        "GPU 0 (00000000:01:00.0) is NVIDIA A100-SXM4-80GB, 81920 MiB (a100-sxm4-80gb); "
        "profile hgx-h100 has h100-sxm5-80gb"
    )
    v100 = parse_smi_xml((CORPUS / "nvidia-smi-q-x" / "v100-pcie-32gb-460.xml").read_text())
    assert v100 is not None
    gpu = v100.gpus[0]
    matches = [
        m
        for m in GPU_MODELS.values()
        if model_matches(m, gpu.product, gpu.memory_mib, gpu.device_id)
    ]
    assert [m.name for m in matches] == ["v100-pcie-32gb"]
    # By its name alone, the V100 SXM2 32GB's memory and generation would not tell it apart
    # from a board nvidia-smi names without its form factor.
    sxm2 = GPU_MODELS["v100-sxm2-32gb"]
    assert model_matches(sxm2, "Tesla V100 32GB", gpu.memory_mib)
    assert not model_matches(sxm2, "Tesla V100 32GB", gpu.memory_mib, gpu.device_id)


# The real machines of the corpus whose GPU the catalog knows, each as a spec writes it
# (the GPU profile's model and count) and the findings a spec written as the machine is
# still gives: the a100-sxm4-80gb machine's report lists 1 of its 4 GPUs (telegraf kept
# one), which is the report's fault, not the spec's.
MACHINES = {
    "a100-sxm4-40gb-mig-510": ("a100-sxm4-40gb", 1, []),
    "a100-sxm4-80gb-mig-535": ("a100-sxm4-80gb", 4, ["audit.report-partial"]),
    "v100-pcie-32gb-460": ("v100-pcie-32gb", 1, []),
}


def _gpu_findings(name: str, model: str, count: int, driver: str | None = None) -> list[str]:
    """The GPU checks' findings for machine `name`'s nvidia-smi report against the 8-node
    example with its GPU profile written as `model` x `count` (and the driver pin as the
    machine's, or `driver`)."""
    data = example_data()
    data["hardware"]["hgx-h100"]["gpu"] = {"model": model, "count": count}
    text = (CORPUS / "nvidia-smi-q-x" / f"{name}.xml").read_text()
    return [code for code, _ in _smi_findings(data, text, driver)]


def _smi_findings(data: dict, text: str, driver: str | None = None) -> list[tuple[str, str]]:  # type: ignore[type-arg]
    """The GPU checks' findings for an nvidia-smi report against gpu01 of spec `data`,
    whose driver pin is taken as the report's (or `driver`)."""
    del data["software"]["fabric_manager"]  # these machines have no NVSwitch
    cluster, _ = validated(data)
    smi = parse_smi_xml(text)
    assert smi is not None
    node = replace(expectations(cluster, read_tree(REPO))["gpu01"], driver=driver or smi.driver)
    facts = parse_facts(HEALTHY.read_text(), str(HEALTHY))
    facts.sections["nvidia-smi-q-x"] = replace(facts.sections["nvidia-smi-q-x"], text=text)
    report = Report(facts)
    check_gpus(report, node)
    return [(p.code.name, p.message) for p in report.found]


def _two_gpu_report(a100_minor: int, v100_minor: int) -> str:
    """One report of two real GPUs: the <gpu> of the A100 SXM4 40GB machine, then the V100
    PCIe 32GB machine's (bus 00:04.0 before 21:01.0, so nvidia-smi's index order), each with
    the minor number (/dev/nvidiaN) given."""

    def element(name: str, minor: int) -> str:
        text = (CORPUS / "nvidia-smi-q-x" / f"{name}.xml").read_text()
        gpu = text[text.index("<gpu id=") : text.index("</gpu>") + len("</gpu>")]
        assert gpu.count("<minor_number>0</minor_number>") == 1
        return gpu.replace(
            "<minor_number>0</minor_number>", f"<minor_number>{minor}</minor_number>"
        )

    head = (CORPUS / "nvidia-smi-q-x" / "a100-sxm4-40gb-mig-510.xml").read_text()
    head = head[: head.index("<gpu id=")].replace("<attached_gpus>1<", "<attached_gpus>2<")
    gpus = element("a100-sxm4-40gb-mig-510", a100_minor), element("v100-pcie-32gb-460", v100_minor)
    return head + "\n".join(gpus) + "\n</nvidia_smi_log>\n"


def test_a_node_of_two_gpu_models_is_judged_gpu_by_gpu_by_device_number() -> None:
    """gpu's device files come first, then other_gpus' (gres.conf File=): each GPU is
    judged against the model the profile puts at its minor number, which the driver need
    not give in nvidia-smi's index order (the corpus's L4 pair reads minor 1 at index 0)."""
    data = example_data()
    data["hardware"]["hgx-h100"]["gpu"] = {"model": "a100-sxm4-40gb", "count": 1}
    data["hardware"]["hgx-h100"]["other_gpus"] = [{"model": "v100-pcie-32gb", "count": 1}]
    assert _smi_findings(copy.deepcopy(data), _two_gpu_report(0, 1)) == []
    # The same two boards, the driver numbering the V100 first: each is where the spec
    # puts the other model.
    assert _smi_findings(copy.deepcopy(data), _two_gpu_report(1, 0)) == [
        (
            "audit.gpu-model",
            "GPU 0 (00000000:00:04.0) is NVIDIA A100-SXM4-40GB, 40960 MiB (a100-sxm4-40gb); "
            "profile hgx-h100 has v100-pcie-32gb there (gpu, then other_gpus, by device number)",
        ),
        (
            "audit.gpu-model",
            "GPU 1 (00000000:21:01.0) is Tesla V100-PCIE-32GB, 32510 MiB (v100-pcie-32gb); "
            "profile hgx-h100 has a100-sxm4-40gb there (gpu, then other_gpus, by device number)",
        ),
    ]
    # One model written where the node has two: the V100 is found, as one finding.
    data["hardware"]["hgx-h100"]["gpu"]["count"] = 2
    del data["hardware"]["hgx-h100"]["other_gpus"]
    assert [code for code, _ in _smi_findings(data, _two_gpu_report(0, 1))] == ["audit.gpu-model"]


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_a_spec_written_as_the_machine_audits_clean_and_each_planted_difference_is_found(
    name: str,
) -> None:
    model, count, clean = MACHINES[name]
    assert _gpu_findings(name, model, count) == clean
    assert _gpu_findings(name, model, count + 1) == [*clean, "audit.gpu-missing"]
    other = "h100-sxm5-80gb" if not model.startswith("h100") else "a100-sxm4-80gb"
    assert _gpu_findings(name, other, count) == [*clean, "audit.gpu-model"]
    assert _gpu_findings(name, model, count, driver="999.99.99") == [*clean, "audit.gpu-driver"]


# The real machines of the corpus whose ibstat shows an InfiniBand fabric: the findings a
# spec written as the machine (its InfiniBand HCAs as fabric_hcas, the fabric at their
# rate) still gives. The Azure A100's ibstat exited 255 after printing its ports.
HCA_MACHINES = {
    "a100-8ib-hdr-1eth": [],
    "azure-a100-8hca-ibpanic": ["audit.report-partial"],
    "cx3-2hca-fdr": [],
    "h100-ndr-8ib-1eth": [],
}
_RATE_NAMES = {gbits: name for name, gbits in LINK_GBITS.items() if name in INFINIBAND_RATES}


def _hca_findings(name: str, extra_hca: str | None = None, rate: str | None = None) -> list[str]:
    text = (CORPUS / "ibstat" / f"{name}.txt").read_text()
    ports = [p for p in parse_ibstat(text) if p.link_layer == "InfiniBand" and p.port == 1]
    hcas = sorted({p.device for p in ports})
    (gbits,) = {p.rate_gbits for p in ports}
    data = example_data()
    data["hardware"]["hgx-h100"]["fabric_hcas"] = [*hcas, *([extra_hca] if extra_hca else [])]
    data["network"]["fabric"]["rate"] = rate or _RATE_NAMES[int(gbits or 0)]
    cluster, _ = validated(data)
    node = expectations(cluster, read_tree(REPO))["gpu01"]
    facts = parse_facts(HEALTHY.read_text(), str(HEALTHY))
    facts.sections["ibstat"] = replace(
        facts.sections["ibstat"], text=text, rc=255 if "ibpanic" in name else 0
    )
    report = Report(facts)
    check_hcas(report, node)
    return sorted({p.code.name for p in report.found})


@pytest.mark.parametrize("name", sorted(HCA_MACHINES))
def test_a_spec_written_as_the_machines_fabric_audits_clean_and_differences_are_found(
    name: str,
) -> None:
    clean = HCA_MACHINES[name]
    assert _hca_findings(name) == clean
    assert _hca_findings(name, extra_hca="mlx5_99") == sorted([*clean, "audit.hca-missing"])
    other = "xdr" if "ndr" not in name else "hdr"
    assert _hca_findings(name, rate=other) == sorted([*clean, "audit.hca-rate"])


def _topology_findings(gpus: list[dict[str, object]]) -> list[str]:
    """check_topology's findings for the DGX A100 (NPS4, columns named mlx5_N) against the
    8-node example with its GPU profile written as that machine: 2 x 64 cores in 8 NUMA
    nodes of 16 cores, 8 A100s, each GPU's NUMA node, cores and nearest compute HCA."""
    data = example_data()
    profile = data["hardware"]["hgx-h100"]
    profile["gpu"] = {"model": "a100-sxm4-40gb", "count": 8, "nvswitch": True}
    profile["cpu"] = {"sockets": 2, "cores_per_socket": 64, "threads_per_core": 2}
    profile["cpu"]["numa_per_socket"] = 4
    hcas = [name for pair in _DGX_A100_NICS for name in pair]
    profile["fabric_hcas"] = hcas
    numa = {name: (3, 1, 7, 5)[index // 2] for index, name in enumerate(hcas)}
    profile["topology"] = {
        "hcas": [{"name": n, "numa_node": numa[n], "role": "compute"} for n in hcas],
        "gpus": gpus,
    }
    cluster, _ = validated(data)
    node = expectations(cluster, read_tree(REPO))["gpu01"]
    facts = parse_facts(HEALTHY.read_text(), str(HEALTHY))
    text = (CORPUS / "nvidia-smi-topo-m" / "dgx-a100-nps4-12nic.txt").read_text()
    facts.sections["nvidia-smi-topo-m"] = replace(facts.sections["nvidia-smi-topo-m"], text=text)
    report = Report(facts)
    check_topology(report, node)
    return [p.code.name for p in report.found]


def test_a_dgx_a100_in_nps4_written_as_it_is_audits_clean_and_a_moved_gpu_is_found() -> None:
    """issue 41: a DGX A100 (NPS4: 8 NUMA nodes on 2 sockets) can be written as it is, and
    audit judges placement on its NUMA nodes."""
    numa_of = (3, 3, 1, 1, 7, 7, 5, 5)
    hca_of = [name for pair in _DGX_A100_NICS for name in pair]
    gpus = [
        {"index": i, "numa_node": n, "cores": f"{16 * n}-{16 * n + 15}", "hca": hca_of[i]}
        for i, n in enumerate(numa_of)
    ]
    assert _topology_findings(gpus) == []
    moved = [dict(g) for g in gpus]
    moved[0].update(numa_node=1, cores="16-31")  # written on GPU 2's NUMA node
    assert _topology_findings(moved) == ["audit.gpu-numa"]
    swapped = [dict(g) for g in gpus]
    swapped[0]["hca"] = "mlx5_2"  # an HCA of another NUMA node
    assert _topology_findings(swapped) == ["audit.gpu-hca"]
