"""Render and write a large spec on two cores.

A render is CPU-bound Python, and one process uses one core. On a large spec
`render_into` forks once the cluster is resolved: the child renders the families
that install nothing (outputs.UNINSTALLED: the facility sheets and elevations, the
acceptance jobs) and stages their files, while the parent renders the rest, the
Ansible family (which needs only the families that install files) and the site
files, and stages those. The parent then commits both parts as one write (one
journal, or one rename of a new tree's staging folder), the same single transaction
as a serial one: both sides stage through one write.TreeWrite, made before the fork,
which holds every write rule, so none is repeated here. The tree is byte for byte
the serial render's, and so are the messages.

Whatever fails on either side (a file clustergen did not write in the way, a
folder that cannot be made, a bug, Ctrl-C) takes back every file either side
staged before the parent reports it: nothing in the tree has changed. A child that
dies without reporting (killed) leaves its temporaries to the sweep every command
makes first (write.recover), which this one makes at once.

Small specs render in one process: forking would cost more than it saves. So does
a render that cannot start a second process (no process or pipe left).
CLUSTERGEN_SERIAL=1 renders every spec in one process.
"""

from __future__ import annotations

import contextlib
import os
import sys
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import jinja2

from clustergen.base.artifacts import Artifact
from clustergen.base.cores import two_processes
from clustergen.base.errors import UsageError
from clustergen.outputs import FAMILIES, UNINSTALLED
from clustergen.render import by_path, render_all, render_families, render_rest
from clustergen.resolve import ResolvedCluster
from clustergen.templating import environment
from clustergen.write.changes import FileChange, compare
from clustergen.write.manifest import MANIFEST, with_manifest
from clustergen.write.transaction import Part, TreeWrite, write

T = typing.TypeVar("T")
U = typing.TypeVar("U")


def render_into(
    out_dir: Path, cluster: ResolvedCluster, *, adopt: bool = False
) -> list[FileChange]:
    """Render the cluster and write the tree into out_dir as one transaction; the
    changes it made (every rendered path, and the removals), in path order."""
    if _two_processes(cluster):
        changes = _render_in_two(out_dir, cluster, adopt=adopt)
        if changes is not None:
            return changes
    name = cluster.spec.cluster.name
    return write(out_dir, render_all(cluster), name, adopt=adopt, families=FAMILIES)


def compared_in_two(
    out_dir: Path, cluster: ResolvedCluster
) -> tuple[dict[str, Artifact], list[FileChange]]:
    """render_all's files with their manifest (write.with_manifest), and each compared
    with the tree in out_dir (write.compare), for the commands that read the tree and
    write nothing (render --check and --diff, plan). On two cores where the spec is
    large (as render_into), each process compares what it renders, as a render has each
    stage its own: the child renders the uninstalled families, compares them and sends
    files and changes back, while this process renders and compares the rest. The
    Ansible family never sees the child's files (it installs only what declares an
    install), so the files are byte for byte render_all's, and the changes compare's,
    in path order."""
    name = cluster.spec.cluster.name
    child = None
    env = environment()
    if _two_processes(cluster):
        with contextlib.suppress(OSError):  # no second process: all of it here
            child = _Child.start(_Job(None, cluster, env, sorted(UNINSTALLED), tree=out_dir))
    if child is None:
        files = render_all(cluster)
        return _with_manifest(out_dir, name, files, compare(out_dir, files))
    try:
        installed = [family for family in FAMILIES if family not in UNINSTALLED]
        rest = render_rest(cluster, env, render_families(cluster, env, installed))
        mine = compare(out_dir, rest)
    except BaseException:
        child.finish(failed=True)
        raise
    theirs = child.finish()
    assert theirs.files is not None and theirs.changes is not None
    files = by_path([*rest.values(), *theirs.files.values()])
    return _with_manifest(out_dir, name, files, [*mine, *theirs.changes])


