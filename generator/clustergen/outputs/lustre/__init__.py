"""Lustre: format scripts, server and client mounts, LNet, tuning and layouts.

Per server target a guarded format script (a dry run unless --yes), its format
identity (what decides the format: a change to it alone means a reformat) and a
mount unit; per hardware profile that serves or mounts Lustre the LNet configuration
(lnetctl import) and, with LND tunables, the modprobe options; for clients the
mount (systemd unit or fstab line), the local settings unit and the layout
script; on the MGS the persistent settings (set_param -P) and OST pools.
"""

from __future__ import annotations

from collections.abc import Callable

import jinja2

from clustergen.base.artifacts import NO_CHANGE, Artifact, Install, NodeChange
from clustergen.catalog.groups import LUSTRE_CLIENT_GROUP
from clustergen.outputs.lustre.derive import SBIN, UNITS, LustreContext, derive_lustre, shq
from clustergen.resolve import ResolvedCluster
from clustergen.templating import render_template

# Its role includes rendered_files for it and defines the handlers it notifies.
OWN_ROLE = True

REMOUNT = NodeChange("remount", "lustre")
SET_PARAM = NodeChange("set_param", "lustre")
MGS_SETTINGS = f"{SBIN}/lustre-mgs-settings"
LAYOUTS = f"{SBIN}/lustre-layouts"
CLIENT_TUNING = "lustre-client-tuning.service"


def render(cluster: ResolvedCluster, env: jinja2.Environment) -> list[Artifact]:
    lustre = derive_lustre(cluster)
    if lustre is None:
        return []
    env = env.overlay()
    env.filters["shq"] = shq

    def text(template: str, **values: object) -> str:
        return render_template(env, f"lustre/{template}", cluster, lustre=lustre, **values)

    artifacts = []
    for t in lustre.targets:
        # A new script is installed as is: only what decides the format (its identity,
        # beside it) means a reformat, never a comment or a header.
        artifacts.append(
            Artifact(
                f"lustre/format/{t.slug}.sh",
                text("format.sh.j2", t=t),
                mode=0o755,
                install=Install(t.script, t.group, NO_CHANGE, mode=0o755, hosts=t.nodes),
            )
        )
        artifacts.append(
            Artifact(
                f"lustre/format/{t.slug}.format",
                text("format-identity.j2", t=t),
                install=Install(
                    t.identity_file, t.group, NodeChange("reformat", t.label), hosts=t.nodes
                ),
            )
        )
        artifacts.append(
            Artifact(
                f"lustre/server/{t.mount_unit}",
                text("server.mount.j2", t=t),
                install=Install(f"{UNITS}/{t.mount_unit}", t.group, REMOUNT, hosts=t.nodes),
            )
        )
    for p in lustre.lnet:
        artifacts.append(
            Artifact(
                f"lustre/lnet/{p.profile}.conf",
                text("lnet.yaml.j2", p=p),
                install=Install("/etc/lnet.conf", p.group, NodeChange("reconfigure", "lnet")),
            )
        )
        if p.lnd is not None:
            artifacts.append(
                Artifact(
                    f"lustre/lnet/{p.profile}.modprobe.conf",
                    text("modprobe.conf.j2", p=p),
                    install=Install("/etc/modprobe.d/lustre.conf", p.group, NodeChange("reboot")),
                )
            )
    artifacts += _client(lustre, text)
    artifacts.append(
        Artifact(
            "lustre/mgs/lustre-mgs-settings.sh",
            text("mgs-settings.sh.j2"),
            mode=0o755,
            install=Install(MGS_SETTINGS, "lustre_mgs", SET_PARAM, mode=0o755),
        )
    )
    return artifacts


def _client(lustre: LustreContext, text: Callable[..., str]) -> list[Artifact]:
    group = LUSTRE_CLIENT_GROUP
    if lustre.mount_method == "systemd":
        mount = Artifact(
            f"lustre/client/{lustre.client_unit}",
            text("client.mount.j2"),
            install=Install(f"{UNITS}/{lustre.client_unit}", group, REMOUNT),
        )
    else:
        mount = Artifact(
            "lustre/client/fstab",
            text("fstab.j2"),
            install=Install("/etc/clustergen/lustre.fstab", group, REMOUNT),
        )
    artifacts = [mount]
    if lustre.client_params:
        artifacts.append(
            Artifact(
                f"lustre/client/{CLIENT_TUNING}",
                text("client-tuning.service.j2"),
                install=Install(f"{UNITS}/{CLIENT_TUNING}", group, SET_PARAM),
            )
        )
    artifacts.append(
        Artifact(
            "lustre/client/lustre-layouts.sh",
            text("layouts.sh.j2"),
            mode=0o755,
            install=Install(LAYOUTS, group, SET_PARAM, mode=0o755),
        )
    )
    return artifacts
