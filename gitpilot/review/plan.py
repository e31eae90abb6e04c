"""Planning economy: ``git pilot codex plan [--force]``.

Codex is asked for a plan only when ``[planner] enabled = true``; otherwise nothing is called and
the answer says so (the launch prompt already tells the agent not to plan). A task is planned
once: the plan is kept in the task record (``plan.md``, and ``planned`` in ``state.json``, one
commit), and a later call points at the plan file instead of asking again; ``--force`` asks
again. The call is ``codex exec --sandbox read-only [--json] <prompt>`` in the repository
(planning never edits files), logged to the task record like every launch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitpilot.errors import PilotError, UsageError
from gitpilot.fileio import atomic_write
from gitpilot.repo import Repo

PLAN_FILE = "plan.md"
TASK_FILE = "task.md"
PLAN_TIMEOUT = 30 * 60.0
PROMPT = (
    "Plan the task below for this repository; do not change any files. Reply with the plan only: "
    "numbered steps, the files to touch, and the checks to run (through `git pilot check`).\n\n"
    "Task:\n"
)


@dataclass
class PlanReport:
    action: str  # "disabled", "planned", "reused", "failed"
    task: str | None
    plan: str = ""
    path: str | None = None
    failure: str | None = None
    quota: str | None = None  # a usage limit stopped it: what was recorded for it
    argv: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "task": self.task, "plan": self.plan, "path": self.path,
                "failure": self.failure, "quota": self.quota, "argv": self.argv}


def plan(repo: Repo, task: str | None = None, force: bool = False) -> PlanReport:
    from gitpilot.config import load
    from gitpilot.efficiency import record

    cfg = load(repo.workdir)
    if cfg.get("planner.enabled") is not True:
        report = PlanReport("disabled", None)
        report.lines.append("planning is off here ([planner] enabled is not true): Codex was not called; "
                            "do not plan with Codex, work from the task and the capsule")
        record(repo, "plan", _size(report.lines), 0, plans_skipped=1, reason="planner disabled")
        return report
    tid = _task(repo, task)
    from gitpilot.store.tasks import TaskStore

    files = TaskStore(repo).read(tid) or {}
    stored = files.get(PLAN_FILE)
    if stored is not None and not force:
        path = _plan_path(repo, tid, stored)
        report = PlanReport("reused", tid, stored.decode("utf-8", "replace"), str(path))
        report.lines.append(f"task {tid[:12]} is already planned: the plan is in {path} "
                            f"({len(stored)} bytes); Codex was not asked again (--force asks again)")
        record(repo, "plan", _size(report.lines), len(stored), task=tid, plans_reused=1)
        return report
    text = files.get(TASK_FILE)
    if not text:
        raise PilotError(f"task {tid[:12]} has no task text in its record: start it with git pilot run")
    return _ask(repo, tid, text.decode("utf-8", "replace"))


def _task(repo: Repo, ident: str | None) -> str:
    import os

    from gitpilot.tasks.session import find_task

    name = ident or os.environ.get("GIT_PILOT_TASK", "")
    if not name:
        raise UsageError("which task? give --task ID (agent sessions have GIT_PILOT_TASK set)")
    return find_task(repo, name)


def _plan_path(repo: Repo, tid: str, body: bytes) -> Path:
    """The plan as a file the agent can open (``<git dir>/pilot/plan-<task>.md``)."""
    path = repo.worktree_pilot_dir / f"plan-{tid}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        if path.read_bytes() == body:
            return path
    except OSError:
        pass
    atomic_write(path, body)  # the agent may be reading it; rendered again from the record: not synced
    return path


def _size(lines: list[str]) -> int:
    return sum(len(line.encode("utf-8")) + 1 for line in lines)


def _ask(repo: Repo, tid: str, task_text: str) -> PlanReport:
    from gitpilot.agents.base import PRINT, Invocation
    from gitpilot.agents.codex import CodexAdapter
    from gitpilot.efficiency import record
    from gitpilot.redact import redact
    from gitpilot.review.codex import run_cli
    from gitpilot.tasks.launch import log_launch
    from gitpilot.tasks.state import STATE_FILE, parse_state, state_bytes

    adapter = CodexAdapter()
    features = adapter.features(cache_dir=repo.pilot_dir / "agents")
    if not features.installed:
        raise PilotError("codex is not installed (not found on PATH): no plan; "
                         "work from the task and the capsule")
    if not features.has(PRINT):
        raise PilotError(f"the installed codex ({features.version or features.path}) has no `exec` command; "
                         "update codex")
    inv = adapter.launch(PROMPT + task_text, "print", features, ())
    argv = list(inv.argv)
    if argv[1:2] == ["exec"]:
        argv[2:2] = ["--sandbox", "read-only"]
    inv = Invocation(tuple(argv), "print")
    log_launch(repo, tid, inv, "codex plan")
    code, stdout, stderr = run_cli(repo, argv, tid, PLAN_TIMEOUT)
    outcome = adapter.outcome(inv, code, stdout, stderr)
    text = _plan_text(stdout).strip()
    if code != 0 or outcome.failure or not text:
        from gitpilot.review.codex import quota_stop

        report = PlanReport("failed", tid, argv=argv, failure=outcome.failure or "codex printed no plan")
        report.lines.append(f"codex plan failed (nothing recorded): {report.failure}")
        report.quota = quota_stop(repo, tid, stdout, stderr, "git pilot codex plan")
        if report.quota:
            report.lines.append(report.quota)
        return report
    body = (redact(text) + "\n").encode("utf-8")

    def change(files: dict[str, bytes]) -> dict[str, bytes | None]:
        state = parse_state(files.get(STATE_FILE))
        state["planned"] = True
        return {**files, PLAN_FILE: body, STATE_FILE: state_bytes(state)}

    from gitpilot.store.tasks import TaskStore

    TaskStore(repo).update(tid, change, "pilot: codex plan")
    path = _plan_path(repo, tid, body)
    report = PlanReport("planned", tid, body.decode("utf-8"), str(path), argv=argv)
    report.lines.append(f"plan for task {tid[:12]} (kept in the task record and in {path}):")
    report.lines.append(body.decode("utf-8").rstrip("\n"))
    record(repo, "plan", _size(report.lines), 0, task=tid, plans_run=1)
    return report


def _plan_text(stdout: str) -> str:
    """The last agent message of ``codex exec --json`` events; plain stdout when it printed no events."""
    events = [e for e in map(_event, stdout.splitlines()) if e is not None]
    items = [e.get("item") for e in events]
    texts = [i["text"] for i in items if isinstance(i, dict) and i.get("type") == "agent_message"
             and isinstance(i.get("text"), str)]
    if texts:
        return str(texts[-1])
    return "" if events else stdout


def _event(line: str) -> dict[str, Any] | None:
    if not line.lstrip().startswith("{"):
        return None
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None
