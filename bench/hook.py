"""``python -m bench hook [--rounds N]``: the latency of ``git pilot hook claude``.

Claude Code starts the hook on every hooked tool call, so its budget is relative to the
cheapest possible Python hook: a bare ``python3 -c pass`` by the real interpreter (not a
version-manager shim), timed in the same run, in alternation with the hook. The hook is
started exactly as ``git pilot optimize enable claude`` writes it (``<python> -m gitpilot hook
claude``), on a repository with loop detection on, in the middle of a turn whose session
state already holds 60 events. Every timed call carries a new ``tool_use_id``, so none takes
the duplicate-delivery shortcut.

Target (issue 7): median of a PostToolUse event at most 3x the ``python3 -c pass`` median.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

from bench.common import env, git, real_python, timed

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


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench hook")
    parser.add_argument("--rounds", type=int, default=51)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--no-bytecode", action="store_true",
                        help="run without a bytecode cache (every module compiled on every call)")
    args = parser.parse_args(argv)

    python = real_python()
    hook = [python, "-m", "gitpilot", "hook", "claude"]
    baseline = [python, "-c", "pass"]
    with tempfile.TemporaryDirectory(prefix="bench-hook-") as tmp:
        repo = _repo(Path(tmp))
        # An installed package has compiled bytecode; this checkout may run with
        # PYTHONDONTWRITEBYTECODE, so both sides get a private bytecode cache instead.
        e = env({"PYTHONPYCACHEPREFIX": str(Path(tmp) / "pycache")})
        e.pop("PYTHONDONTWRITEBYTECODE", None)
        if args.no_bytecode:
            e["PYTHONDONTWRITEBYTECODE"] = "1"
            e.pop("PYTHONPYCACHEPREFIX")
        # a turn in progress: a prompt and 60 earlier tool calls in the session state
        timed(hook, repo, e, _payload(repo, "UserPromptSubmit", "", prompt="fix the tests"))
        for i in range(60):
            timed(hook, repo, e, (_edit if i % 2 else _post_tool_use)(repo, f"warm-{i}"))
        state = repo / ".git" / "pilot" / "loops" / "bench-session.json"
        assert state.exists(), "the hook did not record its state: loop detection is not on"

        kinds = {"PostToolUse (Bash check passes)": _post_tool_use,
                 "PostToolUseFailure (check fails)": _post_tool_use_failure,
                 "PostToolUse (Edit)": _edit}
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
            print(f"{'hook claude: ' + name:48} {med * 1000:7.1f}ms {med / base:19.2f}x {pair:15.2f}x")
        headline = statistics.median(samples["PostToolUse (Bash check passes)"]) / base
        verdict = "ok" if headline <= TARGET else "OVER TARGET"
        print(f"\nPostToolUse median / python3 -c pass median = {headline:.2f}x "
              f"(target <= {TARGET:.0f}x): {verdict}")
        return 0 if headline <= TARGET else 1
