"""Command line: the parser, and one module per command (as pre-commit's commands/),
each with `execute(args)` returning an exit code."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from clustergen import __version__
from clustergen.base.errors import ClustergenError, ExitCode
from clustergen.base.report import FORMATS
from clustergen.cli import audit as audit_command
from clustergen.cli import expand as expand_command
from clustergen.cli import import_slurm as import_slurm_command
from clustergen.cli import lock as lock_command
from clustergen.cli import plan as plan_command
from clustergen.cli import render as render_command
from clustergen.cli import schema as schema_command
from clustergen.cli import twin as twin_command
from clustergen.cli import validate as validate_command
from clustergen.cli.common import print_problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.command(args)
        return code
    except ClustergenError as exc:
        # Problems in the format asked for; a refusal is a message, never an empty report.
        if exc.problems:
            print_problems(exc.problems, getattr(args, "format", "text"), complete=True)
        else:
            print(f"clustergen: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        print("clustergen: interrupted", file=sys.stderr)
        return int(ExitCode.USAGE)
    except RecursionError:
        print("clustergen: the spec is nested too deeply", file=sys.stderr)
        return int(ExitCode.INVALID_SPEC)
    except BrokenPipeError:
        # The reader went away (e.g. `| head`); say nothing more and do not let
        # the interpreter complain while flushing stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return int(ExitCode.USAGE)
    except Exception as exc:
        if os.environ.get("CLUSTERGEN_DEBUG"):
            raise
        print(
            f"clustergen: internal error ({type(exc).__name__}: {exc}); this is a bug in "
            "clustergen: please report it with the spec. Set CLUSTERGEN_DEBUG=1 for a traceback.",
            file=sys.stderr,
        )
        return int(ExitCode.INTERNAL)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="clustergen",
        description="Check a GPU cluster spec and render everything the cluster runs on.",
    )
    parser.add_argument("--version", action="version", version=f"clustergen {__version__}")
    commands = parser.add_subparsers(title="commands", required=True, metavar="COMMAND")

    check = commands.add_parser("validate", help="report every problem in the spec(s)")
    check.add_argument("specs", nargs="+", metavar="SPEC")
    _add_report_options(check)
    check.set_defaults(command=validate_command.execute)

    render = commands.add_parser("render", help="validate, then write the rendered tree")
    render.add_argument("spec", metavar="SPEC")
    render.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="output directory (default: the current directory, when it is empty or holds "
        "a clustergen tree)",
    )
    render.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if the tree on disk is not what the spec renders",
    )
    render.add_argument("--diff", action="store_true", help="print a unified diff of every change")
    render.add_argument(
        "--adopt",
        action="store_true",
        help="replace files in DIR that clustergen did not write (refused by default)",
    )
    render.add_argument(
        "--replace-cluster",
        action="store_true",
        help="replace the tree of another cluster in DIR (its manifest names the cluster; "
        "refused by default)",
    )
    _add_report_options(render)
    render.set_defaults(command=render_command.execute)

    plan = commands.add_parser(
        "plan",
        help="say what applying the spec's render to the cluster means; writes nothing",
        description="Compare what SPEC renders with the applied tree in DIR and print what "
        "applying it needs, most severe first. Exit 0: nothing to do on the nodes; "
        "4: changes to apply; 5: at least one DESTRUCTIVE reformat; 1: invalid spec; "
        "2: unusable invocation.",
    )
    plan.add_argument("spec", metavar="SPEC")
    plan.add_argument(
        "-o",
        "--output",
        default=".",
        metavar="DIR",
        help="the rendered tree the cluster runs on now (default: the current directory)",
    )
    plan.add_argument(
        "--format",
        dest="plan_format",
        choices=("markdown", "json"),
        default="markdown",
        help="markdown (for a pull-request comment; default) or json, on stdout",
    )
    plan.add_argument(
        "--driver-batch-size",
        type=_positive,
        default=1,
        metavar="N",
        help="GPU nodes outside NVLink domains per batch of a rolling driver upgrade, as "
        "site.yml's clustergen_driver_batch_size (default 1)",
    )
    plan.add_argument(
        "--driver-domains-per-batch",
        type=_positive,
        default=1,
        metavar="N",
        help="NVLink domains per batch of a rolling driver upgrade (each domain's trays roll "
        "together), as site.yml's clustergen_driver_domains_per_batch (default 1)",
    )
    plan.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="CODE",
        help="do not report warnings with this code (repeatable)",
    )
    plan.set_defaults(command=plan_command.execute)

    _add_import(commands)

    lock = commands.add_parser(
        "lock",
        help="check every package pin against the repositories' package indexes",
        description="Read the package indexes of SPEC's repositories (apt Packages or dnf "
        "primary.xml files, downloaded by you; plain, .gz, .xz or .bz2) and report every "
        "pinned package version that none of them carries, with the versions of it they "
        "carry nearest to the pin. Changes nothing. Exit 0: every pin found; 1: pins "
        "missing (or an invalid spec); 2: unusable invocation or unreadable index.",
    )
    lock.add_argument("spec", metavar="SPEC")
    lock.add_argument(
        "--index",
        nargs="+",
        action="extend",
        required=True,
        metavar="FILE",
        help="a package index: apt Packages or dnf primary.xml (repeatable)",
    )
    lock.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="CODE",
        help="do not report warnings with this code (repeatable)",
    )
    # The report is text on stdout; the spec's problems go to stderr as text.
    lock.set_defaults(command=lock_command.execute, format="text")

    _add_audit(commands)

    twin = commands.add_parser(
        "twin",
        help="run the rendered Slurm configuration on local daemons (root)",
        description="Start slurmctld (and slurmdbd with a private MariaDB when the spec sets "
        "accounting) and a slurmd per compute node, each in its own network namespace with "
        "fake /dev/nvidia* devices, from what SPEC renders. Without --run: print how to reach "
        "it and wait; Ctrl-C or SIGTERM removes everything. Exit 0: stopped (or --run's "
        "script status); 1: invalid spec or the daemons refused the rendered files; "
        "2: unusable invocation, not root, or Slurm packages missing.",
    )
    twin.add_argument("spec", metavar="SPEC")
    twin.add_argument(
        "--run",
        metavar="SCRIPT",
        help="run SCRIPT with SLURM_CONF set and the Slurm clients on PATH, stop the twin, "
        "and exit with the script's status",
    )
    twin.add_argument(
        "--nodes-per-group",
        type=_positive,
        metavar="N",
        help="start a slurmd for only the first N compute nodes of each hardware group "
        "(default: every node up to 32 compute nodes, else 2 per group)",
    )
    twin.set_defaults(command=twin_command.execute, format="text", ignore=[])

    expand = commands.add_parser(
        "expand",
        help="write the spec's long form: every rack, switch and target of its patterns "
        "written out",
        description="Validate SPEC, then write it with every pattern (racks alike, switch "
        "groups, Lustre target groups) expanded, as the spec that writes everything out. "
        "Comments are not kept. Exit 0 written, 1 invalid spec, 2 unusable invocation.",
    )
    expand.add_argument("spec", metavar="SPEC")
    expand.add_argument(
        "-o", "--output", default="-", metavar="FILE", help="where to write it (default: stdout)"
    )
    _add_report_options(expand)
    expand.set_defaults(command=expand_command.execute)

    schema = commands.add_parser("schema", help="write the JSON Schema of the spec language")
    # Standard output by default, as expand: run anywhere, it creates nothing.
    schema.add_argument(
        "-o",
        "--output",
        default="-",
        metavar="FILE",
        help="where to write it (default: standard output; the repository's copy is "
        "schemas/clustergen.schema.json)",
    )
    schema.set_defaults(command=schema_command.execute)
    return parser


def _add_audit(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    audit = commands.add_parser(
        "audit",
        help="compare what the nodes report (collect.yml's fact files) with the spec",
        description="Read the fact files collect.yml gathered (one per node: slurmd -C, "
        "nvidia-smi, ibstat, ibnetdiscover, lnetctl, the package list, ip addresses) and "
        "report every difference from SPEC and the rendered tree in DIR (its versions.lock "
        "and facility/cables.csv). Changes nothing. Exit 0: nothing found; 1: findings (or "
        "an invalid spec); 2: unusable invocation or unreadable file.",
    )
    audit.add_argument("spec", metavar="SPEC")
    audit.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="DIR",
        help="the rendered tree the cluster was converged with",
    )
    audit.add_argument(
        "facts", nargs="+", metavar="FACTS", help="a fact file, or a directory of them (*.txt)"
    )
    _add_report_options(audit)
    audit.set_defaults(command=audit_command.execute)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return value


def _add_report_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="how problems are printed: text lines on stderr (default), GitHub workflow "
        "commands (annotations) on stdout, or one JSON array on stdout",
    )
    parser.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="CODE",
        help="do not report warnings with this code (repeatable); errors cannot be ignored",
    )


def _add_import(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    importer = commands.add_parser(
        "import",
        help="write a spec from an existing cluster's configuration files",
        description="Write a spec from an existing cluster's files (docs/adopt.md).",
    )
    sources = importer.add_subparsers(dest="source", required=True, metavar="SOURCE")
    slurm = sources.add_parser(
        "slurm",
        help="read slurm.conf and the files beside it",
        description="Read DIR/slurm.conf (with its Include files) and any of gres.conf, "
        "topology.conf, cgroup.conf and slurmdbd.conf beside it, and write a spec: nodes, "
        "hardware profiles, partitions, switches, accounting and slurm.options. Every line "
        "the spec cannot hold is listed (file:line) on stderr and at the top of the spec, "
        "with the placeholders to review. Exit 0: written; 2: DIR unreadable, no "
        "slurm.conf, or SPEC exists (without --force).",
    )
    slurm.add_argument("directory", metavar="DIR")
    slurm.add_argument(
        "-o",
        "--output",
        default="-",
        metavar="SPEC",
        help="where to write the spec (default: stdout)",
    )
    slurm.add_argument("--force", action="store_true", help="replace SPEC if it exists")
    slurm.add_argument(
        "--config-folder",
        action="append",
        default=[],
        metavar="PATH",
        help="where the cluster keeps its Slurm configuration, when not /etc/slurm, "
        "/etc/slurm-llnl or /usr/local/etc/slurm: an absolute Include in PATH names the "
        "same file of DIR (repeatable)",
    )
    slurm.add_argument(
        "--qos",
        metavar="FILE",
        help="the QOS slurmdbd holds, as `sacctmgr show qos --parsable2` prints them: each "
        "becomes a slurm.qos entry, and what slurm.qos does not hold is listed",
    )
    slurm.set_defaults(command=import_slurm_command.execute)
