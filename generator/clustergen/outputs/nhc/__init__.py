"""LBNL NHC (Node Health Check), slurmd's HealthCheckProgram where software.nhc pins it:
its configuration, its settings for Slurm, the GPU check it runs and, where DCGM is pinned,
the unit that sets DCGM's health watches. Nothing without software.nhc (docs/health.md).

[src: NHC's README (github.com/mej/nhc, 1.4.3): "Configuration File Syntax" (a target,
`||`, a check), "Match Strings" (node range expressions `{gpu[01-08],login}`, matched
against the kernel host name), "Supported Variables" (NHC_RM, MARK_OFFLINE; TIMEOUT only
in the sysconfig file, which nhc reads from /etc/default on Debian and Ubuntu and from
/etc/sysconfig elsewhere), the built-in checks check_hw_cpuinfo SOCKETS CORES THREADS,
check_hw_physmem MIN_KB MAX_KB, check_hw_ib RATE DEVICE (the device as HCA:port),
check_fs_mount_rw -t FSTYPE -s SOURCE -f MOUNTPOINT and check_ps_service -u USER -d DAEMON
SERVICE; helpers/node-mark-online: NHC resumes only a node whose reason it wrote ("NHC:").
dcgmi-health(1), DCGM user guide: `dcgmi health -s SYSTEMS` sets the watches of the
default all-GPU group (p PCIe, m memory, i InfoROM, t thermal and power, n NVLink) and
they stay set in the host engine until it restarts; `dcgmi health -c` reports them.]
"""

from __future__ import annotations

from dataclasses import dataclass

import jinja2

from clustergen.base.artifacts import NO_CHANGE, Artifact, Install, NodeChange
from clustergen.catalog.gpus import profile_cpu_arch, profile_gpu, profile_gpu_count
from clustergen.catalog.xids import DRAIN_XIDS
from clustergen.model.hardware import HardwareProfile
from clustergen.model.network import LINK_GBITS
from clustergen.model.slurm import HealthCheck
from clustergen.resolve import ResolvedCluster
from clustergen.resolve.imex_mode import IMEX_SERVICE, imex_start
from clustergen.spec.hosts import Host, name_ranges
from clustergen.templating import render_template

# Its role includes rendered_files for it and defines the handlers it notifies.
OWN_ROLE = True

_DEFAULT = HealthCheck()

NHC_CONF = "/etc/nhc/nhc.conf"
GPU_SCRIPT = "/etc/nhc/scripts/clustergen_gpu.nhc"
SYSCONFIG = {"apt": "/etc/default/nhc", "dnf": "/etc/sysconfig/nhc"}
DCGM_WATCH_UNIT = "clustergen-dcgm-health.service"
# The DCGM health systems watched: PCIe, GPU memory, InfoROM, thermal and power, NVLink
# (dcgmi-health(1); each letter known to DCGM 3 and 4).
DCGM_SYSTEMS = "pmitn"
# NHC's watchdog (TIMEOUT, default 30 s) below slurmd's 60 s for a HealthCheckProgram
# (slurm.conf(5)): NHC reports its own timeout instead of being killed silently.
NHC_TIMEOUT_S = 50


@dataclass(frozen=True)
class GpuTimeouts:
    """Seconds the GPU check gives each command inside NHC's 50 s: the nvidia-smi query
    (and `nvidia-smi -q` on the trays of NVLink domains), then journalctl and at most one
    logger call."""

    smi_s: int = 12
    call_s: int = 5
    kill_after_s: int = 2
    smi_calls: int = 2
    other_calls: int = 3

    @property
    def worst_case_s(self) -> int:
        return self.smi_calls * (self.smi_s + self.kill_after_s) + self.other_calls * (
            self.call_s + self.kill_after_s
        )


GPU_TIMEOUTS = GpuTimeouts()


@dataclass(frozen=True)
class CheckLine:
    """One nhc.conf line: the nodes it applies to (an NHC match string) and the check."""

    target: str
    check: str


@dataclass(frozen=True)
class NhcContext:
    sections: list[tuple[str, list[CheckLine]]]  # (comment, lines)
    gpu: bool  # a GPU node is checked: the GPU check script is installed
    dcgm: bool  # DCGM pinned: its health watches are set and read


