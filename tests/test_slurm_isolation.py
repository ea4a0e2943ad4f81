"""slurm.isolation: users kept inside their jobs (pam_slurm_adopt), out of each other's
data (PrivateData) and /tmp (job_container/tmpfs), each on by default and switchable;
and slurm.options that would weaken authentication or containment refused.

The booted nodes prove the PAM stack and the per-job /tmp with the real module and
daemons (tests/test_booted_cluster.py); the real slurmctld and slurmdbd read the
rendered slurm.conf and slurmdbd.conf in tests/test_real_slurm.py."""

from __future__ import annotations

from typing import Any

import pytest
from ruamel.yaml import YAML

from clustergen.base.artifacts import Artifact
from clustergen.render import render_all
from clustergen.spec.load import LoadedSpec
from clustergen.validate import validate, validate_cluster

from support.os_matrix import on_os
from support.paths import EXAMPLES

Data = dict[str, Any]


def _spec(name: str = "ml-training-8node") -> Data:
    loaded: Data = YAML(typ="safe").load((EXAMPLES / f"{name}.yaml").read_text())
    return loaded


def _render(data: Data) -> dict[str, Artifact]:
    cluster, problems = validate_cluster(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))
    assert cluster is not None, [str(p) for p in problems]
    return render_all(cluster)


def _conf(artifacts: dict[str, Artifact], name: str = "slurm/slurm.conf") -> dict[str, str]:
    lines = artifacts[name].text.splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and line[0].isalpha())


def _errors(data: Data) -> dict[str, list[str]]:
    problems = validate(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))[1]
    found: dict[str, list[str]] = {}
    for problem in problems:
        if problem.severity == "error":
            found.setdefault(problem.code.name, []).append(problem.message)
    return found


def test_isolation_is_on_by_default() -> None:
    artifacts = _render(_spec())
    conf = _conf(artifacts)
    assert conf["JobContainerType"] == "job_container/tmpfs"
    assert conf["LaunchParameters"] == "ulimit_pam_adopt"
    assert conf["PrivateData"] == "jobs,usage,users"
    assert "Contain" in conf["PrologFlags"].split(",")
    assert _conf(artifacts, "slurm/slurmdbd.conf")["PrivateData"] == "jobs,usage,users"
    assert _conf(artifacts, "slurm/job_container.conf") == {
        "AutoBasePath": "true",
        "BasePath": "/var/spool/slurmd/job_tmpfs",
        "Dirs": "/tmp,/dev/shm",
    }
    # pam_slurm_adopt's account lines and the admins' pam_access file, on compute nodes.
    include = artifacts["slurm/pam-slurm-adopt"]
    assert include.install is not None
    assert (include.install.dest, include.install.group) == (
        "/etc/pam.d/clustergen-slurm-adopt",
        "compute",
    )
    rules = [line for line in include.text.splitlines() if not line.startswith("#")]
    assert rules == [
        "account    sufficient   pam_access.so accessfile=/etc/security/clustergen-ssh-admins.conf",
        "account    required     pam_slurm_adopt.so",
    ]
    usepam = artifacts["slurm/sshd-usepam.conf"]
    assert usepam.install is not None
    assert usepam.install.dest == "/etc/ssh/sshd_config.d/00-clustergen-usepam.conf"
    assert usepam.install.change.describe() == "restart sshd"
    assert usepam.text.endswith("\nUsePAM yes\n")
    access = artifacts["slurm/ssh-admins.conf"]
    assert access.install is not None and access.install.group == "compute"
    assert [line for line in access.text.splitlines() if not line.startswith("#")] == [
        "+:root (sudo) (wheel):ALL",
        "-:ALL:ALL",
    ]


def test_ssh_admins_from_the_spec() -> None:
    data = _spec()
    data["slurm"]["isolation"] = {"ssh_admins": {"users": ["root", "ops"], "groups": ["hpc-adm"]}}
    access = _render(data)["slurm/ssh-admins.conf"].text
    assert "+:root ops (hpc-adm):ALL\n-:ALL:ALL\n" in access
    data["slurm"]["isolation"] = {"ssh_admins": {"users": [], "groups": []}}
    access = _render(data)["slurm/ssh-admins.conf"].text
    assert access.endswith(
        "matches decides; a user refused here may still come in with a job "
        "(pam_slurm_adopt).\n-:ALL:ALL\n"
    )
    data["slurm"]["isolation"] = {"ssh_admins": {"users": ["Bad User"]}}
    assert list(_errors(data)) == ["syntax.invalid"], _errors(data)