def _with_manifest(
    out_dir: Path, cluster: str, files: dict[str, Artifact], compared: list[FileChange]
) -> tuple[dict[str, Artifact], list[FileChange]]:
    """files with their manifest, made from the digests the compare took (at 65,536
    nodes 600 MB are not digested twice), and the changes with the manifest's, in path
    order."""
    digests = {c.path: c.new_digest for c in compared if c.new_digest is not None}
    listed = with_manifest(files, cluster, digests)
    changes = [*compared, *compare(out_dir, {MANIFEST: listed[MANIFEST]})]
    return listed, sorted(changes, key=lambda change: change.path)


def _two_processes(cluster: ResolvedCluster) -> bool:
    return two_processes(len(cluster.hosts))


@dataclass(frozen=True)
class _Done:
    """The child's report: the part it staged (write.Part), or the files it rendered
    where it stages nothing, or what other work it was given returned."""

    part: Part
    files: dict[str, Artifact] | None = None
    changes: list[FileChange] | None = None  # the files' against the tree (compare)
    result: object = None


@dataclass(frozen=True)
class _Job:
    """The child's part, inherited through the fork: the families it renders, the
    resolved cluster and template environment, and the write it stages into; or, for a
    command that writes nothing (writer None), the tree it compares its files with
    before it sends them back with their changes."""

    writer: TreeWrite | None
    cluster: ResolvedCluster
    env: jinja2.Environment
    names: list[str]
    what: str = "rendering the uninstalled families"
    tree: Path | None = None

    def part(self, pipe: int) -> _Done:
        rendered = render_families(self.cluster, self.env, self.names).values()
        files = by_path(artifact for artifacts in rendered for artifact in artifacts)
        if self.writer is None:
            assert self.tree is not None
            return _Done(Part(), files, changes=compare(self.tree, files))
        made = lambda folders: _send(pipe, _Made(list(folders)))  # noqa: E731
        return _Done(self.writer.stage(files, folders_made=made))


@dataclass(frozen=True)
class _Work:
    """Other work for the child (in_two): what it returns goes back whole."""

    work: Callable[[], object]
    what: str
    writer: None = None

    def part(self, pipe: int) -> _Done:
        return _Done(Part(), result=self.work())


def in_two(first: Callable[[], T], second: Callable[[], U], what: str) -> tuple[T, U] | None:
    """`second` in a forked child while this process runs `first`, and both results;
    None when no second process can be started (run both here then). `what` names the
    child's work in an internal error. What either raises is raised here, `first`'s
    before the child's: the child's work is the later share of a whole in order."""
    try:
        child = _Child.start(_Work(second, what))
    except OSError:
        return None
    try:
        mine = first()
    except BaseException:
        child.finish(failed=True)
        raise
    return mine, typing.cast(U, child.finish().result)


@dataclass(frozen=True)
class _Failed:
    usage: str | None = None  # a UsageError's message: the user's to act on
    internal: str | None = None  # a bug: the exception, and its traceback under CLUSTERGEN_DEBUG
    interrupted: bool = False


def _render_in_two(
    out_dir: Path, cluster: ResolvedCluster, *, adopt: bool
) -> list[FileChange] | None:
    """The render in two processes; None when the second cannot be started (no
    process or pipe left: EAGAIN, ENOMEM, EMFILE), and the render is to be serial."""
    env = environment()
    # Made before the fork, so the two sides never race to make the destination.
    with TreeWrite(out_dir, cluster.spec.cluster.name, adopt=adopt, families=FAMILIES) as writer:
        try:
            child = _Child.start(_Job(writer, cluster, env, sorted(UNINSTALLED)))
        except OSError:
            writer.abandon()
            return None
        included = False
        try:
            installed = [name for name in FAMILIES if name not in UNINSTALLED]
            writer.stage(render_rest(cluster, env, render_families(cluster, env, installed)))
            writer.include(child.finish().part)
            included = True
        except BaseException:
            if not included:  # taken back with the rest as the writer is left
                writer.include(child.finish(failed=True).part)
            raise
        return writer.commit()


