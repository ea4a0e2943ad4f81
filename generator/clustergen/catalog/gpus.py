"""GPU models clustergen knows.

Sources: NVIDIA product data sheets for memory and board power (max TDP/TGP of
the SXM or PCIe board); compute capability and the first CUDA release that
targets it from CMake's CUDA architecture table; V100 (sm_70) was dropped by
CUDA 13.0. The GRES type is clustergen's convention: lowercase, one word,
identical in slurm.conf and gres.conf.

Blackwell and Grace (issue 24):
- Compute capability: NVIDIA's "CUDA GPU Compute Capability" table
  (developer.nvidia.com/cuda-gpus): B200 and GB200 10.0, B300 and GB300 10.3
  (Blackwell Ultra), RTX PRO 6000 Blackwell 12.0, GH200 9.0 (its GPU is a Hopper H100).
- First CUDA: the CUDA Features Archive (docs.nvidia.com/cuda/archive/12.9.1/
  cuda-features-archive/): "CUDA 12.8 Features" adds compiler targets sm_100 and sm_120
  (Blackwell data centre and RTX Blackwell); "CUDA 12.9 Features": "CUDA Toolkit 12.9
  adds compiler target support for SM architecture 10.3 (sm_103, sm_103f, sm_103a) and
  12.1 (sm_121)". The driver minimum of each follows from the first CUDA's row of
  catalog/cuda.py (checks/software.py: software.driver-too-old-for-gpu).
- Memory and power: NVIDIA Blackwell data sheet and GB200 NVL72 data sheet: HGX
  B200 180 GB HBM3e at up to 1,000 W; GB200 NVL72 13.4 TB HBM3e over 72 GPUs (186 GB
  each) at up to 1,200 W per GPU. Blackwell Ultra data sheet (HGX B300, GB300 NVL72):
  288 GB HBM3e per GPU, up to 1,100 W (HGX B300) and 1,400 W (GB300 NVL72) per GPU.
  NVIDIA GH200 Grace Hopper Superchip data sheet: 96 GB HBM3 or 144 GB HBM3e, the
  superchip (Grace CPU, GPU and memory) programmable from 450 W to 1,000 W; one GH200
  module is one GPU, so board_watts is the superchip's 1,000 W. NVIDIA RTX PRO 6000
  Blackwell Server Edition data sheet: 96 GB GDDR7 with ECC, max power 600 W
  (configurable down to 400 W).
- The Grace-based models (GB200, GB300, GH200) sit beside Grace CPUs, which are Arm
  Neoverse V2 (aarch64; NVIDIA Grace CPU data sheet): a node with them is arm64, and
  NVIDIA serves it the `sbsa` build of its CUDA repository (CUDA Installation Guide
  for Linux, "Network Repository Installation": $arch is x86_64 or sbsa).

PCI device IDs (vendor 10de): the PCI ID Repository's pci.ids (pciutils/pciids, commit
c1c12547d626, August 2026): 1db1 and 1df5 "Tesla V100 SXM2 16GB", 1db5 "Tesla V100 SXM2
32GB", 1db6 "Tesla V100 PCIe 32GB", 20b0 "A100 SXM4 40GB", 20b2 "A100 SXM4 80GB", 20b1
and 20f1 "A100 PCIe 40GB", 20b5 "A100 PCIe 80GB", 26b9 "L40S", 2330 "H100 SXM5 80GB", 2331
"H100 PCIe", 2321 "H100L 94GB" (the H100 NVL), 2335 "H200 SXM 141GB", 233b "H200 NVL", 2342
"GH200 120GB / 480GB" (the 96 GB HBM3 module), 2348 "GH200 144G HBM3e", 2901 "B200", 2941
"HGX GB200", 3182 "B300 SXM6 AC", 31c2 and 31c3 "GB300", 2bb5 "RTX PRO 6000 Blackwell Server
Edition". A board the database names otherwise (V100S PCIe 1df6, H800, A800, H20) is no
catalog model.

Rubin (issue 43), from NVIDIA's own publications; what NVIDIA has not published is left
out, not guessed (docs/platforms.md, "Rubin: what is published, and what is not"):
- Compute capability 10.7 (sm_107): the CUDA 13.4 release notes, "adds support for the
  NVIDIA Rubin Architecture (compute capability 10.7)"; NVIDIA's cuBLASDx 0.8.0 release
  notes (docs.nvidia.com/cuda/cublasdx/0.8.0/release_notes.html), "functional support for
  the Rubin architecture, including SM107".
- First CUDA: 13.4, "NVIDIA Rubin preview - Adds preview support for the NVIDIA Rubin
  architecture" (docs.nvidia.com/cuda/archive/13.4.3/index.html); production support from
  CUDA 13.5 ("NVIDIA CUDA 13.5 Brings NVIDIA Vera Rubin GA Support", NVIDIA Technical
  Blog): a Rubin profile on 13.4 is warned (software.cuda-preview-for-gpu).
- First driver: branch R615. NVIDIA's CUTLASS 4.8.0dev release notes: "Executing Rubin
  kernels (SM107) requires the R615 driver which will be released with CUDA Toolkit 13.4
  GA. R610 from CUDA Toolkit 13.4 Developer Preview is not sufficient." catalog/cuda.py
  holds it as CUDA 13.4's row, a branch and not a full version.
- First NCCL: 2.32.3 ("Adds initial Rubin platform support including support for sm107,
  CX9 rail and plane detection", NCCL v2.32.3-1 release notes, github.com/NVIDIA/nccl);
  2.32.6 adds Vera Rubin tuning (docs.nvidia.com/deeplearning/nccl/release-notes/
  rel_2-32-6.html).
- Memory: 288 GB HBM4 per GPU ("Inside the NVIDIA Rubin Platform: Six New Chips, One AI
  Supercomputer", NVIDIA Technical Blog, 2026-01-05; HGX Rubin NVL8: 2.3 TB over 8 GPUs,
  nvidia.com/en-us/data-center/hgx/).
- The Vera Rubin superchip's GPUs sit beside Vera CPUs: 88 Olympus Arm cores a socket,
  two threads a core ("Spatial Multithreading": NVIDIA Vera Performance Tuning Guide,
  "Operating System Settings", docs.nvidia.com/dccpu/vera-perf-tuning-guide/), so a tray
  of them is aarch64 (sbsa). HGX Rubin NVL8's host CPU is the system vendor's: the spec
  says it (cpu.arch), x86_64 by default.
- Unpublished by NVIDIA (None here, named in docs/platforms.md): Rubin's board power and
  its PCI device IDs. Without a board power, hardware.max-watts-below-gpus cannot weigh
  the profile's GPUs; without a device ID, audit knows a Rubin board by its name alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from clustergen.catalog.versions import VersionTuple
from clustergen.model.hardware import CpuArch, HardwareProfile

DEFAULT_CPU_ARCH: CpuArch = "x86_64"


@dataclass(frozen=True)
class Architecture:
    name: str
    compute_capability: str
    first_cuda: VersionTuple  # oldest CUDA that can target it
    last_cuda_exclusive: VersionTuple | None = None  # first CUDA that no longer does
    # The first CUDA with production (GA) support where first_cuda's was a preview.
    production_cuda: VersionTuple | None = None
    # The first NCCL release that supports it, where that is later than the CUDA's NCCL.
    first_nccl: VersionTuple | None = None

    def targeted_by(self, cuda: VersionTuple) -> bool:
        """Whether a CUDA release (major, minor, ...) can target it at all."""
        return cuda[:2] >= self.first_cuda

    def supported_by_nccl(self, nccl: VersionTuple) -> bool:
        return self.first_nccl is None or nccl[:3] >= self.first_nccl

    @property
    def sm(self) -> str:
        return "sm_" + self.compute_capability.replace(".", "")


VOLTA = Architecture("volta", "7.0", first_cuda=(9, 0), last_cuda_exclusive=(13, 0))
AMPERE = Architecture("ampere", "8.0", first_cuda=(11, 0))
ADA = Architecture("ada", "8.9", first_cuda=(11, 8))
HOPPER = Architecture("hopper", "9.0", first_cuda=(11, 8))
BLACKWELL = Architecture("blackwell", "10.0", first_cuda=(12, 8))
BLACKWELL_ULTRA = Architecture("blackwell-ultra", "10.3", first_cuda=(12, 9))
BLACKWELL_RTX = Architecture("blackwell-rtx", "12.0", first_cuda=(12, 8))
RUBIN = Architecture(
    "rubin",
    "10.7",
    first_cuda=(13, 4),
    production_cuda=(13, 5),
    first_nccl=(2, 32, 3),
)


@dataclass(frozen=True)
class GpuModel:
    name: str
    architecture: Architecture
    memory_gib: int
    gres_type: str
    board_watts: int | None  # None: NVIDIA has not published it (Rubin)
    host_cpu_arch: CpuArch | None = None  # set where the GPU only comes beside one CPU (Grace)
    # The PCI device IDs (vendor 10de) of the model's boards: nvidia-smi -q -x reports one
    # per GPU (<pci_device_id>), by which audit knows a GPU whatever its product name says.
    pci_ids: tuple[int, ...] = ()
    # The document its memory, board power and host CPU come from (the module docstring
    # says which facts each gives); never empty (tests/test_rubin.py).
    source: str = field(kw_only=True)


_V100_SHEET = "NVIDIA Tesla V100 GPU Accelerator data sheet"
_A100_SHEET = "NVIDIA A100 Tensor Core GPU data sheet"
_L40S_SHEET = "NVIDIA L40S GPU data sheet"
_H100_SHEET = "NVIDIA H100 Tensor Core GPU data sheet"
_H200_SHEET = "NVIDIA H200 Tensor Core GPU data sheet"
_GH200_SHEET = "NVIDIA GH200 Grace Hopper Superchip data sheet"
_BLACKWELL_SHEET = "NVIDIA Blackwell data sheet (HGX B200)"
_GB200_SHEET = "NVIDIA GB200 NVL72 data sheet"
_BLACKWELL_ULTRA_SHEET = "NVIDIA Blackwell Ultra data sheet (HGX B300, GB300 NVL72)"
_RTX_PRO_SHEET = "NVIDIA RTX PRO 6000 Blackwell Server Edition data sheet"
_RUBIN_BLOG = (
    "NVIDIA Technical Blog, 'Inside the NVIDIA Rubin Platform: Six New Chips, One AI "
    "Supercomputer', 2026-01-05 (https://developer.nvidia.com/blog/inside-the-nvidia-rubin-"
    "platform-six-new-chips-one-ai-supercomputer/): 288 GB HBM4 a GPU; HGX Rubin NVL8, "
    "2.3 TB over 8 GPUs (https://www.nvidia.com/en-us/data-center/hgx/); board power and "
    "PCI IDs unpublished"
)

GPU_MODELS: dict[str, GpuModel] = {
    model.name: model
    for model in (
        GpuModel(
            "v100-sxm2-16gb",
            VOLTA,
            memory_gib=16,
            gres_type="v100",
            board_watts=300,
            pci_ids=(0x1DB1, 0x1DF5),
            source=_V100_SHEET,
        ),
        GpuModel(
            "v100-sxm2-32gb",
            VOLTA,
            memory_gib=32,
            gres_type="v100",
            board_watts=300,
            pci_ids=(0x1DB5,),
            source=_V100_SHEET,
        ),
        GpuModel(
            "v100-pcie-32gb",
            VOLTA,
            memory_gib=32,
            gres_type="v100",
            board_watts=250,
            pci_ids=(0x1DB6,),
            source=_V100_SHEET,
        ),
        GpuModel(
            "a100-sxm4-40gb",
            AMPERE,
            memory_gib=40,
            gres_type="a100",
            board_watts=400,
            pci_ids=(0x20B0,),
            source=_A100_SHEET,
        ),
        GpuModel(
            "a100-sxm4-80gb",
            AMPERE,
            memory_gib=80,
            gres_type="a100",
            board_watts=400,
            pci_ids=(0x20B2,),
            source=_A100_SHEET,
        ),
        GpuModel(
            "a100-pcie-40gb",
            AMPERE,
            memory_gib=40,
            gres_type="a100",
            board_watts=250,
            pci_ids=(0x20B1, 0x20F1),
            source=_A100_SHEET,
        ),
        GpuModel(
            "a100-pcie-80gb",
            AMPERE,
            memory_gib=80,
            gres_type="a100",
            board_watts=300,
            pci_ids=(0x20B5,),
            source=_A100_SHEET,
        ),
        GpuModel(
            "l40s",
            ADA,
            memory_gib=48,
            gres_type="l40s",
            board_watts=350,
            pci_ids=(0x26B9,),
            source=_L40S_SHEET,
        ),
        GpuModel(
            "h100-sxm5-80gb",
            HOPPER,
            memory_gib=80,
            gres_type="h100",
            board_watts=700,
            pci_ids=(0x2330,),
            source=_H100_SHEET,
        ),
        GpuModel(
            "h100-pcie-80gb",
            HOPPER,
            memory_gib=80,
            gres_type="h100",
            board_watts=350,
            pci_ids=(0x2331,),
            source=_H100_SHEET,
        ),
        GpuModel(
            "h100-nvl-94gb",
            HOPPER,
            memory_gib=94,
            gres_type="h100nvl",
            board_watts=400,
            pci_ids=(0x2321,),
            source=_H100_SHEET,
        ),
        GpuModel(
            "h200-sxm-141gb",
            HOPPER,
            memory_gib=141,
            gres_type="h200",
            board_watts=700,
            pci_ids=(0x2335,),
            source=_H200_SHEET,
        ),
        GpuModel(
            "h200-nvl-141gb",
            HOPPER,
            memory_gib=141,
            gres_type="h200",
            board_watts=600,
            pci_ids=(0x233B,),
            source=_H200_SHEET,
        ),
        GpuModel(
            "gh200-96gb",
            HOPPER,
            96,
            gres_type="gh200",
            board_watts=1000,
            host_cpu_arch="aarch64",
            pci_ids=(0x2342,),
            source=_GH200_SHEET,
        ),
        GpuModel(
            "gh200-144gb",
            HOPPER,
            144,
            gres_type="gh200",
            board_watts=1000,
            host_cpu_arch="aarch64",
            pci_ids=(0x2348,),
            source=_GH200_SHEET,
        ),
        GpuModel(
            "b200-sxm-180gb",
            BLACKWELL,
            memory_gib=180,
            gres_type="b200",
            board_watts=1000,
            pci_ids=(0x2901,),
            source=_BLACKWELL_SHEET,
        ),
        GpuModel(
            "gb200-186gb",
            BLACKWELL,
            186,
            gres_type="gb200",
            board_watts=1200,
            host_cpu_arch="aarch64",
            pci_ids=(0x2941,),
            source=_GB200_SHEET,
        ),
        GpuModel(
            "b300-sxm-288gb",
            BLACKWELL_ULTRA,
            288,
            gres_type="b300",
            board_watts=1100,
            pci_ids=(0x3182,),
            source=_BLACKWELL_ULTRA_SHEET,
        ),
        GpuModel(
            "gb300-288gb",
            BLACKWELL_ULTRA,
            288,
            gres_type="gb300",
            board_watts=1400,
            host_cpu_arch="aarch64",
            pci_ids=(0x31C2, 0x31C3),
            source=_BLACKWELL_ULTRA_SHEET,
        ),
        # The Rubin GPU of a Vera Rubin superchip (Vera Rubin NVL72 compute trays), beside
        # Vera CPUs; NCCL's release notes call the system VR200.
        GpuModel(
            "vr200-288gb",
            RUBIN,
            288,
            gres_type="vr200",
            board_watts=None,
            host_cpu_arch="aarch64",
            source=_RUBIN_BLOG,
        ),
        # The Rubin GPUs of an HGX Rubin NVL8 baseboard (NVSwitch), beside the vendor's host CPU.
        GpuModel(
            "rubin-hgx-288gb", RUBIN, 288, gres_type="rubin", board_watts=None, source=_RUBIN_BLOG
        ),
        GpuModel(
            "rtx-pro-6000-blackwell-server-96gb",
            BLACKWELL_RTX,
            96,
            gres_type="rtxpro6000",
            board_watts=600,
            pci_ids=(0x2BB5,),
            source=_RTX_PRO_SHEET,
        ),
    )
}

# Every PCI device ID of a catalog model: a board with another is judged by its name.
GPU_PCI_IDS = frozenset(pci_id for model in GPU_MODELS.values() for pci_id in model.pci_ids)

# The names people write for a model (NVIDIA's product names, as in `nvidia-smi -L`),
# each naming exactly one catalog model. A name that fits several (h100, gh200) is not
# here: gpu_model_candidates lists the models it could mean.
GPU_ALIASES: dict[str, str] = {
    "b200": "b200-sxm-180gb",
    "gb200": "gb200-186gb",
    "b300": "b300-sxm-288gb",
    "gb300": "gb300-288gb",
    "vr200": "vr200-288gb",
    "vera-rubin": "vr200-288gb",
    "rubin": "rubin-hgx-288gb",
    "hgx-rubin": "rubin-hgx-288gb",
    "l40s": "l40s",
    "rtx-pro-6000": "rtx-pro-6000-blackwell-server-96gb",
    "rtx-pro-6000-blackwell": "rtx-pro-6000-blackwell-server-96gb",
    "rtx-pro-6000-blackwell-server": "rtx-pro-6000-blackwell-server-96gb",
    "rtx-pro-6000-blackwell-server-edition": "rtx-pro-6000-blackwell-server-96gb",
}

_SEPARATORS = re.compile(r"[\s_]+")


def _normal(name: str) -> str:
    """'NVIDIA GB200' -> 'gb200': case, spaces and '_' as '-', the vendor's prefix dropped."""
    word = _SEPARATORS.sub("-", name.strip().lower())
    return word.removeprefix("nvidia-")


