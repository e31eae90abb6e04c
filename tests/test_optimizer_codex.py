"""The failure-loop detector for Codex: ``optimize enable|disable codex`` and ``git pilot hook
codex`` replaying the hook payloads the real codex-cli 0.171.0 sent
(``fixtures/replays/codex-0.171.0/``), with the rollout it wrote beside them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import REPO_ROOT, git, make_repo, pilot_env, run_pilot

from gitpilot.optimizer import hookfast

REPLAYS = REPO_ROOT / "fixtures" / "replays" / "codex-0.171.0"
HOOKS = Path(".codex") / "hooks.json"
CHECK_SH = ('grep -q "SPEED = 12000" speed.py || { echo "speed.py:1: AssertionError: expected SPEED = 12000, '
            'got 9000"; exit 1; }\necho "1 passed"\n')


def project(tmp_path: Path) -> Path:
    """The repository the captured sessions ran in: a configured check that fails until speed.py says 12000."""
    return make_repo(tmp_path / "repo", {".gitpilot.toml": '[[check]]\nname = "unit"\nrun = "sh check.sh"\n',
                                         "check.sh": CHECK_SH, "speed.py": "SPEED = 9000\n"})


def payloads(case: str, repo: Path, tmp_path: Path) -> list[dict[str, Any]]:
    """The captured payloads, pointed at ``repo`` and at a copy of the captured rollout."""
    rollout = tmp_path / f"rollout-{case}.jsonl"
    shutil.copy(REPLAYS / case / "rollout.jsonl", rollout)
    out = []
    for line in (REPLAYS / case / "hooks.jsonl").read_text().splitlines():
        record = json.loads(line)
        assert record["captured_from"] == "codex-cli 0.171.0"
        payload = dict(record["payload"])
        payload["cwd"], payload["transcript_path"] = str(repo), str(rollout)
        out.append(payload)
    return out


def replay(case: str, repo: Path, tmp_path: Path) -> dict[str, dict[str, Any]]:
    """Each PostToolUse's hook output by tool_use_id (only the non-silent ones)."""
    said: dict[str, dict[str, Any]] = {}
    for payload in payloads(case, repo, tmp_path):
        if payload["hook_event_name"] == "PreToolUse":
            continue  # not installed: git pilot follows PostToolUse
        out = hookfast.handle(payload, agent="codex")
        if out:
            said[str(payload.get("tool_use_id"))] = out
    return said


def test_a_replayed_loop_gets_one_redirect_then_one_notice(tmp_path: Path) -> None:
    repo = project(tmp_path)
    said = replay("loop", repo, tmp_path)
    assert sorted(said) == ["call_mock_3", "call_mock_5"]
    redirect = said["call_mock_3"]["hookSpecificOutput"]
    assert redirect["hookEventName"] == "PostToolUse"
    assert redirect["additionalContext"].startswith(
        "git pilot: `check:unit` has now failed 3 times in a row in this turn with the same error")
    assert "systemMessage" not in said["call_mock_3"]
    assert said["call_mock_5"] == {"systemMessage": "git pilot: the agent has run `check:unit` 5 times this turn with "
                                                    "the same failure, even after a redirect. It may be stuck in a "
                                                    "loop; consider stepping in."}


def test_productive_work_stays_quiet(tmp_path: Path) -> None:
    repo = project(tmp_path)
    assert replay("productive", repo, tmp_path) == {}
    # the turn passed: it is on record for the learned threshold
    turns = (repo / ".git" / "pilot" / "loops" / "turns.jsonl").read_text().splitlines()
    assert [json.loads(t)["streak"] for t in turns] == [1]


def test_without_the_rollout_record_a_call_counts_for_nothing(tmp_path: Path) -> None:
    """The exit code is only in the rollout: a call whose record is missing is ambiguous."""
    repo = project(tmp_path)
    calls = payloads("loop", repo, tmp_path)
    Path(calls[0]["transcript_path"]).write_text("")
    assert [hookfast.handle(p, agent="codex") for p in calls if p["hook_event_name"] != "PreToolUse"] == \
        [None] * 8


def test_the_hook_as_a_real_process_prints_the_redirect(tmp_path: Path) -> None:
    repo = project(tmp_path)
    outputs = []
    for payload in payloads("loop", repo, tmp_path)[:8]:
        proc = run_pilot("hook", "codex", cwd=repo, input=json.dumps(payload).encode())
        assert proc.returncode == 0 and proc.stderr == ""
        outputs.append(proc.stdout)
    assert [bool(o.strip()) for o in outputs] == [False] * 7 + [True]
    assert "has now failed 3 times in a row" in json.loads(outputs[-1])["hookSpecificOutput"]["additionalContext"]


