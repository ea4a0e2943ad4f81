"""site.yml on booted Debian 13 nodes over SSH with become, and pull mode on them.

Trixie's systemd 257, MariaDB 11.8 and Slurm 24.11 on three booted nodes of
tests/data/booted-3node.yaml (tests/test_booted_cluster.py boots the same spec on Debian
12): they converge from bare, run a two-node job, run site.yml again with no change, and
then converge themselves with ansible-pull from a site repository. A file of its own, with
its own nodes, subnet and node base, so that pytest-xdist runs it beside the Debian 12
cluster (--dist loadfile).
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from test_booted_cluster import (
    GPU_NODES,
    MUNGE_KEY,
    STORAGE_PASS,
    Rendered,
    SpecEdits,
    _active,
    _assert_fast_path,
    _assert_one_munge_key_and_slurm_uid,
    _assert_services,
    _booted,
    _changes,
    _collect_and_audit,
    _node_states,
    _on_head,
    _render,
    _require,
    _run_gpu_job,
    _sacct_state,
    _site_spec,
    _slurm_diagnostics,
    _succeeded,
    _wait_for,
)

from clustergen.catalog.distributions import DISTRIBUTIONS

from support.ansible_testbed import Ansible, encrypt_vault
from support.booted import (
    BootedCluster,
    BootedNode,
    daemon_packages,
    local_repository,
    node_base,
)
from support.pull_site import (
    APPROVED,
    PULL_RECORD,
    PULL_SERVICE,
    PULL_TIMER,
    SITE_GIT,
    Pull,
    SiteRepository,
    differences,
    installed,
    pull,
    pull_all,
    pull_section,
    read_only,
    signing_key,
    writable,
)

pytestmark = pytest.mark.daemons

# --- Debian 13 ----------------------------------------------------------------------------

# The module's spec on trixie: its Slurm as the catalog has it (24.11.5), MariaDB 11.8,
# systemd 257. On its own subnet, so it never waits for the module's cluster.
TRIXIE, TRIXIE_OS, TRIXIE_SUBNET = "trixie", "debian-13", "10.213.9"
TRIXIE_SLURM = DISTRIBUTIONS[TRIXIE_OS].slurm or ""
# What the slurm role sets on the accounting server (roles/slurm/defaults/main.yml),
# as MariaDB reports it: innodb_snapshot_isolation, innodb_lock_wait_timeout.
TRIXIE_MARIADB = "SELECT @@innodb_snapshot_isolation, @@innodb_lock_wait_timeout"


def _on_debian_13(spec_text: str, signer_key: str) -> str:
    spec = yaml.safe_load(spec_text)
    spec["software"].update(os=TRIXIE_OS, slurm=TRIXIE_SLURM)
    spec["network"]["management"] = {
        "cidr": f"{TRIXIE_SUBNET}.0/24",
        "gateway": f"{TRIXIE_SUBNET}.1",
    }
    gpu, head = spec["nodes"]
    gpu["management_ip"] = f"{TRIXIE_SUBNET}.11"
    head["management_ip"] = f"{TRIXIE_SUBNET}.2"
    spec["slurm"]["configless"] = True  # _assert_configless_slurmd
    spec["ansible"] = {"pull": pull_section(PULL_JITTER[0], signer_key)}  # _pull_mode
    return yaml.safe_dump(spec, sort_keys=False)


def _site_ansible(
    rendered: Rendered, cluster: BootedCluster, directory: Path, secrets: dict[str, str]
) -> Ansible:
    """site.yml as a site runs it: over SSH as admin, secrets from a vault."""
    vault, password = encrypt_vault(secrets, directory)
    return Ansible(
        rendered.out,
        (rendered.out / "inventory", cluster.connection_inventory(directory / "conn.yml")),
        limit="all",
        extra_args=("-e", f"@{vault}", "--vault-password-file", str(password)),
    )


def _assert_trixie_cluster_works(cluster: BootedCluster) -> None:
    """Debian 13's daemons up, slurmdbd content with the role's MariaDB settings, and a
    job on both nodes, recorded by accounting."""
    for node in cluster.nodes.values():
        assert node.sh("cat /etc/debian_version").stdout.startswith("13."), node.name
    _assert_services(cluster)
    _assert_one_munge_key_and_slurm_uid(cluster)
    # Debian's build names itself slurm-wlm.
    assert _on_head(cluster, "sinfo -V").split() == ["slurm-wlm", TRIXIE_SLURM]
    assert _on_head(cluster, f"mariadb -N -B -e '{TRIXIE_MARIADB}'").split() == ["0", "900"]
    dbd_log = _on_head(cluster, "cat /var/log/slurm/slurmdbd.log")
    assert "Database settings not recommended values" not in dbd_log, dbd_log
    _wait_for(
        "both GPU nodes idle",
        lambda: all(_node_states(cluster).get(n, ("", ""))[0] == "idle" for n in GPU_NODES),
    )
    try:
        job = _run_gpu_job(cluster)
    except (AssertionError, RuntimeError) as failure:
        raise AssertionError(f"{failure}\n{_slurm_diagnostics(cluster)}") from None
    _wait_for(
        f"sacct to record job {job}", lambda: _sacct_state(cluster, job).startswith("COMPLETED")
    )
    assert _sacct_state(cluster, job) == "COMPLETED|gpu[1-2]"


# Configless Slurm (slurm.configless): where slurmd caches what slurmctld serves, and the
# link to it (SchedMD's configless_slurm page; SlurmdSpoolDir is clustergen's default).
CONFIGLESS_CACHE, CONFIGLESS_LINK = "/var/spool/slurmd/conf-cache", "/run/slurm/conf"


def _assert_configless_slurmd(cluster: BootedCluster) -> None:
    """slurmd on each GPU node runs with no /etc/slurm/slurm.conf, on the slurm.conf that
    slurmctld served (cached where 24.11 puts it), and `scontrol reconfigure` sends it a
    changed one; the head's copy is then put back as rendered."""
    served = _on_head(cluster, "cat /etc/slurm/slurm.conf")
    assert "SlurmctldParameters=enable_configless" in served.splitlines(), served

    def cached(name: str) -> str:  # "" while slurmd rewrites it
        return cluster.nodes[name].sh(f"cat {CONFIGLESS_CACHE}/slurm.conf", check=False).stdout

    for name in GPU_NODES:
        node = cluster.nodes[name]
        listing = node.sh("ls -A /etc/slurm").stdout.split()
        assert not {"slurm.conf", "gres.conf", "cgroup.conf"} & set(listing), (name, listing)
        assert node.sh("systemctl is-active slurmd").stdout.strip() == "active", name
        pid = node.sh("systemctl show -p MainPID --value slurmd").stdout.strip()
        argv = node.sh(f"tr '\\0' ' ' < /proc/{pid}/cmdline").stdout.split()
        assert argv[-2:] == ["--conf-server", f"{TRIXIE_SUBNET}.2:6817"], (name, argv)
        assert cached(name) == served, name
        assert node.sh(f"readlink -f {CONFIGLESS_LINK}").stdout.strip() == CONFIGLESS_CACHE
        assert node.sh(f"test -f {CONFIGLESS_CACHE}/gres.conf", check=False).returncode == 0
    probe = "# configless probe"
    _on_head(
        cluster,
        f"cp -p /etc/slurm/slurm.conf /root/slurm.conf.rendered && "
        f"echo '{probe}' >> /etc/slurm/slurm.conf && scontrol reconfigure",
    )
    try:
        for name in GPU_NODES:
            _wait_for(
                f"{name} to fetch the changed slurm.conf", lambda name=name: probe in cached(name)
            )
    finally:
        _on_head(
            cluster, "cp -p /root/slurm.conf.rendered /etc/slurm/slurm.conf && scontrol reconfigure"
        )
    for name in GPU_NODES:
        _wait_for(f"{name} to fetch slurm.conf back", lambda name=name: cached(name) == served)
    _wait_for(
        "both GPU nodes idle after the reconfigures",
        lambda: all(_node_states(cluster).get(n, ("", ""))[0] == "idle" for n in GPU_NODES),
    )