@pytest.mark.parametrize(
    ("switch", "gone_keys", "gone_files"),
    [
        (
            "ssh_adopt",
            {"LaunchParameters"},
            {"slurm/pam-slurm-adopt", "slurm/ssh-admins.conf", "slurm/sshd-usepam.conf"},
        ),
        ("private_data", {"PrivateData"}, set()),
        ("job_tmpfs", {"JobContainerType"}, {"slurm/job_container.conf"}),
    ],
)
def test_each_part_switches_off(switch: str, gone_keys: set[str], gone_files: set[str]) -> None:
    on = _render(_spec())
    data = _spec()
    data["slurm"]["isolation"] = {switch: False}
    off = _render(data)
    assert set(_conf(on)) - set(_conf(off)) == gone_keys
    assert set(on) - set(off) == gone_files
    if switch == "private_data":
        assert "PrivateData" not in _conf(off, "slurm/slurmdbd.conf")


def test_job_container_keys_follow_the_slurm_release() -> None:
    data = _spec()
    data["software"]["slurm"] = "22.05.8"
    data["software"]["slurm_packages"] = "distribution"
    on_os(data["software"], "debian-12")
    old = _render(data)
    assert _conf(old)["JobContainerType"] == "job_container/tmpfs"
    # 22.05's plugin knows no Dirs (it always mounts /tmp and /dev/shm).
    assert "Dirs" not in _conf(old, "slurm/job_container.conf")
    data = _spec()
    data["software"]["slurm"] = "25.11.2"
    new = _conf(_render(data))
    assert new["NamespaceType"] == "namespace/tmpfs"
    assert "JobContainerType" not in new


def test_the_pam_module_is_pinned_with_slurm_on_compute_nodes() -> None:
    from clustergen.catalog.slurm_packages import slurm_packaging  # noqa: F401

    lock = YAML(typ="safe").load(_render(_spec())["versions.lock"].text)
    compute = lock["groups"]["compute"]["packages"]
    assert compute["slurm-smd-libpam-slurm-adopt"] == compute["slurm-smd-slurmd"]
    data = _spec()
    on_os(data["software"], "rocky-9")
    lock = YAML(typ="safe").load(_render(data)["versions.lock"].text)
    compute = lock["groups"]["compute"]["packages"]
    assert compute["slurm-pam_slurm"] == compute["slurm-slurmd"]


