"""The agents' own files, read in one place per agent: a rollout's tail for a Codex call's exit
code, a transcript's tail for a failed Claude session, found where each agent keeps them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitpilot.agents import claude_files, codex_files, sessionfiles
from gitpilot.optimizer.codex_events import exit_status


def completed(call: str, code: int) -> str:
    return json.dumps({"type": "event_msg", "payload": {"type": "item_completed", "item": {
        "type": "CommandExecution", "id": call, "status": "completed" if code == 0 else "failed",
        "exit_code": code}}}) + "\n"


def test_the_tail_starts_at_a_whole_line(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"first line\nsecond\nthird\n")
    assert sessionfiles.tail(path, 100) == b"first line\nsecond\nthird\n"  # the whole file fits
    assert sessionfiles.tail(path, 12) == b"third\n"  # "econd" is a cut line: dropped
    assert sessionfiles.tail(path, 13) == b"second\nthird\n"  # the window starts at a line: kept
    assert sessionfiles.tail(tmp_path / "missing.jsonl", 10) is None


def test_a_codex_call_is_read_from_the_end_of_a_long_rollout(tmp_path: Path) -> None:
    rollout = tmp_path / "rollout.jsonl"
    filler = json.dumps({"type": "event_msg", "payload": {"type": "agent_reasoning", "text": "x" * 1000}}) + "\n"
    old = completed("call_old", 1)
    rollout.write_text(old + filler * (codex_files.ROLLOUT_TAIL // len(filler) + 5) + completed("call_new", 0)
                       + completed("call_bad", 2))
    assert exit_status(str(rollout), "call_new") == "pass"
    assert exit_status(str(rollout), "call_bad") == "fail"
    # a record older than the window, a call never recorded, no rollout: the status is not known
    assert exit_status(str(rollout), "call_old") == "unknown"
    assert exit_status(str(rollout), "call_none") == "unknown"
    assert exit_status(str(tmp_path / "gone.jsonl"), "call_new") == "unknown"


def test_codex_files_are_under_codex_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.delenv("CODEX_HOME", raising=False)
    assert codex_files.home_dir(home) == home / ".codex"
    assert codex_files.user_config(home) == home / ".codex" / "config.toml"
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    assert codex_files.user_config(home) == tmp_path / "codex" / "config.toml"
    day = tmp_path / "codex" / "sessions" / "2026" / "11" / "30"
    day.mkdir(parents=True)
    root = tmp_path / "repo"
    for name, cwd in (("rollout-a.jsonl", root / "sub"), ("rollout-b.jsonl", tmp_path / "repo-other")):
        (day / name).write_text(json.dumps({"type": "session_meta", "payload": {"id": name, "cwd": str(cwd)}})
                                + "\n")
    assert [meta["id"] for _, meta in codex_files.rollouts(home, root)] == ["rollout-a.jsonl"]


def test_a_claude_transcript_tail_is_read_where_claude_keeps_it(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    home, work = tmp_path / "home", Path("/srv/my repo.git")
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    path = home / ".claude" / "projects" / "-srv-my-repo-git" / "s1.jsonl"
    assert claude_files.transcript(home, work, "s1") == path
    assert claude_files.transcript_tail(home, work, "s1") == ""
    path.parent.mkdir(parents=True)
    path.write_bytes(b"x" * claude_files.TRANSCRIPT_TAIL + b'\n{"error":"rate_limit"}\n')
    assert claude_files.transcript_tail(home, work, "s1") == '{"error":"rate_limit"}\n'
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "conf"))
    assert claude_files.transcript(home, work, "s1") == tmp_path / "conf" / "projects" / "-srv-my-repo-git" / "s1.jsonl"
    assert claude_files.state_file(home) == tmp_path / "conf" / ".claude.json"
