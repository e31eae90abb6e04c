"""Grok Build (``grok``, xAI's coding CLI): launch and resume, built from its published
documentation.

xAI's CLI is installed by its own download script, not from a package registry, so it could
not be installed and run here: unlike the Claude, Codex, Copilot and Pi adapters, nothing below
was checked against the real binary, and the tests drive a fake shaped by the documentation
(docs.x.ai, "Headless & Scripting", "CLI Reference", "Hooks", "Permissions"). What it says:
- ``grok -p PROMPT`` (``--single``) runs one prompt headless; ``--output-format plain|json|
  streaming-json``; ``json`` prints one object at the end: ``{"text", "stopReason",
  "sessionId", ...}`` (``stopReason`` ``EndTurn`` on success; ``Cancelled`` with no text when a
  tool call needed an approval nobody could give).
- ``-s, --session-id ID`` creates or resumes a named headless session, ``-r, --resume ID``
  resumes one, ``-c`` continues the newest; sessions live in ``~/.grok/sessions``.
- ``--no-auto-update`` skips the background update check in scripts (used when the help lists it).
- Permission rules come from config files or ``--allow``/``--deny`` flags whose value syntax the
  pages we could read do not give; git pilot passes no allow-list to Grok (the session asks, or
  cancels in headless mode, as the user's own Grok settings decide).
- Hooks (``.grok/hooks/*.json``, Claude's shape) print nothing into the conversation at
  SessionStart: startup context can only travel with the first tool result. The launch prompt,
  which points at the capsule, is the one message that reaches the model before any tool runs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from gitpilot.agents.base import (
    JSON_OUTPUT,
    PRINT,
    PRINT_RESUME,
    RESUME,
    SESSION_ID,
    Adapter,
    Features,
    Invocation,
    Mode,
    Outcome,
    first_line,
    has_option,
)

NO_UPDATE = "no-auto-update"  # a feature of this adapter only: skip the update check
SUCCESS_STOPS = frozenset({"EndTurn", "end_turn", "MaxTokens", "StopSequence"})


class GrokAdapter(Adapter):
    name = "grok"
    executable = "grok"

    def detect(self) -> set[str]:
        code, text = self.probe(["--help"])
        if code != 0 or "Usage:" not in text:
            return set()
        found: set[str] = set()
        if has_option(text, "--single") or has_option(text, "-p"):
            found.add(PRINT)
        if has_option(text, "--resume"):
            found.add(RESUME)
        if has_option(text, "--session-id"):
            found.add(SESSION_ID)
        if has_option(text, "--output-format"):
            found.add(JSON_OUTPUT)
        if has_option(text, "--no-auto-update"):
            found.add(NO_UPDATE)
        if {PRINT, RESUME} <= found:
            found.add(PRINT_RESUME)
        return found

    def _head(self, features: Features, mode: Mode, message: str) -> list[str]:
        exe = features.path or self.executable
        quiet = ["--no-auto-update"] if features.has(NO_UPDATE) else []
        if mode == "print":
            json_flag = ["--output-format", "json"] if features.has(JSON_OUTPUT) else []
            return [exe, *quiet, "-p", message, *json_flag]
        return [exe, *quiet]

    def launch(self, prompt: str, mode: Mode, features: Features, allowed_tools: Sequence[str],
               new_session_id: str | None = None) -> Invocation:
        if mode == "background" or (mode == "print" and not features.has(PRINT)):
            mode = "interactive"
        argv = self._head(features, mode, prompt)
        sid = new_session_id if new_session_id and features.has(SESSION_ID) else None
        if sid:
            argv += ["--session-id", sid]
        if mode == "interactive":
            argv.append(prompt)
        return Invocation(tuple(argv), mode, session_id=sid)

    def resume(self, session_id: str, message: str, mode: Mode, features: Features,
               allowed_tools: Sequence[str]) -> Invocation | None:
        if mode not in self.resume_modes(features):
            return None
        argv = [*self._head(features, mode, message), "--resume", session_id]
        if mode == "interactive":
            argv.append(message)
        return Invocation(tuple(argv), mode, session_id=session_id)

    def outcome(self, invocation: Invocation, exit_code: int, stdout: str, stderr: str) -> Outcome:
        session_id = invocation.session_id
        failure: str | None = None
        answer: str | None = None
        result = _result(stdout)
        if result is not None:
            if isinstance(result.get("sessionId"), str):
                session_id = str(result["sessionId"])
            stop = result.get("stopReason")
            text = result.get("text")
            if isinstance(text, str) and text and (stop is None or stop in SUCCESS_STOPS):
                answer = text
            elif stop is not None and stop not in SUCCESS_STOPS:
                failure = first_line(str(result.get("error") or f"the session stopped: {stop}"))
        elif exit_code == 0 and stdout.strip():
            answer = stdout.strip()  # plain output
        if exit_code != 0 and failure is None:
            failure = first_line(stderr) or first_line(stdout) or f"exit {exit_code}"
        if failure is not None and exit_code == 0:
            exit_code = 1
        return Outcome(exit_code, session_id, None, failure, answer)


def _result(stdout: str) -> dict[str, object] | None:
    """The one JSON object ``--output-format json`` prints at the end."""
    text = stdout.strip()
    start = text.rfind("\n{") + 1 if not text.startswith("{") else 0
    for candidate in (text, text[start:]):
        try:
            obj = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(obj, dict):
            return obj
    return None
