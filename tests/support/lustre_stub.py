#!/usr/bin/env python3
"""A recording stand-in for the Lustre, zfs and disk tools (linked under their names
as small wrappers that set STUB_TOOL, in a directory put first on PATH by tests/test_lustre.py).

Every call appends its argv as one JSON line to $STUB_LOG. What a tool prints and
returns comes from $STUB_DIR/<tool>[-<first arg>].out and .rc (default: nothing,
0; blkid: 2, "nothing found"). `hostname` prints $STUB_HOST. `lfs` keeps the
default layout of each directory and `lctl` the OST pools in $STUB_DIR, so the
layout and pool scripts can be run twice. A `.` argument (the layout script works
on the directory it entered) is logged as `<working directory>/.`, and its state is
kept under the directory it names.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

TOOL = os.environ["STUB_TOOL"]
ARGS = sys.argv[1:]
STATE = Path(os.environ["STUB_DIR"])


def canned() -> int:
    for name in (f"{TOOL}-{ARGS[0]}" if ARGS else None, TOOL):
        if name is None:
            continue
        out, rc = STATE / f"{name}.out", STATE / f"{name}.rc"
        if out.exists() or rc.exists():
            if out.exists():
                sys.stdout.write(out.read_text())
            return int(rc.read_text()) if rc.exists() else 0
    return 2 if TOOL == "blkid" else 0


def layout_file(directory: str) -> Path:
    return STATE / "lfs" / os.path.realpath(directory).strip("/").replace("/", "__")


def lfs() -> int:
    if ARGS[0] == "setstripe":
        layout_file(ARGS[-1]).parent.mkdir(exist_ok=True)
        layout_file(ARGS[-1]).write_text(json.dumps(ARGS[1:-1]))
        return 0
    if ARGS[0] == "getstripe":
        saved = layout_file(ARGS[-1])
        args = json.loads(saved.read_text()) if saved.exists() else ["-c", "1", "-S", "1048576"]
        print(yaml_layout(args))
        return 0
    if ARGS[0] == "project":
        projects = STATE / "projects.json"
        state = json.loads(projects.read_text()) if projects.exists() else {}
        if ARGS[1] == "-d":
            print(f" {state.get(os.path.realpath(ARGS[2]), 0)} - {ARGS[2]}")
        else:  # project -p ID -r -s DIR
            state[os.path.realpath(ARGS[-1])] = int(ARGS[2])
            projects.write_text(json.dumps(state))
        return 0
    if ARGS[0] in ("quota", "setquota"):
        quotas = STATE / "quotas.json"
        state = json.loads(quotas.read_text()) if quotas.exists() else {}
        if ARGS[0] == "quota":  # quota -q FLAG ID MOUNT
            b, bh, i, ih = state.get(f"{ARGS[2]} {ARGS[3]}", [0, 0, 0, 0])
            print(f"{ARGS[4]}\n  0  {b}  {bh}  -  0  {i}  {ih}  -")
        else:  # setquota FLAG ID -b N -B N -i N -I N MOUNT
            state[f"{ARGS[1]} {ARGS[2]}"] = [int(ARGS[i]) for i in (4, 6, 8, 10)]
            quotas.write_text(json.dumps(state))
        return 0
    return canned()


def yaml_layout(args: list[str]) -> str:
    """What `lfs getstripe -d -y` prints for a directory whose default is `args`."""
    components: list[dict[str, str]] = []
    current: dict[str, str] = {}
    pairs = list(zip(args[::2], args[1::2], strict=True))
    for flag, value in pairs:
        if flag == "-E":
            current = {"end": "EOF" if value == "-1" else value}
            components.append(current)
            continue
        if not components:
            components.append(current)
        current[{"-c": "count", "-S": "size", "-p": "pool", "-L": "pattern"}[flag]] = value

    def sub(c: dict[str, str], indent: str) -> list[str]:
        lines = [
            f"{indent}stripe_count:  {c.get('count', '1') if c.get('pattern') != 'mdt' else '0'}",
            f"{indent}stripe_size:   {c.get('size', '1048576')}",
            f"{indent}pattern:       {c.get('pattern', 'raid0')}",
            f"{indent}stripe_offset: -1",
        ]
        return lines + ([f"{indent}pool:          {c['pool']}"] if "pool" in c else [])

    if "end" not in components[0]:
        return "\n".join(sub(components[0], ""))
    out = ["  lcm_layout_gen:    0", f"  lcm_entry_count:   {len(components)}"]
    start = "0"
    for i, c in enumerate(components):
        out += [
            f"    component{i}:",
            f"      lcme_extent.e_start: {start}",
            f"      lcme_extent.e_end:   {c['end']}",
            "      sub_layout:",
            *sub(c, "        "),
        ]
        start = c["end"]
    return "\n".join(out)


def lctl() -> int:
    pools = STATE / "pools.json"
    state: dict[str, list[str]] = json.loads(pools.read_text()) if pools.exists() else {}
    if ARGS[0] == "pool_list":
        if "." in ARGS[1]:
            print("\n".join(f"{ost}_UUID" for ost in state.get(ARGS[1], [])))
        else:
            print("\n".join(sorted(state)))
        return 0
    if ARGS[0] == "pool_new":
        state[ARGS[1]] = []
    elif ARGS[0] == "pool_add":
        state[ARGS[1]].append(ARGS[2])
    else:
        return canned()
    pools.write_text(json.dumps(state))
    return 0


def main() -> int:
    with open(os.environ["STUB_LOG"], "a", encoding="utf-8") as log:
        here = os.getcwd()
        log.write(json.dumps([TOOL, *(f"{here}/." if a == "." else a for a in ARGS)]) + "\n")
    if TOOL == "hostname":
        print(os.environ["STUB_HOST"])
        return 0
    if TOOL == "lfs":
        return lfs()
    if TOOL == "lctl":
        return lctl()
    return canned()


if __name__ == "__main__":
    sys.exit(main())
