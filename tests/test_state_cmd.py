"""Compact task state: ``git pilot state``, ``status``, ``stop``; each update one CAS commit."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import git, pilot_env
from fake_agents import FakeAgents, install
from fake_agents.pilot import context_repo, pilot, session_record, state_record, tid_of

TASK = "Document the gadget humming frequency"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return context_repo(tmp_path / "repo")


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeAgents:
    return install(tmp_path, monkeypatch)


@pytest.fixture
def started(
    repo: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> str:
    assert pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys).code == 0
    return tid_of(TASK)


def _ref_log(repo: Path, tid: str) -> list[str]:
    return git(repo, "log", "--format=%s", f"refs/pilot/tasks/{tid}").splitlines()


def test_state_updates_from_the_agent_environment_each_land_as_one_commit(
    repo: Path, started: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GIT_PILOT_TASK", started)  # as in the agent's session
    before = len(_ref_log(repo, started))
    res = pilot(
        repo,
        "state",
        "--pr",
        "42",
        "--ci",
        "pending",
        "--status",
        "working",
        monkeypatch=monkeypatch,
        capsys=capsys,
    )
    assert res.code == 0, res.err
    assert res.out.startswith(f"{started[:12]}  working · PR #42 · CI pending")
    pilot(
        repo,
        "state",
        "--ci",
        "failing",
        "--blocker",
        "flaky   network\ntest",
        monkeypatch=monkeypatch,
        capsys=capsys,
    )
    pilot(repo, "state", "--ci", "passing", "--status", "ready", monkeypatch=monkeypatch, capsys=capsys)
    log = _ref_log(repo, started)
    assert len(log) == before + 3
    assert log[0] == "pilot: state status=ready, ci=passing"
    state = state_record(repo, started)
    assert state["pr"] == 42 and state["ci"] == "passing" and state["status"] == "ready"
    assert state["blockers"] == ["flaky network test"]
    # Orchestration facts only.
    assert set(state) <= {
        "status",
        "sessions",
        "pr",
        "ci",
        "blockers",
        "review_rounds_used",
        "planned",
        "quota_wait",
        "agent",
        "updated",
    }
    pilot(repo, "state", "--clear-blockers", monkeypatch=monkeypatch, capsys=capsys)
    assert state_record(repo, started)["blockers"] == []


@pytest.mark.parametrize(
    "args, message",
    [
        (["--ci", "green"], "--ci must be one of passing, failing, pending, not 'green'"),
        (["--status", "done"], "--status must be one of ready, working, blocked, waiting-quota, not 'done'"),
        (["--pr", "0"], "--pr must be a positive pull request number, not 0"),
    ],
)
def test_state_refuses_values_outside_the_vocabulary(
    repo: Path,
    started: str,
    args: list[str],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = _ref_log(repo, started)
    res = pilot(repo, "state", "--task", started[:8], *args, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 2
    assert res.err.strip() == f"git pilot: {message}"
    assert _ref_log(repo, started) == before


def test_state_without_a_task_says_how_to_name_one(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    res = pilot(repo, "state", "--pr", "3", monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 2 and "--task ID" in res.err


def test_concurrent_state_writers_lose_no_fact(repo: Path, started: str) -> None:
    """Eight processes each record a blocker at once: all eight land (compare-and-swap retries)."""
    env = pilot_env({"GIT_PILOT_TASK": started})
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "gitpilot", "state", "--blocker", f"reason {i}"],
            cwd=repo,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for i in range(8)
    ]
    threads = [threading.Thread(target=p.communicate) for p in procs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(p.returncode == 0 for p in procs)
    assert sorted(state_record(repo, started)["blockers"]) == [f"reason {i}" for i in range(8)]


def test_status_shows_a_short_summary_per_task_and_json(
    repo: Path,
    started: str,
    fakes: FakeAgents,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pilot(
        repo,
        "state",
        "--task",
        started,
        "--pr",
        "7",
        "--ci",
        "failing",
        "--blocker",
        "review pending",
        monkeypatch=monkeypatch,
        capsys=capsys,
    )
    res = pilot(repo, "status", monkeypatch=monkeypatch, capsys=capsys)
    sid = session_record(repo, started)["sessions"][-1]["session_id"]
    # issue 16 adds the age (since the record was last updated; dates are pinned to 2023 here)
    # and when the last session started
    assert len(res.out.splitlines()) == 1
    assert re.fullmatch(
        rf"{started[:12]}  \d+w  stopped · PR #7 · CI failing · blocked: review pending  "
        rf"\[claude {sid[:8]}, started \d+[smh] ago\]  {re.escape(TASK)}", res.out.splitlines()[0])
    rows = json.loads(pilot(repo, "status", "--json", monkeypatch=monkeypatch, capsys=capsys).out)
    assert rows[0]["task"] == started and rows[0]["pr"] == 7 and rows[0]["session"] == sid
    assert rows[0]["blockers"] == ["review pending"] and rows[0]["title"] == TASK


def test_status_shows_a_scheduled_quota_resume(
    repo: Path, started: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from gitpilot.repo import Repo
    from gitpilot.tasks.state import update_state

    wait = {
        "reset_at": "2026-11-30T15:43:00Z",
        "resume_at": "2026-11-30T15:45:00Z",
        "session": "s-1",
        "provider": "claude",
    }
    r = Repo.discover(repo)
    update_state(r, started, lambda s: s.update(status="waiting-quota", quota_wait=wait), "test: quota wait")
    # "resume scheduled" is shown only while the ticket that schedules it is pending (issue 11 item 4).
    from gitpilot.quota import tickets

    tickets.write(r.pilot_dir, tickets.new_ticket(
        project_root=r.workdir, git_dir=r.git_dir, branch="main", task_id=started, session="s-1",
        provider="claude", reset_at=tickets.parse("2026-11-30T15:43:00Z"), grace_minutes=2,
        now=tickets.parse("2026-11-30T12:00:00Z")))
    monkeypatch.setenv("GIT_PILOT_NOW", "2026-11-30T12:00:00Z")
    try:
        res = pilot(repo, "status", monkeypatch=monkeypatch, capsys=capsys)
    finally:  # the command re-armed a helper for the pending ticket: end it
        from test_quota_observed import end_helper

        end_helper(r.pilot_dir)
    assert (
        "waiting-quota — resume scheduled 2026-11-30T15:45:00Z (claude limit resets 2026-11-30T15:43:00Z; "
        "session s-1)"
    ) in res.out


def test_stop_stops_a_working_background_session_and_records_it(
    repo: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / ".gitpilot.toml").write_text('[agent]\nmode = "background"\n')
    pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    tid = tid_of(TASK)
    short = session_record(repo, tid)["sessions"][-1]["short_id"]
    res = pilot(repo, "stop", tid[:8], monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.err
    assert ["stop", short] in fakes.argvs("claude")
    assert f"stopped background session {short} (working)" in res.out
    assert state_record(repo, tid)["status"] == "stopped"
    assert next(j for j in fakes.state()["jobs"] if j["id"] == short)["state"] == "stopped"
    # Stopped: the next run resumes it (no copy was running).
    assert pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys).code == 0


def test_stop_cancels_a_pending_quota_ticket_even_when_the_session_is_gone(
    repo: Path, started: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from datetime import UTC, datetime

    from gitpilot.quota import tickets
    from gitpilot.repo import Repo

    r = Repo.discover(repo)
    sid = session_record(repo, started)["sessions"][-1]["session_id"]
    now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    ticket = tickets.new_ticket(
        project_root=repo,
        git_dir=r.git_dir,
        branch="main",
        task_id=started,
        session=sid,
        provider="claude",
        reset_at=datetime(2026, 11, 30, 15, 43, tzinfo=UTC),
        grace_minutes=2,
        now=now,
        task_file=None,
    )
    tickets.write(r.pilot_dir, ticket)
    assert tickets.pending(r.pilot_dir) is not None
    res = pilot(repo, "stop", sid, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.err
    assert "cancelled the pending quota resume" in res.out
    assert tickets.pending(r.pilot_dir) is None


def test_stop_of_an_unknown_id_is_one_clear_error(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    res = pilot(repo, "stop", "nosuchtask", monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 1
    assert res.err.strip() == "git pilot: no task or session 'nosuchtask' (see git pilot status)"


def test_a_running_session_blocks_a_second_copy_and_stop_ends_it(
    repo: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import time

    tid = tid_of(TASK)
    env = pilot_env({"FAKE_AGENT_SLEEP": "60"})
    first = subprocess.Popen(
        [sys.executable, "-m", "gitpilot", "run", TASK],
        cwd=repo,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 20
        while not any("-p" in a for a in fakes.argvs("claude")) and time.monotonic() < deadline:
            time.sleep(0.1)
        res = pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
        assert res.code == 1 and "its session is still running (pid " in res.err
        res = pilot(repo, "stop", tid[:12], monkeypatch=monkeypatch, capsys=capsys)
        assert res.code == 0, res.err
        assert "stopped the session process (pid " in res.out
        first.wait(timeout=20)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert state_record(repo, tid)["status"] == "stopped"
    assert state_record(repo, tid)["blockers"] == []
    assert len([a for a in fakes.argvs("claude") if "-p" in a]) == 1  # no copy was started


def test_interactive_mode_runs_the_cli_on_the_terminal_with_a_chosen_session_id(
    repo: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / ".gitpilot.toml").write_text('[agent]\nmode = "interactive"\n')
    res = pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.err
    argv = [a for a in fakes.argvs("claude") if a[-1].startswith("git pilot task")][0]
    assert "-p" not in argv and "--bg" not in argv
    sid = argv[argv.index("--session-id") + 1]
    assert session_record(repo, tid_of(TASK))["sessions"][-1]["session_id"] == sid
    assert not (repo / ".git" / "pilot" / "run" / f"{tid_of(TASK)}.json").exists()
    res = pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    resumed = [a for a in fakes.argvs("claude") if "--resume" in a][0]
    assert "-p" not in resumed and resumed[resumed.index("--resume") + 1] == sid