def gpu_model(name: str) -> GpuModel | None:
    """The catalog model a spec's gpu.model names: its catalog name or a common name
    (GPU_ALIASES), in any case; None when it names none or several."""
    word = _normal(name)
    return GPU_MODELS.get(word) or GPU_MODELS.get(GPU_ALIASES.get(word, ""))


def gpu_model_candidates(name: str) -> list[str]:
    """The catalog models a family name could mean ('gh200' -> both GH200 sizes), for the
    message of a name that names several."""
    word = _normal(name)
    return [model for model in GPU_MODELS if model.startswith(word + "-")]


def profile_gpu(profile: HardwareProfile) -> GpuModel | None:
    """The catalog entry of a profile's GPU model; None without GPUs, or for a model the
    catalog lacks (validation refuses that one: hardware.gpu-unknown-model)."""
    return gpu_model(profile.gpu.model) if profile.gpu is not None else None


def profile_gres_type(profile: HardwareProfile) -> str | None:
    """The GRES type of a profile's gpu (gpu:<type>:<count>): gpu.gres_type where the
    spec says it, else the catalog's for the model; None without GPUs."""
    sets = profile_gpu_sets(profile)
    return sets[0].gres_type if sets else None


@dataclass(frozen=True)
class GpuSet:
    """The GPUs of one GRES type in a profile, as slurmd sees them: /dev/nvidia<first> up
    to /dev/nvidia<first + count - 1>."""

    gres_type: str
    count: int
    model: GpuModel | None  # None for a model the catalog lacks (validation refuses it)
    first: int

    @property
    def indexes(self) -> range:
        return range(self.first, self.first + self.count)


