"""git pilot demo: the README's first command shows each capability on a throwaway repository."""

from __future__ import annotations

from pathlib import Path

from conftest import run_pilot


def test_demo_runs_every_step_and_cleans_up(tmp_path: Path) -> None:
    res = run_pilot("demo", cwd=tmp_path, timeout=180)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "unexpected error" not in out and "Traceback" not in out
    # quiet checks: a pass with a count, a failure with a bounded, redacted excerpt
    assert "PASS python3 tests/run_tests.py" in out and "· 4 passed" in out
    assert "FAIL sh tests/lint.sh exit 1" in out and "error: missing docstring" in out
    assert "ghp_0123456789" not in out and "[REDACTED:github-token]" in out
    # reuse on the unchanged tree
    assert "(reused: passed" in out
    repo_line = next(line for line in out.splitlines() if line.startswith("demo repository: "))
    assert not Path(repo_line.split(": ", 1)[1]).exists()  # removed without --keep
    # every step ran to a verdict
    assert out.count("[exit ") >= 5


def test_a_step_that_fails_makes_the_demo_fail(tmp_path: Path) -> None:
    # A clock git pilot cannot read makes the quota step stop with an error: the demo says which
    # step failed and exits 1 instead of 0 (the first check's FAIL is expected, not a failure).
    res = run_pilot("demo", cwd=tmp_path, timeout=180, env={"GIT_PILOT_NOW": "not a time"})
    assert res.returncode == 1
    assert "[exit 2] this step failed: it should end with exit 0" in res.stdout
    assert res.stderr.splitlines() == [
        "git pilot: demo: 1 step(s) failed: Quota classification of a real Claude usage-limit message "
        "(exit 2, expected 0)"]
    assert "FAIL sh tests/lint.sh exit 1" in res.stdout and "[exit 1]\n" in res.stdout  # shown, not a failure
