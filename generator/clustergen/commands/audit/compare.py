"""The findings: each node's reports against what the spec and the tree expect.

A report a node did not give (the tool is absent) is a finding only when the spec says
the component it reports is there: a node without Lustre has no lnetctl, one without
GPUs no nvidia-smi. Each finding is a LocatedProblem at the header line of the report it
comes from, its path `<node>.<report>`, as `validate` prints problems."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TypeVar

from clustergen.base import codes
from clustergen.base.codes import Code
from clustergen.base.errors import LocatedProblem, Position
from clustergen.catalog.gpus import GPU_MODELS, GPU_PCI_IDS, GpuModel
from clustergen.commands.audit.expect import NodeExpectation
from clustergen.commands.audit.facts import SECTIONS, NodeFacts
from clustergen.commands.audit.hca_ports import (
    RdmaPort,
    parse_ibstat,
    parse_ibstatus,
    parse_ibv_devinfo,
)
from clustergen.commands.audit.ipaddr import parse_ip_addr
from clustergen.commands.audit.lnet import parse_lnet
from clustergen.commands.audit.nvsmi import SmiGpu, parse_smi_xml, parse_topo_m
from clustergen.commands.audit.package_list import parse_dpkg, parse_rpm
from clustergen.commands.audit.slurmd import parse_slurmd_c
from clustergen.commands.lock import carries

T = TypeVar("T")


class Report:
    """The findings of one node, each at the line of the report it comes from."""

    def __init__(self, facts: NodeFacts) -> None:
        self.facts = facts
        self.found: list[LocatedProblem] = []

    def add(self, code: Code, section: str, message: str, node: str | None = None) -> None:
        """A finding at `section`'s header; its path names `node` (default: this file's)."""
        got = self.facts.sections.get(section)
        line = got.line if got else 1
        where = (node or self.facts.node, section)
        self.found.append(LocatedProblem(self.facts.path, Position(line, 1), where, message, code))

    def text(self, section: str, what: str) -> str | None:
        """The report's text when the node has the component (`what`) the spec says; a
        finding when the tool is absent or failed."""
        got = self.facts.sections.get(section)
        command = SECTIONS.get(section, section)
        if got is None or got.absent:
            self.add(
                codes.AUDIT_REPORT_MISSING,
                section,
                f"the spec says the node has {what}, but `{command}` is not installed there",
            )
            return None
        if got.rc != 0 or not got.text.strip():
            self.add(
                codes.AUDIT_REPORT_UNREADABLE,
                section,
                f"`{command}` failed (exit {got.rc}): {_first_line(got.text)}",
            )
            return None
        return got.text

    def parsed(self, section: str, what: str, parse: Callable[[str], T | None]) -> T | None:
        """The report read by `parse`, or None with the finding that says why: the tool
        absent or failed (as `text`), or its output not a report `parse` reads."""
        text = self.text(section, what)
        if text is None:
            return None
        try:
            result = parse(text)
        except RecursionError:  # nested deeper than Python's parsers follow: this node's
            result = None  # report alone is unreadable, never the whole audit
        if result is None:
            self.unreadable(section)
        return result

    def partial(self, section: str, message: str) -> None:
        """A report read as far as it goes; `message` says what is not checked."""
        self.add(codes.AUDIT_REPORT_PARTIAL, section, message)

    def unreadable(self, section: str) -> None:
        command = SECTIONS.get(section, section)
        text = self.facts.sections[section].text
        self.add(
            codes.AUDIT_REPORT_UNREADABLE,
            section,
            f"`{command}` printed no report audit reads: {_first_line(text)}",
        )


def _first_line(text: str) -> str:
    line = next((line.strip() for line in text.splitlines() if line.strip()), "(nothing)")
    return line[:120]


def check_gpus(report: Report, node: NodeExpectation) -> None:
    if not node.gpu_count:
        return
    smi = report.parsed("nvidia-smi-q-x", f"{node.gpu_count} GPUs", parse_smi_xml)
    if smi is None:
        return
    profile = node.host.hardware_name
    if smi.attached is not None and smi.attached > len(smi.gpus):
        report.partial(
            "nvidia-smi-q-x",
            f"the report counts {smi.attached} attached GPUs but lists {len(smi.gpus)}: "
            "the others are not checked",
        )
    if max(len(smi.gpus), smi.attached or 0) < node.gpu_count:
        seen = sorted(g.index for g in smi.gpus)
        gone = [i for i in range(node.gpu_count) if i not in seen]
        report.add(
            codes.AUDIT_GPU_MISSING,
            "nvidia-smi-q-x",
            f"{len(smi.gpus)} GPUs, profile {profile} has {node.gpu_count} "
            f"(no GPU {', '.join(map(str, gone))})",
        )
    _check_gpu_models(report, node, smi.gpus)
    if node.driver and not smi.driver:
        report.partial(
            "nvidia-smi-q-x",
            f"the report names no driver version: software.nvidia_driver {node.driver} "
            "is not checked",
        )
    elif node.driver and smi.driver != node.driver:
        report.add(
            codes.AUDIT_GPU_DRIVER,
            "nvidia-smi-q-x",
            f"NVIDIA driver {smi.driver} is loaded; software.nvidia_driver is {node.driver}",
        )


def _check_gpu_models(report: Report, node: NodeExpectation, gpus: tuple[SmiGpu, ...]) -> None:
    """One finding per product that is not the model the profile puts at its device number
    (gpu's, then other_gpus', by minor number: /dev/nvidiaN), naming its GPUs; a product
    of no catalog model is said to be unknown (a GPU newer than the catalog)."""
    expected = node.gpu_models
    several = len(set(expected)) > 1
    others: dict[tuple[str, int | None, int | None, GpuModel], list[SmiGpu]] = {}
    for gpu in gpus:
        if gpu.device < len(expected):
            model = expected[gpu.device]
        else:  # past the profile's count: judged against its one model, if it has one
            model = None if several else expected[0]
        if model is not None and not model_matches(
            model, gpu.product, gpu.memory_mib, gpu.device_id
        ):
            key = (gpu.product, gpu.memory_mib, gpu.device_id, model)
            others.setdefault(key, []).append(gpu)
    for (product, memory_mib, device_id, model), group in others.items():
        memory = f", {memory_mib} MiB" if memory_mib else ""
        which = (
            f"GPU {group[0].index} ({group[0].bus_id})"
            if len(group) == 1
            else f"GPUs {', '.join(str(g.index) for g in group)}"
        )
        known = [m for m in GPU_MODELS.values() if model_matches(m, product, memory_mib, device_id)]
        if known:
            unknown = f" ({known[0].name})" if device_id in known[0].pci_ids else ""
        else:
            pci = f", PCI device 10de:{device_id:04x}" if device_id is not None else ""
            unknown = f" (a model clustergen's catalog does not know{pci})"
        report.add(
            codes.AUDIT_GPU_MODEL,
            "nvidia-smi-q-x",
            f"{which} {'is' if len(group) == 1 else 'are'} {product}{memory}{unknown}; "
            f"profile {node.host.hardware_name} has {model.name}"
            + (" there (gpu, then other_gpus, by device number)" if several else ""),
        )


def model_matches(
    model: GpuModel, product: str, memory_mib: int | None, device_id: int | None = None
) -> bool:
    """Whether a GPU nvidia-smi reports is of the catalog model: by its PCI device ID
    where the catalog knows that ID (the board, whatever its product name says); else by
    the product name and memory: the model's generation (h100, a100, gh200) as a word of
    the name, its form factor (PCIe and NVL say so in the name; SXM names say neither),
    and its memory within 10%."""
    if device_id is not None and device_id in GPU_PCI_IDS:
        return device_id in model.pci_ids
    words = model.name.split("-")
    product = product.lower()
    if not re.search(rf"(?<![a-z0-9]){re.escape(words[0])}(?![a-z0-9])", product):
        return False
    for form in ("pcie", "nvl"):
        if (form in words) != (form in product):
            return False
    return memory_mib is None or abs(memory_mib / 1024 - model.memory_gib) <= model.memory_gib / 10


def check_topology(report: Report, node: NodeExpectation) -> None:
    if node.topology is None:
        return
    text = report.text("nvidia-smi-topo-m", "the GPU/HCA topology table")
    placements = parse_topo_m(text) if text is not None else None
    if text is not None and placements is None:
        report.unreadable("nvidia-smi-topo-m")
    for gpu in node.topology.gpus if placements else ():
        placed = placements.get(gpu.index) if placements else None
        if placed is None:
            continue  # a missing GPU is audit.gpu-missing's
        if placed.numa_node is not None and placed.numa_node != gpu.numa_node:
            report.add(
                codes.AUDIT_GPU_NUMA,
                "nvidia-smi-topo-m",
                f"GPU {gpu.index} is on NUMA node {placed.numa_node}; the topology "
                f"table says {gpu.numa_node}",
            )
        if placed.nearest_nics and gpu.hca not in placed.nearest_nics:
            report.add(
                codes.AUDIT_GPU_HCA,
                "nvidia-smi-topo-m",
                f"the HCA nearest GPU {gpu.index} is {' or '.join(placed.nearest_nics)}; "
                f"the topology table says {gpu.hca}",
            )


def _ports(report: Report) -> tuple[str, list[RdmaPort]] | None:
    """The first report of the node's RDMA ports that gives any: a tool that failed after
    printing its ports (ibstat exits 255 on some virtual HCAs) is read, and said partial."""
    readers = (
        ("ibstat", parse_ibstat),
        ("ibv_devinfo-v", parse_ibv_devinfo),
        ("ibstatus", parse_ibstatus),
    )
    for section, parse in readers:
        got = report.facts.usable(section)
        if got is None:
            continue
        ports = parse(got.text)
        if ports and got.rc != 0:
            report.partial(
                section,
                f"`{SECTIONS.get(section, section)}` exited {got.rc} after printing "
                f"{len(ports)} ports: they are checked, any port after them is not",
            )
        if ports:
            return section, ports
    for section, _ in readers:
        got = report.facts.sections.get(section)
        if got is not None and not got.absent:
            report.text(section, "HCAs")  # failed: say so
            if got.rc == 0:
                report.unreadable(section)
            return None
    report.text("ibstat", "HCAs")  # neither tool: report-missing
    return None


def check_hcas(report: Report, node: NodeExpectation) -> None:
    if not node.hcas:
        return
    found = _ports(report)
    if found is None:
        return
    section, ports = found
    by_port = {(p.device, p.port): p for p in ports}
    wanted_port = {h.name: h.port for h in node.topology.hcas} if node.topology else {}
    for hca in node.hcas:
        port = by_port.get((hca, wanted_port.get(hca, 1)))
        if port is None:
            report.add(
                codes.AUDIT_HCA_MISSING,
                section,
                f"no HCA {hca} port {wanted_port.get(hca, 1)}",
            )
            continue
        _check_port(report, node, section, port)


def _check_port(report: Report, node: NodeExpectation, section: str, port: RdmaPort) -> None:
    where = f"{port.device} port {port.port}"
    if port.state != "active":
        report.add(codes.AUDIT_HCA_DOWN, section, f"{where} is {port.state or 'in no state'}")
    if port.device not in node.fabric_hcas:
        return
    if node.link_layer and port.link_layer.lower() != node.link_layer.lower():
        report.add(
            codes.AUDIT_HCA_LINK_LAYER,
            section,
            f"{where} has link layer {port.link_layer}; the fabric's is {node.link_layer}",
        )
    elif port.state == "active" and node.rate_gbits and port.rate_gbits != node.rate_gbits:
        rate = f"{port.rate_gbits:g}" if port.rate_gbits is not None else "an unknown rate"
        report.add(
            codes.AUDIT_HCA_RATE,
            section,
            f"{where} runs at {rate} Gb/s; the fabric's rate is {node.rate_gbits} Gb/s",
        )


def check_hardware(report: Report, node: NodeExpectation) -> None:
    if node.cpus is None or node.real_memory_mib is None:
        return
    found = report.parsed("slurmd-C", "slurmd (a Slurm compute node)", parse_slurmd_c)
    if found is None:
        return
    profile = node.host.hardware_name
    if found.cpus < node.cpus:
        report.add(
            codes.AUDIT_CPUS_BELOW_PROFILE,
            "slurmd-C",
            f"slurmd finds {found.cpus} CPUs ({found.sockets} sockets x "
            f"{found.cores_per_socket} cores x {found.threads_per_core} threads); profile "
            f"{profile} gives Slurm {node.cpus}",
        )
    if found.real_memory_mib < node.real_memory_mib:
        report.add(
            codes.AUDIT_MEMORY_BELOW_PROFILE,
            "slurmd-C",
            f"slurmd finds RealMemory={found.real_memory_mib} MiB; profile {profile} "
            f"gives Slurm RealMemory={node.real_memory_mib}",
        )


def check_packages(report: Report, node: NodeExpectation) -> None:
    if not node.packages:
        return
    section, parse = (
        ("rpm-qa", parse_rpm) if node.package_family == "dnf" else ("dpkg-query", parse_dpkg)
    )
    # An empty list is no report: every node has packages.
    installed = report.parsed(
        section, f"{len(node.packages)} pinned packages", lambda text: parse(text) or None
    )
    if installed is None:
        return
    for package, pin in sorted(node.packages.items()):
        version = installed.get(package)
        if version is None:
            report.add(
                codes.AUDIT_PACKAGE_MISSING,
                section,
                f"package {package} is not installed; versions.lock pins {pin}",
            )
        elif not carries(pin, (version,)):
            report.add(
                codes.AUDIT_PACKAGE_VERSION,
                section,
                f"package {package} {version} is installed; versions.lock pins {pin}",
            )


def check_addresses(report: Report, node: NodeExpectation) -> None:
    if not node.addresses:
        return
    links = report.parsed("ip-j-addr", "addresses", parse_ip_addr)
    if links is None:
        return
    for wanted in node.addresses:
        address = f"{wanted.address}/{wanted.prefix}"
        has = links.get(wanted.netdev)
        if has is not None and address in has:
            continue
        now = (
            f"no interface {wanted.netdev}"
            if has is None
            else f"{wanted.netdev} has {', '.join(sorted(has)) or 'no address'}"
        )
        report.add(
            codes.AUDIT_ADDRESS_MISSING,
            "ip-j-addr",
            f"the spec gives {wanted.netdev} {address}; {now}",
        )


def _net(name: str) -> str:
    """LNet prints network number 0 without it: o2ib0 is `o2ib`, tcp0 `tcp`."""
    return re.sub(r"(?<=\D)0$", "", name)


def check_lnet(report: Report, node: NodeExpectation) -> None:
    if not node.lnet:
        return
    lnet = report.parsed("lnetctl-net-show", "LNet (Lustre)", parse_lnet)
    if lnet is None:
        return
    up = {(_net(ni.net), ni.interface) for ni in lnet.nis if ni.status == "up"}
    unnamed = {net for net, interface in up if not interface}
    down = f" (lnetctl: {lnet.error})" if lnet.error else ""
    for net, interface in node.lnet:
        if (_net(net), interface) in up:
            continue
        if _net(net) in unnamed:
            report.partial(
                "lnetctl-net-show",
                f"LNet's {net} NI is up but names no interface: {interface} is not checked",
            )
            continue
        report.add(
            codes.AUDIT_LNET_MISSING,
            "lnetctl-net-show",
            f"LNet has no {net} interface {interface} up{down}",
        )


def check_pull(report: Report, node: NodeExpectation) -> None:
    """Pull mode's record of the node's last run (clustergen-pull's pull.json): a run that
    failed is a finding wherever a node reports one; a node of pull mode that reports
    none has never pulled (its timer has not run, or pull mode was never set up on it)."""
    section = "pull-record"
    got = report.facts.sections.get(section)
    if got is None or got.absent:
        if node.pull:
            report.add(
                codes.AUDIT_PULL_MISSING,
                section,
                "the spec has pull mode (ansible.pull), but the node records no pull run "
                "(/var/lib/clustergen/pull.json): its clustergen-pull.timer has not run yet",
            )
        return
    record = report.parsed(section, "a pull record", _pull_record)
    if record is None or record.get("result") != "failed":
        return
    lines = record.get("failure") or record.get("tail") or []
    why = _first_line("\n".join(map(str, lines)) if isinstance(lines, list) else str(lines))
    report.add(
        codes.AUDIT_PULL_FAILED,
        section,
        f"its last pull run ({record.get('time', '?')}) failed at commit "
        f"{record.get('commit') or '?'} of {record.get('ref') or '?'}; it keeps its last good "
        f"commit {record.get('last_good') or '(none)'}: {why}",
    )


def _pull_record(text: str) -> dict[str, object] | None:
    try:
        record = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) and "result" in record else None


NODE_CHECKS: tuple[Callable[[Report, NodeExpectation], None], ...] = (
    check_gpus,
    check_topology,
    check_hcas,
    check_hardware,
    check_packages,
    check_addresses,
    check_lnet,
    check_pull,
)
