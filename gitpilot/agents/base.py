"""The agent adapter interface: one small class per agent CLI.

An adapter knows how one CLI is started and resumed, never what to say to it: it builds the
exact argv for a launch, a resume and a stop, detects which of those the *installed* version
supports from its own ``--help`` (flags that one might expect are sometimes missing or hidden),
and reads a session id and a failure message back from what the CLI printed. Orchestration
(``gitpilot.tasks``) decides when to call which. Adding an agent (Grok, Copilot, Pi) means one
more subclass registered in ``gitpilot.agents.ADAPTERS``; callers check ``Features`` and fall
back (print the command for the user) when a feature is missing.

Agents: Claude Code (``claude``), Codex (``codex``), GitHub Copilot CLI (``copilot``), Pi
(``pi``), Grok Build (``grok``, from its published documentation: it cannot be installed here).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from gitpilot.fileio import atomic_write

Mode = Literal["interactive", "print", "background"]
MODES: tuple[Mode, ...] = ("interactive", "print", "background")

# Feature names an adapter may report. Callers test with ``Features.has``.
PRINT = "print"  # a non-interactive run that prints its result and exits
RESUME = "resume"  # continue a conversation by session id
PRINT_RESUME = "print-resume"  # non-interactive resume that keeps the session id
BACKGROUND = "background"  # start a session that runs on after the command returns
BACKGROUND_RESUME = "background-resume"  # resume into a background session (may fork a new id)
SESSION_ID = "session-id"  # choose the new session's id at launch
ALLOWED_TOOLS = "allowed-tools"  # a per-session allow-list on the command line
DENIED_TOOLS = "denied-tools"  # a per-session deny-list on the command line (Copilot --deny-tool)
LIST_SESSIONS = "list-sessions"  # machine-readable list of live sessions
STOP = "stop"  # stop a live session by id
LOGS = "logs"  # print a background session's recent terminal output
JSON_OUTPUT = "json-output"  # a machine-readable result (session id, error flag)
REVIEW = "review"  # a native code review against a base branch
REVIEW_JSON = "review-json"  # the same, as JSON events
# Which feature lets a CLI resume a session in which mode (the order resume prefers them in).
_RESUME_FEATURES: tuple[tuple[str, Mode], ...] = (
    (RESUME, "interactive"),
    (PRINT_RESUME, "print"),
    (BACKGROUND_RESUME, "background"),
)

ALL_FEATURES = frozenset({PRINT, RESUME, PRINT_RESUME, BACKGROUND, BACKGROUND_RESUME, SESSION_ID, ALLOWED_TOOLS,
                          DENIED_TOOLS, LIST_SESSIONS, STOP, LOGS, JSON_OUTPUT, REVIEW, REVIEW_JSON})

HELP_TIMEOUT = 20.0


@dataclass(frozen=True)
class Features:
    """What the installed CLI can do, detected from its ``--help`` output."""

    installed: bool
    path: str | None = None
    version: str | None = None
    names: frozenset[str] = frozenset()

    def has(self, name: str) -> bool:
        return name in self.names

    def to_json(self) -> dict[str, object]:
        return {"installed": self.installed, "path": self.path, "version": self.version,
                "features": sorted(self.names)}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Features:
        names = data.get("features")
        return cls(bool(data.get("installed")), _str_or_none(data.get("path")),
                   _str_or_none(data.get("version")),
                   frozenset(str(n) for n in names) if isinstance(names, list) else frozenset())


@dataclass(frozen=True)
class Invocation:
    """One command line to run: the exact argv, extra environment, and how it runs."""

    argv: tuple[str, ...]
    mode: Mode
    session_id: str | None = None  # known before the run (chosen with --session-id, or resumed)
    env: Mapping[str, str] = field(default_factory=dict)

    def shell(self) -> str:
        """The argv as a command a user can paste into a POSIX shell."""
        import shlex

        prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(self.env.items()))
        cmd = shlex.join(self.argv)
        return f"{prefix} {cmd}" if prefix else cmd


@dataclass(frozen=True)
class LiveSession:
    """One entry of the CLI's own list of sessions (``claude agents --json``)."""

    short_id: str
    session_id: str | None
    state: str
    cwd: str | None = None
    kind: str | None = None


@dataclass(frozen=True)
class Outcome:
    """What one finished run printed, read back: the session id, a failure, the final answer."""

    exit_code: int
    session_id: str | None = None
    short_id: str | None = None  # a background job's short id
    failure: str | None = None  # the CLI's own failure text (one line)
    answer: str | None = None  # the agent's final message, as the CLI printed it (print mode)


