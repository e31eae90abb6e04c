"""``run`` and ``resume``: start a task's agent session, or continue it with Delta Resume.

A new task (no session yet) gets the Context Capsule and the short launch prompt. A task with
a session is resumed through the CLI's own resume with exactly what the session lacks:

| situation                              | the session receives                           |
|----------------------------------------|------------------------------------------------|
| task and context unchanged             | a continuation of at most 512 bytes            |
| context changed                        | the delta file: only the changed sources       |
| no record of what the session read     | the capsule, as for a new task                 |
| task text changed                      | a new session (the task id is the text's hash) |

A session still working is never resumed (that would start a copy); one sitting idle in the
background is stopped first.

With ``leanloop.enabled = false`` it is v0.4.0: every session, the first and each continuation,
is a new one started with the v0.4.0 launch prompt (``prompts.V04_LAUNCH_PROMPT``), without the
LeanLoop allow-list entries, and a rate-limited session is not retried with a continuation. Where the installed CLI cannot resume, the message file and the
command are returned for the user to run. Core code: returns a ``Report``, never prints.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitpilot import agents
from gitpilot.agents.base import MODES, Adapter, Features, Invocation, LiveSession, Mode
from gitpilot.config import SCHEMA, Config, load
from gitpilot.errors import PilotError
from gitpilot.fileio import atomic_write
from gitpilot.repo import Repo
from gitpilot.store.tasks import TaskStore, task_id
from gitpilot.tasks import delta, launch, prompts
from gitpilot.tasks.session import SESSION_FILE, current, find_task, parse_session, update_session
from gitpilot.tasks.state import STATE_FILE, parse_state

# States of a background job that mean it has ended, and those that mean it is busy.
TERMINAL = frozenset({"stopped", "failed", "completed", "complete", "done", "finished", "exited", "killed",
                      "cancelled", "canceled", "error", "dead"})
ACTIVE = frozenset({"working", "running", "busy", "starting", "thinking", "streaming"})
RETRY_SECONDS = 30.0  # the short pause before retrying a rate-limited (not quota) session once

Notify = Callable[[str], None]


@dataclass
class Report:
    """What ``run``/``resume`` did, for the command to render."""

    task_id: str
    action: str  # launched, resumed, dry-run, not-installed, manual
    kind: str = ""  # capsule, plain, continuation, delta (what the session was sent)
    lines: list[str] = field(default_factory=list)
    command: str | None = None
    session_id: str | None = None
    exit_code: int = 0
    agent_output: str = ""
    answer: str | None = None  # the agent's final message, read by its adapter
    message_bytes: int = 0
    failure: str | None = None  # the CLI's own failure line, as its adapter read it


@dataclass
class _Ctx:
    repo: Repo
    cfg: Config
    tid: str
    text: str
    adapter: Adapter
    features: Features
    notify: Notify
    note: str = ""
    # What the next delivered message saves, for the efficiency ledger: (mechanism, delivered, avoided).
    ledger: tuple[str, int, int] | None = None
    retried: bool = False  # a short rate limit is retried once per command

    @property
    def leanloop(self) -> bool:
        return bool(self.cfg.get("leanloop.enabled"))


def _context(repo: Repo, text: str, agent: str, notify: Notify | None, note: str) -> _Ctx:
    cfg = load(repo.workdir)
    adapter = agents.get(agent)
    features = adapter.features(cache_dir=repo.pilot_dir / "agents")
    return _Ctx(repo, cfg, task_id(text), text, adapter, features, notify or (lambda _l: None), note)


def _default_agent(repo: Repo) -> str:
    # ``agent.default = ""`` means the default agent too, not no agent.
    return str(load(repo.workdir).get("agent.default")) or str(SCHEMA["agent.default"][1])


# -- entry points ----------------------------------------------------------------------------
def run(repo: Repo, text: str, *, agent: str | None = None, dry_run: bool = False,
        task_file: Path | None = None, notify: Notify | None = None, note: str = "") -> Report:
    """``git pilot run``: a new session for a new task, Delta Resume for a task with one."""
    if not text.strip():
        raise PilotError("the task is empty")
    repo.workdir  # noqa: B018 - a bare repository has nothing to work in
    tid = task_id(text)
    record = parse_session(TaskStore(repo).read_file(tid, SESSION_FILE))
    cur = current(record)
    chosen = agent or (cur or {}).get("agent") or _default_agent(repo)
    ctx = _context(repo, text, chosen, notify, note)
    changed_from = _task_file_change(repo, task_file, tid, dry_run)
    if not dry_run:
        _remember(repo, tid)
    if cur is not None and cur.get("agent") == chosen and (cur.get("session_id") or cur.get("short_id")):
        return _resume(ctx, record, dry_run) if ctx.leanloop else _v04_continue(ctx, dry_run)
    report = _launch_new(ctx, dry_run, task_file)
    if changed_from:
        report.lines.insert(0, f"task text changed since task {changed_from[:12]}: a new session for task "
                               f"{tid[:12]}")
    return report


def resume(repo: Repo, ident: str, *, agent: str | None = None, dry_run: bool = False,
           notify: Notify | None = None, note: str = "") -> Report:
    """``git pilot resume ID`` (a task id, a prefix, or a session id)."""
    tid = find_task(repo, ident)
    files = TaskStore(repo).read(tid) or {}
    text_bytes = files.get("task.md")
    if text_bytes is None:
        raise PilotError(f"task {tid[:12]} has no task text in its record: start it with git pilot run")
    text = text_bytes.decode("utf-8")
    if task_id(text) != tid:
        raise PilotError(f"task {tid[:12]}: its record holds a different task text; "
                         "start it with git pilot run")
    record = parse_session(files.get(SESSION_FILE))
    cur = current(record)
    chosen = agent or (cur or {}).get("agent") or _default_agent(repo)
    ctx = _context(repo, text, chosen, notify, note)
    if not dry_run:
        _remember(repo, tid)
    if cur is None or cur.get("agent") != chosen:
        return _launch_new(ctx, dry_run, None)
    return _resume(ctx, record, dry_run) if ctx.leanloop else _v04_continue(ctx, dry_run)


def _remember(repo: Repo, tid: str) -> None:
    """This worktree's current task (``git pilot state`` without --task acts on it)."""
    from gitpilot.tasks.current import remember

    remember(repo, tid)


