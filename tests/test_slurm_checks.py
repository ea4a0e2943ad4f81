"""Slurm settings a spec may give that the daemons would ignore or that refuse jobs:
the backfill window against MaxTime, and per-GPU defaults against the nodes."""

from __future__ import annotations

from typing import Any

import pytest
from ruamel.yaml import YAML

from clustergen.spec.load import LoadedSpec
from clustergen.validate import validate

from support.paths import EXAMPLES

Data = dict[str, Any]


def _edge() -> Data:
    loaded: Data = YAML(typ="safe").load((EXAMPLES / "edge-roce-2node.yaml").read_text())
    return loaded


def _codes(data: Data) -> dict[str, str]:
    problems = validate(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))[1]
    return {p.code.name: p.message for p in problems}


@pytest.mark.parametrize(
    ("max_time", "parameters", "warned"),
    [
        ("7-00:00:00", "bf_continue,bf_window=4320", True),
        ("7-00:00:00", "bf_continue,bf_window=10080", False),
        ("7-00:00:00", "bf_continue", True),  # Slurm's default window: 1440
        ("1-00:00:00", "bf_continue", False),
        ("UNLIMITED", "bf_window=43200", False),
        ("UNLIMITED", "bf_window=20160", True),
        ("7-00:00:00", None, False),  # clustergen's own bf_window covers MaxTime
    ],
)
def test_backfill_window_against_the_longest_max_time(
    max_time: str, parameters: str | None, warned: bool
) -> None:
    data = _edge()
    data["slurm"]["partitions"][0]["max_time"] = max_time
    if parameters is not None:
        data["slurm"]["options"] = {"SchedulerParameters": parameters}
    codes = _codes(data)
    assert ("slurm.backfill-window-short" in codes) == warned
    if parameters == "bf_continue,bf_window=4320":
        message = codes["slurm.backfill-window-short"]
        assert "bf_window=4320 (3 days)" in message
        assert "7-00:00:00 (7 days)" in message
        assert "bf_window=10080" in message


def test_no_backfill_window_without_the_backfill_scheduler() -> None:
    data = _edge()
    data["slurm"]["partitions"][0]["max_time"] = "7-00:00:00"
    data["slurm"]["options"] = {"SchedulerType": "sched/builtin", "SchedulerParameters": "x"}
    assert "slurm.backfill-window-short" not in _codes(data)


def test_per_gpu_defaults_that_fit_every_node_of_the_partition_pass() -> None:
    data = _edge()  # 32 cores x 2 threads, 496 GiB, 4 GPUs
    data["slurm"]["partitions"][0].update(def_cpu_per_gpu=16, def_mem_per_gpu_mib=126976)
    assert "slurm.gpu-defaults-exceed-node" not in _codes(data)
    data["slurm"]["partitions"][0].update(def_cpu_per_gpu=17)
    message = _codes(data)["slurm.gpu-defaults-exceed-node"]
    assert message.startswith("DefCpuPerGPU=17 x 4 GPUs of hardware.l40s-4gpu is 68 CPUs")
    assert message.endswith("at most 16")


def test_per_gpu_defaults_are_held_to_what_the_system_reserve_leaves() -> None:
    data = _edge()
    data["hardware"]["l40s-4gpu"]["system_reserved"] = {"cores": 4, "memory_gib": 16}
    data["slurm"]["partitions"][0].update(def_cpu_per_gpu=16)
    assert "more than the 56 CPUs" in _codes(data)["slurm.gpu-defaults-exceed-node"]
    data["slurm"]["partitions"][0].update(def_cpu_per_gpu=14, def_mem_per_gpu_mib=126976)
    assert "more than the 491520 MiB" in _codes(data)["slurm.gpu-defaults-exceed-node"]


STATE_CODES = ("slurm.state-save-unmounted", "slurm.state-save-not-on-controllers")


@pytest.mark.parametrize(
    ("roles", "path", "found"),
    [
        (["compute", "slurm_controller"], "/srv/slurm/state", None),
        (["compute"], "/srv/slurm/state", "slurm.state-save-not-on-controllers"),
        (["compute"], "/srv/slurmstate", "slurm.state-save-unmounted"),  # not under /srv/slurm
        (["compute"], "/srv/slurm", "slurm.state-save-not-on-controllers"),  # the mount itself
    ],
)
def test_a_shared_state_folder_is_on_a_mount_every_controller_mounts(
    roles: list[str], path: str, found: str | None
) -> None:
    data = YAML(typ="safe").load(
        (EXAMPLES.parent / "tests/invalid/state-save-not-on-controllers.yaml").read_text()
    )
    data["storage"]["nfs"][0]["roles"] = roles
    data["slurm"]["state_save"]["path"] = path
    codes = _codes(data)
    assert [code for code in STATE_CODES if code in codes] == ([found] if found else [])


def test_a_second_node_of_the_slurm_dbd_role_is_refused_only_off_the_accounting_host() -> None:
    data = _edge()
    data["slurm"]["accounting"] = {"host": data["slurm"]["controllers"][0]}
    head = next(group for group in data["nodes"] if "slurm_controller" in group["roles"])
    head["roles"] = [*head["roles"], "slurm_dbd"]
    assert "slurm.dbd-role-elsewhere" not in _codes(data)
    compute = next(group for group in data["nodes"] if "compute" in group["roles"])
    compute["roles"] = [*compute["roles"], "slurm_dbd"]
    assert "slurm.dbd-role-elsewhere" in _codes(data)
