"""Review config refusals, and the budgets the git hooks record as notes on commits."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import git, make_repo, run_pilot

from gitpilot.errors import PilotError
from gitpilot.repo import Repo
from gitpilot.review.budget import compute_budget, record_for_commit


def feature(tmp_path: Path, config: str | None = None) -> Path:
    files = {"README.md": "# demo\n", "src/app.py": "X = 1\n"}
    if config is not None:
        files[".gitpilot.toml"] = config
    repo = make_repo(tmp_path / "repo", files)
    git(repo, "checkout", "-q", "-b", "feature")
    return repo


@pytest.mark.parametrize("key", ["small_rounds", "normal_rounds", "high_risk_rounds", "max_rounds"])
def test_a_config_that_lets_code_skip_review_is_refused(tmp_path: Path, key: str) -> None:
    repo = feature(tmp_path, config=f"[reviewer]\n{key} = 0\n")
    (repo / "src/app.py").write_text("X = 2\n")
    with pytest.raises(PilotError, match=rf"reviewer\.{key} = 0 would let a code change skip review"):
        compute_budget(Repo.discover(repo))
    res = run_pilot("review-budget", cwd=repo)
    assert res.returncode == 1
    assert res.stderr.count("\n") == 1 and ".gitpilot.toml" in res.stderr and "at least 1" in res.stderr
    assert "Traceback" not in res.stderr


def test_a_negative_round_count_is_refused_too(tmp_path: Path) -> None:
    repo = feature(tmp_path, config="[reviewer]\nsmall_rounds = -1\n")
    with pytest.raises(PilotError, match="at least 1"):
        compute_budget(Repo.discover(repo))


def test_a_wrong_type_names_the_key(tmp_path: Path) -> None:
    repo = feature(tmp_path, config='[reviewer]\nmax_rounds = "two"\n')
    res = run_pilot("review-budget", cwd=repo)
    assert res.returncode == 1
    assert "reviewer.max_rounds" in res.stderr and "whole number" in res.stderr


def note(repo: Path, commit: str) -> dict[str, object]:
    return json.loads(git(repo, "notes", "--ref=pilot/review", "show", commit))


def test_record_for_commit_writes_a_note_stock_git_can_read(tmp_path: Path) -> None:
    repo = feature(tmp_path)
    (repo / "package.json").write_text("{}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "deps")
    head = git(repo, "rev-parse", "HEAD").strip()
    (repo / "scratch.py").write_text("import subprocess\n")  # uncommitted: not part of the commit's budget
    budget = record_for_commit(Repo.discover(repo), head)
    assert budget is not None
    body = note(repo, head)
    assert (body["base"], body["class"], body["rounds"]) == ("main", "high-risk", 2)
    assert body["merge_base"] == git(repo, "rev-parse", "main").strip()
    reasons = body["reasons"]
    assert isinstance(reasons, list)
    assert "high-risk: package.json is a dependency manifest or lockfile" in reasons
    assert not any("scratch.py" in str(r) for r in reasons)
    # The note is current: a second call (post-commit, then pre-push) changes nothing.
    tip = git(repo, "rev-parse", "refs/notes/pilot/review").strip()
    assert record_for_commit(Repo.discover(repo), head) is None
    assert git(repo, "rev-parse", "refs/notes/pilot/review").strip() == tip


def test_a_changed_rule_rewrites_the_note(tmp_path: Path) -> None:
    repo = feature(tmp_path)
    (repo / "src/app.py").write_text("X = 2\n")
    git(repo, "commit", "-qam", "small")
    head = git(repo, "rev-parse", "HEAD").strip()
    record_for_commit(Repo.discover(repo), head)
    assert note(repo, head)["rounds"] == 1
    (repo / ".gitpilot.toml").write_text("[reviewer]\nadaptive = false\nmax_rounds = 3\n")
    assert record_for_commit(Repo.discover(repo), head) is not None
    assert note(repo, head)["rounds"] == 3


def test_installed_hooks_record_budgets_on_commit_and_amend(tmp_path: Path) -> None:
    repo = feature(tmp_path)
    res = run_pilot("hooks", "install", cwd=repo)
    assert res.returncode == 0, res.stderr
    env = {"GIT_PILOT_HOOKS_SYNC": "1"}  # the shims run the detached job in the foreground
    (repo / "README.md").write_text("# demo\n\nmore docs\n")
    _git_env(repo, env, "commit", "-qam", "docs")
    head = git(repo, "rev-parse", "HEAD").strip()
    assert (note(repo, head)["class"], note(repo, head)["rounds"]) == ("docs", 0)
    (repo / "src/app.py").write_text("X = 3\n")
    git(repo, "add", "-A")
    _git_env(repo, env, "commit", "-q", "--amend", "-m", "docs and code")  # post-rewrite
    amended = git(repo, "rev-parse", "HEAD").strip()
    assert (note(repo, amended)["class"], note(repo, amended)["rounds"]) == ("small", 1)


def test_pre_push_records_budgets_and_never_fails_for_want_of_a_base(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    repo = feature(tmp_path)
    git(repo, "remote", "add", "origin", str(remote))
    assert run_pilot("hooks", "install", cwd=repo).returncode == 0
    (repo / "src/app.py").write_text("X = 2\n")
    git(repo, "commit", "-qam", "small")
    head = git(repo, "rev-parse", "HEAD").strip()
    _git_env(repo, {}, "push", "-q", "origin", "feature")  # pre-push records in the foreground
    assert (note(repo, head)["class"], note(repo, head)["rounds"]) == ("small", 1)
    # A repository with no main, master, origin/HEAD or base_branch: the push still goes through.
    git(repo, "branch", "-m", "main", "trunk")
    (repo / "src/app.py").write_text("X = 3\n")
    git(repo, "commit", "-qam", "more")
    _git_env(repo, {}, "push", "-q", "origin", "feature")
    assert git(remote, "rev-parse", "feature").strip() == git(repo, "rev-parse", "HEAD").strip()


def _git_env(repo: Path, env: dict[str, str], *args: str) -> None:
    import os

    proc = subprocess.run(["git", *args], cwd=repo, env={**os.environ, **env}, capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode()