def test_enable_codex_merges_and_disable_restores_the_file_byte_for_byte(tmp_path: Path) -> None:
    repo = project(tmp_path)
    path = repo / HOOKS
    path.parent.mkdir()
    theirs = {"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./log.sh"}]}]}}
    original = json.dumps(theirs, indent=4).replace("\n", "\r\n").encode()
    path.write_bytes(original)

    proc = run_pilot("optimize", "enable", "codex", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert "added git pilot hooks to .codex/hooks.json: SessionStart, UserPromptSubmit, PostToolUse, Stop" \
        in proc.stdout
    assert "approve them in /hooks" in proc.stdout
    hooks = json.loads(path.read_text())["hooks"]
    assert hooks["PostToolUse"][0] == theirs["hooks"]["PostToolUse"][0]  # the user's hook first, untouched
    ours = hooks["PostToolUse"][1]
    assert ours["matcher"] == "Bash|apply_patch"
    command = ours["hooks"][0]["command"]
    words = command.split()
    if words[0].startswith("PYTHONPATH="):  # this checkout is not the gitpilot installed here
        assert words.pop(0) == f"PYTHONPATH={REPO_ROOT}"
    assert words[0] == sys.executable and command.endswith("-m gitpilot hook codex")
    assert git(repo, "status", "--porcelain") == ""  # kept out of commits and of the checked tree

    proc = run_pilot("optimize", "disable", "codex", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert path.read_bytes() == original
    assert git(repo, "status", "--porcelain") == "?? .codex/\n"


def test_enable_codex_creates_the_file_and_disable_removes_it(tmp_path: Path) -> None:
    repo = project(tmp_path)
    assert run_pilot("optimize", "enable", "codex", cwd=repo).returncode == 0
    assert (repo / HOOKS).is_file()
    assert run_pilot("optimize", "disable", "codex", cwd=repo).returncode == 0
    assert not (repo / ".codex").exists()


def test_enable_codex_refuses_a_tracked_or_symlinked_file(tmp_path: Path) -> None:
    repo = project(tmp_path)
    (repo / ".codex").mkdir()
    (repo / HOOKS).write_text('{"hooks": {}}\n')
    git(repo, "add", str(HOOKS))
    git(repo, "commit", "-q", "-m", "team hooks")
    proc = run_pilot("optimize", "enable", "codex", cwd=repo)
    assert proc.returncode == 1
    assert proc.stderr.strip() == ("git pilot: .codex/hooks.json is tracked by git; git pilot only edits an "
                                   "untracked, personal settings file (git rm --cached .codex/hooks.json first, "
                                   "or add the hooks by hand)")
    assert (repo / HOOKS).read_text() == '{"hooks": {}}\n'

    other = make_repo(tmp_path / "other", {"README.md": "# r\n"})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (other / ".codex").symlink_to(elsewhere)
    proc = run_pilot("optimize", "enable", "codex", cwd=other)
    assert proc.returncode == 1 and "is a symlink" in proc.stderr
    assert list(elsewhere.iterdir()) == []


def test_the_codex_hook_imports_no_heavy_module(tmp_path: Path) -> None:
    repo = project(tmp_path)
    probe = (
        "import sys\n"
        "from gitpilot.cli import main\n"
        "code = main(['hook', 'codex'])\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'click', 'pygit2', 'tomlkit', 'regex', 'markdown_it', 'colorama', 'blake3'})\n"
        "sys.stderr.write(repr((code, heavy)))\n"
    )
    for payload in payloads("loop", repo, tmp_path)[:4]:
        proc = subprocess.run([sys.executable, "-c", probe], cwd=repo, input=json.dumps(payload).encode(),
                              capture_output=True, env=pilot_env())
        assert proc.stderr.decode() == "(0, [])"


def codex_call(repo: Path, rollout: Path, session: str, call: str, command: str, output: str,
               code: int) -> dict[str, Any]:
    """A finished Codex shell call as Codex leaves it: the rollout record first, then the payload."""
    record = {"type": "event_msg", "payload": {"type": "item_completed", "item": {
        "type": "CommandExecution", "id": call, "command": ["/bin/bash", "-lc", command],
        "status": "completed" if code == 0 else "failed", "aggregated_output": output, "exit_code": code}}}
    with open(rollout, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n")
    return {"session_id": session, "turn_id": "t", "transcript_path": str(rollout), "cwd": str(repo),
            "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": command},
            "tool_response": output, "tool_use_id": call}


def test_learned_alternatives_from_codex_sessions_reach_a_later_codex_session(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {".gitpilot.toml": "[optimizer]\nlearn = true\n"})

    def event(session: str, name: str, **fields: Any) -> dict[str, Any]:
        return {"session_id": session, "turn_id": "t", "transcript_path": str(tmp_path / f"{session}.jsonl"),
                "cwd": str(repo), "hook_event_name": name, **fields}

    for i in range(3):
        sid = f"codex-{i}"
        rollout = tmp_path / f"{sid}.jsonl"
        assert hookfast.handle(event(sid, "SessionStart", source="startup"), agent="codex") is None
        hookfast.handle(event(sid, "UserPromptSubmit", prompt="run the tests"), agent="codex")
        hookfast.handle(codex_call(repo, rollout, sid, "c1", "pytest -q",
                                   "/bin/bash: line 1: pytest: command not found\n", 127), agent="codex")
        hookfast.handle(codex_call(repo, rollout, sid, "c2", "python3 -m pytest -q", "4 passed in 0.02s\n", 0),
                        agent="codex")
        hookfast.handle(event(sid, "Stop", stop_hook_active=False), agent="codex")
    out = hookfast.handle(event("codex-later", "SessionStart", source="startup"), agent="codex")
    assert out is not None
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert out["hookSpecificOutput"]["additionalContext"].endswith(
        "- `pytest` is not available here (command not found); use `python3 -m pytest` instead.")
