"""The Ansible output family: package pins per OS family, overrides and their checks,
host ranges, and the rendered inventory as ansible-inventory itself reads it."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.plugins.inventory import detect_range, expand_hostname_range
from ruamel.yaml import YAML

from clustergen.base.errors import Problem
from clustergen.catalog.nvidia_packages import driver_branch_packages
from clustergen.catalog.pins import upstream_version
from clustergen.checks import packages as package_checks
from clustergen.checks import software as software_checks
from clustergen.model import Spec
from clustergen.outputs.ansible.files import handler_name
from clustergen.outputs.ansible.inventory import host_patterns
from clustergen.render import render_all
from clustergen.resolve import resolve
from clustergen.spec.long_form import expand

from support.ci import skip_or_fail, tool
from support.paths import EXAMPLES, REFERENCE_SPECS, REPO


def reference(name: str = "ml-training-8node") -> dict[str, Any]:
    loaded: dict[str, Any] = YAML(typ="safe").load((EXAMPLES / f"{name}.yaml").read_text())
    return loaded


def spec_with(name: str = "ml-training-8node", **software: object) -> Spec:
    document = reference(name)
    document["software"].update(software)
    return Spec.model_validate(document)


def problems(spec: Spec) -> list[tuple[str, str]]:
    cluster = resolve(spec, "spec.yaml")
    found = [*package_checks.pins(cluster), *package_checks.groups(cluster)]
    return [(p.severity, p.message) for p in found]


# --- pins per OS family -------------------------------------------------------------


def test_reference_pins_apt() -> None:
    pins = resolve(spec_with(), "spec.yaml").pins.by_concern
    # Every package of the compute-only set, not only the meta package (NVIDIA's version
    # locking), at the revision NVIDIA's CUDA repository for Ubuntu serves them with.
    assert set(pins["nvidia_driver"].values()) == {"550.90.07-0ubuntu1"}
    assert {
        "nvidia-headless-550",
        "libnvidia-compute-550",
        "nvidia-kernel-common-550",
        "nvidia-utils-550",
        "nvidia-compute-utils-550",
        "nvidia-dkms-550",
    } <= set(pins["nvidia_driver"])
    assert all("-550" in name for name in pins["nvidia_driver"])
    # The siblings the set pulls in: the GSP firmware of this exact driver (a package per
    # version, which nvidia-kernel-common depends on) and libnvidia-common, held with it.
    assert {"nvidia-firmware-550-550.90.07", "libnvidia-common-550"} <= set(pins["nvidia_driver"])
    # With DCGM pinned, DCGM's NVSwitch library at the driver's version (NSCQ).
    assert pins["fabric_manager"] == {
        "nvidia-fabricmanager-550": "550.90.07-1",
        "libnvidia-nscq-550": "550.90.07-1",
    }
    assert pins["cuda"] == {"cuda-toolkit-12-4": "12.4.1-1"}
    assert pins["nccl"] == {"libnccl-dev": "2.21.5-1+cuda12.4", "libnccl2": "2.21.5-1+cuda12.4"}
    assert pins["cudnn"] == {
        "libcudnn9-cuda-12": "9.1.0.70-1",
        "libcudnn9-dev-cuda-12": "9.1.0.70-1",
    }
    assert pins["dcgm"] == {"datacenter-gpu-manager": "1:3.3.6"}
    assert pins["slurm_compute"] == dict.fromkeys(
        ["slurm-smd", "slurm-smd-client", "slurm-smd-libpam-slurm-adopt", "slurm-smd-slurmd"],
        "23.11.10-1",
    )
    assert pins["lustre_client"] == {
        "lustre-client-modules-dkms": "2.15.5-1",
        "lustre-client-utils": "2.15.5-1",
    }


def test_dcgms_nvswitch_libraries_follow_the_driver_and_the_nvswitch_generation() -> None:
    """NSCQ where DCGM watches NVSwitch nodes; NVSDM too on fourth-generation NVSwitch
    (software.nvlsm, Blackwell HGX); neither without DCGM; no epoch on EL."""
    document = expand(reference("superpod-rail-128node")).data
    superpod = resolve(Spec.model_validate(document), "spec.yaml").pins.by_concern
    assert {k: v for k, v in superpod["fabric_manager"].items() if k.startswith("lib")} == {
        "libnvidia-nscq-570": "570.124.06-1",
        "libnvsdm-570": "570.124.06-1",
    }
    without = resolve(spec_with(dcgm=None), "spec.yaml").pins.by_concern
    assert without["fabric_manager"] == {"nvidia-fabricmanager-550": "550.90.07-1"}
    rocky = resolve(spec_with(os="rocky-9", slurm="23.11.10"), "spec.yaml").pins.by_concern
    assert rocky["fabric_manager"]["libnvidia-nscq-550"] == "550.90.07-1"


def test_edge_pins_newer_branches() -> None:
    pins = resolve(spec_with("edge-roce-2node"), "spec.yaml").pins.by_concern
    # From 570 the open kernel modules: the module packages carry -open.
    assert {"nvidia-headless-570-open", "nvidia-dkms-570-open"} <= set(pins["nvidia_driver"])
    assert "nvidia-dkms-570" not in pins["nvidia_driver"]
    assert pins["fabric_manager"] == {}
    assert pins["nccl"]["libnccl2"] == "2.26.2-1+cuda12.8"
    assert pins["dcgm"] == {
        "datacenter-gpu-manager-4-core": "1:4.1.1-1",
        "datacenter-gpu-manager-4-cuda12": "1:4.1.1-1",
    }
    assert pins["cudnn"] == {} and pins["lustre_client"] == {}


@pytest.mark.parametrize(
    ("family", "branch", "expected"),
    [
        ("apt", 550, {"nvidia-headless-550", "nvidia-dkms-550", "libnvidia-compute-550"}),
        ("apt", 580, {"nvidia-headless-580-open", "nvidia-dkms-580-open", "nvidia-utils-580"}),
        # From 590 the branch suffix leaves the package names.
        ("apt", 590, {"nvidia-dkms-open", "libnvidia-compute", "nvidia-utils"}),
        # Before 560 EL has no compute-only form of the driver.
        ("dnf", 550, {"kmod-nvidia-latest-dkms", "nvidia-driver", "nvidia-persistenced"}),
        ("dnf", 590, {"kmod-nvidia-open-dkms", "nvidia-driver-cuda", "nvidia-modprobe"}),
    ],
)
def test_driver_branch_packages(family: str, branch: int, expected: set[str]) -> None:
    names = driver_branch_packages(family, branch)  # type: ignore[arg-type]
    assert expected <= set(names)
    assert len(names) == len(set(names))
    if family == "apt" and branch >= 590:
        assert not any(str(branch) in name for name in names)


@pytest.mark.parametrize(
    ("branch", "expected"),
    [
        (570, {"nvidia-driver-cuda", "nvidia-kernel-open-dkms", "firmware-nvidia-gsp"}),
        (580, {"nvidia-driver-cuda", "nvidia-kernel-open-dkms", "nvidia-persistenced"}),
        # Before 560 no compute-only form: the whole driver, and what it only recommends.
        (550, {"nvidia-driver", "nvidia-kernel-dkms", "nvidia-smi", "libcuda1"}),
    ],
)
@pytest.mark.parametrize("os", ["debian-12", "debian-13"])
def test_debian_driver_packages_are_debians_names(os: str, branch: int, expected: set[str]) -> None:
    """NVIDIA's debian12/13 repositories name the driver as Debian does (the driver
    installation guide's Debian chapter): Ubuntu's branch-suffixed names do not exist there."""
    names = driver_branch_packages("apt", branch, os, f"{branch}.10.01")
    assert expected <= set(names)
    assert not [name for name in names if "headless" in name or str(branch) in name]


def test_debian_gpu_nodes_pin_nvidias_debian_revision() -> None:
    spec = spec_with("edge-roce-2node", os="debian-12", slurm="22.05.8")
    driver = resolve(spec, "spec.yaml").pins.by_concern["nvidia_driver"]
    assert driver == dict.fromkeys(
        [
            "firmware-nvidia-gsp",
            "nvidia-driver-cuda",
            "nvidia-kernel-open-dkms",
            "nvidia-persistenced",
        ],
        "570.133.20-1",
    )


# The display side of the driver: an X server driver, OpenGL/Vulkan, frame-buffer capture
# and the video codecs. A cluster's GPU nodes drive no display.
_DESKTOP_PACKAGE = re.compile(
    r"^(xserver-xorg-video-nvidia|libnvidia-gl|libnvidia-fbc1|libnvidia-decode|"
    r"libnvidia-encode|libnvidia-extra|nvidia-driver|nvidia-driver-libs|cuda-drivers|"
    r"nvidia-open)(-\d+)?(-open)?$"
)


@pytest.mark.parametrize(
    ("family", "branch"),
    [
        ("apt", 535),
        ("apt", 550),
        ("apt", 570),
        ("apt", 580),
        ("apt", 590),
        ("dnf", 560),
        ("dnf", 590),
    ],
)
def test_driver_pins_are_compute_only(family: str, branch: int) -> None:
    """Headless GPU nodes get the compute-only set where the repository offers one
    (NVIDIA's driver installation guide, "Compute-only and Desktop Installation")."""
    names = driver_branch_packages(family, branch)  # type: ignore[arg-type]
    assert [name for name in names if _DESKTOP_PACKAGE.match(name)] == []
    assert any(
        name.startswith("libnvidia-compute") or name == "nvidia-driver-cuda-libs" for name in names
    )
    if family == "apt" and branch < 590:
        suffix = "-open" if branch >= 570 else ""
        assert names[0] == f"nvidia-headless-{branch}{suffix}"


def test_rendered_gpu_group_vars_carry_no_x11_packages() -> None:
    cluster = resolve(spec_with(), "spec.yaml")
    driver = cluster.pins.by_concern["nvidia_driver"]
    assert not {"xserver-xorg-video-nvidia-550", "libnvidia-gl-550", "libnvidia-fbc1-550"} & set(
        driver
    )


def test_rocky_pins_dnf() -> None:
    stack = resolve(spec_with(os="rocky-9"), "spec.yaml").pins
    pins = stack.by_concern
    assert stack.family == "dnf"
    assert pins["nccl"] == {"libnccl": "2.21.5-1+cuda12.4", "libnccl-devel": "2.21.5-1+cuda12.4"}
    # NVIDIA's EL driver and FM RPMs carry Epoch 3; NSCQ's spec file sets none.
    assert pins["fabric_manager"] == {
        "nvidia-fabric-manager": "3:550.90.07-1",
        "libnvidia-nscq-550": "550.90.07-1",
    }
    assert set(pins["nvidia_driver"].values()) == {"3:550.90.07-1.el9"}
    assert {"nvidia-driver", "nvidia-driver-cuda-libs", "nvidia-kmod-common"} <= set(
        pins["nvidia_driver"]
    )
    assert {"kmod-nvidia-latest-dkms", "nvidia-persistenced"} <= set(pins["nvidia_driver"])
    assert pins["dcgm"] == {"datacenter-gpu-manager": "1:3.3.6-1"}
    assert pins["slurm_controller"] == {
        "slurm": "23.11.10-1.el9",
        "slurm-slurmctld": "23.11.10-1.el9",
    }


def test_slurm_before_23_11_uses_the_distributions_packages() -> None:
    # Before SchedMD's Debian packaging the default is the distribution's Slurm, pinned at
    # its upstream version whatever the distribution's revision (22.05.8-4+deb12u3).
    pins = resolve(spec_with(os="debian-12", slurm="22.05.8"), "spec.yaml").pins.by_concern
    assert pins["slurm_compute"] == dict.fromkeys(
        ["libpam-slurm-adopt", "slurm-client", "slurmd"], "22.05.8-*"
    )
    assert pins["slurm_controller"] == {"slurm-client": "22.05.8-*", "slurmctld": "22.05.8-*"}
    assert pins["slurm_dbd"] == {"slurmdbd": "22.05.8-*"}


def test_slurm_packages_selects_the_packaging_on_apt() -> None:
    distribution = resolve(
        spec_with(os="ubuntu-24.04", slurm="23.11.4", slurm_packages="distribution"), "spec.yaml"
    ).pins.by_concern
    assert distribution["slurm_compute"] == dict.fromkeys(
        ["libpam-slurm-adopt", "slurm-client", "slurmd"], "23.11.4-*"
    )
    assert distribution["slurm_login"] == {"slurm-client": "23.11.4-*"}
    schedmd = resolve(
        spec_with(os="ubuntu-24.04", slurm="23.11.4", slurm_packages="schedmd"), "spec.yaml"
    ).pins.by_concern
    smd_compute = [
        "slurm-smd",
        "slurm-smd-client",
        "slurm-smd-libpam-slurm-adopt",
        "slurm-smd-slurmd",
    ]
    assert schedmd["slurm_compute"] == dict.fromkeys(smd_compute, "23.11.4-1")
    # Unset, a version from 23.11 on means SchedMD's packages: the reference specs' pins.
    assert resolve(spec_with(slurm="23.11.4"), "spec.yaml").pins.by_concern[
        "slurm_compute"
    ] == dict.fromkeys(smd_compute, "23.11.4-1")


def test_slurm_packages_distribution_on_el_is_epel() -> None:
    pins = resolve(
        spec_with(os="rocky-9", slurm="22.05.9", slurm_packages="distribution"), "spec.yaml"
    ).pins.by_concern
    assert pins["slurm_dbd"] == {"slurm": "22.05.9-*", "slurm-slurmdbd": "22.05.9-*"}


@pytest.mark.parametrize(
    ("os", "slurm", "packaging", "codes"),
    [
        # What each distribution ships (domain facts): its own version is valid.
        ("debian-12", "22.05.8", "distribution", []),
        ("ubuntu-24.04", "23.11.4", "distribution", []),
        ("debian-12", "22.05.8", None, []),
        ("debian-12", "23.11.10", "distribution", ["software.slurm-not-distribution-version"]),
        ("ubuntu-24.04", "24.11.5", "distribution", ["software.slurm-not-distribution-version"]),
        # Unset before 23.11: the distribution's, which on Ubuntu 24.04 is 23.11.4.
        ("ubuntu-24.04", "22.05.8", None, ["software.slurm-not-distribution-version"]),
        # Ubuntu 22.04's 21.08.5 is older than clustergen supports: any 22.05+ differs.
        ("ubuntu-22.04", "22.05.8", None, ["software.slurm-not-distribution-version"]),
        ("ubuntu-22.04", "22.05.8", "schedmd", ["software.slurm-schedmd-apt-too-old"]),
        ("ubuntu-22.04", "23.11.10", "schedmd", []),
        ("rocky-9", "22.05.9", "distribution", ["software.slurm-epel-version-unconfirmed"]),
        # SchedMD's slurm.spec builds every release on EL.
        ("rocky-9", "22.05.9", "schedmd", []),
    ],
)
def test_slurm_packaging_checks(
    os: str, slurm: str, packaging: str | None, codes: list[str]
) -> None:
    # SchedMD's packages come from the site's repository, here the spec's 'cuda' one.
    source = {"slurm_repository": "cuda"} if packaging == "schedmd" else {}
    spec = spec_with(os=os, slurm=slurm, slurm_packages=packaging, **source)
    assert [str(p.code) for p in _packaging_problems(spec)] == codes


def _packaging_problems(spec: Spec) -> list[Problem]:
    """The version checks' problems but SchedMD's end of support (every release of these
    cases is past it on the tests' date; tests/test_slurm_versions.py checks it)."""
    found = software_checks.versions(resolve(spec, "spec.yaml"))
    return [p for p in found if str(p.code) != "software.slurm-end-of-support"]


SITE_SLURM = {"name": "site-slurm", "url": "https://repo.example.org/slurm/"}


@pytest.mark.parametrize(
    ("software", "found"),
    [
        # Any repository at all used to silence the check: the reference spec's is NVIDIA's.
        ({"slurm_packages": "schedmd"}, [("software.slurm-repository-missing", "error")]),
        (
            {"slurm_packages": "schedmd", "repositories": []},
            [("software.slurm-repository-missing", "error")],
        ),
        (
            {"os": "rocky-9", "slurm_packages": "schedmd"},
            [("software.slurm-repository-missing", "error")],
        ),
        # The default (slurm_packages unset) keeps the reference specs valid: a warning.
        ({}, [("software.slurm-schedmd-without-repository", "warning")]),
        ({"os": "rocky-9"}, [("software.slurm-schedmd-without-repository", "warning")]),
        # Named, and a repository of the spec: where the packages come from is said.
        ({"slurm_packages": "schedmd", "slurm_repository": "cuda"}, []),
        ({"slurm_repository": "cuda"}, []),
        (
            {"slurm_repository": "site-slurm", "repositories": [SITE_SLURM]},
            [],
        ),
        (
            {"slurm_packages": "schedmd", "slurm_repository": "site-slurm"},
            [("software.slurm-repository-unknown", "error")],
        ),
        (
            {
                "os": "debian-12",
                "slurm": "22.05.8",
                "slurm_packages": "distribution",
                "slurm_repository": "cuda",
            },
            [("software.slurm-repository-not-schedmd", "error")],
        ),
        ({"os": "debian-12", "slurm": "22.05.8", "slurm_packages": "distribution"}, []),
    ],
)
def test_the_spec_says_where_its_slurm_packages_come_from(
    software: dict[str, Any], found: list[tuple[str, str]]
) -> None:
    spec = spec_with(**software)
    assert [(str(p.code), p.severity) for p in _packaging_problems(spec)] == found


def test_every_derived_version_carries_the_spec_version() -> None:
    spec = spec_with()
    software = spec.software
    wanted = {
        "nvidia_driver": software.nvidia_driver,
        "fabric_manager": software.fabric_manager,
        "cuda": software.cuda,
        "nccl": software.nccl,
        "cudnn": software.cudnn,
        "dcgm": software.dcgm,
        "lustre_client": software.lustre,
    }
    for concern, version in wanted.items():
        for package, pinned in resolve(spec, "spec.yaml").pins.by_concern[concern].items():
            assert upstream_version(pinned) == version, package


# --- software.packages --------------------------------------------------------------


def test_override_replaces_the_derived_version() -> None:
    spec = spec_with(packages={"nvidia-headless-550": "550.90.07-0ubuntu2"})
    driver = resolve(spec, "spec.yaml").pins.by_concern["nvidia_driver"]
    assert driver["nvidia-headless-550"] == "550.90.07-0ubuntu2"
    assert driver["nvidia-utils-550"] == "550.90.07-0ubuntu1"
    assert problems(spec) == []


def test_nccl_override_for_another_cuda_is_an_error() -> None:
    spec = spec_with(packages={"libnccl2": "2.21.5-1+cuda12.2"})
    assert problems(spec) == [
        (
            "error",
            "NCCL package 2.21.5-1+cuda12.2 is built for CUDA 12.2, but the pinned CUDA is "
            "12.4.1; it must end in +cuda12.4",
        )
    ]


def test_nccl_override_without_cuda_tag_is_an_error() -> None:
    ((severity, message),) = problems(spec_with(packages={"libnccl-dev": "2.21.5-1"}))
    assert severity == "error" and "has no +cudaX.Y build tag" in message


def test_override_with_another_version_is_an_error() -> None:
    ((severity, message),) = problems(spec_with(packages={"cuda-toolkit-12-4": "12.4.0-1"}))
    assert severity == "error"
    assert message == (
        "cuda-toolkit-12-4 12.4.0-1 is version 12.4.0, but the spec pins 12.4.1; an override "
        "may only add the repository's revision"
    )


def test_override_of_unknown_package_suggests_the_pinned_one() -> None:
    ((severity, message),) = problems(spec_with(packages={"libnccl": "2.21.5-1+cuda12.4"}))
    assert severity == "error"
    assert message.startswith("'libnccl' is not one of the packages pinned for ubuntu-22.04")
    assert "did you mean 'libnccl2'?" in message or "did you mean 'libnccl-dev'?" in message


def test_cudnn8_without_override_warns() -> None:
    ((severity, message),) = problems(spec_with(cudnn="8.9.7.29"))
    assert severity == "warning"
    assert "libcudnn8, libcudnn8-dev" in message
    spec = spec_with(
        cudnn="8.9.7.29",
        packages={"libcudnn8": "8.9.7.29-1+cuda12.2", "libcudnn8-dev": "8.9.7.29-1+cuda12.2"},
    )
    assert problems(spec) == []


def test_profile_name_that_collides_with_a_group_is_an_error() -> None:
    document = reference()
    document["hardware"]["hgx_h100"] = document["hardware"]["hgx-h100"]
    ((severity, message),) = problems(Spec.model_validate(document))
    assert severity == "error"
    assert "becomes Ansible group 'hw_hgx_h100'" in message


# --- host ranges --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("names", "patterns"),
    [
        ([f"gpu{n:02d}" for n in range(1, 9)], ["gpu[01:08]"]),
        (["gpu9", "gpu10", "gpu11"], ["gpu[9:11]"]),
        (["gpu08", "gpu09", "gpu10"], ["gpu[08:10]"]),
        (["gpu098", "gpu099", "gpu100"], ["gpu[098:100]"]),
        (["gpu99", "gpu100"], ["gpu[99:100]"]),
        (["gpu09", "gpu10", "gpu100"], ["gpu[09:10]", "gpu100"]),
        (["n1", "n3", "n4"], ["n1", "n[3:4]"]),
        (["r1n01", "r1n02", "r2n01"], ["r1n[01:02]", "r2n01"]),
        (["head", "login-a"], ["head", "login-a"]),
    ],
)
def test_host_patterns_expand_back_to_the_names(names: list[str], patterns: list[str]) -> None:
    assert host_patterns(names) == patterns
    # Ansible's own range expansion, as its INI and YAML inventory plugins use it.
    expanded = [expand_hostname_range(p) if detect_range(p) else [p] for p in patterns]
    assert [host for hosts in expanded for host in hosts] == names


