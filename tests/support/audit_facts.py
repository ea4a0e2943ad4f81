"""Fact files of healthy nodes, synthesized from what audit expects of each node, in the
tools' formats (the parsers' docstrings cite them): the benchmark's input at 16,384 nodes,
and the proof (tests/test_benchmarks.py) that such input makes audit read every report
and find nothing. The recorded outputs under tests/data/audit/ are written separately."""

from __future__ import annotations

import json
from collections.abc import Mapping

from clustergen.commands.audit.expect import NodeExpectation
from clustergen.commands.audit.facts import FORMAT_VERSION, HEADER, SECTION
from clustergen.model.gpu_topology import Topology


def product_name(model_name: str, memory_gib: int) -> str:
    words = model_name.split("-")
    form = " PCIe" if "pcie" in words else " NVL" if "nvl" in words else ""
    return f"NVIDIA {words[0].upper()}{form} {memory_gib}GB HBM3"


def smi_xml(node: NodeExpectation) -> str:
    """Each GPU the model the profile puts at its device number (gpu's, then other_gpus')."""
    models = [model for model in node.gpu_models if model is not None]
    assert len(models) == node.gpu_count
    gpus = "".join(
        f'  <gpu id="00000000:{0x18 + 0x10 * i:02X}:00.0">\n'
        f"    <product_name>{product_name(model.name, model.memory_gib)}</product_name>\n"
        f"    <minor_number>{i}</minor_number>\n"
        f"    <fb_memory_usage>\n      <total>{model.memory_gib * 1019} MiB</total>\n"
        "      <used>1 MiB</used>\n    </fb_memory_usage>\n  </gpu>\n"
        for i, model in enumerate(models)
    )
    return (
        '<?xml version="1.0" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">\n'
        f"<nvidia_smi_log>\n  <driver_version>{node.driver}</driver_version>\n"
        f"  <attached_gpus>{node.gpu_count}</attached_gpus>\n{gpus}</nvidia_smi_log>\n"
    )


def topo_m(topology: Topology) -> str:
    gpus = [f"GPU{g.index}" for g in topology.gpus]
    nics = [f"NIC{i}" for i in range(len(topology.hcas))]
    lines = ["\t" + "\t".join([*gpus, *nics, "CPU Affinity", "NUMA Affinity", "GPU NUMA ID"])]
    for gpu in topology.gpus:
        links = ["X" if g == f"GPU{gpu.index}" else "NV18" for g in gpus]
        for hca in topology.hcas:
            links.append(
                "PIX"
                if hca.name == gpu.hca
                else "NODE"
                if hca.numa_node == gpu.numa_node
                else "SYS"
            )
        lines.append("\t".join([f"GPU{gpu.index}", *links, "0-55", str(gpu.numa_node), "N/A"]))
    legend = [f"  NIC{i}: {hca.name}" for i, hca in enumerate(topology.hcas)]
    return "\n".join([*lines, "", "Legend:", "", "  X    = Self", "", "NIC Legend:", "", *legend])


def ibstat(node: NodeExpectation) -> str:
    ports = {h.name: h.port for h in node.topology.hcas} if node.topology else {}
    blocks = []
    for hca in node.hcas:
        blocks.append(
            f"CA '{hca}'\n\tCA type: MT4123\n\tNumber of ports: 1\n\tFirmware version: "
            "20.39.1002\n\tHardware version: 0\n\tNode GUID: 0xb8cef603001a2b3c\n"
            f"\tSystem image GUID: 0xb8cef603001a2b3c\n\tPort {ports.get(hca, 1)}:\n"
            "\t\tState: Active\n\t\tPhysical state: LinkUp\n"
            f"\t\tRate: {node.rate_gbits or 200}\n\t\tBase lid: 11\n\t\tLMC: 0\n\t\tSM lid: 1\n"
            "\t\tCapability mask: 0xa651e848\n\t\tPort GUID: 0xb8cef603001a2b3c\n"
            f"\t\tLink layer: {node.link_layer or 'InfiniBand'}\n"
        )
    return "".join(blocks)


