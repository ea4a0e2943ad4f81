"""ansible: how the rendered site repository is applied. `pull`: every node converges
itself from the site's git repository with ansible-pull, on a systemd timer
(docs/ansible.md "Pull mode"). Absent: push only (ansible-playbook from one host)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from clustergen.model.common import StrictModel
from clustergen.model.syntax import Syntax

# A git repository URL as git clone takes it (git-clone(1) "GIT URLS"), over a transport
# that authenticates the server: https:// or ssh://, or the scp-like form user@host:path
# (ssh); file:// for a local mirror on the node. No plain http:// or git://, whose
# answers anyone on the path can change, and no password or token in the URL (it would
# sit in pull.env on every node and in `ps`): ssh authenticates with the deploy key. No
# spaces, quotes, '$', ';', '#' or braces: the URL is written into a shell-sourced file.
GIT_REPOSITORY = Syntax(
    r"^(?:(?:https|ssh)://(?:[A-Za-z0-9._~-]+@)?[A-Za-z0-9._~:/?&+,=%\[\]-]+"
    r"|file:///[A-Za-z0-9._~:/+,=%-]+"
    r"|[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[A-Za-z0-9._~/+-]+)$",
    "a git URL over https://, ssh:// or user@host:path (or file:// for a local mirror) of "
    "letters, digits and ._~:/?&+,=%[]-, with no password or token in it",
)
# A commit: its full object name (40 hex digits, SHA-1; 64, SHA-256).
GIT_COMMIT = Syntax(
    r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$", "a full commit id (40 or 64 lower-case hex digits)"
)
# An allowed signer's principal (ssh-keygen(1) ALLOWED SIGNERS): a name or an address.
SIGNER_NAME = Syntax(r"^[A-Za-z0-9._+-]+(?:@[A-Za-z0-9.-]+)?$", "a name or an e-mail address")
# An SSH public key as one line of an authorized_keys file, without its comment.
SSH_PUBLIC_KEY = Syntax(
    r"^(?:ssh-ed25519|sk-ssh-ed25519@openssh\.com|ecdsa-sha2-nistp(?:256|384|521)"
    r"|sk-ecdsa-sha2-nistp256@openssh\.com|ssh-rsa) [A-Za-z0-9+/]+={0,3}$",
    "an SSH public key: its type and base64 (ssh-ed25519 AAAA...), without a comment",
)
# A known_hosts line (sshd(8) SSH_KNOWN_HOSTS FILE FORMAT): host names, key type, key.
KNOWN_HOST = Syntax(
    r"^[A-Za-z0-9.,:\[\]*_-]+ (?:ssh-ed25519|ecdsa-sha2-nistp(?:256|384|521)|ssh-rsa) "
    r"[A-Za-z0-9+/]+={0,3}$",
    "a known_hosts line: the server's names, its key's type and base64",
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


# An OpenPGP primary key's V4 fingerprint (RFC 4880 12.2), as `gpg --fingerprint` prints
# it without the blanks.
GPG_FINGERPRINT = Syntax(
    r"^[0-9A-F]{40}$", "40 upper-case hex digits, the key's fingerprint without blanks"
)
# An ASCII-armored OpenPGP public key block (RFC 4880 6.2), as `gpg --armor --export`
# writes it: the armor lines, optional headers, base64 and its checksum line.
GPG_PUBLIC_KEY = Syntax(
    r"^-----BEGIN PGP PUBLIC KEY BLOCK-----\n(?:[A-Za-z]+: [ -~]*\n)*\n?"
    r"(?:[A-Za-z0-9+/=]+\n)+-----END PGP PUBLIC KEY BLOCK-----\n?$",
    "an armored OpenPGP public key (gpg --armor --export FINGERPRINT)",
)
# The most an armored key of a signer takes: its primary key, subkeys and self-signatures
# (export-minimal); more is refused as input nobody reviews.
GPG_KEY_MAX = 16_384


class Signer(StrictModel):
    """One account allowed to sign the releases the nodes apply: by an SSH key, or by an
    OpenPGP key (its fingerprint and the key itself)."""

    name: Annotated[str, SIGNER_NAME] = Field(
        description="Who signs (the principal of the allowed signers file: a name or an "
        "e-mail address), for the record.",
    )
    ssh_key: Annotated[str, SSH_PUBLIC_KEY] | None = Field(
        default=None,
        description="The signer's SSH public key (git config gpg.format ssh: `git commit -S` "
        "with user.signingkey), its type and base64 without a comment. Either this, or "
        "gpg_fingerprint with gpg_key.",
    )
    gpg_fingerprint: Annotated[str, GPG_FINGERPRINT] | None = Field(
        default=None,
        description="The signer's OpenPGP primary key fingerprint (gpg --fingerprint, "
        "without blanks): a release signed by this key or one of its signing subkeys is "
        "applied (gpgv on the node, against gpg_key alone). With gpg_key.",
    )
    gpg_key: Annotated[str, GPG_PUBLIC_KEY, Field(max_length=GPG_KEY_MAX)] | None = Field(
        default=None,
        description="The signer's OpenPGP public key, ASCII-armored (gpg --armor "
        "--export-options export-minimal --export FINGERPRINT); validate checks that its "
        "primary key is gpg_fingerprint. With gpg_fingerprint.",
    )


class Pull(StrictModel):
    """ansible-pull on every node, from the site's git repository, on a systemd timer."""

    repository: Annotated[str, GIT_REPOSITORY] = Field(
        description="The git repository the site commits the rendered tree to, as every node "
        "reaches it: https:// or ssh:// (a deploy key, /etc/clustergen/pull-deploy-key, that "
        "only root reads), or file:// for a local mirror. No password or token in it.",
    )
    branch: Annotated[str, GIT_REF] | None = Field(
        default=None,
        description="The branch the nodes follow (refs/heads/BRANCH, never a tag of that "
        "name): each release the site moves it to. Default main, when neither tag nor commit "
        "is given. One of branch, tag and commit.",
    )
    tag: Annotated[str, GIT_REF] | None = Field(
        default=None,
        description="The tag the nodes apply (refs/tags/TAG, never a branch of that name). "
        "One of branch, tag and commit.",
    )
    commit: Annotated[str, GIT_COMMIT] | None = Field(
        default=None,
        description="The commit the nodes apply, by its full id. One of branch, tag and commit.",
    )
    ref: Annotated[str, GIT_REF] | None = Field(
        default=None,
        description="Refused: a name that may be a branch and a tag at once (git takes the "
        "branch); give branch, tag or commit.",
    )
    signers: list[Signer] = Field(
        default_factory=list,
        description="Who may sign a release: a node applies a commit only once it is found "
        "signed by one of these keys (an SSH signature: `git verify-commit` with a rendered "
        "allowed signers file; an OpenPGP one: gpgv with a keyring of these keys alone, "
        "and the primary key's fingerprint one of theirs). An unsigned commit, or one of "
        "another signer, keeps the node at its last good release and is recorded as a "
        "failed pull. Required unless unsigned.",
    )
    unsigned: bool = Field(
        default=False,
        description="Apply commits without checking a signature: whoever can push to the "
        "repository (or change what the nodes fetch) is then root on every node, so every "
        "validate and plan repeats a warning; for a test repository only.",
    )
    host_keys: list[Annotated[str, KNOWN_HOST]] = Field(
        default_factory=list,
        description="The git server's SSH host keys, as known_hosts lines, for an ssh "
        "repository (required there): the nodes connect only to a server with one of them.",
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

    @property
    def wanted(self) -> str:
        """What the nodes apply, as the script resolves it: refs/heads/BRANCH,
        refs/tags/TAG, or the commit's id."""
        if self.commit is not None:
            return self.commit
        if self.tag is not None:
            return f"refs/tags/{self.tag}"
        return f"refs/heads/{self.branch or 'main'}"

    @property
    def ssh_signers(self) -> list[Signer]:
        return [s for s in self.signers if s.ssh_key is not None]

    @property
    def gpg_signers(self) -> list[Signer]:
        return [s for s in self.signers if s.gpg_fingerprint is not None]

    @property
    def over_ssh(self) -> bool:
        return self.repository.startswith("ssh://") or "://" not in self.repository


class Ansible(StrictModel):
    """How the rendered site repository is applied besides push (ansible-playbook)."""

    pull: Pull | None = Field(
        default=None,
        description="Pull mode: every node converges itself with ansible-pull from the site's "
        'git repository (docs/ansible.md "Pull mode"); absent: push only.',
    )
