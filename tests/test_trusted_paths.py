"""What root or every job runs, loads, installs from or builds in lies where only root
writes (checks/trusted_paths.py), network file systems never cover a system folder, and
they are mounted nosuid,nodev unless the spec says why not.

The refusals, one spec of each class with its exact messages, are the cases
tests/invalid/paths-users-can-write.yaml, mount-over-system-folder.yaml and
options-program-in-user-writable-folder.yaml; here: what stays allowed beside them, and
what the mounts render."""

from __future__ import annotations

from typing import Any

import pytest
from ruamel.yaml import YAML

from clustergen.base.artifacts import Artifact
from clustergen.catalog.folders import RELATIVE, mount_over_system, user_writable
from clustergen.render import render_all
from clustergen.spec.load import LoadedSpec
from clustergen.validate import validate, validate_cluster

from support.paths import EXAMPLES

Data = dict[str, Any]
CODES = {
    "path.users-can-write",
    "storage.nfs-export-system-folder",
    "slurm.option-weakens-security",
    "storage.mount-over-system-folder",
    "storage.mount-setuid",
}


def _spec() -> Data:
    loaded: Data = YAML(typ="safe").load((EXAMPLES / "ml-training-8node.yaml").read_text())
    return loaded


def _errors(data: Data) -> list[tuple[str, str]]:
    problems = validate(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))[1]
    return [
        (".".join(map(str, p.path)), p.code.name)
        for p in problems
        if p.severity == "error" and p.code.name in CODES
    ]


def _render(data: Data) -> dict[str, Artifact]:
    cluster, problems = validate_cluster(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))
    assert cluster is not None, [str(p) for p in problems]
    return render_all(cluster)


@pytest.mark.parametrize(
    ("path", "shared", "where"),
    [
        ("/var/tmp/x", (), "/var/tmp"),
        ("/tmp/../var/tmp/x", (), "/var/tmp"),
        ("//tmp/x", (), "/tmp"),
        ("/dev/shm/x.so", (), "/dev/shm"),
        ("/home/alice/p", (), "/home"),
        ("/run/user/1000/k", (), "/run/user"),
        ("/shared/tools/p", ("/shared",), "/shared"),
        ("/shared", ("/shared/",), "/shared"),
        ("lib/x.so", (), RELATIVE),
        ("/etc/slurm/prolog", ("/shared",), None),
        ("/usr/local/sbin/p", (), None),
        ("/sharedtools/p", ("/shared",), None),
        ("/tmpfs/x", (), None),
    ],
)
def test_user_writable(path: str, shared: tuple[str, ...], where: str | None) -> None:
    assert user_writable(path, shared) == where


@pytest.mark.parametrize(
    ("path", "covers"),
    [
        ("/usr/local/sbin", "/usr"),
        ("/etc/slurm", "/etc"),
        ("/opt", "/opt"),
        ("/var/lib", "/var/lib"),
        ("/var", "/var"),
        ("/", "/"),
        ("/lib64/x", "/lib64"),
        ("/root/data", "/root"),
        ("/tmp/scratch", "/tmp"),
        ("/run/munge", "/run"),
        ("/run/systemd/system", "/run"),
        ("/var/lib/dpkg", "/var/lib/dpkg"),
        ("/var/spool/cron", "/var/spool/cron"),
        ("/opt/nvidia", "/opt/nvidia"),
        # Pull mode's checkout, which every node runs as root once its signature passed.
        ("/var/lib/clustergen", "/var/lib/clustergen"),
        ("/var/lib/clustergen/site", "/var/lib/clustergen"),
        ("/home", None),
        ("/home/projects", None),
        ("/mnt", None),
        ("/srv/data", None),
        ("/opt/apps", None),
        ("/var/lib/slurm-state", None),
        ("/shared", None),
        ("/scratch", None),
    ],
)
def test_mount_over_system(path: str, covers: str | None) -> None:
    assert mount_over_system(path) == covers


