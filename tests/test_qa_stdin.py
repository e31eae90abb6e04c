"""Commands that read stdin: ``quota classify`` (agent output) and ``hook claude`` (Claude Code's
hook JSON). Empty, not JSON, binary, the wrong shape or large: a clear answer, never a traceback;
the agent hook never blocks the agent (exit 0) and never prints anything but valid JSON.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from conftest import make_repo, run_pilot
from test_qa_support import assert_no_crash, standard_files

ODD_INPUTS: dict[str, bytes] = {
    "empty": b"",
    "whitespace": b"  \n\t\n",
    "not json": b"this is not json {",
    "binary": bytes(range(256)) * 64,
    "json null": b"null",
    "json list": b"[1, 2, 3]",
    "json string": b'"hello"',
    "number event": b'{"hook_event_name": 5, "session_id": [], "cwd": 7}',
    "wrong shapes": (b'{"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": "x", '
                     b'"tool_response": [1], "session_id": "s", "transcript_path": 3}'),
    "paths that leave": (b'{"hook_event_name": "SessionStart", "session_id": "../../x", '
                         b'"transcript_path": "/etc/shadow", "cwd": "/nonexistent"}'),
    "truncated": b'{"hook_event_name": "Stop", "session_id": "abc", "transcript_path": "/tm',
    "invalid utf-8": b'{"hook_event_name": "UserPromptSubmit", "prompt": "caf\xe9 \xff\xfe"}',
}
EVENTS = ("", "SessionStart", "PostToolUse", "Stop")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = make_repo(tmp_path / "repo", standard_files())
    assert run_pilot("optimize", "enable", "claude", cwd=r).returncode == 0
    return r


def test_hook_claude_never_blocks_the_agent_on_odd_input(repo: Path, tmp_path: Path) -> None:
    settings = (repo / ".claude" / "settings.local.json").read_bytes()
    outside = tmp_path / "not a repo"
    outside.mkdir()
    for cwd, inputs in ((repo, sorted(ODD_INPUTS)), (outside, ["empty", "binary", "paths that leave"])):
        for name in inputs:
            data = ODD_INPUTS[name]
            for event in EVENTS:
                args = ("hook", "claude", event) if event else ("hook", "claude")
                res = run_pilot(*args, cwd=cwd, input=data, env={"GIT_CEILING_DIRECTORIES": str(tmp_path)})
                assert res.returncode == 0, (name, event, res.stderr)
                assert "Traceback" not in res.stderr, (name, event, res.stderr)
                if res.stdout.strip():
                    json.loads(res.stdout)  # whatever it says to Claude is valid JSON
    assert (repo / ".claude" / "settings.local.json").read_bytes() == settings


@pytest.mark.parametrize("name", sorted(ODD_INPUTS))
def test_quota_classify_answers_unknown_for_odd_input(repo: Path, name: str) -> None:
    res = run_pilot("quota", "classify", "--json", cwd=repo, input=ODD_INPUTS[name])
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    verdict = json.loads(res.stdout)
    assert verdict["kind"] == "unknown" and verdict["reset_at"] is None
    text = run_pilot("quota", "classify", cwd=repo, input=ODD_INPUTS[name])
    assert text.stdout.startswith("kind: unknown\nreset: none")


def test_quota_classify_finds_a_stop_at_the_end_of_a_long_output(repo: Path) -> None:
    noise = b"".join(b"line %d of ordinary agent output, nothing to see\n" % i for i in range(40000))  # ~2 MB
    data = noise + b"You've hit your usage limit \xe2\x80\x94 resets 5pm (UTC)\n"
    started = time.monotonic()
    res = run_pilot("quota", "classify", "--json", cwd=repo, input=data, timeout=60)
    assert time.monotonic() - started < 20
    verdict = json.loads(res.stdout)
    assert verdict["kind"] == "quota" and verdict["reset_at"].endswith("T17:00:00Z")


def test_quota_classify_bad_options_are_usage_errors(repo: Path) -> None:
    res = run_pilot("quota", "classify", "--tz", "Mars/Olympus", cwd=repo, input=b"")
    assert res.returncode == 2 and res.stderr.strip() == "git pilot: unknown time zone: Mars/Olympus"
    res = run_pilot("quota", "classify", cwd=repo, input=b"", env={"GIT_PILOT_NOW": "yesterday"})
    assert res.returncode == 2 and res.stderr.startswith("git pilot: bad GIT_PILOT_NOW:")
    assert len(res.stderr.strip().splitlines()) == 1


def test_git_hook_events_with_odd_arguments_and_stdin(repo: Path) -> None:
    for args, data in ((("hook", "nosuch"), b""), (("hook",), b"")):
        res = run_pilot(*args, cwd=repo, input=data)
        assert res.returncode == 2 and "Error:" in res.stderr and "Traceback" not in res.stderr
    for event in ("post-checkout", "post-commit", "post-merge", "post-rewrite"):
        for extra in ((), ("not-a-sha", "x", "y"), ("0" * 40, "1" * 40, "1")):
            res = run_pilot("hook", event, *extra, cwd=repo, input=ODD_INPUTS["binary"],
                            env={"GIT_PILOT_HOOKS_SYNC": "1"})
            assert res.returncode == 0 and not res.stderr, (event, extra, res.stderr)
    # pre-push reads "<local ref> <sha> <remote ref> <sha>" lines; anything else is let through.
    for name, data in ODD_INPUTS.items():
        res = run_pilot("hook", "pre-push", "origin", "/nowhere", cwd=repo, input=data)
        assert_no_crash(res)
        assert res.returncode == 0, (name, res.stderr)
    log = repo / ".git" / "pilot" / "logs" / "hooks.log"
    assert not log.exists() or "Traceback" not in log.read_text()
