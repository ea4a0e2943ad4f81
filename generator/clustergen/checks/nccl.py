"""NCCL settings against NCCL's documented variables and the hardware; the topology table."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from clustergen.base import codes
from clustergen.base.errors import Problem, SpecPath
from clustergen.base.suggest import did_you_mean
from clustergen.catalog.distributions import DISTRIBUTIONS
from clustergen.catalog.fabric_packages import openmpi_version
from clustergen.catalog.gpus import profile_gpu_count, superchip_cores
from clustergen.catalog.nccl_vars import (
    NCCL_VARIABLES,
    ROCE_ONLY,
    parse_interface_list,
    value_problem,
)
from clustergen.catalog.switches import catalog_switch
from clustergen.catalog.versions import parse_version
from clustergen.model.gpu_topology import core_ids
from clustergen.model.hardware import HardwareProfile
from clustergen.model.nccl import NcclSettings
from clustergen.resolve import ResolvedCluster


def profile_hcas(profile: HardwareProfile) -> list[str]:
    """The HCA names a profile has: the topology table's, else fabric_hcas."""
    if profile.topology is not None:
        return [hca.name for hca in profile.topology.hcas]
    return list(profile.fabric_hcas)


def _settings(cluster: ResolvedCluster) -> Iterator[tuple[SpecPath, NcclSettings, list[str]]]:
    """Every NCCL settings block with its path and the profiles whose nodes it reaches."""
    spec = cluster.spec
    gpu_profiles = [name for name, p in spec.hardware.items() if p.gpu is not None]
    if spec.nccl is not None:
        yield ("nccl",), spec.nccl, gpu_profiles
    for name, profile in spec.hardware.items():
        if profile.nccl is not None:
            yield ("hardware", name, "nccl"), profile.nccl, [name]
    for index, partition in enumerate(spec.slurm.partitions):
        if partition.nccl is not None:
            members = cluster.partition_nodes[index]
            known = cluster.by_name
            names = sorted({known[n].hardware_name for n in members if n in known})
            yield ("slurm", "partitions", index, "nccl"), partition.nccl, names


def settings(cluster: ResolvedCluster) -> list[Problem]:
    """Names and values of the env entries; HCAs named exist; RoCE-only names on InfiniBand."""
    spec = cluster.spec
    fabric = spec.network.fabric
    problems = []
    for path, block, profiles in _settings(cluster):
        for name, value in block.env.items():
            where = (*path, "env", name)
            if not name.startswith("NCCL_"):
                problems.append(
                    Problem(
                        codes.NCCL_NOT_NCCL_VARIABLE,
                        where,
                        f"'{name}' is not an NCCL variable; nccl.env holds NCCL_* names only",
                        at="key",
                    )
                )
                continue
            syntax = NCCL_VARIABLES.get(name)
            if syntax is None:
                problems.append(
                    Problem(
                        codes.NCCL_UNKNOWN_VARIABLE,
                        where,
                        f"'{name}' is not in NCCL's documented variables"
                        f"{did_you_mean(name, NCCL_VARIABLES)}; it is written as given",
                        at="key",
                    )
                )
                continue
            why = value_problem(syntax, value)
            if why is not None:
                problems.append(Problem(codes.NCCL_BAD_VALUE, where, f"{name}: {why}"))
                continue
            if fabric is not None and fabric.type == "infiniband" and name in ROCE_ONLY:
                problems.append(
                    Problem(
                        codes.NCCL_ROCE_SETTING_ON_INFINIBAND,
                        where,
                        f"{name} only applies to RoCE; the fabric is InfiniBand",
                        at="key",
                    )
                )
            if name == "NCCL_IB_HCA":
                problems.extend(_hcas_exist(cluster, where, str(value), profiles))
    if fabric is not None and fabric.ethernet and fabric.traffic_class is None:
        problems.append(
            Problem(
                codes.NCCL_ROCE_SETTINGS_MISSING,
                ("network", "fabric") if fabric.roce is None else ("network", "fabric", "roce"),
                "a RoCE fabric needs roce traffic_class (NCCL_IB_TC): the traffic class "
                "of the switches' lossless (PFC) priority, or RDMA shares a lossy class "
                "with every other flow",
                at="key",
            )
        )
    return problems


