"""``git pilot check --range A..B``: each commit's tree checked in a temporary worktree, passes
reused, the user's working tree, index and HEAD untouched; run through git itself."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import git, make_repo, run_pilot


def _commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def _history(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    """base, then: good, docs-only, broken (VERSION is 'bad'), fixed."""
    counter = tmp_path / "runs.log"
    cfg = (f'[[check]]\nname = "unit"\nrun = "echo unit >> {counter}; grep -q good src/VERSION"\n'
           'files = ["src/**"]\n\n'
           f'[[check]]\nname = "lint"\nrun = "echo lint >> {counter}; test -f README.md"\n')
    repo = make_repo(tmp_path / "p", {".gitpilot.toml": cfg, "src/VERSION": "good 1\n", "README.md": "# p\n"})
    shas = [
        _commit(repo, {"src/VERSION": "good 2\n"}, "good change"),
        _commit(repo, {"docs/guide.md": "# Guide\n"}, "docs only"),
        _commit(repo, {"src/VERSION": "bad 3\n"}, "break it"),
        _commit(repo, {"src/VERSION": "good 4\n"}, "fix it"),
    ]
    return repo, counter, shas


def _runs(counter: Path) -> list[str]:
    return counter.read_text().split() if counter.exists() else []


def _pilot_git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "pilot", *args], cwd=repo, capture_output=True, text=True, timeout=120)


def test_range_checks_each_commit_reuses_passes_and_leaves_the_user_alone(tmp_path: Path,
                                                                          pilot_on_path: Path) -> None:
    repo, counter, shas = _history(tmp_path)
    # the user's own state: a staged edit and an unstaged one, on a branch
    (repo / "README.md").write_text("# p\n\nstaged\n")
    git(repo, "add", "README.md")
    (repo / "src/VERSION").write_text("work in progress\n")
    index_before = (repo / ".git/index").read_bytes()
    status_before = git(repo, "status", "--porcelain")

    res = _pilot_git(repo, "check", "--range", "HEAD~4..HEAD")
    assert res.returncode == 1, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    per_check = [ln for ln in lines if ln.startswith(("PASS ", "FAIL "))]
    assert [(ln.split()[0], ln.split()[1], ln.split()[2]) for ln in per_check] == [
        ("PASS", shas[0][:12], "unit:"), ("PASS", shas[0][:12], "lint:"),
        ("PASS", shas[1][:12], "unit:"), ("PASS", shas[1][:12], "lint:"),
        ("FAIL", shas[2][:12], "unit:"), ("PASS", shas[2][:12], "lint:"),
        ("PASS", shas[3][:12], "unit:"), ("PASS", shas[3][:12], "lint:"),
    ]
    # the docs-only commit has unit's subtree of the commit before it: reused, not run
    assert "unit: reused" in per_check[2]
    assert "exit 1" in per_check[4] and "log: " in per_check[4]
    assert "range HEAD~4..HEAD: 4 of 4 commits checked, 7 passed (1 reused), 1 failed on 1 commit" in res.stdout
    assert f"first failure: {shas[2][:12]} unit" in res.stdout
    assert _runs(counter).count("unit") == 3 and _runs(counter).count("lint") == 4

    # nothing of the user's moved
    assert (repo / ".git/index").read_bytes() == index_before
    assert git(repo, "status", "--porcelain") == status_before
    assert (repo / "src/VERSION").read_text() == "work in progress\n"
    assert git(repo, "rev-parse", "HEAD").strip() == shas[3]
    assert git(repo, "worktree", "list").count("\n") == 1  # the temporary worktree is gone
    assert not (repo / ".git/pilot/range").exists()

    # again: every pass is reused without a checkout; the failure is run again (and fails)
    again = _pilot_git(repo, "check", "--range", "HEAD~4..HEAD")
    assert again.returncode == 1
    assert "4 of 4 commits checked, 7 passed (7 reused), 1 failed" in again.stdout
    assert _runs(counter).count("unit") == 4 and _runs(counter).count("lint") == 4


def test_bail_stops_at_the_first_failing_commit(tmp_path: Path) -> None:
    repo, counter, shas = _history(tmp_path)
    res = run_pilot("check", "--range", "HEAD~4..HEAD", "--bail", cwd=repo)
    assert res.returncode == 1
    assert shas[3][:12] not in res.stdout
    assert "stopped at the first failing commit (--bail): 1 not checked" in res.stdout
    assert f"FAIL {shas[2][:12]} unit" in res.stdout
    assert f"{shas[2][:12]} lint" not in res.stdout  # --bail also stops that commit's later checks


def test_a_passing_range_exits_0_and_json_gives_each_commit(tmp_path: Path) -> None:
    repo, _counter, shas = _history(tmp_path)
    res = run_pilot("check", "--range", f"{shas[2]}..HEAD", "--json", cwd=repo)
    assert res.returncode == 0, res.stdout + res.stderr
    data = json.loads(res.stdout)
    assert [c["commit"] for c in data["commits"]] == [shas[3]]
    checks = data["commits"][0]["checks"]
    assert [(c["name"], c["result"]) for c in checks] == [("unit", "pass"), ("lint", "pass")]
    # lint is keyed by the commit's tree; unit by the tree of src/ in that commit
    assert checks[1]["tree"] == git(repo, "rev-parse", f"{shas[3]}^{{tree}}").strip()
    assert checks[0]["tree"] == git(repo, "mktree", input=git(repo, "ls-tree", shas[3], "src").encode()).strip()
    assert data["failed"] == 0 and data["commits_in_range"] == 1


@pytest.mark.parametrize(("spec", "words"), [
    ("nosuch..HEAD", "not a range of this repository's commits"),
    ("HEAD", "no lower bound"),
    ("--all", "needs a range such as main..HEAD"),
])
def test_bad_ranges_are_usage_errors(tmp_path: Path, spec: str, words: str) -> None:
    repo, counter, _ = _history(tmp_path)
    res = run_pilot("check", f"--range={spec}", cwd=repo)
    assert res.returncode == 2 and words in res.stderr and "Traceback" not in res.stderr
    assert _runs(counter) == []


def test_an_empty_range_says_so(tmp_path: Path) -> None:
    repo, counter, _ = _history(tmp_path)
    res = run_pilot("check", "--range", "HEAD..HEAD", cwd=repo)
    assert res.returncode == 0 and "range HEAD..HEAD: no commits" in res.stdout and _runs(counter) == []


def test_a_killed_range_runs_worktree_is_removed_by_the_next_run(tmp_path: Path) -> None:
    repo, _counter, _shas = _history(tmp_path)
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = repo / ".git" / "pilot" / "range" / f"wt-{dead.pid}-1"
    git(repo, "-c", "core.hooksPath=/dev/null", "worktree", "add", "-q", "--detach", str(stale), "HEAD")
    assert str(stale) in git(repo, "worktree", "list")
    res = run_pilot("check", "--range", "HEAD~1..HEAD", cwd=repo)
    assert res.returncode == 0, res.stdout + res.stderr
    assert str(stale) not in git(repo, "worktree", "list") and not stale.exists()
    assert git(repo, "worktree", "list").count("\n") == 1
