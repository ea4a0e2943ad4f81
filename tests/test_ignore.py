"""Silencing warnings: `--ignore CODE` and the spec's `ignore` list; errors stay loud."""

from __future__ import annotations

from support.paths import INVALID

CASE = INVALID / "accounting-dropped.yaml"


def test_ignore_leaves_out_that_warning_only(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("validate", "--ignore", "slurm.dbd-without-accounting", str(CASE))
    assert result.code == 1
    assert "[slurm.dbd-without-accounting]" not in result.err
    assert "[slurm.fairshare-without-accounting]" in result.err
    assert "[software.slurm-end-of-support]" in result.err  # 23.11, on 2026-11-25
    assert "[software.slurm-schedmd-without-repository]" in result.err
    assert "[network.subnet-manager-unset]" in result.err
    assert "[nccl.tests-not-built]" in result.err
    assert "[nccl.tests-without-pmix]" in result.err
    assert "[software.nvidia-repository-missing]" in result.err
    assert result.err.endswith(": 1 error(s), 7 warning(s)\n")


def test_ignore_is_repeatable_and_applies_to_render(cli, tmp_path) -> None:  # type: ignore[no-untyped-def]
    args = ["--ignore", "slurm.dbd-without-accounting", "--ignore", "hardware.unused-profile"]
    result = cli("render", *args, str(CASE), "-o", str(tmp_path / "out"))
    assert result.code == 1  # the error remains
    assert "[slurm.dbd-without-accounting]" not in result.err


def test_ignoring_an_error_is_a_usage_error(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("validate", "--ignore", "slurm.preempt-qos-without-accounting", str(CASE))
    assert result.code == 2
    assert "is an error; errors cannot be ignored" in result.err


def test_unknown_code_suggests_the_nearest(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("validate", "--ignore", "slurm.dbd-without-acounting", str(CASE))
    assert result.code == 2
    assert "(did you mean 'slurm.dbd-without-accounting'?)" in result.err
