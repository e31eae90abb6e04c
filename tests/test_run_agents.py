"""Agent adapters: features from the real CLIs' help, argv for each mode, outputs read back."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import SAMPLES
from fake_agents import install

from gitpilot.agents import base, get
from gitpilot.agents.base import Features, Invocation
from gitpilot.errors import UsageError

ALL = frozenset(
    {
        base.PRINT,
        base.RESUME,
        base.PRINT_RESUME,
        base.BACKGROUND,
        base.BACKGROUND_RESUME,
        base.SESSION_ID,
        base.ALLOWED_TOOLS,
        base.LIST_SESSIONS,
        base.STOP,
        base.JSON_OUTPUT,
    }
)
CLAUDE = Features(True, "claude", "2.1.197 (Claude Code)", ALL)
TOOLS = ("Bash(git pilot check*)", "Bash(git pilot state*)")


def sample(name: str) -> str:
    text = (SAMPLES / "cli-help" / name).read_text()
    return "\n".join(ln for ln in text.splitlines()[1:] if not ln.startswith("[exit "))


def test_features_of_the_installed_versions_come_from_their_own_help(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(tmp_path, monkeypatch)
    claude = get("claude").features()
    assert claude.version == "2.1.197 (Claude Code)"
    assert {
        "print-resume",
        "background-resume",
        "list-sessions",
        "stop",
        "allowed-tools",
        "session-id",
    } <= set(claude.names)
    codex = get("codex").features()
    assert codex.version == "codex-cli 0.171.0"
    assert {"print", "print-resume", "resume", "review", "review-json", "json-output"} <= set(codex.names)
    assert "allowed-tools" not in codex.names and "background" not in codex.names


def test_an_older_claude_without_hidden_stop_or_resume_loses_exactly_those(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(tmp_path, monkeypatch, hide=["--resume", "stop"])
    names = get("claude").features().names
    assert "stop" not in names and "resume" not in names
    assert "print-resume" not in names and "background-resume" not in names
    assert "background" in names and "print" in names


def test_feature_detection_is_cached_per_installed_binary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fakes = install(tmp_path, monkeypatch)
    cache = tmp_path / "cache"
    get("claude").features(cache_dir=cache)
    probes = len(fakes.calls("claude"))
    get("claude").features(cache_dir=cache)
    assert len(fakes.calls("claude")) == probes  # no second round of --help calls
    shim = fakes.bindir / "claude"
    shim.write_text(shim.read_text() + "# upgraded\n")
    get("claude").features(cache_dir=cache)
    assert len(fakes.calls("claude")) > probes


def test_claude_argv_for_each_mode_keeps_the_prompt_out_of_the_variadic_allow_list() -> None:
    claude = get("claude")
    sid = "11111111-2222-4333-8444-555555555555"
    inter = claude.launch("do it", "interactive", CLAUDE, TOOLS, sid)
    assert inter.argv == ("claude", "--allowedTools", *TOOLS, "--session-id", sid, "do it")
    printed = claude.launch("do it", "print", CLAUDE, TOOLS, sid)
    assert printed.argv[:4] == ("claude", "-p", "--output-format", "json") and printed.session_id == sid
    bg = claude.launch("do it", "background", CLAUDE, TOOLS, sid)
    assert bg.argv == ("claude", "--allowedTools", *TOOLS, "--bg", "do it") and bg.session_id is None
    res = claude.resume(sid, "go on", "print", CLAUDE, TOOLS)
    assert res is not None and res.argv[-3:] == ("--resume", sid, "go on") and res.argv[1] == "-p"
    bgres = claude.resume(sid, "go on", "background", CLAUDE, TOOLS)
    assert bgres is not None and bgres.argv[-4:] == ("--bg", "--resume", sid, "go on")
    no_bg = Features(True, "claude", "x", ALL - {base.BACKGROUND_RESUME})
    assert claude.resume(sid, "go on", "background", no_bg, TOOLS) is None


def test_claude_outputs_are_read_back_from_the_captured_samples() -> None:
    claude = get("claude")
    bg = Invocation(("claude", "--bg", "--resume", "x", "m"), "background")
    out = claude.outcome(bg, 0, sample("claude-bg-resume-run.txt"), "")
    assert out.short_id == "ba3743c8" and out.failure is None
    missing = Invocation(("claude", "-p", "--resume", "99999999-2222-4333-8444-555555555555", "m"), "print")
    out = claude.outcome(missing, 1, "", sample("claude-p-resume-missing.txt"))
    assert out.failure == "No conversation found with session ID: 99999999-2222-4333-8444-555555555555"
    noauth = Invocation(("claude", "-p", "hi"), "print", session_id="aaa")
    out = claude.outcome(noauth, 1, sample("claude-p-noauth-json.txt"), "")
    assert (
        out.session_id == "038d291c-25b9-43e6-9801-beeb83731db8"
        and out.failure == "Not logged in · Please run /login"
    )
    jobs = claude.parse_sessions(sample("claude-agents-json-after-bg-resume.txt"))
    assert [(j.short_id, j.session_id, j.state) for j in jobs] == [
        ("ba3743c8", "ba3743c8-f052-4fef-aee5-d7eddcdc7ef2", "failed"),
        ("cb556d29", "cb556d29-3065-450f-9d6b-456a124e6ae3", "blocked"),
    ]
    assert claude.parse_sessions(sample("claude-agents-json-run.txt")) == []


def test_codex_outputs_are_read_back_from_the_captured_samples() -> None:
    codex = get("codex")
    inv = Invocation(("codex", "exec", "--json", "hi"), "print")
    out = codex.outcome(inv, 1, sample("codex-exec-json-mock-usage-limit.txt"), "")
    assert out.session_id == "01a22c6d-6168-7803-bc22-c56926ee576a"
    assert out.failure is not None and out.failure.startswith("You’ve hit your usage limit.")
    ok = codex.outcome(inv, 0, sample("codex-exec-review-json-mock-success.txt"), "")
    assert ok.session_id == "01a22c6e-1dae-7e12-abc2-19e1539a07c3" and ok.failure is None
    # the final answer is codex's last agent_message (what `git pilot run` shows)
    assert ok.answer is not None and ok.answer.startswith("Mock explanation.\n\nReview comment:")
    assert out.answer is None  # a usage limit: no answer, a failure


def test_claude_final_answer_is_the_result_and_an_error_result_is_a_failure_not_an_answer() -> None:
    claude = get("claude")
    inv = Invocation(("claude", "-p", "hi"), "print")
    ok = claude.outcome(inv, 0, sample("claude-p-mock-tools-stream-json.txt"), "")
    assert ok.failure is None and ok.answer is not None and ok.answer.startswith("done")
    noauth = claude.outcome(inv, 1, sample("claude-p-noauth-json.txt"), "")
    assert noauth.answer is None and noauth.failure == "Not logged in · Please run /login"


def test_an_unknown_agent_is_a_usage_error() -> None:
    # grok was the example until issue 15 added its adapter
    with pytest.raises(UsageError, match=r"unknown agent 'gemini' \(known: claude, codex, copilot, grok, pi\)"):
        get("gemini")


def test_run_shows_the_answer_the_adapter_read_and_never_raw_json_events(capsys: pytest.CaptureFixture[str]) -> None:
    from gitpilot.commands.run import render
    from gitpilot.tasks.run import Report

    events = '{"type":"thread.started","thread_id":"t1"}\n{"type":"turn.completed"}\n'
    render(Report("t", "launched", kind="capsule", agent_output=events, answer="Raised the cap to 12000 rpm."))
    shown = capsys.readouterr().out
    assert "Raised the cap to 12000 rpm." in shown and "turn.completed" not in shown
    render(Report("t", "launched", kind="capsule", agent_output=events))
    assert "turn.completed" not in capsys.readouterr().out
    render(Report("t", "launched", kind="capsule", agent_output="plain text answer\n"))
    assert "plain text answer" in capsys.readouterr().out
