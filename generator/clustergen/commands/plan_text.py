"""`clustergen plan`'s plan as text: Markdown for a pull-request comment, most severe
first, and JSON."""

from __future__ import annotations

import json

from clustergen.base.artifacts import SEVERITY, PlanAction
from clustergen.base.errors import ExitCode
from clustergen.commands.plan import Plan, Step
from clustergen.spec.hosts import compress

_HEADINGS = {
    "reformat": "DESTRUCTIVE: reformat",
    "reboot": "Reboot",
    "restart": "Restart",
    "remount": "Remount",
    "format": "Format new targets",
    "mount": "Mount",
    "install": "Install new package versions",
    "set_param": "Apply settings again (lctl set_param)",
    "reconfigure": "Reconfigure",
}


def markdown(plan: Plan) -> str:
    """For a pull-request comment: most severe first."""
    lines = [f"## clustergen plan: `{plan.spec}` against `{plan.tree}`", ""]
    if plan.exit_code == ExitCode.OK:
        lines += ["Nothing to do on the nodes.", ""]
    if plan.destructive:
        count = sum(step.action == "reformat" for step in plan.steps)
        lines += [
            f"**DESTRUCTIVE: this change reformats {count} target(s); the data on them is "
            "lost.** It needs an explicit approval.",
            "",
        ]
    if plan.trusted:
        lines += [
            "### Trusted repositories: packages installed as root without a full check",
            "",
            *(f"- {line}" for line in plan.trusted),
            "",
            "Whoever can change what the nodes download from these can run code as root on "
            "them (docs/security.md).",
            "",
        ]
    lines += _section("reformat", [s for s in plan.steps if s.action == "reformat"])
    lines += _section("reboot", [s for s in plan.steps if s.action == "reboot"])
    if plan.batches:
        lines += _rollout_lines(plan)
    for action in SEVERITY[2:]:
        lines += _section(action, [s for s in plan.steps if s.action == action])
    if plan.added or plan.removed:
        lines += ["### Nodes", ""]
        if plan.added:
            lines.append(
                f"- added: {compress(plan.added)}; bring them up first with "
                f"`ansible-playbook site.yml --limit '{','.join(plan.added)}'`"
            )
        if plan.removed:
            lines.append(f"- removed: {compress(plan.removed)}; drain them before applying")
        lines.append("")
    if plan.tree_only:
        lines += ["### No action on the nodes", ""]
        lines += [f"- {entry}" for entry in plan.tree_only]
        lines.append("")
    return "\n".join(lines)


# Where the roll-out script is installed (outputs/slurm/reboot.py ROLLOUT_SCRIPT).
ROLLOUT_COMMAND = "/etc/slurm/clustergen-reboot-rollout.sh"


def _rollout_lines(plan: Plan) -> list[str]:
    """The roll-out's section: its packages, its batches, and who rolls them."""
    size = max(len(batch) for batch in plan.batches)
    nodes = sum(len(batch) for batch in plan.batches)
    if plan.reboot_mode == "slurm":
        how = [
            f"Mode slurm (slurm.reboot): site.yml only puts the new package lists on the "
            f"nodes in service. Then, on the primary controller, run "
            f"`{ROLLOUT_COMMAND} {' '.join(repr(compress(b)) for b in plan.batches)}`: "
            "it hands each node to `scontrol reboot ASAP nextstate=RESUME` (an NVLink "
            "domain's trays together, in one call), at most "
            f"{plan.max_per_partition} node(s) of a partition out at once; a node reboots "
            "once its jobs have ended and its boot step installs the packages.",
        ]
    else:
        how = [
            "Mode ansible (slurm.reboot): site.yml drains, upgrades, reboots, checks and "
            "resumes each batch before the next.",
        ]
    return [
        f"### Rolling upgrade with reboots: {nodes} node(s) in {len(plan.batches)} "
        f"batch(es) of {size}",
        "",
        *how,
        *_domain_lines(plan),
        "",
        *(f"- {change.described()}" for change in plan.rollout),
        "",
        *_batch_lines(plan.batches, plan.batch_domains),
        "",
    ]


def _domain_lines(plan: Plan) -> list[str]:
    """What rolling NVLink domains whole costs running jobs."""
    if not plan.rolling_domains:
        return []
    out = max(len(names) for names in plan.batch_domains)
    return [
        "",
        f"NVLink domains roll whole, with everything bound to the driver (fabric manager, "
        f"IMEX) in the same batch: {out} of the {plan.rolling_domains} domain(s) that change "
        "out at once. A batch's trays drain together, so a job on any of them ends before "
        "its domain reboots, and no job starts there until every tray of the domain is "
        "back on the new driver; the other domains keep running jobs.",
    ]


def _batch_lines(batches: list[list[str]], domains: list[list[str]], shown: int = 12) -> list[str]:
    numbered = [
        f"{i}. {compress(batch)}"
        + (f" (NVLink domain{'s' if len(names) > 1 else ''} {', '.join(names)})" if names else "")
        for i, (batch, names) in enumerate(zip(batches, domains, strict=True), 1)
    ]
    if len(numbered) <= shown:
        return numbered
    return [
        *numbered[: shown - 2],
        f"... {len(numbered) - shown + 1} more batches ...",
        numbered[-1],
    ]


# Said under a section, once: what its steps do that the step lines cannot.
_NOTES: dict[PlanAction, str] = {
    "reboot": "site.yml installs these and reboots none of these nodes: the change takes "
    "effect at each node's next boot, which the site schedules (drain, reboot, resume).",
    "format": "A target new in the spec: nothing on it to lose. Its format script formats "
    "only a blank device; where the device holds a file system, a label or a partition "
    "table, the script stops and changes nothing.",
}


def _section(action: PlanAction, steps: list[Step]) -> list[str]:
    if not steps:
        return []
    lines = [f"### {_HEADINGS[action]}", ""]
    for step in steps:
        what = {
            "reformat": f"reformat `{step.service}`",
            "reboot": "reboot",
            "restart": f"restart `{step.service}`",
            "remount": f"remount `{step.service}`",
            "format": f"format new target `{step.service}`",
            "mount": f"mount `{step.service}`",
            "install": f"install `{step.service}`",
            "set_param": f"set_param `{step.service}`",
            "reconfigure": f"reconfigure `{step.service}`",
        }[step.action]
        nodes = compress(sorted(step.nodes)) if step.nodes else "no running node"
        lines.append(f"- **{what}** on {nodes}")
        lines += [f"  - {reason}" for reason in step.reasons]
    note = _NOTES.get(action)
    return [*lines, "", *([note, ""] if note else [])]


def json_text(plan: Plan) -> str:
    document = {
        "spec": plan.spec,
        "tree": plan.tree,
        "destructive": plan.destructive,
        "exit_code": int(plan.exit_code),
        "steps": [
            {
                "action": step.action,
                "service": step.service,
                "target": step.target,
                "nodes": sorted(step.nodes),
                "reasons": step.reasons,
            }
            for step in plan.steps
        ],
        "driver_rollout": {
            "packages": [
                {"concern": c.title, "package": c.package, "old": c.old, "new": c.new}
                for c in plan.rollout
            ],
            "batches": plan.batches,
            "batch_nvlink_domains": plan.batch_domains,
            "mode": plan.reboot_mode,
            "max_per_partition": plan.max_per_partition,
        },
        "nodes": {
            "added": plan.added,
            "removed": plan.removed,
        },
        "tree_only": plan.tree_only,
        "trusted_repositories": plan.trusted,
    }
    return json.dumps(document, indent=2) + "\n"
