"""Resume tickets and the detached helper, as real processes with an injected clock.

The clock is a file named by ``GIT_PILOT_NOW=@file``: the helper re-reads it on every poll,
so a test moves time forward by writing the file. The resume command is a fake that appends
one line per call, so "resumed exactly once" is a line count.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO_ROOT, git, make_repo

from gitpilot.quota import tickets
from gitpilot.quota.helper import PID_NAME, helper_alive, rearm_if_needed
from gitpilot.quota.schedule import cancel, handle_stop
from gitpilot.repo import Repo
from gitpilot.store.tasks import TaskStore, task_id

TASK_TEXT = "Make the parser accept trailing commas.\n"
SESSION = "0e4b53fb-e921-4323-87c3-a0c084c9f73c"
STOPPED_AT = "2026-11-30T12:28:20Z"
# Codex, run by git pilot with TZ=Europe/London: resets 15:42 London (= UTC in November).
CODEX_LIMIT = (
    '{"type":"turn.failed","error":{"message":"You’ve hit your usage limit. Upgrade to Pro '
    '(https://chatgpt.com/explore/pro) or try again at 3:42 PM."}}\n'
)
RESUME_AT = "2026-11-30T15:44:00Z"  # the stated reset plus grace_minutes = 2


@dataclass
class Scene:
    repo: Repo
    root: Path
    clock: Path
    record: Path
    task_file: Path
    started: list[int]

    @property
    def pilot(self) -> Path:
        return self.repo.pilot_dir

    def set_clock(self, when: str) -> None:
        tmp = self.clock.with_suffix(".tmp")
        tmp.write_text(when)
        os.replace(tmp, self.clock)

    def resumes(self) -> list[str]:
        return self.record.read_text().splitlines() if self.record.exists() else []

    def events(self, name: str | None = None) -> list[dict[str, object]]:
        return [e for e in tickets.events(self.pilot) if name is None or e["event"] == name]

    def helper_pid(self) -> int | None:
        try:
            return int((self.pilot / PID_NAME).read_text())
        except (OSError, ValueError):
            return None

    def write_task(self, session: str = SESSION, status: str = "working") -> None:
        files = {
            "session.json": json.dumps({"session_id": session}).encode(),
            "state.json": json.dumps({"status": status}).encode(),
        }
        TaskStore(self.repo).write(task_id(TASK_TEXT), files, "test: task record")

    def due_ticket(self) -> None:
        """A ticket written directly, already due, with no helper started."""
        self.write_task(status="waiting-quota")
        ticket = tickets.new_ticket(
            project_root=self.root,
            git_dir=self.repo.git_dir,
            branch="main",
            task_id=task_id(TASK_TEXT),
            session=SESSION,
            provider="claude",
            reset_at=tickets.parse("2026-11-30T15:42:00Z"),
            grace_minutes=2,
            now=tickets.parse(STOPPED_AT),
        )
        tickets.write(self.pilot, ticket)
        self.set_clock(RESUME_AT)

    def stop(self, output: str = CODEX_LIMIT, pinned: str | None = "Europe/London") -> str:
        """Run handle_stop in a short-lived process (the starter exits; the helper must not)."""
        script = (
            "import sys; from gitpilot.repo import Repo; from gitpilot.quota.schedule import handle_stop\n"
            "out = handle_stop(Repo.discover(sys.argv[1]), output=sys.stdin.read(),\n"
            "    task_id=sys.argv[2], session=sys.argv[3], provider='codex',\n"
            "    pinned_zone=sys.argv[4] or None, task_file=sys.argv[5])\n"
            "print(out.message)\n"
        )
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                script,
                str(self.root),
                task_id(TASK_TEXT),
                SESSION,
                pinned or "",
                str(self.task_file),
            ],
            input=output,
            capture_output=True,
            text=True,
            encoding="utf-8",
            check=False,
            env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        )
        assert proc.returncode == 0, proc.stderr
        pid = wait_for(self.helper_pid, "helper pid file")
        self.started.append(pid)
        return proc.stdout.strip()


def wait_for(probe: Callable[[], object], what: str, timeout: float = 15.0) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def alive(pid: int) -> bool:
    """True while ``pid`` runs; an exited process not yet reaped (a zombie) counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)
        return waited == 0
    except ChildProcessError:
        pass
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return not Path("/proc").is_dir()
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


