"""The Xid errors after which the health Epilog drains a GPU node, each with its reason.

Source: NVIDIA, "XID Errors" (docs.nvidia.com/deploy/xid-errors/), its Xid catalog for
Ampere and newer GPUs (mnemonic, description, resolution bucket), and "NVIDIA GPU Memory
Error Management" (docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/) for the row remapper.
Each of these asks for a GPU reset, a node reboot or a hardware check before the GPU is
trusted again; Xids that are the application's fault (13 graphics engine exception, 31
memory page fault, 43 stopped channel, 45 preemptive cleanup) leave the node in service.

Blackwell's fifth-generation NVLink reports its faults as Xids 144 to 150 (NVIDIA's GPU
operational-events notes and the Xid catalog's rows for B100 and GB200; 149 is a link
that went down), where Hopper and older report Xid 74: a GB200 tray that logs one leaves
its NVLink domain degraded for every multi-node NVLink job. Xid 154 is the driver's
report that the GPU's recovery action changed ("GPU recovery action changed from 0x0
(None) to 0x1 (GPU Reset Required)"): NVIDIA's "GPU Memory Error Management" names the
actions (None, GPU reset, node reboot, drain peer-to-peer, drain and reset), and the
catalog's "Xid 154 linkage" column ties each fault to one. Every action but None takes
the GPU out of service; a change back to None is the fault cleared, not a fault.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DrainXid:
    code: int
    reason: str  # what the drain reason says about it, for the admin reading `sinfo -R`
    # Text of the kernel's line (matched literally) under which the Xid reports a fault
    # cleared, not a fault (empty: every line of the code drains).
    cleared: str = ""


DRAIN_XIDS: tuple[DrainXid, ...] = (
    # DBE: a double-bit ECC error in GPU memory (Volta and older; Ampere reports 94/95).
    DrainXid(48, "double-bit ECC error"),
    # Row remapping (Ampere and newer: "successful recording of a row-remapping entry to
    # the InfoROM", GPU Memory Error Management) or page retirement (Volta) recorded a
    # bad row; the new mapping takes effect at the next GPU reset.
    DrainXid(63, "row remap recorded, reset the GPU to apply it"),
    # The page retirement or row remapper could not record the error: an RMA candidate.
    DrainXid(64, "row remap or page retirement failed"),
    # An NVLink error; the link stays down until the GPU is reset.
    DrainXid(74, "NVLink error"),
    # The GPU no longer answers on PCIe.
    DrainXid(79, "GPU has fallen off the bus"),
    # An uncorrectable ECC error the GPU contained to the applications that used the
    # memory; the row is remapped at the next reset.
    DrainXid(94, "contained uncorrectable ECC error, reset the GPU"),
    # An uncorrectable ECC error the GPU could not contain: every application is suspect.
    DrainXid(95, "uncontained uncorrectable ECC error"),
    # The GPU System Processor did not answer the driver in time.
    DrainXid(119, "GSP RPC timeout"),
    # Blackwell NVLink faults (fifth-generation NVLink: B200, B300, GB200, GB300); the
    # links stay out until the GPU is reset.
    DrainXid(144, "NVLink fault"),
    DrainXid(145, "NVLink fault"),
    DrainXid(146, "NVLink fault"),
    DrainXid(147, "NVLink fault"),
    DrainXid(148, "NVLink fault"),
    DrainXid(149, "NVLink link down"),
    DrainXid(150, "NVLink fault"),
    # The GPU's recovery action changed: a reset, a reboot or a peer-to-peer drain is
    # needed before the GPU is trusted; back to None (0x0) is the fault cleared.
    DrainXid(154, "GPU recovery action required", cleared="to 0x0 (None)"),
)
