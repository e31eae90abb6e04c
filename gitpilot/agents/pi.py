"""Pi (``pi``, npm ``@mariozechner/pi-coding-agent``): launch and resume as the installed version
allows.

What the real CLI does (``fixtures/agent-cli-samples``, pi 0.73.1, run against a loopback model
through a custom provider in ``~/.pi/agent/models.json``):
- ``pi --mode json -p PROMPT`` prints JSON Lines: first ``{"type":"session","id":...,"cwd":...}``
  (the session id), then agent, turn, message and tool events; the final answer is the text of
  the last assistant ``message_end``. ``pi -p PROMPT`` prints only the answer.
- ``--session ID`` continues that session (same id, same session file). An unknown id prints
  ``No session found matching '<id>'`` and exits 1. There is no option to choose a new id.
- A model failure in json mode is an assistant message with ``"stopReason":"error"`` and its
  ``errorMessage`` (after three retries, ``auto_retry_end`` with ``finalError``), and **exit 0**:
  the adapter reads the failure from the events and reports exit 1. In text mode the message is
  on stderr with exit 1.
- Sessions are files ``<agent dir>/sessions/--<cwd with / as ->--/<time>_<id>.jsonl``
  (``$PI_CODING_AGENT_SESSION_DIR``, else ``$PI_CODING_AGENT_DIR/sessions``, else
  ``~/.pi/agent/sessions``), first line the session header: an interactive session's id is read
  from there.
- Permissions: Pi never asks; ``--tools a,b`` is the only switch, and it is per tool, not per
  command. git pilot's allow-list (``Bash(git pilot check*)`` ...) needs ``bash``, so with an
  allow-list the session gets ``--tools read,bash,edit,write`` (Pi's own default set, made
  explicit); Pi cannot keep ``git pilot run`` out of a session that has bash.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from gitpilot.agents.base import (
    ALLOWED_TOOLS,
    JSON_OUTPUT,
    PRINT,
    PRINT_RESUME,
    RESUME,
    Adapter,
    Features,
    Invocation,
    Mode,
    Outcome,
    first_line,
    has_option,
    json_lines,
)

#: Pi's coding tools (``pi --help``: read, bash, edit, write are on by default).
DEFAULT_TOOLS = ("read", "bash", "edit", "write")
_MISSING = re.compile(r"No session found matching '[^']*'")
SESSION_SLACK = 2.0


class PiAdapter(Adapter):
    name = "pi"
    executable = "pi"
    missing_session = ("No session found matching",)

    def detect(self) -> set[str]:
        code, text = self.probe(["--help"])
        if code != 0 or "Usage:" not in text:
            return set()
        found: set[str] = set()
        if has_option(text, "--print") or has_option(text, "-p"):
            found.add(PRINT)
        if has_option(text, "--session"):
            found.add(RESUME)
        if has_option(text, "--mode"):
            found.add(JSON_OUTPUT)
        if has_option(text, "--tools"):
            found.add(ALLOWED_TOOLS)
        if {PRINT, RESUME} <= found:
            found.add(PRINT_RESUME)
        return found

    def _tools(self, features: Features, allowed_tools: Sequence[str]) -> list[str]:
        if not allowed_tools or not features.has(ALLOWED_TOOLS):
            return []
        tools = list(DEFAULT_TOOLS)
        if not any(t.startswith("Bash(") for t in allowed_tools):
            tools.remove("bash")
        return ["--tools", ",".join(tools)]

    def _head(self, features: Features, mode: Mode) -> list[str]:
        exe = features.path or self.executable
        if mode == "print":
            return [exe, *(["--mode", "json"] if features.has(JSON_OUTPUT) else []), "-p"]
        return [exe]

    def launch(self, prompt: str, mode: Mode, features: Features, allowed_tools: Sequence[str],
               new_session_id: str | None = None) -> Invocation:
        if mode == "background" or (mode == "print" and not features.has(PRINT)):
            mode = "interactive"  # Pi has no background mode
        argv = [*self._head(features, mode), *self._tools(features, allowed_tools), prompt]
        return Invocation(tuple(argv), mode)

    def resume(self, session_id: str, message: str, mode: Mode, features: Features,
               allowed_tools: Sequence[str]) -> Invocation | None:
        if mode not in self.resume_modes(features):
            return None
        argv = [*self._head(features, mode), "--session", session_id, *self._tools(features, allowed_tools),
                message]
        return Invocation(tuple(argv), mode, session_id=session_id)

    def outcome(self, invocation: Invocation, exit_code: int, stdout: str, stderr: str) -> Outcome:
        session_id = invocation.session_id
        failure: str | None = None
        answer: str | None = None
        events = json_lines(stdout)
        for event in events:
            kind = event.get("type")
            if kind == "session" and isinstance(event.get("id"), str):
                session_id = str(event["id"])
            elif kind == "message_end" and isinstance(msg := event.get("message"), dict) and \
                    msg.get("role") == "assistant":
                if msg.get("stopReason") == "error":
                    failure = first_line(str(msg.get("errorMessage") or "the model call failed"))
                else:
                    text = _text(msg.get("content"))
                    failure = None  # a later answer: the retry recovered
                    if text:
                        answer = text
            elif kind == "auto_retry_end" and event.get("success") is False:
                failure = first_line(str(event.get("finalError") or "the model call failed"))
        if not events and exit_code == 0 and stdout.strip():
            answer = stdout.strip()  # text output (-p without --mode json)
        missing = _MISSING.search(stderr) or _MISSING.search(stdout)
        if missing:
            failure = missing.group(0)
        if exit_code != 0 and failure is None:
            failure = first_line(stderr) or first_line(stdout) or f"exit {exit_code}"
        if failure is not None and exit_code == 0:
            exit_code = 1  # json mode exits 0 after a failed model call
        return Outcome(exit_code, session_id, None, failure, answer)

    def failure_text(self, stdout: str, stderr: str) -> str:
        """Pi's error messages as plain lines for the quota classifier."""
        lines: list[str] = []
        for event in json_lines(stdout):
            msg = event.get("message")
            if event.get("type") == "message_end" and isinstance(msg, dict) and msg.get("errorMessage"):
                lines.append(str(msg["errorMessage"]))
            elif event.get("type") == "auto_retry_end" and event.get("finalError"):
                lines.append(str(event["finalError"]))
        return "\n".join([*lines[-1:], stderr])

    def session_after(self, invocation: Invocation, since: float, cwd: Path) -> str | None:
        """An interactive Pi session prints no id; its session file records it with the cwd."""
        return newest_session(sessions_dir(self._env), since, cwd)


