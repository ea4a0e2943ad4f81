"""The QOS slurmdbd holds, read from `sacctmgr show qos --parsable2` output (given with
`import slurm --qos FILE`): each becomes a slurm.qos entry with the settings the spec
models (Priority, Preempt, PreemptMode, GraceTime); every other setting a QOS holds is
said as not imported at its line. Without the file, the QOS the partitions name are
created with Slurm's defaults, for the admin to review."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from clustergen.base.errors import UsageError
from clustergen.importer.records import ImportNotes, Unrepresented
from clustergen.importer.shapes import PartitionShape, QosShape

# A file larger than this is no `sacctmgr show qos` output of a real site (some 300 bytes
# a QOS): refused before it is read.
MAX_QOS_FILE_BYTES = 4 << 20
# sacctmgr(1)'s QOS columns the spec models, lower case, to slurm.qos keys.
_MODELLED = ("name", "priority", "preempt", "preemptmode", "gracetime")
# What `sacctmgr show qos` prints for a setting left at its default (sacctmgr(1),
# "SPECIFICATIONS FOR QOS"; 22.05 to 25.11): nothing, UsageFactor 1, PreemptMode
# "cluster" (slurm.conf's PreemptMode), a zero Priority or GraceTime, no exempt time.
_DEFAULTS = {
    "usagefactor": {"1.000000", "1"},
    "usagethres": {""},
    "preemptexempttime": {"", "00:00:00"},
}
# Columns that are no setting: slurmdbd's own number of the QOS.
_NOT_SETTINGS = ("id",)
_SLURM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_GRACE = re.compile(r"(?:(\d+)-)?(\d+):(\d{2}):(\d{2})")
_MODES = ("CANCEL", "REQUEUE", "SUSPEND")


def read_qos_file(path: Path) -> list[tuple[int, dict[str, str]]]:
    """(line number, column as the header names it -> value) for each QOS of the output;
    exit 2 where the file is no such output."""
    try:
        if path.stat().st_size > MAX_QOS_FILE_BYTES:
            raise UsageError(f"{path}: larger than {MAX_QOS_FILE_BYTES >> 20} MiB")
        text = path.read_bytes().decode("utf-8-sig")  # a copy saved with a BOM reads too
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: not readable: {exc}") from exc
    lines = [(number, line) for number, line in enumerate(text.splitlines(), 1) if line.strip()]
    header = [column.strip() for column in lines[0][1].split("|")] if lines else []
    if "name" not in (column.lower() for column in header):
        raise UsageError(
            f"{path}:{lines[0][0] if lines else 1}:1: no header line naming a Name column: give "
            "the output of `sacctmgr show qos --parsable2` (its first line names the columns)"
        )
    rows = []
    for number, line in lines[1:]:
        values = line.split("|")
        if len(values) != len(header):
            raise UsageError(
                f"{path}:{number}:1: {len(values)} fields where the header names {len(header)}"
            )
        rows.append((number, dict(zip(header, (v.strip() for v in values), strict=True))))
    return rows


def _grace_seconds(value: str) -> int | None:
    match = _GRACE.fullmatch(value)
    if match is None:
        return None
    days, hours, minutes, seconds = (int(part or 0) for part in match.groups())
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


def _entry(
    where: str, row: dict[str, str], report: Callable[[Unrepresented], None]
) -> QosShape | None:
    """The slurm.qos entry of one QOS; what it holds beyond the modelled settings is said."""
    values = {column.lower(): value for column, value in row.items()}
    name = values["name"]
    if not _SLURM_NAME.fullmatch(name):
        report(Unrepresented(where, f"Name={name}", "not a QOS name slurm.qos takes"))
        return None
    entry: QosShape = {"name": name}
    priority = values.get("priority", "")
    if priority.isdigit() and int(priority):
        entry["priority"] = int(priority)
    elif priority not in ("", "0"):
        report(Unrepresented(where, f"Priority={priority}", "not a whole number"))
    preempt = [word for word in values.get("preempt", "").split(",") if word]
    for word in [word for word in preempt if not _SLURM_NAME.fullmatch(word)]:
        report(Unrepresented(where, f"Preempt={word}", "not a QOS name slurm.qos takes"))
        preempt.remove(word)
    if preempt:
        entry["preempt"] = preempt
    mode = values.get("preemptmode", "").upper()
    if mode in _MODES:
        entry["preempt_mode"] = mode
    elif mode not in ("", "CLUSTER"):
        report(
            Unrepresented(
                where,
                f"PreemptMode={values['preemptmode']}",
                "slurm.qos takes CANCEL, REQUEUE or SUSPEND (or none: slurm.preemption.mode)",
            )
        )
    grace = values.get("gracetime", "")
    seconds = _grace_seconds(grace)
    if seconds:
        entry["grace_time_s"] = seconds
    elif seconds is None and grace:
        report(Unrepresented(where, f"GraceTime={grace}", "not a time sacctmgr prints"))
    for column, value in row.items():
        lowered = column.lower()
        if lowered in (*_MODELLED, *_NOT_SETTINGS) or value in _DEFAULTS.get(lowered, {""}):
            continue
        report(
            Unrepresented(
                where,
                f"{column}={value}",
                "slurm.qos holds priority, preempt, preempt_mode and grace_time_s: keep this "
                f"with `sacctmgr modify qos {name} set ...`",
            )
        )
    return entry


def qos_entries(
    accounting: bool,
    partitions: list[PartitionShape],
    result: ImportNotes,
    qos_file: Path | None,
) -> list[QosShape]:
    """slurm.qos: each QOS of `qos_file` (slurmdbd's own `normal` only where it holds a
    modelled setting), and each QOS the partitions name (QOS=, AllowQos=) that the file
    lacks, with Slurm's defaults and a line for the admin to review. `accounting`: the
    cluster has slurmdbd, which alone keeps QOS."""
    report = result.unrepresented.append
    named: list[str] = []
    for partition in partitions:
        named += [partition["qos"]] if "qos" in partition else []
        named += partition.get("allow_qos", [])
    entries: dict[str, QosShape] = {}
    if qos_file is not None:
        rows = read_qos_file(qos_file)
        for number, values in rows:
            where = f"{qos_file.name}:{number}"
            if not accounting:
                name = next(v for c, v in values.items() if c.lower() == "name")
                report(
                    Unrepresented(
                        where,
                        f"Name={name}",
                        "slurm.conf names no slurmdbd "
                        "(AccountingStorageType=accounting_storage/slurmdbd): no QOS to keep",
                    )
                )
                continue
            entry = _entry(where, values, report)
            if entry is not None and (entry["name"] != "normal" or len(entry) > 1):
                entries[entry["name"]] = entry
    # A Preempt list may name a QOS the file leaves out (an output filtered to some QOS):
    # slurmdbd holds it, so slurm.qos names it too.
    for entry in entries.values():
        named += entry.get("preempt", [])
    unknown = [
        n for n in dict.fromkeys(named) if n != "normal" and n.upper() != "ALL" and n not in entries
    ]
    for name in unknown:
        entries[name] = {"name": name}
    if unknown:
        source = f"not in {qos_file.name}" if qos_file else "known only to slurmdbd"
        result.changes.append(
            f"slurm.qos: {', '.join(unknown)}, which the partitions or QOS name ({source}), are "
            "created with Slurm's defaults where slurmdbd lacks them: review their limits "
            "against `sacctmgr show qos` (or import with --qos and its --parsable2 output)"
        )
    return list(entries.values())
