"""``git pilot capsule``: task sources, outputs and usage errors, run as real processes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import make_repo, run_pilot

FILES = {"AGENTS.md": "# Guide\n\nUse tabs.\n", "docs/cache.md": "# Cache\n\nEntries live ten minutes.\n"}


def test_prints_size_and_path_then_json_then_the_capsule(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", FILES)
    proc = run_pilot("capsule", "--task", "Shorten cache entry lifetime", cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("capsule built: ") and "/.git/pilot/capsule-" in proc.stdout
    data = json.loads(
        run_pilot("capsule", "--task", "Shorten cache entry lifetime", "--json", cwd=root).stdout
    )
    assert data["reused"] is True and data["capsule_bytes"] > 0 and data["baseline_bytes"] > 0
    assert data["manifest"]["fingerprint"] and Path(data["path"]).is_file()
    printed = run_pilot("capsule", "--task", "Shorten cache entry lifetime", "--print", cwd=root).stdout
    assert "Entries live ten minutes." in printed and printed == Path(data["path"]).read_text()


def test_task_from_a_file_or_stdin(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", FILES)
    (tmp_path / "task.md").write_text("Shorten cache entry lifetime\n")
    by_file = run_pilot("capsule", "--task-file", str(tmp_path / "task.md"), "--print", cwd=root)
    by_stdin = run_pilot("capsule", "--print", cwd=root, input=b"Shorten cache entry lifetime\n")
    assert by_file.returncode == 0 and by_file.stdout == by_stdin.stdout


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", FILES)
    both = run_pilot("capsule", "--task", "x", "--task-file", "f", cwd=root)
    assert both.returncode == 2 and "not both" in both.stderr
    empty = run_pilot("capsule", cwd=root, input=b"")
    assert empty.returncode == 2 and "empty" in empty.stderr
    missing = run_pilot("capsule", "--task-file", str(tmp_path / "nope"), cwd=root)
    assert missing.returncode == 2 and "no such task file" in missing.stderr


def test_runs_through_git(tmp_path: Path, pilot_on_path: Path) -> None:
    root = make_repo(tmp_path / "repo", FILES)
    proc = subprocess.run(
        ["git", "pilot", "capsule", "--task", "Shorten cache entry lifetime"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "capsule built" in proc.stdout


def test_outside_a_repository_is_one_clear_line(tmp_path: Path) -> None:
    proc = run_pilot("capsule", "--task", "x", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip().startswith("git pilot: not a git repository")


def test_capsule_and_run_read_a_task_the_same_way(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "same", {"AGENTS.md": "# Rules\n\nBe careful.\n"})
    for argv in (["capsule", "--task-file", "nope.md"], ["run", "--dry-run", "--task-file", "nope.md"]):
        res = run_pilot(*argv, cwd=repo)
        assert res.returncode == 2 and "no such task file: nope.md" in res.stderr, argv
    (repo / "bad.md").write_bytes(b"fix \xff\n")
    for argv in (["capsule", "--task-file", "bad.md"], ["run", "--dry-run", "--task-file", "bad.md"]):
        res = run_pilot(*argv, cwd=repo)
        assert res.returncode == 2 and "task file bad.md is not UTF-8 (byte 4)" in res.stderr, argv
    res = run_pilot("capsule", "--task-file", "-", cwd=repo, input=b"\xff\xfe")
    assert res.returncode == 2 and "the task on stdin is not UTF-8" in res.stderr
