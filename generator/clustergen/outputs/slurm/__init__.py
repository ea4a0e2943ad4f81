"""Slurm: slurm.conf, gres.conf, cgroup.conf, topology.conf (or topology.yaml), slurmdbd.conf
and the Epilog.

Files land in slurm/ under the output directory, named as they are installed in
/etc/slurm. slurm.conf and topology.conf take effect with `scontrol reconfigure`;
slurmd reads gres.conf and cgroup.conf only when it starts; slurmdbd.conf needs a
slurmdbd restart; the NodeName lines, recorded per daemon (clustergen-nodes.slurmctld
on the controllers, clustergen-nodes.slurmd on the compute nodes), restart slurmctld
and every slurmd when they change; the Epilog is read afresh after every job. With slurm.qos, a
sacctmgr script for the controllers creates the QOS in slurmdbd (role slurm_accounting).
With slurm.isolation: job_container.conf (a private /tmp and /dev/shm per job), and on the
compute nodes the account lines of pam_slurm_adopt that sshd's PAM stack includes, with the
pam_access file of the admins let in without a job. With slurm.configless (configless.py):
the files slurmctld serves install only on the slurm_conf group, and the compute nodes get
slurmd's drop-in with --conf-server instead. With slurm.reboot mode slurm (reboot.py):
the RebootProgram, the boot step that installs the pinned driver packages before slurmd,
and the roll-out script that hands the nodes to `scontrol reboot`.
"""

from __future__ import annotations

import jinja2

from clustergen.base.artifacts import NO_CHANGE, Artifact, Install, NodeChange, Secret
from clustergen.catalog.groups import NVLINK_GROUP, SLURM_GROUP
from clustergen.outputs.slurm import configless as configless_files
from clustergen.outputs.slurm import reboot as reboot_files
from clustergen.outputs.slurm.derive import (
    EPILOG_NAME,
    PAM_ADOPT_ACCESS,
    PAM_ADOPT_INCLUDE,
    QOS_SCRIPT_NAME,
    SLURM_ETC,
    SlurmContext,
    derive_slurm,
    health_epilog_path,
)
from clustergen.outputs.slurm.epilog import ImexScripts
from clustergen.resolve import ResolvedCluster
from clustergen.resolve.imex_mode import EPILOG_DIR, PROLOG_PATH, imex_start
from clustergen.templating import render_template

# Its role includes rendered_files for it and defines the handlers it notifies.
OWN_ROLE = True

RECONFIGURE = NodeChange("reconfigure", "slurmctld")
RESTART_SLURMD = NodeChange("restart", "slurmd")
# A reconfigure does not apply a change to the NodeName lines (Slurm 22.05 keeps a
# node's old GRES through it, and slurmctld must see nodes added or removed): each
# daemon keeps the lines it last started with beside slurm.conf, and restarts when
# they change. The daemon, the group of the nodes that run it, and the change.
NODE_RECORDS = (
    ("slurmctld", "slurm_controller", NodeChange("restart", "slurmctld")),
    ("slurmd", "compute", RESTART_SLURMD),
)
NODE_RECORD = "clustergen-nodes"  # /etc/slurm/clustergen-nodes.<daemon>
# A drop-in of slurmd's unit; the Restart slurmd handler reloads systemd first.
MEMLOCK_DROPIN = "/etc/systemd/system/slurmd.service.d/clustergen-memlock.conf"
# With switch/nvidia_imex, slurmd waits for the driver's IMEX channel device on the trays.
IMEX_DROPIN = "/etc/systemd/system/slurmd.service.d/clustergen-imex.conf"
# sshd's UsePAM, which pam_slurm_adopt needs; sorts before the site's own drop-ins.
SSHD_USEPAM_DROPIN = "/etc/ssh/sshd_config.d/00-clustergen-usepam.conf"


def _slurmd_dropins(cluster: ResolvedCluster, env: jinja2.Environment) -> list[Artifact]:
    """slurmd's locked-memory limit, which job steps keep (PropagateResourceLimitsExcept);
    and its start after the driver on the compute trays of NVLink domains, where
    switch/nvidia_imex starts IMEX per job (it checks for the channel device once)."""
    text = render_template(env, "slurm/slurmd-memlock.conf.j2", cluster)
    install = Install(MEMLOCK_DROPIN, "compute", RESTART_SLURMD)
    dropins = [Artifact("slurm/slurmd-memlock.conf", text, install=install)]
    start = imex_start(cluster)
    trays = cluster.members.get(NVLINK_GROUP, frozenset())
    hosts = tuple(host.name for host in cluster.compute if host.name in trays)
    if start is not None and start.mode == "switch" and hosts:
        text = render_template(env, "slurm/slurmd-imex.conf.j2", cluster)
        install = Install(IMEX_DROPIN, "compute", RESTART_SLURMD, hosts=hosts)
        dropins.append(Artifact("slurm/slurmd-imex.conf", text, install=install))
    return dropins


