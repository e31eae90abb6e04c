"""One evidence form for every agent: what the optimizer sees of a session.

The hook payloads of Claude Code (here) and Codex (``codex_events``) become a stream of
:class:`Event`: a session start, a user prompt (a turn begins), a tool call with its outcome, a
stop (the turn ends), a session end. The failure-loop detector (``loop.py``) and the learner
(``learn.py``) read only this form, so another agent's hook is one more function that returns
events.

Shell commands are recognized here too (:func:`parse_command`): which recognized check a
command runs (``pytest``, ``npm test``, ``cargo test`` ... and the checks configured in
``.gitpilot.toml``), whether its exit status really is the check's (a ``| tail`` or
``|| true`` hides it), and which invocation form of a whitelisted runner it used.

This module is on the hook's hot path: stdlib only, no dataclasses/typing machinery at
import time beyond ``from __future__ import annotations``.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence

# Event kinds.
SESSION_START = "session_start"
PROMPT = "prompt"
TOOL = "tool"
STOP = "stop"
SESSION_END = "session_end"

# Tool outcomes.
PASS = "pass"
FAIL = "fail"
UNKNOWN = "unknown"

EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch", "file_change"})
SHELL_TOOLS = frozenset({"Bash", "shell", "exec_command", "command_execution", "local_shell"})

#: How much of a tool's output an event keeps (the tail is where failures are summarized).
TEXT_LIMIT = 16_000


class Event:
    """One normalized piece of agent evidence.

    ``status`` is ``pass``/``fail``/``unknown`` for tool calls that have an outcome and ``""``
    otherwise. ``text`` is the (bounded) output or error text; it is used to fingerprint
    failures and to recognize missing commands, and is never stored.
    """

    __slots__ = ("agent", "kind", "session", "event_id", "tool", "command", "status", "text", "paths",
                 "cwd", "background")

    def __init__(self, agent: str, kind: str, session: str, *, event_id: str = "", tool: str = "",
                 command: str = "", status: str = "", text: str = "", paths: Sequence[str] = (),
                 cwd: str = "", background: bool = False) -> None:
        self.agent = agent
        self.kind = kind
        self.session = session
        self.event_id = event_id
        self.tool = tool
        self.command = command
        self.status = status
        self.text = text[-TEXT_LIMIT:] if len(text) > TEXT_LIMIT else text
        self.paths = tuple(paths)
        self.cwd = cwd
        self.background = background

    @property
    def is_edit(self) -> bool:
        return self.kind == TOOL and self.tool in EDIT_TOOLS

    @property
    def is_shell(self) -> bool:
        return self.kind == TOOL and self.tool in SHELL_TOOLS and bool(self.command)

    def __repr__(self) -> str:
        bits = [self.kind, self.tool, self.command, self.status, ",".join(self.paths)]
        return "Event(" + " ".join(b for b in bits if b) + ")"


# ---------------------------------------------------------------------------------------
# Shell command recognition
# ---------------------------------------------------------------------------------------

_CONTROL = frozenset({"&&", "||", ";", "|", "&", "|&", ";;", "(", ")", "{", "}"})
_PUNCT = frozenset(";&|()<>")
_WRAPPERS = frozenset({"time", "nice", "command", "exec", "builtin", "nohup", "stdbuf", "xvfb-run"})
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PY_INTERP = re.compile(r"^python(?:\d+(?:\.\d+)?)?$")
_PY_LAUNCHERS = {("uv", "run"), ("poetry", "run"), ("pipenv", "run"), ("pdm", "run"), ("hatch", "run"),
                 ("rye", "run")}
_NODE_LAUNCHERS = {("npx",), ("bunx",), ("pnpm", "exec"), ("pnpm", "dlx"), ("yarn", "exec")}
_RUBY_LAUNCHERS = {("bundle", "exec")}
_LAUNCHERS = _PY_LAUNCHERS | _NODE_LAUNCHERS | _RUBY_LAUNCHERS
_RENAMED = {"py.test": "pytest", "gradlew": "gradle", "mvnw": "mvn"}
_LOCAL_BIN_DIRS = (".venv/bin/", "venv/bin/", "env/bin/", "node_modules/.bin/", "bin/")

#: Runners whose invocation forms can be learned (a small, fixed whitelist).
LEARNABLE_RUNNERS = frozenset({
    "pytest", "tox", "nox", "mypy", "ruff", "flake8", "pylint", "black", "pyright", "unittest",
    "jest", "vitest", "mocha", "tsc", "eslint", "rspec", "rake", "gradle", "mvn",
})

_CHECK_SCRIPT = re.compile(r"^(?:test|tests|check|checks|lint|build|typecheck|type-check|ci|verify)"
                           r"(?::[\w.-]+)?$")
_MAKE_TARGET = re.compile(r"^(?:test|tests|check|checks|lint|build|all|ci|typecheck|unit|integration|"
                          r"e2e|verify|test-[\w.-]+|check-[\w.-]+)$")
# Options that take a separate value, per runner family (so the value is not taken for a target).
_VALUE_OPTS = {
    "pytest": {"-k", "-m", "-p", "-c", "-o", "-n", "-W", "-r", "--tb", "--maxfail", "--deselect", "--ignore",
               "--ignore-glob", "--rootdir", "--durations", "--junitxml", "--junit-xml", "--log-level",
               "--cov", "--cov-report", "--timeout", "--basetemp", "--confcutdir", "--import-mode",
               "--dist", "--numprocesses", "--count", "--reruns", "--html", "--capture"},
    "cargo": {"-p", "--package", "--features", "-F", "--bin", "--test", "--example", "--bench",
              "--target", "--target-dir", "-j", "--jobs", "--manifest-path", "--profile", "--exclude"},
    "go": {"-run", "-bench", "-tags", "-timeout", "-count", "-p", "-parallel", "-coverprofile", "-o",
           "-covermode", "-coverpkg", "-skip", "-shuffle", "-exec"},
    "jest": {"-t", "--testNamePattern", "-c", "--config", "--testPathPattern", "--reporters", "--maxWorkers",
             "-w", "--shard", "--project", "--selectProjects"},
    "make": {"-C", "-f", "--file", "-j", "--jobs", "-l", "-o", "-W", "--directory", "-I"},
    "generic": {"-c", "--config", "-p", "--project", "-e", "--env", "--reporter", "-r", "--format", "-f",
                "-o", "--output"},
}


class RunnerCall:
    """One recognized runner invocation inside a shell command (not ``agents.base.Invocation``,
    the argv git pilot starts an agent with).

    ``check`` is the normalized check key (``pytest tests/x.py``, ``npm test``, ``cargo test``,
    ``check:lint`` for a configured check) or ``""`` when the runner is not a check we follow.
    ``form`` is the whitelisted invocation form (``pytest``, ``python3 -m pytest``,
    ``uv run pytest``) or ``""`` when the form is not learnable. ``names`` are the program and
    module names whose absence would make this invocation fail as "missing".
    """

    __slots__ = ("runner", "check", "base", "targets", "form", "names", "module")

    def __init__(self, runner: str, check: str, targets: tuple[str, ...], form: str,
                 names: tuple[str, ...], module: str) -> None:
        self.runner = runner
        self.check = check
        self.targets = targets
        # the check without its targets: "pytest" for "pytest tests/x.py"
        tail = " ".join(targets)
        self.base = check[: -len(tail)].rstrip() if targets and check.endswith(tail) else check
        self.form = form
        self.names = names
        self.module = module

    def __repr__(self) -> str:
        return f"RunnerCall({self.check or self.runner!r}, form={self.form!r})"


class ParsedCommand:
    """What a shell command runs: its runner calls and whether its exit status is theirs."""

    __slots__ = ("calls", "masked")

    def __init__(self, calls: list[RunnerCall], masked: bool) -> None:
        self.calls = calls
        self.masked = masked

    @property
    def checks(self) -> list[RunnerCall]:
        return [inv for inv in self.calls if inv.check]

    def check_status(self, overall: str) -> str:
        """The status of the command's one recognized check, given the command's status.

        A pass of the whole command is a pass of every check in it unless the status was
        masked; a failure is only attributable when exactly one check ran and nothing after
        it could have failed instead.
        """
        if self.masked or overall not in (PASS, FAIL):
            return UNKNOWN
        if overall == PASS:
            return PASS
        return FAIL if len(self.checks) == 1 else UNKNOWN


def _split_ops(tok: str) -> list[str]:
    """Split a run of control characters (``);``, ``&&(``) into operators."""
    ops: list[str] = []
    i = 0
    while i < len(tok):
        two = tok[i:i + 2]
        if two in ("&&", "||", ";;", "|&"):
            ops.append(two)
            i += 2
        else:
            ops.append(tok[i])
            i += 1
    return ops


def _tokens(command: str) -> list[str] | None:
    command = command.replace("\\\n", " ").replace("\n", " ;\n")
    lex = shlex.shlex(command, posix=True, punctuation_chars=";&|()<>")
    lex.whitespace_split = True
    lex.commenters = "#"
    try:
        raw = list(lex)
    except ValueError:
        return None
    out: list[str] = []
    skip_next = False
    for tok in raw:
        if skip_next:
            skip_next = False
            continue
        if tok and set(tok) <= _PUNCT:
            if "<" in tok or ">" in tok:
                if out and out[-1].isdigit():
                    out.pop()  # the fd number of "2>&1"
                skip_next = True  # the redirection target (a file, or the fd after ">&")
                continue
            out.extend(_split_ops(tok))
            continue
        out.append(tok)
    return out


def _segments(tokens: list[str]) -> list[tuple[list[str], str]]:
    """Split into (simple command, the operator that follows it)."""
    segs: list[tuple[list[str], str]] = []
    cur: list[str] = []
    for tok in tokens:
        if tok in _CONTROL:
            if cur or tok not in ("(", ")", "{", "}"):
                segs.append((cur, tok))
            cur = []
        else:
            cur.append(tok)
    if cur:
        segs.append((cur, ""))
    return [(s, op) for s, op in segs if s]


def _strip_prefix(words: list[str]) -> list[str]:
    """Drop environment assignments and wrappers such as ``timeout 60`` or ``env X=1``."""
    i = 0
    while i < len(words):
        w = words[i]
        if _ASSIGN.match(w):
            i += 1
        elif w in _WRAPPERS:
            i += 1
        elif w == "env":
            i += 1
            while i < len(words) and (words[i].startswith("-") or _ASSIGN.match(words[i])):
                i += 1
        elif w == "timeout":
            i += 1
            while i < len(words) and words[i].startswith("-"):
                i += 1
            i += 1  # the duration
        else:
            break
    return words[i:]


def _positional(args: Sequence[str], family: str) -> tuple[str, ...]:
    value_opts = _VALUE_OPTS.get(family, _VALUE_OPTS["generic"])
    out: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a == "--":
            break
        if a.startswith("-"):
            if a in value_opts:
                skip = True
            continue
        out.append(a)
    return tuple(out)


def _norm_target(t: str) -> str:
    t = t.split("::", 1)[0]  # a pytest node id counts as its file
    while t.startswith("./"):
        t = t[2:]
    return t.rstrip("/") or "."


def _launcher(words: list[str]) -> tuple[str, list[str]]:
    """Split a launcher (``uv run``, ``npx``, ``bundle exec``) off the front."""
    for size in (2, 1):
        head = tuple(words[:size])
        if len(head) == size and head in _LAUNCHERS:
            rest = words[size:]
            # "npx --yes jest", "uv run --frozen pytest"
            while rest and rest[0].startswith("-"):
                rest = rest[1:]
            return " ".join(head), rest
    return "", words


def _program(word: str) -> tuple[str, str]:
    """(basename, learnable location prefix) of a program word."""
    base = word.rsplit("/", 1)[-1]
    if "/" not in word:
        return base, ""
    prefix = word[: -len(base)]
    clean = prefix[2:] if prefix.startswith("./") else prefix
    if clean in _LOCAL_BIN_DIRS or (prefix == "./" and base in ("gradlew", "mvnw")):
        return base, prefix
    return base, "\0"  # a path we do not learn (absolute or unusual)


def _runner_call(words: list[str], checks: Sequence[tuple[str, list[str]]]) -> RunnerCall | None:
    words = _strip_prefix(words)
    if not words:
        return None
    for name, ctoks in checks:
        if ctoks and words[: len(ctoks)] == ctoks:
            return RunnerCall(name, "check:" + name, (), "", (), "")
    launcher, words = _launcher(words)
    if not words:
        return None
    prog, where = _program(words[0])
    args = words[1:]
    module = ""
    if _PY_INTERP.match(prog) and len(args) >= 2 and args[0] == "-m":
        module = args[1]
        runner = module
        form_head = (f"{where}{prog}" if where != "\0" else "\0") + f" -m {module}"
        names: tuple[str, ...] = (prog, module)
        args = args[2:]
    else:
        runner = _RENAMED.get(prog, prog)
        form_head = f"{where}{prog}" if where != "\0" else "\0"
        names = (prog,)
    if launcher:
        form_head = f"{launcher} {form_head}"
        names = (launcher.split()[0],) + names
    form = form_head if runner in LEARNABLE_RUNNERS and "\0" not in form_head else ""
    check, targets = _check_key(runner, prog, args)
    if not check and not form:
        return None
    return RunnerCall(runner, check, targets, form, names, module)


def _check_key(runner: str, prog: str, args: list[str]) -> tuple[str, tuple[str, ...]]:
    if runner == "pytest":
        targets = tuple(sorted({_norm_target(t) for t in _positional(args, "pytest")}))
        return " ".join(("pytest",) + targets), targets
    if runner == "unittest":
        targets = tuple(sorted({_norm_target(t) for t in _positional(args, "generic")}))
        return " ".join(("unittest",) + targets), targets
    if runner in ("tox", "nox", "mypy", "flake8", "pylint", "pyright", "tsc", "rspec", "eslint",
                  "jest", "vitest", "mocha", "ctest"):
        family = "jest" if runner in ("jest", "vitest") else "generic"
        targets = tuple(sorted({_norm_target(t) for t in _positional(args, family)}))
        if runner in ("tox", "nox"):
            targets = ()
        return " ".join((runner,) + targets), targets
    if runner == "ruff" and args[:1] in (["check"], ["format"]):
        return f"ruff {args[0]}", ()
    if runner == "black" and "--check" in args:
        return "black --check", ()
    if runner in ("npm", "yarn", "pnpm", "bun"):
        rest = args[1:] if args[:1] == ["run"] or args[:1] == ["run-script"] else args
        if args[:1] == ["t"]:
            rest = ["test"]
        if rest and _CHECK_SCRIPT.match(rest[0]):
            if runner == "bun" and rest[0] == "test" and args[:1] != ["run"]:
                return "bun test", ()
            return f"{runner} {rest[0]}", ()
        return "", ()
    if runner == "cargo":
        sub = args[:2] if args[:1] == ["nextest"] else args[:1]
        if sub and sub[0] in ("test", "build", "check", "clippy", "nextest"):
            pos = _positional(args[len(sub):], "cargo")
            return " ".join(("cargo", *sub) + pos), pos
        return "", ()
    if runner == "go" and args[:1] and args[0] in ("test", "build", "vet"):
        pos = tuple(sorted(_positional(args[1:], "go")))
        return " ".join(("go", args[0]) + pos), pos
    if runner in ("make", "gmake"):
        pos = _positional(args, "make")
        targets = tuple(t for t in pos if "=" not in t)
        if not targets or all(_MAKE_TARGET.match(t) for t in targets):
            return " ".join(("make",) + targets), targets
        return "", ()
    if runner in ("mvn", "gradle"):
        goals = tuple(a for a in args if not a.startswith("-"))
        wanted = {"test", "verify", "package", "compile", "build", "check", "install"}
        hit = tuple(g for g in goals if g.split(":")[-1] in wanted)
        return (f"{runner} {' '.join(hit)}", hit) if hit else ("", ())
    if runner == "rake" and (not args or args[0] in ("test", "spec")):
        return "rake " + (args[0] if args else "test"), ()
    if runner in ("dotnet",) and args[:1] and args[0] in ("test", "build"):
        return f"dotnet {args[0]}", ()
    if (prog == "git-pilot" and args[:1] == ["check"]) or (prog == "git" and args[:2] == ["pilot", "check"]):
        rest = args[1:] if prog == "git-pilot" else args[2:]
        only = [rest[i + 1] for i, a in enumerate(rest[:-1]) if a == "--only"]
        return " ".join(["git pilot check"] + (["--only", only[0]] if only else [])), ()
    return "", ()


def _pipefail(segments: list[tuple[list[str], str]]) -> bool:
    return any(words[:1] == ["set"] and any("pipefail" in w for w in words[1:]) for words, _ in segments)


def _masks(op: str, is_last: bool, pipefail: bool) -> bool:
    """Whether a command followed by ``op`` loses its exit status to what comes after."""
    if op in ("||", "&", "|&"):
        return True
    if op == "|":
        return not pipefail
    return op in (";", ";;") and not is_last


def parse_command(command: str, checks: Sequence[tuple[str, str]] = ()) -> ParsedCommand:
    """Recognize the checks and runner forms in ``command``.

    ``checks`` are the configured ``(name, run)`` pairs of ``.gitpilot.toml``; a command
    that starts with a configured check's command counts as that check. The result is
    ``masked`` when some check's exit status may not be the command's (``pytest | tail``,
    ``pytest || true``, ``pytest; echo done``, a background ``&``).
    """
    toks = _tokens(command)
    if toks is None:
        return ParsedCommand([], True)
    check_toks: list[tuple[str, list[str]]] = []
    for name, run in checks:
        ct = _tokens(run)
        if ct and not any(t in _CONTROL for t in ct):
            check_toks.append((name, ct))
    segments = _segments(toks)
    pipefail = _pipefail(segments)
    calls: list[RunnerCall] = []
    masked = False
    last = len(segments) - 1
    for idx, (words, _op) in enumerate(segments):
        inv = _runner_call(words, check_toks)
        if inv is None:
            continue
        calls.append(inv)
        if any(_masks(op, j == last, pipefail) for j, (_, op) in enumerate(segments) if j >= idx):
            masked = True
    return ParsedCommand(calls, masked)


# ---------------------------------------------------------------------------------------
# Claude Code
# ---------------------------------------------------------------------------------------

def _edit_paths(tool: str, tool_input: object) -> tuple[str, ...]:
    if not isinstance(tool_input, dict):
        return ()
    path = tool_input.get("file_path") or tool_input.get("notebook_path") or tool_input.get("path")
    return (str(path),) if isinstance(path, str) and path else ()


def _claude_response_text(resp: object) -> str:
    if isinstance(resp, str):
        return resp
    if isinstance(resp, dict):
        parts = [resp.get("stdout"), resp.get("stderr"), resp.get("output"), resp.get("error")]
        return "\n".join(p for p in parts if isinstance(p, str) and p)
    if isinstance(resp, list):
        return "\n".join(str(b.get("text", "")) for b in resp if isinstance(b, dict))
    return ""


def _claude_background(tool_input: object, resp: object) -> bool:
    if isinstance(tool_input, dict) and tool_input.get("run_in_background"):
        return True
    return isinstance(resp, dict) and bool(resp.get("backgroundTaskId") or resp.get("interrupted"))


def lifecycle_event(agent: str, payload: dict[str, object], turn_key: str) -> Event | None:
    """A session start, prompt or stop in a Claude-shaped hook payload (Claude Code and Codex send
    the same names; ``turn_key`` is the field naming the turn: ``prompt_id``, ``turn_id``)."""
    name = payload.get("hook_event_name")
    session = str(payload.get("session_id") or "")
    cwd = str(payload.get("cwd") or "")
    if name == "SessionStart":
        return Event(agent, SESSION_START, session, cwd=cwd, event_id=str(payload.get("source") or ""))
    if name == "UserPromptSubmit":
        return Event(agent, PROMPT, session, cwd=cwd, event_id=str(payload.get(turn_key) or ""))
    if name in ("Stop", "StopFailure"):
        return Event(agent, STOP, session, cwd=cwd, event_id=str(payload.get(turn_key) or ""))
    return None


def claude_hook_event(payload: dict[str, object]) -> Event | None:
    """The evidence in one Claude Code hook payload (``None`` for events we do not follow)."""
    name = payload.get("hook_event_name")
    session = str(payload.get("session_id") or "")
    cwd = str(payload.get("cwd") or "")
    started = lifecycle_event("claude", payload, "prompt_id")
    if started is not None:
        return started
    if name == "SessionEnd":
        return Event("claude", SESSION_END, session, cwd=cwd)
    if name not in ("PostToolUse", "PostToolUseFailure"):
        return None
    tool = str(payload.get("tool_name") or "")
    tool_input = payload.get("tool_input")
    command = ""
    if isinstance(tool_input, dict) and isinstance(tool_input.get("command"), str):
        command = str(tool_input["command"])
    if name == "PostToolUseFailure":
        status = UNKNOWN if payload.get("is_interrupt") else FAIL
        text = str(payload.get("error") or "")
        background = False
    else:
        resp = payload.get("tool_response")
        background = _claude_background(tool_input, resp)
        status = UNKNOWN if background else PASS
        text = _claude_response_text(resp)
    return Event("claude", TOOL, session, event_id=str(payload.get("tool_use_id") or ""), tool=tool,
                 command=command, status=status, text=text, paths=_edit_paths(tool, tool_input), cwd=cwd,
                 background=background)


def relative_path(path: str, root: str) -> str:
    """``path`` relative to ``root`` when inside it (for display and comparison)."""
    if root and os.path.isabs(path):
        try:
            rel = os.path.relpath(path, root)
        except ValueError:
            return path
        if not rel.startswith(".."):
            return rel
    return path
