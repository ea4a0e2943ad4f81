"""slurm.options: the keys the pinned Slurm accepts (folklore, removed and renamed keys,
duplicates, secrets), settings that loosen authentication and containment, the metrics
endpoint, and SlurmUser."""

from __future__ import annotations

import re

from clustergen.base import codes
from clustergen.base.errors import Problem
from clustergen.base.suggest import did_you_mean
from clustergen.catalog.slurm_keys import (
    DEPRECATED_KEYS,
    DERIVED_KEYS,
    KEY_LIST_VERSIONS,
    PRIVATE_DATA,
    SECRET_KEYS,
    accepted_keys,
    key_list_version,
    release_name,
)
from clustergen.catalog.slurm_programs import program_arguments
from clustergen.catalog.versions import VersionTuple, parse_version
from clustergen.model import Spec
from clustergen.model.syntax import WORDS_KEYS
from clustergen.resolve import ResolvedCluster

# Keys from blog posts that no parser since 22.05 accepts, with where the setting lives now.
_FOLKLORE_KEYS = {
    "maxjobsperuser": "per-user job limits belong to QOS or associations (sacctmgr)",
    "maxconcurrentjobs": "job limits belong to QOS or associations (sacctmgr)",
    "cachegroups": "removed from Slurm; group caching is automatic",
    "schedulerport": "removed from Slurm (the builtin/backfill schedulers need no port)",
    "memlimitenforce": "removed from Slurm; memory is enforced by cgroup.conf ConstrainRAMSpace",
}


# Authentication clustergen accepts: MUNGE, or Slurm's own auth/slurm and cred/slurm from
# 23.11, where they first shipped (slurm.conf(5) AuthType, CredType; SchedMD's
# authentication.html). auth/none and cred/none let anyone act as any user.
_AUTH_TYPES: tuple[tuple[str, VersionTuple], ...] = (("auth/munge", (0,)), ("auth/slurm", (23, 11)))


_CRED_TYPES: tuple[tuple[str, VersionTuple], ...] = (("cred/munge", (0,)), ("cred/slurm", (23, 11)))


# A credential inside any value: a URL's user:password@ (RFC 3986 3.2.1 userinfo, e.g.
# JobCompLoc=https://elastic:pw@host for jobcomp/elasticsearch), or a token or password
# passed as a parameter.
_CREDENTIAL = re.compile(
    r"[a-z][a-z0-9+.-]*://[^/\s@]*:[^/\s@]*@|(?:^|[?&,;\s])"
    r"(?:password|passwd|pass|token|secret|api_?key)=",
    re.IGNORECASE,
)


# The accounts clustergen's roles know: the slurm account they create, or root.
_SLURM_USERS = ("slurm", "root")


def check(cluster: ResolvedCluster) -> list[Problem]:
    """slurm.options against the keys of the pinned Slurm, what loosens authentication
    and containment, the metrics endpoint and SlurmUser."""
    spec = cluster.spec
    return [
        *_options(spec),
        *_weakening(spec),
        *_spaces(spec),
        *_program_arguments(spec),
        *_open_metrics(spec),
        *_slurm_user(spec),
    ]


def _options(spec: Spec) -> list[Problem]:
    list_version = key_list_version(spec.software.slurm)
    if list_version is None:
        return []  # the software check reports the unsupported version
    accepted = accepted_keys(list_version)
    derived = {key.lower(): (key, where) for key, where in DERIVED_KEYS.items()}
    deprecated = {key.lower(): (key, where) for key, where in DEPRECATED_KEYS.items()}
    problems = _duplicate_options(spec)
    for key in spec.slurm.options:
        path = ("slurm", "options", key)
        lowered = key.lower()
        if lowered in SECRET_KEYS or _CREDENTIAL.search(str(spec.slurm.options[key])):
            problems.append(_credential(key))
        elif lowered in deprecated:
            name, where = deprecated[lowered]
            problems.append(
                Problem(
                    codes.SLURM_OPTION_DEPRECATED,
                    path,
                    f"{name} is deprecated and not written; use {where}",
                    at="key",
                )
            )
        elif lowered in derived:
            name, where = derived[lowered]
            problems.append(
                Problem(
                    codes.SLURM_OPTION_DERIVED,
                    path,
                    f"clustergen writes {name} itself from {where}",
                    at="key",
                )
            )
        elif lowered in accepted and accepted[lowered].defunct:
            problems.append(
                Problem(
                    codes.SLURM_OPTION_DEFUNCT,
                    path,
                    f"{accepted[lowered].name} is defunct in Slurm {release_name(list_version)}: "
                    "slurmctld logs an error and ignores it",
                    at="key",
                )
            )
        elif lowered in accepted and accepted[lowered].removed:
            problems.append(
                Problem(
                    codes.SLURM_OPTION_UNKNOWN,
                    path,
                    f"{accepted[lowered].name} was removed from Slurm: slurmctld "
                    f"{release_name(list_version)} stops with a fatal error on it"
                    f"{_removed_detail(accepted[lowered].name, accepted[lowered].note)}; "
                    "remove it",
                    at="key",
                )
            )
        elif lowered not in accepted:
            hint = _FOLKLORE_KEYS.get(lowered)
            live = (k.name for k in accepted.values() if not (k.defunct or k.removed))
            detail = f"; {hint}" if hint else _other_versions(lowered, list_version)
            detail = detail or did_you_mean(key, live)
            problems.append(
                Problem(
                    codes.SLURM_OPTION_UNKNOWN,
                    path,
                    f"'{key}' is not a slurm.conf key in {_slurm_label(spec, list_version)} "
                    f"(slurmctld would refuse to start){detail}",
                    at="key",
                )
            )
    return problems


