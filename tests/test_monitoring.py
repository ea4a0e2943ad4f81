"""monitoring: (docs/monitoring.md): what each exporter installs and where it listens, the
scrape targets, slurm.conf's metrics keys per Slurm release, and nothing at all without
the section or an exporter's key. The booted test proves node_exporter answers
(tests/test_booted_cluster.py); slurmctld's endpoints are proven in test_real_slurm_releases."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from clustergen.catalog.slurm_keys import accepted_keys, key_list_version
from clustergen.render import render_all
from clustergen.spec.load import LoadedSpec
from clustergen.validate import validate_cluster

from support.specs import Data, example_data, validated

EXPORTER_GROUPS = ("node_exporter", "dcgm_exporter", "slurm_exporter")


def _edge(monitoring: Any = None, **software: str) -> Data:
    """The edge example (Ubuntu 24.04, DCGM 4.1.1, Slurm 24.11.5, lab1-2 GPU nodes and
    lab-head), with the given monitoring section and software versions."""
    data = example_data("edge-roce-2node")
    data["software"].update(software)
    if monitoring is not None:
        data["monitoring"] = copy.deepcopy(monitoring)
    return data


def _codes(data: Data) -> list[str]:
    """The codes of the errors validate reports for `data`."""
    _, problems = validate_cluster(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))
    return [p.code.name for p in problems if p.severity == "error"]


def _slurm_conf_keys(tree: dict[str, Any]) -> dict[str, str]:
    lines = tree["slurm/slurm.conf"].text.splitlines()
    pairs = (line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))
    return {key: value for key, value in pairs if key.startswith("Metrics")}


@pytest.mark.parametrize("monitoring", [None, {}])
def test_nothing_is_installed_without_an_exporters_key(monitoring: Any) -> None:
    """No section, or an empty one: no exporter group, pin, file or slurm.conf key; the
    empty section renders an empty target list (a file Prometheus reads as no targets)."""
    cluster, _ = validated(_edge(monitoring))
    tree = render_all(cluster)
    assert not set(EXPORTER_GROUPS) & set(cluster.members)
    assert not any(cluster.pins.by_concern[g] for g in EXPORTER_GROUPS)
    lock = yaml.safe_load(tree["versions.lock"].text)["groups"]
    assert not set(EXPORTER_GROUPS) & set(lock)
    assert _slurm_conf_keys(tree) == {}
    listen_files = [p for p in tree if p.startswith("monitoring/") and p.count("/") == 2]
    assert listen_files == []
    if monitoring is None:
        assert "monitoring/prometheus-targets.yml" not in tree
    else:
        assert yaml.safe_load(tree["monitoring/prometheus-targets.yml"].text) == []


def test_each_exporter_on_its_nodes_pinned_and_listening_on_the_management_address() -> None:
    """node_exporter on every node, dcgm-exporter on the GPU nodes at the exporter NVIDIA
    paired with DCGM 4.1.1, the Slurm exporter on the controller (Slurm 24.11 has no
    metrics of its own); each drop-in binds the node's management address, and the
    targets file lists exactly those endpoints."""
    cluster, _ = validated(
        _edge(
            {
                "node_exporter": {"version": "1.7.0"},
                "dcgm_exporter": {},
                "slurm": {"version": "0.20-2"},
            }
        )
    )
    tree = render_all(cluster)
    assert cluster.members["node_exporter"] == {"lab1", "lab2", "lab-head"}
    assert cluster.members["dcgm_exporter"] == {"lab1", "lab2"}
    assert cluster.members["slurm_exporter"] == set(cluster.controllers)
    assert cluster.pins.by_concern["node_exporter"] == {"prometheus-node-exporter": "1.7.0-*"}
    assert cluster.pins.by_concern["dcgm_exporter"] == {
        "datacenter-gpu-manager-exporter": "4.0.4-1"
    }
    assert cluster.pins.by_concern["slurm_exporter"] == {"prometheus-slurm-exporter": "0.20-2"}
    ip = {h.name: h.management_ip for h in cluster.hosts}
    node = tree["monitoring/lab1/prometheus-node-exporter.conf"].text
    assert (
        f"ExecStart=/usr/bin/prometheus-node-exporter $ARGS --web.listen-address={ip['lab1']}:9100"
        in node.splitlines()
    )
    dcgm = tree["monitoring/lab1/nvidia-dcgm-exporter.conf"].text.splitlines()
    assert f"Environment=DCGM_EXPORTER_LISTEN={ip['lab1']}:9400" in dcgm
    assert "Environment=DCGM_REMOTE_HOSTENGINE_INFO=localhost:5555" in dcgm
    head = cluster.controllers[0]
    unit = tree[f"monitoring/{head}/prometheus-slurm-exporter.service"].text.splitlines()
    assert f"ExecStart=/usr/bin/prometheus-slurm-exporter -listen-address {ip[head]}:8080" in unit
    assert "User=slurm" in unit
    assert "monitoring/lab-head/nvidia-dcgm-exporter.conf" not in tree  # no GPUs
    targets = yaml.safe_load(tree["monitoring/prometheus-targets.yml"].text)
    listed = {(t["labels"]["exporter"], t["labels"]["node"]): t["targets"] for t in targets}
    assert listed == {
        **{("node_exporter", n): [f"{ip[n]}:9100"] for n in ("lab1", "lab2", "lab-head")},
        **{("dcgm_exporter", n): [f"{ip[n]}:9400"] for n in ("lab1", "lab2")},
        ("slurm_exporter", head): [f"{ip[head]}:8080"],
    }
    assert {t["labels"]["__metrics_path__"] for t in targets} == {"/metrics"}
    assert _slurm_conf_keys(tree) == {}


def test_listen_all_and_the_el_package() -> None:
    """listen: all binds every address (the targets still name the management address);
    on EL node_exporter is the site repository's node_exporter package and unit."""
    data = _edge({"listen": "all", "node_exporter": {"version": "1.8.2", "port": 9101}})
    data["software"].update(os="rocky-9", slurm_packages="distribution")
    cluster, _ = validated(data)
    tree = render_all(cluster)
    assert cluster.pins.by_concern["node_exporter"] == {"node_exporter": "1.8.2-*"}
    drop_in = tree["monitoring/lab1/node_exporter.conf"]
    assert drop_in.install is not None
    assert (
        drop_in.install.dest == "/etc/systemd/system/node_exporter.service.d/clustergen-listen.conf"
    )
    assert (
        "ExecStart=/usr/bin/node_exporter --web.listen-address=:9101" in drop_in.text.splitlines()
    )
    targets = yaml.safe_load(tree["monitoring/prometheus-targets.yml"].text)
    lab1 = next(h.management_ip for h in cluster.hosts if h.name == "lab1")
    assert [f"{lab1}:9101"] in [t["targets"] for t in targets]


