"""``git pilot`` driving the real ``codex`` against a loopback mock of the OpenAI Responses API.

Skipped unless a real Codex CLI is on PATH (``npm install @openai/codex``). Only the server is
fake (``fake_agents.mock_openai``): this checks that each argv git pilot builds for codex (``run
--agent codex`` and its resume, ``codex review``, ``codex plan``) is accepted by the real CLI,
that the prompt reaches the model, and that git pilot reads back what the real CLI prints (the
thread id, the review text and its findings, the plan).

Hermetic: HOME and CODEX_HOME are temporary; codex is pointed at the mock through a model
provider in ``$CODEX_HOME/config.toml`` (it ignores ``OPENAI_BASE_URL``), and the mock is also
its HTTP(S) proxy, so a request for any other host is refused and fails the test.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import git, make_repo
from fake_agents.mock_openai import MockOpenAI, finding, review_json, usage_limit
from fake_agents.pilot import context_repo, pilot, session_record, state_record, task_files, tid_of
from fake_agents.pilot import start_task as _start_task

pytestmark = pytest.mark.skipif(shutil.which("codex") is None, reason="the real codex CLI is not installed")

TASK = "Raise the widget spin speed cap to 12000 rpm in widgets/speed.py"
PLAN = "1. Change SPEED in widgets/speed.py to 12000.\n2. Run the checks with `git pilot check`."


@pytest.fixture
def api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MockOpenAI]:
    with MockOpenAI(reply=PLAN) as mock:
        mock.use_for_codex(tmp_path / "codex-home", monkeypatch)
        yield mock
    assert mock.foreign == [], f"codex tried to reach hosts other than the loopback mock: {mock.foreign}"


def rollouts(tmp_path: Path) -> list[Path]:
    """The session files the real codex wrote (``$CODEX_HOME/sessions/Y/M/D/rollout-*-<id>.jsonl``)."""
    return sorted((tmp_path / "codex-home" / "sessions").rglob("rollout-*.jsonl"))


def start_task(repo: Path, monkeypatch: pytest.MonkeyPatch, text: str = TASK) -> str:
    return _start_task(repo, monkeypatch, text)


def test_real_codex_features_are_detected_from_its_help(api: MockOpenAI) -> None:
    from gitpilot.agents import get

    features = get("codex").features()
    assert features.version is not None and features.version.startswith("codex-cli ")
    for name in ("print", "print-resume", "resume", "review", "review-json", "json-output"):
        assert features.has(name), name
    assert not features.has("allowed-tools") and not features.has("background")
    assert api.model_requests() == []  # probing the help calls no model


def test_real_codex_runs_and_resumes_a_task_through_git_pilot(
    tmp_path: Path, api: MockOpenAI, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = context_repo(tmp_path / "repo")
    res = pilot(repo, "run", "--agent", "codex", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.out + res.err
    tid = tid_of(TASK)
    prompts = api.prompts()
    assert any(p.startswith(f"git pilot task {tid[:12]}. Read ") and f"capsule-{tid}.md" in p for p in prompts)
    session = session_record(repo, tid)["sessions"][-1]
    assert session["agent"] == "codex" and session["exit"] == 0 and session["failure"] is None
    sid = session["session_id"]
    [rollout] = rollouts(tmp_path)
    assert rollout.name.endswith(f"-{sid}.jsonl")  # the thread id codex printed is its real session id
    assert f"session: {sid}" in res.out
    launched = session_record(repo, tid)["launches"][-1]["argv"]
    assert launched[1:3] == ["exec", "--json"]

    res = pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)  # the task's agent: codex
    assert res.code == 0, res.out + res.err
    later = api.prompts()[len(prompts):]
    assert any("Context unchanged since you read it" in p for p in later)
    assert TASK not in "".join(later[-1:])  # a continuation, not the task again
    assert session_record(repo, tid)["launches"][-1]["argv"][1:4] == ["exec", "resume", "--json"]
    assert [s["session_id"] for s in session_record(repo, tid)["sessions"]] == [sid]  # exec resume keeps it
    assert len(rollouts(tmp_path)) == 1
    assert state_record(repo, tid)["sessions"] == [sid]


def test_real_codex_final_answer_is_shown_after_a_run(
    tmp_path: Path, api: MockOpenAI, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    api.reply = "I raised the cap to 12000 rpm."
    repo = context_repo(tmp_path / "repo")
    res = pilot(repo, "run", "--agent", "codex", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.out + res.err
    assert "I raised the cap to 12000 rpm." in res.out  # as `git pilot run` shows claude's result


def test_real_codex_review_rounds_read_the_findings_and_stop_when_clean(
    tmp_path: Path, api: MockOpenAI, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {"README.md": "# demo\n", **{f"src/{n}.py": f"{n.upper()} = 1\n" for n in ("a", "b", "c", "d")}}
    repo = make_repo(tmp_path / "repo", files)
    git(repo, "checkout", "-q", "-b", "feature")
    tid = start_task(repo, monkeypatch)
    for name in ("a", "b", "c", "d"):  # a normal change: two rounds
        (repo / f"src/{name}.py").write_text(f"{name.upper()} = 2\n")
    path = str((repo / "src/a.py").resolve())
    api.review = review_json([finding("A is off by one", "A should be 3.", path, 1)], "One problem.")

    first = pilot(repo, "codex", "review", monkeypatch=monkeypatch, capsys=capsys)
    assert first.code == 0, first.out + first.err
    assert any(p.startswith("Review the code changes against the base branch 'main'") for p in api.prompts())
    assert "codex review round 1 of 2 (normal change against main): 1 finding(s)" in first.out
    assert f"- [P1] A is off by one — {path}:1-1" in first.out
    assert "OpenAI Codex v" not in first.out  # the banner stays in the log
    assert "1 round(s) left" in first.out

    (repo / "src/a.py").write_text("A = 3\n")
    api.review = review_json([], "The change is correct.")
    second = pilot(repo, "codex", "review", monkeypatch=monkeypatch, capsys=capsys)
    assert second.code == 0, second.out + second.err
    assert "round 2 of 2 (normal change against main): 0 finding(s)" in second.out
    assert "The change is correct." in second.out
    assert "round 2 found nothing: review done, stopping early" in second.out
    assert state_record(repo, tid)["review_rounds_used"] == 2
    assert len(api.model_requests()) == 2  # one model call per round


def test_real_codex_plans_a_task_read_only_once(
    tmp_path: Path, api: MockOpenAI, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "# demo\n", ".gitpilot.toml": "[planner]\nenabled = true\n"})
    tid = start_task(repo, monkeypatch)
    res = pilot(repo, "codex", "plan", monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.out + res.err
    assert any(p.startswith("Plan the task below") and TASK in p for p in api.prompts())
    [body] = api.model_requests()
    assert "read-only" in str(body)  # --sandbox read-only reached the session's permissions
    assert task_files(repo, tid)["plan.md"].decode() == PLAN + "\n"
    assert PLAN.splitlines()[0] in res.out
    assert state_record(repo, tid)["planned"] is True

    again = pilot(repo, "codex", "plan", monkeypatch=monkeypatch, capsys=capsys)
    assert again.code == 0 and "already planned" in again.out
    assert len(api.model_requests()) == 1


def test_real_codex_usage_limit_stops_the_task_until_the_reset_codex_printed(
    tmp_path: Path, api: MockOpenAI, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    resets = (int(time.time()) // 60 + 90) * 60  # a whole minute: codex prints hours and minutes only
    api.error = usage_limit(resets)
    repo = context_repo(tmp_path / "repo")
    res = pilot(repo, "run", "--agent", "codex", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 1, res.out + res.err
    reset = time.strftime("%Y-%m-%dT%H:%M", time.gmtime(resets))  # codex runs with TZ=UTC here
    assert f"quota exhausted; the limit resets at {reset}" in res.out
    tid = tid_of(TASK)
    session = session_record(repo, tid)["sessions"][-1]
    [rollout] = rollouts(tmp_path)
    assert rollout.name.endswith(f"-{session['session_id']}.jsonl")
    assert session["failure"].startswith("You’ve hit your usage limit.")
    assert state_record(repo, tid)["status"] == "blocked"
