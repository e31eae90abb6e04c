"""``git pilot run``/``resume`` driving the real ``claude`` against a loopback mock Messages API.

Skipped unless a real Claude Code is on PATH (``npm install @anthropic-ai/claude-code``). Only the
server is fake: this checks that the argv git pilot builds (allow-list, session id, resume) is
accepted by the real CLI and that the prompts reach the model as intended.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_agents.mock_api import MockAPI
from fake_agents.pilot import context_repo, pilot, session_record, state_record, tid_of

pytestmark = pytest.mark.skipif(shutil.which("claude") is None, reason="the real claude CLI is not installed")

TASK = "Raise the widget spin speed cap to 12000 rpm in widgets/speed.py"


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[MockAPI]:
    with MockAPI() as mock:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", mock.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-" + "x" * 20)
        for name in ("DISABLE_TELEMETRY", "DISABLE_AUTOUPDATER", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"):
            monkeypatch.setenv(name, "1")
        for name, value in mock.proxy_env().items():
            monkeypatch.setenv(name, value)
        yield mock
    assert mock.foreign == [], f"claude tried to reach hosts other than the loopback mock: {mock.foreign}"


def test_real_claude_runs_and_resumes_a_task_through_git_pilot(
    tmp_path: Path, api: MockAPI, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = context_repo(tmp_path / "repo")
    res = pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.out + res.err
    tid = tid_of(TASK)
    prompts = api.prompts()
    assert any(
        p.startswith(f"git pilot task {tid[:12]}. Read ") and f"capsule-{tid}.md" in p for p in prompts
    )
    session = session_record(repo, tid)["sessions"][-1]
    assert session["exit"] == 0 and session["failure"] is None
    sid = session["session_id"]
    assert f"session: {sid}" in res.out and "done" in res.out

    res = pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.out + res.err
    assert any("Context unchanged since you read it" in p for p in api.prompts()[len(prompts) :])
    assert [s["session_id"] for s in session_record(repo, tid)["sessions"]] == [
        sid
    ]  # -p --resume keeps the id
    assert state_record(repo, tid)["sessions"] == [sid]


def test_real_claude_features_are_detected_from_its_help(tmp_path: Path) -> None:
    from gitpilot.agents import get

    features = get("claude").features()
    for name in ("print-resume", "background", "list-sessions", "stop", "allowed-tools", "session-id"):
        assert features.has(name), name
