"""site.yml, verify.yml and roles/ pass ansible-lint's production profile (.ansible-lint)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.ansible_testbed import ansible_tool
from support.ci import in_ci
from support.paths import REPO


def test_ansible_lint_production_profile() -> None:
    lint = ansible_tool("ansible-lint")
    if lint is None:
        if in_ci():
            pytest.fail("ansible-lint is missing; CI must run this test (test extras)")
        pytest.skip("needs ansible-lint")
    env = {
        **os.environ,
        # ansible-lint runs ansible-playbook --syntax-check: find it beside this Python.
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        "NO_COLOR": "1",
    }
    proc = subprocess.run(
        [lint, "--profile", "production", "--offline"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