def _v04_continue(ctx: _Ctx, dry_run: bool) -> Report:
    """v0.4.0's continuation (``leanloop.enabled = false``): a new session with the v0.4.0 launch
    prompt, never a resume of the old one (and never beside one that still runs)."""
    running = launch.running_process(ctx.repo, ctx.tid)
    if running is not None:
        raise PilotError(f"task {ctx.tid[:12]}: its session is still running (pid {running['pid']}); "
                         f"stop it first with git pilot stop {ctx.tid[:12]}")
    report = _launch_new(ctx, dry_run, None)
    report.lines.insert(0, "leanloop disabled: a new session with the v0.4.0 launch prompt (no resume)")
    return report


# -- a new session ---------------------------------------------------------------------------
def _launch_new(ctx: _Ctx, dry_run: bool, task_file: Path | None) -> Report:
    prompt, kind, given, lines, _path = _opening(ctx)
    mode = _launch_mode(ctx)
    inv = ctx.adapter.launch(prompt, mode, _assumed(ctx), _tools(ctx), new_session_id=str(uuid.uuid4()))
    report = Report(ctx.tid, "launched", kind, lines, inv.shell(), message_bytes=len(prompt.encode("utf-8")))
    if dry_run:
        report.action = "dry-run"
        return report
    if not ctx.features.installed:
        report.action = "not-installed"
        report.exit_code = 1  # nothing was started: the caller must not read it as a session that ran
        report.failure = f"{ctx.adapter.executable} is not installed (not found on PATH); run the command above once it is"
        return report
    return _start(ctx, inv, report, given, task_file=task_file, forked_from=None)


def _tools(ctx: _Ctx) -> tuple[str, ...]:
    """The session's allow-list: LeanLoop's entries, or none with ``leanloop.enabled = false``."""
    return prompts.ALLOWED_TOOLS if ctx.leanloop else ()


def _assumed(ctx: _Ctx) -> Features:
    """The installed features, or (to show a command when the CLI is missing) every feature."""
    if ctx.features.installed:
        return ctx.features
    from gitpilot.agents.base import ALL_FEATURES

    return Features(False, None, None, ALL_FEATURES)


