"""Every subcommand, run where a user might run it by mistake or by design: outside a
repository, in a bare repository, in one with no commits, on a detached HEAD, in a linked
worktree, and under a path with spaces and non-ASCII characters.

Each must answer with its exit code and one clear line (never a traceback), and leave the
user's refs, index and files as they were.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import git, make_repo, pilot_env, run_pilot
from test_qa_support import SUBCOMMANDS, Snapshot, assert_clear_error, assert_no_crash, standard_files

NEEDS_WORKTREE = {"check", "capsule", "run", "review-budget", "codex", "sourcemap", "config", "optimize"}


def _run_all(cwd: Path, env: dict[str, str] | None = None) -> dict[tuple[str, ...], subprocess.CompletedProcess[str]]:
    results = {}
    for args in SUBCOMMANDS:
        res = run_pilot(*args, cwd=cwd, env=env)
        assert_no_crash(res)
        results[args] = res
    return results


def test_outside_a_repository_every_command_says_so_in_one_line(tmp_path: Path) -> None:
    plain = tmp_path / "plain dir é"
    plain.mkdir()
    (plain / "notes.md").write_text("# mine\n")
    env = {"GIT_CEILING_DIRECTORIES": str(tmp_path)}
    for args, res in _run_all(plain, env).items():
        if args[0] == "doctor":  # a report: the finding is one of its lines, exit 1
            assert res.returncode == 1 and "not a git repository" in res.stdout
            continue
        assert_clear_error(res, 1, f"not a git repository: {plain}")
    for args in (("init",), ("init", "--no-hooks"), ("hooks", "install"), ("hooks", "uninstall"),
                 ("optimize", "enable", "claude"), ("optimize", "disable", "claude")):
        assert_clear_error(run_pilot(*args, cwd=plain, env=env), 1, "not a git repository")
    # The git hooks never fail a git command, even when run from nowhere.
    for event in ("post-commit", "post-checkout", "post-merge", "post-rewrite", "pre-push"):
        res = run_pilot("hook", event, cwd=plain, env=env, input=b"")
        assert res.returncode == 0 and not res.stderr, res.stderr
    assert sorted(p.name for p in plain.iterdir()) == ["notes.md"]
    assert (plain / "notes.md").read_text() == "# mine\n"


def test_bare_repository_commands_that_need_a_worktree_say_so(tmp_path: Path) -> None:
    bare = tmp_path / "bare.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    src = make_repo(tmp_path / "src", standard_files())
    git(src, "push", "-q", str(bare), "main")
    refs_before = git(bare, "for-each-ref")
    for args, res in _run_all(bare).items():
        if args[0] in NEEDS_WORKTREE and args[:2] not in {("optimize", "learned"), ("optimize", "forget")}:
            assert_clear_error(res, 1, "bare")
        elif res.returncode in (1, 2) and args[0] != "doctor":
            assert_clear_error(res, res.returncode)
    assert_clear_error(run_pilot("init", cwd=bare), 1, "working tree")
    assert git(bare, "for-each-ref") == refs_before
    assert git(bare, "fsck", "--no-dangling") == ""


def test_repository_without_commits(tmp_path: Path) -> None:
    repo = tmp_path / "fresh"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for name, text in standard_files().items():
        (repo / name).write_text(text)
    git(repo, "add", "README.md")  # something staged, nothing committed
    before = Snapshot.take(repo)
    results = _run_all(repo)
    for args, res in results.items():
        if res.returncode in (1, 2) and args[0] != "doctor":
            assert_clear_error(res, res.returncode)
    assert results[("check",)].returncode == 0
    assert "PASS" in results[("check",)].stdout
    assert_clear_error(results[("review-budget",)], 1, "base branch")
    before.assert_unchanged(repo)
    assert git(repo, "rev-parse", "--verify", "--quiet", "HEAD", check=False) == ""  # still unborn


def test_detached_head(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", standard_files())
    (repo / "app.py").write_text("def spin(speed):\n    return speed * 2\n")
    git(repo, "commit", "-qam", "double")
    git(repo, "checkout", "-q", "--detach", "HEAD~1")
    before = Snapshot.take(repo)
    results = _run_all(repo)
    for args, res in results.items():
        if res.returncode in (1, 2) and args[0] != "doctor":
            assert_clear_error(res, res.returncode)
    assert results[("check",)].returncode == 0
    assert "nothing changed against main" in results[("review-budget",)].stdout
    before.assert_unchanged(repo)
    assert git(repo, "symbolic-ref", "--quiet", "HEAD", check=False) == ""  # still detached


def test_linked_worktree_under_spaces_and_non_ascii(tmp_path: Path) -> None:
    main = make_repo(tmp_path / "dir with space é" / "main ü", {
        **standard_files(), "dóc é/gúide file.md": "# Gúide\n\n## Set up ü\nInstall the widgets.\n",
        "dóc é/mödule x.py": "def turn():\n    pass\n"})
    wt = tmp_path / "dir with space é" / "wörk tree"
    git(main, "worktree", "add", "-q", str(wt), "-b", "side")
    before_main, before_wt = Snapshot.take(main), Snapshot.take(wt)
    results = _run_all(wt)
    for args, res in results.items():
        if res.returncode in (1, 2) and args[0] != "doctor":
            assert_clear_error(res, res.returncode)
    assert results[("check",)].returncode == 0
    assert "mödule x.py" in results[("sourcemap",)].stdout
    capsule = run_pilot("capsule", "--task", "set up ü the widgets", "--print", cwd=wt)
    assert capsule.returncode == 0 and "gúide file.md" in capsule.stdout
    # The capsule an agent reads lives in the worktree's own git dir; shared data in the common dir.
    listed = run_pilot("capsule", "--task", "set up ü the widgets", cwd=wt)
    assert str(main / ".git" / "worktrees") in listed.stdout
    # A check pass recorded in the worktree is reused from the main worktree on the same tree.
    again = run_pilot("check", cwd=main)
    assert again.returncode == 0 and "reused" in again.stdout
    before_main.assert_unchanged(main)
    before_wt.assert_unchanged(wt)


@pytest.mark.parametrize("where", ["dir with space", "nön-äscii ✓"])
def test_hooks_installed_under_odd_paths_run_on_commit_and_fail_nothing(tmp_path: Path, where: str) -> None:
    repo = make_repo(tmp_path / where / "repo", standard_files())
    assert run_pilot("hooks", "install", cwd=repo).returncode == 0
    (repo / "app.py").write_text("def spin(speed):\n    return -speed\n")
    commit = subprocess.run(["git", "commit", "-qam", "negate"], cwd=repo, capture_output=True,
                            env=pilot_env({"GIT_PILOT_HOOKS_SYNC": "1"}))
    assert commit.returncode == 0 and b"Traceback" not in commit.stderr, commit.stderr
    assert git(repo, "log", "-1", "--format=%s") == "negate\n"
    assert not (repo / ".git" / "pilot" / "logs" / "hooks.log").exists() or \
        "Traceback" not in (repo / ".git" / "pilot" / "logs" / "hooks.log").read_text()
    assert run_pilot("hooks", "uninstall", cwd=repo).returncode == 0
    assert not any(p.read_text().startswith("#!/bin/sh\n# git-pilot-hook")
                   for p in (repo / ".git" / "hooks").iterdir() if p.is_file() and not p.name.endswith(".sample"))


def test_a_corrupt_index_is_named_and_left_alone(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", standard_files())
    index = repo / ".git" / "index"
    index.write_bytes(b"DIRC garbage")
    for args in (("check",), ("check", "--force"), ("review-budget",), ("capsule", "--task", "x"), ("sourcemap",),
                 ("run", "--dry-run", "x")):
        line = assert_clear_error(run_pilot(*args, cwd=repo), 1)
        assert "index" in line and ".git/pilot/tmp" not in line, line
    assert index.read_bytes() == b"DIRC garbage"


def test_a_locked_index_does_not_stop_a_check(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", standard_files())
    (repo / ".git" / "index.lock").write_bytes(b"")  # another git command is running
    (repo / "app.py").write_text("def spin(speed):\n    return 0\n")
    res = run_pilot("check", cwd=repo)
    assert res.returncode == 0 and "PASS" in res.stdout
    assert (repo / ".git" / "index.lock").read_bytes() == b""


def test_a_split_index_repository_is_refused_by_name_where_pygit2_is_needed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", standard_files())
    git(repo, "checkout", "-q", "-b", "side")
    git(repo, "config", "core.splitIndex", "true")
    git(repo, "update-index", "--split-index")
    (repo / "app.py").write_text("def spin(speed):\n    return 0\n")
    git(repo, "add", "app.py")
    before = Snapshot.take(repo)
    for args in (("review-budget",), ("review-budget", "--json"), ("codex", "review")):
        assert_clear_error(run_pilot(*args, cwd=repo), 1, "split index")
    assert run_pilot("check", cwd=repo).returncode == 0  # stock git only: works
    before.assert_unchanged(repo)
