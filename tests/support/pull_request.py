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
PULL_REQUEST: list[Edit] = [*BUMP_DRIVER, *ADD_TWO_NODES, *NEW_OST_DEVICE]


def edited(text: str, *edits: Edit) -> str:
    """`text` with each edit made; an edit that finds nothing fails."""
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    return text
