"""nvidia-smi's reports (NVIDIA, "nvidia-smi documentation", the -q -x XML schema
nvsmi_device_v12.dtd, and `nvidia-smi topo -h`).

`nvidia-smi -q -x`: `<nvidia_smi_log>` holds `<driver_version>`, `<attached_gpus>` and
one `<gpu id="00000000:18:00.0">` per GPU, in nvidia-smi's index order (NVML's: by PCI bus
ID), with `<product_name>`, `<minor_number>` (/dev/nvidiaN, which need not follow the
index), `<fb_memory_usage><total>81559 MiB</total>` and
`<pci><pci_device_id>0x233010DE</pci_device_id>` (the board's PCI device and vendor ID).

`nvidia-smi topo -m`: a matrix, tab-separated as printed (copies into documents often
turn the tabs into spaces): a header row of the devices then the labels `CPU Affinity`,
`NUMA Affinity` (drivers since about 450) and `GPU NUMA ID` (since about 535); a row per
device with the connection to each (X self, NV# NVLink, PIX one PCIe bridge, PXB
several, PHB a host bridge, NODE within a NUMA node, SYS across the SMP interconnect);
then a legend. The NICs are columns `NIC0`.. with `NIC Legend:` lines `  NIC0: mlx5_0`
(drivers since about 470), or, before, columns named by the RDMA device (`mlx5_0`). A
matrix printed inside a Slurm job may leave the CPU Affinity cells empty; a tab-separated
row keeps the empty cell, and nvidia-smi puts an empty cell before `GPU NUMA ID`.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

# Nearest first: the connections a GPU can have to a NIC (`nvidia-smi topo -h`).
PCIE_DISTANCE = ("PIX", "PXB", "PHB", "NODE", "SYS")
_DISTANCE = {link: k for k, link in enumerate(PCIE_DISTANCE)}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NIC_LEGEND = re.compile(r"^\s*(NIC\d+):\s*(\S+)\s*$")
_GPU = re.compile(r"GPU\d+")
# The header's labels after the device columns, as nvidia-smi prints them.
_LABELS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")


@dataclass(frozen=True)
class SmiGpu:
    index: int  # nvidia-smi's index (the report's order), as `topo -m` numbers GPUs
    product: str
    memory_mib: int | None
    bus_id: str
    device_id: int | None = None  # the PCI device ID of an NVIDIA board (vendor 10de)
    # <minor_number>: N of /dev/nvidiaN, which gres.conf's File= names. The driver numbers
    # the devices in PCI bus order, as nvidia-smi does, but not always the same way (an
    # L4 pair of tests/corpus reads minor 1 at index 0); None where the report says N/A.
    minor: int | None = None

    @property
    def device(self) -> int:
        """The GPU's device number where the report gives one, else its index."""
        return self.index if self.minor is None else self.minor


@dataclass(frozen=True)
class SmiReport:
    driver: str
    gpus: tuple[SmiGpu, ...]
    attached: int | None  # <attached_gpus>: how many GPUs the driver sees


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
        total = (gpu.findtext("fb_memory_usage/total") or "").split()
        gpus.append(
            SmiGpu(
                index=position,
                product=(gpu.findtext("product_name") or "").strip(),
                memory_mib=int(total[0]) if total and total[0].isdigit() else None,
                bus_id=gpu.get("id", ""),
                device_id=_device_id(gpu.findtext("pci/pci_device_id") or ""),
                minor=_number(gpu.findtext("minor_number") or ""),
            )
        )
    attached = (root.findtext("attached_gpus") or "").strip()
    return SmiReport(
        (root.findtext("driver_version") or "").strip(),
        tuple(gpus),
        int(attached) if attached.isdigit() else None,
    )


def _number(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isdigit() else None


def _device_id(text: str) -> int | None:
    """<pci_device_id>0x233010DE</pci_device_id>: the device ID in the high 16 bits, the
    vendor (10de, NVIDIA) in the low; None where it is not NVIDIA's or is zeroed."""
    try:
        value = int(text.strip(), 16)
    except ValueError:
        return None
    device, vendor = value >> 16, value & 0xFFFF
    return device if vendor == 0x10DE and 0 < device <= 0xFFFF else None


def parse_topo_m(text: str) -> dict[int, GpuPlacement] | None:
    """Each GPU index's NUMA node (None where the matrix has no NUMA Affinity column, or
    a row cannot be aligned with it) and nearest NICs (by RDMA device name), or None when
    the text has no matrix with a GPU row."""
    lines = [_ANSI.sub("", line) for line in text.splitlines()]
    header = next((i for i, line in enumerate(lines) if line.split()[:1] == ["GPU0"]), None)
    if header is None:
        return None
    devices, labels = _columns(lines[header])
    nics = {m[1]: m[2] for line in lines if (m := _NIC_LEGEND.match(line))}
    # The columns a GPU may be nearest to (NICs, by RDMA device name), by position; a name
    # written twice is its last column.
    position = {name: k for k, name in enumerate(devices)}
    others = [(k, nics.get(name, name)) for name, k in position.items() if not _GPU.fullmatch(name)]
    placements: dict[int, GpuPlacement] = {}
    for line in lines[header + 1 :]:
        cells = _cells(line, len(devices), len(labels))
        if cells is None or not _GPU.fullmatch(cells[0]):
            continue
        numa = _labelled(cells[1 + len(devices) :], labels, "NUMA Affinity")
        placements[int(cells[0][3:])] = GpuPlacement(
            int(numa) if numa is not None and numa.isdigit() else None,
            _nearest(others, cells[1 : 1 + len(devices)]),
        )
    return placements or None


def _columns(header: str) -> tuple[list[str], list[str]]:
    """The header's device columns (GPU0.., NIC0.. or mlx5_0..) and its labels, in order."""
    found = sorted((header.find(label), label) for label in _LABELS if label in header)
    start = found[0][0] if found else len(header)
    return header[:start].split(), [label for _, label in found]


def _cells(line: str, devices: int, labels: int) -> list[str] | None:
    """A row's cells: its device, a link per device column, then the labelled cells. A
    tab-separated row keeps its empty cells; a row of spaces gives its words, whose
    labelled cells can be told apart only when none is empty (None for the labelled
    part then: an empty list)."""
    if "\t" in line:
        cells = [cell.strip() for cell in line.split("\t")]
    else:
        cells = line.split()
        if len(cells) > 1 + devices and len(cells) != 1 + devices + labels:
            cells = cells[: 1 + devices]
    return cells if len(cells) >= 1 + devices else None


def _labelled(rest: list[str], labels: list[str], label: str) -> str | None:
    """The cell under `label`: labels come in the header's order, one cell each, except
    that nvidia-smi puts an empty cell before `GPU NUMA ID` (so only labels before it
    are found by position)."""
    if label not in labels:
        return None
    position = labels.index(label)
    return rest[position] if position < len(rest) else None


def _nearest(others: list[tuple[int, str]], links: list[str]) -> tuple[str, ...]:
    """The devices of the row's shortest PCIe path: `others` are the non-GPU columns
    (their position in the row and their name)."""
    distances: dict[str, int] = {}
    for k, name in others:
        link = links[k]
        if link in _DISTANCE:
            distances[name] = _DISTANCE[link]
    if not distances:
        return ()
    best = min(distances.values())
    return tuple(sorted(nic for nic, d in distances.items() if d == best))
