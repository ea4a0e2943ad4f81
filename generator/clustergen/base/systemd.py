"""systemd's spelling of names and command words, for the units clustergen renders."""

from __future__ import annotations

# systemd refuses a unit whose name (suffix included) is longer than this.
UNIT_NAME_MAX = 255


def unit_word(value: str) -> str:
    """A word of a systemd unit's command line: '%' starts a specifier there (%j is the
    unit's name), so a literal one is written '%%' (Lustre's jobid_name %j, %u...)."""
    return value.replace("%", "%%")


def unit_name(path: str, suffix: str) -> str:
    """systemd-escape --path: /mnt/lustre -> mnt-lustre.mount (systemd.unit(5), "String
    Escaping for Inclusion in Unit Names"): the slashes at either end are dropped and the
    inner ones become '-'; every byte other than an ASCII letter or digit, ':', '_' or
    '.' is written C-style (\\x2d for '-'), and so is a '.' that would start the name;
    the root is '-'."""
    parts = [p for p in path.split("/") if p]
    out = ""
    for ch in "/".join(parts):
        if ch == "/":
            out += "-"
        elif (ch.isascii() and ch.isalnum()) or ch in ":_" or (ch == "." and out):
            out += ch
        else:
            out += "".join(f"\\x{b:02x}" for b in ch.encode())
    return (out or "-") + "." + suffix
