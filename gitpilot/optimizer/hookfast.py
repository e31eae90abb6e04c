"""The hot path of ``git pilot hook claude|codex``: the agent runs it on every hooked tool call.

``gitpilot.cli.main`` routes ``hook claude`` and ``hook codex`` here before click is imported.
Claude Code's payloads are read by ``events.claude_hook_event``, Codex's by
``codex_events.codex_hook_event``; both print the same hook output JSON, which both agents read. This module and
what it imports use the standard library only (no click, pygit2, tomlkit, regex): the
hook's median must stay within 3x a bare ``python3 -c pass``.

One call: read the event JSON, find the repository from the payload's ``cwd`` by walking up
to ``.git`` (a directory, or a worktree's ``gitdir:`` file plus ``commondir``; git itself is
never spawned), read ``[optimizer]`` and ``[[check]]`` from ``.gitpilot.toml`` with
``tomllib``, then update the session's state file
``<git common dir>/pilot/loops/<session>.json`` under its lock. What the detector or the
learner has to say is printed as Claude Code hook output JSON: ``additionalContext`` for the
agent, ``systemMessage`` for the user. The hook always exits 0 and never blocks or stops a
turn; an internal error is written to ``<git common dir>/pilot/logs/hook-claude.log``.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from typing import TYPE_CHECKING, Any

from gitpilot.gitenv import find_git
from gitpilot.optimizer import loop, statefile
from gitpilot.optimizer.events import PROMPT, SESSION_END, SESSION_START, STOP, TOOL, Event, claude_hook_event

if TYPE_CHECKING:  # the learner is imported where learning is on (off by default)
    from gitpilot.optimizer import learn

#: Functions ("module:function") whose text joins the SessionStart context. Each is called as
#: ``function(root, common_dir, toml_doc) -> str`` and imported only at SessionStart.
STARTUP_PROVIDERS: tuple[str, ...] = (
    "gitpilot.optimizer.hookfast:learned_context",
    "gitpilot.optimizer.hookfast:sourcemap_context",
)

HISTORY_RECORDS = 200
HISTORY_MAX_BYTES = 256 * 1024  # then the history is cut back to its last HISTORY_RECORDS lines
STALE_SECONDS = 14 * 24 * 3600
_SAFE_ID = re.compile(r"^[A-Za-z0-9._-]{1,128}$")


# ---------------------------------------------------------------------------------------
# repository and configuration, cheaply
# ---------------------------------------------------------------------------------------

def read_toml(root: str) -> dict[str, Any]:
    """The ``.gitpilot.toml`` document, or ``{}`` when missing or broken.

    Tolerant on purpose, and for the hook only: a config error must never break the agent's
    tool calls, so the hook runs on the defaults. Every command (``optimize enable``,
    ``optimize learned``, ``config show`` ...) reads the file strictly through
    ``gitpilot.config`` and stops with its one-line error."""
    try:
        with open(os.path.join(root, ".gitpilot.toml"), "rb") as fh:
            data = fh.read()
    except OSError:
        return {}
    import tomllib

    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return {}
    return doc


def optimizer_value(doc: dict[str, Any], key: str) -> Any:
    """``[optimizer] key`` of a ``.gitpilot.toml`` document; its default (``loop.HOOK_DEFAULTS``)
    when unset or of the wrong type."""
    default = loop.HOOK_DEFAULTS["optimizer." + key]
    opt = doc.get("optimizer")
    value = opt.get(key, default) if isinstance(opt, dict) else default
    return value if type(value) is type(default) else default  # an int is no bool, a bool no int


def settings_from(doc: dict[str, Any]) -> loop.Settings:
    """The optimizer settings in a ``.gitpilot.toml`` document (bad values fall back to defaults)."""
    checks: list[tuple[str, str]] = []
    raw_checks = doc.get("check")
    if isinstance(raw_checks, list):
        for c in raw_checks:
            if isinstance(c, dict) and isinstance(c.get("name"), str) and isinstance(c.get("run"), str):
                checks.append((c["name"], c["run"]))
    return loop.Settings(
        loop_detection=optimizer_value(doc, "loop_detection"),
        threshold=optimizer_value(doc, "loop_threshold"),
        notice_after=optimizer_value(doc, "loop_notice_after"),
        learn_turns=optimizer_value(doc, "loop_learn_turns"),
        learn=optimizer_value(doc, "learn"),
        checks=tuple(checks),
    )


# ---------------------------------------------------------------------------------------
# paths
# ---------------------------------------------------------------------------------------

def loops_dir(common: str) -> str:
    return os.path.join(common, "pilot", "loops")


def session_path(common: str, session: str) -> str:
    if not _SAFE_ID.match(session):
        import hashlib

        session = "h-" + hashlib.sha1(session.encode("utf-8", "replace")).hexdigest()
    return os.path.join(loops_dir(common), session + ".json")


def history_path(common: str) -> str:
    return os.path.join(loops_dir(common), "turns.jsonl")


def learned_path(common: str) -> str:
    return os.path.join(common, "pilot", "learned.json")


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def read_history(common: str) -> list[int]:
    """The streaks of the repository's recent passing turns (oldest first)."""
    streaks: list[int] = []
    for line in statefile.tail_lines(history_path(common))[-HISTORY_RECORDS:]:
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and isinstance(rec.get("streak"), int):
            streaks.append(rec["streak"])
    return streaks


