"""The failure-loop detector's rules: what counts as the same check, the same error, progress."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gitpilot.optimizer import hookfast, loop
from gitpilot.optimizer.events import (
    FAIL,
    PASS,
    PROMPT,
    STOP,
    TOOL,
    Event,
    parse_command,
)


@pytest.mark.parametrize(("command", "checks", "masked"), [
    ("pytest", ["pytest"], False),
    ("python -m pytest tests/x.py -q", ["pytest tests/x.py"], False),
    ("python3 -m pytest ./tests/x.py::test_a -k 'a or b' -p no:cacheprovider", ["pytest tests/x.py"], False),
    ("uv run pytest tests", ["pytest tests"], False),
    ("npm test", ["npm test"], False),
    ("npm run test:unit", ["npm test:unit"], False),
    ("yarn lint", ["yarn lint"], False),
    ("cargo test -p core parser", ["cargo test parser"], False),
    ("go test ./...", ["go test ./..."], False),
    ("make test", ["make test"], False),
    ("make -j4 check", ["make check"], False),
    ("cd backend && FOO=1 timeout 300 pytest -x", ["pytest"], False),
    ("git pilot check --only unit", ["git pilot check --only unit"], False),
    ("pytest -q 2>&1 | tail -20", ["pytest"], True),
    ("set -o pipefail; pytest -q | tail -20", ["pytest"], False),
    ("pytest || true", ["pytest"], True),
    ("pytest; echo exit=$?", ["pytest"], True),
    ("pytest > log.txt 2>&1", ["pytest"], False),
    ("pytest &", ["pytest"], True),
    ("ruff check . && mypy src", ["ruff check", "mypy src"], False),
    ("ls ./nonexistent-dir-xyz", [], False),
    ("echo 'pytest'", [], False),
    ("grep -rn pytest .", [], False),
    ("make deploy", [], False),
    ("npm install", [], False),
])
def test_recognized_checks(command: str, checks: list[str], masked: bool) -> None:
    parsed = parse_command(command)
    assert [inv.check for inv in parsed.checks] == checks
    if checks:
        assert parsed.masked is masked


def test_configured_checks_are_recognized_by_their_command() -> None:
    parsed = parse_command("bash scripts/ci.sh --quick tests", [("ci", "bash scripts/ci.sh --quick")])
    assert [inv.check for inv in parsed.checks] == ["check:ci"]
    assert parse_command("bash scripts/ci.sh", [("ci", "bash scripts/ci.sh --quick")]).checks == []


PYTEST_FAILURE = """Exit code 1
============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-8.0.0
rootdir: /tmp/pytest-of-dev/pytest-{n}/test_x0
tests/test_calc.py .F.                                                   [100%]
    def test_add():
