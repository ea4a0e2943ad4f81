"""The lock (tests/requirements.txt): what it pins for an interpreter, and how an
installed environment differs from it.

`python tests/support/lockfile.py --differences PYTHON` prints, one line each, the
packages whose version in PYTHON's environment is not the lock's (`.ci/newest` shows
them above its test run, so a failure there names the releases that caused it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

LOCK = Path(__file__).resolve().parents[1] / "requirements.txt"


@dataclass(frozen=True)
class Pin:
    name: str  # canonical
    version: str
    marker: Marker | None
    hashes: tuple[str, ...]


def ci_environment(python: str) -> dict[str, str]:
    """The marker environment of CI's machines: CPython on x86-64 Linux."""
    return {
        "python_version": python,
        "python_full_version": f"{python}.0",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "sys_platform": "linux",
        "platform_system": "Linux",
        "platform_machine": "x86_64",
        "os_name": "posix",
        "platform_release": "",
        "platform_version": "",
        "implementation_version": f"{python}.0",
        "extra": "",
    }


def read_lock(path: Path = LOCK) -> list[Pin]:
    """Every entry of a pip requirements file in hash-checking form."""
    text = path.read_text().replace("\\\n", " ")
    pins = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        spec, *options = line.split(" --hash=")
        requirement = Requirement(spec)
        (specifier,) = requirement.specifier  # exactly one: ==version
        assert specifier.operator == "==", f"{requirement.name}: not pinned exactly"
        pins.append(
            Pin(
                canonicalize_name(requirement.name),
                specifier.version,
                requirement.marker,
                tuple(option.strip() for option in options),
            )
        )
    return pins


def pinned_for(environment: dict[str, str], pins: list[Pin] | None = None) -> dict[str, str]:
    """name -> version, for the entries whose markers hold in `environment`."""
    chosen: dict[str, str] = {}
    for pin in read_lock() if pins is None else pins:
        if pin.marker is None or pin.marker.evaluate(environment):
            assert pin.name not in chosen, f"{pin.name} pinned twice for {environment}"
            chosen[pin.name] = pin.version
    return chosen


def _installed(python: str) -> tuple[dict[str, str], dict[str, str]]:
    script = (
        "import json, importlib.metadata as m, sys, platform\n"
        "from packaging.markers import default_environment\n"
        "print(json.dumps([default_environment(),"
        " {d.metadata['Name']: d.version for d in m.distributions()}]))"
    )
    environment, versions = json.loads(
        subprocess.run([python, "-c", script], check=True, capture_output=True, text=True).stdout
    )
    return environment, {canonicalize_name(name): version for name, version in versions.items()}


def differences(python: str) -> list[str]:
    environment, installed = _installed(python)
    locked = pinned_for(environment)
    lines = []
    for name in sorted(set(locked) | set(installed)):
        if name == "clustergen":
            continue
        old, new = locked.get(name), installed.get(name)
        if old != new:
            lines.append(f"{name}: {old or '(not in the lock)'} -> {new or '(not installed)'}")
    return lines


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "--differences":
        sys.exit("usage: lockfile.py --differences PYTHON")
    print("\n".join(differences(sys.argv[2])) or "none: the newest releases are the lock's")
