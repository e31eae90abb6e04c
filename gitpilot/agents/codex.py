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
import re
from collections.abc import Sequence
from pathlib import Path

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
from gitpilot.agents.codex_files import home_dir, rollout_session


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
        return rollout_session(home_dir(env=self._env), since, cwd)

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