# --- the rendered inventory, read by Ansible ----------------------------------------


def _ansible_inventory(inventory: Path, *args: str) -> Any:
    inventory_tool = tool("ansible-inventory")
    if inventory_tool is None:
        skip_or_fail("needs ansible-inventory")
    out = subprocess.run(
        [inventory_tool, "-i", str(inventory), *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out)


def test_a_node_carries_only_its_own_files_and_addresses() -> None:
    """Install entries meant for some nodes (a Lustre target's, a node's network files)
    are in those nodes' host_vars, never in a group list every member loads; a group's
    list is files/<group>.yml, no inventory variable; the /etc/hosts list is one rendered
    file, not a loop over every host's variables."""
    spec = spec_with()
    cluster = resolve(spec, "spec.yaml")
    files = render_all(cluster)
    lists = {p: yaml.safe_load(a.text) for p, a in files.items() if p.startswith("files/")}
    assert {"files/groups/compute.yml", "files/groups/slurm.yml", "files/hosts/oss01.yml"} <= set(
        lists
    )
    for path, entries in lists.items():
        assert entries and not [e for e in entries if "hosts" in e or "{{" in e["src"]], path
    for path, artifact in files.items():
        if path.startswith(("inventory/group_vars/", "inventory/host_vars/")):
            names = yaml.safe_load(artifact.text)
            assert not [n for n in names if n.startswith("clustergen_files_")], path
    own = {
        name: yaml.safe_load(files[f"inventory/host_vars/{name}.yml"].text)
        for name in ("oss01", "oss02", "mds01", "gpu01")
    }
    dests = {name: [e["dest"] for e in lists[f"files/hosts/{name}.yml"]] for name in own}
    assert "/usr/local/sbin/lustre-format-training-ost0000" in dests["oss01"]
    assert not [d for d in dests["oss02"] if "ost0000" in d or "ost0001" in d]
    assert not [d for d in dests["gpu01"] if "lustre" in d]
    assert "/usr/local/sbin/lustre-format-mgs" in dests["mds01"]
    assert own["gpu01"]["ansible_host"] == own["gpu01"]["clustergen_address"] == "10.0.1.11"
    listed = files["inventory/etc-hosts.txt"].text.splitlines()
    addresses = [line for line in listed if not line.startswith("#")]
    by_name = sorted(cluster.hosts, key=lambda host: host.name)
    assert addresses == [f"{host.management_ip} {host.name}" for host in by_name]
    assert addresses[-1] == "10.0.1.2 slurm-head"


@pytest.mark.parametrize("spec_path", REFERENCE_SPECS, ids=lambda p: p.stem)
def test_inventory_as_ansible_reads_it(spec_path: Path, tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    assert cli("render", str(spec_path), "-o", str(tmp_path)).code == 0
    spec = Spec.model_validate(expand(YAML(typ="safe").load(spec_path.read_text())).data)
    hosts = resolve(spec, spec_path.name).hosts
    listing = _ansible_inventory(tmp_path / "inventory", "--list")
    hostvars = listing["_meta"]["hostvars"]
    assert {h.name: hostvars[h.name]["ansible_host"] for h in hosts} == {
        h.name: h.management_ip for h in hosts
    }
    lock = yaml.safe_load((tmp_path / "versions.lock").read_text())
    for host in hosts:
        # The role variables a node gets add up to exactly what the lock gives its groups.
        variables = hostvars[host.name]
        from_vars: dict[str, str] = {}
        for name, value in variables.items():
            if name.endswith("_packages") and isinstance(value, dict):
                from_vars.update(value)
        groups = {g for g, entry in listing.items() if host.name in _members(listing, g)}
        from_lock: dict[str, str] = {}
        for group in groups & set(lock["groups"]):
            from_lock.update(lock["groups"][group]["packages"])
        assert from_vars == from_lock, host.name
        for role in host.roles:
            assert role in groups
        assert f"hw_{host.hardware_name.replace('-', '_')}" in groups
        _check_gathered_files(tmp_path, host.name, groups, variables)


def _check_gathered_files(
    tree: Path, host: str, groups: set[str], variables: dict[str, Any]
) -> None:
    """A host's variables carry no file list (its groups' are files/groups/<group>.yml, outside
    the inventory, as are the node's own in files/hosts/<node>.yml); what clustergen_files
    gathers names files of the tree, with the sha256 the converge check compares."""
    assert not [n for n in variables if n.startswith("clustergen_files_")]
    lists = [tree / "files" / "groups" / f"{group}.yml" for group in sorted(groups)]
    lists.append(tree / "files" / "hosts" / f"{host}.yml")
    entries = [e for path in lists if path.exists() for e in yaml.safe_load(path.read_text())]
    assert entries
    for entry in entries:
        if "sha256" in entry:
            text = (tree / entry["src"]).read_bytes()
            assert hashlib.sha256(text).hexdigest() == entry["sha256"], entry["src"]


def _members(listing: dict[str, Any], group: str) -> set[str]:
    entry = listing.get(group, {})
    names = set(entry.get("hosts", []))
    for child in entry.get("children", []):
        names |= _members(listing, child)
    return names


def test_ml_training_groups() -> None:
    spec = spec_with()
    members = resolve(spec, "spec.yaml").members
    assert members["nvidia_gpu"] == members["nvswitch"] == members["compute"]
    assert members["slurm"] == members["compute"] | {"slurm-head"}
    assert members["lustre_client"] == members["compute"] | {"slurm-head"}
    assert members["lustre_oss"] == {"oss01", "oss02", "oss03", "oss04"}


def test_rendered_files_hold_only_a_reference_to_the_database_password(tmp_path: Path) -> None:
    document = reference()
    document["slurm"]["accounting"]["database"] = {"password_variable": "vault_site_db_pass"}
    spec = Spec.model_validate(document)
    files = render_all(resolve(spec, "spec.yaml"))
    (entry,) = yaml.safe_load(files["files/groups/slurm_dbd.yml"].text)
    assert entry["dest"] == "/etc/slurm/slurmdbd.conf"
    assert (entry["secret_key"], entry["secret_variable"]) == ("StoragePass", "vault_site_db_pass")
    assert (entry["owner"], entry["mode"], entry["notify"]) == ("slurm", "0600", "Restart slurmdbd")
    lines = files["slurm/slurmdbd.conf"].text.splitlines()
    assert not [line for line in lines if line.startswith("StoragePass")]


def test_render_is_byte_stable_and_sorted() -> None:
    first = render_all(resolve(spec_with(), "spec.yaml"))
    second = render_all(resolve(spec_with(), "spec.yaml"))
    assert {p: f.text for p, f in first.items()} == {p: f.text for p, f in second.items()}
    lock = yaml.safe_load(first["versions.lock"].text)
    assert list(lock["groups"]) == sorted(lock["groups"])
    for group in lock["groups"].values():
        assert list(group["packages"]) == sorted(group["packages"])


@pytest.mark.parametrize("spec_path", REFERENCE_SPECS, ids=lambda p: p.stem)
def test_every_installed_file_notifies_a_handler_its_family_role_defines(spec_path: Path) -> None:
    """A family declares what a change to each file needs; the handler that does it
    must exist in the role that installs the family's files, or Ansible stops."""
    roles = REPO / "roles"
    handlers: dict[str, set[str]] = {}
    installs_family: dict[str, str] = {}
    for role in roles.iterdir():
        handler_file = role / "handlers" / "main.yml"
        if handler_file.exists():
            handlers[role.name] = {h["name"] for h in yaml.safe_load(handler_file.read_text())}
        for tasks in (role / "tasks").glob("*.yml"):
            for task in yaml.safe_load(tasks.read_text()) or []:
                include = task.get("ansible.builtin.include_role", {})
                if include.get("name") == "rendered_files":
                    installs_family[task["vars"]["rendered_files_family"]] = role.name
    spec = Spec.model_validate(expand(YAML(typ="safe").load(spec_path.read_text())).data)
    rendered = render_all(resolve(spec, spec_path.name))
    installed = [a for a in rendered.values() if a.install is not None]
    assert installed
    for artifact in installed:
        family = artifact.path.split("/")[0]
        role = installs_family.get(family)
        assert role is not None, f"no role includes rendered_files for family {family}"
        assert artifact.install is not None
        handler = handler_name(artifact.install)
        assert handler is None or handler in handlers.get(role, set()), (
            f"{artifact.path} notifies {handler!r}, which role {role} does not define"
        )


# --- repositories and their keys (issue 21) ---------------------------------------------


def _repositories_in_group_vars(spec: Spec) -> list[dict[str, Any]]:
    files = render_all(resolve(spec, "spec.yaml"))
    variables = yaml.safe_load(files["inventory/group_vars/all.yml"].text)
    entries: list[dict[str, Any]] = variables["repositories_list"]
    return entries


def test_repositories_reach_the_role_with_their_checked_key_or_trusted() -> None:
    """The fingerprint reaches the role as 40 uppercase digits whatever the spec's
    spacing; only a trusted repository without a key is passed as trusted."""
    spaced = "eb69 3b30 35cd 5710 e231  e123 a4b4 6996 3bf8 63cc"
    spec = spec_with(
        repositories=[
            {
                "name": "site",
                "url": "https://repo.example.org/site/",
                "key_url": "https://repo.example.org/site/key.asc",
                "key_fingerprint": spaced,
                "suite": "jammy",
                "components": ["main"],
            },
            {"name": "local", "url": "file:///srv/repo", "suite": "./", "trusted": True},
        ]
    )
    site, local = _repositories_in_group_vars(spec)
    assert site["key_fingerprint"] == spaced.replace(" ", "").upper()
    assert "trusted" not in site
    assert local == {
        "name": "local",
        "url": "file:///srv/repo",
        "suite": "./",
        "components": [],
        "trusted": True,
    }