def test_the_reference_spec_passes_and_its_mounts_are_nosuid_nodev() -> None:
    data = _spec()
    assert _errors(data) == []
    unit = _render(data)["lustre/client/mnt-lustre.mount"].text
    assert "\nOptions=_netdev,x-systemd.requires=lnet.service,nosuid,nodev\n" in unit


def test_what_stays_allowed() -> None:
    """Names the loader searches for, folders only root writes, a tmpfs base that is
    not used, and mount points of the site's own."""
    data = _spec()
    data["nccl"] = {"env": {"NCCL_NET_PLUGIN": "aws-ofi", "NCCL_TOPO_FILE": "/etc/nccl/t.xml"}}
    data["slurm"]["isolation"] = {"job_tmpfs": False, "job_tmpfs_base": "/var/tmp/unused"}
    data["slurm"].setdefault("options", {})["Prolog"] = "/etc/slurm/prolog.d/*"
    data["software"]["repositories"] = [
        {
            "name": "local",
            "url": "file:///srv/repo/",
            "key_url": "file:///etc/apt/keys/local.asc",
            "suite": "jammy",
            "components": ["main"],
        }
    ]
    data["storage"]["nfs"] = [
        {"server": "filer.example.org", "export": "/home", "path": "/home", "roles": ["login"]},
        {"server": "filer.example.org", "export": "/apps", "path": "/opt/apps", "roles": ["login"]},
    ]
    assert _errors(data) == []


PLUGIN = "nccl.env.NCCL_NET_PLUGIN"
BASE = "slurm.isolation.job_tmpfs_base"


@pytest.mark.parametrize(
    ("where", "value", "error"),
    [
        (("nccl",), {"env": {"NCCL_NET_PLUGIN": "plugins/libnccl-net.so"}}, PLUGIN),
        (("nccl",), {"env": {"NCCL_NET_PLUGIN": "/mnt/lustre/libnccl-net.so"}}, PLUGIN),
        (("slurm", "isolation"), {"job_tmpfs_base": "/dev/shm/jobs"}, BASE),
        (("slurm", "isolation"), {"job_tmpfs_base": "/mnt/lustre/jobs"}, BASE),
    ],
)
def test_each_key_is_held_to_the_rule(where: tuple[str, ...], value: Data, error: str) -> None:
    data = _spec()
    parent = data
    for key in where[:-1]:
        parent = parent[key]
    parent[where[-1]] = value
    assert _errors(data) == [(error, "path.users-can-write")]


def test_a_repository_on_a_shared_file_system_is_refused_even_with_a_fingerprint() -> None:
    data = _spec()
    data["software"]["repositories"] = [
        {
            "name": "shared",
            "url": "file:///mnt/lustre/repo/",
            "key_url": "file:///mnt/lustre/repo/key.asc",
            "key_fingerprint": "0123456789ABCDEF0123456789ABCDEF01234567",
            "suite": "jammy",
            "components": ["main"],
        }
    ]
    assert _errors(data) == [
        ("software.repositories.0.url", "path.users-can-write"),
        ("software.repositories.0.key_url", "path.users-can-write"),
    ]


def test_options_before_the_protection_cannot_undo_it() -> None:
    """mount(8) takes the last of contradicting options: nosuid,nodev come last, so
    `defaults` (suid, dev) in the spec's options does not turn them off."""
    data = _spec()
    data["storage"]["lustre"]["mount"]["options"] = ["defaults", "flock"]
    data["storage"]["nfs"] = [
        {
            "server": "filer.example.org",
            "export": "/home",
            "path": "/home",
            "roles": ["login"],
            "options": ["defaults"],
        }
    ]
    artifacts = _render(data)
    lustre = artifacts["lustre/client/mnt-lustre.mount"].text
    assert "\nOptions=_netdev,x-systemd.requires=lnet.service,defaults,flock,nosuid,nodev\n" in (
        lustre
    )
    assert (
        "\nOptions=_netdev,vers=4.2,defaults,nosuid,nodev\n"
        in artifacts["nfs/client/home.mount"].text
    )


