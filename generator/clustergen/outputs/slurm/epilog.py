"""What the Slurm family's health Epilog and IMEX scripts print: the GPU nodes of
each profile as runs of names, what a node of each profile must show after a job, the
Epilog's time limits, and the trays the IMEX Prolog writes into nodes_config.cfg."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from clustergen.catalog.gpus import profile_gpu_count
from clustergen.resolve import ResolvedCluster
from clustergen.resolve.imex_mode import IMEX_ETC, IMEX_SERVICE, NODES_CONFIG, imex_start
from clustergen.spec.hosts import Host, NameRange, name_ranges


@dataclass(frozen=True)
class GpuNodeCheck:
    """Epilog: the nodes of one hardware profile with GPUs, as ranges of numbered names
    plus any names without a number, so the Epilog grows with runs of names, not with
    nodes."""

    profile: str
    ranges: list[NameRange]
    names: list[str]


@dataclass(frozen=True)
class EpilogProfile:
    """Epilog: what a node of this hardware profile must show after a job."""

    name: str
    gpu_count: int
    fabric_manager: bool  # NVSwitch nodes run nvidia-fabricmanager (software.fabric_manager)
    rails: list[str]  # "HCA:port" of each compute HCA, ACTIVE at the fabric's link rate
    nvlink_fabric: bool = False  # trays of an NVLink domain: every GPU in the NVLink fabric
    imex: bool = False  # ... and nvidia-imex active, where it runs from boot (switch, global)


@dataclass(frozen=True)
class EpilogTimeouts:
    """Seconds the health Epilog gives each command before `timeout` ends it."""

    # Each nvidia-smi call: it answers in about a second on a healthy node, and one that
    # takes 20 s is itself a fault (the node drains with "did not answer").
    smi_s: int = 20
    call_s: int = 10  # journalctl, grep, rm, systemctl, logger, scontrol, hostname
    kill_after_s: int = 5  # SIGKILL this long after SIGTERM
    # The query, and `nvidia-smi -q` on the trays of NVLink domains (the fabric check).
    smi_calls: int = 2
    # hostname, journalctl, grep (the HCA ports), systemctl for the fabric manager and for
    # IMEX, two logger calls, scontrol; rm (the journal cursor) runs only after journalctl
    # failed fast, not timed out
    other_calls: int = 8

    @property
    def worst_case_s(self) -> int:
        """The longest the Epilog can run with every command timing out."""
        return self.smi_calls * (self.smi_s + self.kill_after_s) + self.other_calls * (
            self.call_s + self.kill_after_s
        )


EPILOG_TIMEOUTS = EpilogTimeouts()


@dataclass(frozen=True)
class ImexScripts:
    """What the IMEX Prolog and Epilog print."""

    trays: list[tuple[str, str, str]]  # (tray, domain, management address)
    config: str = f"{IMEX_ETC}/{NODES_CONFIG}"
    service: str = IMEX_SERVICE


def imex_trays(cluster: ResolvedCluster) -> list[tuple[str, str, str]]:
    """(tray, its NVLink domain, its management address) for the IMEX Prolog."""
    table = cluster.by_name
    return [
        (name, domain.name, table[name].management_ip or "")
        for domain in cluster.nvlink_domains
        for name in domain.nodes
        if name in table
    ]


def epilog_checks(compute: Sequence[Host]) -> list[GpuNodeCheck]:
    groups: dict[str, list[str]] = {}
    for host in compute:
        if host.hardware.gpu is not None:
            groups.setdefault(host.hardware_name, []).append(host.name)
    checks = []
    for profile, names in groups.items():
        ranges, plain = name_ranges(names)
        checks.append(GpuNodeCheck(profile, ranges, plain))
    return checks


def epilog_profiles(cluster: ResolvedCluster) -> list[EpilogProfile]:
    """Each hardware profile of the GPU compute nodes, in the order the nodes list them."""
    spec = cluster.spec
    fabric = spec.network.fabric
    start = imex_start(cluster)
    profiles: dict[str, EpilogProfile] = {}
    for host in cluster.compute:
        gpu = host.hardware.gpu
        if gpu is None or host.hardware_name in profiles:
            continue
        rails = [f"{hca}:{port}" for hca, port in host.hardware.compute_hcas()] if fabric else []
        fabric_manager = gpu.nvswitch and spec.software.fabric_manager is not None
        nvlink = gpu.nvlink_domain is not None
        imex = nvlink and start is not None and start.always_on
        profiles[host.hardware_name] = EpilogProfile(
            host.hardware_name,
            profile_gpu_count(host.hardware),
            fabric_manager,
            rails,
            nvlink,
            imex,
        )
    return list(profiles.values())
