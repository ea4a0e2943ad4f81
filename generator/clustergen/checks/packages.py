"""Package pins: software.packages overrides that cannot be right, and the inventory groups
that carry the pins to the nodes.

An override exists to give the exact revision a repository uses; it may not name a
package the stack does not install, nor carry a different version than the spec pins.
"""

from __future__ import annotations

import re

from clustergen.base import codes
from clustergen.base.errors import Problem
from clustergen.base.suggest import did_you_mean
from clustergen.catalog.architectures import ARCH_GROUPS
from clustergen.catalog.groups import DERIVED_GROUPS, hardware_group, role_group
from clustergen.catalog.nvidia_packages import cuda_suffix
from clustergen.catalog.packages import StackPins, pinned_upstream
from clustergen.catalog.pins import upstream_version
from clustergen.catalog.versions import parse_version
from clustergen.model import Spec
from clustergen.model.nodes import KNOWN_ROLES
from clustergen.resolve import ResolvedCluster

_NCCL_PACKAGES = frozenset({"libnccl2", "libnccl-dev", "libnccl", "libnccl-devel"})
_CUDA_TAG = re.compile(r"\+cuda(\d+\.\d+)")
# Debian and RPM version strings: optional epoch, then no whitespace.
_PACKAGE_VERSION = re.compile(r"^(\d+:)?[0-9][A-Za-z0-9.+~_-]*$")


def pins(cluster: ResolvedCluster) -> list[Problem]:
    derived = cluster.derived_pins
    return [*_overrides(cluster.spec, derived), *_cudnn8_suffix(cluster.spec, derived)]


def groups(cluster: ResolvedCluster) -> list[Problem]:
    spec = cluster.spec
    return _group_names(spec)


def zfs(cluster: ResolvedCluster) -> list[Problem]:
    """The servers of zfs targets get OpenZFS, pinned at software.zfs."""
    spec = cluster.spec
    lustre = spec.storage.lustre if spec.storage else None
    if lustre is None or spec.software.lustre is None or spec.software.zfs is not None:
        return []
    on_zfs = [t for t in lustre.targets() if lustre.backend_of(t) == "zfs"]
    if not on_zfs:
        return []
    servers = sorted({name for t in on_zfs for name in (t.node, *t.failover)})
    return [
        Problem(
            codes.PACKAGES_ZFS_VERSION_MISSING,
            ("software",),
            f"zfs is required: {len(on_zfs)} Lustre target(s) use the zfs backend, so their "
            f"servers ({', '.join(servers)}) get OpenZFS; set it to the version the Lustre "
            "server packages are built against, e.g. zfs: 2.1.11",
            at="key",
        )
    ]


def _overrides(spec: Spec, derived: StackPins) -> list[Problem]:
    software = spec.software
    expected = pinned_upstream(derived)
    problems = []
    for name, version in software.packages.items():
        path = ("software", "packages", name)
        if name not in expected:
            problems.append(
                Problem(
                    codes.PACKAGES_UNKNOWN_NAME,
                    path,
                    f"'{name}' is not one of the packages pinned for {software.os}"
                    f"{did_you_mean(name, expected)}; software.packages only sets versions of "
                    f"those ({', '.join(sorted(expected))})",
                    at="key",
                )
            )
            continue
        if not _PACKAGE_VERSION.match(version):
            problems.append(
                Problem(
                    codes.PACKAGES_MALFORMED_VERSION,
                    path,
                    f"'{version}' is not a package version string",
                )
            )
            continue
        if name in _NCCL_PACKAGES:
            problems.extend(_nccl_suffix(spec, path, version))
        if upstream_version(version) != expected[name]:
            problems.append(
                Problem(
                    codes.PACKAGES_VERSION_DISAGREES,
                    path,
                    f"{name} {version} is version {upstream_version(version)}, but the spec pins "
                    f"{expected[name]}; an override may only add the repository's revision",
                )
            )
    return problems


def _nccl_suffix(spec: Spec, path: tuple[str, ...], version: str) -> list[Problem]:
    wanted = cuda_suffix(spec.software.cuda)
    tags = _CUDA_TAG.findall(version)
    if tags == [wanted.removeprefix("+cuda")]:
        return []
    found = f"is built for CUDA {tags[0]}" if tags else "has no +cudaX.Y build tag"
    return [
        Problem(
            codes.PACKAGES_NCCL_CUDA_SUFFIX,
            path,
            f"NCCL package {version} {found}, but the pinned CUDA is {spec.software.cuda}; "
            f"it must end in {wanted}",
        )
    ]


def _cudnn8_suffix(spec: Spec, pins: StackPins) -> list[Problem]:
    software = spec.software
    if software.cudnn is None or parse_version(software.cudnn)[0] >= 9:
        return []
    derived = pins.by_concern["cudnn"]
    unset = sorted(name for name in derived if name not in software.packages)
    if not unset:
        return []
    return [
        Problem(
            codes.PACKAGES_CUDNN8_CUDA_SUFFIX,
            ("software", "cudnn"),
            f"cuDNN {software.cudnn} packages carry the CUDA version they were built with, "
            f"which need not be {software.cuda}; clustergen assumed "
            f"{derived[unset[0]]} - set the exact version of {', '.join(unset)} in "
            "software.packages",
        )
    ]


def _group_names(spec: Spec) -> list[Problem]:
    """Two spec names that become one Ansible group would merge their pins silently."""
    taken: dict[str, str] = {
        group: "a group clustergen derives" for group in (*DERIVED_GROUPS, *ARCH_GROUPS)
    }
    taken.update({role_group(role): f"role {role}" for role in KNOWN_ROLES})
    problems = []
    named: list[tuple[tuple[str | int, ...], str, str]] = [
        (("cluster", "extra_roles", index), role_group(role), f"role {role}")
        for index, role in enumerate(spec.cluster.extra_roles)
    ]
    named += [
        (("hardware", name), hardware_group(name), f"hardware {name}") for name in spec.hardware
    ]
    for path, group, what in named:
        if group in taken and taken[group] != what:
            problems.append(
                Problem(
                    codes.PACKAGES_GROUP_NAME_CLASH,
                    path,
                    f"{what} becomes Ansible group '{group}', which is already "
                    f"{taken[group]}; rename it",
                    at="key" if path[0] == "hardware" else "value",
                )
            )
        taken.setdefault(group, what)
    return problems
