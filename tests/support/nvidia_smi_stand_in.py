#!/usr/bin/python3
"""nvidia-smi of the clustergen testbed's stand-in driver package.

Reports the version of the stand-in driver package that installed it and, for every
fake GPU (/dev/nvidiaN), readings of a healthy GPU: no ECC errors, no remapped rows,
a cool temperature. It answers the forms the roles and the Epilog use:
`--query-gpu=FIELDS --format=csv,...`, `--query-remapped-rows=FIELDS`, `-L`, `-q -x`
(the XML `clustergen audit` reads: driver, GPU count, each GPU's product name, minor
number and memory, as nvsmi_device_v12.dtd names them) and no arguments.
"""

import glob
import re
import sys

DRIVER_VERSION = "@DRIVER_VERSION@"
NAME = "NVIDIA H100 PCIe"
GPUS = sorted(
    int(match[1])
    for path in glob.glob("/dev/nvidia*")
    if (match := re.fullmatch(r"/dev/nvidia(\d+)", path))
)


def bus_id(index: int) -> str:
    return f"00000000:{0x18 + index:02X}:00.0"


def reading(field: str, index: int) -> str:
    fixed = {
        "index": str(index),
        "count": str(len(GPUS)),
        "name": NAME,
        "driver_version": DRIVER_VERSION,
        "uuid": f"GPU-00000000-0000-0000-0000-{index:012d}",
        "pci.bus_id": bus_id(index),
        "gpu_bus_id": bus_id(index),
        "temperature.gpu": "35",
        "persistence_mode": "Enabled",
        "memory.total": "81559 MiB",
        "remapped_rows.pending": "No",
        "remapped_rows.failure": "No",
    }
    if field in fixed:
        return fixed[field]
    if field.startswith(("ecc.errors", "retired_pages", "remapped_rows", "clocks_event")):
        return "0"
    return "[N/A]"


def xml_log() -> str:
    gpus = "".join(
        f'  <gpu id="{bus_id(index)}">\n'
        f"    <product_name>{NAME}</product_name>\n"
        f"    <uuid>{reading('uuid', index)}</uuid>\n"
        f"    <minor_number>{index}</minor_number>\n"
        f"    <fb_memory_usage>\n      <total>{reading('memory.total', index)}</total>\n"
        "    </fb_memory_usage>\n  </gpu>\n"
        for index in GPUS
    )
    return (
        '<?xml version="1.0" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">\n'
        f"<nvidia_smi_log>\n  <driver_version>{DRIVER_VERSION}</driver_version>\n"
        f"  <attached_gpus>{len(GPUS)}</attached_gpus>\n{gpus}</nvidia_smi_log>"
    )


def main(args: list[str]) -> int:
    for arg in args:
        for flag in ("--query-gpu=", "--query-remapped-rows="):
            if arg.startswith(flag):
                fields = [f.strip() for f in arg[len(flag) :].split(",") if f.strip()]
                for index in GPUS:
                    print(", ".join(reading(field, index) for field in fields))
                return 0
    if "-q" in args and "-x" in args:
        print(xml_log())
        return 0
    if "-L" in args:
        for index in GPUS:
            print(f"GPU {index}: {NAME} (UUID: {reading('uuid', index)})")
        return 0
    print(f"Driver Version: {DRIVER_VERSION}    stand-in nvidia-smi, {len(GPUS)} GPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
