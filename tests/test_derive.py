"""Values computed once for the templates: hostlists, memory, GRES, topology, scale."""

from __future__ import annotations

import copy
import random

import hostlist
import pytest
from ruamel.yaml import YAML

from clustergen.catalog.slurm_keys import accepted_keys, key_list_version
from clustergen.model import Spec
from clustergen.outputs.slurm.derive import derive_slurm
from clustergen.resolve import resolve
from clustergen.spec.hosts import compress, name_ranges
from clustergen.spec.long_form import expand

from support.paths import EXAMPLES


def reference(name: str = "ml-training-8node") -> dict:  # type: ignore[type-arg]
    loaded: dict = YAML(typ="safe").load((EXAMPLES / f"{name}.yaml").read_text())  # type: ignore[type-arg]
    return loaded


def slurm_of(document: dict):  # type: ignore[no-untyped-def,type-arg]
    return derive_slurm(resolve(Spec.model_validate(document), "spec.yaml"))


def test_node_line_values() -> None:
    (line,) = slurm_of(reference()).nodes
    settings = dict(line.settings)
    assert line.names == "gpu[01-08]"
    assert settings["CPUs"] == str(2 * 64 * 2)
    assert settings["RealMemory"] == str((2048 - 64) * 1024)
    assert settings["Gres"] == "gpu:h100:8"
    assert settings["Features"] == "hgx-h100,h100"
    assert settings["State"] == "UNKNOWN"


def test_gres_type_matches_between_files() -> None:
    slurm = slurm_of(reference("edge-roce-2node"))
    (gres,) = slurm.gres
    (node,) = slurm.nodes
    assert f"gpu:{gres.gres_type}:4" == dict(node.settings)["Gres"]
    assert gres.files == "/dev/nvidia[0-3]"


def test_topology_lists_only_slurm_nodes() -> None:
    lines = {s.name: s for s in slurm_of(reference()).topology}
    assert lines["ib-leaf02"].nodes == "gpu[05-08]"  # slurm-head, mds01, oss* left out
    assert lines["ib-spine01"].switches == "ib-leaf[01-02]"


def test_leaf_without_slurm_nodes_is_dropped_with_empty_spine() -> None:
    document = reference()
    document["network"]["fabric"]["switches"] = [
        {"name": "leaf1", "nodes": "gpu[01-08]"},
        {"name": "leaf2", "nodes": "mds01,oss[01-04]"},
        {"name": "storage-spine", "switches": "leaf2"},
        {"name": "spine", "switches": "leaf1,storage-spine"},
    ]
    names = [s.name for s in slurm_of(document).topology]
    assert names == ["leaf1", "spine"]


def test_controller_address_and_options_override_defaults() -> None:
    document = reference()
    document["slurm"]["options"]["SlurmctldPort"] = 7817
    sections = {s.title.split(" (")[0]: dict(s.settings) for s in slurm_of(document).sections}
    assert sections["Cluster and controllers"]["SlurmctldHost"] == "slurm-head(10.0.1.2)"
    assert "SlurmctldPort" not in sections["Daemons, paths and defaults"]
    assert sections["Site options"]["SlurmctldPort"] == "7817"


def test_jobs_keep_slurmds_locked_memory_limit_unless_the_site_says_otherwise() -> None:
    document = reference()
    defaults = [s for s in slurm_of(document).sections if s.title.startswith("Daemons")]
    assert dict(defaults[0].settings)["PropagateResourceLimitsExcept"] == "MEMLOCK"
    # Any case, as Slurm reads keys.
    document["slurm"]["options"]["propagateresourcelimitsexcept"] = "MEMLOCK,STACK"
    sections = {s.title.split(" (")[0]: dict(s.settings) for s in slurm_of(document).sections}
    assert "PropagateResourceLimitsExcept" not in sections["Daemons, paths and defaults"]
    assert sections["Site options"]["propagateresourcelimitsexcept"] == "MEMLOCK,STACK"


