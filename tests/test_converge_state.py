"""The converge check that lets a no-op site.yml run skip converged nodes.

The release stamp (clustergen_release in group_vars/all.yml) must change with
everything site.yml applies and with nothing else; the check script
(roles/clustergen_state/files/state-check) must call a node current only when it
matches its recorded state. The script runs here as on a node, on real files and
the real dpkg database; the booted test (tests/test_booted_cluster.py) runs it
through site.yml.
"""

from __future__ import annotations

import grp
import hashlib
import json
import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from clustergen.outputs.ansible import release_stamp
from clustergen.render import render_all
from clustergen.spec.load import load_spec
from clustergen.validate import validate_cluster

from support.ci import skip_or_fail
from support.paths import EXAMPLES, REPO

SPEC = EXAMPLES / "ml-training-8node.yaml"
SCRIPT = REPO / "roles" / "clustergen_state" / "files" / "state-check"
RELEASE = "a" * 64


def _stamps(spec_text: str, tmp_path: Path) -> tuple[str, str]:
    """The release and its base (the release less the rendered files and their lists)."""
    path = tmp_path / SPEC.name
    path.write_text(spec_text, encoding="utf-8")
    cluster, problems = validate_cluster(load_spec(str(path)))
    assert cluster is not None, [p.format() for p in problems]
    all_vars = yaml.safe_load(render_all(cluster)["inventory/group_vars/all.yml"].text)
    return str(all_vars["clustergen_release"]), str(all_vars["clustergen_release_base"])


def _release(spec_text: str, tmp_path: Path) -> str:
    return _stamps(spec_text, tmp_path)[0]


def _edited(old: str, new: str) -> str:
    text = SPEC.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    return text.replace(old, new)


def test_release_is_byte_stable_and_covers_what_site_yml_applies(tmp_path: Path) -> None:
    release = _release(SPEC.read_text(encoding="utf-8"), tmp_path)
    assert release == _release(SPEC.read_text(encoding="utf-8"), tmp_path)
    # A partition's MaxTime is in slurm.conf, which every Slurm node receives.
    max_time = _edited('max_time: "01:00:00"', 'max_time: "02:00:00"')
    assert _release(max_time, tmp_path) != release
    # A rack's PDU feeds only the facility sheets, which no node receives.
    facility = _edited("r01-pdu-a, feed: A, volts: 415", "r01-pdu-a, feed: A, volts: 400")
    assert _release(facility, tmp_path) == release


def test_the_base_changes_with_everything_but_the_rendered_files_and_the_pins(
    tmp_path: Path,
) -> None:
    """A MaxTime edit changes slurm.conf alone, an NCCL or driver bump only pins (the
    driver's package names, version and sibling records too), Slurm-driven reboots the
    driver's pins and Slurm's files: the release moves, its base
    does not, so a node converges only the plays of the families concerned. Any other
    group variable moves both: the cluster's domain."""
    release, base = _stamps(SPEC.read_text(encoding="utf-8"), tmp_path)
    max_time = _stamps(_edited('max_time: "01:00:00"', 'max_time: "02:00:00"'), tmp_path)
    assert max_time[0] != release and max_time[1] == base
    nccl = _stamps(_edited("nccl: 2.21.5", "nccl: 2.23.4"), tmp_path)
    assert nccl[0] != release and nccl[1] == base
    text = SPEC.read_text(encoding="utf-8").replace("550.90.07", "550.127.05")
    driver = _stamps(text, tmp_path)
    assert driver[0] != release and driver[1] == base
    # slurm.reboot's mode: only the driver's plan reads it, so it counts with its pins.
    mode = ("slurm:\n  controllers:", "slurm:\n  reboot: {mode: slurm}\n  controllers:")
    slurm_mode = _stamps(_edited(*mode), tmp_path)
    assert slurm_mode[0] != release and slurm_mode[1] == base
    moved = _stamps(_edited("domain: hpc.example.org", "domain: hpc.example.net"), tmp_path)
    assert moved[0] != release and moved[1] != base