def _opening(ctx: _Ctx) -> tuple[str, str, dict[str, Any] | None, list[str], Path]:
    """The first message of a session: (prompt, kind, session manifest, lines for the user, file)."""
    if not ctx.leanloop:
        _keep_task_text(ctx)
        rule_files, config_path, context_files = _plain_sources(ctx)
        prompt = prompts.v04_prompt(ctx.repo.workdir, rule_files, config_path, context_files, ctx.text)
        line = (f"leanloop disabled: the v0.4.0 launch prompt ({len(prompt.encode('utf-8'))} bytes, "
                f"{len(rule_files)} rule file(s), {len(context_files)} context file(s))")
        return prompt, "plain", None, [line], ctx.repo.workdir
    from gitpilot.context.runner import build_capsule

    cap = build_capsule(ctx.repo, ctx.text)
    if cap.path is None:
        raise PilotError("the capsule was not written to disk")
    planner = bool(ctx.cfg.get("planner.enabled"))
    prompt = prompts.launch_prompt(ctx.tid, cap.path, cap.capsule_bytes, planner)
    given = delta.session_manifest(ctx.repo.workdir, cap.manifest)
    sent = cap.capsule_bytes + len(prompt.encode("utf-8"))
    ctx.ledger = ("capsule", sent, max(0, cap.baseline_bytes - cap.capsule_bytes))
    reused = "reused" if cap.reused else "built"
    line = (f"capsule: {cap.path} ({cap.capsule_bytes} bytes, {reused}; "
            f"full context {cap.baseline_bytes} bytes)")
    return prompt, "capsule", given, [line], cap.path


def _keep_task_text(ctx: _Ctx) -> None:
    """The task text in the task record (the capsule keeps it there otherwise), so that
    ``git pilot resume ID`` finds the task with LeanLoop off too."""
    data = ctx.text.encode("utf-8")
    store = TaskStore(ctx.repo)
    if store.read_file(ctx.tid, "task.md") == data:
        return

    def apply(files: dict[str, bytes]) -> dict[str, bytes | None]:
        return {**files, "task.md": data}

    store.update(ctx.tid, apply, "pilot: task text")


def _plain_sources(ctx: _Ctx) -> tuple[list[str], str | None, list[str]]:
    """(rule files, config file, context files) the v0.4.0 prompt names, inside the worktree only."""
    from gitpilot.context.sources import matches

    root = ctx.repo.workdir
    instr = [str(x) for x in ctx.cfg.get("leanloop.context.instruction_files")]
    tracked = ctx.repo.ls_files()
    rule_files = [p for p in instr if _inside(root, p)]
    patterns = [str(x) for x in ctx.cfg.get("leanloop.context.files")]
    context = [p for p in tracked if matches(p, patterns) and p not in rule_files and _inside(root, p)]
    config_path = str(ctx.cfg.path.relative_to(root)) if ctx.cfg.path else None
    return rule_files, config_path, sorted(context)


def _inside(root: Path, rel: str) -> bool:
    """A file in the worktree, also once symlinks are followed (never one elsewhere on the machine),
    and not a credential store (the agent is never pointed at one)."""
    from gitpilot.redact import is_credential_filename

    if is_credential_filename(rel):
        return False
    path = root / rel
    try:
        return path.is_file() and path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):  # a symlink loop
        return False


def _launch_mode(ctx: _Ctx) -> Mode:
    wanted = str(ctx.cfg.get("agent.mode"))
    if wanted in MODES:
        mode: Mode = wanted
    else:
        mode = "interactive" if _on_terminal() else "print"
    from gitpilot.agents.base import BACKGROUND, PRINT

    if mode == "background" and not ctx.features.has(BACKGROUND) and ctx.features.installed:
        mode = "print"
    if mode == "print" and not ctx.features.has(PRINT) and ctx.features.installed:
        mode = "interactive"
    return mode