def test_setuid_says_why_and_keeps_nodev() -> None:
    data = _spec()
    data["storage"]["lustre"]["mount"]["setuid"] = "the site's MPI launcher is set-user-ID"
    data["storage"]["lustre"]["mount"]["options"] = ["suid"]
    assert _errors(data) == [("storage.lustre.mount.options.0", "storage.mount-setuid")]
    del data["storage"]["lustre"]["mount"]["options"]
    unit = _render(data)["lustre/client/mnt-lustre.mount"].text
    assert "\nOptions=_netdev,x-systemd.requires=lnet.service,nodev\n" in unit


# A second round of attacks, by someone who had not seen these tests (the closing note of
# this work lists them): each was accepted before.
WEAKENS, USERS = "slurm.option-weakens-security", "path.users-can-write"
SECOND_ROUND = {
    "glob-folder": ("slurm.options", "Prolog", "/[t]mp/evil", WEAKENS),
    "pid-file": ("slurm.options", "SlurmdPidFile", "/tmp/slurmd.pid", WEAKENS),
    "chowned-log-folder": ("slurm.options", "SlurmdLogFile", "/home/alice/x/slurmd.log", USERS),
    "spool-on-lustre": ("slurm.options", "SlurmdSpoolDir", "/mnt/lustre/spool", USERS),
    "tuner-plugin": ("nccl.env", "NCCL_TUNER_PLUGIN", "/tmp/t.so", USERS),
    "debug-file": ("nccl.env", "NCCL_DEBUG_FILE", "/tmp/nccl.%h.log", USERS),
}


@pytest.mark.parametrize("case", sorted(SECOND_ROUND))
def test_second_round_paths_are_refused(case: str) -> None:
    section, key, value, code = SECOND_ROUND[case]
    data = _spec()
    parent = data
    for name in section.split("."):
        parent = parent.setdefault(name, {})
    parent[key] = value
    assert (f"{section}.{key}", code) in _errors(data)


def test_tls_and_certmgr_paths_are_held_to_the_rule() -> None:
    data = _spec()
    data["software"]["slurm"] = "25.11.2"
    data["slurm"].setdefault("options", {}).update(
        {
            "CertmgrType": "certmgr/script",
            "CertmgrParameters": "generate_csr_script=/tmp/g.sh,validate_node_script=/etc/v",
            "TLSParameters": "ca_cert_file=/tmp/ca.pem",
        }
    )
    assert sorted(e for e in _errors(data) if e[1] == WEAKENS) == [
        ("slurm.options.CertmgrParameters", WEAKENS),
        ("slurm.options.TLSParameters", WEAKENS),
    ]


def test_a_node_exports_no_system_folder_and_pull_takes_no_user_folder() -> None:
    data = _spec()
    data["storage"]["nfs"] = [
        {"server": "slurm-head", "export": "/etc", "path": "/shared/etc", "roles": ["login"]},
        {"server": "slurm-head", "export": "/srv/home", "path": "/home", "roles": ["login"]},
    ]
    data["software"]["os"] = "debian-13"
    data["ansible"] = {"pull": {"repository": "file:///tmp/mirror", "unsigned": True}}
    errors = _errors(data)
    assert ("storage.nfs.0.export", "storage.nfs-export-system-folder") in errors
    assert not any(e[0] == "storage.nfs.1.export" for e in errors)
    assert ("ansible.pull.repository", "path.users-can-write") in errors