# ---------------------------------------------------------------------------------------
# the handler
# ---------------------------------------------------------------------------------------

def handle(payload: dict[str, Any], cwd: str | None = None, agent: str = "claude") -> dict[str, Any] | None:
    """Process one hook payload of ``agent``; the hook output JSON, or ``None`` for silence."""
    if agent == "codex":
        from gitpilot.optimizer.codex_events import codex_hook_event

        event = codex_hook_event(payload)
    else:
        event = claude_hook_event(payload)
    if event is None or not event.session:
        return None
    found = find_git(event.cwd or cwd or os.getcwd())
    if found is None:
        return None
    root, _git_dir, common = found
    doc = read_toml(root)
    settings = settings_from(doc)
    if event.kind == SESSION_START:
        _prune_stale(common)
        context = startup_context(root, common, doc)
        return _output("SessionStart", context, "") if context else None
    if not (settings.loop_detection or settings.learn):
        return None
    path = session_path(common, event.session)
    with statefile.locked(path):
        if event.kind == SESSION_END:
            _remove(path)
            return None
        state = statefile.read_json(path)
        if not isinstance(state, dict) or state.get("v") != loop.STATE_VERSION:
            state = loop.new_state(event.session)
        result = _apply(state, event, settings, root, common)
        if result is None:
            return None  # a duplicate delivery: nothing changed
        statefile.write_json(path, state)  # session state, on every tool call: not synced
    if result:
        return _output(str(payload.get("hook_event_name")), result.redirect, result.notice)
    return None


def _apply(state: dict[str, Any], event: Event, settings: loop.Settings, root: str,
           common: str) -> loop.Outcome | None:
    if event.kind == PROMPT:
        summary = loop.on_prompt(state, settings, read_history(common), event.event_id)
        _record_turn(common, event.session, summary)
        return loop.Outcome()
    if event.kind == STOP:
        _record_turn(common, event.session, loop.on_stop(state))
        return loop.Outcome()
    if event.kind != TOOL:
        return loop.Outcome()
    if loop.seen_before(state, event.event_id):
        return None
    outcome = loop.observe(state, event, settings, root) if settings.loop_detection else loop.Outcome()
    if settings.learn:
        from gitpilot.optimizer import learn

        changes = learn.observe(state.setdefault("learn", {}), event)
        if changes:
            update_learned(common, changes, event.session)
    return outcome


