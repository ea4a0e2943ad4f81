"""Slurm releases in time: each release's slurm.conf keys, SchedMD's end of support, and
upgrades that skip more releases than slurmdbd and slurmctld convert state from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clustergen.base.errors import ExitCode
from clustergen.catalog.slurm_keys import KEY_LIST_VERSIONS, accepted_keys
from clustergen.catalog.slurm_releases import RELEASES, upgrade_steps
from clustergen.spec.load import LoadedSpec
from clustergen.validate import validate

from support.paths import EXAMPLES
from support.pull_request import edited
from support.specs import example_data

Data = dict[str, Any]
ML = EXAMPLES / "ml-training-8node.yaml"


def _problems(data: Data) -> list[tuple[str, str]]:
    problems = validate(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))[1]
    return [(p.code.name, p.message) for p in problems]


def _with(slurm: str, options: dict[str, object] | None = None) -> list[tuple[str, str]]:
    data = example_data()
    data["software"]["slurm"] = slurm
    if options is not None:
        data["slurm"]["options"] = options
    return _problems(data)


def test_every_release_has_its_key_list() -> None:
    assert tuple(release.version for release in RELEASES) == KEY_LIST_VERSIONS
    for version in KEY_LIST_VERSIONS:
        assert "slurmctldhost" in accepted_keys(version)


def test_a_key_new_in_26_05_is_known_to_26_05_only() -> None:
    # Before, 26.05 was checked against the 25.11 list, which lacks HealthCheckTimeout.
    assert not [
        m for _, m in _with("26.05.0", {"HealthCheckTimeout": 60}) if "HealthCheckTimeout" in m
    ]
    (message,) = [
        m for c, m in _with("25.11.0", {"HealthCheckTimeout": 60}) if "HealthCheckTimeout" in m
    ]
    assert "HealthCheckTimeout is a slurm.conf key only from Slurm 26.05 on" in message


def test_26_05_validates_as_itself_and_a_newer_release_names_the_list_used() -> None:
    assert "software.slurm-newer-than-key-lists" not in dict(_with("26.05.0"))
    newer = dict(_with("26.11.0"))["software.slurm-newer-than-key-lists"]
    assert "newer than clustergen's newest slurm.conf key list (26.05)" in newer


@pytest.mark.parametrize("release", ["22.05.8", "23.11.10", "24.11.5", "25.11.0"])
def test_fast_schedule_is_refused_where_slurmctld_stops_on_it(release: str) -> None:
    # read_config.c parses FastSchedule only to log an error (=1) or stop (fatal) since 20.02.
    (message,) = [m for c, m in _with(release, {"FastSchedule": 1}) if c == "slurm.option-unknown"]
    assert message.startswith("FastSchedule was removed from Slurm")
    assert "FastSchedule=1 only logs an error and is ignored" in message


def test_every_pinned_release_of_late_2026_is_past_its_end_of_support() -> None:
    # Tests run on 2026-11-25 (conftest.py sets SOURCE_DATE_EPOCH).
    ended = dict(_with("24.11.5"))["software.slurm-end-of-support"]
    assert ended.startswith("SchedMD's support for Slurm 24.11 ended in May 2026, 18 months")
    assert "SchedMD supports 25.11, 26.05" in ended
    assert "after its release (November 2024)" in ended
    assert "21 months" in dict(_with("23.02.7"))["software.slurm-end-of-support"]
    assert "software.slurm-end-of-support" not in dict(_with("25.11.0"))


def test_end_of_support_is_judged_on_the_date_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1827878400")  # 2027-12-03
    ended = dict(_with("26.05.0"))["software.slurm-end-of-support"]
    assert "ended in November 2027" in ended
    assert "SchedMD supports" not in ended  # the table knows no later release


@pytest.mark.parametrize(
    ("old", "new", "steps"),
    [
        ((23, 11), (24, 11), [(24, 11)]),
        ((23, 2), (24, 11), [(24, 11)]),  # 24.11 converts three releases back
        ((23, 2), (25, 5), [(24, 11), (25, 5)]),
        ((22, 5), (25, 11), [(23, 11), (25, 5), (25, 11)]),
        ((24, 11), (27, 5), [(26, 5), (27, 5)]),  # past the table: 6-monthly, three back
        ((20, 2), (24, 11), None),
    ],
)
def test_upgrade_steps(old: tuple[int, int], new: tuple[int, int], steps: object) -> None:
    assert upgrade_steps(old, new) == steps


def _applied(cli, tmp_path: Path) -> tuple[Path, Path]:  # type: ignore[no-untyped-def]
    spec = tmp_path / "pr" / ML.name
    spec.parent.mkdir()
    spec.write_text(ML.read_text(), encoding="utf-8")
    tree = tmp_path / "tree"
    assert cli("render", str(spec), "-o", str(tree)).code == 0
    return spec, tree


def test_plan_refuses_an_upgrade_that_skips_releases(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spec, tree = _applied(cli, tmp_path)
    spec.write_text(edited(spec.read_text(), ("slurm: 23.11.10", "slurm: 25.11.0")))
    result = cli("plan", str(spec), "-o", str(tree))
    assert result.code == ExitCode.INVALID_SPEC
    assert result.out == ""
    assert "23.11 -> 25.11 skips more releases than slurmdbd and slurmctld 25.11" in result.err
    assert "upgrade through 23.11 -> 25.05 -> 25.11" in result.err


def test_plan_takes_an_upgrade_within_the_window(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spec, tree = _applied(cli, tmp_path)
    spec.write_text(edited(spec.read_text(), ("slurm: 23.11.10", "slurm: 25.05.1")))
    result = cli("plan", str(spec), "-o", str(tree))
    assert result.code == ExitCode.PLAN_CHANGES, result.err
    assert "slurm-smd-slurmctld 23.11.10-1 -> 25.05.1-1" in result.out


def test_the_render_does_not_depend_on_the_date(  # type: ignore[no-untyped-def]
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """End of support depends on the date; validation says it, rendered files (the facility
    overview lists warnings) leave it out, so `render --check` stays green as time passes."""
    trees = []
    for name, epoch in (("2024", "1704067200"), ("2027", "1798761600")):
        monkeypatch.setenv("SOURCE_DATE_EPOCH", epoch)
        tree = tmp_path / name
        assert cli("render", str(ML), "-o", str(tree)).code == 0
        trees.append({p.relative_to(tree): p.read_bytes() for p in tree.rglob("*") if p.is_file()})
    assert trees[0] == trees[1]
    assert "end-of-support" not in (tmp_path / "2027" / "facility" / "overview.html").read_text()