# A third round of attacks, by someone who had not seen these tests: the same folders by
# other names (the system's own links, /proc), world-writable folders the lists lacked,
# and the acceptance jobs' tools. Each was accepted before, and rendered.
THIRD_ROUND = {
    "var-run-user": ("slurm.options", "Prolog", "/var/run/user/1000/p.sh", WEAKENS),
    "proc-self-root": ("slurm.options", "Prolog", "/proc/self/root/tmp/p.sh", WEAKENS),
    "var-lock": ("slurm.options", "Prolog", "/var/lock/p.sh", WEAKENS),
    "run-shm-plugin-dir": (
        "slurm.options",
        "PluginDir",
        "/usr/lib/x86_64-linux-gnu/slurm-wlm:/run/shm/plug",
        WEAKENS,
    ),
    "var-run-nccl-plugin": ("nccl.env", "NCCL_NET_PLUGIN", "/var/run/user/1000/n.so", USERS),
    "run-lock-tmpfs-base": ("slurm.isolation", "job_tmpfs_base", "/run/lock/jt", USERS),
    # Under /run, which is the system's: the role would chown /run/lock/slurm.
    "run-lock-log-folder": (
        "slurm.options",
        "SlurmdLogFile",
        "/var/lock/slurm/d.log",
        "slurm.system-folder",
    ),
    "var-crash-spool": ("slurm.options", "SlurmdSpoolDir", "/var/crash/slurmd", USERS),
    "nccl-tests-dir": ("nccl.acceptance", "nccl_tests_dir", "/tmp/nccl-tests/build", USERS),
    "dcgmi": ("nccl.acceptance", "dcgmi", "/home/alice/bin/dcgmi", USERS),
    "ib-write-bw": ("nccl.acceptance", "ib_write_bw", "/var/tmp/ib_write_bw", USERS),
}


@pytest.mark.parametrize("case", sorted(THIRD_ROUND))
def test_third_round_paths_are_refused(case: str) -> None:
    section, key, value, code = THIRD_ROUND[case]
    data = _spec()
    parent = data
    for name in section.split("."):
        parent = parent.setdefault(name, {})
    parent[key] = value
    problems = validate(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))[1]
    errors = [(".".join(map(str, p.path)), p.code.name) for p in problems if p.severity == "error"]
    assert errors == [(f"{section}.{key}", code)]


@pytest.mark.parametrize(
    ("path", "where"),
    [
        ("/var/run/user/1000/p", "/run/user"),
        ("/var/lock/p", "/run/lock"),
        ("/run/lock/x", "/run/lock"),
        ("/run/shm/x", "/dev/shm"),
        ("/var/run/../tmp/x", "/var/tmp"),
        ("/proc/self/root/tmp/p", "/proc"),
        ("/proc/1/cwd/p", "/proc"),
        ("/dev/fd/3", "/proc"),
        ("/dev/stdin", "/proc"),
        ("/var/mail/alice", "/var/mail"),
        ("/var/lib/php/sessions/x", "/var/lib/php/sessions"),
        ("/var/runner/x", None),
        ("/run/slurm/x", None),
    ],
)
def test_a_folder_by_another_name_is_the_same_folder(path: str, where: str | None) -> None:
    assert user_writable(path) == where


def test_a_mount_through_var_run_covers_run() -> None:
    assert mount_over_system("/var/run/systemd/system") == "/run"
    assert mount_over_system("/var/lock") == "/run"


# A fourth round of attacks, by someone who had not seen these tests: Slurm reads a
# backslash as an escape and drops double quotes (src/common/parse_config.c), so the
# daemons read another path than the one checked; a Lustre target's --param naming a
# program the servers run; NFS exports that trust their clients.
@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("Prolog", "/\\tmp/evil.sh"),
        ("SlurmdLogFile", "/\\etc/ld.so.preload"),
        ("JobCompLoc", '"/tmp/jobcomp.sh"'),
        ("AuthInfo", '"socket=/tmp/munge.sock"'),
        ("MetricsParameters", "ignore\\_private_data"),
    ],
)
def test_a_value_slurm_would_read_otherwise_is_refused(key: str, value: str) -> None:
    data = _spec()
    data["slurm"].setdefault("options", {})[key] = value
    assert (f"slurm.options.{key}", "syntax.conf-value") in _all_errors(data)


def _all_errors(data: Data) -> list[tuple[str, str]]:
    problems = validate(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))[1]
    return [(".".join(map(str, p.path)), p.code.name) for p in problems if p.severity == "error"]