def _record_turn(common: str, session: str, summary: dict[str, Any] | None) -> None:
    if summary is None:
        return
    path = history_path(common)
    statefile.append_line(path, {"session": session, "at": _now(), **summary})
    try:
        too_big = os.path.getsize(path) > HISTORY_MAX_BYTES
    except OSError:
        return
    if too_big:
        with statefile.locked(path):
            keep = statefile.tail_lines(path)[-HISTORY_RECORDS:]
            statefile.replace_text(path, "".join(line + "\n" for line in keep))


def update_learned(common: str, changes: list[learn.Change], session: str) -> bool:
    """Apply learner changes to ``learned.json`` (read first without the lock: most calls change nothing)."""
    from gitpilot.optimizer import learn

    path = learned_path(common)
    current = statefile.read_json(path)
    probe = current if isinstance(current, dict) else learn.empty_store()
    if not learn.apply(json.loads(json.dumps(probe)), changes, session, _now()):
        return False
    with statefile.locked(path):
        store = statefile.read_json(path)
        if not isinstance(store, dict):
            store = learn.empty_store()
        if learn.apply(store, changes, session, _now()):
            statefile.write_json(path, store, indent=2, fsync=True)  # learned facts: synced
    return True


def learned_context(root: str, common: str, doc: dict[str, Any]) -> str:
    """SessionStart text for confirmed learned facts (only with ``[optimizer] learn = true``)."""
    if not settings_from(doc).learn:
        return ""
    from gitpilot.optimizer import learn

    store = statefile.read_json(learned_path(common))
    return learn.startup_context(store) if isinstance(store, dict) else ""


def sourcemap_context(root: str, common: str, doc: dict[str, Any]) -> str:
    """The source map for SessionStart, only with ``[optimizer] sourcemap_inject = true``.

    The flag is checked here first so that a repository without it never imports the
    source-map code.
    """
    if optimizer_value(doc, "sourcemap_inject") is not True:
        return ""
    from pathlib import Path

    from gitpilot.context.sourcemap import session_context

    return session_context(Path(root)) or ""


def startup_context(root: str, common: str, doc: dict[str, Any]) -> str:
    parts = []
    for target in STARTUP_PROVIDERS:
        module, _, attr = target.partition(":")
        import importlib

        func = getattr(importlib.import_module(module), attr)
        text = func(root, common, doc)
        if text:
            parts.append(str(text))
    return "\n\n".join(parts)


def _output(event_name: str, context: str, notice: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if context:
        out["hookSpecificOutput"] = {"hookEventName": event_name, "additionalContext": context}
    if notice:
        out["systemMessage"] = notice
    return out


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _prune_stale(common: str) -> None:
    """Drop state files of sessions that ended without a SessionEnd event long ago."""
    directory = loops_dir(common)
    try:
        names = os.listdir(directory)
    except OSError:
        return
    cutoff = time.time() - STALE_SECONDS
    for name in names:
        if name.endswith((".json", ".json.lock")) and name != "turns.jsonl":
            full = os.path.join(directory, name)
            try:
                if os.stat(full).st_mtime < cutoff:
                    os.unlink(full)
            except OSError:
                pass


def _log_error(payload_cwd: str, agent: str = "claude") -> None:
    import traceback

    found = find_git(payload_cwd) if payload_cwd else None
    base = os.path.join(found[2], "pilot", "logs") if found else os.path.join(
        os.environ.get("TMPDIR", "/tmp"), "git-pilot-logs")
    try:
        os.makedirs(base, exist_ok=True)
        with open(os.path.join(base, f"hook-{agent}.log"), "a", encoding="utf-8") as fh:
            fh.write(f"--- {_now()}\n{traceback.format_exc()}\n")
    except OSError:
        pass


def agent_hook(agent: str, stdin_bytes: bytes) -> int:
    cwd = ""
    try:
        payload = json.loads(stdin_bytes.decode("utf-8", "replace") or "null")
        if not isinstance(payload, dict):
            return 0
        cwd = str(payload.get("cwd") or "")
        out = handle(payload, agent=agent)
    except Exception:  # a hook must never break the agent's turn
        _log_error(cwd or os.getcwd(), agent)
        return 0
    if out:
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
    return 0
