"""Fake ``claude``, ``codex``, ``copilot``, ``pi`` and ``grok`` for tests: record every call, answer
with real captured output.

Run as ``fake_agent.py AGENT ARGS...`` (the shims beside this file do that). ``grok`` is the
exception: xAI's CLI could not be installed, so its answers follow its published documentation
(``fixtures/agent-cli-samples/grok-docs/``), not a capture. See README.md here for the behaviour and the
environment variables. Everything it prints comes from ``fixtures/agent-cli-samples/``
(the real CLIs' captured output), with ids substituted; only the bookkeeping is invented.

State lives in ``$FAKE_AGENT_HOME``:
- ``calls.jsonl``: one JSON object per call: agent, argv, stdin, cwd, env.
- ``state.json``: sessions (id -> messages, cwd) and background jobs (as ``claude agents --json``).
- ``script.json`` (optional, written by the test): rules that override the default answer.
"""

from __future__ import annotations

import json
import os
import re
import select
import sys
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TERMINAL_STATES = {"stopped", "failed", "completed", "done", "exited", "killed"}
CLAUDE_SUBCOMMANDS = {
    "agents",
    "stop",
    "kill",
    "logs",
    "attach",
    "rm",
    "respawn",
    "auth",
    "mcp",
    "doctor",
    "plugin",
    "plugins",
    "project",
    "install",
    "update",
    "upgrade",
    "setup-token",
    "ultrareview",
    "daemon",
    "config",
    "migrate-installer",
    "auto-mode",
    "gateway",
}


def samples_dir() -> Path:
    env = os.environ.get("FAKE_AGENT_SAMPLES")
    return Path(env) if env else HERE.parents[1] / "fixtures" / "agent-cli-samples"


def home() -> Path:
    env = os.environ.get("FAKE_AGENT_HOME")
    if not env:
        sys.stderr.write("fake agent: FAKE_AGENT_HOME is not set\n")
        raise SystemExit(97)
    path = Path(env)
    path.mkdir(parents=True, exist_ok=True)
    return path


# -- samples ------------------------------------------------------------------------------
def read_sample(name: str) -> tuple[str, str, int]:
    """(stdout, stderr, exit code) of a sample file: ``$ cmd`` line, body, ``[exit N]``.

    A body split into ``--- stdout:`` / ``--- stderr:`` sections is split the same way;
    other ``--- name:`` sections (files the command wrote) are dropped.
    """
    path = samples_dir() / name
    text = path.read_text("utf-8")
    lines = text.split("\n")
    while lines and lines[0].startswith("# "):  # a note on where a sample comes from
        lines = lines[1:]
    if lines and lines[0].startswith("$ "):
        lines = lines[1:]
    code = 0
    body: list[str] = []
    for line in lines:
        m = re.fullmatch(r"\[exit (\d+)\]", line.strip())
        if m:
            code = int(m.group(1))
            continue
        body.append(line)
    sections: dict[str, list[str]] = {"": []}
    current = ""
    for line in body:
        m = re.fullmatch(r"--- (.+):", line)
        if m:
            current = m.group(1)
            sections[current] = []
            continue
        sections[current].append(line)

    def joined(key: str) -> str:
        part = "\n".join(sections.get(key, [])).strip("\n")
        return part + "\n" if part else ""

    if "stdout" in sections or "stderr" in sections:
        return joined("stdout"), joined("stderr"), code
    return joined(""), "", code


# -- state ------------------------------------------------------------------------------
def load_state() -> dict[str, Any]:
    try:
        data = json.loads((home() / "state.json").read_text("utf-8"))
        if isinstance(data, dict):
            data.setdefault("sessions", {})
            data.setdefault("jobs", [])
            return data
    except (OSError, ValueError):
        pass
    return {"sessions": {}, "jobs": []}


def save_state(state: dict[str, Any]) -> None:
    tmp = home() / f"state.json.{os.getpid()}"
    tmp.write_text(json.dumps(state, indent=2, sort_keys=True), "utf-8")
    os.replace(tmp, home() / "state.json")