def ibnetdiscover(expected: Mapping[str, NodeExpectation]) -> str:
    by_switch: dict[str, list[tuple[int, str, str]]] = {}
    for name, node in expected.items():
        for hca, cable in node.cables.items():
            by_switch.setdefault(cable.switch, []).append((cable.port, name, hca))
    out = ["#", "# Topology file: generated on Sat Nov 28 01:00:00 2026", "#"]
    for number, (switch, ports) in enumerate(sorted(by_switch.items())):
        out += ["", "vendid=0x2c9", "devid=0xd2f0", f"switchguid=0x{number:016x}({number:x})"]
        out.append(f'Switch\t40 "S-{number:016x}"\t\t# "{switch}" base port 0 lid 3 lmc 0')
        for port, name, hca in sorted(ports):
            out.append(f'[{port}]\t"H-{port:016x}"[1]({port:x}) \t\t# "{name} {hca}" lid 11 4xHDR')
    return "\n".join(out) + "\n"


def lnet(node: NodeExpectation) -> str:
    address = node.addresses[-1].address if node.addresses else "10.0.0.1"
    nets = [("lo", "0@lo", None)] + [(n, f"{address}@{n}", i) for n, i in node.lnet]
    lines = ["net:"]
    for net, nid, interface in nets:
        lines += [f"    - net type: {net}", "      local NI(s):", f"        - nid: {nid}"]
        lines.append("          status: up")
        if interface:
            lines += ["          interfaces:", f"              0: {interface}"]
    return "\n".join(lines) + "\n"


def ip_addr(node: NodeExpectation) -> str:
    links: dict[str, list[dict[str, object]]] = {
        "lo": [{"family": "inet", "local": "127.0.0.1", "prefixlen": 8}]
    }
    for wanted in node.addresses:
        links.setdefault(wanted.netdev, []).append(
            {"family": "inet", "local": wanted.address, "prefixlen": wanted.prefix}
        )
    return json.dumps(
        [{"ifindex": i, "ifname": n, "addr_info": a} for i, (n, a) in enumerate(links.items(), 1)]
    )


def healthy_facts(name: str, node: NodeExpectation, fabric_scan: str | None = None) -> str:
    """One node's fact file as collect.yml writes it, every report healthy."""
    sections: dict[str, str | None] = {"ibnetdiscover": fabric_scan}
    sections["slurmd-C"] = None
    if node.cpus is not None and node.real_memory_mib is not None:
        cpu = node.host.hardware.cpu
        sections["slurmd-C"] = (
            f"NodeName={name} CPUs={node.cpus} Boards=1 SocketsPerBoard={cpu.sockets} "
            f"CoresPerSocket={cpu.cores_per_socket} ThreadsPerCore={cpu.threads_per_core} "
            f"RealMemory={node.real_memory_mib + 2048}\nUpTime=41-06:12:09\n"
        )
    sections["nvidia-smi-q-x"] = smi_xml(node) if node.gpu_count else None
    sections["nvidia-smi-topo-m"] = topo_m(node.topology) if node.topology else None
    sections["ibstat"] = ibstat(node) if node.hcas else None
    sections["lnetctl-net-show"] = lnet(node) if node.lnet else None
    sections["dpkg-query"] = "".join(
        f"hi \t{p}\t{v.replace('*', '1')}\n" for p, v in sorted(node.packages.items())
    )
    sections["ip-j-addr"] = ip_addr(node)
    lines = [f"{HEADER} {FORMAT_VERSION} host={name}"]
    for section, text in sections.items():
        if text is None:
            lines.append(f"{SECTION} {section} absent")
        else:
            lines += [f"{SECTION} {section} rc=0", text.rstrip("\n")]
    return "\n".join(lines) + "\n"
