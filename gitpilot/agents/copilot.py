"""GitHub Copilot CLI (``copilot``, npm ``@github/copilot``): launch and resume as the installed
version allows.

What the real CLI does (``fixtures/agent-cli-samples``, GitHub Copilot CLI 1.0.102, run against a
loopback model through its BYOK provider settings):
- ``copilot -p PROMPT --output-format json`` prints JSON Lines and ends with ``{"type":"result",
  "sessionId":..., "exitCode":N}``; the agent's messages are ``assistant.message`` events (the last
  one with text is the final answer); a model failure is a ``session.error`` event and exit 1.
  Without ``--output-format`` (and with ``-s``) it prints only the answer.
- ``--session-id UUID`` sets the new session's id; ``--resume=ID`` continues it (same id). An
  unknown id prints ``Error: No session, task, or name matched '<id>'.`` and exits 1.
- ``copilot -i PROMPT`` starts the interactive session with a first prompt.
- Permissions: ``--allow-tool=shell(git pilot:*)`` approves every ``git pilot`` command (approval
  of ``git`` commands is by first-level subcommand, so ``shell(git pilot check:*)`` matches
  nothing); ``--deny-tool=shell(git pilot run:*)`` refuses one, also over ``--allow-all-tools``.
  So the LeanLoop allow-list becomes ``git pilot`` allowed with every subcommand the list does not
  name denied: the session can run ``git pilot check`` but never ``run``, ``resume`` or ``stop``.
  Both options take a list: each is passed as ``--option=VALUE`` so the prompt is never read as
  one more tool.
"""

from __future__ import annotations

from collections.abc import Sequence

from gitpilot.agents.base import (
    ALLOWED_TOOLS,
    DENIED_TOOLS,
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
    git_pilot_commands,
    has_option,
    json_lines,
)

_MISSING = "No session, task, or name matched"


def permission_args(allowed_tools: Sequence[str], features: Features) -> list[str]:
    """``--allow-tool``/``--deny-tool`` options for an allow-list of ``Bash(...)`` entries."""
    if not allowed_tools or not features.has(ALLOWED_TOOLS):
        return []
    from gitpilot.cli import COMMANDS

    allowed = git_pilot_commands(allowed_tools)
    args: list[str] = []
    if allowed:
        args.append("--allow-tool=shell(git pilot:*)")
        if features.has(DENIED_TOOLS):
            args += [f"--deny-tool=shell(git pilot {name}:*)" for name in sorted(set(COMMANDS) - set(allowed))]
    for entry in allowed_tools:  # any other Bash(cmd*) entry: the command's own prefix
        if entry.startswith("Bash(") and entry.endswith(")") and not entry.startswith("Bash(git pilot "):
            args.append(f"--allow-tool=shell({entry[5:-1].rstrip('*').strip()}:*)")
    return args


class CopilotAdapter(Adapter):
    name = "copilot"
    executable = "copilot"
    missing_session = ("No session, task, or name matched",)

    def detect_version(self) -> str | None:
        code, text = self.probe(["--version"])
        if code != 0:
            return None
        line = first_line(text)  # "GitHub Copilot CLI 1.0.102."
        return line.rstrip(".") if line else None

    def detect(self) -> set[str]:
        code, text = self.probe(["--help"])
        if code != 0 or "Usage:" not in text:
            return set()
        found: set[str] = set()
        if has_option(text, "--prompt") or has_option(text, "-p"):
            found.add(PRINT)
        if has_option(text, "--resume"):
            found.add(RESUME)
        if has_option(text, "--session-id"):
            found.add(SESSION_ID)
        if has_option(text, "--allow-tool"):
            found.add(ALLOWED_TOOLS)
        if has_option(text, "--deny-tool"):
            found.add(DENIED_TOOLS)
        if has_option(text, "--output-format"):
            found.add(JSON_OUTPUT)
        if {PRINT, RESUME} <= found:
            found.add(PRINT_RESUME)
        return found

    def _head(self, features: Features, mode: Mode, message: str) -> list[str]:
        exe = features.path or self.executable
        if mode == "print":
            json_flag = ["--output-format", "json"] if features.has(JSON_OUTPUT) else []
            return [exe, "-p", message, *json_flag]
        return [exe, "-i", message]

    def launch(self, prompt: str, mode: Mode, features: Features, allowed_tools: Sequence[str],
               new_session_id: str | None = None) -> Invocation:
        if mode == "background" or (mode == "print" and not features.has(PRINT)):
            mode = "interactive"  # Copilot has no background mode
        argv = self._head(features, mode, prompt)
        sid = new_session_id if new_session_id and features.has(SESSION_ID) else None
        if sid:
            argv.append(f"--session-id={sid}")
        argv += permission_args(allowed_tools, features)
        return Invocation(tuple(argv), mode, session_id=sid)

    def resume(self, session_id: str, message: str, mode: Mode, features: Features,
               allowed_tools: Sequence[str]) -> Invocation | None:
        if mode not in self.resume_modes(features):
            return None
        argv = [*self._head(features, mode, message), f"--resume={session_id}",
                *permission_args(allowed_tools, features)]
        return Invocation(tuple(argv), mode, session_id=session_id)

    def outcome(self, invocation: Invocation, exit_code: int, stdout: str, stderr: str) -> Outcome:
        session_id = invocation.session_id
        failure: str | None = None
        answer: str | None = None
        events = json_lines(stdout)
        for event in events:
            data = event.get("data")
            data = data if isinstance(data, dict) else {}
            kind = event.get("type")
            if kind == "result" and isinstance(event.get("sessionId"), str):
                session_id = str(event["sessionId"])
            elif kind == "assistant.message" and isinstance(data.get("content"), str) and data["content"]:
                answer = str(data["content"])  # the last one is the final answer
            elif kind == "session.error":
                failure = first_line(str(data.get("message") or "the session failed"))
        if not events and exit_code == 0 and stdout.strip():
            answer = stdout.strip()  # text output (-p without --output-format json)
        if _MISSING in stderr or _MISSING in stdout:
            failure = first_line((stderr if _MISSING in stderr else stdout).replace("Error: ", "", 1))
        if exit_code != 0 and failure is None:
            failure = first_line(stderr) or first_line(stdout) or f"exit {exit_code}"
        return Outcome(exit_code, session_id, None, failure, answer)

    def failure_text(self, stdout: str, stderr: str) -> str:
        """What Copilot said about a failure, as plain lines for the quota classifier (its JSON
        events are of a shape the classifier does not read)."""
        lines = []
        for event in json_lines(stdout):
            data = event.get("data")
            if event.get("type") == "session.error" and isinstance(data, dict) and data.get("message"):
                lines.append(str(data["message"]))
        return "\n".join([*lines, stderr])