def _on_terminal() -> bool:
    try:
        return sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def _task_file_change(repo: Repo, task_file: Path | None, tid: str, dry_run: bool) -> str | None:
    """The previous task id of this task file when its text changed (machine-local index)."""
    if task_file is None:
        return None
    index = repo.pilot_dir / "task-files.json"
    key = str(task_file.resolve())
    try:
        known = json.loads(index.read_text("utf-8"))
        known = known if isinstance(known, dict) else {}
    except (OSError, ValueError):
        known = {}
    before = known.get(key)
    if not dry_run and before != tid:
        known[key] = tid
        index.parent.mkdir(parents=True, exist_ok=True)
        # the only record of which task a task file's earlier text was: synced
        atomic_write(index, json.dumps(known, sort_keys=True, indent=1).encode("utf-8"), fsync=True)
    return before if isinstance(before, str) and before != tid else None


# -- starting a process and recording it -----------------------------------------------------
def _start(ctx: _Ctx, inv: Invocation, report: Report, given: dict[str, Any] | None, *,
           task_file: Path | None, forked_from: str | None, what: str = "session") -> Report:
    agent = ctx.adapter.name
    started = launch.now_iso()

    def opening(rec: dict[str, Any], state: dict[str, Any]) -> None:
        rec["agent"] = agent
        if task_file is not None:
            rec["task_file"] = str(task_file.resolve())
        same = inv.session_id and (current(rec) or {}).get("session_id") == inv.session_id
        if inv.mode != "background" and not same:  # a resume that keeps its id adds no session
            rec["sessions"].append(_session_entry(inv.session_id, None, agent, inv.mode, started,
                                                  forked_from))
        if given is not None and inv.mode != "background":
            rec["given"] = given
        state["status"] = "working"
        state["agent"] = agent
        if inv.session_id and inv.session_id not in state["sessions"]:
            state["sessions"].append(inv.session_id)
        state["updated"] = started

    update_session(ctx.repo, ctx.tid, opening, f"pilot: {what} starts ({agent}, {inv.mode})")
    ctx.notify(f"starting {agent} ({inv.mode}) for task {ctx.tid[:12]}")
    try:
        done = launch.execute(ctx.repo, ctx.tid, ctx.adapter, inv, what)
    except KeyboardInterrupt:
        _interrupted(ctx)
        raise
    _account(ctx)
    outcome = done.outcome
    report.exit_code = outcome.exit_code
    report.agent_output = done.stdout
    report.answer = outcome.answer
    report.failure = outcome.failure
    if inv.mode == "background":
        return _background_started(ctx, inv, report, given, done, forked_from, started)
    sid = outcome.session_id or inv.session_id
    report.session_id = sid
    modes = ctx.adapter.resume_modes(ctx.features)
    retry_mode: Mode | None = inv.mode if inv.mode in modes else ("print" if "print" in modes else None)
    said = ctx.adapter.failure_text(done.stdout, done.stderr)
    if _finish(ctx, sid, outcome.exit_code, outcome.failure, said, report,
               can_retry=bool(sid) and retry_mode is not None and ctx.leanloop):
        assert sid is not None and retry_mode is not None
        ctx.retried = True
        try:
            time.sleep(_retry_pause())
        except KeyboardInterrupt:
            _interrupted(ctx)
            raise
        again = ctx.adapter.resume(sid, prompts.continuation(ctx.tid, "The rate limit has passed."), retry_mode,
                                   ctx.features, _tools(ctx))
        if again is not None:
            report.command = again.shell()
            return _start(ctx, again, report, None, task_file=None, forked_from=sid, what="retry")
    return report


def _interrupted(ctx: _Ctx) -> None:
    """Ctrl-C while the session ran (or waited to retry): the task is recorded as stopped, the
    session entry as ended by an interrupt (exit 130, no failure), so ``status`` never shows a
    task ``working`` that nothing works on. The interrupt then goes on (exit 130)."""
    import signal

    ended = launch.now_iso()

    def record(rec: dict[str, Any], state: dict[str, Any]) -> None:
        entry = current(rec)
        if entry is not None and entry.get("exit") is None:
            entry["exit"], entry["failure"], entry["ended"], entry["interrupted"] = 130, None, ended, True
        if state.get("status") == "working":
            state["status"] = "stopped"
        state["updated"] = ended

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the record
    try:
        update_session(ctx.repo, ctx.tid, record, "pilot: interrupted (Ctrl-C); task stopped")
    finally:
        signal.signal(signal.SIGINT, previous)
    ctx.notify(f"task {ctx.tid[:12]} stopped (interrupted); continue it with git pilot resume {ctx.tid[:12]}")


