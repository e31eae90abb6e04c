"""Failure-loop replays: transcript-shaped fixtures driven through ``git pilot hook claude``.

Each case asserts exactly at which tool call the redirect (``additionalContext``) and the
user notice (``systemMessage``) appear, and that each appears only once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO_ROOT, SAMPLES, run_pilot

from gitpilot.optimizer import hookfast

REPLAYS = REPO_ROOT / "fixtures" / "replays"

# case -> {"redirect": tool_use_id, "notice": tool_use_id}
CASES: dict[str, dict[str, str]] = {
    "repeated-loop": {"redirect": "toolu_loop_06", "notice": "toolu_loop_10"},
    "productive-work": {},
    "changing-failures": {},
    "exploration": {},
    "duplicate-delivery": {"redirect": "toolu_dup_05", "notice": "toolu_dup_09"},
    "ambiguous-status": {"redirect": "toolu_amb_11"},
}


def hook_payloads(transcript: Path, cwd: Path) -> Iterator[dict[str, Any]]:
    """The hook payloads Claude Code would have sent while writing ``transcript``."""
    records = [json.loads(line) for line in transcript.read_text("utf-8").splitlines() if line.strip()]
    session = next(r["sessionId"] for r in records if r.get("sessionId"))
    common = {"session_id": session, "transcript_path": str(transcript), "cwd": str(cwd)}
    uses: dict[str, tuple[str, Any]] = {}
    yield {**common, "hook_event_name": "SessionStart", "source": "startup"}
    prompt_id = ""
    for rec in records:
        msg = rec.get("message")
        if rec.get("type") == "assistant":
            for block in msg["content"]:
                if block.get("type") == "tool_use":
                    uses[block["id"]] = (block["name"], block["input"])
            continue
        if rec.get("type") != "user":
            continue
        if isinstance(msg["content"], str):
            if prompt_id:
                yield {**common, "prompt_id": prompt_id, "hook_event_name": "Stop", "stop_hook_active": False}
            prompt_id = rec["promptId"]
            yield {**common, "prompt_id": prompt_id, "permission_mode": "default",
                   "hook_event_name": "UserPromptSubmit", "prompt": msg["content"]}
            continue
        for block in msg["content"]:
            name, tool_input = uses[block["tool_use_id"]]
            base = {**common, "prompt_id": prompt_id, "permission_mode": "default", "tool_name": name,
                    "tool_input": tool_input, "tool_use_id": block["tool_use_id"]}
            if block.get("is_error"):
                yield {**base, "hook_event_name": "PostToolUseFailure", "error": block["content"],
                       "is_interrupt": False, "duration_ms": 40}
            else:
                yield {**base, "hook_event_name": "PostToolUse", "tool_response": rec["toolUseResult"]}
    if prompt_id:
        yield {**common, "prompt_id": prompt_id, "hook_event_name": "Stop", "stop_hook_active": False}


def outputs_of(pairs: list[tuple[dict[str, Any], dict[str, Any] | None]]) -> dict[str, list[str]]:
    """{"redirect": [tool_use_id, ...], "notice": [...]} from (payload, hook output) pairs."""
    seen: dict[str, list[str]] = {"redirect": [], "notice": []}
    for payload, out in pairs:
        if not out:
            continue
        assert set(out) <= {"hookSpecificOutput", "systemMessage"}, out  # never "continue": false or a block
        tid = payload.get("tool_use_id", payload["hook_event_name"])
        if "hookSpecificOutput" in out:
            assert out["hookSpecificOutput"]["hookEventName"] == payload["hook_event_name"]
            seen["redirect"].append(tid)
        if "systemMessage" in out:
            seen["notice"].append(tid)
    return seen


def expected(case: str) -> dict[str, list[str]]:
    want = CASES[case]
    return {"redirect": [want["redirect"]] if "redirect" in want else [],
            "notice": [want["notice"]] if "notice" in want else []}


@pytest.mark.parametrize("case", sorted(CASES))
def test_replay_through_the_hook_handler(case: str, git_repo: Path) -> None:
    pairs = [(p, hookfast.handle(p)) for p in hook_payloads(REPLAYS / f"{case}.jsonl", git_repo)]
    assert outputs_of(pairs) == expected(case)


@pytest.mark.parametrize("case", ["repeated-loop", "duplicate-delivery"])
def test_replay_through_the_real_git_pilot_process(case: str, git_repo: Path) -> None:
    pairs = []
    for payload in hook_payloads(REPLAYS / f"{case}.jsonl", git_repo):
        if payload.get("tool_name") in ("Read", "Grep"):
            continue  # `optimize enable claude` hooks only Bash and edit tools
        proc = run_pilot("hook", "claude", cwd=git_repo, input=json.dumps(payload).encode())
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == ""
        pairs.append((payload, json.loads(proc.stdout) if proc.stdout.strip() else None))
    assert outputs_of(pairs) == expected(case)
    redirect = next(out for _, out in pairs if out and "hookSpecificOutput" in out)
    text = redirect["hookSpecificOutput"]["additionalContext"]
    assert "`pytest tests/test_calc.py`" in text and "revisit your hypothesis" in text.lower()
    assert len(text) < 400  # one short redirect


def test_the_redirect_names_the_check_and_the_files_edited(git_repo: Path) -> None:
    pairs = [(p, hookfast.handle(p)) for p in hook_payloads(REPLAYS / "repeated-loop.jsonl", git_repo)]
    texts = [out["hookSpecificOutput"]["additionalContext"] for _, out in pairs
             if out and "hookSpecificOutput" in out]
    assert texts == [
        "git pilot: `pytest tests/test_calc.py` has now failed 3 times in a row in this turn with the same "
        "error, with edits to /home/dev/proj/src/calc.py in between. Before editing again, revisit your "
        "hypothesis: re-read the whole failure output and the code it points to, and check the assumption "
        "behind your last edits."
    ]
    notices = [out["systemMessage"] for _, out in pairs if out and "systemMessage" in out]
    assert notices == ["git pilot: the agent has run `pytest tests/test_calc.py` 5 times this turn with "
                       "the same failure, even after a redirect. It may be stuck in a loop; consider "
                       "stepping in."]


def test_real_sample_with_three_identical_failures_across_turns_stays_silent(git_repo: Path) -> None:
    # Claude Code 2.1.197's own transcript: the same failing `ls` in three separate turns.
    sample = SAMPLES / "claude-transcripts-2.1.197" / "22222222-2222-4333-8444-555555555555.jsonl"
    if not sample.exists():
        pytest.skip("the agent-cli samples are not present")
    pairs = [(p, hookfast.handle(p)) for p in hook_payloads(sample, git_repo)]
    failures = [p for p, _ in pairs if p["hook_event_name"] == "PostToolUseFailure"]
    assert len(failures) == 3
    assert outputs_of(pairs) == {"redirect": [], "notice": []}


def test_a_new_turn_resets_the_evidence(git_repo: Path) -> None:
    # The loop case's failures split over two prompts never reach the threshold within a turn.
    payloads = list(hook_payloads(REPLAYS / "repeated-loop.jsonl", git_repo))
    cut = next(i for i, p in enumerate(payloads) if p.get("tool_use_id") == "toolu_loop_05")
    common = {k: payloads[0][k] for k in ("session_id", "transcript_path", "cwd")}
    split = payloads[:cut] + [
        {**common, "prompt_id": "p1", "hook_event_name": "Stop", "stop_hook_active": False},
        {**common, "prompt_id": "p2", "hook_event_name": "UserPromptSubmit", "prompt": "try again"},
    ] + payloads[cut:]
    pairs = [(p, hookfast.handle(p)) for p in split]
    # turn 2 holds loop_06 .. loop_12: 4 failures, so the redirect moves to the third of them
    assert outputs_of(pairs) == {"redirect": ["toolu_loop_10"], "notice": []}
