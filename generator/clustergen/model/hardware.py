"""hardware: reusable hardware profiles, referenced by nodes[].hardware."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from typing_extensions import Self

from clustergen.base import codes
from clustergen.base.codes import invalid
from clustergen.model.common import Int, StrictModel, whole_number
from clustergen.model.gpu_topology import Topology
from clustergen.model.nccl import NcclSettings
from clustergen.model.syntax import GresType, InterfaceName

# The CPU architectures a node may have: x86_64, or aarch64 (Arm servers such as NVIDIA
# Grace, whose packages NVIDIA builds as `sbsa`).
CpuArch = Literal["x86_64", "aarch64"]


# The most sockets a profile's CPU may have (cpu.sockets); `clustergen import` reads
# Slurm's counts against it.
MAX_SOCKETS = 16


class Cpu(StrictModel):
    """CPU topology; Slurm CPUs = sockets x cores_per_socket x threads_per_core."""

    sockets: Int = Field(ge=1, le=MAX_SOCKETS, description="CPU sockets (Slurm SocketsPerBoard).")
    cores_per_socket: Int = Field(
        ge=1, le=1024, description="Physical cores per socket (Slurm CoresPerSocket)."
    )
    threads_per_core: Int = Field(
        ge=1, le=8, description="Hardware threads per core; 2 with SMT/Hyper-Threading on."
    )
    numa_per_socket: Int = Field(
        default=1,
        ge=1,
        le=8,
        description="NUMA nodes per socket, as the BIOS sets them: AMD EPYC NPS1/NPS2/NPS4, "
        "Intel Sub-NUMA Clustering SNC2/SNC3/SNC4 (a DGX A100 runs NPS4: 8 NUMA nodes on "
        "2 sockets). The topology table's numa_node counts them (0 to sockets x this - 1), "
        "and gres.conf gives each GPU the cores of its NUMA node. Each socket's cores are "
        "split evenly, in order.",
    )
    arch: CpuArch | None = Field(
        default=None,
        description="CPU architecture: x86_64 or aarch64. Default: aarch64 for the GPU models "
        "that only come beside NVIDIA Grace CPUs (GB200, GB300, GH200), x86_64 otherwise. "
        "Selects the packages and repositories (NVIDIA's sbsa builds on aarch64) of the "
        "profile's nodes.",
    )

    @property
    def cpus(self) -> int:
        return self.sockets * self.cores_per_socket * self.threads_per_core

    @property
    def numa_nodes(self) -> int:
        return self.sockets * self.numa_per_socket


class NvlinkTrays(StrictModel):
    """A compute tray of a multi-node NVLink domain (GB200/GB300 NVL72: 18 trays of 4 GPUs
    and 9 NVLink switch trays per rack; NVIDIA GB200 NVL72 data sheet)."""

    trays: Int = Field(
        ge=2, le=576, description="Compute trays of a full domain (NVL72: 18; NVL36: 9)."
    )
    switch_trays: Int = Field(
        ge=1, le=576, description="NVLink switch trays of a full domain (NVL72: 9)."
    )


class Gpu(StrictModel):
    """The GPUs of a profile; becomes Gres=gpu:<type>:<count> and gres.conf File= lines."""

    model: str = Field(
        description="GPU model from the catalog, e.g. h100-sxm5-80gb, l40s, gb200-186gb, or a "
        "common name that names one model (b200, gb200, b300, gb300, rtx-pro-6000), in any case."
    )
    count: Int = Field(ge=1, le=64, description="GPUs per node.")
    nvswitch: bool = Field(
        default=False,
        description="True for NVSwitch systems (HGX/DGX): they need NVIDIA Fabric Manager.",
    )
    gres_type: GresType | None = Field(
        default=None,
        description="Slurm GRES type; defaults to the catalog's type for the model (e.g. h100).",
    )
    nvlink_domain: NvlinkTrays | None = Field(
        default=None,
        description="The node is a compute tray of a multi-node NVLink domain (network."
        "nvlink_domains); single-chassis NVSwitch (HGX) is nvswitch, not this.",
    )


class OtherGpus(StrictModel):
    """GPUs of a second type in the same node, beside the profile's gpu (an L40S for
    inference or display beside H100s): Gres=gpu:<type>:<count> for each type on the
    NodeName line, and gres.conf File= lines for their device files, which follow gpu's in
    the order listed (the driver numbers /dev/nvidiaN in PCI bus order: `clustergen audit`
    checks each against nvidia-smi's minor numbers)."""

    model: str = Field(description="GPU model from the catalog, as gpu.model.")
    count: Int = Field(ge=1, le=64, description="GPUs of this model per node.")
    gres_type: GresType | None = Field(
        default=None,
        description="Slurm GRES type; defaults to the catalog's type for the model. It must "
        "differ from gpu's and every other entry's: Slurm tells the types apart by it.",
    )


class Interfaces(StrictModel):
    """Network interface names on the node."""

    management: InterfaceName = Field(description="Management (Ethernet) interface name.")
    fabric: InterfaceName | None = Field(
        default=None,
        description="High-speed fabric interface (IPoIB or RoCE netdev); NCCL_SOCKET_IFNAME.",
    )
    rails: list[InterfaceName] = Field(
        default_factory=list,
        description="Netdev of each compute HCA, in rail order (ibdev2netdev), e.g. [ib0, ib1]: "
        "with network.fabric.rail_prefix each gets its rail's address. As many as the compute "
        "HCAs (topology hcas of role compute, else fabric_hcas).",
    )
    storage: list[InterfaceName] = Field(
        default_factory=list,
        description="Netdevs of the storage HCAs (topology role storage), on network.storage: "
        "the first gets the node's storage_ip, the others one per rail subnet of "
        "network.storage.rail_prefix. LNet runs on them (multi-rail over several).",
    )
    frontend: InterfaceName | None = Field(
        default=None,
        description="Front-end (Ethernet) interface on network.frontend, with the node's "
        "frontend_ip.",
    )


Feed = Literal["A", "B"]


# More than any server or chassis carries; bounds the per-PSU work of the power sheets.
MAX_PSUS = 32


# The bounds inside the whole-number check, not on the optional field's union, so that
# the JSON schema keeps them as minimum and maximum.
PsuCount = Annotated[int, Field(ge=1, le=MAX_PSUS), BeforeValidator(whole_number)]
PsuWatts = Annotated[int, Field(ge=1, le=100_000), BeforeValidator(whole_number)]

# psu_count and psu_watts go together; redundant_psus and psus_per_feed count PSUs, so
# they need psu_count (the model's own check, _psus_given, for editors).
_PSU_RULES: dict[str, Any] = {
    "dependentRequired": {
        "psu_count": ["psu_watts"],
        "psu_watts": ["psu_count"],
        "redundant_psus": ["psu_count"],
        "psus_per_feed": ["psu_count"],
    }
}


class Power(StrictModel):
    """Power supplies: (psu_count - redundant_psus) x psu_watts must cover max_watts. A
    device fed from its rack's busbar (racks[].power_shelves) has no PSUs of its own:
    leave psu_count and psu_watts out."""

    model_config = ConfigDict(json_schema_extra=_PSU_RULES)

    max_watts: Int = Field(
        ge=1, le=1_000_000, description="Maximum power draw of the whole device in watts."
    )
    typical_watts: Int | None = Field(
        default=None,
        ge=0,
        description="Power draw under a typical load in watts, for the normal-load columns of "
        "the rack and PDU sheets; defaults to max_watts. The circuit checks use max_watts.",
    )
    psu_count: PsuCount | None = Field(
        default=None,
        description="Installed power supplies. Leave psu_count and psu_watts out for a device "
        "fed from its rack's busbar (racks[].power_shelves), such as a GB200 NVL72 compute or "
        "NVLink switch tray.",
    )
    psu_watts: PsuWatts | None = Field(
        default=None, description="Rating of one power supply in watts; given with psu_count."
    )
    redundant_psus: Int = Field(
        default=0,
        ge=0,
        description="Power supplies that may fail without losing the node; needs psu_count.",
    )

    @field_validator("redundant_psus")
    @classmethod
    def _redundancy_leaves_a_supply(cls, redundant: int, info: ValidationInfo) -> int:
        psu_count = info.data.get("psu_count")
        if psu_count is not None and redundant >= psu_count:
            raise invalid(
                codes.HARDWARE_REDUNDANT_PSUS,
                f"redundant_psus ({redundant}) must be below psu_count ({psu_count})",
            )
        return redundant

    psus_per_feed: dict[Feed, Annotated[Int, Field(ge=0, le=MAX_PSUS)]] | None = Field(
        default=None,
        description="How many of the PSUs are cabled to each feed, e.g. {A: 3, B: 3}; the "
        "counts add up to psu_count. Default: evenly over the feeds of the node's rack, feed A "
        "taking the odd one.",
    )
    power_factor: float = Field(
        default=1.0,
        gt=0,
        le=1,
        description="Power factor of the PSUs: the circuit carries watts / power_factor VA. "
        "Default 1.0 (watts taken as VA).",
    )

    @model_validator(mode="after")
    def _psus_given(self) -> Self:
        if (self.psu_count is None) != (self.psu_watts is None):
            given, missing = (
                ("psu_count", "psu_watts") if self.psu_watts is None else ("psu_watts", "psu_count")
            )
            raise invalid(
                codes.HARDWARE_PSUS_INCOMPLETE,
                f"{given} is given without {missing}: give both, or leave both out for a "
                "device fed from its rack's busbar (racks[].power_shelves)",
            )
        if self.psu_count is None:
            counted = [
                key for key in ("redundant_psus", "psus_per_feed") if key in self.model_fields_set
            ]
            if counted:
                raise invalid(
                    codes.HARDWARE_PSUS_INCOMPLETE,
                    f"{' and '.join(counted)} {'count' if len(counted) > 1 else 'counts'} PSUs, "
                    "but psu_count is not given (a device "
                    "without psu_count has no PSUs of its own: it is fed from its rack's busbar)",
                )
        return self

    @model_validator(mode="after")
    def _typical_and_split(self) -> Self:
        if self.typical_watts is not None and self.typical_watts > self.max_watts:
            raise invalid(
                codes.HARDWARE_TYPICAL_ABOVE_MAX,
                f"typical_watts ({self.typical_watts}) is above max_watts ({self.max_watts})",
            )
        if self.psus_per_feed is not None:
            cabled = sum(self.psus_per_feed.values())
            if cabled != self.psu_count:
                split = ", ".join(f"{feed}: {n}" for feed, n in self.psus_per_feed.items())
                raise invalid(
                    codes.HARDWARE_PSU_SPLIT,
                    f"psus_per_feed ({split}) cables {cabled} PSUs, but psu_count is "
                    f"{self.psu_count}",
                )
        return self


class SystemReserved(StrictModel):
    """Cores and memory Slurm keeps for the node's own daemons (slurmd, DCGM, fabric manager,
    Lustre): CoreSpecCount and MemSpecLimit on the NodeName line."""

    cores: Int = Field(
        default=0, ge=0, description="Physical cores kept from jobs (CoreSpecCount); 0 keeps none."
    )
    memory_gib: Int = Field(
        default=0,
        ge=0,
        description="Memory kept from jobs within RealMemory (MemSpecLimit), in GiB; 0 keeps none.",
    )


# More memory than any one system holds (the largest shared-memory servers take tens of
# TiB): bounds RealMemory and the arithmetic on it, which slurmctld keeps in 64 bits.
MAX_MEMORY_GIB = 1_048_576


class HardwareProfile(StrictModel):
    """A reusable hardware profile: what one node of this kind is."""

    # other_gpus are beside gpu (checks/hardware.py says so with its own code; this is
    # for editors).
    model_config = ConfigDict(json_schema_extra={"dependentRequired": {"other_gpus": ["gpu"]}})

    description: str | None = Field(default=None, description="Free text for people.")
    rack_units: Int = Field(ge=1, le=60, description="Height in rack units.")
    cpu: Cpu
    memory_gib: Int = Field(ge=1, le=MAX_MEMORY_GIB, description="Installed memory in GiB.")
    real_memory_mib: Int | None = Field(
        default=None,
        ge=1,
        le=MAX_MEMORY_GIB * 1024,
        description="Slurm RealMemory in MiB, exactly (what `clustergen import` reads from a "
        "running cluster's NodeName line). Default (memory_gib - reserved_memory_gib) x 1024.",
    )
    reserved_memory_gib: Int | None = Field(
        default=None,
        ge=0,
        le=MAX_MEMORY_GIB,
        description="Memory held back from Slurm for the OS: RealMemory = memory_gib - "
        "reserved_memory_gib. Required for Slurm compute nodes, because a node that reports less "
        "than RealMemory is drained as INVAL.",
    )
    system_reserved: SystemReserved | None = Field(
        default=None,
        description="Cores and memory kept from jobs for system daemons (CoreSpecCount, "
        "MemSpecLimit). Unlike reserved_memory_gib, which Slurm never sees, this memory is part "
        "of RealMemory; slurmd and its steps may use it. DefCpuPerGPU and DefMemPerGPU are "
        "derived from what is left.",
    )
    gpu: Gpu | None = Field(default=None, description="GPUs; omit for a node without GPUs.")
    other_gpus: list[OtherGpus] = Field(
        default_factory=list,
        max_length=8,
        description="GPUs of other models in the same node, beside gpu (which NCCL, NVLink, the "
        "fabric manager and the acceptance jobs are for): each its own GRES type, with device "
        "files after gpu's in the order listed. Needs gpu.",
    )
    fabric_hcas: list[InterfaceName] = Field(
        default_factory=list,
        description="RDMA devices used by NCCL (NCCL_IB_HCA), e.g. [mlx5_0, mlx5_1]: 1-15 "
        "letters, digits and _.:- each.",
    )
    interfaces: Interfaces
    power: Power | None = Field(default=None, description="Power supplies and draw.")
    topology: Topology | None = Field(
        default=None,
        description="GPU/CPU/HCA affinity table; without it gres.conf has no Cores=, and "
        "NCCL_IB_HCA and the per-rail acceptance job (ib-rails) take fabric_hcas as they "
        "stand, with no rail told from a storage HCA.",
    )
    nccl: NcclSettings | None = Field(
        default=None, description="NCCL settings for this profile's nodes, over the global ones."
    )
    weight_kg: float | None = Field(
        default=None, gt=0, description="Weight of one node in kg, for the rack weight limit."
    )
    liquid_share: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Share of the node's heat carried away by liquid (direct-to-chip cold "
        "plates), 0-1; the rest goes to air. Default 0, air-cooled. A GB200 compute tray "
        "sends most of its heat to liquid (docs/facility.md, 'Liquid cooling').",
    )

    def compute_hcas(self) -> tuple[tuple[str, int], ...]:
        """The GPU rails, (HCA, port) in rail order: the topology table's compute HCAs, else
        fabric_hcas on port 1."""
        if self.topology is not None:
            return tuple((h.name, h.port) for h in self.topology.hcas if h.role == "compute")
        return tuple((name, 1) for name in self.fabric_hcas)

    def job_cpus(self) -> int:
        """The CPUs jobs may be given on a node: its cores less system_reserved.cores
        (CoreSpecCount), times threads per core."""
        cpu, reserve = self.cpu, self.system_reserved
        cores = cpu.sockets * cpu.cores_per_socket - (reserve.cores if reserve else 0)
        return cores * cpu.threads_per_core

    def job_memory_mib(self) -> int:
        """The memory jobs may be given on a node: RealMemory (memory_gib less
        reserved_memory_gib) less system_reserved.memory_gib (MemSpecLimit)."""
        reserve = self.system_reserved
        return self.slurm_real_memory_mib() - (reserve.memory_gib if reserve else 0) * 1024

    def slurm_real_memory_mib(self) -> int:
        """Slurm's RealMemory: real_memory_mib, else memory_gib less reserved_memory_gib."""
        if self.real_memory_mib is not None:
            return self.real_memory_mib
        return (self.memory_gib - (self.reserved_memory_gib or 0)) * 1024

    @field_validator("reserved_memory_gib")
    @classmethod
    def _reserve_below_installed(cls, reserved: int | None, info: ValidationInfo) -> int | None:
        installed = info.data.get("memory_gib")
        if reserved is not None and installed is not None and reserved >= installed:
            raise invalid(
                codes.HARDWARE_RESERVED_MEMORY_TOO_LARGE,
                f"reserved_memory_gib ({reserved}) must be below memory_gib ({installed})",
            )
        return reserved

    @field_validator("system_reserved")
    @classmethod
    def _system_reserve_leaves_room(
        cls, reserve: SystemReserved | None, info: ValidationInfo
    ) -> SystemReserved | None:
        if reserve is None:
            return None
        cpu, installed = info.data.get("cpu"), info.data.get("memory_gib")
        if cpu is not None and reserve.cores >= cpu.sockets * cpu.cores_per_socket:
            raise invalid(
                codes.HARDWARE_SYSTEM_RESERVE_TOO_LARGE,
                f"system_reserved.cores ({reserve.cores}) must be below the profile's "
                f"{cpu.sockets * cpu.cores_per_socket} cores",
            )
        kept_from_slurm = info.data.get("reserved_memory_gib") or 0
        usable = None if installed is None else installed - kept_from_slurm
        if usable is not None and reserve.memory_gib >= usable:
            raise invalid(
                codes.HARDWARE_SYSTEM_RESERVE_TOO_LARGE,
                f"system_reserved.memory_gib ({reserve.memory_gib}) must be below RealMemory "
                f"({usable} GiB: memory_gib less reserved_memory_gib)",
            )
        return reserve