def _account(ctx: _Ctx) -> None:
    """One efficiency-ledger event for the message just delivered (never fails the run)."""
    if ctx.ledger is None:
        return
    try:
        from gitpilot.efficiency import record
    except ImportError:
        return
    mechanism, sent, avoided = ctx.ledger
    ctx.ledger = None
    record(ctx.repo, mechanism, sent, avoided, task=ctx.tid, agent=ctx.adapter.name)


def _session_entry(sid: str | None, short: str | None, agent: str, mode: str, started: str,
                   forked_from: str | None) -> dict[str, Any]:
    return {"session_id": sid, "short_id": short, "agent": agent, "mode": mode, "started": started,
            "forked_from": forked_from, "exit": None, "failure": None}


def _background_started(ctx: _Ctx, inv: Invocation, report: Report, given: dict[str, Any] | None,
                        done: launch.Finished, forked_from: str | None, started: str) -> Report:
    outcome = done.outcome
    if outcome.exit_code != 0 or not outcome.short_id:
        failure = outcome.failure or "the background session did not start"
        said = ctx.adapter.failure_text(done.stdout, done.stderr)
        _finish(ctx, forked_from, outcome.exit_code or 1, failure, said, report)
        return report
    live = launch.list_live(ctx.repo, ctx.tid, ctx.adapter, ctx.features) or []
    job = launch.find_live(live, None, outcome.short_id)
    sid = job.session_id if job else None
    report.session_id = sid or outcome.short_id
    if sid is None:
        report.lines.append(f"background session {outcome.short_id} started; its session id was not listed "
                            "by the CLI yet")
    elif forked_from and sid != forked_from:
        report.lines.append(f"resumed as background session {outcome.short_id} (new session id {sid}, "
                            f"forked from {forked_from})")
    else:
        report.lines.append(f"background session {outcome.short_id} (session id {sid})")

    def record(rec: dict[str, Any], state: dict[str, Any]) -> None:
        rec["sessions"].append(_session_entry(sid, outcome.short_id, ctx.adapter.name, "background", started,
                                              forked_from))
        if given is not None:
            rec["given"] = given
        if sid and sid not in state["sessions"]:
            state["sessions"].append(sid)
        state["status"] = "working"

    update_session(ctx.repo, ctx.tid, record, f"pilot: background session {outcome.short_id}")
    return report


def _finish(ctx: _Ctx, sid: str | None, code: int, failure: str | None, output: str, report: Report,
            can_retry: bool = False) -> bool:
    """Record how the session ended; a failure is classified (quota, auth, ...) by the quota part.

    Returns True when the stop was a short rate limit that should be retried once (nothing is
    recorded as a blocker then).
    """
    status, blocker = "stopped", None
    retry = False
    if code < 0:  # ended by a signal: git pilot stop (or the user) stopped it; not a failure
        failure = None
    if failure is not None:
        status, blocker = "failed", failure
        stop = _classify_stop(ctx, sid, output)
        if stop is not None:
            retry = stop.status == "retry" and can_retry and not ctx.retried
            status = {"retry": "working" if retry else "blocked"}.get(stop.status, stop.status)
            blocker = None if stop.status == "waiting-quota" or retry else stop.message
            report.lines.append(stop.message + (f"; retrying once in {_retry_pause():g}s" if retry else ""))
        else:
            report.lines.append(f"{ctx.adapter.name} failed: {failure}")
    ended = launch.now_iso()

    def record(rec: dict[str, Any], state: dict[str, Any]) -> None:
        entry = current(rec)
        if entry is not None:  # the session this run started or resumed (runs never overlap)
            before = entry.get("session_id")
            if sid and before != sid:  # the CLI printed the id it really used
                entry["session_id"] = sid
                state["sessions"] = [s for s in state["sessions"] if s != before]
            entry["exit"], entry["failure"], entry["ended"] = code, failure, ended
        if sid and sid not in state["sessions"]:
            state["sessions"].append(sid)
        if failure is None:
            if state.get("status") == "working":
                state["status"] = status
        elif state.get("status") != "waiting-quota":
            state["status"] = status
        if blocker and blocker not in state["blockers"]:
            state["blockers"].append(blocker)
        state["updated"] = ended

    update_session(ctx.repo, ctx.tid, record, f"pilot: session ended (exit {code})")
    return retry


