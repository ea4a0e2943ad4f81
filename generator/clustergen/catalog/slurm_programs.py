"""slurm.conf keys that name what root, SlurmUser or every job runs, loads or trusts: the
paths validate holds to the rule of checks/trusted_paths.py, and `import slurm` leaves out
where users can write."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

# slurm.conf keys naming a program that root or SlurmUser runs, and who runs it
# (slurm.conf(5), each key's entry). A value may list several, comma-separated (Prolog and
# Epilog since 21.08; harmless to read so for the others).
_PROGRAM_KEYS = {
    "prolog": "slurmd runs it as root",
    "epilog": "slurmd runs it as root",
    "rebootprogram": "slurmd runs it as root",
    "unkillablestepprogram": "slurmstepd runs it as root",
    "prologslurmctld": "slurmctld runs it as SlurmUser",
    "epilogslurmctld": "slurmctld runs it as SlurmUser",
    "resvprolog": "slurmctld runs it as SlurmUser",
    "resvepilog": "slurmctld runs it as SlurmUser",
    "slurmctldprimaryonprog": "slurmctld runs it as SlurmUser",
    "slurmctldprimaryoffprog": "slurmctld runs it as SlurmUser",
    "resumeprogram": "slurmctld runs it as SlurmUser",
    "suspendprogram": "slurmctld runs it as SlurmUser",
    "resumefailprogram": "slurmctld runs it as SlurmUser",
    "mailprog": "slurmctld runs it as SlurmUser",
    # 25.11 on: the program slurmctld runs for jobcomp's password (slurm.conf(5)
    # JobCompPassScript; in the key lists of catalog/slurm_keys from 25.11).
    "jobcomppassscript": "slurmctld runs it as SlurmUser for jobcomp's password",
    "taskprolog": "slurmstepd runs it as the job's user, in every job",
    "taskepilog": "slurmstepd runs it as the job's user, in every job",
    "srunprolog": "srun runs it as the job's user, in every job",
    "srunepilog": "srun runs it as the job's user, in every job",
    # Not a program, but the file that lists the SPANK plugins slurmd and slurmstepd
    # load as root (slurm.conf(5) PlugStackConfig, spank(7)).
    "plugstackconfig": "slurmd and slurmstepd load the SPANK plugins it lists, as root",
    # Files the daemons write (a link a user plants there makes them overwrite what it
    # points to): the pid files and the scheduler log. The state, spool and log folders
    # the slurm role creates are checked where it creates them (checks/slurm.folders).
    "slurmdpidfile": "slurmd writes it as root, following a link planted there",
    "slurmctldpidfile": "slurmctld writes it, following a link planted there",
    "slurmschedlogfile": "slurmctld writes it as SlurmUser, following a link planted there",
}
# Keys whose `name=path` words name what the daemons trust (slurm.conf(5) AuthInfo socket=:
# the MUNGE socket that vouches for every uid; AuthAltParameters jwt_key= and jwks=: the
# keys that sign any user's token).
_TRUSTED_WORDS = {"authinfo": ("socket",), "authaltparameters": ("jwt_key", "jwks")}
# Keys whose every `name=path` word names a program the daemons run or a key or
# certificate they trust (Slurm 25.05 on, slurm.conf(5) CertmgrParameters: the scripts
# certmgr/script runs; TLSParameters: the CA, certificates and keys of tls/s2n): a word
# whose value is a path is checked, whatever its name.
_PATH_WORDS = {
    "certmgrparameters": "slurmctld and slurmd run it or trust what it names (certmgr)",
    # 25.05 on, slurm.conf(5) CertgenParameters: certgen/script's certgen_script and
    # keygen_script, which make the keys and certificates the daemons then trust.
    "certgenparameters": "the daemons run it and trust the keys it makes (certgen)",
    "tlsparameters": "the daemons trust the certificates and keys it names (TLS)",
}


# JobCompLoc as a path, by JobCompType (slurm.conf(5) JobCompLoc): jobcomp/script runs
# it; jobcomp/kafka reads it as librdkafka's configuration, whose plugin.library.paths
# slurmctld then loads (jobcomp_kafka_conf.c; librdkafka's CONFIGURATION.md);
# jobcomp/filetxt appends to it, following a link planted there.
_JOBCOMP_FILES = {
    "jobcomp/script": "slurmctld runs it as SlurmUser for every job (jobcomp/script)",
    "jobcomp/kafka": "slurmctld reads librdkafka's settings from it as SlurmUser, plugins "
    "to load included (jobcomp/kafka)",
    "jobcomp/filetxt": "slurmctld appends every job's record to it as SlurmUser, following "
    "a link planted there (jobcomp/filetxt)",
}
_JOBCOMP_FILE = "slurmctld writes or reads it as SlurmUser for every job (JobCompLoc)"


def slurm_option_paths(options: Mapping[str, object]) -> Iterator[tuple[str, str, str]]:
    """(key, path, who trusts it) for each path of slurm.conf `options` that a daemon or
    every job runs, loads or takes keys from."""
    lowered_options = {key.lower(): str(value) for key, value in options.items()}
    for key, value in options.items():
        lowered, text = key.lower(), str(value)
        if lowered in _PROGRAM_KEYS:
            for program in (p.strip() for p in text.split(",")):
                if program:  # the program, before its arguments (program_arguments)
                    yield key, program.split(" ", 1)[0], _PROGRAM_KEYS[lowered]
        elif lowered == "plugindir":
            for path in text.split(":"):
                if path:
                    yield key, path, "every daemon loads its plugins from it"
        elif lowered == "jobcomploc" and text.strip().startswith("/"):
            kind = lowered_options.get("jobcomptype", "").lower()
            yield key, text.strip(), _JOBCOMP_FILES.get(kind, _JOBCOMP_FILE)
        for word in text.split(","):
            name, equals, path = word.strip().partition("=")
            if equals and name.lower() in _TRUSTED_WORDS.get(lowered, ()):
                yield key, path, f"the daemons trust what {name} names"
            elif equals and lowered in _PATH_WORDS and "/" in path:
                yield key, path, f"{_PATH_WORDS[lowered]}: {name}="


# An argument of RebootProgram that no shell reads as syntax: slurmd checks the value's
# first word with access() and runs the whole value through system(), a shell
# (src/slurmd/slurmd/req.c, _rpc_reboot). The other program keys name a program alone,
# run without a shell: a space there is part of the file name, never an argument.
_PLAIN_ARGUMENT = re.compile(r"[A-Za-z0-9_./=:,@+%-]+")


def program_arguments(options: Mapping[str, object]) -> Iterator[tuple[str, str]]:
    """(key, argument) for each argument RebootProgram in slurm.conf `options` gives its
    program (`RebootProgram=/usr/bin/systemctl reboot`) that is not a plain word."""
    for key, value in options.items():
        if key.lower() == "rebootprogram":
            for argument in str(value).split()[1:]:
                if not _PLAIN_ARGUMENT.fullmatch(argument):
                    yield key, argument