@pytest.mark.parametrize(
    ("options", "isolation", "refused"),
    [
        ({"AuthType": "auth/none"}, {}, True),
        ({"AuthType": "auth/munge"}, {}, False),
        ({"AuthType": "auth/slurm", "CredType": "cred/slurm"}, {}, False),  # 23.11
        ({"CredType": "cred/none"}, {}, True),
        ({"PrologFlags": "Alloc"}, {}, True),
        ({"PrologFlags": "Alloc"}, {"ssh_adopt": False}, True),  # job_tmpfs needs it too
        ({"PrologFlags": "Alloc"}, {"ssh_adopt": False, "job_tmpfs": False}, False),
        ({"PrologFlags": "Alloc,X11"}, {}, False),  # X11 implies Contain
        ({"PrologFlags": "Alloc,Contain,Serial"}, {}, False),
        ({"PrivateData": "jobs,users"}, {}, True),
        ({"PrivateData": "accounts,jobs,usage,users"}, {}, False),
        ({"PrivateData": "jobs"}, {"private_data": False}, False),
        ({"JobContainerType": "job_container/none"}, {}, True),
        ({"JobContainerType": "job_container/none"}, {"job_tmpfs": False}, False),
        ({"LaunchParameters": "use_interactive_step"}, {}, True),
        ({"LaunchParameters": "use_interactive_step,ulimit_pam_adopt"}, {}, False),
        ({"LaunchParameters": "use_interactive_step"}, {"ssh_adopt": False}, False),
        # What root or SlurmUser runs, loads or trusts lies where only root writes.
        ({"Prolog": "/var/tmp/p"}, {}, True),
        ({"Prolog": "/etc/slurm/prolog.sh,/home/alice/p"}, {}, True),
        ({"Prolog": "/etc/slurm/prolog.d/*"}, {}, False),
        ({"EpilogSlurmctld": "/mnt/lustre/bin/epilog"}, {}, True),  # the spec's Lustre
        ({"RebootProgram": "/usr/sbin/reboot"}, {}, False),
        ({"MailProg": "mail"}, {}, True),  # found from slurmctld's working folder
        ({"JobCompType": "jobcomp/script", "JobCompLoc": "/tmp/jobcomp"}, {}, True),
        ({"PluginDir": "/usr/lib/x86_64-linux-gnu/slurm-wlm:/dev/shm/p"}, {}, True),
        ({"PluginDir": "/usr/lib/x86_64-linux-gnu/slurm-wlm"}, {}, False),
        ({"AuthInfo": "socket=/tmp/munge.socket"}, {}, True),
        ({"AuthInfo": "socket=/run/munge/munge.socket.2"}, {}, False),
        # In the folders the slurm role gives SlurmUser: what root runs may not lie
        # there, what only SlurmUser runs may.
        ({"Prolog": "/var/log/slurm/prolog.sh"}, {}, True),
        ({"RebootProgram": "/var/spool/slurmctld/reboot"}, {}, True),
        ({"PrologSlurmctld": "/var/spool/slurmctld/prolog"}, {}, False),
        ({"JobCompType": "jobcomp/kafka", "JobCompLoc": "/tmp/kafka.conf"}, {}, True),
        ({"JobCompType": "jobcomp/filetxt", "JobCompLoc": "/tmp/jobs.txt"}, {}, True),
        ({"JobCompType": "jobcomp/filetxt", "JobCompLoc": "/var/log/slurm/jobs.txt"}, {}, False),
        ({"SlurmUser": "alice"}, {}, True),
        ({"SlurmUser": "slurm"}, {}, False),
    ],
)
def test_options_that_weaken_security_are_errors(
    options: dict[str, str], isolation: dict[str, bool], refused: bool
) -> None:
    data = _spec()
    data["slurm"]["options"] = options
    data["slurm"]["isolation"] = isolation
    errors = _errors(data)
    assert ("slurm.option-weakens-security" in errors) == refused, errors
    if not refused:
        assert errors == {}, errors
        conf = _conf(_render(data))
        for key, value in options.items():
            assert conf[key] == value  # written once, as given


def test_auth_slurm_needs_23_11_and_slurmdbd_follows_slurmctld() -> None:
    data = _spec()
    data["software"].update(slurm="22.05.8", slurm_packages="distribution", os="debian-12")
    data["slurm"]["options"] = {"AuthType": "auth/slurm"}
    (message,) = _errors(data)["slurm.option-weakens-security"]
    assert "Slurm 22.05.8 takes auth/munge here" in message
    data = _spec()
    data["slurm"]["options"] = {"AuthType": "auth/slurm", "CredType": "cred/slurm"}
    artifacts = _render(data)
    assert _conf(artifacts)["AuthType"] == "auth/slurm"
    assert _conf(artifacts, "slurm/slurmdbd.conf")["AuthType"] == "auth/slurm"
    assert artifacts["slurm/slurm.conf"].text.count("AuthType=") == 1


@pytest.mark.parametrize(
    "options",
    [
        {"JobCompPassScript": "/tmp/jobcomp-pass"},
        {"CertgenType": "certgen/script", "CertgenParameters": "certgen_script=/tmp/certgen"},
    ],
)
def test_the_programs_of_newer_releases_lie_where_only_root_writes(
    options: dict[str, str],
) -> None:
    """25.11's JobCompPassScript (slurmctld runs it for jobcomp's password) and certgen's
    scripts (the daemons trust the keys they make) are programs like Prolog's."""
    data = _spec()
    data["software"]["slurm"] = "25.11.2"
    data["slurm"]["options"] = options
    errors = _errors(data)
    assert "slurm.option-weakens-security" in errors, errors
    data["slurm"]["options"] = {
        key: v.replace("/tmp/", "/etc/slurm/") for key, v in options.items()
    }
    assert "slurm.option-weakens-security" not in _errors(data)