def _retry_pause() -> float:
    try:
        return max(0.0, float(os.environ.get("GIT_PILOT_RETRY_SECONDS", "") or RETRY_SECONDS))
    except ValueError:
        return RETRY_SECONDS


def _classify_stop(ctx: _Ctx, sid: str | None, output: str) -> Any:
    try:
        from gitpilot.quota.schedule import handle_stop
    except ImportError:
        return None
    try:
        return handle_stop(ctx.repo, output=output, task_id=ctx.tid, session=sid or "",
                           provider=ctx.adapter.name, pinned_zone=os.environ.get("TZ") or None)
    except PilotError as exc:
        ctx.notify(f"could not classify the stop: {exc}")
        return None


# -- Delta Resume ----------------------------------------------------------------------------
def _resume(ctx: _Ctx, record: dict[str, Any], dry_run: bool) -> Report:
    cur = current(record) or {}
    sid, short = cur.get("session_id"), cur.get("short_id")
    running = launch.running_process(ctx.repo, ctx.tid)
    if running is not None:
        raise PilotError(f"task {ctx.tid[:12]}: its session is still running (pid {running['pid']}); "
                         f"stop it first with git pilot stop {ctx.tid[:12]}")
    lines: list[str] = []
    if cur.get("mode") == "background" and ctx.features.installed and not dry_run:
        lines += _settle_background(ctx, sid, short)
    if not sid:
        raise PilotError(f"task {ctx.tid[:12]}: its background session {short} has no known session id; "
                         "start a new one with git pilot run after git pilot stop")
    message, kind, given, msg_lines, msg_path = _resume_message(ctx, record)
    lines += msg_lines
    mode = _resume_mode(ctx, str(cur.get("mode") or ""))
    tools = _tools(ctx)
    report = Report(ctx.tid, "resumed", kind, lines, session_id=sid,
                    message_bytes=len(message.encode("utf-8")))
    if mode is None or not ctx.features.installed:
        manual = ctx.adapter.resume(sid, message, "interactive", _assumed_resume(ctx), tools)
        report.action = "manual"
        why = (f"{ctx.adapter.executable} is not installed" if not ctx.features.installed else
               f"{ctx.adapter.executable} {ctx.features.version or ''}".rstrip() + " cannot resume a session "
               "from the command line")
        report.lines.insert(0, f"{why}; continue it yourself with the command below")
        if msg_path is not None:
            report.lines.append(f"message file: {msg_path}")
        report.command = manual.shell() if manual else None
        return report
    inv = ctx.adapter.resume(sid, message, mode, ctx.features, tools)
    assert inv is not None
    report.command = inv.shell()
    if dry_run:
        report.action = "dry-run"
        return report
    result = _start(ctx, inv, report, given, task_file=None, forked_from=sid, what=f"resume ({kind})")
    if result.exit_code != 0 and _no_conversation(ctx.adapter, result):
        # The CLI no longer knows the session: what it read is gone with it, so start afresh.
        result.lines.append(f"{ctx.adapter.executable} has no session {sid}: starting a new session")
        fresh = _launch_new(ctx, dry_run, None)
        fresh.lines = result.lines + fresh.lines
        return fresh
    return result


def _no_conversation(adapter: Adapter, report: Report) -> bool:
    said = [*report.lines, report.failure or ""]
    return any(marker in line for line in said for marker in adapter.missing_session)


def _assumed_resume(ctx: _Ctx) -> Features:
    from gitpilot.agents import base

    return Features(True, ctx.features.path, ctx.features.version,
                    frozenset({base.RESUME, base.PRINT, base.PRINT_RESUME, base.ALLOWED_TOOLS,
                               base.JSON_OUTPUT}))


def _resume_mode(ctx: _Ctx, previous: str) -> Mode | None:
    modes = ctx.adapter.resume_modes(ctx.features)
    if not modes:
        return None
    wanted = str(ctx.cfg.get("agent.mode"))
    order: list[str] = []
    if wanted in MODES:
        order.append(wanted)
    if previous == "background":
        order.append("background")
    order += ["interactive", "print"] if _on_terminal() else ["print", "background"]
    for m in order:
        if m in modes and (m != "interactive" or _on_terminal() or wanted == "interactive"):
            return m
    return None