def test_sixteen_thousand_nodes_need_one_node_line() -> None:
    document = copy.deepcopy(reference())
    document["nodes"][0] = {
        **document["nodes"][0],
        "names": "gpu[00001-16384]",
        "management_ip": "10.0.64.1",
        "bmc_ip": "10.0.128.1",
        "fabric_ip": "10.10.64.1",
    }
    document["network"]["management"]["cidr"] = "10.0.0.0/17"
    document["network"]["bmc"]["cidr"] = "10.0.128.0/17"
    document["network"]["fabric"]["switches"] = [
        {"name": "leaf1", "nodes": "gpu[00001-16384]"},
        {"name": "leaf2", "nodes": "slurm-head,mds01,oss[01-04]"},
        {"name": "spine", "switches": "leaf[1-2]"},
    ]
    document["slurm"]["partitions"] = [
        {"name": "all", "nodes": "gpu[00001-16384]", "default": True}
    ]
    document["racks"] = []
    slurm = slurm_of(document)
    assert [line.names for line in slurm.nodes] == ["gpu[00001-16384]"]
    assert [line.names for line in slurm.gres] == ["gpu[00001-16384]"]


def test_controllers_take_hostlists_primary_first() -> None:
    document = reference()
    document["nodes"][1] = {**document["nodes"][1], "names": "ctl[2,1]"}
    document["slurm"]["controllers"] = ["ctl[2,1]"]
    document["slurm"]["accounting"]["host"] = "ctl1"
    document["racks"][4]["devices"][0]["node"] = "ctl1"
    spec = Spec.model_validate(document)
    (cluster,) = [
        s for s in derive_slurm(resolve(spec, "x")).sections if s.title.startswith("Cluster")
    ]
    assert [v for k, v in cluster.settings if k == "SlurmctldHost"] == [
        "ctl2(10.0.1.2)",
        "ctl1(10.0.1.3)",
    ]


def test_compress_writes_what_python_hostlist_writes() -> None:
    """The one-pass fold for the common case gives python-hostlist's bytes exactly."""
    rng = random.Random(7)
    for _ in range(3000):
        prefix = rng.choice(["gpu", "n", "rack1-n", "a-b2c", "x"])
        width = rng.choice([1, 2, 3, 4])
        top = min(10**width, 3000)
        names = [
            f"{prefix}{n:0{width}d}" for n in rng.sample(range(top), rng.randint(1, min(30, top)))
        ]
        if rng.random() < 0.2:
            names.append(rng.choice(["login1", "gpu9", "zz", f"{prefix}{top + 5}"]))
        assert compress(names) == hostlist.collect_hostlist(names), names


def test_compress_of_several_prefixes_writes_what_python_hostlist_writes() -> None:
    """The fold of several prefixes and names without a number (gpu[00001-16384],
    slurm-head) gives python-hostlist's bytes, and leaves it every case it folds
    otherwise: prefixes with digits, two widths, numbers inside names, duplicates."""
    rng = random.Random(11)
    prefixes = ["gpu", "g", "oss", "mds", "", "n-", "rack1-n", "r2n", "a.b", "gpu-a"]
    others = [
        "slurm-head",
        "login",
        "zz",
        "a",
        "b1c",
        "gpu",
        "gpu1",
        "x9y",
        " gpu7",
        "gpu8\n",
        "a,b",
    ]
    for _ in range(3000):
        names: list[str] = []
        for prefix in rng.sample(prefixes, rng.randint(1, 3)):
            width = rng.choice([1, 2, 3, 5])
            top = min(10**width, 400)
            picked = rng.sample(range(top), rng.randint(1, min(20, top)))
            names += [f"{prefix}{n:0{rng.choice([width, width, 1])}d}" for n in picked]
        names += rng.sample(others, rng.choice([0, 0, 1, 2]))
        if rng.random() < 0.1:
            names.append(rng.choice(names))
        rng.shuffle(names)
        try:
            expected = hostlist.collect_hostlist(names)
        except hostlist.BadHostlist:
            continue
        assert compress(names) == expected, names


def _partitions(document: dict) -> dict[str, dict[str, str]]:  # type: ignore[type-arg]
    return {line.names: dict(line.settings) for line in slurm_of(document).partitions}


def _section_settings(document: dict) -> dict[str, str]:  # type: ignore[type-arg]
    return {key: value for s in slurm_of(document).sections for key, value in s.settings}