def test_a_lustre_parameter_naming_a_program_is_held_to_the_rule() -> None:
    data = _spec()
    mdt = data["storage"]["lustre"]["mdts"][0]
    mdt["mkfs_options"] = ["--param=mdt.identity_upcall=/tmp/upcall"]
    assert ("storage.lustre.mdts.0.mkfs_options.0", USERS) in _errors(data)
    mdt["mkfs_options"] = ["--param", "mdt.identity_upcall=/home/a/u"]
    assert ("storage.lustre.mdts.0.mkfs_options.1", USERS) in _errors(data)
    mdt["mkfs_options"] = ["--param=mdt.identity_upcall=/usr/sbin/l_getidentity"]
    assert _errors(data) == []
    mdt["mkfs_options"] = ["--param=mdt.identity_upcall=NONE", "--param=sys.timeout=40"]
    assert _errors(data) == []


def test_an_export_that_trusts_its_clients_says_why() -> None:
    data = _spec()
    export = {
        "server": "slurm-head",
        "export": "/srv/home",
        "path": "/home",
        "roles": ["login"],
        "export_options": ["rw", "no_root_squash", "insecure", "sync"],
    }
    data["storage"]["nfs"] = [export]
    code = "storage.nfs-export-trusts-clients"
    assert sorted(e for e in _all_errors(data) if e[1] == code) == [
        ("storage.nfs.0.export_options.1", code),
        ("storage.nfs.0.export_options.2", code),
    ]
    export["trusted_clients"] = "the login node's root is the site's own; a lab filer"
    assert [e for e in _all_errors(data) if e[1] == code] == []
    # A filer outside the spec: its exports are the site's, not rendered.
    export.pop("trusted_clients")
    export["server"] = "filer.example.org"
    assert [e for e in _all_errors(data) if e[1] == code] == []


@pytest.mark.parametrize(
    ("expression", "parts"),
    [
        ("gpu01", ["gpu01"]),
        ("a,b,c", ["a", "b", "c"]),
        ("gpu[01-04],n[1,3,5-6],x", ["gpu[01-04]", "n[1,3,5-6]", "x"]),
        ("a[1-2][1,3],b", ["a[1-2][1,3]", "b"]),
        ("a,,b,", ["a", "", "b", ""]),
        # Unbalanced brackets (refused when expanded): a comma inside counts as inside.
        ("a[1,2", ["a[1,2"]),
        ("a]b,c", ["a]b,c"]),
    ],
)
def test_a_hostlist_splits_at_its_top_level_commas(expression: str, parts: list[str]) -> None:
    from clustergen.model.common import hostlist_parts, hostlist_size

    assert hostlist_parts(expression) == parts
    assert hostlist_size(expression) >= len(parts)


def test_hostlists_are_counted_before_they_are_expanded() -> None:
    """Fifty ranges of 100,000 in one switch's nodes (an 8 KB spec) took 3 GB and 74 s;
    fifty switches of 100,000 names each were the same in many expressions. One
    expression gives at most MAX_HOSTLIST_NAMES names, a spec at most
    MAX_SPEC_HOSTLIST_NAMES in all, each refused before it is expanded."""
    from clustergen.model.common import MAX_HOSTLIST_NAMES, hostlist_size

    assert hostlist_size("gpu[01-04],n[0-99999],x[1,3,5-6]") == 4 + 100_000 + 4
    assert hostlist_size("a[1-2][1-3],b") == 7
    data = _spec()
    wide = ",".join(f"n{i}x[0-99999]" for i in range(3))
    data["network"]["fabric"]["switches"][0]["nodes"] = wide
    errors = validate(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))[1]
    assert [str(p.message) for p in errors if p.code.name == "syntax.hostlist"] == [
        f"hostlist 'n0x[0-99999],n1x[0-99999],n2x[0-99999]' gives 300,000 names, more "
        f"than the {MAX_HOSTLIST_NAMES:,} one expression may give"
    ]
    data = _spec()
    data["network"]["fabric"]["switches"] += [
        {"name": f"ib-x{i}", "nodes": f"q{i}x[0-199999]"} for i in range(6)
    ]
    errors = validate(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))[1]
    budget = [p for p in errors if "one spec may give in all" in str(p.message)]
    assert budget, [str(p.message) for p in errors][:5]
