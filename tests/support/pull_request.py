"""The pull request the review tests use, as edits of the 8-node reference spec's text:
a newer driver, two more GPU nodes, and one OST on a new device."""

from __future__ import annotations

Edit = tuple[str, str]

BUMP_DRIVER: list[Edit] = [
    ("nvidia_driver: 550.90.07", "nvidia_driver: 550.127.05"),
    ("fabric_manager: 550.90.07", "fabric_manager: 550.127.05"),
]
ADD_TWO_NODES: list[Edit] = [
    ("names: gpu[01-08]", "names: gpu[01-10]"),
    ('nodes: "gpu[01-08]"', 'nodes: "gpu[01-10]"'),
    ('nodes: "gpu[05-08],slurm-head', 'nodes: "gpu[05-10],slurm-head'),
    # on order: not yet in a rack, which facility.unracked says
    ("facility:\n", "facility:\n  unracked: gpu[09-10]\n"),
]
NEW_OST_DEVICE: list[Edit] = [
    ("device: /dev/disk/by-id/dm-name-ost3}", "device: /dev/disk/by-id/dm-name-ost3-new}"),
]
_LAST_OST = "      - {index: 7, node: oss04, device: /dev/disk/by-id/dm-name-ost7}\n"
NEW_OST: list[Edit] = [
    (
        _LAST_OST,
        _LAST_OST + "      - {index: 8, node: oss04, device: /dev/disk/by-id/dm-name-ost8}\n",
    ),
]
# Two more OSS servers with two new OSTs each (on order: not yet in a rack).
NEW_OSS_SERVERS: list[Edit] = [
    (
        "\nracks:",
        "  - names: oss[05-06]\n    hardware: lustre-server\n    roles: [lustre_oss]\n"
        "    management_ip: 10.0.1.40\n    bmc_ip: 10.0.2.40\n    fabric_ip: 10.10.0.40\n"
        "\nracks:",
    ),
    ("slurm-head,mds01,oss[01-04]", "slurm-head,mds01,oss[01-06]"),
    ("facility:\n", "facility:\n  unracked: oss[05-06]\n"),
    (
        _LAST_OST,
        _LAST_OST
        + "".join(
            f"      - {{index: {i}, node: oss0{5 + (i - 8) // 2}, "
            f"device: /dev/disk/by-id/dm-name-ost{i}}}\n"
            for i in range(8, 12)
        ),
    ),
]
BUMP_NCCL: list[Edit] = [("nccl: 2.21.5", "nccl: 2.23.4")]
PULL_REQUEST: list[Edit] = [*BUMP_DRIVER, *ADD_TWO_NODES, *NEW_OST_DEVICE]


def edited(text: str, *edits: Edit) -> str:
    """`text` with each edit made; an edit that finds nothing fails."""
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    return text