def _hcas_exist(
    cluster: ResolvedCluster, where: SpecPath, value: str, profiles: list[str]
) -> list[Problem]:
    parsed = parse_interface_list(value)
    if isinstance(parsed, str):
        return []
    exact = parsed[1]
    problems = []
    for profile_name in profiles:
        have = profile_hcas(cluster.spec.hardware[profile_name])
        for hca, _ in parsed[2]:
            known = hca in have if exact else any(h.startswith(hca) for h in have)
            if not known:
                problems.append(
                    Problem(
                        codes.NCCL_UNKNOWN_HCA,
                        where,
                        f"NCCL_IB_HCA names '{hca}', which profile '{profile_name}' does not "
                        f"have{did_you_mean(hca, have)}; its HCAs: {', '.join(have) or 'none'}",
                    )
                )
    return problems


def _topology_missing(name: str, profile: HardwareProfile) -> Problem:
    # A Grace superchip's GPUs get Cores= from their own CPU without a table.
    lost = (
        ""
        if superchip_cores(profile) is not None
        else "gres.conf has no Cores= (jobs get no GPU-CPU affinity), and "
    )
    return Problem(
        codes.HARDWARE_TOPOLOGY_MISSING,
        ("hardware", name),
        f"GPU profile '{name}' has no topology table, so {lost}NCCL_IB_HCA and the ib-rails "
        "job take fabric_hcas as they stand, with no rail told from a storage HCA",
        at="key",
    )


def topology(cluster: ResolvedCluster) -> list[Problem]:
    """The topology table against the profile; its absence on GPU compute profiles when the
    spec asks for NCCL settings (the `nccl` section), whose HCA list and rail tests it feeds."""
    spec = cluster.spec
    compute_profiles = {h.hardware_name for h in cluster.hosts if h.is_slurm_compute}
    problems = []
    for name, profile in spec.hardware.items():
        table = profile.topology
        if table is None:
            if spec.nccl is not None and profile.gpu is not None and name in compute_profiles:
                problems.append(_topology_missing(name, profile))
            continue
        base = ("hardware", name, "topology")
        hca_names = [hca.name for hca in table.hcas]
        for i, hca in enumerate(table.hcas):
            if hca.numa_node >= profile.cpu.numa_nodes:
                problems.append(_numa((*base, "hcas", i, "numa_node"), hca.numa_node, profile))
        compute = [hca.name for hca in table.hcas if hca.role == "compute"]
        if profile.fabric_hcas and sorted(profile.fabric_hcas) != sorted(compute):
            problems.append(
                Problem(
                    codes.HARDWARE_TOPOLOGY_HCAS_DIFFER,
                    ("hardware", name, "fabric_hcas"),
                    f"fabric_hcas ({', '.join(profile.fabric_hcas)}) differ from the topology "
                    f"table's compute HCAs ({', '.join(compute) or 'none'})",
                )
            )
        count = profile_gpu_count(profile)  # other_gpus' too: gres.conf takes each from here
        seen = Counter(gpu.index for gpu in table.gpus)
        wrong = sorted(i for i in seen if i >= count or seen[i] > 1)
        missing = sorted(set(range(count)) - set(seen))
        if wrong or missing:
            problems.append(
                Problem(
                    codes.HARDWARE_TOPOLOGY_GPU_INDEX,
                    (*base, "gpus"),
                    f"the table must list GPU indexes 0-{count - 1} once each"
                    + (f"; missing {', '.join(map(str, missing))}" if missing else "")
                    + (
                        f"; duplicated or beyond the count: {', '.join(map(str, wrong))}"
                        if wrong
                        else ""
                    ),
                )
            )
        cores = profile.cpu.sockets * profile.cpu.cores_per_socket
        for i, gpu in enumerate(table.gpus):
            here = (*base, "gpus", i)
            outside = [c for c in core_ids(gpu.cores) if c >= cores]
            if outside:
                problems.append(
                    Problem(
                        codes.HARDWARE_TOPOLOGY_CORES,
                        (*here, "cores"),
                        f"core {outside[0]} is beyond the profile's {cores} cores (Slurm core "
                        f"IDs 0-{cores - 1}: sockets x cores_per_socket)",
                    )
                )
            if gpu.numa_node >= profile.cpu.numa_nodes:
                problems.append(_numa((*here, "numa_node"), gpu.numa_node, profile))
            if gpu.hca not in hca_names:
                problems.append(
                    Problem(
                        codes.HARDWARE_TOPOLOGY_UNKNOWN_HCA,
                        (*here, "hca"),
                        f"'{gpu.hca}' is not one of the table's HCAs"
                        f"{did_you_mean(gpu.hca, hca_names)}: {', '.join(hca_names)}",
                    )
                )
    return problems


