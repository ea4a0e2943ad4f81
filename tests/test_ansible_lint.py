"""site.yml, verify.yml and roles/ pass ansible-lint's production profile (.ansible-lint)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.ci import skip_or_fail, tool
from support.paths import REPO


@pytest.mark.slow
def test_ansible_lint_production_profile() -> None:
    lint = tool("ansible-lint")
    if lint is None:
        skip_or_fail("needs ansible-lint")
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
