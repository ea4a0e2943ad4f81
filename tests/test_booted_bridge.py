"""The booted clusters' host bridge outlives a killed run: the next run reclaims it.

CI runs on the machine of the session that submitted, right after that session's
processes are killed; a test cluster killed with SIGKILL leaves its bridge and the route
into its subnet behind (CI's run of stop 46 failed its Debian 12 cluster at setup on
exactly that). With the subnet's lock held, a bridge of support.booted's own naming
that still routes into the subnet can only be such a leftover, and goes; a route through
any other device stays a refusal.
"""

from __future__ import annotations

import ipaddress
import subprocess
import uuid
from collections.abc import Iterator

import pytest

from support.booted import bridge
from support.ci import require

pytestmark = pytest.mark.daemons

# A subnet no other test uses (the booted clusters: 10.213.7, .8 and .9).
SUBNET = ipaddress.ip_network("10.213.250.0/24")
GATEWAY = ipaddress.ip_address("10.213.250.1")


def _ip(*argv: str) -> None:
    subprocess.run(["ip", *argv], check=True, capture_output=True, text=True)


def _links() -> str:
    return subprocess.run(["ip", "-br", "link"], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def leftover() -> Iterator[str]:
    """A bridge named as support.booted names its own, routing into SUBNET, as a killed
    run leaves it; deleted afterwards if the test did not."""
    require("ip", root=True)
    name = f"cgb{uuid.uuid4().hex[:8]}"
    _ip("link", "add", name, "type", "bridge")
    try:
        _ip("addr", "add", f"{SUBNET[9]}/{SUBNET.prefixlen}", "dev", name)
        _ip("link", "set", name, "up")
        yield name
    finally:
        subprocess.run(["ip", "link", "del", name], capture_output=True)


def test_a_killed_runs_bridge_is_reclaimed(leftover: str) -> None:
    assert leftover in _links()
    with bridge(SUBNET, GATEWAY, wait_seconds=30) as name:
        assert name != leftover
        assert leftover not in _links().split()
        assert name in _links()
    assert name not in _links()


def test_a_route_through_another_device_is_still_refused() -> None:
    require("ip", root=True)
    other = f"cgx{uuid.uuid4().hex[:8]}"  # not the module's naming: never deleted
    _ip("link", "add", other, "type", "bridge")
    try:
        _ip("addr", "add", f"{SUBNET[9]}/{SUBNET.prefixlen}", "dev", other)
        _ip("link", "set", other, "up")
        with (
            pytest.raises(RuntimeError, match="already in use on this host"),
            bridge(SUBNET, GATEWAY, wait_seconds=30),
        ):
            pass
        assert other in _links()
    finally:
        subprocess.run(["ip", "link", "del", other], capture_output=True)