@pytest.fixture
def scene(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Scene]:
    root = make_repo(tmp_path / "repo")
    (root / ".gitpilot.toml").write_text("[quota]\nauto_resume = true\ngrace_minutes = 2\n")
    task_file = tmp_path / "task.md"
    task_file.write_text(TASK_TEXT)
    clock = tmp_path / "clock"
    record = tmp_path / "resumes.log"
    fake = tmp_path / "fake-resume"
    fake.write_text(
        f'#!/bin/sh\nsleep "${{FAKE_RESUME_SECONDS:-0}}"\n'
        f'echo "$1 $2 reason=$GIT_PILOT_RESUME_REASON" >> {record}\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("GIT_PILOT_NOW", f"@{clock}")
    monkeypatch.setenv("GIT_PILOT_QUOTA_POLL", "0.02")
    monkeypatch.setenv("GIT_PILOT_QUOTA_RESUME_COMMAND", f"{fake} {{session}} {{task}}")
    s = Scene(Repo.discover(root), root, clock, record, task_file, [])
    s.set_clock(STOPPED_AT)
    s.write_task()
    yield s
    for pid in [*s.started, s.helper_pid() or 0]:
        if pid and alive(pid):
            os.kill(pid, signal.SIGTERM)


def test_helper_resumes_at_the_stated_time_and_survives_its_starter(scene: Scene) -> None:
    message = scene.stop()
    assert message.startswith(f"waiting-quota — resume scheduled {RESUME_AT}")
    ticket = tickets.pending(scene.pilot)
    assert ticket is not None
    assert (ticket.reset_at, ticket.resume_at, ticket.session) == ("2026-11-30T15:42:00Z", RESUME_AT, SESSION)
    state = json.loads(TaskStore(scene.repo).read_file(task_id(TASK_TEXT), "state.json") or b"{}")
    assert state["status"] == "waiting-quota"
    pid = scene.started[0]
    assert alive(pid) and os.getsid(pid) == pid  # its own session: a closed terminal cannot hang it up

    scene.set_clock("2026-11-30T15:43:59Z")
    time.sleep(0.3)
    assert scene.resumes() == [] and tickets.pending(scene.pilot) is not None

    scene.set_clock(RESUME_AT)
    wait_for(lambda: scene.events("resumed"), "the resume")
    assert scene.resumes() == [f"{SESSION} {task_id(TASK_TEXT)} reason=quota"]
    assert tickets.pending(scene.pilot) is None
    wait_for(lambda: not alive(pid), "the helper to exit")
    assert scene.events("resumed")[0]["exit"] == 0


def _auto_resume_off(s: Scene) -> None:
    (s.root / ".gitpilot.toml").write_text("[quota]\nauto_resume = false\n")


def _other_session(s: Scene) -> None:
    s.write_task(session="11111111-2222-4333-8444-555555555555", status="waiting-quota")


def _task_record_gone(s: Scene) -> None:
    git(s.root, "update-ref", "-d", f"refs/pilot/tasks/{task_id(TASK_TEXT)}")


def _task_text_changed(s: Scene) -> None:
    s.task_file.write_text(TASK_TEXT + "Also keep comments.\n")


def _task_started_again(s: Scene) -> None:
    s.write_task(status="working")


def _branch_changed(s: Scene) -> None:
    git(s.root, "switch", "-q", "-c", "other")


def _expired(s: Scene) -> None:
    s.set_clock("2026-12-03T15:44:01Z")


CONDITIONS = {
    "auto resume turned off": (_auto_resume_off, "automatic resume is off"),
    "another session of the task": (_other_session, "latest session is 11111111"),
    "task record gone": (_task_record_gone, "no task record"),
    "task text changed": (_task_text_changed, "task text changed"),
    "task started again": (_task_started_again, "task is working"),
    "branch changed": (_branch_changed, "branch changed: main -> other"),
    "expired": (_expired, "expired"),
}


@pytest.mark.parametrize("name", sorted(CONDITIONS))
def test_a_failed_condition_cancels_the_ticket(scene: Scene, name: str) -> None:
    change, reason = CONDITIONS[name]
    scene.stop()
    change(scene)
    if name != "expired":
        scene.set_clock(RESUME_AT)
    cancelled = wait_for(lambda: scene.events("cancelled"), "the cancellation")
    assert isinstance(cancelled, list) and reason in str(cancelled[0]["reason"])
    assert scene.resumes() == []
    assert tickets.pending(scene.pilot) is None


def test_a_running_session_cancels_the_ticket(scene: Scene) -> None:
    scene.stop()
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "--resume", SESSION])
    try:
        scene.set_clock(RESUME_AT)
        cancelled = wait_for(lambda: scene.events("cancelled"), "the cancellation")
        assert isinstance(cancelled, list)
        assert f"session {SESSION} is running (pid {other.pid})" == cancelled[0]["reason"]
    finally:
        other.kill()
        other.wait()
    assert scene.resumes() == []


