"""nvidia-smi's reports (NVIDIA, "nvidia-smi documentation", the -q -x XML schema
nvsmi_device_v12.dtd, and `nvidia-smi topo -h`).

`nvidia-smi -q -x`: `<nvidia_smi_log>` holds `<driver_version>`, `<attached_gpus>` and
one `<gpu id="00000000:18:00.0">` per GPU with `<product_name>`, `<minor_number>` and
`<fb_memory_usage><total>81559 MiB</total>`.

`nvidia-smi topo -m`: a tab-separated matrix: a header row of the devices (GPU0.., NIC0..)
then `CPU Affinity`, `NUMA Affinity` (and, in newer drivers, `GPU NUMA ID`); a row per
device with the connection to each (X self, NV# NVLink, PIX one PCIe bridge, PXB several,
PHB a host bridge, NODE within a NUMA node, SYS across the SMP interconnect); then a
legend, and `NIC Legend:` lines `  NIC0: mlx5_0`.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

# Nearest first: the connections a GPU can have to a NIC (`nvidia-smi topo -h`).
PCIE_DISTANCE = ("PIX", "PXB", "PHB", "NODE", "SYS")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NIC_LEGEND = re.compile(r"^\s*(NIC\d+):\s*(\S+)\s*$")
_DEVICE = re.compile(r"(GPU|NIC)\d+")
_GPU = re.compile(r"GPU\d+")


@dataclass(frozen=True)
class SmiGpu:
    index: int  # the minor number: /dev/nvidiaN, the index nvidia-smi numbers by
    product: str
    memory_mib: int | None
    bus_id: str


@dataclass(frozen=True)
class SmiReport:
    driver: str
    gpus: tuple[SmiGpu, ...]


@dataclass(frozen=True)
class GpuPlacement:
    numa_node: int | None  # None: N/A
    nearest_nics: tuple[str, ...]  # the RDMA devices at the nearest distance


def parse_smi_xml(text: str) -> SmiReport | None:
    """The driver and the GPUs, or None when the text is not nvidia-smi's XML."""
    try:
        root = ET.fromstring(text.strip())
    except ET.ParseError:
        return None
    if root.tag != "nvidia_smi_log":
        return None
    gpus = []
    for position, gpu in enumerate(root.findall("gpu")):
        minor = (gpu.findtext("minor_number") or "").strip()
        total = (gpu.findtext("fb_memory_usage/total") or "").split()
        gpus.append(
            SmiGpu(
                index=int(minor) if minor.isdigit() else position,
                product=(gpu.findtext("product_name") or "").strip(),
                memory_mib=int(total[0]) if total and total[0].isdigit() else None,
                bus_id=gpu.get("id", ""),
            )
        )
    return SmiReport((root.findtext("driver_version") or "").strip(), tuple(gpus))


def parse_topo_m(text: str) -> dict[int, GpuPlacement] | None:
    """Each GPU index's NUMA node and nearest NICs (by RDMA device name), or None when
    the text has no matrix."""
    lines = [_ANSI.sub("", line) for line in text.splitlines()]
    header = next((i for i, line in enumerate(lines) if line.split()[:1] == ["GPU0"]), None)
    if header is None:
        return None
    devices = [c.strip() for c in lines[header].split("\t") if c.strip()]
    names = [d for d in devices if _DEVICE.fullmatch(d)]
    nics = {m[1]: m[2] for line in lines if (m := _NIC_LEGEND.match(line))}
    placements: dict[int, GpuPlacement] = {}
    for line in lines[header + 1 :]:
        cells = [c.strip() for c in line.split("\t")]
        if not cells or not _GPU.fullmatch(cells[0]):
            continue
        links = dict(zip(names, cells[1 : 1 + len(names)], strict=False))
        rest = [c for c in cells[1 + len(names) :] if c]
        numa = rest[1] if len(rest) > 1 else "N/A"
        placements[int(cells[0][3:])] = GpuPlacement(
            int(numa) if numa.isdigit() else None, _nearest(links, nics)
        )
    return placements


def _nearest(links: dict[str, str], nics: dict[str, str]) -> tuple[str, ...]:
    distances = {
        nics.get(name, name): PCIE_DISTANCE.index(link)
        for name, link in links.items()
        if name.startswith("NIC") and link in PCIE_DISTANCE
    }
    if not distances:
        return ()
    best = min(distances.values())
    return tuple(sorted(nic for nic, d in distances.items() if d == best))
