"""Command line: one small function per subcommand, each returning an exit code."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from clustergen import __version__
from clustergen.artifacts import Artifact
from clustergen.codes import ignorable
from clustergen.errors import (
    ClustergenError,
    ExitCode,
    LocatedProblem,
    SpecInvalid,
    UsageError,
    printable,
)
from clustergen.load import load_spec
from clustergen.report import FORMATS, Format, github_line, json_document
from clustergen.resolve import ResolvedCluster
from clustergen.validate import validate, validate_cluster

if TYPE_CHECKING:
    from clustergen.twin.session import Twin
    from clustergen.write.changes import FileChange


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.command(args)
        return code
    except ClustergenError as exc:
        # Problems in the format asked for; a refusal is a message, never an empty report.
        if exc.problems:
            _report(exc.problems, getattr(args, "format", "text"), complete=True)
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
    check.set_defaults(command=cmd_validate)

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
    render.set_defaults(command=cmd_render)

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
        help="nodes per batch of a rolling driver upgrade, as site.yml's "
        "clustergen_driver_batch_size (default 1)",
    )
    plan.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="CODE",
        help="do not report warnings with this code (repeatable)",
    )
    plan.set_defaults(command=cmd_plan)

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
    lock.set_defaults(command=cmd_lock, format="text")

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
    twin.set_defaults(command=cmd_twin, format="text", ignore=[])

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
    expand.set_defaults(command=cmd_expand)

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
    schema.set_defaults(command=cmd_schema)
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
    audit.set_defaults(command=cmd_audit)


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


def _ignored(args: argparse.Namespace) -> list[str]:
    """The --ignore codes, each a warning's code, or a usage error saying why not."""
    try:
        return [ignorable(name) for name in args.ignore]
    except ValueError as exc:
        raise UsageError(f"--ignore: {exc}") from None


def _report(
    problems: Sequence[LocatedProblem], output_format: Format, *, complete: bool = False
) -> None:
    """Print problems as text (stderr) or GitHub commands (stdout); JSON is printed once,
    whole, by the caller, or here when `complete` says these are all there will be."""
    if output_format == "text":
        for problem in problems:
            print(problem.format(), file=sys.stderr)
    elif output_format == "github":
        for problem in problems:
            print(github_line(problem))
    elif complete:
        sys.stdout.write(json_document(problems))


def _load_valid(path: str, args: argparse.Namespace) -> ResolvedCluster:
    """Load, validate and resolve one spec; warnings are printed, errors raise SpecInvalid."""
    cluster, problems = validate_cluster(load_spec(path), _ignored(args))
    if cluster is None:
        raise SpecInvalid(problems)
    _report(problems, args.format, complete=True)
    return cluster


def cmd_validate(args: argparse.Namespace) -> int:
    ignore = _ignored(args)
    worst = ExitCode.OK
    text = args.format == "text"
    everything: list[LocatedProblem] = []
    for path in args.specs:
        try:
            spec, problems = validate(load_spec(path), ignore)
        except SpecInvalid as exc:
            spec, problems = None, exc.problems
        except UsageError as exc:
            print(f"clustergen: {exc}", file=sys.stderr)
            worst = ExitCode.USAGE
            continue
        everything += problems
        _report(problems, args.format)
        errors = sum(p.severity == "error" for p in problems)
        warnings = len(problems) - errors
        if spec is None:
            worst = max(worst, ExitCode.INVALID_SPEC)
            if text:
                print(f"{path}: {errors} error(s), {warnings} warning(s)", file=sys.stderr)
        elif text:
            print(f"{path}: valid" + (f" ({warnings} warning(s))" if warnings else ""))
    if args.format == "json":
        sys.stdout.write(json_document(everything))
    return int(worst)


def _rendered_digests(cluster: ResolvedCluster) -> dict[str, str]:
    """The digest of every file a render of cluster writes, its manifest included: what
    a journal may finish (write.recover)."""
    from clustergen.render import render_all
    from clustergen.write.manifest import with_manifest
    from clustergen.write.tree import digest

    files = with_manifest(render_all(cluster), cluster.spec.cluster.name)
    return {path: digest(a.text.encode("utf-8")) for path, a in files.items()}