def target(names: list[str]) -> str:
    """An NHC node range expression for these names: `{gpu[01-08],login}`. NHC allows one
    bracket per entry and no commas inside one, so each run of numbers is an entry."""
    ranges, plain = name_ranges(names)
    entries = [
        f"{r.prefix}{r.low:0{r.width}d}"
        if r.low == r.high
        else f"{r.prefix}[{r.low:0{r.width}d}-{r.high:0{r.width}d}]"
        for r in ranges
    ]
    return "{" + ",".join([*entries, *plain]) + "}"


def most_memory_kib(profile: HardwareProfile) -> int:
    """The most /proc/meminfo's MemTotal may show, in kB: the installed memory, and on a
    Grace superchip (GB200, GB300, GH200) every GPU's HBM as well. There the GPUs' memory
    is coherent with the CPU's over NVLink-C2C and, with CDMM (Coherent Driver-based
    Memory Management) off, onlined as NUMA nodes the kernel counts in MemTotal (NVIDIA's
    R580 driver release notes): a bound of the CPU's memory alone drained every tray.
    With CDMM on, MemTotal is the CPU's memory, within the same bound."""
    kib = profile.memory_gib * 1024**2
    gpu = profile.gpu
    model = profile_gpu(profile)
    if gpu is not None and model is not None and model.host_cpu_arch == "aarch64":
        kib += gpu.count * model.memory_gib * 1024**2
    return kib


def _profile_lines(cluster: ResolvedCluster, hosts: list[Host]) -> list[CheckLine]:
    """CPUs and memory as slurm.conf's NodeName line states them, the compute HCA ports at
    the fabric's rate, and the GPU check."""
    profile = hosts[0].hardware
    where = target([h.name for h in hosts])
    cpu = profile.cpu
    cores = cpu.sockets * cpu.cores_per_socket
    # Without "physical id" in /proc/cpuinfo (aarch64) NHC counts each CPU as a socket,
    # so only the core and thread counts are compared there.
    sockets = "''" if profile_cpu_arch(profile) == "aarch64" else str(cpu.sockets)
    lines = [CheckLine(where, f"check_hw_cpuinfo {sockets} {cores} {cpu.cpus}")]
    # At least RealMemory (slurmctld drains a node that registers less), at most what is
    # installed: /proc/meminfo's MemTotal in kB.
    lines.append(
        CheckLine(
            where,
            f"check_hw_physmem {profile.slurm_real_memory_mib() * 1024} {most_memory_kib(profile)}",
        )
    )
    fabric = cluster.spec.network.fabric
    if fabric is not None:
        lines += [
            CheckLine(where, f"check_hw_ib {LINK_GBITS[fabric.rate]} {hca}:{port}")
            for hca, port in profile.compute_hcas()
        ]
    if profile.gpu is not None:
        nvlink = " nvlink" if profile.gpu.nvlink_domain is not None else ""
        count = profile_gpu_count(profile)
        lines.append(CheckLine(where, f"check_clustergen_gpu {count}{nvlink}"))
        if cluster.spec.software.dcgm is not None:
            lines.append(CheckLine(where, "check_clustergen_dcgm"))
    return lines


def _service_lines(cluster: ResolvedCluster) -> list[CheckLine]:
    """The daemons a compute node needs: slurmd and munged everywhere, the fabric manager
    on NVSwitch nodes where it is pinned, the DCGM host engine on GPU nodes where DCGM is."""
    compute, software = cluster.compute, cluster.spec.software
    everyone = target([h.name for h in compute])
    lines = [
        CheckLine(everyone, "check_ps_service -u root slurmd"),
        CheckLine(everyone, "check_ps_service -u munge -d munged munge"),
    ]
    gpu = [h.name for h in compute if h.hardware.gpu is not None]
    nvswitch = [h.name for h in compute if h.hardware.gpu is not None and h.hardware.gpu.nvswitch]
    if nvswitch and software.fabric_manager is not None:
        lines.append(
            CheckLine(
                target(nvswitch),
                "check_ps_service -u root -d nv-fabricmanager nvidia-fabricmanager",
            )
        )
    if gpu and software.dcgm is not None:
        lines.append(
            CheckLine(target(gpu), "check_ps_service -u root -d nv-hostengine nvidia-dcgm")
        )
    start = imex_start(cluster)
    trays = [h.name for h in compute if h.hardware.gpu and h.hardware.gpu.nvlink_domain]
    if trays and start is not None and start.always_on:
        # IMEX from boot (slurm.imex switch or global); in prolog mode each job starts it.
        lines.append(
            CheckLine(target(trays), f"check_ps_service -u root -d {IMEX_SERVICE} {IMEX_SERVICE}")
        )
    return lines


