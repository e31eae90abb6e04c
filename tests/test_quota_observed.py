"""Quota stops wherever git pilot can observe them: the Codex commands it runs for a task (`codex
review`, `codex plan`), a failed background Claude session (its `claude logs`, else its
transcript), and what `status` says once a ticket was cancelled or expired; and the reset forms
read from plain text and flat JSON. Real git pilot processes, fake agents printing captured real
output, an injected clock, a real detached helper where one is started."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLES, git, run_pilot
from fake_agents import FakeAgents, install
from fake_agents.fake_agent import read_sample
from fake_agents.pilot import context_repo, session_record, state_record, tid_of

from gitpilot.quota import tickets
from gitpilot.quota.helper import PID_NAME, helper_alive

TASK = "Raise the widget spin speed cap to 12000 rpm in widgets/speed.py"
NOW = "2026-11-30T12:00:00Z"
REVIEW_LIMIT = "cli-help/codex-review-base-mock-usage-limit.txt"  # "... try again at 3:43 PM."
PLAN_LIMIT = "cli-help/codex-exec-json-mock-usage-limit.txt"
# What Claude Code 2.1.197 says on a plan limit (the 429 sample), in the terminal framing its
# `claude logs` printed for a live job (the logs of a limited job could not be captured here).
LIMIT_MESSAGE = json.loads(read_sample("cli-help/claude-p-mock-429-oauth-five_hour.txt")[0])["result"]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    clock = tmp_path / "clock"
    clock.write_text(NOW)
    resumes = tmp_path / "resumes.log"
    fake_resume = tmp_path / "fake-resume"
    fake_resume.write_text(f'#!/bin/sh\necho "$1 $2" >> {resumes}\n')
    fake_resume.chmod(0o755)
    monkeypatch.setenv("GIT_PILOT_NOW", f"@{clock}")
    monkeypatch.setenv("GIT_PILOT_QUOTA_POLL", "0.02")
    monkeypatch.setenv("GIT_PILOT_QUOTA_RESUME_COMMAND", f"{fake_resume} {{session}} {{task}}")
    fakes = install(tmp_path, monkeypatch)
    repo = context_repo(tmp_path / "repo")
    state: dict[str, Any] = {"repo": repo, "fakes": fakes, "clock": clock, "resumes": resumes}
    yield state
    end_helper(repo / ".git" / "pilot")


def end_helper(pilot_dir: Path) -> None:
    """End the detached helper this test's git pilot started (it may still be writing its pid)."""
    deadline = time.monotonic() + 10
    while helper_alive(pilot_dir):
        try:
            os.kill(int((pilot_dir / PID_NAME).read_text()), signal.SIGTERM)
        except (OSError, ValueError):
            pass
        assert time.monotonic() < deadline, "the quota helper would not end"
        time.sleep(0.05)


def configure(repo: Path, text: str) -> None:
    (repo / ".gitpilot.toml").write_text(text)
    git(repo, "add", ".gitpilot.toml")
    git(repo, "commit", "-qm", "config")


def started_task(repo: Path) -> tuple[str, str]:
    res = run_pilot("run", TASK, cwd=repo)
    assert res.returncode == 0, res.stderr
    tid = tid_of(TASK)
    return tid, str(session_record(repo, tid)["sessions"][-1]["session_id"])


def status_row(repo: Path, tid: str) -> dict[str, Any]:
    res = run_pilot("status", "--json", cwd=repo)
    assert res.returncode == 0, res.stderr
    return next(r for r in json.loads(res.stdout) if r["task"] == tid)


def test_codex_review_on_a_usage_limit_records_the_wait_and_a_ticket(env: dict[str, Any]) -> None:
    repo, fakes = env["repo"], env["fakes"]
    configure(repo, "[quota]\nauto_resume = true\ngrace_minutes = 2\n")
    tid, sid = started_task(repo)
    (repo / "widgets/speed.py").write_text("SPEED = 12000\n")
    fakes.rule("codex", ["review", "--base"], sample=REVIEW_LIMIT, times=1)
    res = run_pilot("codex", "review", cwd=repo, env={"GIT_PILOT_TASK": tid})
    assert res.returncode == 1
    assert "codex review round 1 failed (not counted): quota: You’ve hit your usage limit" in res.stdout
    line = f"waiting-quota — resume scheduled 2026-11-30T15:45:00Z (codex limit resets 2026-11-30T15:43:00Z; session {sid})"
    assert line in res.stdout.splitlines()
    ticket = tickets.pending(repo / ".git" / "pilot")
    assert ticket is not None and (ticket.task_id, ticket.session, ticket.provider) == (tid, sid, "codex")
    state = state_record(repo, tid)
    assert state["status"] == "waiting-quota" and state["quota_wait"]["reset_at"] == "2026-11-30T15:43:00Z"
    assert state["review_rounds_used"] == 0  # a failed round is still not counted
    row = status_row(repo, tid)
    assert row["quota_ticket"] == "scheduled" and row["summary"].startswith(line)
    # codex ran with a pinned zone, in which its zone-less "3:43 PM" was read
    call = [c for c in fakes.calls("codex") if "review" in c["argv"] and "--help" not in c["argv"]][-1]
    assert call["env"]["TZ"] == "UTC"