def record_call(agent: str, argv: list[str]) -> None:
    stdin = ""
    try:
        if not os.isatty(0) and select.select([0], [], [], 0.05)[0]:
            stdin = sys.stdin.buffer.read().decode("utf-8", "replace")
    except (OSError, ValueError):
        pass
    entry = {"agent": agent, "argv": argv, "stdin": stdin, "cwd": os.getcwd(), "env": dict(os.environ)}
    with open(home() / "calls.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry, sort_keys=True) + "\n")


def emit(stdout: str, stderr: str, code: int) -> int:
    sys.stdout.write(stdout)
    sys.stdout.flush()
    sys.stderr.write(stderr)
    sys.stderr.flush()
    return code


def scripted(agent: str, argv: list[str]) -> int | None:
    """Apply the first matching rule of ``script.json``: {"rules": [{agent, when, ...}]}."""
    path = home() / "script.json"
    try:
        script = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    rules = script.get("rules", [])
    for rule in rules:
        if rule.get("agent", agent) != agent:
            continue
        if not all(tok in argv for tok in rule.get("when", [])):
            continue
        if rule.get("times") is not None:
            if rule["times"] <= 0:
                continue
            rule["times"] -= 1
            path.write_text(json.dumps(script, indent=2), "utf-8")
        if "sample" in rule:
            out, err, code = read_sample(rule["sample"])
        else:
            out, err, code = rule.get("stdout", ""), rule.get("stderr", ""), 0
        code = int(rule.get("exit", code))
        for old, new in sorted(rule.get("replace", {}).items()):
            out, err = out.replace(old, new), err.replace(old, new)
        return emit(out, err, code)
    return None


def hidden() -> list[str]:
    return [w for w in os.environ.get("FAKE_AGENT_HIDE", "").split(",") if w]


def help_text(name: str) -> tuple[str, str, int]:
    out, err, code = read_sample(name)
    for word in hidden():
        out = "\n".join(ln for ln in out.split("\n") if word not in ln)
    return out, err, code


def option_value(argv: list[str], *names: str) -> str | None:
    for i, arg in enumerate(argv):
        for name in names:
            if arg == name and i + 1 < len(argv):
                return argv[i + 1]
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return None


# -- claude ---------------------------------------------------------------------------------
def claude(argv: list[str]) -> int:
    if "--version" in argv or "-v" in argv:
        return emit(*read_sample("cli-help/claude-version.txt"))
    sub = argv[0] if argv and argv[0] in CLAUDE_SUBCOMMANDS else None
    if sub in hidden():
        sub = None  # an older version without the command prints the main help
        if "--help" in argv or "-h" in argv:
            return emit(*help_text("cli-help/claude-help.txt"))
    if "--help" in argv or "-h" in argv:
        name = {"kill": "stop"}.get(sub or "", sub)
        path = f"cli-help/claude-{name}-help.txt" if name else "cli-help/claude-help.txt"
        if not (samples_dir() / path).exists():
            path = "cli-help/claude-help.txt"
        return emit(*help_text(path))
    if sub == "agents":
        return claude_agents(argv)
    if sub in ("stop", "kill"):
        return claude_stop(argv[1] if len(argv) > 1 else "")
    if sub == "logs":
        return claude_logs(argv[1] if len(argv) > 1 else "")
    if "--bg" in argv or "--background" in argv:
        return claude_background(argv)
    return claude_session(argv)


def claude_agents(argv: list[str]) -> int:
    state = load_state()
    jobs = state["jobs"]
    if "--all" not in argv:
        jobs = [j for j in jobs if j.get("state") not in TERMINAL_STATES]
    if not jobs:
        return emit(*read_sample("cli-help/claude-agents-json-run.txt"))
    return emit(json.dumps(jobs, indent=2) + "\n", "", 0)


def claude_stop(short: str) -> int:
    state = load_state()
    for job in state["jobs"]:
        if job["id"] == short or job.get("sessionId") == short:
            job["state"] = "stopped"
            save_state(state)
            out, err, code = read_sample("cli-help/claude-stop-run.txt")
            return emit(out.replace("cb556d29", job["id"]), err, code)
    out, err, code = read_sample("cli-help/claude-logs-run.txt")
    return emit("", out.replace("deadbeef", short), code)


def claude_logs(short: str) -> int:
    """A live job's terminal bytes; a failed one's daemon socket is gone (what the real CLI said
    for its failed job ba3743c8); an unknown id has no job."""
    for job in load_state()["jobs"]:
        if job["id"] == short or job.get("sessionId") == short:
            if job.get("state") in TERMINAL_STATES:
                out, err, code = read_sample("cli-help/claude-logs-bg-run.txt")
                return emit("", out.replace("ba3743c8", job["id"]), code)
            return emit(*read_sample("cli-help/claude-logs-bg-existing.txt"))
    out, err, code = read_sample("cli-help/claude-logs-run.txt")
    return emit("", out.replace("deadbeef", short), code)


def new_session_id() -> str:
    return str(uuid.uuid4())


def claude_background(argv: list[str]) -> int:
    state = load_state()
    resumed = option_value(argv, "--resume", "-r")
    sid = new_session_id()
    short = sid[:8]
    job_state = os.environ.get("FAKE_CLAUDE_BG_STATE", "working")
    if resumed is not None and resumed not in state["sessions"]:
        job_state = "failed"  # the real CLI fails later, inside the job
    else:
        state["sessions"][sid] = {"cwd": os.getcwd(), "messages": [argv[-1]], "forked_from": resumed}
    state["jobs"].append(
        {
            "id": short,
            "cwd": os.getcwd(),
            "kind": "background",
            "startedAt": int(time.time() * 1000),
            "sessionId": sid,
            "name": argv[-1][:40],
            "state": job_state,
        }
    )
    save_state(state)
    out, err, code = read_sample("cli-help/claude-bg-resume-run.txt")
    return emit(out.replace("ba3743c8", short), err, code)


def claude_session(argv: list[str]) -> int:
    state = load_state()
    printing = "-p" in argv or "--print" in argv
    resumed = option_value(argv, "--resume", "-r")
    message = argv[-1] if argv else ""
    if resumed is not None:
        if resumed not in state["sessions"]:
            out, _err, code = read_sample("cli-help/claude-p-resume-missing.txt")
            return emit("", out.replace("99999999-2222-4333-8444-555555555555", resumed), code)
        sid = resumed
        state["sessions"][sid]["messages"].append(message)
    else:
        sid = option_value(argv, "--session-id") or new_session_id()
        state["sessions"][sid] = {"cwd": os.getcwd(), "messages": [message], "forked_from": None}
    save_state(state)
    write_transcript(sid)
    time.sleep(float(os.environ.get("FAKE_AGENT_SLEEP") or 0))  # a session that takes a while
    if not printing:
        return 0
    fmt = option_value(argv, "--output-format") or "text"
    lines = read_sample("cli-help/claude-p-mock-tools-stream-json.txt")[0].strip().split("\n")
    lines = [ln.replace("11111111-2222-4333-8444-555555555555", sid) for ln in lines]
    if fmt == "json":
        return emit(lines[-1] + "\n", "", 0)
    if fmt == "stream-json":
        return emit("\n".join(lines) + "\n", "", 0)
    return emit("done\n", "", 0)


def write_transcript(sid: str) -> None:
    """The session transcript where Claude Code keeps it (``~/.claude/projects/<cwd>/<id>.jsonl``)."""
    src = samples_dir() / "claude-transcripts-2.1.197" / "11111111-2222-4333-8444-555555555555.jsonl"
    project = re.sub(r"[^A-Za-z0-9]", "-", os.getcwd())
    dest = Path(os.environ.get("HOME", str(home()))) / ".claude" / "projects" / project / f"{sid}.jsonl"
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        text = src.read_text("utf-8").replace("11111111-2222-4333-8444-555555555555", sid)
        with open(dest, "a", encoding="utf-8") as fh:
            fh.write(text)
    except OSError:
        pass


# -- codex ----------------------------------------------------------------------------------
def codex_words(argv: list[str]) -> list[str]:
    """The subcommand path (``exec resume``), skipping global options and their values."""
    words: list[str] = []
    takes_value = {
        "-c",
        "--config",
        "-C",
        "--cd",
        "-m",
        "--model",
        "-p",
        "--profile",
        "-s",
        "--sandbox",
        "-a",
        "--ask-for-approval",
        "--enable",
        "--disable",
        "-i",
        "--image",
        "--base",
        "-o",
        "--output-last-message",
        "--add-dir",
        "--remote",
        "--local-provider",
    }
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg in takes_value:
            skip = True
            continue
        if arg.startswith("-"):
            continue
        words.append(arg)
    return words


def codex(argv: list[str]) -> int:
    if "--version" in argv or "-V" in argv:
        return emit(*read_sample("cli-help/codex-version.txt"))
    words = codex_words(argv)
    known = {
        "exec",
        "review",
        "resume",
        "features",
        "fork",
        "mcp",
        "login",
        "logout",
        "apply",
        "sandbox",
        "doctor",
        "agents",
        "queue",
        "cloud",
        "completion",
        "debug",
        "plugin",
        "app-server",
        "help",
    }
    path: list[str] = []
    for w in words:
        if w in known or (path == ["exec"] and w in {"resume", "review", "fork"}) or (path == ["features"]):
            path.append(w)
        else:
            break
    if "--help" in argv or "-h" in argv:
        name = "cli-help/codex-" + "-".join(path) + "-help.txt" if path else "cli-help/codex-help.txt"
        if not (samples_dir() / name).exists():
            name = "cli-help/codex-help.txt"
        return emit(*help_text(name))
    if path[:1] == ["review"]:
        if "-C" in argv[argv.index("review") :]:
            return emit(*read_sample("cli-help/codex-review-C.txt"))
        return emit(*read_sample("cli-help/codex-review-base-mock-success.txt"))
    if path[:2] == ["exec", "review"]:
        return emit(*read_sample("cli-help/codex-exec-review-json-mock-success.txt"))
    if path[:2] == ["features", "list"]:
        if "-C" in argv[argv.index("list") :]:
            return emit(*read_sample("cli-help/codex-features-list-C.txt"))
        return emit(*read_sample("cli-help/codex-features-list.txt"))
    if path[:1] == ["exec"] or path[:1] == ["resume"] or not path:
        return codex_session(argv, path)
    return 0


def codex_session(argv: list[str], path: list[str]) -> int:
    state = load_state()
    rest = codex_words(argv)[len(path) :]
    message = rest[-1] if rest else ""
    if "resume" in path:
        sid = rest[0] if rest else ""
        if sid not in state["sessions"]:
            return emit("", f"Error: no rollout found for thread id {sid}\n", 1)
        state["sessions"][sid]["messages"].append(message)
    else:
        sid = new_session_id()
        state["sessions"][sid] = {"cwd": os.getcwd(), "messages": [message], "forked_from": None}
    save_state(state)
    if path[:1] != ["exec"]:
        return 0
    lines = read_sample("cli-help/codex-exec-review-json-mock-success.txt")[0].strip().split("\n")
    lines = [ln.replace("01a22c6e-1dae-7e12-abc2-19e1539a07c3", sid) for ln in lines]
    if "--json" in argv:
        return emit("\n".join(lines) + "\n", "", 0)
    return emit("Mock explanation.\n", f"session id: {sid}\n", 0)


# -- copilot (GitHub Copilot CLI 1.0.102) ---------------------------------------------------
COPILOT_SID = "0cb916db-26aa-40f2-86b5-1ba81b225fd2"


def copilot(argv: list[str]) -> int:
    if "--version" in argv or "-v" in argv:
        return emit(*read_sample("cli-help/copilot-version.txt"))
    if "--help" in argv or "-h" in argv:
        return emit(*help_text("cli-help/copilot-help.txt"))
    state = load_state()
    prompt = option_value(argv, "-p", "--prompt")
    message = prompt if prompt is not None else (option_value(argv, "-i", "--interactive") or "")
    resumed = option_value(argv, "--resume", "-r")
    if resumed is not None:
        if resumed not in state["sessions"]:
            out, err, code = read_sample("cli-help/copilot-p-json-resume-missing.txt")
            return emit(out, err.replace("0000dead-beef-4000-8000-000000000000", resumed), code)
        sid, sample = resumed, "cli-help/copilot-p-json-mock-resume.txt"
        state["sessions"][sid]["messages"].append(message)
    else:
        sid, sample = option_value(argv, "--session-id") or new_session_id(), "cli-help/copilot-p-json-mock-run.txt"
        state["sessions"][sid] = {"cwd": os.getcwd(), "messages": [message], "forked_from": None}
    save_state(state)
    if prompt is None:
        return 0  # interactive: the session owns the terminal and prints nothing we read
    if option_value(argv, "--output-format") != "json":
        return emit(*read_sample("cli-help/copilot-p-silent-mock-run.txt"))
    out, err, code = read_sample(sample)
    return emit(out.replace(COPILOT_SID, sid), err, code)


# -- pi (0.73.1) ----------------------------------------------------------------------------
PI_SID = "01a23437-6f1b-7329-a9c2-3b5c14513424"
PI_FLAGS_WITH_VALUE = {"--mode", "--session", "--tools", "-t", "--provider", "--model", "--session-dir",
                       "--thinking", "--append-system-prompt", "--system-prompt", "--api-key"}


def pi_message(argv: list[str]) -> str:
    skip = False
    words: list[str] = []
    for arg in argv:
        if skip:
            skip = False
        elif arg in PI_FLAGS_WITH_VALUE:
            skip = True
        elif not arg.startswith("-"):
            words.append(arg)
    return words[-1] if words else ""


def pi(argv: list[str]) -> int:
    if "--version" in argv or "-v" in argv:
        return emit(*read_sample("cli-help/pi-version.txt"))
    if "--help" in argv or "-h" in argv:
        return emit(*help_text("cli-help/pi-help.txt"))
    state = load_state()
    message = pi_message(argv)
    resumed = option_value(argv, "--session")
    if resumed is not None:
        if resumed not in state["sessions"]:
            out, err, code = read_sample("cli-help/pi-p-json-session-missing.txt")
            return emit(out, err.replace("0000dead-beef-4000-8000-000000000000", resumed), code)
        sid, sample = resumed, "cli-help/pi-p-json-mock-resume.txt"
        state["sessions"][sid]["messages"].append(message)
    else:
        sid, sample = new_session_id(), "cli-help/pi-p-json-mock-run.txt"
        state["sessions"][sid] = {"cwd": os.getcwd(), "messages": [message], "forked_from": None}
    save_state(state)
    write_pi_session(sid)
    if "-p" not in argv and "--print" not in argv:
        return 0  # interactive
    if option_value(argv, "--mode") != "json":
        return emit(*read_sample("cli-help/pi-p-text-mock-run.txt"))
    out, err, code = read_sample(sample)
    return emit(out.replace(PI_SID, sid).replace("/home/dev/project", os.getcwd()), err, code)


def write_pi_session(sid: str) -> None:
    """The session file where Pi keeps it (``~/.pi/agent/sessions/--<cwd>--/<time>_<id>.jsonl``)."""
    src = next((samples_dir() / "pi-sessions-0.73.1").rglob(f"*{PI_SID}.jsonl"))
    cwd = os.getcwd()
    directory = Path(os.environ.get("HOME", str(home()))) / ".pi" / "agent" / "sessions" / (
        "--" + cwd.strip("/").replace("/", "-") + "--")
    dest = directory / f"{time.strftime('%Y-%m-%dT%H-%M-%S-000Z', time.gmtime())}_{sid}.jsonl"
    if any(directory.glob(f"*_{sid}.jsonl")):
        return
    directory.mkdir(parents=True, exist_ok=True)
    dest.write_text(src.read_text("utf-8").replace(PI_SID, sid).replace("/home/dev/project", cwd), "utf-8")


# -- grok (shaped by xAI's published documentation; not a capture) -------------------------------
def grok(argv: list[str]) -> int:
    if "--version" in argv or "-V" in argv:
        return emit(*read_sample("grok-docs/grok-version.txt"))
    if "--help" in argv or "-h" in argv:
        return emit(*help_text("grok-docs/grok-help.txt"))
    state = load_state()
    prompt = option_value(argv, "-p", "--single")
    resumed = option_value(argv, "--resume", "-r")
    if resumed is not None:
        if resumed not in state["sessions"]:
            return emit("", f"Error: no session with id {resumed}\n", 1)
        sid = resumed
        state["sessions"][sid]["messages"].append(prompt or (argv[-1] if argv else ""))
    else:
        sid = option_value(argv, "--session-id", "-s") or new_session_id()
        state["sessions"][sid] = {"cwd": os.getcwd(), "messages": [prompt or (argv[-1] if argv else "")],
                                  "forked_from": None}
    save_state(state)
    if prompt is None:
        return 0  # interactive
    if option_value(argv, "--output-format") != "json":
        return emit("done\n", "", 0)
    out, err, code = read_sample("grok-docs/grok-p-json.txt")
    return emit(out.replace("019f470d-3e02-7601-b726-1133cc72ef76", sid), err, code)


AGENTS = {"claude": claude, "codex": codex, "copilot": copilot, "pi": pi, "grok": grok}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in AGENTS:
        sys.stderr.write(f"usage: fake_agent.py {'|'.join(AGENTS)} ARGS...\n")
        return 2
    agent, args = argv[0], argv[1:]
    record_call(agent, args)
    code = scripted(agent, args)
    if code is not None:
        return code
    return AGENTS[agent](args)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
