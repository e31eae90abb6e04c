"""``git pilot status`` shows each task's age, state and last session; ``git pilot tasks forget``
removes task records (the ref and the task's local files), with a dry run, and keeps what runs."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from conftest import git, make_repo, run_pilot

OLD, NEW = "Fix the retry of failed webhooks", "Document the queue settings"


def _task(repo: Path, text: str, when: int) -> str:
    res = run_pilot("capsule", "--task", text, "--json", cwd=repo, env={"GIT_COMMITTER_DATE": f"{when} +0000",
                                                                        "GIT_AUTHOR_DATE": f"{when} +0000"})
    assert res.returncode == 0, res.stderr
    tid = json.loads(res.stdout)["task_id"]
    assert isinstance(tid, str)
    return tid


def _repo(tmp_path: Path) -> tuple[Path, str, str]:
    repo = make_repo(tmp_path / "r", {"README.md": "# Hooks\n\n## Webhooks\n\nRetries back off.\n"})
    now = int(time.time())
    return repo, _task(repo, OLD, now - 40 * 86400), _task(repo, NEW, now - 3600)


def _refs(repo: Path) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname)", "refs/pilot/tasks/").split()


def test_status_shows_age_state_and_last_session(tmp_path: Path) -> None:
    repo, old, new = _repo(tmp_path)
    res = run_pilot("status", cwd=repo)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    by = {ln.split()[0]: ln for ln in lines}
    assert set(by) == {old[:12], new[:12]}
    assert by[old[:12]].split()[1:3] == ["5w", "new"] and by[new[:12]].split()[1:3] == ["1h", "new"]
    assert "[none]" in by[new[:12]] and NEW in by[new[:12]]
    data = {r["task"]: r for r in json.loads(run_pilot("status", "--json", cwd=repo).stdout)}
    assert 40 * 86400 <= time.time() - data[old]["record_updated"] < 40 * 86400 + 600
    assert data[new]["record_updated"] > data[old]["record_updated"]


def test_forget_older_than_with_a_dry_run_first(tmp_path: Path) -> None:
    repo, old, new = _repo(tmp_path)
    capsule = repo / ".git" / "pilot" / f"capsule-{old}.md"
    assert capsule.exists()
    dry = run_pilot("tasks", "forget", "--older-than", "30d", "--dry-run", cwd=repo)
    assert dry.returncode == 0, dry.stderr
    assert f"would forget task {old[:12]} (updated 5w ago" in dry.stdout and new[:12] not in dry.stdout
    assert str(capsule) in dry.stdout and "nothing removed" in dry.stdout
    assert len(_refs(repo)) == 2 and capsule.exists()

    res = run_pilot("tasks", "forget", "--older-than", "30d", cwd=repo)
    assert res.returncode == 0, res.stderr
    assert f"forgot task {old[:12]}" in res.stdout and "1 task record(s) forgotten" in res.stdout
    assert _refs(repo) == [f"refs/pilot/tasks/{new}"]
    assert not capsule.exists() and not capsule.with_suffix(".json").exists()
    assert (repo / ".git" / "pilot" / f"capsule-{new}.md").exists()
    assert [r["task"] for r in json.loads(run_pilot("status", "--json", cwd=repo).stdout)] == [new]
    # the forgotten task's capsule is built afresh when asked for again
    assert _task(repo, OLD, int(time.time())) == old and capsule.exists()
    again = run_pilot("tasks", "forget", "--older-than", "30d", cwd=repo)
    assert again.returncode == 0 and "no task record updated more than 30d ago" in again.stdout


def test_forget_one_task_by_id_prefix(tmp_path: Path) -> None:
    repo, old, new = _repo(tmp_path)
    res = run_pilot("tasks", "forget", new[:10], cwd=repo)
    assert res.returncode == 0, res.stderr
    assert _refs(repo) == [f"refs/pilot/tasks/{old}"]
    assert not (repo / ".git" / "pilot" / f"capsule-{new}.md").exists()


def test_a_running_task_is_kept(tmp_path: Path) -> None:
    repo, old, _new = _repo(tmp_path)
    session = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        run_file = repo / ".git" / "pilot" / "run" / f"{old}.json"
        run_file.parent.mkdir(parents=True, exist_ok=True)
        run_file.write_text(json.dumps({"pid": session.pid, "session_id": "s-1", "mode": "print",
                                        "started": "2026-01-01T00:00:00Z"}))
        res = run_pilot("tasks", "forget", "--older-than", "30d", cwd=repo)
        assert res.returncode == 1
        assert f"kept task {old[:12]}" in res.stdout and f"its session is running (pid {session.pid})" in res.stdout
        assert f"refs/pilot/tasks/{old}" in _refs(repo)
    finally:
        session.kill()
        session.wait()


def test_bad_arguments_are_usage_errors_and_change_nothing(tmp_path: Path) -> None:
    repo, old, new = _repo(tmp_path)
    for args, code, words in ((["tasks", "forget"], 2, "give a task id or --older-than AGE"),
                              (["tasks", "forget", old[:8], "--older-than", "3d"], 2, "not both"),
                              (["tasks", "forget", "--older-than", "30 days"], 2, "e.g. 30d"),
                              (["tasks", "forget", "feedfacefeed"], 1, "no task record 'feedfacefeed'")):
        res = run_pilot(*args, cwd=repo)
        assert res.returncode == code and words in res.stderr and "Traceback" not in res.stderr, (args, res.stderr)
    assert len(_refs(repo)) == 2