def test_codex_plan_on_a_usage_limit_records_the_wait_without_a_ticket_when_auto_resume_is_off(
        env: dict[str, Any]) -> None:
    repo, fakes = env["repo"], env["fakes"]
    configure(repo, "[planner]\nenabled = true\n")
    tid, _ = started_task(repo)
    fakes.rule("codex", ["exec", "--sandbox"], sample=PLAN_LIMIT, times=1)
    res = run_pilot("codex", "plan", cwd=repo, env={"GIT_PILOT_TASK": tid})
    assert res.returncode == 1
    assert "codex plan failed (nothing recorded): You’ve hit your usage limit" in res.stdout
    assert "quota exhausted; the limit resets at 2026-11-30T15:42:00Z. Automatic resume is off" in res.stdout
    assert tickets.pending(repo / ".git" / "pilot") is None
    state = state_record(repo, tid)
    assert state["status"] == "waiting-quota" and state["planned"] is False
    assert state["quota_wait"]["resume_at"] is None and state["quota_wait"]["provider"] == "codex"
    row = status_row(repo, tid)
    assert row["quota_ticket"] == "not-scheduled"
    assert row["summary"].startswith("waiting-quota — no resume scheduled (codex limit resets 2026-11-30T15:42:00Z)")


def limited_review(env: dict[str, Any]) -> str:
    """A task whose codex review round stopped on a usage limit, with a resume scheduled."""
    repo, fakes = env["repo"], env["fakes"]
    configure(repo, "[quota]\nauto_resume = true\ngrace_minutes = 2\n")
    tid, _ = started_task(repo)
    (repo / "widgets/speed.py").write_text("SPEED = 12000\n")
    fakes.rule("codex", ["review", "--base"], sample=REVIEW_LIMIT, times=1)
    assert run_pilot("codex", "review", cwd=repo, env={"GIT_PILOT_TASK": tid}).returncode == 1
    return tid


def test_status_stops_saying_scheduled_once_the_ticket_is_cancelled_or_expired(env: dict[str, Any]) -> None:
    repo, clock = env["repo"], env["clock"]
    tid = limited_review(env)
    assert status_row(repo, tid)["quota_ticket"] == "scheduled"
    # The user turns automatic resume off; at the resume time the helper cancels the ticket.
    (repo / ".gitpilot.toml").write_text("[quota]\nauto_resume = false\n")
    clock.write_text("2026-11-30T15:46:00Z")
    deadline = time.monotonic() + 20
    pilot_dir = repo / ".git" / "pilot"
    while not any(e["event"] == "cancelled" for e in tickets.events(pilot_dir)):
        assert time.monotonic() < deadline, "the helper never acted on the due ticket"
        time.sleep(0.05)
    row = status_row(repo, tid)
    assert row["quota_ticket"] == "cancelled"
    assert row["summary"].startswith("waiting-quota — resume cancelled 2026-11-30T15:46:00Z: automatic resume is off")
    assert "resume scheduled" not in run_pilot("status", cwd=repo).stdout
    assert not env["resumes"].exists()  # nothing was resumed


def test_a_ticket_past_its_three_days_shows_as_expired(env: dict[str, Any]) -> None:
    repo, clock = env["repo"], env["clock"]
    tid = limited_review(env)
    end_helper(repo / ".git" / "pilot")  # no helper ran in the meantime (a reboot): the ticket is still there
    clock.write_text("2026-12-03T16:00:00Z")
    # status says it (the helper that this next command re-arms may already have expired it)
    row = status_row(repo, tid)
    assert row["quota_ticket"] == "expired", row
    assert row["summary"].startswith("waiting-quota — resume expired") and "three days" in row["summary"]
    assert "resume scheduled" not in row["summary"]


def background_task(repo: Path, fakes: FakeAgents, config: str) -> tuple[str, dict[str, Any]]:
    configure(repo, '[agent]\nmode = "background"\n' + config)
    res = run_pilot("run", TASK, cwd=repo)
    assert res.returncode == 0, res.stderr
    tid = tid_of(TASK)
    first = session_record(repo, tid)["sessions"][-1]
    fakes.set_job_state(first["short_id"], "failed")
    return tid, first


def bg_resumes(fakes: FakeAgents) -> list[list[str]]:
    return [a for a in fakes.argvs("claude") if "--bg" in a and "--resume" in a]