def test_all_yml_names_the_family_of_each_concern_of_the_cluster(tmp_path: Path) -> None:
    """clustergen_pins: the concerns of groups with nodes (no IMEX without NVLink trays),
    each with the family whose plays install it alone and its pin variables."""
    path = tmp_path / SPEC.name
    path.write_text(SPEC.read_text(encoding="utf-8"), encoding="utf-8")
    cluster, problems = validate_cluster(load_spec(str(path)))
    assert cluster is not None, [p.format() for p in problems]
    all_vars = yaml.safe_load(render_all(cluster)["inventory/group_vars/all.yml"].text)
    pins = {entry["concern"]: entry for entry in json.loads(all_vars["clustergen_pins"])}
    assert "imex" not in pins
    assert pins["nvidia_driver"] == {
        "concern": "nvidia_driver",
        "family": "nccl",
        "variables": [
            "clustergen_reboot_mode",
            "nvidia_driver_packages",
            "nvidia_driver_siblings",
            "nvidia_driver_version",
        ],
    }
    assert pins["slurm_compute"]["family"] == "slurm"
    assert pins["rdma"]["family"] == ""


def test_release_digest_separates_paths_from_text() -> None:
    from clustergen.base.artifacts import Artifact

    assert release_stamp([Artifact("a", "bc")]) != release_stamp([Artifact("ab", "c")])
    assert release_stamp([Artifact("a", "x", mode=0o755)]) != release_stamp([Artifact("a", "x")])


# --- the check script ---------------------------------------------------------------


def _owner() -> tuple[str, str]:
    return pwd.getpwuid(os.getuid()).pw_name, grp.getgrgid(os.getgid()).gr_name


def _state(tmp_path: Path, **overrides: object) -> dict[str, object]:
    config = tmp_path / "node.conf"
    config.write_text("Key=value\n")
    config.chmod(0o644)
    secret = tmp_path / "secret.conf"
    secret.write_text("Key=value\nPass=hunter2\n")
    secret.chmod(0o600)
    owner, group = _owner()
    state: dict[str, object] = {
        "release": RELEASE,
        "family": "apt",
        "packages": {},
        "files": [
            {
                "dest": str(config),
                "sha256": hashlib.sha256(b"Key=value\n").hexdigest(),
                "owner": owner,
                "group": group,
                "mode": "0644",
            },
            {"dest": str(secret), "owner": owner, "group": group, "mode": "0600"},
        ],
        "services": [],
        "accounts": {},
    }
    state.update(overrides)
    return state


def _request(tmp_path: Path, **overrides: object) -> dict[str, object]:
    secret = hashlib.sha256(b"Key=value\nPass=hunter2\n").hexdigest()
    request: dict[str, object] = {
        "release": RELEASE,
        "secrets": {str(tmp_path / "secret.conf"): secret},
        "missing": [],
    }
    request.update(overrides)
    return request


