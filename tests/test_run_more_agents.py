"""``git pilot run --agent copilot|pi|grok``: the exact command, run and resume end to end, the
permission flags, failures and usage limits, through fakes that print the real CLIs' captured
output (GitHub Copilot CLI 1.0.102, Pi 0.73.1; Grok from its documentation, see
``fixtures/agent-cli-samples/grok-docs``)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from conftest import SAMPLES
from fake_agents import install
from fake_agents.pilot import context_repo, pilot, session_record, state_record, tid_of

from gitpilot.agents import get
from gitpilot.agents.base import Invocation

TASK = "Raise the widget spin speed cap to 12000 rpm in widgets/speed.py"
AGENTS = ("copilot", "pi", "grok")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return context_repo(tmp_path / "repo")


def would_run(out: str) -> list[str]:
    line = next(ln for ln in out.split("\nwould run: ", 1)[1:])
    return shlex.split(line.strip())


def test_features_come_from_each_installed_help(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install(tmp_path, monkeypatch, agents=AGENTS)
    copilot = get("copilot").features()
    assert copilot.version == "GitHub Copilot CLI 1.0.102"
    assert set(copilot.names) == {"print", "resume", "print-resume", "session-id", "allowed-tools",
                                  "denied-tools", "json-output"}
    pi = get("pi").features()
    assert pi.version == "0.73.1"
    assert set(pi.names) == {"print", "resume", "print-resume", "allowed-tools", "json-output"}
    grok = get("grok").features()
    assert {"print", "resume", "print-resume", "session-id", "json-output"} <= set(grok.names)
    assert "allowed-tools" not in grok.names


def test_an_older_copilot_without_deny_tool_gets_no_deny_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    install(tmp_path, monkeypatch, agents=AGENTS, hide=["--deny-tool"])
    res = pilot(repo, "run", "--agent", "copilot", "--dry-run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    argv = would_run(res.out)
    assert "--allow-tool=shell(git pilot:*)" in argv
    assert not any(a.startswith("--deny-tool") for a in argv)


@pytest.mark.parametrize("agent", AGENTS)
def test_dry_run_shows_the_exact_command_with_the_capsule(
    agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fakes = install(tmp_path, monkeypatch, agents=AGENTS)
    res = pilot(repo, "run", "--agent", agent, "--dry-run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.out + res.err
    tid = tid_of(TASK)
    capsule = repo / ".git" / "pilot" / f"capsule-{tid}.md"
    assert f"capsule: {capsule}" in res.out and capsule.is_file()
    argv = would_run(res.out)
    assert argv[0] == str(fakes.bindir / agent)
    prompt = next(a for a in argv if a.startswith(f"git pilot task {tid[:12]}. Read {capsule} first"))
    assert "run checks only through `git pilot check`" in prompt
    if agent == "copilot":
        assert argv[1:3] == ["-p", prompt] and argv[3:5] == ["--output-format", "json"]
        assert "--allow-tool=shell(git pilot:*)" in argv
        denied = {a for a in argv if a.startswith("--deny-tool=")}
        assert {"--deny-tool=shell(git pilot run:*)", "--deny-tool=shell(git pilot resume:*)",
                "--deny-tool=shell(git pilot stop:*)"} <= denied
        assert not denied & {f"--deny-tool=shell(git pilot {c}:*)" for c in ("check", "state", "codex",
                                                                              "review-budget")}
        assert any(a.startswith("--session-id=") for a in argv)
    elif agent == "pi":
        assert argv[1:] == ["--mode", "json", "-p", "--tools", "read,bash,edit,write", prompt]
    else:
        assert argv[1:6] == ["--no-auto-update", "-p", prompt, "--output-format", "json"]
        assert argv[6] == "--session-id"
    assert fakes.argvs(agent) == []  # nothing was started


@pytest.mark.parametrize("agent", AGENTS)
def test_run_then_resume_end_to_end(agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, repo: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    fakes = install(tmp_path, monkeypatch, agents=AGENTS)
    first = pilot(repo, "run", "--agent", agent, TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert first.code == 0, first.out + first.err
    tid = tid_of(TASK)
    session = session_record(repo, tid)["sessions"][-1]
    sid = session["session_id"]
    assert session["agent"] == agent and session["exit"] == 0 and session["failure"] is None
    assert sid in fakes.state()["sessions"]  # the id the CLI itself used, read back from its output
    assert f"session: {sid}" in first.out
    answer = {"copilot": "The check fails; nothing fixed yet.", "pi": "The check fails; I fixed nothing yet.",
              "grok": "done"}[agent]
    assert answer in first.out.splitlines()
    call = fakes.calls(agent)[-1]
    assert call["env"]["GIT_PILOT_TASK"] == tid and call["cwd"] == str(repo)

    second = pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)  # the task's agent again
    assert second.code == 0, second.out + second.err
    assert "context unchanged: continuation" in second.out
    resume_argv = fakes.argvs(agent)[-1]
    expected = {"copilot": f"--resume={sid}", "pi": "--session", "grok": "--resume"}[agent]
    assert expected in resume_argv
    if agent != "copilot":
        assert resume_argv[resume_argv.index(expected) + 1] == sid
    messages = fakes.state()["sessions"][sid]["messages"]
    assert len(messages) == 2 and "Context unchanged since you read it" in messages[1]
    assert [s["session_id"] for s in session_record(repo, tid)["sessions"]] == [sid]  # same session kept
    assert state_record(repo, tid)["sessions"] == [sid]


@pytest.mark.parametrize("agent", ["copilot", "pi"])
def test_a_session_the_cli_no_longer_has_starts_a_new_one(
    agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fakes = install(tmp_path, monkeypatch, agents=AGENTS)
    assert pilot(repo, "run", "--agent", agent, TASK, monkeypatch=monkeypatch, capsys=capsys).code == 0
    tid = tid_of(TASK)
    old = session_record(repo, tid)["sessions"][-1]["session_id"]
    fakes.save_state({"sessions": {}, "jobs": []})  # the CLI lost its sessions

    res = pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.out + res.err
    assert f"{agent} has no session {old}: starting a new session" in res.out
    sessions = session_record(repo, tid)["sessions"]
    said = {"copilot": f"No session, task, or name matched '{old}'.", "pi": f"No session found matching '{old}'"}
    assert sessions[-2]["failure"] == said[agent]  # the CLI's own words, on the lost session
    assert sessions[-1]["session_id"] != old and sessions[-1]["exit"] == 0


def test_pi_json_mode_exits_0_on_a_usage_limit_and_git_pilot_still_sees_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fakes = install(tmp_path, monkeypatch, agents=AGENTS)
    fakes.rule("pi", ["-p"], sample="cli-help/pi-p-json-mock-429-quota.txt")
    res = pilot(repo, "run", "--agent", "pi", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 1  # pi itself exited 0
    assert "quota exhausted; reset time unavailable for automatic scheduling" in res.out
    tid = tid_of(TASK)
    session = session_record(repo, tid)["sessions"][-1]
    assert session["failure"] == "429 You exceeded your current quota, please check your plan and billing details."
    assert state_record(repo, tid)["status"] in ("blocked", "waiting-quota")


def test_copilot_usage_limit_is_classified_as_quota(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fakes = install(tmp_path, monkeypatch, agents=AGENTS)
    fakes.rule("copilot", ["-p"], sample="cli-help/copilot-p-json-mock-429-quota.txt")
    res = pilot(repo, "run", "--agent", "copilot", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 1
    assert "quota exhausted; reset time unavailable for automatic scheduling" in res.out
    failure = session_record(repo, tid_of(TASK))["sessions"][-1]["failure"]
    assert failure.startswith("Failed to get response from the AI model; retried 5 times")


def test_copilot_outputs_read_back_from_the_captures() -> None:
    adapter = get("copilot")
    inv = Invocation(("copilot", "-p", "x"), "print", session_id=None)
    run = _sample("copilot-p-json-mock-run.txt")
    done = adapter.outcome(inv, 0, run, "")
    assert done.session_id == "0cb916db-26aa-40f2-86b5-1ba81b225fd2"
    assert done.answer == "The check fails; nothing fixed yet." and done.failure is None
    denied = adapter.outcome(inv, 0, _sample("copilot-p-json-mock-denied.txt"), "")
    assert denied.failure is None and denied.answer == "tried"  # a denied tool is not a failed session
    text = adapter.outcome(inv, 0, _sample("copilot-p-silent-mock-run.txt"), "")
    assert text.answer == "Plain answer."


def test_pi_outputs_read_back_from_the_captures() -> None:
    adapter = get("pi")
    inv = Invocation(("pi", "-p", "x"), "print")
    done = adapter.outcome(inv, 0, _sample("pi-p-json-mock-run.txt"), "")
    assert done.session_id == "01a23437-6f1b-7329-a9c2-3b5c14513424"
    assert done.answer == "The check fails; I fixed nothing yet." and done.failure is None
    resumed = adapter.outcome(inv, 0, _sample("pi-p-json-mock-resume.txt"), "")
    assert resumed.session_id == done.session_id and resumed.answer == "Continuing: done."
    stdout, stderr = _split("pi-p-text-mock-429-quota.txt")
    text = adapter.outcome(inv, 1, stdout, stderr)
    assert text.failure == "429 You exceeded your current quota, please check your plan and billing details."


def test_an_interactive_pi_session_id_is_read_from_its_session_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fakes = install(tmp_path, monkeypatch, agents=AGENTS)
    (repo / ".gitpilot.toml").write_text('[agent]\nmode = "interactive"\n')
    res = pilot(repo, "run", "--agent", "pi", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.out + res.err
    [sid] = fakes.state()["sessions"]
    assert session_record(repo, tid_of(TASK))["sessions"][-1]["session_id"] == sid
    argv = fakes.argvs("pi")[-1]
    assert argv[:2] == ["--tools", "read,bash,edit,write"] and "-p" not in argv and "--mode" not in argv


def test_every_new_capture_says_which_cli_version_printed_it() -> None:
    for path in sorted((SAMPLES / "cli-help").glob("*.txt")):
        if path.name.startswith(("copilot-p-", "pi-p-")):
            first = path.read_text().splitlines()[0]
            version = "GitHub Copilot CLI 1.0.102" if path.name.startswith("copilot") else "pi 0.73.1"
            assert first.startswith("$ ") and f"# printed by {version}" in first, path.name
    for path in sorted((SAMPLES / "grok-docs").glob("*.txt")):
        assert path.read_text().startswith("# NOT printed by grok"), path.name
    copilot_events = next((SAMPLES / "copilot-session-state-1.0.102").rglob("events.jsonl"))
    assert json.loads(copilot_events.read_text().splitlines()[0])["data"]["copilotVersion"] == "1.0.102"
    assert list((SAMPLES / "pi-sessions-0.73.1").rglob("*.jsonl"))


def _sample(name: str) -> str:
    return _split(name)[0]


def _split(name: str) -> tuple[str, str]:
    import fake_agents.fake_agent as fa

    out, err, _code = fa.read_sample(f"cli-help/{name}")
    return out, err