def render(cluster: ResolvedCluster, env: jinja2.Environment) -> list[Artifact]:
    slurm = derive_slurm(cluster)

    configless = cluster.spec.slurm.configless

    def conf(name: str, change: NodeChange, template: str | None = None) -> Artifact:
        text = render_template(env, template or f"slurm/{name}.j2", cluster, slurm=slurm)
        dest = f"{SLURM_ETC}/{name}"
        if configless and configless_files.is_served(name):
            install = configless_files.served_install(dest, change)
            return Artifact(f"slurm/{name}", text, install=install)
        return Artifact(f"slurm/{name}", text, install=Install(dest, SLURM_GROUP, change))

    slurm_conf = conf("slurm.conf", RECONFIGURE)
    artifacts = [slurm_conf, conf("cgroup.conf", RESTART_SLURMD)]
    for daemon, group, change in NODE_RECORDS:
        name = f"{NODE_RECORD}.{daemon}"
        text = render_template(env, "slurm/node-record.j2", cluster, daemon=daemon, slurm=slurm)
        install = Install(f"{SLURM_ETC}/{name}", group, change)
        artifacts.append(Artifact(f"slurm/{name}", text, install=install))
    artifacts += _slurmd_dropins(cluster, env)
    if slurm.gres:
        artifacts.append(conf("gres.conf", RESTART_SLURMD))
    if slurm.job_container is not None:
        artifacts.append(conf("job_container.conf", RESTART_SLURMD))
    if slurm.ssh_adopt is not None:
        # sshd reads its PAM stack at every login: nothing to restart.
        for name, dest in (
            ("pam-slurm-adopt", PAM_ADOPT_INCLUDE),
            ("ssh-admins.conf", PAM_ADOPT_ACCESS),
        ):
            text = render_template(env, f"slurm/{name}.j2", cluster, slurm=slurm)
            install = Install(dest, "compute", NO_CHANGE)
            artifacts.append(Artifact(f"slurm/{name}", text, install=install))
        text = render_template(env, "slurm/sshd-usepam.conf.j2", cluster)
        install = Install(SSHD_USEPAM_DROPIN, "compute", NodeChange("restart", "sshd"))
        artifacts.append(Artifact("slurm/sshd-usepam.conf", text, install=install))
    if slurm.network.kind in ("tree", "block"):
        artifacts.append(conf("topology.conf", RECONFIGURE))
    elif slurm.network.kind == "yaml":
        artifacts.append(conf("topology.yaml", RECONFIGURE))
    if slurm.slurmdbd is not None:
        artifacts.append(_slurmdbd_conf(cluster, env, slurm))
    if slurm.epilog_checks is not None:
        text = render_template(env, "slurm/health-epilog.sh.j2", cluster, slurm=slurm)
        dest = health_epilog_path(cluster)
        artifacts.append(
            Artifact(
                f"slurm/{EPILOG_NAME}",
                text,
                mode=0o755,
                install=Install(dest, "compute", NO_CHANGE, mode=0o755),
            )
        )
    if slurm.imex is not None:
        artifacts += _imex_scripts(cluster, env, slurm.imex)
    if configless:
        artifacts += _configless(cluster, artifacts)
    artifacts += reboot_files.render(cluster, env)
    if slurm.qos:
        # Applied by the slurm_accounting role (sacctmgr), not by a daemon reading it.
        text = render_template(env, "slurm/qos.sh.j2", cluster, slurm=slurm)
        artifacts.append(
            Artifact(
                f"slurm/{QOS_SCRIPT_NAME}",
                text,
                mode=0o755,
                install=Install(
                    f"{SLURM_ETC}/{QOS_SCRIPT_NAME}", "slurm_controller", NO_CHANGE, mode=0o750
                ),
            )
        )
    return artifacts


def _configless(cluster: ResolvedCluster, artifacts: list[Artifact]) -> list[Artifact]:
    """slurm.configless: slurmd's drop-in on the compute nodes and the DNS SRV records."""
    served = [a for a in artifacts if a.install is not None and a.install.served is not None]
    restart_files = [
        a for a in served if a.install and a.install.change == configless_files.RESTART_SLURMCTLD
    ]
    replaced = tuple(a.install.dest for a in served if a.install)
    return [
        configless_files.dropin(cluster, restart_files, replaced),
        configless_files.srv_records(cluster),
    ]


def _imex_scripts(
    cluster: ResolvedCluster, env: jinja2.Environment, imex: ImexScripts
) -> list[Artifact]:
    """The IMEX Prolog and Epilog on every compute node (a node that is no tray does
    nothing); slurmd runs them afresh for every job."""
    artifacts = []
    for name, dest in (
        ("imex-prolog.sh", PROLOG_PATH),
        ("imex-epilog.sh", f"{EPILOG_DIR}/imex-epilog.sh"),
    ):
        text = render_template(env, f"slurm/{name}.j2", cluster, imex=imex)
        install = Install(dest, "compute", NO_CHANGE, mode=0o755)
        artifacts.append(Artifact(f"slurm/{name}", text, mode=0o755, install=install))
    return artifacts


def _slurmdbd_conf(
    cluster: ResolvedCluster, env: jinja2.Environment, slurm: SlurmContext
) -> Artifact:
    """Rendered without StoragePass: Ansible appends it from the vault when it installs it."""
    assert slurm.password_variable is not None and slurm.slurmdbd is not None
    user = dict(slurm.slurmdbd)["SlurmUser"]  # slurmdbd runs as slurmctld's SlurmUser
    install = Install(
        f"{SLURM_ETC}/slurmdbd.conf",
        "slurm_dbd",
        NodeChange("restart", "slurmdbd"),
        owner=user,
        file_group=user,
        mode=0o600,
        secret=Secret("StoragePass", slurm.password_variable),
    )
    text = render_template(env, "slurm/slurmdbd.conf.j2", cluster, slurm=slurm)
    return Artifact("slurm/slurmdbd.conf", text, install=install)