def _numa(path: SpecPath, numa: int, profile: HardwareProfile) -> Problem:
    cpu = profile.cpu
    split = f" of {cpu.numa_per_socket} NUMA nodes each" if cpu.numa_per_socket > 1 else ""
    hint = (
        ""
        if cpu.numa_per_socket > 1
        else "; a BIOS with NPS2/NPS4 or SNC splits each socket: set cpu.numa_per_socket"
    )
    return Problem(
        codes.HARDWARE_TOPOLOGY_NUMA,
        path,
        f"NUMA node {numa} is outside the profile's {cpu.sockets} socket(s){split} "
        f"(0-{cpu.numa_nodes - 1}){hint}",
    )


def sharp(cluster: ResolvedCluster) -> list[Problem]:
    """network.fabric.sharp only where NCCL's SHARP plugin works: InfiniBand, rail leaves
    (the plugin's streaming aggregation needs each leaf on one HCA rail of every node), and
    every switch a catalog model of Quantum (HDR) or later (docs/nccl.md)."""
    fabric = cluster.spec.network.fabric
    if fabric is None or not fabric.sharp:
        return []
    why = []
    if fabric.type != "infiniband":
        why.append(f"SHARP for NCCL runs on InfiniBand, and this fabric is {fabric.type}")
    if not any(switch.rail is not None for switch in fabric.switches):
        why.append("no leaf carries a rail (the plugin needs each leaf on one HCA rail)")
    unable = [s.name for s in fabric.switches if not _nccl_sharp(s.model)]
    if unable:
        why.append(
            f"{len(unable)} of {len(fabric.switches)} switches are not a catalog model "
            "whose SHARP NCCL's plugin can use, Quantum (HDR) or later "
            f"({', '.join(unable[:3])}{', ...' if len(unable) > 3 else ''}); name each "
            "switch's model (docs/fabric.md, Switch catalog)"
        )
    return [
        Problem(
            codes.NCCL_SHARP_UNSUPPORTED,
            ("network", "fabric", "sharp"),
            "network.fabric.sharp asks NCCL for SHARP (NCCL_COLLNET_ENABLE=1), but " + reason,
        )
        for reason in why
    ]


def _nccl_sharp(model: str | None) -> bool:
    found = catalog_switch(model)
    return found is not None and found.nccl_sharp


# NCCL variables that keep a job off a multi-node NVLink domain's NVLink at 0: MNNVL
# itself, and cuMem, which MNNVL needs (docs/nccl.md, NCCL_MNNVL_ENABLE).
NVLINK_DOMAIN_OFF = ("NCCL_MNNVL_ENABLE", "NCCL_CUMEM_ENABLE")


# NVIDIA GB200 NVL Multi-Node Tuning Guide, "NVIDIA NCCL": "GB200 MNNVL is supported in
# NCCL version 2.25.2 and later."
MNNVL_MIN_NCCL = (2, 25, 2)


def mnnvl_release(cluster: ResolvedCluster) -> list[Problem]:
    """A pinned NCCL older than MNNVL_MIN_NCCL on a cluster whose compute nodes are trays of
    a multi-node NVLink domain: jobs would cross the trays over the fabric, not NVLink."""
    spec = cluster.spec
    if parse_version(spec.software.nccl)[:3] >= MNNVL_MIN_NCCL:
        return []
    trays = sorted(
        {
            host.hardware_name
            for host in cluster.hosts
            if host.is_slurm_compute
            and host.hardware.gpu is not None
            and host.hardware.gpu.nvlink_domain is not None
        }
    )
    if not trays:
        return []
    least = ".".join(map(str, MNNVL_MIN_NCCL))
    return [
        Problem(
            codes.NCCL_TOO_OLD_FOR_MNNVL,
            ("software", "nccl"),
            f"NCCL {spec.software.nccl} predates {least}, the first release NVIDIA supports "
            f"multi-node NVLink with (GB200 NVL Multi-Node Tuning Guide); profile "
            f"{', '.join(trays)} is a tray of an NVLink domain, whose jobs would then cross "
            f"the trays over the fabric, not NVLink: pin NCCL {least} or later",
        )
    ]