def test_a_removed_worktree_cancels_the_ticket(scene: Scene, tmp_path: Path) -> None:
    wt = tmp_path / "wt"
    git(scene.root, "worktree", "add", "-q", "-b", "feature", str(wt))
    (wt / ".gitpilot.toml").write_text("[quota]\nauto_resume = true\n")
    scene.root = wt
    scene.repo = Repo.discover(wt)
    scene.stop()
    ticket = tickets.pending(scene.pilot)
    assert ticket is not None and ticket.project_root == str(wt) and ticket.branch == "feature"
    git(tmp_path / "repo", "worktree", "remove", "--force", str(wt))
    scene.set_clock(RESUME_AT)
    cancelled = wait_for(lambda: scene.events("cancelled"), "the cancellation")
    assert isinstance(cancelled, list) and "worktree is gone" in str(cancelled[0]["reason"])
    assert scene.resumes() == []


def test_stop_cancels_a_pending_ticket_even_when_the_session_is_gone(scene: Scene) -> None:
    scene.stop()
    pid = scene.started[0]
    _task_record_gone(scene)  # nothing left of the session but the ticket
    ticket = cancel(scene.repo, SESSION)
    assert ticket is not None and ticket.session == SESSION
    assert cancel(scene.repo, SESSION) is None  # nothing left to cancel
    wait_for(lambda: not alive(pid), "the helper to exit")
    scene.set_clock(RESUME_AT)
    time.sleep(0.2)
    assert scene.resumes() == []
    assert [e["reason"] for e in scene.events("cancelled")] == ["stopped by git pilot stop"]


def test_stop_by_task_id_prefix(scene: Scene) -> None:
    scene.stop()
    assert cancel(scene.repo, "0000000000") is None
    assert cancel(scene.repo, task_id(TASK_TEXT)[:10]) is not None
    assert tickets.pending(scene.pilot) is None


def test_a_dead_helper_is_rearmed_by_a_later_command(scene: Scene) -> None:
    scene.stop()
    pid = scene.started[0]
    os.kill(pid, signal.SIGKILL)  # what a reboot does to it
    wait_for(lambda: not alive(pid), "the helper to die")
    assert not helper_alive(scene.pilot)
    scene.set_clock("2026-11-30T18:00:00Z")  # the machine comes back after the resume time
    assert rearm_if_needed(scene.repo) is True
    assert rearm_if_needed(scene.repo) is False  # one helper is enough
    wait_for(lambda: scene.events("resumed"), "the resume")
    assert len(scene.resumes()) == 1


def test_rearm_costs_nothing_without_a_ticket(tmp_path: Path) -> None:
    pilot = tmp_path / "repo" / ".git" / "pilot"
    assert rearm_if_needed(pilot) is False
    assert not pilot.exists()


