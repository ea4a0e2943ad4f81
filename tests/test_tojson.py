"""The project's tojson filter (templating.py) writes exactly what Jinja's own writes, for
awkward strings and for every kind of value the Ansible templates pass."""

from __future__ import annotations

import jinja2
import pytest
from markupsafe import Markup

from clustergen.templating import environment

AWKWARD = [
    "",
    "plain",
    "10.0.0.1",
    'say "hi"',
    "it's",
    "<script>&amp;</script>",
    "a\\b",
    "line\nnext\r\ttab",
    "\x00\x01\x1f\x7f",
    "caf\u00e9 \u00fc\u00df \u4e2d\u6587",
    "\U0001f600 astral",
    "\u2028\u2029",
    "{{ inventory_dir }}/../slurm/slurm.conf",
    "/",
    " leading and trailing ",
]

VALUES: list[object] = [
    *AWKWARD,
    True,
    False,
    None,
    0,
    42,
    1.5,
    ["a", "b<c>", "it's"],
    [],
    {"b": "x", "a": ["y", "z'"]},
    {},
    Markup("<b>marked</b>"),
]

TEMPLATE = "{{ value | tojson }}|{{ value | tojson(2) }}|{{ value | tojson ~ '<' }}"


def _jinja() -> jinja2.Environment:
    """An environment like the project's, but with Jinja's own tojson."""
    env = environment()
    env.filters["tojson"] = jinja2.Environment().filters["tojson"]
    return env


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_tojson_writes_what_jinjas_writes(value: object) -> None:
    ours = environment().from_string(TEMPLATE).render(value=value)
    theirs = _jinja().from_string(TEMPLATE).render(value=value)
    assert ours == theirs


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_tojson_returns_what_jinjas_returns(value: object) -> None:
    ours = environment().call_filter("tojson", value)
    theirs = _jinja().call_filter("tojson", value)
    assert (type(ours), ours) == (type(theirs), theirs)


def test_tojson_of_every_code_point_below_0x3000_and_lone_surrogates() -> None:
    text = "".join(chr(c) for c in [*range(0x3000), 0xD800, 0xDFFF, 0xFFFF, 0x10FFFF])
    ours = environment().call_filter("tojson", text)
    theirs = _jinja().call_filter("tojson", text)
    assert ours == theirs


def test_the_environment_uses_the_project_filter() -> None:
    assert environment().filters["tojson"] is not jinja2.Environment().filters["tojson"]