def _credential(key: str) -> Problem:
    """A key that holds a password (SECRET_KEYS), or a value with a credential in it."""
    lowered = key.lower()
    if lowered in SECRET_KEYS:
        return Problem(
            codes.SLURM_OPTION_SECRET,
            ("slurm", "options", key),
            f"{SECRET_KEYS[lowered]} holds a password, which would be written into "
            "slurm.conf for anyone who reads the rendered tree; clustergen renders no "
            "secret (slurmdbd's comes from the vault: "
            "slurm.accounting.database.password_variable)",
            at="key",
        )
    return Problem(
        codes.SLURM_OPTION_SECRET,
        ("slurm", "options", key),
        f"{key} holds a credential (a user:password@ or a token in its value), which would "
        "be written into slurm.conf, readable by every user on every node and by anyone who "
        "reads the rendered tree; clustergen renders no secret: give the service its "
        "credential another way (a file only SlurmUser reads, or the service's own "
        "configuration)",
    )


def _duplicate_options(spec: Spec) -> list[Problem]:
    """A key given twice in different case: slurmctld reads keys in any case and keeps one
    of the two, while a reader (a reviewer, the slurm role) may take the other."""
    first: dict[str, str] = {}
    problems = []
    for key in spec.slurm.options:
        seen = first.setdefault(key.lower(), key)
        if seen != key:
            problems.append(
                Problem(
                    codes.SLURM_OPTION_DUPLICATE,
                    ("slurm", "options", key),
                    f"{key} is {seen} again, in other case: Slurm reads keys in any case, so "
                    "the file would say two things for one key; give it once",
                    at="key",
                )
            )
    return problems


def _removed_detail(name: str, note: str) -> str:
    """' (FastSchedule=1 only logs ...)' from a key list's note 'removed: fatal, but =1 ...'."""
    _, _, exception = note.partition(", but ")
    return f" ({name}{exception})" if exception else ""


def _slurm_label(spec: Spec, list_version: tuple[int, ...]) -> str:
    """'Slurm 23.11', or for a release between key lists, which list it was checked against."""
    pinned = spec.software.slurm
    if release_name(list_version) == ".".join(pinned.split(".")[:2]):
        return f"Slurm {release_name(list_version)}"
    return f"Slurm {pinned} (checked against the {release_name(list_version)} key list)"


def _other_versions(lowered: str, list_version: tuple[int, ...]) -> str:
    """'; ... only from Slurm 24.11 on' when another release's parser acts on the key."""
    live_in = [
        v
        for v in KEY_LIST_VERSIONS
        if lowered in accepted_keys(v)
        and not (accepted_keys(v)[lowered].defunct or accepted_keys(v)[lowered].removed)
    ]
    newer = [v for v in live_in if v > list_version]
    older = [v for v in live_in if v < list_version]
    if newer and not older:
        name = accepted_keys(newer[0])[lowered].name
        return f"; {name} is a slurm.conf key only from Slurm {release_name(newer[0])} on"
    if older:
        name = accepted_keys(older[-1])[lowered].name
        return f"; Slurm {release_name(older[-1])} was the last to accept {name}"
    ignored_in = [v for v in KEY_LIST_VERSIONS if v < list_version and lowered in accepted_keys(v)]
    if ignored_in:
        name = accepted_keys(ignored_in[-1])[lowered].name
        return (
            f"; {name} was defunct (read and ignored) up to Slurm "
            f"{release_name(ignored_in[-1])} and is gone since"
        )
    return ""


