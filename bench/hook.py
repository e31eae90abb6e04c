"""``python -m bench hook [--rounds N] [--agent claude|codex|all]``: the latency of ``git pilot
hook claude`` and ``git pilot hook codex``.

Claude Code starts the hook on every hooked tool call, so its budget is relative to the
cheapest possible Python hook: a bare ``python3 -c pass`` by the real interpreter (not a
version-manager shim), timed in the same run, in alternation with the hook. The hook is
started exactly as ``git pilot optimize enable claude`` writes it (``<python> -m gitpilot hook
claude``), on a repository with loop detection on, in the middle of a turn whose session
state already holds 60 events. Every timed call carries a new ``tool_use_id``, so none takes
the duplicate-delivery shortcut.

The Codex variant sends the payloads codex-cli 0.171.0 sends (``fixtures/replays/codex-0.171.0``)
and, like Codex, appends each call's ``item_completed`` record to the session's rollout (a copy
of a captured one, 55 KB) before the hook runs: the hook reads the exit code from its tail.

Target (issues 7 and 15): median of a PostToolUse event at most 3x the ``python3 -c pass`` median,
for each agent.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

from bench.common import env, git, real_python, timed

ROLLOUT = Path(__file__).resolve().parents[1] / "fixtures" / "replays" / "codex-0.171.0" / "loop" / "rollout.jsonl"

TARGET = 3.0

FAILURE_OUTPUT = "Exit code 1\n" + "\n".join(
    [f"tests/test_mod{i}.py ." for i in range(40)]
    + ["", "=================================== FAILURES ===================================",
       "___________________________________ test_add ___________________________________", "",
       "    def test_add():", ">       assert add(2, 2) == 4", "E       assert 5 == 4",
       "E        +  where 5 = add(2, 2)", "", "tests/test_calc.py:7: AssertionError"]
    + [f"    frame line {i}" for i in range(120)]
    + ["FAILED tests/test_calc.py::test_add - AssertionError: assert 5 == 4",
       "========================= 1 failed, 40 passed in 0.31s =========================="])


def _repo(root: Path) -> Path:
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "src").mkdir()
    (repo / "src" / "calc.py").write_text("def add(a, b):\n    return a + b + 1\n")
    (repo / ".gitpilot.toml").write_text(
        '[optimizer]\nloop_detection = true\n\n'
        '[[check]]\nname = "tests"\nrun = "python3 -m pytest -q"\n\n'
        '[[check]]\nname = "lint"\nrun = "ruff check ."\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "bench")
    return repo


def _payload(repo: Path, event: str, tid: str, **fields: Any) -> bytes:
    base = {"session_id": "bench-session", "transcript_path": "/dev/null", "cwd": str(repo),
            "prompt_id": "bench-prompt", "permission_mode": "default", "hook_event_name": event}
    if tid:
        base["tool_use_id"] = tid
    base.update(fields)
    return json.dumps(base).encode()


def _post_tool_use(repo: Path, tid: str) -> bytes:
    return _payload(repo, "PostToolUse", tid, tool_name="Bash",
                    tool_input={"command": "python3 -m pytest -q tests/test_calc.py", "description": "tests"},
                    tool_response={"stdout": "....\n4 passed in 0.02s", "stderr": "", "interrupted": False,
                                   "isImage": False})


def _post_tool_use_failure(repo: Path, tid: str) -> bytes:
    return _payload(repo, "PostToolUseFailure", tid, tool_name="Bash",
                    tool_input={"command": "pytest tests/test_calc.py -q", "description": "tests"},
                    error=FAILURE_OUTPUT, is_interrupt=False)


def _edit(repo: Path, tid: str) -> bytes:
    path = str(repo / "src" / "calc.py")
    return _payload(repo, "PostToolUse", tid, tool_name="Edit",
                    tool_input={"file_path": path, "old_string": "+ 1", "new_string": ""},
                    tool_response={"filePath": path, "oldString": "+ 1", "newString": ""})


def _codex(repo: Path, event: str, tid: str, rollout: Path, **fields: Any) -> bytes:
    base = {"session_id": "bench-codex-session", "turn_id": "bench-turn", "transcript_path": str(rollout),
            "cwd": str(repo), "hook_event_name": event, "model": "gpt-5.4", "permission_mode": "default"}
    if tid:
        base["tool_use_id"] = tid
    base.update(fields)
    return json.dumps(base).encode()


def _codex_call(repo: Path, tid: str, rollout: Path, command: str, output: str, code: int) -> bytes:
    """A finished Codex shell call: its rollout record (as Codex writes it first), then the payload."""
    record = {"timestamp": "2026-12-02T01:16:40.000Z", "type": "event_msg", "payload": {
        "type": "item_completed", "turn_id": "bench-turn", "item": {
            "type": "CommandExecution", "id": tid, "command": ["/bin/bash", "-lc", command],
            "status": "completed" if code == 0 else "failed", "aggregated_output": output, "exit_code": code}}}
    with open(rollout, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n")
    return _codex(repo, "PostToolUse", tid, rollout, tool_name="Bash", tool_input={"command": command},
                  tool_response=output)


def _codex_pass(repo: Path, tid: str, rollout: Path) -> bytes:
    return _codex_call(repo, tid, rollout, "python3 -m pytest -q tests/test_calc.py", "....\n4 passed in 0.02s\n", 0)


def _codex_fail(repo: Path, tid: str, rollout: Path) -> bytes:
    return _codex_call(repo, tid, rollout, "pytest tests/test_calc.py -q", FAILURE_OUTPUT, 1)


def _codex_patch(repo: Path, tid: str, rollout: Path) -> bytes:
    patch = "*** Begin Patch\n*** Update File: src/calc.py\n@@\n-    return a + b + 1\n+    return a + b\n*** End Patch\n"
    return _codex(repo, "PostToolUse", tid, rollout, tool_name="apply_patch", tool_input={"command": patch},
                  tool_response="Success. Updated the following files:\nM src/calc.py\n")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench hook")
    parser.add_argument("--rounds", type=int, default=51)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--no-bytecode", action="store_true",
                        help="run without a bytecode cache (every module compiled on every call)")
    parser.add_argument("--agent", choices=("claude", "codex", "all"), default="all")
    args = parser.parse_args(argv)
    codes = []
    for agent in ("claude", "codex") if args.agent == "all" else (args.agent,):
        codes.append(_run(agent, args))
        print()
    return max(codes)


def _run(agent: str, args: argparse.Namespace) -> int:
    python = real_python()
    hook = [python, "-m", "gitpilot", "hook", agent]
    baseline = [python, "-c", "pass"]
    with tempfile.TemporaryDirectory(prefix="bench-hook-") as tmp:
        repo = _repo(Path(tmp))
        rollout = Path(tmp) / "rollout.jsonl"
        rollout.write_bytes(ROLLOUT.read_bytes())
        # An installed package has compiled bytecode; this checkout may run with
        # PYTHONDONTWRITEBYTECODE, so both sides get a private bytecode cache instead.
        e = env({"PYTHONPYCACHEPREFIX": str(Path(tmp) / "pycache")})
        e.pop("PYTHONDONTWRITEBYTECODE", None)
        if args.no_bytecode:
            e["PYTHONDONTWRITEBYTECODE"] = "1"
            e.pop("PYTHONPYCACHEPREFIX")
        # a turn in progress: a prompt and 60 earlier tool calls in the session state
        if agent == "codex":
            timed(hook, repo, e, _codex(repo, "UserPromptSubmit", "", rollout, prompt="fix the tests"))
            for i in range(60):
                timed(hook, repo, e, (_codex_patch if i % 2 else _codex_pass)(repo, f"warm-{i}", rollout))
            kinds: dict[str, Any] = {
                "PostToolUse (Bash check passes)": lambda r, t: _codex_pass(r, t, rollout),
                "PostToolUse (Bash check fails)": lambda r, t: _codex_fail(r, t, rollout),
                "PostToolUse (apply_patch)": lambda r, t: _codex_patch(r, t, rollout)}
        else:
            timed(hook, repo, e, _payload(repo, "UserPromptSubmit", "", prompt="fix the tests"))
            for i in range(60):
                timed(hook, repo, e, (_edit if i % 2 else _post_tool_use)(repo, f"warm-{i}"))
            kinds = {"PostToolUse (Bash check passes)": _post_tool_use,
                     "PostToolUseFailure (check fails)": _post_tool_use_failure,
                     "PostToolUse (Edit)": _edit}
        session = "bench-codex-session" if agent == "codex" else "bench-session"
        state = repo / ".git" / "pilot" / "loops" / f"{session}.json"
        assert state.exists(), "the hook did not record its state: loop detection is not on"

        samples: dict[str, list[float]] = {"python3 -c pass": [], **{k: [] for k in kinds}}
        paired: dict[str, list[float]] = {k: [] for k in kinds}  # hook / the baseline run just before it
        for r in range(args.warmup + args.rounds):
            for name, make in kinds.items():
                t_base = timed(baseline, repo, e)
                t_hook = timed(hook, repo, e, make(repo, f"r{r}-{name[:8]}"))
                if r >= args.warmup:
                    samples["python3 -c pass"].append(t_base)
                    samples[name].append(t_hook)
                    paired[name].append(t_hook / t_base)
        base = statistics.median(samples["python3 -c pass"])
        print(f"interpreter: {python}")
        print(f"rounds: {args.rounds} (after {args.warmup} warm-up), alternating with python3 -c pass; "
              f"bytecode cache: {'off' if args.no_bytecode else 'on'}\n")
        print(f"{'what':48} {'median':>9} {'vs python3 -c pass':>20} {'median of pairs':>16}")
        print(f"{'python3 -c pass':48} {base * 1000:7.1f}ms {'1.00x':>20} {'':>16}")
        for name in kinds:
            med = statistics.median(samples[name])
            pair = statistics.median(paired[name])
            print(f"{f'hook {agent}: ' + name:48} {med * 1000:7.1f}ms {med / base:19.2f}x {pair:15.2f}x")
        headline = statistics.median(samples["PostToolUse (Bash check passes)"]) / base
        verdict = "ok" if headline <= TARGET else "OVER TARGET"
        print(f"\n{agent}: PostToolUse median / python3 -c pass median = {headline:.2f}x "
              f"(target <= {TARGET:.0f}x): {verdict}")
        return 0 if headline <= TARGET else 1