# Pull mode's release: it changes one file on every node, the pull timer's jitter.
PULL_JITTER = ("1min", "2min")
PULL_TIMER_FILE = f"/etc/systemd/system/{PULL_TIMER}"


def _assert_pulled(pulls: dict[str, Pull], commit: str, what: str) -> None:
    for name, done in pulls.items():
        record = done.record
        assert done.returncode == 0, f"{what}: {name} failed: {record}\n{done.journal}"
        assert (record["commit"], record["result"], record["last_good"]) == (
            commit,
            "ok",
            commit,
        ), (what, name, record)
        assert record["ref"] == f"refs/heads/{APPROVED}", (what, name, record)


def _pull_mode(
    cluster: BootedCluster, rendered: Rendered, site: SiteRepository, ansible: Ansible, work: Path
) -> dict[str, float]:
    """Pull mode on every node (ansible.pull): the push converge left each node's timer
    waiting; each pull converges the node alone from the approved commit of the site's
    repository; a second run changes nothing; a release that changes one file reaches
    every node and changes only that file; a node whose run of it fails keeps its last
    good release, verify.yml and clustergen audit name it, and its next run converges
    it. Returns the pulls' longest times."""
    nodes = list(cluster.nodes.values())
    for node in nodes:
        # OnActiveSec: counted from the timer's start, which the converge just made.
        assert _active(node, PULL_TIMER) == "active", node.name
        assert node.sh(f"test -e {PULL_RECORD}", check=False).returncode == 1, node.name
    edits = SpecEdits(rendered, work)
    spec_name = edits.path.name

    # 1. The release the push applied, committed and approved: every node pulls it, is
    #    already at it, and changes nothing.
    first = site.commit(spec_name, edits.text, rendered.out, "release 1")
    site.approve(first)
    before = {node.name: installed(node) for node in nodes}
    pulls = pull_all(nodes)
    _assert_pulled(pulls, first, "first pull")
    assert {name: done.changed for name, done in pulls.items()} == dict.fromkeys(cluster.nodes, 0)
    timings = {"first pull": max(done.seconds for done in pulls.values())}

    # 1b. An unsigned commit forced onto the approved branch (a compromised server, a
    #     stolen push right): every node refuses it before anything of it runs, keeps
    #     release 1 and records a failed pull. The site puts the branch back.
    planted = site.commit_unsigned("planted")
    site.approve(planted)
    for name, done in pull_all(nodes).items():
        record = done.record
        assert done.returncode != 0, (name, record)
        assert (record["commit"], record["result"], record["last_good"]) == (
            planted,
            "failed",
            first,
        ), (name, record)
        assert any("is not signed by a signer" in line for line in record["failure"]), record
    for node in nodes:
        assert installed(node) == before[node.name], node.name
    site.approve(first)

    # 2. A commit on main that is not approved yet: the next run changes nothing.
    edits.apply(f"jitter: {PULL_JITTER[0]}", f"jitter: {PULL_JITTER[1]}")
    second = site.commit(spec_name, edits.text, rendered.out, "release 2: jitter")
    pulls = pull_all(nodes)
    _assert_pulled(pulls, first, "second pull")
    assert {name: done.changed for name, done in pulls.items()} == dict.fromkeys(cluster.nodes, 0)
    for node in nodes:
        assert installed(node) == before[node.name], node.name
    timings["no-op pull"] = max(done.seconds for done in pulls.values())

    # 3. Approved, it reaches every node and changes only the timer file, except on a
    #    node whose run fails (its timer file cannot be replaced): that node keeps its
    #    last good release, its service fails, and verify.yml and clustergen audit name
    #    it with both commits. (One round for both: each converging pull of the three
    #    nodes is a few minutes of CI's two cores.)
    site.approve(second)
    broken = cluster.nodes[GPU_NODES[1]]
    read_only(broken, PULL_TIMER_FILE)
    try:
        pulls = pull_all(nodes)
    finally:
        writable(broken, PULL_TIMER_FILE)
    failed = pulls.pop(broken.name)
    _assert_pulled(pulls, second, "pull of a one-file change")
    timings["converging pull"] = max(done.seconds for done in pulls.values())

    def assert_only_the_timer_changed(node: BootedNode) -> None:
        after = installed(node)
        assert differences(before[node.name], after) == [PULL_TIMER_FILE], node.name
        assert after["release"] != before[node.name]["release"], node.name
        timer = node.sh(f"cat {PULL_TIMER_FILE}").stdout
        assert f"RandomizedDelaySec={PULL_JITTER[1]}" in timer.splitlines(), node.name

    for node in nodes:
        if node is not broken:
            assert_only_the_timer_changed(node)
    record = failed.record
    assert failed.returncode != 0, (record, failed.journal)
    assert (record["commit"], record["result"], record["last_good"]) == (second, "failed", first)
    assert any(PULL_TIMER_FILE in line for line in record["failure"]), record
    assert installed(broken) == before[broken.name]
    assert _active(broken, PULL_SERVICE) == "failed"
    report = ansible.playbook("verify.yml")
    assert report.returncode != 0, report.output
    assert (
        f"the last pull run failed on 1 node(s): {broken.name} at {second} (last good {first}"
        in report.output
    ), report.output
    # clustergen audit reads the same record from the facts collect.yml gathers.
    audited = replace(rendered, spec_text=edits.text)
    code, findings = _collect_and_audit(ansible, audited, work / "facts")
    assert code == 1 and [(f["code"], f["path"]) for f in findings] == [
        ("audit.pull-failed", f"{broken.name}.pull-record")
    ], findings
    assert f"failed at commit {second} of refs/heads/{APPROVED}" in str(findings[0]["message"]), (
        findings
    )

    # 4. Its next run, with the fault gone, converges it to the same one-file change;
    #    verify.yml and audit pass.
    done = pull(broken)
    _assert_pulled({broken.name: done}, second, "pull after the fault")
    assert_only_the_timer_changed(broken)
    _succeeded(ansible.playbook("verify.yml"), "verify.yml after every pull succeeded")
    assert _collect_and_audit(ansible, audited, work / "facts") == (0, [])
    return timings