def _mount_lines(cluster: ResolvedCluster) -> list[CheckLine]:
    """Each Lustre and required NFS mount, read-write, on the compute nodes that mount it."""
    storage, compute = cluster.spec.storage, cluster.compute
    if storage is None:
        return []
    lines = []
    for lustre in [storage.lustre] if storage.lustre is not None else []:
        names = [h.name for h in compute if h.name in cluster.lustre_clients]
        if names:
            check = f"check_fs_mount_rw -t lustre -f {lustre.mount.path}"
            lines.append(CheckLine(target(names), check))
    on_compute = {h.name for h in compute}
    for mount, nodes in zip(storage.nfs, cluster.nfs_clients, strict=True):
        names = [name for name in nodes if name in on_compute]
        if mount.required and names:
            fstype = "nfs" if mount.version == "3" else "nfs4"
            source = f"{mount.server}:{mount.export}"
            check = f"check_fs_mount_rw -t {fstype} -s {source} -f {mount.path}"
            lines.append(CheckLine(target(names), check))
    return lines


def derive_nhc(cluster: ResolvedCluster) -> NhcContext | None:
    if cluster.spec.software.nhc is None or not cluster.compute:
        return None
    groups: dict[str, list[Host]] = {}
    for host in cluster.compute:
        groups.setdefault(host.hardware_name, []).append(host)
    sections = [
        (f"Hardware profile {name}", _profile_lines(cluster, hosts))
        for name, hosts in groups.items()
    ]
    sections.append(("Daemons", _service_lines(cluster)))
    mounts = _mount_lines(cluster)
    if mounts:
        sections.append(("Mounts", mounts))
    gpu = any(h.hardware.gpu is not None for h in cluster.compute)
    return NhcContext(sections, gpu, gpu and cluster.spec.software.dcgm is not None)


def render(cluster: ResolvedCluster, env: jinja2.Environment) -> list[Artifact]:
    """nhc.conf and NHC's settings on every compute node, the GPU check script, and the
    DCGM health watch unit on GPU nodes (NHC reads both afresh at every run)."""
    nhc = derive_nhc(cluster)
    if nhc is None:
        return []

    def text(name: str) -> str:
        return render_template(
            env,
            f"nhc/{name}.j2",
            cluster,
            nhc=nhc,
            xids=DRAIN_XIDS,
            timeouts=GPU_TIMEOUTS,
            nhc_timeout_s=NHC_TIMEOUT_S,
            dcgm_systems=DCGM_SYSTEMS,
            max_gpu_temp_c=(cluster.spec.slurm.health_check or _DEFAULT).max_gpu_temp_c,
        )

    sysconfig = SYSCONFIG[cluster.pins.family]
    artifacts = [
        Artifact("nhc/nhc.conf", text("nhc.conf"), install=Install(NHC_CONF, "compute", NO_CHANGE)),
        Artifact(
            "nhc/nhc.sysconfig",
            text("nhc.sysconfig"),
            install=Install(sysconfig, "compute", NO_CHANGE),
        ),
    ]
    if nhc.gpu:
        install = Install(GPU_SCRIPT, "compute", NO_CHANGE)
        artifacts.append(
            Artifact("nhc/clustergen_gpu.nhc", text("clustergen_gpu.nhc"), install=install)
        )
    if nhc.dcgm:
        # The GPU nodes among the compute nodes (the nhc role's), all of them by default.
        gpu = tuple(h.name for h in cluster.compute if h.hardware.gpu is not None)
        hosts = None if len(gpu) == len(cluster.compute) else gpu
        change = NodeChange("restart", DCGM_WATCH_UNIT.removesuffix(".service"))
        install = Install(f"/etc/systemd/system/{DCGM_WATCH_UNIT}", "compute", change, hosts=hosts)
        artifacts.append(Artifact(f"nhc/{DCGM_WATCH_UNIT}", text(DCGM_WATCH_UNIT), install=install))
    return artifacts