def _check(
    tmp_path: Path, state: dict[str, object] | None, request: dict[str, object]
) -> list[str]:
    state_file = tmp_path / "state.json"
    if state is not None:
        state_file.write_text(json.dumps(state))
    result = subprocess.run(
        [sys.executable, str(SCRIPT), str(state_file)],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_a_node_that_matches_its_recorded_release_is_current(tmp_path: Path) -> None:
    assert _check(tmp_path, _state(tmp_path), _request(tmp_path)) == ["current"]


def test_a_node_without_recorded_state_converges(tmp_path: Path) -> None:
    lines = _check(tmp_path, None, _request(tmp_path))
    assert lines[0] == "converge" and "no recorded state" in lines[1], lines


def test_another_release_converges(tmp_path: Path) -> None:
    lines = _check(tmp_path, _state(tmp_path), _request(tmp_path, release="b" * 64))
    assert lines == ["converge", f"release {'a' * 12} recorded, this run applies {'b' * 12}"]


def test_changed_files_modes_and_secrets_converge(tmp_path: Path) -> None:
    state = _state(tmp_path)
    (tmp_path / "node.conf").write_text("Key=edited\n")
    (tmp_path / "secret.conf").chmod(0o644)
    # The vault's secret changed since the file was written.
    rotated = {str(tmp_path / "secret.conf"): hashlib.sha256(b"other").hexdigest()}
    lines = _check(tmp_path, state, _request(tmp_path, secrets=rotated))
    assert lines == [
        "converge",
        f"file {tmp_path / 'node.conf'}: content differs",
        f"file {tmp_path / 'secret.conf'}: content differs",
        f"file {tmp_path / 'secret.conf'}: mode 0644, wanted 0600",
    ]


def test_a_recorded_rdma_device_that_is_gone_converges(tmp_path: Path) -> None:
    """The record keeps only the devices the node had (roles/clustergen_state); while
    they are there the node is current, and one that is gone sends it back to converge."""
    sysfs = tmp_path / "infiniband"
    (sysfs / "mlx5_0").mkdir(parents=True)
    (sysfs / "mlx5_1").mkdir()
    rdma = {"sysfs": str(sysfs), "devices": ["mlx5_0", "mlx5_1"]}
    assert _check(tmp_path, _state(tmp_path, rdma=rdma), _request(tmp_path)) == ["current"]
    (sysfs / "mlx5_1").rmdir()
    lines = _check(tmp_path, _state(tmp_path, rdma=rdma), _request(tmp_path))
    assert lines == ["converge", f"rdma device mlx5_1: gone from {sysfs} since the last converge"]
    # A node that recorded none (no HCA: the booted test nodes) is current.
    no_hca = {"sysfs": str(tmp_path / "none"), "devices": []}
    assert _check(tmp_path, _state(tmp_path, rdma=no_hca), _request(tmp_path)) == ["current"]


def test_a_file_that_a_rendered_file_replaces_converges_while_it_is_there(
    tmp_path: Path,
) -> None:
    """Configless Slurm: a compute node's copy of slurm.conf, left from before, would be
    read by the Slurm commands there instead of what slurmctld serves."""
    stale = tmp_path / "slurm.conf"
    state = _state(tmp_path, absent=[str(stale)])
    assert _check(tmp_path, state, _request(tmp_path)) == ["current"]
    stale.write_text("ClusterName=old\n")
    assert _check(tmp_path, state, _request(tmp_path)) == [
        "converge",
        f"file {stale}: present, wanted absent (replaced by a rendered file)",
    ]


def test_a_missing_file_or_secret_converges(tmp_path: Path) -> None:
    state = _state(tmp_path)
    (tmp_path / "node.conf").unlink()
    lines = _check(tmp_path, state, _request(tmp_path, missing=["vault_munge_key"]))
    assert lines == [
        "converge",
        "secret vault_munge_key not given to this run",
        f"file {tmp_path / 'node.conf'}: No such file or directory",
    ]


def test_accounts_are_checked_by_id(tmp_path: Path) -> None:
    owner, group = _owner()
    if owner != group or os.getuid() != os.getgid():
        skip_or_fail("needs a user whose group has its name and ID (root in CI)")
    assert _check(
        tmp_path, _state(tmp_path, accounts={owner: str(os.getuid())}), _request(tmp_path)
    ) == ["current"]
    lines = _check(tmp_path, _state(tmp_path, accounts={owner: "64999"}), _request(tmp_path))
    assert lines[0] == "converge" and lines[1].startswith(f"account {owner}: uid {os.getuid()}"), (
        lines
    )


def test_packages_are_read_from_dpkg_with_their_holds(tmp_path: Path) -> None:
    """The real dpkg database: dpkg itself at its installed version, not held."""
    if shutil.which("dpkg-query") is None:
        skip_or_fail("needs dpkg (Debian, as CI)")
    version = _installed_version("dpkg")
    held = subprocess.run(["apt-mark", "showhold"], capture_output=True, text=True).stdout.split()
    pins = {"dpkg": version, "clustergen-no-such-package": "1.0-1"}
    lines = _check(tmp_path, _state(tmp_path, packages=pins), _request(tmp_path))
    expected = ["converge", "package clustergen-no-such-package: not installed, pinned 1.0-1"]
    expected.append("package clustergen-no-such-package: not held")
    if "dpkg" not in held:
        expected.append("package dpkg: not held")
    assert lines == expected
    moved = _check(
        tmp_path, _state(tmp_path, packages={"dpkg": f"9:{version}"}), _request(tmp_path)
    )
    assert moved[1] == f"package dpkg: {version}, pinned 9:{version}", moved


def test_a_glob_pin_matches_the_distributions_revision(tmp_path: Path) -> None:
    """`slurm_packages: distribution` pins `<version>-*`: bash (a Debian package with a
    packaging revision) at any revision of its upstream version matches, as apt
    preferences match it; another upstream version does not."""
    if shutil.which("dpkg-query") is None:
        skip_or_fail("needs dpkg (Debian, as CI)")
    version = _installed_version("bash")
    upstream, revision = version.split(":")[-1].rsplit("-", 1)
    assert revision, version
    matching = _check(
        tmp_path, _state(tmp_path, packages={"bash": f"{upstream}-*"}), _request(tmp_path)
    )
    assert [line for line in matching if "pinned" in line] == [], matching
    other = _check(
        tmp_path, _state(tmp_path, packages={"bash": f"{upstream}.9-*"}), _request(tmp_path)
    )
    assert f"package bash: {version}, pinned {upstream}.9-*" in other, other


def _installed_version(package: str) -> str:
    return subprocess.run(
        ["dpkg-query", "--show", "--showformat=${Version}", package],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


# --- a release that changes only rendered files: a partial converge ------------------

BASE = "c" * 64


def _partial_request(
    tmp_path: Path, state: dict[str, object], **overrides: object
) -> dict[str, object]:
    """Another release of the same base: this release's files (the recorded ones, each of
    family slurm, unless overridden) and the families that converge alone."""
    files = [dict(entry, family="slurm") for entry in state["files"]]  # type: ignore[attr-defined]
    fields: dict[str, object] = {
        "release": "b" * 64,
        "base": BASE,
        "files": files,
        "absent": [],
        "families": ["host_network", "slurm"],
    }
    fields.update(overrides)
    return _request(tmp_path, **fields)


def _recorded(tmp_path: Path, **overrides: object) -> dict[str, object]:
    state = _state(tmp_path, base=BASE)
    state["files"] = [dict(entry, family="slurm") for entry in state["files"]]  # type: ignore[attr-defined]
    state.update(overrides)
    return state


def test_another_release_of_the_same_base_with_the_files_in_place_only_records(
    tmp_path: Path,
) -> None:
    state = _recorded(tmp_path)
    assert _check(tmp_path, state, _partial_request(tmp_path, state)) == ["partial"]


def test_a_file_of_the_new_release_converges_its_family_alone(tmp_path: Path) -> None:
    state = _recorded(tmp_path)
    request = _partial_request(tmp_path, state)
    files = request["files"]
    assert isinstance(files, list)
    files[0] = dict(files[0], sha256=hashlib.sha256(b"Key=new\n").hexdigest())
    network = tmp_path / "10-fab0.network"
    files.append(
        {
            "dest": str(network),
            "sha256": "0" * 64,
            "owner": "root",
            "group": "root",
            "mode": "0644",
            "family": "host_network",
        }
    )
    assert _check(tmp_path, state, request) == [
        "partial host_network slurm",
        f"file {tmp_path / 'node.conf'}: content differs",
        f"file {network}: No such file or directory",
    ]


def test_a_file_no_longer_rendered_converges_the_family_that_had_it(tmp_path: Path) -> None:
    state = _recorded(tmp_path)
    request = _partial_request(tmp_path, state)
    files = request["files"]
    assert isinstance(files, list)
    request["files"] = files[1:]
    assert _check(tmp_path, state, request) == [
        "partial slurm",
        f"file {tmp_path / 'node.conf'}: no longer rendered for this node",
    ]


def _pins(family: str, sha256: str, **packages: str) -> dict[str, object]:
    return {"family": family, "packages": packages, "sha256": sha256}


def _held(package: str) -> bool:
    held = subprocess.run(["apt-mark", "showhold"], capture_output=True, text=True).stdout
    return package in held.split()


def test_a_pin_change_converges_its_family_alone(tmp_path: Path) -> None:
    """A concern whose pins changed (its variables' sha256) runs its family's plays, with
    each of its packages that is not at the new pin, on the real dpkg database; the
    concerns whose pins did not change stay out; a concern that is the same and in place
    leaves "partial" alone."""
    if shutil.which("dpkg-query") is None:
        skip_or_fail("needs dpkg (Debian, as CI)")
    version = _installed_version("dpkg")
    recorded = {"nccl": _pins("nccl", "1" * 64), "slurm_compute": _pins("slurm", "2" * 64)}
    state = _recorded(tmp_path, pins=recorded)
    same = _partial_request(tmp_path, state, pins=recorded, families=["nccl", "slurm"])
    assert _check(tmp_path, state, same) == ["partial"]
    bumped = dict(recorded, nccl=_pins("nccl", "3" * 64, dpkg=f"9:{version}"))
    request = _partial_request(tmp_path, state, pins=bumped, families=["nccl", "slurm"])
    expected = [
        "partial nccl",
        "pins of nccl: changed",
        f"package dpkg: {version}, pinned 9:{version}",
    ]
    if not _held("dpkg"):
        expected.append("package dpkg: not held")
    assert _check(tmp_path, state, request) == expected


def test_a_package_moved_from_its_unchanged_pin_converges_its_family(tmp_path: Path) -> None:
    """The same pins, a package no longer at its pin (a release's partial run finds the
    drift too): its concern's family converges, and no pin is said to have changed."""
    if shutil.which("dpkg-query") is None:
        skip_or_fail("needs dpkg (Debian, as CI)")
    version = _installed_version("dpkg")
    recorded = {"slurm_compute": _pins("slurm", "2" * 64, dpkg=f"9:{version}")}
    state = _recorded(tmp_path, pins=recorded)
    lines = _check(tmp_path, state, _partial_request(tmp_path, state, pins=recorded))
    assert lines[:2] == ["partial slurm", f"package dpkg: {version}, pinned 9:{version}"], lines
    assert not any(line.startswith("pins of") for line in lines), lines


def test_a_package_moved_on_a_current_release_converges_its_family_alone(
    tmp_path: Path,
) -> None:
    """The release the node recorded, one package moved from its pin: only its concern's
    family converges; with anything else different too (a file), the node converges in
    full, naming both; a concern of no family (rdma) converges in full."""
    if shutil.which("dpkg-query") is None:
        skip_or_fail("needs dpkg (Debian, as CI)")
    version = _installed_version("dpkg")
    moved = f"package dpkg: {version}, pinned 9:{version}"
    pins = {"slurm_compute": _pins("slurm", "2" * 64, dpkg=f"9:{version}")}
    state = _state(tmp_path, pins=pins, packages={"dpkg": f"9:{version}"})
    request = _request(tmp_path, pins=pins, families=["slurm"])
    lines = _check(tmp_path, state, request)
    assert lines[:2] == ["partial slurm", moved], lines
    (tmp_path / "node.conf").write_text("Key=other\n")
    lines = _check(tmp_path, state, request)
    assert lines[:3] == ["converge", f"file {tmp_path / 'node.conf'}: content differs", moved]
    (tmp_path / "node.conf").write_text("Key=value\n")
    rdma = {"rdma": _pins("", "2" * 64, dpkg=f"9:{version}")}
    lines = _check(tmp_path, _state(tmp_path, pins=rdma), _request(tmp_path, pins=rdma))
    assert lines[:2] == ["converge", moved], lines


def test_pins_that_no_family_installs_alone_converge_in_full(tmp_path: Path) -> None:
    """A concern whose play takes no family (rdma), one dropped whose family the request
    does not name among those that converge alone, or pins on one side only (a node
    recorded by another clustergen): the node converges in full, and says why. A concern
    added whose family converges alone runs that family's plays."""
    changed = f"release {'a' * 12} recorded, this run applies {'b' * 12}"
    recorded = {"rdma": _pins("", "1" * 64), "nccl": _pins("nccl", "2" * 64)}
    state = _recorded(tmp_path, pins=recorded)
    rdma = _partial_request(tmp_path, state, pins=dict(recorded, rdma=_pins("", "3" * 64)))
    assert _check(tmp_path, state, rdma) == [
        "converge",
        changed,
        "pins of rdma: changed",
        "pins of rdma: no play installs them alone",
    ]
    added = _partial_request(
        tmp_path, state, pins=dict(recorded, nhc=_pins("nhc", "4" * 64)), families=["nhc"]
    )
    assert _check(tmp_path, state, added) == ["partial nhc", "pins of nhc: added"]
    dropped = _partial_request(tmp_path, state, pins={"rdma": recorded["rdma"]})
    assert _check(tmp_path, state, dropped) == ["converge", changed, "pins of nccl: dropped"]
    bumped = dict(recorded, nccl=_pins("nccl", "5" * 64))
    unknown = _partial_request(tmp_path, state, pins=bumped, families=["slurm"])
    assert _check(tmp_path, state, unknown) == ["converge", changed, "pins of nccl: changed"]
    older = _partial_request(tmp_path, state)
    assert _check(tmp_path, state, older) == ["converge", changed, "pins not in the request"]
    unrecorded = _recorded(tmp_path)
    assert _check(tmp_path, unrecorded, _partial_request(tmp_path, state, pins=recorded)) == [
        "converge",
        changed,
        "pins not recorded",
    ]


def test_a_partial_converge_needs_the_base_and_everything_else_kept(tmp_path: Path) -> None:
    """Every way a node can need more than its families' plays: a base of another release,
    none recorded (a node converged by an older clustergen), a family no play converges
    alone, a file of no family (the MUNGE key), drifted packages or accounts, a missing
    secret, a path a rendered file replaces."""
    changed = f"release {'a' * 12} recorded, this run applies {'b' * 12}"
    state = _recorded(tmp_path)
    assert _check(tmp_path, state, _partial_request(tmp_path, state, base="d" * 64)) == [
        "converge",
        changed,
    ]
    older = {k: v for k, v in state.items() if k != "base"}
    assert _check(tmp_path, older, _partial_request(tmp_path, state)) == ["converge", changed]
    request = _partial_request(tmp_path, state, families=["host_network"])
    files = request["files"]
    assert isinstance(files, list)
    files[0] = dict(files[0], sha256="0" * 64)
    assert _check(tmp_path, state, request) == [
        "converge",
        changed,
        f"file {tmp_path / 'node.conf'}: content differs",
    ]
    request = _partial_request(tmp_path, state)
    files = request["files"]
    assert isinstance(files, list)
    files[0] = {k: v for k, v in files[0].items() if k != "family"} | {"sha256": "0" * 64}
    assert _check(tmp_path, state, request)[0] == "converge"
    owner, _ = _owner()
    lines = _check(
        tmp_path, _recorded(tmp_path, accounts={owner: "64999"}), _partial_request(tmp_path, state)
    )
    assert lines[:2] == ["converge", changed] and lines[2].startswith(f"account {owner}: "), lines
    missing = _partial_request(tmp_path, state, missing=["vault_munge_key"])
    assert _check(tmp_path, state, missing) == [
        "converge",
        changed,
        "secret vault_munge_key not given to this run",
    ]
    stale = tmp_path / "slurm.conf"
    stale.write_text("ClusterName=old\n")
    absent = _partial_request(tmp_path, state, absent=[str(stale)])
    assert _check(tmp_path, state, absent) == [
        "converge",
        changed,
        f"file {stale}: present, wanted absent (replaced by a rendered file)",
    ]