class _Child:
    """The forked child's side of the pipe: its report is read whole (however often
    the reading is interrupted) and the child reaped exactly once."""

    def __init__(self, pid: int, reader: int, job: _Job | _Work) -> None:
        self.pid = pid
        self.what = job.what
        self.reader = reader
        self.writer = job.writer
        self.received = bytearray()
        self.report: _Done | _Failed | None = None

    @classmethod
    def start(cls, job: _Job | _Work) -> _Child:
        sys.stdout.flush()
        sys.stderr.flush()
        reader, writer = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(reader)
            os.close(writer)
            raise
        if pid == 0:  # the child: never returns
            os.close(reader)
            _child_main(writer, job)
        os.close(writer)
        return cls(pid, reader, job)

    def finish(self, *, failed: bool = False) -> _Done:
        """Wait for the child's report. Raises what it reports, unless the parent has
        failed already (failed=True), when only what it staged is kept, to take back."""
        if self.report is None:
            self.report = self._read()
        report = self.report
        if isinstance(report, _Done):
            return report
        if failed:
            return _Done(Part())
        if report.interrupted:
            raise KeyboardInterrupt
        if report.usage is not None:
            raise UsageError(report.usage)
        raise RuntimeError(f"in the process {self.what}: {report.internal}")

    def _read(self) -> _Done | _Failed:
        import io
        import pickle

        while chunk := os.read(self.reader, 1 << 20):
            self.received += chunk
        os.close(self.reader)
        _, status = os.waitpid(self.pid, 0)
        messages = []
        stream = io.BytesIO(self.received)
        with contextlib.suppress(EOFError, pickle.UnpicklingError):  # cut short by a kill
            while stream.tell() < len(self.received):
                messages.append(pickle.load(stream))
        self.received = bytearray()  # read whole: let go (at 65k nodes, 150 MB of files)
        if messages and isinstance(messages[-1], _Done | _Failed):
            report: _Done | _Failed = messages[-1]
            return report
        # Killed before it reported: its temporaries are found by name, and the folders
        # it made (told before it staged anything) are removed once empty. (A new tree's
        # staging folder goes whole.)
        if self.writer is not None:
            self.writer.sweep([f for m in messages if isinstance(m, _Made) for f in m.folders])
        code = os.waitstatus_to_exitcode(status)
        how = f"signal {-code}" if code < 0 else f"exit status {code}"
        return _Failed(internal=f"it ended with {how} before it reported")


@dataclass(frozen=True)
class _Made:
    """The folders the child made for its files, sent before it stages any, so that a
    child killed while staging leaves none behind."""

    folders: list[str]


def _send(writer: int, message: _Made | _Done | _Failed) -> None:
    import pickle

    data = memoryview(pickle.dumps(message))
    while data:
        data = data[os.write(writer, data) :]


def _child_main(writer: int, job: _Job | _Work) -> None:
    """Render and stage the named families, report to the parent, and exit; never
    returns, and never runs the parent's exit handlers or flushes its buffers."""
    status = 0
    report: _Done | _Failed
    try:
        report = job.part(writer)
    except UsageError as exc:
        report = _Failed(usage=str(exc))
    except KeyboardInterrupt:
        report = _Failed(interrupted=True)
    except BaseException as exc:  # a bug: the parent reports it as one
        described = f"{type(exc).__name__}: {exc}"
        if os.environ.get("CLUSTERGEN_DEBUG"):
            import traceback

            described += "\n" + traceback.format_exc()
        report = _Failed(internal=described)
    try:
        _send(writer, report)
    except BaseException:  # the parent is gone: nobody will commit what was staged
        if isinstance(report, _Done) and job.writer is not None:
            job.writer.take_back(report.part)
        status = 1
    finally:
        os._exit(status)
