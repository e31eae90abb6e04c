"""The CI recipe of docs/ci.md, played by a second clone against a bare remote."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from conftest import REPO_ROOT, git, make_repo, run_pilot

CONFIG = ("[[check]]\nname = \"unit\"\nrun = \"echo ran >> \\\"$RUNS\\\"\"\n"
          "[share]\ntrust = [\"origin\"]\n")


def recipe() -> str:
    text = (REPO_ROOT / "docs" / "ci.md").read_text("utf-8")
    m = re.search(r"<!-- ci-recipe:start -->\n```sh\n(.*?)```\n<!-- ci-recipe:end -->", text, re.S)
    assert m, "docs/ci.md lost its CI recipe block"
    return m.group(1)


def ci_job(clone: Path, runs: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["sh", "-c", recipe()], cwd=clone, capture_output=True, timeout=120,
                          env={**os.environ, "RUNS": str(runs)})
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def test_ci_job_reuses_trusted_passes_and_shares_its_own(tmp_path: Path, pilot_on_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    dev = make_repo(tmp_path / "dev", {".gitpilot.toml": CONFIG, "app.py": "x = 1\n"})
    git(dev, "remote", "add", "origin", str(remote))
    git(dev, "config", "pilot.trust", "origin")
    git(dev, "push", "-q", "origin", "main")
    dev_runs, ci_runs = tmp_path / "dev-runs", tmp_path / "ci-runs"
    # A developer checks commit 1 and shares the pass.
    assert run_pilot("check", cwd=dev, env={"RUNS": str(dev_runs)}).returncode == 0
    assert run_pilot("share", "push", cwd=dev).returncode == 0
    # CI on commit 1: the developer's pass (through the trusted origin) is reused, nothing runs.
    ci = tmp_path / "ci"
    git(tmp_path, "clone", "-q", str(remote), str(ci))
    git(ci, "config", "pilot.trust", "origin")
    job = ci_job(ci, ci_runs)
    assert job.returncode == 0, job.stdout + job.stderr
    assert "(reused: passed" in job.stdout and "via origin" in job.stdout
    assert not ci_runs.exists()
    # The developer pushes commit 2 without checking it; CI checks it and shares the pass.
    (dev / "app.py").write_text("x = 2\n")
    git(dev, "commit", "-q", "-am", "two")
    git(dev, "push", "-q", "origin", "main")
    git(ci, "pull", "-q", "origin", "main")
    job = ci_job(ci, ci_runs)
    assert job.returncode == 0, job.stdout + job.stderr
    assert ci_runs.read_text() == "ran\n"
    assert "pushed 1 check record(s) on 1 tree(s) to origin" in job.stdout
    # Back in the developer's clone, CI's pass is reused.
    assert run_pilot("share", "pull", cwd=dev).returncode == 0
    res = run_pilot("check", "--explain", cwd=dev, env={"RUNS": str(dev_runs)})
    assert res.returncode == 0
    assert "explain: unit: reused: pass recorded via remote origin" in res.stdout
    assert dev_runs.read_text() == "ran\n"  # only the first run, on commit 1


def test_failing_ci_job_fails_and_still_shares_the_record(tmp_path: Path, pilot_on_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    seed = make_repo(tmp_path / "seed", {".gitpilot.toml": "[[check]]\nname = \"unit\"\nrun = \"exit 4\"\n"})
    git(seed, "push", "-q", str(remote), "main")
    ci = tmp_path / "ci"
    git(tmp_path, "clone", "-q", str(remote), str(ci))
    job = ci_job(ci, tmp_path / "runs")
    assert job.returncode == 1
    assert "FAIL exit 4 exit 4" in job.stdout
    tree = git(ci, "rev-parse", "HEAD^{tree}").strip()
    assert '"result":"fail"' in git(remote, "notes", "--ref=pilot/checks", "show", tree)
