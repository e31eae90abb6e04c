"""Claude Code (``claude``): launch, resume, stop and list, as the installed version allows.

What the real CLI does (``fixtures/agent-cli-samples/``, Claude Code 2.1.197):
- ``claude -p --resume <id> "<msg>"`` keeps the session id; a missing id prints
  ``No conversation found with session ID: <id>`` and exits 1.
- ``claude --bg --resume <id> "<msg>"`` prints ``backgrounded · <short8>`` and exits 0 at once;
  the job runs under a *new* session id, read back from ``claude agents --json``.
- ``claude stop <id>`` and ``claude agents --json`` exist; ``stop`` is hidden from ``--help``,
  so it is detected by asking ``claude stop --help`` for its own usage line; so is ``claude logs
  <id>`` (a background job's recent terminal output; ``Couldn't read logs ...``, exit 1, once
  the job's daemon socket is gone).
- ``--allowedTools`` takes a variadic list: the allow-list is placed before another option,
  never directly before the prompt, so the prompt is not read as one more tool.
- ``-p --output-format json`` prints one result object; failures carry ``"is_error":true``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from gitpilot.agents.base import (
    ALLOWED_TOOLS,
    BACKGROUND,
    BACKGROUND_RESUME,
    JSON_OUTPUT,
    LIST_SESSIONS,
    LOGS,
    PRINT,
    PRINT_RESUME,
    RESUME,
    SESSION_ID,
    STOP,
    Adapter,
    Features,
    Invocation,
    LiveSession,
    Mode,
    Outcome,
    first_line,
    has_command,
    has_option,
)

_BACKGROUNDED = re.compile(r"backgrounded\s*·\s*([0-9A-Za-z_-]{4,})")
_NO_CONVERSATION = re.compile(r"No conversation found with session ID: *(\S+)")


class ClaudeAdapter(Adapter):
    name = "claude"
    executable = "claude"

    def detect(self) -> set[str]:
        code, text = self.probe(["--help"])
        if code != 0 or "Usage:" not in text:
            return set()
        found: set[str] = set()
        if has_option(text, "--print") or has_option(text, "-p"):
            found.add(PRINT)
        if has_option(text, "--resume"):
            found.add(RESUME)
        if has_option(text, "--session-id"):
            found.add(SESSION_ID)
        if has_option(text, "--allowedTools") or has_option(text, "--allowed-tools"):
            found.add(ALLOWED_TOOLS)
        if has_option(text, "--output-format"):
            found.add(JSON_OUTPUT)
        if has_option(text, "--bg") or has_option(text, "--background"):
            found.add(BACKGROUND)
        if has_command(text, "agents"):
            acode, atext = self.probe(["agents", "--help"])
            if acode == 0 and has_option(atext, "--json"):
                found.add(LIST_SESSIONS)
        # ``stop`` is a hidden command: an unknown command prints the main help instead.
        scode, stext = self.probe(["stop", "--help"])
        if scode == 0 and re.search(r"^Usage: claude (stop|kill)\b", stext, re.M):
            found.add(STOP)
        lcode, ltext = self.probe(["logs", "--help"])  # hidden too: a failed job's output is read with it
        if lcode == 0 and re.search(r"^Usage: claude logs\b", ltext, re.M):
            found.add(LOGS)
        if {PRINT, RESUME} <= found:
            found.add(PRINT_RESUME)
        # A background resume forks a new session id that can only be read back from the list.
        if {BACKGROUND, RESUME, LIST_SESSIONS} <= found:
            found.add(BACKGROUND_RESUME)
        return found

    def _tools(self, features: Features, allowed_tools: Sequence[str]) -> list[str]:
        if not allowed_tools or not features.has(ALLOWED_TOOLS):
            return []
        return ["--allowedTools", *allowed_tools]

    def launch(self, prompt: str, mode: Mode, features: Features, allowed_tools: Sequence[str],
               new_session_id: str | None = None) -> Invocation:
        exe = features.path or self.executable
        tools = self._tools(features, allowed_tools)
        sid = new_session_id if new_session_id and features.has(SESSION_ID) else None
        if mode == "background":
            # The job's id is read back from `claude agents --json`; --bg ends the variadic list.
            return Invocation((exe, *tools, "--bg", prompt), mode)
        argv: list[str] = [exe]
        if mode == "print":
            argv += ["-p", "--output-format", "json"] if features.has(JSON_OUTPUT) else ["-p"]
        argv += tools
        if sid:
            argv += ["--session-id", sid]
        elif tools:
            argv.append("--")
        argv.append(prompt)
        return Invocation(tuple(argv), mode, session_id=sid)

    def resume(self, session_id: str, message: str, mode: Mode, features: Features,
               allowed_tools: Sequence[str]) -> Invocation | None:
        if mode not in self.resume_modes(features):
            return None
        exe = features.path or self.executable
        tools = self._tools(features, allowed_tools)
        if mode == "background":
            # Forks: the new session id is not known until `claude agents --json` shows it.
            return Invocation((exe, *tools, "--bg", "--resume", session_id, message), mode)
        argv: list[str] = [exe]
        if mode == "print":
            argv += ["-p", "--output-format", "json"] if features.has(JSON_OUTPUT) else ["-p"]
        argv += [*tools, "--resume", session_id, message]
        return Invocation(tuple(argv), mode, session_id=session_id)

    def stop(self, session: LiveSession, features: Features) -> Invocation | None:
        if not features.has(STOP):
            return None
        return Invocation((features.path or self.executable, "stop", session.short_id), "print")

    def logs(self, session: LiveSession, features: Features) -> Invocation | None:
        if not features.has(LOGS):
            return None
        return Invocation((features.path or self.executable, "logs", session.short_id), "print")

    def list_sessions(self, features: Features) -> Invocation | None:
        if not features.has(LIST_SESSIONS):
            return None
        return Invocation((features.path or self.executable, "agents", "--json", "--all"), "print")

    def parse_sessions(self, stdout: str) -> list[LiveSession]:
        try:
            data = json.loads(stdout)
        except ValueError:
            return []
        if not isinstance(data, list):
            return []
        sessions: list[LiveSession] = []
        for item in data:
            if not isinstance(item, dict) or not isinstance(item.get("id"), str):
                continue
            sid = item.get("sessionId")
            sessions.append(LiveSession(
                short_id=item["id"],
                session_id=sid if isinstance(sid, str) else None,
                state=str(item.get("state") or item.get("status") or "unknown"),
                cwd=item.get("cwd") if isinstance(item.get("cwd"), str) else None,
                kind=item.get("kind") if isinstance(item.get("kind"), str) else None,
            ))
        return sessions

    def outcome(self, invocation: Invocation, exit_code: int, stdout: str, stderr: str) -> Outcome:
        if invocation.mode == "background":
            m = _BACKGROUNDED.search(stdout) or _BACKGROUNDED.search(stderr)
            bg_failure = None if exit_code == 0 else first_line(stderr) or first_line(stdout)
            return Outcome(exit_code, None, m.group(1) if m else None, bg_failure)
        session_id = invocation.session_id
        failure: str | None = None
        answer: str | None = None
        result = _result_object(stdout)
        if result is not None:
            printed = result.get("session_id")
            if isinstance(printed, str):
                session_id = printed
            if result.get("is_error") is True:
                failure = first_line(str(result.get("result") or "")) or "the session ended with an error"
            elif isinstance(result.get("result"), str):
                answer = str(result["result"])
        missing = _NO_CONVERSATION.search(stderr) or _NO_CONVERSATION.search(stdout)
        if missing:
            failure = first_line(missing.group(0))
        if exit_code != 0 and failure is None:
            failure = first_line(stderr) or first_line(stdout) or f"exit {exit_code}"
        return Outcome(exit_code, session_id, None, failure, answer)


def _result_object(stdout: str) -> dict[str, object] | None:
    """The ``{"type":"result",...}`` object of json or stream-json output."""
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and obj.get("type") == "result":
            return obj
    return None