def profile_gpu_sets(profile: HardwareProfile) -> tuple[GpuSet, ...]:
    """Each GPU type of a profile in device order: gpu, then other_gpus as listed (none
    without GPUs). A model the catalog lacks (which validation refuses) keeps the name
    written as its type, so the checks that run beside that refusal still read it."""
    if profile.gpu is None:
        return ()
    sets: list[GpuSet] = []
    first = 0
    entries = [(profile.gpu.model, profile.gpu.count, profile.gpu.gres_type)]
    entries += [(other.model, other.count, other.gres_type) for other in profile.other_gpus]
    for written, count, given_type in entries:
        model = gpu_model(written)
        kind = given_type or (model.gres_type if model is not None else written)
        sets.append(GpuSet(kind, count, model, first))
        first += count
    return tuple(sets)


def profile_gpu_count(profile: HardwareProfile) -> int:
    """Every GPU of a profile, of every type (what nvidia-smi lists on the node)."""
    return sum(s.count for s in profile_gpu_sets(profile))


def superchip_cores(profile: HardwareProfile) -> tuple[str, ...] | None:
    """Per GPU index, the Slurm core IDs of the Grace CPU that GPU shares a superchip with,
    for a Grace GPU model (GB200, GB300, GH200) whose count splits evenly over the sockets;
    None otherwise. A GB200 superchip is one Grace CPU and two Blackwell GPUs on NVLink-C2C,
    a GB200 compute tray two of them: GPUs 0-1 beside socket 0's cores, 2-3 beside socket
    1's (NVIDIA GB200 NVL Multi-Node Tuning Guide, "The NVIDIA Grace Blackwell Superchip";
    a GH200 is one Grace CPU and one GPU). Cores= takes logical core indexes, core 0 the
    first of the first socket, and a whole socket at a time (gres.conf(5), Cores), so
    socket s is cores s x cores_per_socket upwards. A topology table overrides this."""
    gpu, cpu = profile.gpu, profile.cpu
    model = profile_gpu(profile)
    if gpu is None or model is None or model.host_cpu_arch != "aarch64":
        return None
    if gpu.count % cpu.sockets:
        return None
    per_socket, width = gpu.count // cpu.sockets, cpu.cores_per_socket
    return tuple(
        f"{s * width}-{(s + 1) * width - 1}" if width > 1 else str(s)
        for s in (index // per_socket for index in range(gpu.count))
    )


def profile_cpu_arch(profile: HardwareProfile) -> CpuArch:
    """A profile's CPU architecture: cpu.arch where the spec says it, else aarch64 beside a
    Grace superchip's GPU (GB200, GB300, GH200), else x86_64."""
    if profile.cpu.arch is not None:
        return profile.cpu.arch
    model = profile_gpu(profile)
    if model is not None and model.host_cpu_arch is not None:
        return model.host_cpu_arch
    return DEFAULT_CPU_ARCH