def test_private_metrics_need_the_scraper_named() -> None:
    """26.05 with PrivateData: slurmctld's metrics are private only with MetricsAuthUsers,
    so without auth_users validate refuses, and the option that would open them to anyone
    is refused while private_data is on."""
    data = _edge({"slurm": {"kind": "openmetrics"}}, slurm="26.05.1")
    assert _codes(data) == ["monitoring.slurm-metrics-unauthenticated"]
    data["monitoring"]["slurm"]["auth_users"] = ["prometheus"]
    data["slurm"].setdefault("options", {})["MetricsParameters"] = "ignore_private_data"
    assert _codes(data) == ["slurm.option-weakens-security"]
    data["slurm"].setdefault("isolation", {})["private_data"] = False
    assert _codes(data) == []


@pytest.mark.parametrize(
    ("slurm", "private", "expected"),
    [
        ("24.11.5", False, None),  # no metrics before 25.11: the exporter instead
        ("25.11.2", False, {"MetricsType": "metrics/openmetrics"}),
        ("25.11.2", True, None),  # 401 while PrivateData is set: the exporter instead
        (
            "26.05.1",
            True,
            {"MetricsType": "metrics/openmetrics", "MetricsAuthUsers": "prometheus"},
        ),
        ("26.05.1", False, {"MetricsType": "metrics/openmetrics"}),
    ],
)
def test_slurmctld_metrics_only_where_the_release_serves_them(
    slurm: str, private: bool, expected: dict[str, str] | None
) -> None:
    """monitoring.slurm's default kind per release: slurm.conf gets the metrics keys only
    where slurmctld serves them to Prometheus, each key in that release's key list
    (catalog/slurm_keys), and the targets name slurmctld's port and paths; elsewhere the
    exporter's version is asked for."""
    data = _edge({"slurm": {"version": "0.20-2", "auth_users": ["prometheus"]}}, slurm=slurm)
    data["slurm"].setdefault("isolation", {})["private_data"] = private
    cluster, _ = validated(data)
    tree = render_all(cluster)
    keys = _slurm_conf_keys(tree)
    targets = yaml.safe_load(tree["monitoring/prometheus-targets.yml"].text)
    if expected is None:
        assert keys == {}
        assert cluster.members["slurm_exporter"] == set(cluster.controllers)
        assert {t["labels"]["exporter"] for t in targets} == {"slurm_exporter"}
        return
    assert keys == expected
    release = key_list_version(slurm)
    assert release is not None
    assert all(key.lower() in accepted_keys(release) for key in keys), (release, keys)
    assert "slurm_exporter" not in cluster.members
    head = next(h.management_ip for h in cluster.hosts if h.name == cluster.controllers[0])
    assert sorted((t["targets"][0], t["labels"]["__metrics_path__"]) for t in targets) == [
        (f"{head}:6817", f"/metrics/{p}") for p in ("jobs", "nodes", "partitions", "scheduler")
    ]
