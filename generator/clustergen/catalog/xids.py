"""The Xid errors after which the health Epilog drains a GPU node, each with its reason.

Source: NVIDIA, "XID Errors" (docs.nvidia.com/deploy/xid-errors/), its Xid catalog for
Ampere and newer GPUs (mnemonic, description, resolution bucket), and "NVIDIA GPU Memory
Error Management" (docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/) for the row remapper.
Each of these asks for a GPU reset, a node reboot or a hardware check before the GPU is
trusted again; Xids that are the application's fault (13 graphics engine exception, 31
memory page fault, 43 stopped channel, 45 preemptive cleanup) leave the node in service.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DrainXid:
    code: int
    reason: str  # what the drain reason says about it, for the admin reading `sinfo -R`


DRAIN_XIDS: tuple[DrainXid, ...] = (
    # DBE: a double-bit ECC error in GPU memory (Volta and older; Ampere reports 94/95).
    DrainXid(48, "double-bit ECC error"),
    # Page retirement (Volta) or row remapping (Ampere and newer) recorded a bad row; the
    # new mapping takes effect at the next GPU reset.
    DrainXid(63, "row remap or page retirement pending, reset the GPU"),
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
)