>       assert add(2, 2) == 4
E       assert 5 == 4
tests/test_calc.py:{line}: AssertionError
FAILED tests/test_calc.py::test_add - AssertionError: assert {got} == 4
========================= 1 failed, 2 passed in {secs}s ==========================
"""


def failure_text(n: int = 1, line: int = 7, got: int = 5, secs: str = "0.03") -> str:
    return PYTEST_FAILURE.format(n=n, line=line, got=got, secs=secs)


def test_the_same_failure_has_the_same_signature_across_reruns() -> None:
    first = loop.error_signature(failure_text(n=1, line=7, secs="0.03"))
    assert loop.error_signature(failure_text(n=9, line=12, secs="1.52")) == first
    assert loop.error_signature("\x1b[31m" + failure_text() + "\x1b[0m") == first


def test_a_different_error_has_a_different_signature() -> None:
    assert loop.error_signature(failure_text(got=6)) != loop.error_signature(failure_text(got=5))
    assert loop.error_signature(failure_text().replace("test_add", "test_sub")) != \
        loop.error_signature(failure_text())


# ---------------------------------------------------------------------------------------
# replaying event sequences
# ---------------------------------------------------------------------------------------

def prompt() -> Event:
    return Event("claude", PROMPT, "s")


def stop() -> Event:
    return Event("claude", STOP, "s")


def run(cmd: str, status: str = FAIL, text: str | None = None, tid: str = "") -> Event:
    return Event("claude", TOOL, "s", event_id=tid, tool="Bash", command=cmd, status=status,
                 text=failure_text() if text is None and status == FAIL else (text or "ok"))


def edit(path: str, status: str = PASS) -> Event:
    return Event("claude", TOOL, "s", tool="Edit", paths=[path], status=status)


def fired(events: list[Event], settings: loop.Settings | None = None,
          history: list[int] | None = None) -> list[tuple[int, str]]:
    out = []
    for index, outcome in loop.replay(events, settings or loop.Settings(), streaks=history):
        out += [(index, "redirect")] if outcome.redirect else []
        out += [(index, "notice")] if outcome.notice else []
    return out


def test_a_full_pass_clears_a_narrower_failing_check() -> None:
    one = "pytest tests/test_calc.py"
    events = [prompt(), run(one), edit("src/calc.py"), run(one),
              run("pytest", PASS),  # the whole suite passes: covers tests/test_calc.py
              run(one), run(one), run(one)]
    assert fired(events) == [(7, "redirect")]


def test_a_pass_of_another_target_does_not_clear() -> None:
    events = [prompt(), run("pytest tests/test_calc.py"), run("pytest tests/test_io.py", PASS),
              run("pytest tests/test_calc.py"), run("pytest tests/test_calc.py")]
    assert fired(events) == [(4, "redirect")]


def test_edits_to_new_files_start_a_new_hypothesis() -> None:
    events = [prompt(), run("pytest"), edit("a.py"), run("pytest"), edit("b.py"), run("pytest"),  # moved on
              edit("b.py"), run("pytest"), edit("b.py"), run("pytest")]
    assert fired(events) == [(9, "redirect")]


def test_a_failed_edit_changes_nothing() -> None:
    events = [prompt(), run("pytest"), edit("a.py"), run("pytest"), edit("b.py", status=FAIL), run("pytest")]
    assert fired(events) == [(5, "redirect")]


def test_a_long_turn_without_checks_never_fires() -> None:
    events = [prompt()] + [edit(f"f{i % 7}.py") for i in range(200)] + \
        [run("ls missing", text="ls: cannot access 'missing'") for _ in range(20)] + [stop()]
    assert fired(events) == []


def test_redirect_and_notice_happen_once_per_turn_and_again_in_the_next() -> None:
    turn = [prompt()] + [run("pytest") for _ in range(8)] + [stop()]
    assert fired(turn + turn) == [(3, "redirect"), (5, "notice"), (13, "redirect"), (15, "notice")]


def test_notice_after_is_configurable() -> None:
    events = [prompt()] + [run("pytest") for _ in range(8)]
    assert fired(events, loop.Settings(threshold=2, notice_after=4)) == [(2, "redirect"), (6, "notice")]


def test_threshold_rises_when_productive_turns_need_more_tries() -> None:
    settings = loop.Settings()
    assert loop.learned_threshold([3] * 9, settings) == (3, "default")  # not enough evidence yet
    assert loop.learned_threshold([3] * 10, settings) == (4, "learned from 10 passing turns")
    assert loop.learned_threshold([0, 1] * 5, settings) == (2, "learned from 10 passing turns")
    assert loop.learned_threshold([1] * 9 + [20], settings) == (2, "learned from 10 passing turns")
    assert loop.learned_threshold([20] * 10, settings)[0] == loop.MAX_THRESHOLD


def hook(repo: Path, event: str, tid: str = "", **fields: Any) -> dict[str, Any] | None:
    payload = {"session_id": "learned", "cwd": str(repo), "prompt_id": "p", "hook_event_name": event,
               **fields}
    if tid:
        payload["tool_use_id"] = tid
    return hookfast.handle(payload)


def failing(repo: Path, tid: str) -> dict[str, Any] | None:
    return hook(repo, "PostToolUseFailure", tid, tool_name="Bash", tool_input={"command": "pytest -q"},
                error=failure_text(), is_interrupt=False)


def passing(repo: Path, tid: str) -> dict[str, Any] | None:
    return hook(repo, "PostToolUse", tid, tool_name="Bash", tool_input={"command": "pytest -q"},
                tool_response={"stdout": "3 passed", "stderr": "", "interrupted": False})


@pytest.mark.parametrize(("tries", "fires_at"), [(3, 4), (1, 2)])
def test_the_repository_history_sets_the_threshold(git_repo: Path, tries: int, fires_at: int) -> None:
    for t in range(10):  # ten productive turns, each passing after `tries` same failures
        hook(git_repo, "UserPromptSubmit", prompt="work")
        for i in range(tries):
            failing(git_repo, f"t{t}-f{i}")
        passing(git_repo, f"t{t}-pass")
        hook(git_repo, "Stop")
    history = (git_repo / ".git" / "pilot" / "loops" / "turns.jsonl").read_text().splitlines()
    assert [json.loads(line)["streak"] for line in history] == [tries] * 10
    hook(git_repo, "UserPromptSubmit", prompt="more work")
    outs = [failing(git_repo, f"new-{i}") for i in range(fires_at)]
    assert [bool(o) for o in outs] == [False] * (fires_at - 1) + [True]
    assert f"failed {fires_at} times" in str(outs[-1])


def test_a_turn_that_ends_failing_is_not_a_productive_turn(git_repo: Path) -> None:
    hook(git_repo, "UserPromptSubmit", prompt="work")
    failing(git_repo, "a")
    hook(git_repo, "Stop")
    assert not (git_repo / ".git" / "pilot" / "loops" / "turns.jsonl").exists()


def test_the_turn_history_is_kept_bounded(git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hookfast, "HISTORY_MAX_BYTES", 2000)
    monkeypatch.setattr(hookfast, "HISTORY_RECORDS", 10)
    for t in range(40):
        hook(git_repo, "UserPromptSubmit", prompt="work")
        passing(git_repo, f"t{t}")
        hook(git_repo, "Stop")
    lines = (git_repo / ".git" / "pilot" / "loops" / "turns.jsonl").read_text().splitlines()
    assert 10 <= len(lines) < 40  # cut back to the last 10 whenever it passed 2000 bytes
    assert len("\n".join(lines)) <= 2000
    assert all(json.loads(line)["streak"] == 0 for line in lines)
