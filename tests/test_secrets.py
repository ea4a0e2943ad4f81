"""No secret is ever rendered: neither a vault variable's value nor anything that looks
like a password or a key.

Each reference spec and test spec is rendered with its vault variables' values within
reach, where a careless generator could pick them up: in the environment under the
variables' names and in a secrets file (`-e @secrets.yml`, as the roles ask for) inside
the output directory. Every file the render writes is then scanned for those values, for
password assignments, for PEM blocks and for base64 runs as long as a key.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import re
from pathlib import Path

import pytest
import yaml

from clustergen.spec.load import load_spec
from clustergen.validate import validate_cluster
from clustergen.write.manifest import MANIFEST

from support.paths import DATA, REFERENCE_SPECS
from support.secret_scan import leaks, secret_needles

SPECS = [*REFERENCE_SPECS, *sorted(DATA.glob("*.yaml"))]

# What a secret looks like in a text file (values, not the names of the variables).
LOOKS_SECRET = {
    # A key naming a password or secret, given a value that is not a Jinja reference to a
    # variable: StoragePass=x, password: x, DB_PASS=x (not "PASS: all rails ...").
    "password assignment": re.compile(
        r"(?i)(?<![\w-])[\w.-]*(?:password|passwd|_pass|storagepass|comppass|secret)"
        r"\s*[=:]\s*(?![\"']?\{\{)[^\s#]+"
    ),
    "PEM block": re.compile(r"-----BEGIN [A-Z ]*(?:PRIVATE KEY|CERTIFICATE)-----"),
    # 32 random bytes (a 256-bit key) are 44 base64 characters.
    "base64 blob": re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{43,}={0,2}(?![A-Za-z0-9+/])"),
}
SHA256_HEX = re.compile(r"[0-9a-f]{64}")
# A URL's path (.../repos/ubuntu2404/sbsa/3bf863cc.pub) is made of base64's characters.
URL = re.compile(r"[a-z][a-z0-9+.-]*://[^\s\"'<>]*")


def _vault(spec: Path) -> dict[str, str]:
    """The spec's vault variables, each with a value made for this test."""
    loaded = load_spec(str(spec))
    cluster, problems = validate_cluster(loaded)
    assert cluster is not None, [p.format() for p in problems]
    rng = random.Random(spec.name)
    munge_key = base64.b64encode(rng.randbytes(1024)).decode()
    names = {cluster.spec.cluster.munge_key_variable: munge_key}
    accounting = cluster.spec.slurm.accounting
    if accounting is not None:
        names[accounting.database.password_variable] = f"Tr0ub4dor&3-{rng.randrange(10**9)}"
    return names


SSH_KEY_TYPES = ("ssh-ed25519", "ssh-rsa", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384",
                 "ecdsa-sha2-nistp521", "sk-ssh-ed25519@openssh.com")  # fmt: skip


def _secret_like(text: str) -> list[str]:
    found = []
    for line in text.splitlines():
        for kind, pattern in LOOKS_SECRET.items():
            if kind == "password assignment" and line.lstrip().startswith("#"):
                continue  # prose ("the secret: ..."); a value would be caught as itself
            urls = [url.span() for url in URL.finditer(line)]
            found += [
                f"{kind}: {line.strip()!r}"
                for match in pattern.finditer(line)
                # A sha256 in hex (group_vars' file digests, the release) hides nothing,
                # nor does a URL's path (a key in a URL would be the vault's value, which
                # the test looks for as itself).
                if not (
                    kind == "base64 blob"
                    and (
                        SHA256_HEX.fullmatch(match[0])
                        or any(start < match.start() and match.end() <= end for start, end in urls)
                        # An SSH public key (pull mode's allowed signers, host keys).
                        or line[: match.start()].rstrip().endswith(SSH_KEY_TYPES)
                    )
                )
            ]
    return found


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.stem)
def test_no_secret_is_rendered(
    cli,  # type: ignore[no-untyped-def]
    spec: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    vault = _vault(spec)
    for name, value in vault.items():
        monkeypatch.setenv(name, value)
        monkeypatch.setenv(name.upper(), value)
    out = tmp_path / "site"
    out.mkdir()
    secrets = out / "secrets.yml"
    secrets.write_text(yaml.safe_dump(vault))
    before = secrets.read_bytes()
    result = cli("render", str(spec), "-o", str(out))
    assert result.code == 0, result.err
    assert secrets.read_bytes() == before
    written = [p for p in sorted(out.rglob("*")) if p.is_file() and p != secrets]
    assert out / MANIFEST in written
    leaks = []
    for path in written:
        text = path.read_text(encoding="utf-8")
        name = path.relative_to(out)
        leaks += [f"{name}: the value of {var}" for var, value in vault.items() if value in text]
        leaks += [f"{name}: {found}" for found in _secret_like(text)]
    assert not leaks, "\n".join(leaks)
    assert not any(value in result.out + result.err for value in vault.values())


def test_the_scan_finds_what_it_looks_for() -> None:
    """The patterns above catch the secrets they are for (so an empty scan means none)."""
    key = base64.b64encode(bytes(range(32))).decode()
    for text in (
        "StoragePass=hunter2",
        "AccountingStoragePass=hunter2",
        "password: hunter2",
        "-----BEGIN OPENSSH PRIVATE KEY-----",
        f"munge_key: {key}",
    ):
        assert _secret_like(text), text
    for text in (
        "secret_key: StoragePass",
        "DB_PASS: \"{{ lookup('ansible.builtin.vars', slurm_dbd_password_variable) }}\"",
        'echo "PASS: all ${#RAILS[@]} rails"',
        "# Rendered without their secret: the KEY=value line comes from the vault here.",
        'key_url: "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/sbsa/3bf863cc.pub"',
    ):
        assert not _secret_like(text), text
    # beside a URL, a key is still a key
    assert _secret_like(f"url: https://repo.example.org/ key: {key}")


def test_the_output_scan_finds_values_and_digests() -> None:
    """The verbose-output scan of the Ansible runs (tests/test_ansible_e2e.py,
    tests/test_booted_cluster.py) finds a vault value and the digests that let one guess
    it: the converge check's request (sha256 of slurmdbd.conf with its StoragePass) and
    the copy module's result (sha1 and md5), so an empty scan means none of them."""
    password = "hunter2-db"
    conf = "DbdHost=head\n" + f"StoragePass={password}\n"
    needles = secret_needles(
        {"vault_slurmdbd_storage_pass": password},
        {"/etc/slurm/slurmdbd.conf": conf.encode()},
    )
    request = json.dumps(
        {"secrets": {"/etc/slurm/slurmdbd.conf": hashlib.sha256(conf.encode()).hexdigest()}}
    )
    for output in (
        f'    "stdin": {json.dumps(request)},',
        f"EXEC /bin/sh -c 'MYSQL_PWD={password} /usr/bin/python3'",
        f"checksum: {hashlib.sha1(conf.encode()).hexdigest()}",
        f"md5sum: {hashlib.md5(conf.encode()).hexdigest()}",
        f"{hashlib.sha256(password.encode()).hexdigest()}",
    ):
        assert leaks(f"TASK [x]\n{output}\nok: [head]\n", needles), output
    assert not leaks('ok: [head] => {"censored": "the output has been hidden"}', needles)
