"""Templating: the Jinja environment every output family renders with, its filters, the
compiled-template cache, and `render_template`. It knows no family: render.py, which
runs the families, sits above it, and each family imports it.
"""

from __future__ import annotations

import os
import stat
import sys
from importlib import resources
from json.encoder import encode_basestring_ascii
from pathlib import Path

import jinja2
from jinja2.filters import do_tojson
from jinja2.nodes import EvalContext
from markupsafe import Markup

from clustergen.resolve import ResolvedCluster


def environment() -> jinja2.Environment:
    templates = resources.files("clustergen.templates")
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,  # configuration files and shell, not HTML
        auto_reload=False,  # one run: each template is read once, not checked per render
        bytecode_cache=_bytecode_cache(),
    )
    env.filters["tojson"] = tojson
    return env


@jinja2.pass_eval_context
def tojson(eval_ctx: EvalContext, value: object, indent: int | None = None) -> Markup:
    """Jinja's tojson, byte for byte, without its per-call overhead for the values the
    Ansible templates pass by the ten thousand (strings and booleans): the same JSON
    json.dumps writes, with <, >, & and ' escaped as Jinja escapes them. Anything else
    goes to Jinja's own filter."""
    if indent is None and type(value) is str:
        text = encode_basestring_ascii(value)
    elif type(value) is bool:
        text = "true" if value else "false"
    else:
        return do_tojson(eval_ctx, value, indent)
    return Markup(
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("'", "\\u0027")
    )


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """Compiled templates kept between runs, as Python keeps .pyc files: compiling them
    is most of a small render's time. Jinja checks each entry against its template's
    source, so an edited template is never served stale. Kept in XDG_CACHE_HOME (an
    absolute path), else ~/.cache, and only where no one else can plant an entry (a
    compiled template is Python code that runs when loaded): see _unsafe_folder.
    Otherwise the cache is ignored, with one line on stderr, and templates compile each
    run (as they do when the folder cannot be made). CLUSTERGEN_NO_CACHE=1 turns it off."""
    if os.environ.get("CLUSTERGEN_NO_CACHE"):
        return None
    base = os.environ.get("XDG_CACHE_HOME", "")
    try:
        # The XDG Base Directory spec: a relative XDG_CACHE_HOME is invalid and ignored.
        top = Path(base) if os.path.isabs(base) else Path.home() / ".cache"
        folder = top / "clustergen" / f"jinja2-{jinja2.__version__}"
        unsafe = _unsafe_folder(folder)  # before making anything in a folder of others'
        if unsafe is None:
            _make_private(folder)
            unsafe = _unsafe_folder(folder)
    except (OSError, RuntimeError):  # RuntimeError: no home folder to expand
        return None
    if unsafe:
        if unsafe not in _REFUSED:
            _REFUSED.add(unsafe)
            print(f"clustergen: template cache not used: {unsafe}", file=sys.stderr)
        return None
    if not os.access(folder, os.W_OK):
        return None
    return jinja2.FileSystemBytecodeCache(str(folder))


# What _bytecode_cache said on stderr, so that a process says it once.
_REFUSED: set[str] = set()


def _unsafe_folder(folder: Path) -> str | None:
    """Why someone other than this user or root could put files in `folder` or swap a
    folder on the way to it; None if no one can. Every existing folder from `folder` up
    to / is checked, on the path as written and on the path the kernel resolves (links
    followed): each belongs to this user or root and is not writable by group or others;
    a folder above the cache folder may be, with the sticky bit (as /tmp), where others
    cannot move or remove what is not theirs. `folder` itself is never a link.

    This is OpenSSH's StrictModes rule for ~/.ssh (auth.c, safe_path), carried on past the
    home folder to /, since XDG_CACHE_HOME may lie anywhere. pip checks less (only that
    the first existing folder of its cache is writable, or root's when run as root), and
    CPython's __pycache__ relies on the permissions of the source tree."""
    user = os.geteuid()
    for path in (folder, Path(os.path.realpath(folder))):
        for at in (path, *path.parents):
            try:
                info = os.lstat(at)
            except FileNotFoundError:
                continue  # made below, by this user
            if info.st_uid not in (user, 0):
                return f"{at} belongs to uid {info.st_uid}, not to uid {user} or root"
            if stat.S_ISLNK(info.st_mode):
                if at == folder:
                    return f"{at} is a symbolic link"
                continue  # the link's folder is checked next, its target on the resolved path
            open_to_others = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
            sticky = info.st_mode & stat.S_ISVTX and at not in (folder, path)
            if open_to_others and not sticky:
                return f"{at} can be written by others (mode {stat.S_IMODE(info.st_mode):04o})"
    return None


def _make_private(folder: Path) -> None:
    """Make the missing folders down to `folder`, each 0700 (mkdir(parents=True) gives
    the parents the umask's mode, which may leave them group-writable)."""
    missing = [at for at in (folder, *folder.parents) if not os.path.lexists(at)]
    for at in reversed(missing):
        os.mkdir(at, 0o700)


def render_template(
    env: jinja2.Environment, name: str, cluster: ResolvedCluster, **values: object
) -> str:
    """Render one template with the spec. The spec's file name is not handed over: a
    rendered file depends on what the spec says, never on what its file is called."""
    template = env.get_template(name)
    return template.render(spec=cluster.spec, **values)
