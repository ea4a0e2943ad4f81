"""ansible: how the rendered site repository is applied. `pull`: every node converges
itself from the site's git repository with ansible-pull, on a systemd timer
(docs/ansible.md "Pull mode"). Absent: push only (ansible-playbook from one host)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from clustergen.model.common import StrictModel
from clustergen.model.syntax import Syntax

# A git repository URL as git clone takes it: a URL of a transport git knows, or the
# scp-like form user@host:path (git-clone(1) "GIT URLS"). No spaces, quotes, '$', ';',
# '#' or braces: the URL is written into a shell-sourced settings file and reaches Ansible.
GIT_REPOSITORY = Syntax(
    r"^(?:(?:https?|ssh|git|file)://[A-Za-z0-9._~:/?@&+,=%\[\]-]+"
    r"|[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[A-Za-z0-9._~/+-]+)$",
    "a git URL (https://, ssh://, git://, file:// or user@host:path) of letters, digits and "
    "._~:/?@&+,=%[]-",
)
# A branch, tag or commit: git-check-ref-format(1)'s rules, narrowed to letters, digits
# and ._/- with no '..', no segment starting with '.', and no trailing '.lock' or '/'.
GIT_REF = Syntax(
    r"^(?!.*\.\.)(?!.*/\.)(?!.*\.lock$)[A-Za-z0-9][A-Za-z0-9._/-]*(?<![/.])$",
    "a branch, tag or commit of letters, digits and ._/- (git-check-ref-format: no '..', "
    "no segment starting with '.', no trailing '/', '.' or '.lock')",
)
# The tree's folder inside the repository: relative, no '.', '..' or empty segments.
_SEGMENT = r"(?!\.\.?(?:/|$))[A-Za-z0-9_.+@,:=~-]+"
TREE_PATH = Syntax(
    rf"^(?:{_SEGMENT}(?:/{_SEGMENT})*)?$",
    "a relative folder of letters, digits and _.+@,:=~/- with no '.', '..' or empty segments "
    "('' for the repository's top)",
)
# A systemd time span in one unit (systemd.time(7): s, min, h, d), as the timer takes it.
TIME_SPAN = Syntax(
    r"^[1-9][0-9]{0,5}(?:s|min|h|d)$", "a time span such as 90s, 30min, 2h or 1d (systemd.time)"
)
JITTER_SPAN = Syntax(
    r"^(?:0|[1-9][0-9]{0,5}(?:s|min|h|d))$",
    "0 or a time span such as 90s, 10min or 1h (systemd.time)",
)


class Pull(StrictModel):
    """ansible-pull on every node, from the site's git repository, on a systemd timer."""

    repository: Annotated[str, GIT_REPOSITORY] = Field(
        description="The git repository the site commits the rendered tree to, as every node "
        "reaches it (git clone's URL).",
    )
    ref: Annotated[str, GIT_REF] = Field(
        default="main",
        description="The branch, tag or commit the nodes apply: the release the site approved "
        "(a commit or tag pins it; a branch follows what is merged).",
    )
    path: Annotated[str, TREE_PATH] = Field(
        default="",
        description="The folder of the rendered tree inside the repository ('' for its top).",
    )
    every: Annotated[str, TIME_SPAN] = Field(
        default="30min",
        description="How long after a run the next one starts (the timer's OnUnitActiveSec; "
        "also its first run after the timer starts, at boot or when the converge starts it, "
        "OnActiveSec).",
    )
    jitter: Annotated[str, JITTER_SPAN] = Field(
        default="10min",
        description="A random delay up to this, drawn anew for every run (the timer's "
        "RandomizedDelaySec), so the nodes do not all pull at once.",
    )


class Ansible(StrictModel):
    """How the rendered site repository is applied besides push (ansible-playbook)."""

    pull: Pull | None = Field(
        default=None,
        description="Pull mode: every node converges itself with ansible-pull from the site's "
        'git repository (docs/ansible.md "Pull mode"); absent: push only.',
    )
