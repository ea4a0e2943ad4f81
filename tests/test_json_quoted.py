"""The file lists' quoting (outputs/ansible/files.py json_quoted) is the templates' tojson
filter's, whatever a value holds: its shortcut for plain strings writes the bytes Jinja's
tojson writes (JSON with <, >, & and ' escaped)."""

from __future__ import annotations

import random
import string

from clustergen.outputs.ansible.files import json_quoted
from clustergen.templating import environment


def _tojson(value: object) -> str:
    return str(environment().from_string("{{ v | tojson }}").render(v=value))


def test_plain_and_hostile_strings_are_quoted_as_tojson_quotes_them() -> None:
    values = [
        "",
        "/etc/slurm/slurm.conf",
        "0644",
        "root",
        "a b",
        'say "hi"',
        "back\\slash",
        "it's",
        "<script>",
        "a&b",
        "tab\there",
        "new\nline",
        "\u2028",
        "café",
        "{{ x }}",
        "[a, b]",
        "#comment",
        "$(id)",
        "\x00",
        "\x7f",
    ]
    rng = random.Random(42)
    alphabet = string.printable + "é\u2028\x00\x7f"
    values += [
        "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 10))) for _ in range(5000)
    ]
    template = environment().from_string("{{ v | tojson }}")
    for value in values:
        assert json_quoted(value) == template.render(v=value), repr(value)


def test_lists_mappings_and_scalars_keep_json() -> None:
    for value in [True, False, None, ["a", "b<"], {"k": "v'"}]:
        assert json_quoted(value) == _tojson(value)
