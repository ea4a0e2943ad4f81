"""ansible.pull: the OS ships an ansible the roles run on (catalog/distributions.py).

The roles declare min_ansible_version 2.15 (roles/*/meta/main.yml; an older ansible-core
is refused by the error below), and they are tested on ansible-core 2.17.14 to 2.21.5
(tests/requirements.txt, the lock CI installs; an ansible-core between the two is
warned about). tests/test_pull.py reads both files, so these two numbers follow them.
"""

from __future__ import annotations

from clustergen.base import codes, openpgp
from clustergen.base.errors import Problem
from clustergen.catalog.distributions import DISTRIBUTIONS
from clustergen.catalog.versions import parse_version
from clustergen.model.ansible import Signer
from clustergen.resolve import ResolvedCluster, pull_mode

ROLES_MIN_ANSIBLE_CORE: tuple[int, int] = (2, 15)
TESTED_MIN_ANSIBLE_CORE: tuple[int, int] = (2, 17)


def pull(cluster: ResolvedCluster) -> list[Problem]:
    """Pull mode runs the distribution's own ansible-pull on every node: the catalog must
    know its packages, and its ansible-core must be one the roles run on."""
    if not pull_mode(cluster.spec):
        return []
    os = cluster.spec.software.os
    distribution = DISTRIBUTIONS[os]
    path = ("ansible", "pull")
    if distribution.ansible_core is None or distribution.ansible is None or not distribution.git:
        return [
            Problem(
                codes.ANSIBLE_PULL_NO_PACKAGE,
                path,
                f"the catalog knows no ansible, ansible-core and git packages of {os}, which "
                "pull mode installs on every node (known: "
                f"{', '.join(n for n, d in DISTRIBUTIONS.items() if d.ansible_core)}); apply "
                "this tree by push or from an automation controller (docs/ansible.md)",
            )
        ]
    core = parse_version(distribution.ansible_core)[:2]
    shipped = f"{distribution.title} ships ansible-core {distribution.ansible_core}"
    if core < ROLES_MIN_ANSIBLE_CORE:
        return [
            Problem(
                codes.ANSIBLE_PULL_CORE_TOO_OLD,
                path,
                f"{shipped}, older than the roles' min_ansible_version "
                f"{_dotted(ROLES_MIN_ANSIBLE_CORE)} (roles/*/meta/main.yml): pull mode "
                "cannot run them there; apply this tree by push from a newer Ansible",
            )
        ]
    if core < TESTED_MIN_ANSIBLE_CORE:
        return [
            Problem(
                codes.ANSIBLE_PULL_CORE_UNTESTED,
                path,
                f"{shipped}; the roles are tested on ansible-core "
                f"{_dotted(TESTED_MIN_ANSIBLE_CORE)} and later (tests/requirements.txt), so "
                "pull runs there use a release they were not tested with",
            )
        ]
    return []


def _dotted(version: tuple[int, int]) -> str:
    return ".".join(str(part) for part in version)


def pull_source(cluster: ResolvedCluster) -> list[Problem]:
    """What the nodes apply is named once (branch, tag or commit), signed by a signer
    the spec names (or deliberately unsigned, warned each time), and an ssh server's
    host keys are pinned."""
    ansible = cluster.spec.ansible
    if ansible is None or ansible.pull is None:
        return []
    pull = ansible.pull
    path = ("ansible", "pull")
    problems = []
    named = [key for key in ("branch", "tag", "commit") if getattr(pull, key) is not None]
    if pull.ref is not None:
        problems.append(
            Problem(
                codes.ANSIBLE_PULL_REF,
                (*path, "ref"),
                f"ref: {pull.ref} may name a branch and a tag at once, and git takes the "
                "branch, which anyone who can push a branch creates: give branch, tag or "
                "commit instead",
                at="key",
            )
        )
    if len(named) > 1:
        problems.append(
            Problem(
                codes.ANSIBLE_PULL_REF,
                (*path, named[1]),
                f"{' and '.join(named)} are both given: the nodes apply one of them",
                at="key",
            )
        )
    if not pull.signers and not pull.unsigned:
        problems.append(
            Problem(
                codes.ANSIBLE_PULL_UNSIGNED,
                path,
                "pull mode without signers: every node would apply whatever the repository "
                "serves, so whoever can push to it, or change what the nodes fetch, is root "
                "on every node; name who signs the releases in signers (SSH or OpenPGP "
                "keys), or set "
                "unsigned: true for a test repository",
            )
        )
    if pull.unsigned and not pull.signers:
        problems.append(
            Problem(
                codes.ANSIBLE_PULL_UNSIGNED_ALLOWED,
                (*path, "unsigned"),
                "pull mode applies unsigned commits: whoever can push to the repository, or "
                "change what the nodes fetch, is root on every node",
            )
        )
    for index, signer in enumerate(pull.signers):
        problems += _signer_key(signer, (*path, "signers", index))
    if pull.over_ssh and not pull.host_keys:
        problems.append(
            Problem(
                codes.ANSIBLE_PULL_HOST_KEYS,
                (*path, "repository"),
                "an ssh repository without host_keys: the nodes could not tell the git server "
                "from another; give its known_hosts lines (ssh-keyscan, checked out of band)",
            )
        )
    return problems


def _signer_key(signer: Signer, path: tuple[str | int, ...]) -> list[Problem]:
    """One key per signer: an SSH key, or an OpenPGP fingerprint with the armored key
    whose primary key it is (a reviewer reads the fingerprint; the nodes check against
    the key)."""
    gpg = signer.gpg_fingerprint is not None or signer.gpg_key is not None
    if signer.ssh_key is not None and gpg:
        why = (
            f"signer {signer.name} has both an ssh_key and an OpenPGP key: give one key per "
            "signer (a second entry for the other)"
        )
        return [Problem(codes.ANSIBLE_PULL_SIGNER_KEY, path, why)]
    if signer.ssh_key is None and not gpg:
        return [
            Problem(
                codes.ANSIBLE_PULL_SIGNER_KEY,
                path,
                f"signer {signer.name} has no key: give ssh_key, or gpg_fingerprint with gpg_key",
            )
        ]
    if not gpg:
        return []
    if signer.gpg_fingerprint is None or signer.gpg_key is None:
        missing = "gpg_key" if signer.gpg_key is None else "gpg_fingerprint"
        return [
            Problem(
                codes.ANSIBLE_PULL_SIGNER_KEY,
                path,
                f"signer {signer.name} has no {missing}: an OpenPGP signer needs its "
                "fingerprint (what the reviewer checks) and its armored key (what the "
                "nodes check the signature with)",
            )
        ]
    try:
        found = openpgp.fingerprint(signer.gpg_key)
    except openpgp.NotAPublicKey as error:
        why = f"gpg_key of signer {signer.name} is no OpenPGP public key the nodes can use: {error}"
        return [Problem(codes.ANSIBLE_PULL_SIGNER_KEY, (*path, "gpg_key"), why)]
    if found != signer.gpg_fingerprint:
        return [
            Problem(
                codes.ANSIBLE_PULL_SIGNER_KEY,
                (*path, "gpg_fingerprint"),
                f"gpg_key of signer {signer.name} is the key {found}, not "
                f"{signer.gpg_fingerprint}: export the key of that fingerprint, or correct "
                "the fingerprint",
            )
        ]
    return []