def _weakening(spec: Spec) -> list[Problem]:
    """slurm.options that loosen what clustergen writes for authentication and containment,
    each allowed only by the spec key that turns that protection off."""
    release = parse_version(spec.software.slurm)[:2]
    isolation = spec.slurm.isolation
    problems = []

    def weakens(key: str, message: str) -> None:
        problems.append(
            Problem(codes.SLURM_OPTION_WEAKENS_SECURITY, ("slurm", "options", key), message)
        )

    for key, value in spec.slurm.options.items():
        lowered, words = key.lower(), _words(value)
        for name, allowed_types, what, harm in (
            ("authtype", _AUTH_TYPES, "AuthType", "lets any process claim any user's identity"),
            (
                "credtype",
                _CRED_TYPES,
                "CredType",
                "lets slurmd accept job credentials nobody signed",
            ),
        ):
            if lowered != name:
                continue
            allowed = [kind for kind, since in allowed_types if release >= since]
            if str(value).strip().lower() not in allowed:
                weakens(
                    key,
                    f"{what}={value} {harm}; Slurm {spec.software.slurm} takes "
                    f"{' or '.join(allowed)} here (clustergen writes {allowed[0]}), and no "
                    "spec key allows another",
                )
        contained = words & {"contain", "x11"}  # X11 implies Contain (slurm.conf(5))
        if lowered == "prologflags" and not contained:
            needs = [
                name
                for name, on in (
                    ("ssh_adopt", isolation.ssh_adopt),
                    ("job_tmpfs", isolation.job_tmpfs),
                )
                if on
            ]
            if needs:
                weakens(
                    key,
                    f"PrologFlags={value} drops Contain, which "
                    + " and ".join(f"slurm.isolation.{name}" for name in needs)
                    + " need (the extern step that ssh sessions and the job's private /tmp "
                    "live in); add Contain, or set "
                    + " and ".join(f"slurm.isolation.{name}: false" for name in needs),
                )
        missing = [word for word in PRIVATE_DATA if word not in words]
        if lowered == "privatedata" and isolation.private_data and missing:
            weakens(
                key,
                f"PrivateData={value} lets users see each other's {', '.join(missing)}; "
                f"keep {','.join(PRIVATE_DATA)} in it, or set slurm.isolation.private_data: "
                "false",
            )
        if lowered in ("jobcontainertype", "namespacetype") and isolation.job_tmpfs:
            weakens(
                key,
                f"clustergen writes the per-job /tmp and /dev/shm plugin itself from "
                f"slurm.isolation.job_tmpfs; set job_tmpfs: false to choose {value}",
            )
        if (
            lowered == "launchparameters"
            and isolation.ssh_adopt
            and "ulimit_pam_adopt" not in words
        ):
            weakens(
                key,
                f"LaunchParameters={value} lacks ulimit_pam_adopt, so an ssh session "
                "adopted into a job keeps sshd's limits, not the job's; add it, or set "
                "slurm.isolation.ssh_adopt: false",
            )
    return problems


_WORDS_KEYS = {key.lower() for key in WORDS_KEYS}


def _spaces(spec: Spec) -> list[Problem]:
    """A space in the value of a key that takes one word: Slurm reads the quoted value
    whole, spaces and all, where its writer meant a list (`bf_continue bf_window=4320`)."""
    return [
        Problem(
            codes.SYNTAX_CONF_VALUE,
            ("slurm", "options", key),
            f"'{value}': {key} takes one word (a list is comma-separated), and the space "
            f"would be part of the value slurmctld reads; only {' and '.join(WORDS_KEYS)} "
            "take words",
        )
        for key, value in spec.slurm.options.items()
        if " " in str(value) and key.lower() not in _WORDS_KEYS
    ]


def _program_arguments(spec: Spec) -> list[Problem]:
    """RebootProgram's arguments, each a plain word: slurmd runs its whole value through a
    shell, as root (catalog/slurm_programs.program_arguments)."""
    return [
        Problem(
            codes.SLURM_OPTION_WEAKENS_SECURITY,
            ("slurm", "options", key),
            f"'{argument}' is no plain word (letters, digits and _./=:,@+%-), and slurmd runs "
            "RebootProgram's whole value through a shell, as root",
        )
        for key, argument in program_arguments(spec.slurm.options)
    ]


def _words(value: object) -> set[str]:
    return {word.strip().lower() for word in str(value).split(",") if word.strip()}


def _open_metrics(spec: Spec) -> list[Problem]:
    """MetricsParameters=ignore_private_data while slurm.isolation.private_data is on."""
    return [
        Problem(
            codes.SLURM_OPTION_WEAKENS_SECURITY,
            ("slurm", "options", key),
            f"MetricsParameters={value} shows every user's jobs to anyone who reaches "
            "slurmctld's port, which slurm.isolation.private_data keeps private; name the "
            "scraper's account in monitoring.slurm.auth_users instead, or set "
            "private_data: false",
        )
        for key, value in spec.slurm.options.items()
        if key.lower() == "metricsparameters"
        and "ignore_private_data" in _words(value)
        and spec.slurm.isolation.private_data
    ]


def _slurm_user(spec: Spec) -> list[Problem]:
    """A SlurmUser the roles create (checks/trusted_paths: the paths the options name)."""
    return [
        Problem(
            codes.SLURM_OPTION_WEAKENS_SECURITY,
            ("slurm", "options", key),
            f"SlurmUser={value}: slurmctld would run as an account the roles do not "
            "create, with the state, keys and programs of the cluster; give slurm "
            "(the account clustergen creates) or root",
        )
        for key, value in spec.slurm.options.items()
        if key.lower() == "slurmuser" and str(value).strip() not in _SLURM_USERS
    ]