def test_two_helpers_racing_for_one_ticket_resume_it_once(
    scene: Scene, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_RESUME_SECONDS", "0.3")
    scene.due_ticket()
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    helpers = [
        subprocess.Popen([sys.executable, "-m", "gitpilot.quota.helper", str(scene.pilot)], env=env)
        for _ in range(2)
    ]
    assert [h.wait(timeout=20) for h in helpers] == [0, 0]
    assert len(scene.resumes()) == 1
    assert len(scene.events("resumed")) == 1


def test_processes_claiming_one_due_ticket_resume_it_once(scene: Scene) -> None:
    # Below the helper lock: the atomic claim alone lets exactly one process resume.
    scene.due_ticket()
    script = (
        "import sys; from pathlib import Path; from gitpilot.quota import tickets; "
        "from gitpilot.quota.resume import process_due\n"
        "p = Path(sys.argv[1]); t = tickets.pending(p)\n"
        "process_due(p, t) if t else None\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", script, str(scene.pilot)], env=env) for _ in range(4)]
    assert [p.wait(timeout=20) for p in procs] == [0, 0, 0, 0]
    assert len(scene.resumes()) == 1


def test_quota_without_a_stated_reset_stops_with_the_exact_message(scene: Scene) -> None:
    out = handle_stop(
        scene.repo,
        output=CODEX_LIMIT,
        task_id=task_id(TASK_TEXT),
        session=SESSION,
        provider="codex",
        pinned_zone=None,
    )
    assert out.message == (
        "quota exhausted; reset time unavailable for automatic scheduling. "
        "Run git pilot run once the limit has reset."
    )
    assert out.ticket is None and tickets.pending(scene.pilot) is None
    assert not helper_alive(scene.pilot)


def test_auto_resume_is_off_by_default(scene: Scene) -> None:
    (scene.root / ".gitpilot.toml").unlink()
    out = handle_stop(
        scene.repo,
        output=CODEX_LIMIT,
        task_id=task_id(TASK_TEXT),
        session=SESSION,
        provider="codex",
        pinned_zone="Europe/London",
    )
    assert out.ticket is None and tickets.pending(scene.pilot) is None
    assert "limit resets at 2026-11-30T15:42:00Z" in out.message and "auto_resume = false" in out.message


def test_ticket_file_is_complete_json_and_no_temp_file_is_left(scene: Scene) -> None:
    scene.stop()
    body = json.loads((scene.pilot / "resume-ticket.json").read_text())
    assert body["project_root"] == str(scene.root)
    assert body["task_id"] == task_id(TASK_TEXT)
    assert (body["session"], body["provider"]) == (SESSION, "codex")
    assert (body["reset_at"], body["resume_at"]) == ("2026-11-30T15:42:00Z", RESUME_AT)
    assert [p.name for p in scene.pilot.iterdir() if p.name.endswith(".tmp")] == []


def test_a_failing_resume_is_recorded_and_not_repeated(scene: Scene, monkeypatch: pytest.MonkeyPatch) -> None:
    failing = scene.record.parent / "failing-resume"
    failing.write_text(f'#!/bin/sh\necho "$1" >> {scene.record}\nexit 3\n')
    failing.chmod(0o755)
    monkeypatch.setenv("GIT_PILOT_QUOTA_RESUME_COMMAND", f"{failing} {{session}}")
    scene.stop()
    scene.set_clock(RESUME_AT)
    failed = wait_for(lambda: scene.events("resume-failed"), "the failed resume")
    assert isinstance(failed, list) and failed[0]["exit"] == 3
    time.sleep(0.2)
    assert scene.resumes() == [SESSION]
    assert tickets.pending(scene.pilot) is None


def test_the_resume_goes_through_git_pilot_resume(scene: Scene, monkeypatch: pytest.MonkeyPatch) -> None:
    from gitpilot.quota.resume import resume_argv

    monkeypatch.delenv("GIT_PILOT_QUOTA_RESUME_COMMAND")
    scene.stop()
    ticket = tickets.pending(scene.pilot)
    assert ticket is not None
    assert resume_argv(ticket) == [sys.executable, "-m", "gitpilot", "resume", SESSION]


def test_a_dead_helper_is_rearmed_by_any_git_pilot_command(scene: Scene) -> None:
    from conftest import run_pilot

    scene.stop()
    pid = scene.started[0]
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not alive(pid), "the helper to die")
    scene.set_clock("2026-11-30T18:00:00Z")
    res = run_pilot("config", "show", cwd=scene.root)  # any command, through the real CLI
    assert res.returncode == 0, res.stderr
    wait_for(lambda: scene.events("resumed"), "the resume")
    assert len(scene.resumes()) == 1