def _checked(
    args: argparse.Namespace,
    out_dir: Path,
    stale: list[FileChange],
    kept: list[FileChange],
    planted: list[str],
    left: str | None,
) -> int:
    """`render --check`: what is stale, kept or planted, and its exit code."""
    from clustergen.write.changes import kept_message, unrendered_message

    for change in stale:
        print(f"stale: {change.action} {out_dir / change.path}", file=sys.stderr)
    for change in kept:
        print(kept_message(out_dir, change), file=sys.stderr)
    for path in planted:
        print(unrendered_message(out_dir, path), file=sys.stderr)
    if stale or left or planted:
        print(
            f"{out_dir}: {len(stale)} file(s) differ from what {args.spec} renders"
            + (f", {len(planted)} not rendered where Ansible loads them" if planted else "")
            + (" and an interrupted render is pending" if left else "")
            + f"; run `clustergen render {args.spec} -o {out_dir}`",
            file=sys.stderr,
        )
        return int(ExitCode.INVALID_SPEC)
    say = sys.stdout if args.format == "text" else sys.stderr
    print(f"{out_dir}: up to date with {args.spec}", file=say)
    return int(ExitCode.OK)


def cmd_render(args: argparse.Namespace) -> int:
    if args.diff and args.format == "json":
        raise UsageError("--diff writes to standard output, where --format json writes problems")
    # Only render needs jinja2 and the writer; validate starts faster without them.
    from clustergen.outputs import FAMILIES
    from clustergen.parallel import render_into
    from clustergen.render import render_all
    from clustergen.write.changes import (
        file_changes,
        kept_message,
        unified_diff,
        unrendered_ansible_files,
        unrendered_message,
    )
    from clustergen.write.journal import pending, recover
    from clustergen.write.manifest import (
        refuse_other_cluster,
        refuse_unknown_directory,
        with_manifest,
    )
    from clustergen.write.transaction import write

    out_dir = Path(args.output or ".")
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"{out_dir}: exists and is not a directory")
    if args.output is None:  # the current directory, wherever the command is run
        refuse_unknown_directory(out_dir)
    # An interrupted render is completed or undone before a write; --check writes
    # nothing, so it applies no journal (which may have been planted) and says so.
    left = pending(out_dir) if args.check else None
    if left:
        print(left, file=sys.stderr)
    cluster = _load_valid(args.spec, args)
    # A journal is finished only where each step is what this render writes there, so
    # the render is asked for its digests (only when there is a journal).
    repaired = None if args.check else recover(out_dir, lambda: _rendered_digests(cluster))
    if repaired:
        print(repaired, file=sys.stderr)
    # --check writes nothing, so another cluster's tree is only stale to it.
    if not (args.check or args.replace_cluster):
        refuse_other_cluster(out_dir, cluster.spec.cluster.name)
    # Standard output carries the problems in the machine formats; the summary moves aside.
    say = sys.stdout if args.format == "text" else sys.stderr
    if not (args.diff or args.check):
        changes = render_into(out_dir, cluster, adopt=args.adopt)
        for change in changes:
            if change.action == "keep":
                print(kept_message(out_dir, change), file=sys.stderr)
        written = [c.path for c in changes if c.action in ("create", "change", "unchanged")]
        for path in unrendered_ansible_files(out_dir, written):
            print(unrendered_message(out_dir, path), file=sys.stderr)
        _summary(out_dir, changes, say)
        return int(ExitCode.OK)
    rendered = render_all(cluster)
    files: dict[str, Artifact] = with_manifest(rendered, cluster.spec.cluster.name)
    # --check replaces nothing, so files clustergen did not write only make the tree stale.
    changes = file_changes(out_dir, files, adopt=args.adopt or args.check, families=FAMILIES)
    stale = [c for c in changes if c.action not in ("unchanged", "keep")]
    if args.diff:
        sys.stdout.write("".join(unified_diff(c) for c in stale))
    kept = [c for c in changes if c.action == "keep"]
    planted = unrendered_ansible_files(out_dir, files)
    if args.check:
        return _checked(args, out_dir, stale, kept, planted, left)
    changes = write(
        out_dir, rendered, cluster.spec.cluster.name, adopt=args.adopt, families=FAMILIES
    )
    for change in kept:
        print(kept_message(out_dir, change), file=sys.stderr)
    for path in planted:
        print(unrendered_message(out_dir, path), file=sys.stderr)
    _summary(out_dir, changes, say)
    return int(ExitCode.OK)