def nvlink_domain(cluster: ResolvedCluster) -> list[Problem]:
    """A 0 for NCCL_MNNVL_ENABLE or NCCL_CUMEM_ENABLE reaching trays of an NVLink domain;
    NCCL_NVLS_ENABLE=1 reaching GPUs with neither NVSwitch nor an NVLink domain."""
    spec = cluster.spec
    problems = []
    for path, block, profiles in _settings(cluster):
        trays = [
            name
            for name in profiles
            if (gpu := spec.hardware[name].gpu) is not None and gpu.nvlink_domain is not None
        ]
        for variable in NVLINK_DOMAIN_OFF:
            if trays and str(block.env.get(variable, "")).strip() == "0":
                problems.append(
                    Problem(
                        codes.NCCL_MNNVL_OFF,
                        (*path, "env", variable),
                        f"{variable}=0 reaches profile {', '.join(trays)}, whose nodes are "
                        "trays of a multi-node NVLink domain: NCCL then uses the fabric, not "
                        "NVLink, between trays (NCCL_MNNVL_ENABLE needs cuMem); remove it "
                        "unless that is the aim",
                    )
                )
        flat = [
            name
            for name in profiles
            if (gpu := spec.hardware[name].gpu) is not None
            and not gpu.nvswitch
            and gpu.nvlink_domain is None
        ]
        if flat and str(block.env.get("NCCL_NVLS_ENABLE", "")).strip() == "1":
            problems.append(
                Problem(
                    codes.NCCL_NVLS_WITHOUT_NVSWITCH,
                    (*path, "env", "NCCL_NVLS_ENABLE"),
                    f"NCCL_NVLS_ENABLE=1 reaches profile {', '.join(flat)}, whose GPUs have no "
                    "NVSwitch (gpu.nvswitch) or NVLink domain: 1 skips NCCL's test for "
                    "NVLink SHARP; leave it unset (2, the default, finds it where it exists)",
                )
            )
    return problems


def test_tools(cluster: ResolvedCluster) -> list[Problem]:
    """GPU nodes get nccl-tests (software.nccl_tests, built with the catalog's Open MPI)
    and, with slurm.mpi pmix, the PMIx the catalog knows for the OS; a warning otherwise."""
    software = cluster.spec.software
    distribution = DISTRIBUTIONS[software.os]
    problems = []
    if any(profile.gpu is not None for profile in cluster.spec.hardware.values()):
        if software.nccl_tests is None:
            problems.append(
                Problem(
                    codes.NCCL_TESTS_NOT_BUILT,
                    ("software",),
                    "no software.nccl_tests: nothing installs nccl-tests on the GPU nodes, so "
                    "the acceptance all-reduce jobs stop with NOT RUN; name its release "
                    "tarball (version, url, sha256), which the nccl_tests role builds",
                )
            )
        elif openmpi_version(software) is None:
            problems.append(
                Problem(
                    codes.NCCL_TESTS_NOT_BUILT,
                    ("software", "nccl_tests"),
                    f"clustergen knows no Open MPI of {distribution.title}, which nccl-tests "
                    "is built with: the nccl_tests role builds nothing (docs/acceptance.md)",
                )
            )
        if cluster.spec.slurm.mpi == "none":
            problems.append(
                Problem(
                    codes.NCCL_TESTS_WITHOUT_PMIX,
                    ("slurm", "mpi"),
                    "slurm.mpi is none (the default): the acceptance all-reduce jobs stop with "
                    "NOT RUN, as nccl-tests, built with MPI, starts its ranks under srun only "
                    "through PMIx; set slurm.mpi: pmix (the slurm role installs and pins "
                    "PMIx), or run the jobs with SRUN_MPI naming the plugin your site installs",
                )
            )
    if cluster.spec.slurm.mpi == "pmix" and distribution.pmix is None:
        problems.append(
            Problem(
                codes.SLURM_PMIX_UNPINNED,
                ("slurm", "mpi"),
                f"clustergen knows no PMIx package of {distribution.title}: the slurm role "
                "installs none, so srun --mpi=pmix fails until the site installs PMIx (and, "
                "with the distribution's Slurm, its mpi/pmix plugin) on every Slurm node",
            )
        )
    return problems
