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