def sessions_dir(env: Mapping[str, str] | None = None) -> Path:
    source = env if env is not None else os.environ
    if source.get("PI_CODING_AGENT_SESSION_DIR"):
        return Path(source["PI_CODING_AGENT_SESSION_DIR"])
    if source.get("PI_CODING_AGENT_DIR"):
        return Path(source["PI_CODING_AGENT_DIR"]) / "sessions"
    home = Path(source.get("HOME") or os.path.expanduser("~"))
    return home / ".pi" / "agent" / "sessions"


def newest_session(sessions: Path, since: float, cwd: Path) -> str | None:
    """The id of the newest session file under ``sessions`` written since ``since`` for ``cwd``."""
    want = os.path.realpath(cwd)
    best: tuple[float, str] | None = None
    try:
        dirs = sorted(p for p in sessions.iterdir() if p.is_dir())
    except OSError:
        return None
    for directory in dirs:
        for path in sorted(directory.glob("*.jsonl")):
            try:
                mtime = path.stat().st_mtime
                if mtime < since - SESSION_SLACK:
                    continue
                with open(path, "rb") as fh:
                    head = json.loads(fh.readline(1 << 20))
            except (OSError, ValueError):
                continue
            if not isinstance(head, dict) or head.get("type") != "session":
                continue
            sid, where = head.get("id"), head.get("cwd")
            if isinstance(sid, str) and isinstance(where, str) and os.path.realpath(where) == want:
                if best is None or (mtime, sid) > best:
                    best = (mtime, sid)
    return best[1] if best else None


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text") or "") for b in content
                         if isinstance(b, dict) and b.get("type") == "text" and b.get("text"))
    return ""