def _summary(out_dir: Path, changes: list[FileChange], say: TextIO) -> None:
    counts = {
        action: sum(c.action == action for c in changes)
        for action in ("create", "change", "remove", "unchanged", "keep")
    }
    kept = f", {counts['keep']} left alone" if counts["keep"] else ""
    print(
        f"{out_dir}: {counts['create']} created, {counts['change']} changed, "
        f"{counts['remove']} removed{kept}, {counts['unchanged']} unchanged",
        file=say,
    )


def cmd_plan(args: argparse.Namespace) -> int:
    from clustergen.plan import json_text, make_plan, markdown
    from clustergen.render import render_all
    from clustergen.write.changes import unrendered_ansible_files, unrendered_message
    from clustergen.write.journal import pending
    from clustergen.write.manifest import with_manifest

    out_dir = Path(args.output)
    if not out_dir.is_dir():
        raise UsageError(f"{out_dir}: no rendered tree there to plan against")
    # plan writes nothing: it applies no journal (which may have been planted) and
    # compares against the files as they are.
    left = pending(out_dir, staging_too=False)
    if left:
        print(left, file=sys.stderr)
    cluster, problems = validate_cluster(load_spec(args.spec), _ignored(args))
    if cluster is None:
        raise SpecInvalid(problems)
    _report(problems, "text")
    files = with_manifest(render_all(cluster), cluster.spec.cluster.name)
    plan = make_plan(cluster, files, out_dir, args.driver_batch_size)
    for path in unrendered_ansible_files(out_dir, files):
        print(unrendered_message(out_dir, path), file=sys.stderr)
    sys.stdout.write(markdown(plan) if args.plan_format == "markdown" else json_text(plan))
    return int(plan.exit_code)


def cmd_lock(args: argparse.Namespace) -> int:
    from clustergen.lock import check_families, missing_pins, read_index
    from clustergen.outputs.ansible import lock_groups

    indexes = [read_index(Path(path)) for path in args.index]
    cluster = _load_valid(args.spec, args)
    check_families(cluster.pins.family, cluster.spec.software.os, indexes)
    # What versions.lock pins: the groups that have nodes.
    pins = {group.name: group.packages for group in lock_groups(cluster)}
    missing = missing_pins(pins, indexes)
    pinned = len({(name, v) for packages in pins.values() for name, v in packages.items()})
    for pin in missing:
        print(pin.describe())
    files = ", ".join(args.index)
    if missing:
        print(
            f"{args.spec}: {len(missing)} of {pinned} pinned package version(s) not in {files}; "
            "set the version the repository serves in software.packages, or the spec's version",
            file=sys.stderr,
        )
        return int(ExitCode.INVALID_SPEC)
    print(f"{args.spec}: all {pinned} pinned package version(s) are in {files}")
    return int(ExitCode.OK)


def cmd_audit(args: argparse.Namespace) -> int:
    from clustergen.audit.run import audit

    out_dir = Path(args.output)
    if not out_dir.is_dir():
        raise UsageError(f"{out_dir}: no rendered tree there (-o names it)")
    # The spec's warnings are validate's to report; audit reports the nodes.
    cluster, problems = validate_cluster(load_spec(args.spec), _ignored(args))
    if cluster is None:
        raise SpecInvalid(problems)
    # --ignore and the spec's own ignore list silence audit's warnings as validate's.
    ignore = set(_ignored(args)) | set(cluster.spec.ignore)
    result = audit(cluster, out_dir, args.facts)
    findings = [p for p in result.findings if p.code.name not in ignore]
    _report(findings, args.format, complete=True)
    say = sys.stdout if args.format == "text" else sys.stderr
    if result.not_reported:
        shown = ", ".join(result.not_reported[:10])
        more = f" and {len(result.not_reported) - 10} more" if len(result.not_reported) > 10 else ""
        print(f"not reported (no fact file): {shown}{more}", file=sys.stderr)
    print(
        f"{args.spec}: {len(findings)} finding(s) on {result.reported} of {result.nodes} "
        "node(s) reported",
        file=sys.stderr if findings else say,
    )
    return int(ExitCode.INVALID_SPEC if findings else ExitCode.OK)


