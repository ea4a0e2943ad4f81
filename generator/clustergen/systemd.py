"""systemd's spelling of names and command words, for the units clustergen renders."""

from __future__ import annotations

# systemd refuses a unit whose name (suffix included) is longer than this.
UNIT_NAME_MAX = 255


def unit_word(value: str) -> str:
    """A word of a systemd unit's command line: '%' starts a specifier there (%j is the
    unit's name), so a literal one is written '%%' (Lustre's jobid_name %j, %u...)."""
    return value.replace("%", "%%")


def unit_name(path: str, suffix: str) -> str:
    """systemd-escape --path: /mnt/lustre -> mnt-lustre.mount."""
    parts = [p for p in path.split("/") if p]
    escaped = []
    for part in parts:
        out = ""
        for i, ch in enumerate(part):
            if ch.isalnum() or ch in ":_" or (ch == "." and i > 0):
                out += ch
            else:
                out += "".join(f"\\x{b:02x}" for b in ch.encode())
        escaped.append(out)
    return ("-".join(escaped) or "-") + "." + suffix
