"""Fixtures, the `generated` mark tests/regen.py selects, the order xdist hands out the test
files in, and the figures the long tests measure (helpers live in tests/support/)."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from clustergen.cli import main

from support.cli import Result

# The date validation judges Slurm's end of support on (catalog.slurm_releases.today), so
# the expected warnings stay the same whenever the tests run: 2026-11-25.
os.environ["SOURCE_DATE_EPOCH"] = "1795564800"


def sampled(items: list[pytest.Item], sample: int, cap: int) -> set[pytest.Item]:
    """The cases the fast matrix runs: one in `sample` of each `sweep` test's, at most `cap`
    (0: all) of each other parametrized test's, evenly spread from its first to its last;
    every test without parameters."""
    cases: dict[str, list[pytest.Item]] = {}
    for item in items:
        cases.setdefault(item.nodeid.split("[", 1)[0], []).append(item)
    kept: set[pytest.Item] = set()
    for group in cases.values():
        if group[0].get_closest_marker("sweep") is not None:
            kept.update(group[::sample])
        elif cap and len(group) > cap:
            step = (len(group) - 1) / max(cap - 1, 1)
            kept.update(group[round(i * step)] for i in range(cap))
        else:
            kept.update(group)
    return kept


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite each generated file a selected test compares (the golden trees, the "
        "repository's own render, the expected outputs, docs/errors.md, README's key table, "
        "the JSON Schema) from the current code; tests/regen.py selects them all; "
        "review the result with `git diff` before committing",
    )


# pytest-xdist (pyproject.toml's addopts: -n auto --dist loadfile) runs each test file on
# one worker, so the daemons, chroots and booted nodes a file's fixtures start serve all of
# its tests; files run side by side, each booted cluster on its own subnet. xdist hands
# the files out in collection order (--no-loadscope-reorder), which puts the longest first,
# by CI's durations (docs/ci.md): a long file that started last would end the run alone.
LONGEST_FIRST = (
    "test_booted_cluster",
    "test_booted_debian_13",
    "test_ansible_e2e",
    "test_acceptance_jobs",
    "test_lustre_ansible",
    "test_real_slurm_releases",
    "test_import_real_slurm",
    "test_injection",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test that takes update_golden compares a generated file: mark it `generated`,
    the mark tests/regen.py selects, so the one command refreshes every such file. With
    CLUSTERGEN_SWEEP_SAMPLE=N (the fast matrix's other interpreters), one in N cases of
    each `sweep` test runs, and with CLUSTERGEN_CASES_CAP=K at most K cases of any other
    parametrized test, spread over its list: the main run has run them all on the same
    code. The longest files go first."""
    for item in items:
        if "update_golden" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.generated)
    sample = int(os.environ.get("CLUSTERGEN_SWEEP_SAMPLE", "1") or "1")
    cap = int(os.environ.get("CLUSTERGEN_CASES_CAP", "0") or "0")
    if sample > 1 or cap > 0:
        kept = sampled(items, sample, cap)
        dropped = [item for item in items if item not in kept]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = [item for item in items if item in kept]
    last = len(LONGEST_FIRST)

    def rank(item: pytest.Item) -> int:
        module = getattr(item, "module", None)
        name = module.__name__.rpartition(".")[2] if module is not None else ""
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else last

    items.sort(key=rank)


_FIGURES: list[str] = []  # measured fixture: "test id: what it measured", as they came
_FILE_SECONDS: dict[str, float] = {}  # test file: its tests' setup, call and teardown


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Collect the figures each test kept, and each file's time; under xdist its workers'
    reports come here."""
    path = report.nodeid.split("::", 1)[0]
    _FILE_SECONDS[path] = _FILE_SECONDS.get(path, 0.0) + report.duration
    if report.when == "call":
        _FIGURES.extend(
            f"{report.nodeid}: {text}" for name, text in report.user_properties if name == "figures"
        )


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """What the long tests measured (the measured fixture): CI's log keeps it whether the
    tests ran in this process or on xdist's workers. With --durations (CI's log), the
    longest files too: under --dist loadfile a file is the unit a worker takes, so these
    are what decides the run's length (docs/ci.md)."""
    if _FIGURES:
        terminalreporter.section("figures measured")
        for line in _FIGURES:
            terminalreporter.write_line(line)
    if terminalreporter.config.getoption("durations", None) and _FILE_SECONDS:
        terminalreporter.section("longest test files (seconds on one worker)")
        longest = sorted(_FILE_SECONDS.items(), key=lambda item: (-item[1], item[0]))[:30]
        for path, seconds in longest:
            terminalreporter.write_line(f"{seconds:8.1f}  {path}")


@pytest.fixture
def measured(request: pytest.FixtureRequest) -> Callable[[str], None]:
    """measured(text): keep a line of what this test measured for the run's summary, at once,
    so that a later step's failure does not lose it."""

    def keep(text: str) -> None:
        request.node.user_properties.append(("figures", text.strip()))

    return keep


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    """Run clustergen in-process: cli('validate', path) -> Result(code, out, err)."""

    def run(*args: str) -> Result:
        capsys.readouterr()
        code = main(list(args))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


@pytest.fixture(scope="session")
def testbed_scratch(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """Where node trees and repositories are built in CI (CI=true), once per test run, so
    the chroot and the booted tests share one debootstrap base (support.ansible_testbed).
    Under xdist every worker of the run shares it: beside the workers' own folders."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = tmp_path_factory.getbasetemp().parent / "testbed"
        shared.mkdir(exist_ok=True)
        return shared
    return tmp_path_factory.mktemp("testbed")