def test_site_converges_on_debian_13_nodes(
    testbed_scratch: Path, tmp_path: Path, measured: Callable[[str], None]
) -> None:
    """Booted trixie nodes (head with slurmctld, slurmdbd and MariaDB; two GPU nodes)
    converge from bare with site.yml, run a job on both nodes, and a second run
    changes nothing."""
    _require()
    started = time.monotonic()
    base = node_base(testbed_scratch, TRIXIE)
    key, public_key = signing_key(tmp_path)
    spec_text = _on_debian_13(
        _site_spec(daemon_packages(base, testbed_scratch), TRIXIE_SLURM), public_key
    )
    (tmp_path / "render").mkdir()
    rendered = _render(tmp_path / "render", spec_text, version=TRIXIE_SLURM)
    repo = local_repository(rendered.pins, base, testbed_scratch)
    site = SiteRepository(tmp_path, key)
    build = time.monotonic() - started
    with _booted(rendered, base, repo, tmp_path / "b", [(site.bare, SITE_GIT)]) as cluster:
        secrets = {
            "vault_munge_key": base64.b64encode(MUNGE_KEY).decode(),
            "vault_slurmdbd_storage_pass": STORAGE_PASS,
        }
        ansible = _site_ansible(rendered, cluster, tmp_path, secrets)
        first = ansible.playbook("site.yml")
        _succeeded(first, "first site.yml run on Debian 13 nodes")
        _assert_trixie_cluster_works(cluster)
        _assert_configless_slurmd(cluster)
        second = ansible.playbook("site.yml")
        _succeeded(second, "second site.yml run on Debian 13 nodes")
        assert set(second.changed()) == set(cluster.nodes)
        assert not any(second.changed().values()), (
            f"second run changed: {_changes(second)}\n{second.output}"
        )
        _assert_fast_path(second, set(cluster.nodes))
        (tmp_path / "edits").mkdir()
        pulls = _pull_mode(cluster, rendered, site, ansible, tmp_path / "edits")
    measured(
        f"\nbooted Debian 13: build {build:.1f}s, boot {cluster.boot_seconds:.1f}s, "
        f"first site.yml {first.seconds:.1f}s, no-op {second.seconds:.1f}s, "
        + ", ".join(f"{what} {seconds:.1f}s" for what, seconds in pulls.items())
        + f", whole test {time.monotonic() - started:.1f}s"
    )