class Adapter(ABC):
    """One agent CLI. Subclasses set ``name`` and ``executable`` and build the argv."""

    name: str = ""
    executable: str = ""
    #: What the CLI says when asked to resume a session it no longer has (then a new one starts).
    missing_session: tuple[str, ...] = ("No conversation found",)

    def __init__(self, executable: str | None = None, env: Mapping[str, str] | None = None) -> None:
        self._exe_override = executable
        self._env = dict(env) if env is not None else None

    # -- finding and probing the installed CLI ---------------------------------------
    def find(self) -> str | None:
        """The CLI's path on PATH (of the environment the agent runs in), or None."""
        if self._exe_override:
            return shutil.which(self._exe_override) or None
        path = (self._env or os.environ).get("PATH")
        return shutil.which(self.executable, path=path)

    def probe(self, args: Sequence[str], timeout: float = HELP_TIMEOUT) -> tuple[int, str]:
        """Run the CLI with ``args`` and return (exit code, stdout+stderr as text)."""
        exe = self.find()
        if exe is None:
            return 127, ""
        try:
            proc = subprocess.run([exe, *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, timeout=timeout, env=self._env)
        except (OSError, subprocess.TimeoutExpired):
            return 126, ""
        return proc.returncode, proc.stdout.decode("utf-8", "replace")

    def features(self, cache_dir: Path | None = None) -> Features:
        """Detect the installed CLI's features (cached per executable path, size and mtime)."""
        exe = self.find()
        if exe is None:
            return Features(False)
        key = _exe_key(exe)
        cache = cache_dir / f"{self.name}-features.json" if cache_dir else None
        if cache is not None:
            try:
                data = json.loads(cache.read_text("utf-8"))
                if data.get("key") == key:
                    return Features.from_json(data)
            except (OSError, ValueError, AttributeError):
                pass
        found = Features(True, exe, self.detect_version(), frozenset(self.detect()))
        if cache is not None:
            try:
                cache.parent.mkdir(parents=True, exist_ok=True)
                # a cache (probed again when lost): not synced
                atomic_write(cache, json.dumps({"key": key, **found.to_json()}, sort_keys=True).encode("utf-8"))
            except OSError:
                pass
        return found

    def detect_version(self) -> str | None:
        code, text = self.probe(["--version"])
        if code != 0:
            return None
        lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("WARNING")]
        return lines[-1] if lines else None

    @abstractmethod
    def detect(self) -> set[str]:
        """Feature names this installed version supports (from its help output)."""

    # -- command lines ---------------------------------------------------------------
    @abstractmethod
    def launch(self, prompt: str, mode: Mode, features: Features, allowed_tools: Sequence[str],
               new_session_id: str | None = None) -> Invocation:
        """The command that starts a new session with ``prompt``."""

    @abstractmethod
    def resume(self, session_id: str, message: str, mode: Mode, features: Features,
               allowed_tools: Sequence[str]) -> Invocation | None:
        """The command that continues ``session_id`` with ``message``; None if unsupported."""

    def resume_modes(self, features: Features) -> tuple[Mode, ...]:
        """Modes in which this installed version can resume a session, from its features."""
        return tuple(mode for feature, mode in _RESUME_FEATURES if features.has(feature))

    def stop(self, session: LiveSession, features: Features) -> Invocation | None:
        """The command that stops a live session; None if the CLI cannot."""
        return None

    def list_sessions(self, features: Features) -> Invocation | None:
        """The command that lists live sessions as JSON; None if the CLI cannot."""
        return None

    def logs(self, session: LiveSession, features: Features) -> Invocation | None:
        """The command that prints a background session's recent output; None if the CLI cannot."""
        return None

    # -- reading what the CLI printed ------------------------------------------------
    def parse_sessions(self, stdout: str) -> list[LiveSession]:
        return []

    @abstractmethod
    def outcome(self, invocation: Invocation, exit_code: int, stdout: str, stderr: str) -> Outcome:
        """The session id (known or printed) and the failure text of a finished run."""

    def failure_text(self, stdout: str, stderr: str) -> str:
        """What a failed run printed, for the quota classifier (``quota.classify``), which reads
        plain text and the JSON of the CLIs it knows; an adapter whose CLI prints JSON of another
        shape turns its error events into plain lines here."""
        return stdout + stderr

    def session_after(self, invocation: Invocation, since: float, cwd: Path) -> str | None:
        """The id of the session ``invocation`` started at ``since`` (epoch seconds) in ``cwd``,
        found where the CLI records its sessions, for a run that printed none (an interactive
        session); None when the CLI keeps no such record or none matches."""
        return None


def _exe_key(exe: str) -> str:
    real = os.path.realpath(exe)
    try:
        st = os.stat(real)
        raw = f"{real}\0{st.st_size}\0{st.st_mtime_ns}"
    except OSError:
        raw = real
    return hashlib.sha256(raw.encode("utf-8", "surrogateescape")).hexdigest()


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def has_option(help_text: str, option: str) -> bool:
    """True when ``option`` (e.g. ``--resume``) is listed as an option in a help text."""
    import re

    return re.search(rf"(^|[\s,]){re.escape(option)}(?=[\s,=<\[]|$)", help_text, re.M) is not None


def has_command(help_text: str, command: str) -> bool:
    """True when ``command`` is listed in the ``Commands:`` block of a help text."""
    import re

    block = re.split(r"^Commands:\s*$", help_text, maxsplit=1, flags=re.M)
    if len(block) < 2:
        return False
    body = re.split(r"^\S.*:\s*$", block[1], maxsplit=1, flags=re.M)[0]
    return re.search(rf"^\s+{re.escape(command)}(\||\s|$)", body, re.M) is not None


def json_lines(text: str) -> list[dict[str, object]]:
    """The JSON objects of a JSON Lines output, skipping banners and log lines between them."""
    out: list[dict[str, object]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


def git_pilot_commands(allowed_tools: Sequence[str]) -> list[str]:
    """The ``git pilot`` subcommands an allow-list of ``Bash(git pilot X*)`` entries names."""
    import re

    found: list[str] = []
    for entry in allowed_tools:
        m = re.fullmatch(r"Bash\(git pilot ([a-z][a-z-]*)(?: [^)]*)?\*?\)", entry)
        if m and m.group(1) not in found:
            found.append(m.group(1))
    return found


def first_line(text: str, limit: int = 300) -> str | None:
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return None