def test_a_failed_background_session_is_read_and_not_resumed_into_its_limit(env: dict[str, Any]) -> None:
    repo, fakes, clock = env["repo"], env["fakes"], env["clock"]
    tid, first = background_task(repo, fakes, "[quota]\nauto_resume = true\ngrace_minutes = 2\n")
    framing = read_sample("cli-help/claude-logs-bg-existing.txt")[0].split("\r\r\n")[0]
    fakes.rule("claude", ["logs", first["short_id"]], stdout=f"{framing}\r\r\n\x1b[3G⎿  {LIMIT_MESSAGE}\r\r\n", exit=0)
    res = run_pilot("resume", tid[:12], cwd=repo)
    assert res.returncode == 1
    assert res.stderr.count("\n") == 1
    assert (f"task {tid[:12]}: background session {first['short_id']} stopped on a usage limit; not resumed "
            "into it: waiting-quota — resume scheduled 2026-11-30T15:45:00Z (claude limit resets "
            f"2026-11-30T15:43:00Z; session {first['session_id']})") in res.stderr
    assert ["logs", first["short_id"]] in fakes.argvs("claude")
    assert bg_resumes(fakes) == []  # not resumed straight into the limit
    ticket = tickets.pending(repo / ".git" / "pilot")
    assert ticket is not None and (ticket.session, ticket.provider) == (first["session_id"], "claude")
    assert state_record(repo, tid)["status"] == "waiting-quota"
    # Once the limit has reset the same session is resumed (the helper's resume, or the user's).
    end_helper(repo / ".git" / "pilot")
    clock.write_text("2026-11-30T15:50:00Z")
    again = run_pilot("resume", tid[:12], cwd=repo)
    assert again.returncode == 0, again.stderr
    assert bg_resumes(fakes)[-1][bg_resumes(fakes)[-1].index("--resume") + 1] == first["session_id"]


def test_when_the_logs_cannot_be_read_the_transcript_tells(env: dict[str, Any]) -> None:
    repo, fakes = env["repo"], env["fakes"]
    tid, first = background_task(repo, fakes, "")
    # The real transcript of the session that hit the limit, as Claude Code keeps it for this checkout.
    key = "".join(c if c.isalnum() else "-" for c in str(repo))
    dest = Path(os.environ["HOME"]) / ".claude" / "projects" / key / f"{first['session_id']}.jsonl"
    dest.parent.mkdir(parents=True)
    dest.write_bytes((SAMPLES / "claude-transcripts-2.1.197" / "0e4b53fb-e921-4323-87c3-a0c084c9f73c.jsonl").read_bytes())
    res = run_pilot("resume", tid[:12], cwd=repo)
    assert res.returncode == 1
    assert "stopped on a usage limit; not resumed into it: quota exhausted; the limit resets at " \
           "2026-11-30T15:43:00Z. Automatic resume is off" in res.stderr
    assert bg_resumes(fakes) == []
    assert state_record(repo, tid)["quota_wait"]["reset_at"] == "2026-11-30T15:43:00Z"


def test_a_failed_background_session_without_a_limit_is_resumed_as_before(env: dict[str, Any]) -> None:
    repo, fakes = env["repo"], env["fakes"]
    tid, first = background_task(repo, fakes, "")
    res = run_pilot("resume", tid[:12], cwd=repo)  # its logs cannot be read, it has no transcript
    assert res.returncode == 0, res.stderr
    assert len(bg_resumes(fakes)) == 1


def test_a_limit_without_a_reset_time_is_refused_once(env: dict[str, Any]) -> None:
    repo, fakes = env["repo"], env["fakes"]
    tid, first = background_task(repo, fakes, "")
    fakes.rule("claude", ["logs", first["short_id"]], stdout="Claude AI usage limit reached.\n", exit=0)
    res = run_pilot("resume", tid[:12], cwd=repo)
    assert res.returncode == 1
    assert "quota exhausted; reset time unavailable for automatic scheduling" in res.stderr
    assert bg_resumes(fakes) == []
    again = run_pilot("resume", tid[:12], cwd=repo)  # as the message says: once the limit has reset
    assert again.returncode == 0, again.stderr
    assert len(bg_resumes(fakes)) == 1


@pytest.mark.parametrize(("text", "reset"), [
    ('{"error":"usage_limit_reached","resets_at":1796053380}', "2026-11-30T15:43:00Z"),
    ('Error: usage limit reached for this plan. "resets_at": 1796053380', "2026-11-30T15:43:00Z"),
    ('ERROR: You’ve hit your usage limit.\n  {"detail": "limit", "resets_at": 1796053380\n', "2026-11-30T15:43:00Z"),
    ('{"type":"error","error":{"type":"usage_limit_reached","message":"The usage limit has been reached",'
     '"plan_type":"plus","resets_at":1796053380}}', "2026-11-30T15:43:00Z"),
    ('{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1796053380,'
     '"rateLimitType":"five_hour"}}', "2026-11-30T15:43:00Z"),
])
def test_reset_forms(pilot_on_path: Path, text: str, reset: str) -> None:
    res = subprocess.run(["git", "pilot", "quota", "classify", "--json"], input=text.encode(), capture_output=True,
                         env={**os.environ, "GIT_PILOT_NOW": NOW}, check=False)
    assert res.returncode == 0, res.stderr
    verdict = json.loads(res.stdout)
    assert (verdict["kind"], verdict["reset_at"]) == ("quota", reset), verdict
