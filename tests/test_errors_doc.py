"""docs/errors.md is generated from the registered codes and the invalid cases."""

from __future__ import annotations

import pytest
from test_audit import audit_examples
from test_codes import NOT_PRODUCED, PRODUCED_BY_CHANGE

from clustergen.base.codes import CODES
from clustergen.base.errors import LocatedProblem, SpecInvalid, format_path
from clustergen.dev.codes_doc import Example, errors_markdown
from clustergen.spec.load import LoadedSpec, load_spec, parse_spec
from clustergen.validate import validate

from support.paths import INVALID, REPO, WARNING_CASES
from support.regen import check_current
from support.specs import example_data

# The repository's own files: the fast matrix leaves this to the main run.
pytestmark = pytest.mark.repository

DOC = REPO / "docs" / "errors.md"


def _problems(case: str) -> list[LocatedProblem]:
    try:
        return validate(load_spec(case))[1]
    except SpecInvalid as exc:
        return exc.problems


def examples() -> dict[str, Example]:
    found: dict[str, Example] = {}
    for case in [*sorted(INVALID.glob("*.yaml")), *sorted(WARNING_CASES.glob("*.yaml"))]:
        for problem in _problems(str(case)):
            if problem.code.name not in found:
                printed = problem.format().replace(f"{case.parent}/", "")
                where = f"tests/{case.parent.name}/{case.name}"
                link = f"[{where}](../{where})"
                found[problem.code.name] = Example(link, printed)
    for name, change in PRODUCED_BY_CHANGE.items():
        if name in found:
            continue
        data = example_data()
        change(data)
        loaded = LoadedSpec(file="spec.yaml", name="spec.yaml", data=data)
        problem = next(p for p in validate(loaded)[1] if p.code.name == name)
        label = "warning: " if problem.severity == "warning" else ""
        printed = f"{format_path(problem.path)}: {label}{problem.message} [{name}]"
        found[name] = Example(
            "one change to examples/ml-training-8node.yaml, in tests/test_codes.py", printed
        )
    for name, printed in audit_examples().items():
        found[name] = Example(
            "a recorded fault of tests/data/audit/, in tests/test_audit.py", printed
        )
    try:
        parse_spec("[" * 100_000, file="deep.yaml", name="deep.yaml")
    except SpecInvalid as exc:
        found.setdefault(
            "yaml.too-deep",
            Example("a file of 100000 '[', in tests/test_codes.py", exc.problems[0].format()),
        )
    return found


def test_errors_doc_is_current(update_golden: bool) -> None:
    check_current(DOC, errors_markdown(examples()), update_golden)


def test_every_code_has_an_example_unless_listed() -> None:
    missing = set(CODES) - set(examples())
    assert missing == set(NOT_PRODUCED)
