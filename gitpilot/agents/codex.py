"""Codex (``codex``): launch and resume as the installed version allows.

What the real CLI does (``fixtures/agent-cli-samples/``, codex-cli 0.171.0): ``codex exec
--json "<prompt>"`` runs non-interactively and prints JSON events, the first being
``{"type":"thread.started","thread_id":...}`` (the session id); it fails with ``turn.failed``
and exit 1. ``codex exec resume <id> "<msg>"`` and the interactive ``codex resume <id> "<msg>"``
continue a session. There is no per-session allow-list flag and no background mode.
``codex review --base B`` has no ``-C`` and no ``--json`` (``codex exec review --json`` has).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gitpilot.agents.base import (
    JSON_OUTPUT,
    PRINT,
    PRINT_RESUME,
    RESUME,
    REVIEW,
    REVIEW_JSON,
    Adapter,
    Features,
    Invocation,
    Mode,
    Outcome,
    first_line,
    has_command,
    has_option,
)


class CodexAdapter(Adapter):
    name = "codex"
    executable = "codex"

    def detect_version(self) -> str | None:
        code, text = self.probe(["--version"])
        if code != 0:
            return None
        m = re.search(r"^codex[-\w]*\s+\S+", text, re.M)
        return m.group(0) if m else super().detect_version()

    def detect(self) -> set[str]:
        code, text = self.probe(["--help"])
        if code != 0 or "Usage:" not in text:
            return set()
        found: set[str] = set()
        if has_command(text, "resume"):
            found.add(RESUME)
        if has_command(text, "review"):
            found.add(REVIEW)
        if has_command(text, "exec"):
            found.add(PRINT)
            ecode, etext = self.probe(["exec", "--help"])
            if ecode == 0:
                if has_option(etext, "--json"):
                    found.add(JSON_OUTPUT)
                if has_command(etext, "resume"):
                    found.add(PRINT_RESUME)
                if has_command(etext, "review"):
                    rcode, rtext = self.probe(["exec", "review", "--help"])
                    if rcode == 0 and has_option(rtext, "--json"):
                        found.add(REVIEW_JSON)
        return found

    def launch(self, prompt: str, mode: Mode, features: Features, allowed_tools: Sequence[str],
               new_session_id: str | None = None) -> Invocation:
        exe = features.path or self.executable
        if mode == "interactive" or not features.has(PRINT):
            return Invocation((exe, prompt), "interactive")
        json_flag = ("--json",) if features.has(JSON_OUTPUT) else ()
        return Invocation((exe, "exec", *json_flag, prompt), "print")

    def resume(self, session_id: str, message: str, mode: Mode, features: Features,
               allowed_tools: Sequence[str]) -> Invocation | None:
        if mode not in self.resume_modes(features):
            return None
        exe = features.path or self.executable
        if mode == "interactive":
            return Invocation((exe, "resume", session_id, message), mode, session_id=session_id)
        json_flag = ("--json",) if features.has(JSON_OUTPUT) else ()
        return Invocation((exe, "exec", "resume", *json_flag, session_id, message), mode,
                          session_id=session_id)

    def session_after(self, invocation: Invocation, since: float, cwd: Path) -> str | None:
        """An interactive Codex session prints no id; its rollout file under ``$CODEX_HOME``
        (``~/.codex``) records it with the working directory."""
        return rollout_session(codex_home(env=self._env), since, cwd)

    def outcome(self, invocation: Invocation, exit_code: int, stdout: str, stderr: str) -> Outcome:
        session_id = invocation.session_id
        failure: str | None = None
        answer: str | None = None
        for line in stdout.splitlines():
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if not isinstance(event, dict):
                continue
            if event.get("type") == "thread.started" and isinstance(event.get("thread_id"), str):
                session_id = event["thread_id"]
            elif event.get("type") == "item.completed":
                item = event.get("item")
                if isinstance(item, dict) and item.get("type") == "agent_message" and isinstance(item.get("text"), str):
                    answer = item["text"]  # the last one is the final answer
            elif event.get("type") == "turn.failed":
                err = event.get("error")
                msg = err.get("message") if isinstance(err, dict) else None
                failure = first_line(str(msg or "turn failed"))
        if session_id is None:
            m = re.search(r"^session id: *(\S+)", stderr, re.M)
            session_id = m.group(1) if m else None
        if exit_code != 0 and failure is None:
            failure = first_line(stderr) or first_line(stdout) or f"exit {exit_code}"
        return Outcome(exit_code, session_id, None, failure, answer)


ROLLOUT_SLACK = 2.0  # seconds: a rollout file's clock may run a little behind the launch's


def codex_home(home: Path | None = None, env: Mapping[str, str] | None = None) -> Path:
    """Where Codex keeps its config and sessions: ``$CODEX_HOME``, else ``~/.codex`` (``home``
    given, or ``$HOME``)."""
    source = env if env is not None else os.environ
    if source.get("CODEX_HOME"):
        return Path(source["CODEX_HOME"])
    base = home if home is not None else Path(source.get("HOME") or os.path.expanduser("~"))
    return base / ".codex"


def session_meta(path: Path) -> dict[str, Any] | None:
    """The ``session_meta`` payload a Codex rollout starts with (id, cwd, source); None if not one."""
    try:
        with open(path, "rb") as fh:
            rec = json.loads(fh.readline(1 << 20))
    except (OSError, ValueError):
        return None
    if not isinstance(rec, dict) or rec.get("type") != "session_meta" or not isinstance(rec.get("payload"), dict):
        return None
    payload: dict[str, Any] = rec["payload"]
    return payload


def _day_dirs(sessions: Path, since: float) -> list[Path]:
    """``sessions/YYYY/MM/DD`` for every local day from ``since`` to now (one or two, usually)."""
    out: list[Path] = []
    now = time.time()
    day = min(since, now)
    while True:
        path = sessions / time.strftime("%Y/%m/%d", time.localtime(day))
        if path not in out:
            out.append(path)
        if day >= now:
            return out
        day = min(day + 86400, now)


def rollout_session(home: Path, since: float, cwd: Path) -> str | None:
    """The id of the newest Codex session recorded under ``home/sessions`` since ``since`` whose
    working directory is ``cwd``: Codex writes each session's rollout
    (``sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``), first line ``session_meta``."""
    want = os.path.realpath(cwd)
    best: tuple[float, str] | None = None
    for day in _day_dirs(home / "sessions", since - ROLLOUT_SLACK):
        try:
            names = sorted(os.listdir(day))
        except OSError:
            continue
        for name in names:
            if not (name.startswith("rollout-") and name.endswith(".jsonl")):
                continue
            path = day / name
            try:
                mtime = path.stat().st_mtime
            except OSError:
                continue
            payload = session_meta(path) if mtime >= since - ROLLOUT_SLACK else None
            if payload is None:
                continue
            sid = payload.get("id") or payload.get("session_id")
            where = payload.get("cwd")
            if not isinstance(sid, str) or not isinstance(where, str) or os.path.realpath(where) != want:
                continue
            if best is None or (mtime, sid) > best:
                best = (mtime, sid)
    return best[1] if best else None