def _settle_background(ctx: _Ctx, sid: str | None, short: str | None) -> list[str]:
    """Refuse to resume a busy background session; stop an idle one first (no copy is started)."""
    live = launch.list_live(ctx.repo, ctx.tid, ctx.adapter, ctx.features)
    if live is None:
        return []
    job = launch.find_live(live, sid, short)
    if job is not None and job.state == "failed":
        _refuse_into_a_limit(ctx, job)
    if job is None or job.state in TERMINAL:
        return []
    if job.state in ACTIVE:
        raise PilotError(f"task {ctx.tid[:12]}: background session {job.short_id} is still {job.state}; "
                         f"stop it first with git pilot stop {ctx.tid[:12]}")
    inv = ctx.adapter.stop(job, ctx.features)
    if inv is None:
        raise PilotError(f"task {ctx.tid[:12]}: background session {job.short_id} is still {job.state} and "
                         f"{ctx.adapter.executable} cannot stop it; stop it yourself first")
    done = launch.execute(ctx.repo, ctx.tid, ctx.adapter, inv, "stop idle session")
    if done.outcome.exit_code != 0:
        raise PilotError(f"could not stop idle session {job.short_id}: {done.outcome.failure}")
    return [f"stopped idle background session {job.short_id} ({job.state}) first"]


def _refuse_into_a_limit(ctx: _Ctx, job: LiveSession) -> None:
    """A failed background job is read first: a usage limit still in force stops the resume."""
    from gitpilot.quota.background import refusal

    state = parse_state((TaskStore(ctx.repo).read(ctx.tid) or {}).get(STATE_FILE))
    why = refusal(ctx.repo, ctx.tid, ctx.adapter, ctx.features, job, state)
    if why is not None:
        raise PilotError(f"task {ctx.tid[:12]}: background session {job.short_id} stopped on a usage limit; "
                         f"not resumed into it: {why}")


def _resume_message(ctx: _Ctx, record: dict[str, Any]) -> tuple[str, str, dict[str, Any] | None, list[str],
                                                                  Path | None]:
    """(message, kind, new session manifest, lines, file the message points at)."""
    given_before = record.get("given")
    if not isinstance(given_before, dict):
        prompt, kind, given, lines, path = _opening(ctx)
        if kind == "capsule":
            lines.append("no record of what the session read: sending the capsule")
        if ctx.note:
            prompt = f"{ctx.note.strip()}\n{prompt}"
        return prompt, kind, given, lines, path
    from gitpilot.context.runner import build_capsule

    cap = build_capsule(ctx.repo, ctx.text)
    given = delta.session_manifest(ctx.repo.workdir, cap.manifest)
    changed = delta.compute(given_before, given, cap.manifest, ctx.repo)
    assert cap.path is not None
    planner = bool(ctx.cfg.get("planner.enabled"))
    # What a fresh start would send instead: the capsule and its launch prompt.
    fresh = cap.capsule_bytes + len(prompts.launch_prompt(ctx.tid, cap.path, cap.capsule_bytes, planner).encode())
    if changed.empty:
        message = prompts.continuation(ctx.tid, ctx.note)
        ctx.ledger = ("continuation", len(message.encode()), max(0, fresh - len(message.encode())))
        line = f"context unchanged: continuation ({len(message.encode())} bytes)"
        return message, "continuation", given, [line], None
    path = ctx.repo.worktree_pilot_dir / f"delta-{ctx.tid}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    body = delta.render(changed, ctx.tid).encode("utf-8")
    atomic_write(path, body)  # rendered again on every resume: not synced
    nsrc, nsec = changed.counts()
    message = prompts.delta_message(ctx.tid, path, nsrc, nsec, ctx.note)
    sent = len(body) + len(message.encode())
    ctx.ledger = ("delta", sent, max(0, fresh - sent))
    line = (f"context changed: delta {path} ({len(body)} bytes, {nsrc} source(s), {nsec} section(s); "
            f"capsule {cap.capsule_bytes} bytes)")
    return message, "delta", given, [line], path
