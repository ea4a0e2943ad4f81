"""Slurm config text for the twin and the test bed: logical lines, keys, rewrites, the
keys a Slurm release accepts, the private hosts file. Pure functions."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from clustergen.catalog.slurm_keys import accepted_keys, key_list_version
from clustergen.commands.twin.process import DaemonError

# slurm.conf keys removed without replacement: addresses, key files and
# plugin paths of the real site that make no sense on the test machine.
SITE_ONLY_SLURM_CONF = frozenset(
    {
        "slurmctldaddr",
        "controlmachine",
        "controladdr",
        "backupcontroller",
        "backupaddr",
        "authinfo",
        "authalttypes",
        "authaltparameters",
        "plugindir",
        "slurmschedlogfile",
        "jobcredentialprivatekey",
        "jobcredentialpubliccertificate",
    }
)
SITE_ONLY_ACCOUNTING_SLURM_CONF = frozenset(
    {
        "accountingstoragebackuphost",
        "accountingstorageexternalhost",
        "accountingstoragepass",
    }
)
SITE_ONLY_SLURMDBD_CONF = frozenset(
    {
        "authinfo",
        "authalttypes",
        "authaltparameters",
        "dbdbackuphost",
        "plugindir",
    }
)


@dataclass(frozen=True)
class SkippedLine:
    """A rendered line the test removed, and why."""

    line: str
    reason: str

    @property
    def key(self) -> str:
        return conf_key(self.line) or ""

    def __str__(self) -> str:
        return f"{self.line}  ({self.reason})"


@dataclass(frozen=True)
class ConfRewrite:
    text: str
    skipped: list[SkippedLine]
    overridden: list[str]  # rendered lines replaced or dropped as site-specific


def logical_lines(text: str) -> list[str]:
    """Lines as Slurm's parser sees them: a trailing backslash continues a line."""
    lines: list[str] = []
    pending = ""
    for raw in text.splitlines():
        if raw.endswith("\\"):
            pending += raw[:-1]
            continue
        lines.append(pending + raw)
        pending = ""
    if pending:
        lines.append(pending)
    return lines


def conf_key(line: str) -> str | None:
    """Lower-cased key of a config line (`NodeName=a b=c` -> nodename), None for blanks/comments."""
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return None
    first_token = stripped.split(None, 1)[0]
    return first_token.split("=", 1)[0].lower()


def conf_values(text: str, key: str) -> list[str]:
    """Values of every top-level `key=value` line (case-insensitive key)."""
    values = []
    for line in logical_lines(text):
        if conf_key(line) == key.lower():
            first_token = line.strip().split(None, 1)[0]
            values.append(first_token.split("=", 1)[1] if "=" in first_token else "")
    return values


def rewrite_conf(
    text: str,
    *,
    replace: Mapping[str, str],
    drop: Collection[str] = (),
    known_keys: Collection[str] | None = None,
    remove: Mapping[str, str] | None = None,
    keep: Callable[[str], bool] | None = None,
    keep_reason: str = "",
    unknown_reason: str = "key unknown to the installed Slurm",
    banner: str = "overrides for the local daemons, appended by clustergen",
) -> ConfRewrite:
    """Apply test overrides to a Slurm config file.

    replace: canonical key -> test value; every rendered line with that key is
        removed and `Key=value` is appended once at the end.
    drop: lower-case keys removed without replacement (site-only settings).
    known_keys: lower-case keys the installed parser accepts; other lines are
        removed and reported as skipped. None accepts everything.
    remove: lower-case key -> reason, or key prefix ending in `*` -> reason; matching
        lines are removed and reported as skipped (e.g. accounting removed for a test).
    keep: lower-case key -> whether a line of it may stay; the others are removed and
        reported as skipped with keep_reason. None keeps everything.
    """
    replaced = {key.lower() for key in replace}
    kept: list[str] = []
    skipped: list[SkippedLine] = []
    overridden: list[str] = []
    for line in logical_lines(text):
        key = conf_key(line)
        if key is None:
            kept.append(line)
        elif key in replaced or key in drop:
            overridden.append(line.strip())
        elif (reason := _removal_reason(key, remove)) is not None:
            skipped.append(SkippedLine(line.strip(), reason))
        elif keep is not None and not keep(key):
            skipped.append(SkippedLine(line.strip(), keep_reason))
        elif known_keys is not None and key not in known_keys:
            skipped.append(SkippedLine(line.strip(), unknown_reason))
        else:
            kept.append(line)
    kept.append("")
    kept.append(f"# --- {banner} ---")
    kept.extend(f"{key}={value}" for key, value in replace.items())
    return ConfRewrite("\n".join(kept) + "\n", skipped, overridden)


def _removal_reason(key: str, remove: Mapping[str, str] | None) -> str | None:
    for pattern, reason in (remove or {}).items():
        if key == pattern or (pattern.endswith("*") and key.startswith(pattern[:-1])):
            return reason
    return None


def known_keys(slurm_version: str) -> frozenset[str]:
    """Lower-cased slurm.conf keys the given Slurm accepts: the catalog's key list of
    that release or of the nearest older one (the list the validators use). A key
    listed as defunct still parses, so it counts."""
    list_version = key_list_version(slurm_version)
    if list_version is None:
        raise DaemonError(f"clustergen has no slurm.conf key list for Slurm {slurm_version}")
    return frozenset(accepted_keys(list_version))


def hosts_file_text(node_names: Sequence[str], own_hostname: str) -> tuple[str, dict[str, str]]:
    """A hosts file mapping each name to its own 127.0.0.x address (from .2 up)."""
    addresses: dict[str, str] = {}
    for name in node_names:
        if name not in addresses and name != "localhost":
            index = len(addresses) + 2
            addresses[name] = f"127.{index // 65536 % 256}.{index // 256 % 256}.{index % 256}"
    lines = [f"127.0.0.1 localhost {own_hostname}"]
    lines.extend(f"{address} {name}" for name, address in addresses.items())
    return "\n".join(lines) + "\n", addresses
