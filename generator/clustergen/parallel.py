"""Render and write a large spec on two cores.

A render is CPU-bound Python, and one process uses one core. On a large spec
`render_into` forks once the cluster is resolved: the child renders the families
that install nothing (outputs.UNINSTALLED: the facility sheets and elevations, the
acceptance jobs) and stages their files, while the parent renders the rest, the
Ansible family (which needs only the families that install files) and the site
files, and stages those. The parent then commits both parts as one write (one
journal, or one rename of a new tree's staging folder), the same single transaction
as a serial one (write.py); the tree is byte for byte the serial render's, and so
are the messages.

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
from dataclasses import dataclass
from pathlib import Path

import jinja2

from clustergen.errors import UsageError
from clustergen.render import by_path, render_all, render_families, render_rest
from clustergen.resolve import Cluster
from clustergen.templating import environment
from clustergen.tree import digest
from clustergen.write import (
    MANIFEST,
    Change,
    Destination,
    Staged,
    abandon,
    commit,
    compare,
    destination,
    manifest,
    plan,
    previous_outputs,
    refuse_foreign,
    removals,
    remove_temporaries,
    stage,
    take_back,
    with_manifest,
    write,
)

# Below this many hosts the uninstalled families take a few hundredths of a second,
# less than a fork and the report cost.
MIN_HOSTS = 1024


def render_into(out_dir: Path, cluster: Cluster, *, adopt: bool = False) -> list[Change]:
    """Render the cluster and write the tree into out_dir as one transaction; the
    changes it made (every rendered path, and the removals), in path order."""
    if _two_processes(cluster):
        changes = _render_in_two(out_dir, cluster, adopt=adopt)
        if changes is not None:
            return changes
    files = with_manifest(render_all(cluster), cluster.spec.cluster.name)
    changes = plan(out_dir, files, adopt=adopt)
    write(out_dir, files, changes)
    return changes


def _two_processes(cluster: Cluster) -> bool:
    if os.environ.get("CLUSTERGEN_SERIAL") == "1" or not hasattr(os, "fork"):
        return False
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return cores >= 2 and len(cluster.hosts) >= MIN_HOSTS


@dataclass(frozen=True)
class _Job:
    """The child's part, inherited through the fork: the families it renders, the
    resolved cluster and template environment, where it stages, and the last render's
    paths (to tell the files clustergen did not write)."""

    target: Destination
    cluster: Cluster
    env: jinja2.Environment
    previous: dict[str, str | None]
    adopt: bool
    names: list[str]


@dataclass(frozen=True)
class _Done:
    """The child's report of its part: its paths and their digests (for the
    manifest), its changes (without their texts, which only --diff prints, and --diff
    renders in one process), the files clustergen did not write that it would replace,
    and what it staged."""

    paths: list[str]
    digests: dict[str, str]
    changes: list[Change]
    foreign: list[str]
    staged: Staged


@dataclass(frozen=True)
class _Failed:
    usage: str | None = None  # a UsageError's message: the user's to act on
    internal: str | None = None  # a bug: the exception, and its traceback under CLUSTERGEN_DEBUG
    interrupted: bool = False


def _render_in_two(out_dir: Path, cluster: Cluster, *, adopt: bool) -> list[Change] | None:
    """The render in two processes; None when the second cannot be started (no
    process or pipe left: EAGAIN, ENOMEM, EMFILE), and the render is to be serial."""
    env = environment()
    previous = previous_outputs(out_dir)
    # Made before the fork, so the two sides never race to make it.
    target = destination(out_dir)
    try:
        return _render_with_child(target, cluster, env, previous, adopt=adopt)
    finally:
        target.tree.close()


def _render_with_child(
    target: Destination,
    cluster: Cluster,
    env: jinja2.Environment,
    previous: dict[str, str | None],
    *,
    adopt: bool,
) -> list[Change] | None:
    from clustergen.outputs import FAMILIES, UNINSTALLED

    out_dir = target.out_dir
    try:
        child = _Child.start(_Job(target, cluster, env, previous, adopt, sorted(UNINSTALLED)))
    except OSError:
        abandon(target, [])
        return None
    parts: list[Staged] = []
    try:
        files = render_rest(
            cluster,
            env,
            render_families(cluster, env, [n for n in FAMILIES if n not in UNINSTALLED]),
        )
        changes, foreign = compare(out_dir, files, previous)
        if adopt or not foreign:
            parts.append(stage(target, files, changes))
        done = child.finish()
        parts.append(done.staged)
        if not adopt:
            refuse_foreign(out_dir, sorted(foreign + done.foreign))
        for path in done.paths:
            if path in files:
                raise AssertionError(f"two output families render {path}")
        installs = {path: artifact.install for path, artifact in files.items()}
        installs.update(dict.fromkeys(done.paths))
        digests = {path: digest(artifact.text.encode("utf-8")) for path, artifact in files.items()}
        digests.update(done.digests)
        listed = {MANIFEST: manifest(installs, digests, cluster.spec.cluster.name)}
        listed_changes, _ = compare(out_dir, listed, previous)
        parts.append(stage(target, listed, listed_changes))
        changes = sorted([*changes, *done.changes, *listed_changes], key=lambda c: c.path)
        changes += removals(out_dir, previous, [*installs, MANIFEST])
    except BaseException:
        staged = child.finish(failed=True).staged
        if not any(part is staged for part in parts):
            parts.append(staged)
        abandon(target, parts)
        raise
    # The commit takes back what was staged if it fails before its journal is on disk,
    # and after that leaves the rest of the journal to the next command.
    if any(change.action != "unchanged" for change in changes):
        commit(target, changes, parts)
    else:
        abandon(target, parts)
    return changes


class _Child:
    """The forked child's side of the pipe: its report is read whole (however often
    the reading is interrupted) and the child reaped exactly once."""

    def __init__(self, pid: int, reader: int, target: Destination) -> None:
        self.pid = pid
        self.reader = reader
        self.target = target
        self.received = bytearray()
        self.report: _Done | _Failed | None = None

    @classmethod
    def start(cls, job: _Job) -> _Child:
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
        return cls(pid, reader, job.target)

    def finish(self, *, failed: bool = False) -> _Done:
        """Wait for the child's report. Raises what it reports, unless the parent has
        failed already (failed=True), when only what it staged is kept, to take back."""
        if self.report is None:
            self.report = self._read()
        report = self.report
        if isinstance(report, _Done):
            return report
        if failed:
            return _Done([], {}, [], [], Staged())
        if report.interrupted:
            raise KeyboardInterrupt
        if report.usage is not None:
            raise UsageError(report.usage)
        raise RuntimeError(f"in the process rendering the uninstalled families: {report.internal}")

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
        if messages and isinstance(messages[-1], _Done | _Failed):
            report: _Done | _Failed = messages[-1]
            return report
        # Killed before it reported: its temporaries are found by name, and the folders
        # it made (told before it staged anything) are removed once empty. (A new tree's
        # staging folder goes whole.)
        remove_temporaries(self.target.tree)
        for message in messages:
            if isinstance(message, _Made):
                take_back(self.target.tree, Staged(made=message.folders))
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


def _child_main(writer: int, job: _Job) -> None:
    """Render and stage the named families, report to the parent, and exit; never
    returns, and never runs the parent's exit handlers or flushes its buffers."""
    status = 0
    report: _Done | _Failed
    try:
        report = _child_part(writer, job)
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
        if isinstance(report, _Done):
            take_back(job.target.tree, report.staged)
        status = 1
    finally:
        os._exit(status)


def _child_part(writer: int, job: _Job) -> _Done:
    target = job.target
    rendered = render_families(job.cluster, job.env, job.names).values()
    files = by_path(artifact for artifacts in rendered for artifact in artifacts)
    changes, foreign = compare(target.out_dir, files, job.previous)
    staged = Staged()
    if job.adopt or not foreign:
        staged = stage(
            target, files, changes, folders_made=lambda made: _send(writer, _Made(list(made)))
        )
    return _Done(
        paths=sorted(files),
        digests={path: digest(artifact.text.encode("utf-8")) for path, artifact in files.items()},
        changes=[Change(c.path, c.action, None, None, c.old_digest, c.new_digest) for c in changes],
        foreign=foreign,
        staged=staged,
    )
