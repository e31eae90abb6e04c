"""``git pilot run --agent copilot|pi`` driving the *real* CLIs against the loopback mock.

Each test skips unless its CLI is on PATH (``npm install @github/copilot@1.0.102
@mariozechner/pi-coding-agent@0.73.1``; CI installs neither). Only the model is fake
(``fake_agents.mock_openai``, Chat Completions): Copilot reaches it as a BYOK provider
(``COPILOT_PROVIDER_BASE_URL``, ``COPILOT_MODEL``), Pi as a custom provider in
``$HOME/.pi/agent/models.json``. The mock is also their proxy: a request for any other host is
refused and listed (Copilot asks api.github.com for things it does not need here; that is
tolerated, nothing else is). This checks that the argv git pilot builds is accepted, that the
capsule prompt reaches the model, that the session id and answer are read back from what the
real CLI prints, that resume continues the same session, and Copilot's permission flags.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_agents.mock_openai import MockOpenAI, Shell
from fake_agents.pilot import context_repo, pilot, session_record, tid_of

TASK = "Raise the widget spin speed cap to 12000 rpm in widgets/speed.py"
# Copilot asks GitHub's API for its own settings; refused by the mock-proxy, and not a model call.
COPILOT_OWN = ("CONNECT api.github.com:443",)


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[MockOpenAI]:
    with MockOpenAI(reply="I raised the cap.") as mock:
        for name, value in mock.env().items():
            monkeypatch.setenv(name, value)
        for name in ("OPENAI_API_KEY", "GITHUB_TOKEN", "GH_TOKEN", "COPILOT_GITHUB_TOKEN"):
            monkeypatch.delenv(name, raising=False)
        yield mock
    others = [f for f in mock.foreign if f not in COPILOT_OWN]
    assert others == [], f"the CLI tried to reach hosts other than the loopback mock: {others}"


def stub_git_pilot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``git-pilot`` on PATH that records what the session ran (the session's git pilot)."""
    bindir = tmp_path / "stub-bin"
    bindir.mkdir()
    log = tmp_path / "git-pilot-calls.txt"
    stub = bindir / "git-pilot"
    stub.write_text(f'#!/bin/sh\necho "$*" >> {log}\necho "PASS unit"\n')
    stub.chmod(0o755)
    import os

    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return log


@pytest.mark.skipif(shutil.which("copilot") is None, reason="the real copilot CLI is not installed")
def test_real_copilot_runs_resumes_and_keeps_run_out_of_the_session(
    tmp_path: Path, api: MockOpenAI, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COPILOT_PROVIDER_BASE_URL", api.url)
    monkeypatch.setenv("COPILOT_PROVIDER_API_KEY", "sk-mock-" + "x" * 20)
    monkeypatch.setenv("COPILOT_MODEL", "gpt-4.1")
    log = stub_git_pilot(tmp_path, monkeypatch)
    repo = context_repo(tmp_path / "repo")
    api.script = [Shell("git pilot check"), Shell("git pilot run another task"), "I raised the cap."]
    res = pilot(repo, "run", "--agent", "copilot", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.out + res.err
    tid = tid_of(TASK)
    assert any(f"git pilot task {tid[:12]}. Read " in p for p in api.prompts())  # Copilot prefixes the date
    session = session_record(repo, tid)["sessions"][-1]
    assert session["exit"] == 0 and session["failure"] is None
    sid = session["session_id"]
    assert f"session: {sid}" in res.out and "I raised the cap." in res.out
    assert log.read_text().splitlines() == ["check"]  # check ran; run was denied
    results = api.tool_results()
    assert any("shell(git pilot run:*)" in r for r in results)

    api.script = ["Continuing."]
    res = pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.out + res.err
    assert session_record(repo, tid)["launches"][-1]["argv"][1:2] == ["-p"]
    assert f"--resume={sid}" in session_record(repo, tid)["launches"][-1]["argv"]
    assert [s["session_id"] for s in session_record(repo, tid)["sessions"]] == [sid]
    assert "Context unchanged since you read it" in api.prompts()[-1]


@pytest.mark.skipif(shutil.which("pi") is None, reason="the real pi CLI is not installed")
def test_real_pi_runs_and_resumes_the_same_session(
    tmp_path: Path, api: MockOpenAI, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    agent_dir = Path(os.environ["HOME"]) / ".pi" / "agent"
    agent_dir.mkdir(parents=True, exist_ok=True)
    (agent_dir / "models.json").write_text(json.dumps({"providers": {"mock": {
        "baseUrl": api.url, "api": "openai-completions", "apiKey": "MOCK_OPENAI_KEY",
        "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
        "models": [{"id": "mock-model"}]}}}))
    (agent_dir / "settings.json").write_text(json.dumps({"defaultProvider": "mock", "defaultModel": "mock-model"}))
    monkeypatch.setenv("PI_OFFLINE", "1")
    log = stub_git_pilot(tmp_path, monkeypatch)
    repo = context_repo(tmp_path / "repo")
    api.script = [Shell("git pilot check"), "I raised the cap."]
    res = pilot(repo, "run", "--agent", "pi", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.out + res.err
    tid = tid_of(TASK)
    assert any(f"git pilot task {tid[:12]}. Read " in p for p in api.prompts())  # Copilot prefixes the date
    sid = session_record(repo, tid)["sessions"][-1]["session_id"]
    assert f"session: {sid}" in res.out and "I raised the cap." in res.out
    assert log.read_text().splitlines() == ["check"]
    [session_file] = list((agent_dir / "sessions").rglob(f"*_{sid}.jsonl"))

    api.script = ["Continuing."]
    res = pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.out + res.err
    argv = session_record(repo, tid)["launches"][-1]["argv"]
    assert argv[argv.index("--session") + 1] == sid
    assert [s["session_id"] for s in session_record(repo, tid)["sessions"]] == [sid]
    assert "Continuing." in session_file.read_text()  # the same session file grew