class _Stopped(Exception):
    """SIGTERM or SIGHUP arrived: stop the twin as Ctrl-C does."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_stopped(signum: int, frame: object) -> None:
    raise _Stopped(signum)


def cmd_twin(args: argparse.Namespace) -> int:
    from clustergen.render import render_all
    from clustergen.twin.layout import uses_slurmdbd
    from clustergen.twin.prerequisites import missing_prerequisites
    from clustergen.twin.process import DaemonError
    from clustergen.twin.session import Twin

    script = Path(args.run) if args.run else None
    if script is not None and not script.is_file():
        raise UsageError(f"--run {script}: no such file")
    cluster = _load_valid(args.spec, args)
    files = render_all(cluster)
    conf = files.get("slurm/slurm.conf")
    missing = missing_prerequisites(uses_slurmdbd(conf.text) if conf else False)
    if missing:
        raise UsageError("twin " + "; ".join(missing))
    say = sys.stderr if script is not None else sys.stdout
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _raise_stopped)
    try:
        with Twin(cluster, files, nodes_per_group=args.nodes_per_group) as twin:
            print("\n".join(twin.describe()), file=say, flush=True)
            twin.start()
            for leftover in twin.leftovers:
                print(f"clustergen twin: removed {leftover} of a twin that was killed", file=say)
            if script is not None:
                print(f"clustergen twin: running {script}", file=say, flush=True)
                return twin.run_script(script)
            print("\n".join(twin.how_to_reach()), flush=True)
            return _wait(twin)
    except DaemonError as exc:
        print(f"clustergen twin: {exc}", file=sys.stderr)
        return int(ExitCode.INVALID_SPEC)
    except (_Stopped, KeyboardInterrupt) as stop:
        print("clustergen twin: stopped; everything it started is removed", file=sys.stderr)
        if script is None:
            return int(ExitCode.OK)
        # --run cut short: the shell's convention for a command ended by a signal.
        return 128 + (stop.signum if isinstance(stop, _Stopped) else signal.SIGINT)
    finally:
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)


def _wait(twin: Twin) -> int:
    """Until Ctrl-C or SIGTERM (raised out of here); 1 if a daemon dies meanwhile."""
    while True:
        for daemon in twin.daemons:
            if daemon.proc.poll() is not None:
                print(f"clustergen twin: {daemon.describe()}", file=sys.stderr)
                return int(ExitCode.INVALID_SPEC)
        time.sleep(1)


def cmd_expand(args: argparse.Namespace) -> int:
    from clustergen.long_form import expand, long_form_text

    loaded = load_spec(args.spec)
    cluster, problems = validate_cluster(loaded, _ignored(args))
    if cluster is None:
        raise SpecInvalid(problems)
    _report(problems, args.format, complete=True)
    text = long_form_text(expand(loaded.data).data)
    if args.output == "-":
        sys.stdout.write(text)
        return int(ExitCode.OK)
    _write_text(Path(args.output), text)
    return int(ExitCode.OK)


def _write_text(target: Path, text: str) -> None:
    from clustergen.write.disk import write_file

    write_file(target, text)
    print(f"wrote {target}", file=sys.stderr)


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
    slurm.set_defaults(command=cmd_import_slurm)


def cmd_import_slurm(args: argparse.Namespace) -> int:
    from clustergen.importer.build import REVIEW, import_slurm
    from clustergen.importer.emit import spec_text

    imported = import_slurm(Path(args.directory))
    text = spec_text(imported, args.directory)
    target = Path(args.output)
    if args.output != "-" and (target.exists() or target.is_symlink()) and not args.force:
        raise UsageError(f"{target} exists; pass --force to replace it")
    for item in imported.unrepresented:
        print(f"not imported: {item.format()}", file=sys.stderr)
    for change in imported.changes:
        print(f"render changes: {printable(change)}", file=sys.stderr)
    print("review (placeholders, not facts): " + "; ".join(REVIEW), file=sys.stderr)
    if args.output == "-":
        sys.stdout.write(text)
        return int(ExitCode.OK)
    _write_text(target, text)
    return int(ExitCode.OK)


def cmd_schema(args: argparse.Namespace) -> int:
    from clustergen.schema import schema_text  # only this command needs it

    text = schema_text()
    if args.output == "-":
        sys.stdout.write(text)
        return int(ExitCode.OK)
    _write_text(Path(args.output), text)
    return int(ExitCode.OK)