def test_gpu_partitions_get_per_gpu_defaults_after_the_system_reserve() -> None:
    document = reference()
    partitions = _partitions(document)
    # 128 cores x 2 threads and 1984 GiB shared by 8 GPUs.
    assert partitions["gpu-training"]["DefCpuPerGPU"] == "32"
    assert partitions["gpu-training"]["DefMemPerGPU"] == str(1984 * 1024 // 8)
    assert partitions["gpu-training"]["TRESBillingWeights"] == "CPU=1,Mem=0.129G,GRES/gpu=32"
    document["hardware"]["hgx-h100"]["system_reserved"] = {"cores": 6, "memory_gib": 64}
    partitions = _partitions(document)
    # 122 cores left: 15 whole cores a GPU (not 15.25), 30 CPUs; memory 1920 GiB.
    assert partitions["gpu-training"]["DefCpuPerGPU"] == "30"
    assert partitions["gpu-training"]["DefMemPerGPU"] == str(1920 * 1024 // 8)
    (node,) = slurm_of(document).nodes
    assert dict(node.settings)["CoreSpecCount"] == "6"
    assert dict(node.settings)["MemSpecLimit"] == str(64 * 1024)


@pytest.mark.parametrize(
    ("cores", "threads", "gpus", "reserved", "cpus_per_gpu"),
    [
        (1, 2, 2, 0, "1"),  # fewer cores than GPUs: the threads shared out (was 2: 4 > 2)
        (3, 2, 2, 0, "2"),  # one whole core each; the third core is not split
        (4, 2, 8, 1, None),  # 3 cores left, 6 CPUs, 8 GPUs: not a CPU each, not written
        (64, 2, 8, 4, "14"),  # 60 cores left: 7 each
    ],
)
def test_a_job_asking_for_every_gpu_fits_the_node_with_the_defaults(
    cores: int, threads: int, gpus: int, reserved: int, cpus_per_gpu: str | None
) -> None:
    document = reference()
    profile = document["hardware"]["hgx-h100"]
    profile["cpu"] = {"sockets": 1, "cores_per_socket": cores, "threads_per_core": threads}
    profile["gpu"]["count"] = gpus
    profile.pop("system_reserved", None)
    if reserved:
        profile["system_reserved"] = {"cores": reserved, "memory_gib": 64}
    for partition in _partitions(document).values():
        if cpus_per_gpu is None:
            assert "DefCpuPerGPU" not in partition
        else:
            assert partition["DefCpuPerGPU"] == cpus_per_gpu
            assert int(partition["DefCpuPerGPU"]) * gpus <= (cores - reserved) * threads
        real = profile["memory_gib"] - profile["reserved_memory_gib"] - (64 if reserved else 0)
        assert int(partition["DefMemPerGPU"]) * gpus <= real * 1024


def test_spec_values_win_over_derived_partition_defaults() -> None:
    document = reference()
    document["slurm"]["partitions"][1].update(
        def_cpu_per_gpu=8,
        def_mem_per_gpu_mib=65536,
        default_time="30",
        billing_weights={"cpu": 1, "gpu": 64.5},
    )
    debug = _partitions(document)["debug"]
    assert debug["DefCpuPerGPU"] == "8"
    assert debug["DefMemPerGPU"] == "65536"
    assert debug["DefaultTime"] == "30"
    assert debug["TRESBillingWeights"] == "CPU=1,GRES/gpu=64.5"


def test_def_mem_per_gpu_is_left_to_a_site_default_per_cpu() -> None:
    document = reference()
    document["slurm"]["options"]["DefMemPerCPU"] = 4096
    assert "DefMemPerGPU" not in _partitions(document)["gpu-training"]


def test_billing_needs_accounting() -> None:
    partitions = _partitions(reference("edge-roce-2node"))
    assert "TRESBillingWeights" not in partitions["gpu"]
    assert "PriorityFlags" not in _section_settings(reference("edge-roce-2node"))
    assert _section_settings(reference())["PriorityFlags"] == "MAX_TRES"


def test_default_time_is_an_hour_capped_at_max_time() -> None:
    document = reference()
    document["slurm"]["partitions"][1]["max_time"] = "20"
    partitions = _partitions(document)
    assert partitions["gpu-training"]["DefaultTime"] == "01:00:00"
    assert partitions["debug"]["DefaultTime"] == "00:20:00"


def test_bf_window_covers_the_longest_max_time() -> None:
    document = reference()
    assert _section_settings(document)["SchedulerParameters"] == (
        "bf_window=43200,bf_resolution=1800"  # UNLIMITED: all Slurm allows (30 days)
    )
    document["slurm"]["partitions"][0]["max_time"] = "7-00:00:00"
    assert _section_settings(document)["SchedulerParameters"] == (
        "bf_window=10080,bf_resolution=420"
    )
    document["slurm"]["partitions"][0]["max_time"] = "02:00:00"
    assert _section_settings(document)["SchedulerParameters"] == (
        "bf_window=1440,bf_resolution=60"  # never below Slurm's own day
    )
    document["slurm"]["options"]["SchedulerParameters"] = "bf_window=60"
    settings = [s for s in slurm_of(document).sections if s.title.startswith("Daemons")]
    assert "SchedulerParameters" not in dict(settings[0].settings)


def test_unkillable_step_timeout_follows_message_timeout() -> None:
    document = reference()
    assert _section_settings(document)["UnkillableStepTimeout"] == "180"
    document["slurm"]["options"]["MessageTimeout"] = 60
    assert _section_settings(document)["UnkillableStepTimeout"] == "300"


def test_node_addr_lines_grow_with_address_blocks_not_nodes() -> None:
    document = reference()
    assert "NodeAddr" not in dict(slurm_of(document).nodes[0].settings)
    document["slurm"]["node_addr_from_management"] = True
    document["network"]["management"]["cidr"] = "10.0.0.0/16"
    document["nodes"][0].update(names="gpu[0001-1000]", management_ip="10.0.10.1")
    document["nodes"][0].pop("bmc_ip")
    document["nodes"][0].pop("fabric_ip")
    document["network"]["fabric"]["switches"][0]["nodes"] = "gpu[0001-1000]"
    extra = {**document["nodes"][0], "names": "gpu[1001-1010]", "management_ip": "10.0.40.1"}
    document["nodes"].append(extra)
    document["network"]["fabric"]["switches"][0]["nodes"] = "gpu[0001-1010]"
    document["slurm"]["partitions"] = [{"name": "all", "nodes": "gpu[0001-1010]"}]
    document["racks"] = []
    lines = [(line.names, dict(line.settings)["NodeAddr"]) for line in slurm_of(document).nodes]
    addresses = ",".join(
        ["10.0.10.[1-255]", "10.0.11.[0-255]", "10.0.12.[0-255]", "10.0.13.[0-232]"]
    )
    assert lines == [("gpu[0001-1000]", addresses), ("gpu[1001-1010]", "10.0.40.[1-10]")]


@pytest.mark.parametrize(
    "release",
    ["22.05.8", "23.02.7", "23.11.10", "24.05.8", "24.11.5", "25.05.1", "25.11.0", "26.05.0"],
)
@pytest.mark.parametrize("name", ["ml-training-8node", "edge-roce-2node"])
def test_every_top_level_key_is_live_in_each_supported_slurm(name: str, release: str) -> None:
    document = reference(name)
    document["software"]["slurm"] = release
    document["slurm"]["qos"] = [{"name": "low"}] if "accounting" in document["slurm"] else []
    accepted = accepted_keys(key_list_version(release) or (22, 5))
    keys = [key for section in slurm_of(document).sections for key, _ in section.settings]
    unknown = [key for key in keys if key.lower() not in accepted]
    defunct = [key for key in keys if key.lower() in accepted and accepted[key.lower()].defunct]
    assert (unknown, defunct) == ([], [])


def test_name_ranges_split_at_gaps_and_widths() -> None:
    ranges, plain = name_ranges(["gpu01", "gpu02", "gpu04", "gpu100", "gpu101", "head", "gpu03"])
    assert [(r.prefix, r.width, r.low, r.high) for r in ranges] == [
        ("gpu", 2, 1, 4),
        ("gpu", 3, 100, 101),
    ]
    assert plain == ["head"]


def test_gres_cores_name_whole_sockets() -> None:
    """Slurm co-allocates a GPU with CPUs per socket or NUMA node (gres.conf(5), Cores):
    the topology table's nearest cores (0-13, 14-27, ... on two 56-core sockets) become
    every core of their socket, never a slice of one (issue 39)."""
    document = expand(reference("superpod-rail-128node")).data  # its fabric is a pattern
    cores = {line.files: line.cores for line in slurm_of(document).gres}
    assert cores == {
        **{f"/dev/nvidia{i}": "0-55" for i in range(4)},
        **{f"/dev/nvidia{i}": "56-111" for i in range(4, 8)},
    }
    # Cores that straddle both sockets name both.
    document["hardware"]["hgx-b200"]["topology"]["gpus"][0]["cores"] = "50-60"
    assert slurm_of(document).gres[0].cores == "0-55,56-111"


def test_an_option_is_read_in_any_case_as_slurm_reads_it() -> None:
    from clustergen.model.slurm import Slurm

    slurm = Slurm.model_construct(options={"schedulerTYPE": "sched/builtin", "MessageTimeout": 30})
    assert slurm.option("SchedulerType") == "sched/builtin"
    assert slurm.option("messagetimeout") == "30"
    assert slurm.option("SlurmUser") is None
