"""``git pilot run`` on a new task: capsule, launch prompt, allow-list, environment, records."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from fake_agents import FakeAgents, install
from fake_agents.pilot import context_repo, pilot, session_record, state_record, task_files, tid_of

TASK = "Raise the widget spin speed cap to 12000 rpm in widgets/speed.py"
ALLOW = [
    "Bash(git pilot check*)",
    "Bash(git pilot codex plan*)",
    "Bash(git pilot codex review*)",
    "Bash(git pilot review-budget*)",
    "Bash(git pilot state*)",
]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return context_repo(tmp_path / "repo")


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeAgents:
    return install(tmp_path, monkeypatch)


def _launch(fakes: FakeAgents) -> list[str]:
    runs = [a for a in fakes.argvs("claude") if a[:1] != ["agents"]]
    assert len(runs) == 1, runs
    return runs[0]


def test_launch_sends_a_short_prompt_pointing_at_the_capsule_with_the_allow_list(
    repo: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    res = pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.err
    tid = tid_of(TASK)
    argv = _launch(fakes)
    assert argv[:3] == ["-p", "--output-format", "json"]  # not a terminal: print mode
    i = argv.index("--allowedTools")
    assert argv[i + 1 : i + 6] == ALLOW
    assert argv[i + 6] == "--session-id"  # the variadic list is closed by another option
    prompt = argv[-1]
    capsule = repo / ".git" / "pilot" / f"capsule-{tid}.md"
    assert str(capsule) in prompt and capsule.is_file()
    assert "git pilot check" in prompt and "git pilot state" in prompt and "full log" in prompt
    assert TASK not in prompt  # the task lives in the capsule, not in the prompt
    assert len(prompt.encode()) < 1000
    # Nothing beyond the five patterns: run, stop and resume stay out of the session.
    assert not any("pilot run" in a or "pilot stop" in a or "pilot resume" in a for a in argv)


def test_agent_gets_the_task_id_in_its_environment_and_runs_in_the_worktree(
    repo: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GIT_INDEX_FILE", "/nonexistent/index")  # as inside a git hook
    pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    call = [c for c in fakes.calls("claude") if "-p" in c["argv"]][0]
    assert call["env"]["GIT_PILOT_TASK"] == tid_of(TASK)
    assert "GIT_INDEX_FILE" not in call["env"]
    assert Path(call["cwd"]).resolve() == repo.resolve()


def test_every_launched_argv_and_the_session_manifest_are_in_the_task_record(
    repo: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    res = pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    tid = tid_of(TASK)
    record = session_record(repo, tid)
    launched = [entry["argv"] for entry in record["launches"]]
    assert [Path(launched[0][0]).name] + launched[0][1:] == ["claude", *_launch(fakes)]
    session_id = record["sessions"][-1]["session_id"]
    assert session_id == _launch(fakes)[_launch(fakes).index("--session-id") + 1]
    assert f"session: {session_id}" in res.out
    given = record["given"]
    widgets = next(s for s in given["sources"] if s["path"] == "docs/widgets.md")
    blob = (repo / "docs/widgets.md").read_bytes()
    import hashlib

    assert widgets["blob"] == hashlib.sha1(b"blob %d\0" % len(blob) + blob).hexdigest()
    assert any(sec[0].endswith("Spin speed") for sec in widgets["sections"])
    state = state_record(repo, tid)
    assert state["sessions"] == [session_id]
    assert state["status"] == "stopped"  # the print session ended without declaring the task ready
    files = task_files(repo, tid)
    assert {"capsule.md", "manifest.json", "session.json", "state.json", "task.md"} <= set(files)
    # state.json carries orchestration facts only: no prompt, no agent output.
    assert b"capsule" not in files["state.json"] and b"done" not in files["state.json"]


def test_dry_run_prints_the_capsule_path_and_the_exact_command_and_launches_nothing(
    repo: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    res = pilot(repo, "run", "--dry-run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0
    tid = tid_of(TASK)
    assert f"capsule: {repo / '.git' / 'pilot' / f'capsule-{tid}.md'}" in res.out
    argv = shlex.split(res.out.split("would run: ", 1)[1])  # the prompt spans lines, quoted
    assert Path(argv[0]).name == "claude" and argv[-1].startswith("git pilot task ")
    assert fakes.argvs("claude") == []  # only --help/--version probes ran
    assert (
        "launches" not in json.dumps(session_record(repo, tid)) or not session_record(repo, tid)["launches"]
    )


def test_without_claude_installed_run_says_so_in_one_line_and_prints_the_command(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    install(tmp_path, monkeypatch, agents=("codex",))
    monkeypatch.setenv("PATH", str(tmp_path / "fake-bin") + ":/usr/bin:/bin")
    res = pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 1, res.err  # issue 11 item 6: nothing was started, so exit 1 with the one line
    assert res.err == "git pilot: claude is not installed (not found on PATH); run the command above once it is\n"
    lines = res.out.splitlines()
    assert sum("not installed" in ln for ln in lines) == 0
    assert any(ln.startswith("capsule: ") for ln in lines)
    cmd = res.out.split("command: ", 1)[1]
    assert shlex.split(cmd)[0] == "claude"
    assert "--allowedTools" in cmd


def test_task_file_is_read_verbatim_and_a_changed_text_is_a_new_task_with_a_new_session(
    repo: Path,
    fakes: FakeAgents,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    task_file = tmp_path / "task.md"
    task_file.write_text(TASK + "\n")
    pilot(repo, "run", "--task-file", str(task_file), monkeypatch=monkeypatch, capsys=capsys)
    first = tid_of(TASK + "\n")
    assert session_record(repo, first)["sessions"]
    task_file.write_text(TASK + " and document it\n")
    res = pilot(repo, "run", "--task-file", str(task_file), monkeypatch=monkeypatch, capsys=capsys)
    second = tid_of(TASK + " and document it\n")
    assert f"task text changed since task {first[:12]}" in res.out
    launches = [a for a in fakes.argvs("claude") if "-p" in a]
    assert len(launches) == 2 and all("--resume" not in a for a in launches)  # a new session, not a resume
    assert (
        session_record(repo, second)["sessions"][0]["session_id"]
        != session_record(repo, first)["sessions"][0]["session_id"]
    )


def test_leanloop_disabled_sends_the_plain_prompt_naming_every_context_file(
    repo: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / ".gitpilot.toml").write_text("[leanloop]\nenabled = false\n")
    res = pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.err
    prompt = _launch(fakes)[-1]
    assert "capsule" not in prompt
    for name in ("CLAUDE.md", ".gitpilot.toml", "docs/widgets.md", "docs/gadgets.md"):
        assert name in prompt
    # issue 11 item 3: the v0.4.0 launch prompt carries the task itself (it used to point at a copy)
    assert prompt.endswith(f"Task:\n{TASK}\n")


def test_a_failed_launch_is_recorded_with_the_cli_failure_as_a_blocker(
    repo: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fakes.rule("claude", ["-p"], sample="cli-help/claude-p-noauth-json.txt")
    res = pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 1
    tid = tid_of(TASK)
    state = state_record(repo, tid)
    assert state["status"] == "blocked"
    assert any("Not logged in" in b for b in state["blockers"])
    entry = session_record(repo, tid)["sessions"][-1]
    assert entry["exit"] == 1 and "Not logged in" in entry["failure"]


def test_codex_adapter_launches_codex_exec_and_reads_the_thread_id(
    repo: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    res = pilot(repo, "run", "--agent", "codex", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.err
    argv = fakes.argvs("codex")[0]
    assert argv[:2] == ["exec", "--json"]
    thread = session_record(repo, tid_of(TASK))["sessions"][-1]["session_id"]
    assert thread in fakes.state()["sessions"]


def test_a_short_rate_limit_is_retried_once_on_the_same_session(
    repo: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GIT_PILOT_RETRY_SECONDS", "0")
    sample_session = "01826823-e0d3-4ff0-a383-9402c160e32d"  # the session id the captured 429 names
    fakes.add_session(sample_session)
    fakes.rule("claude", ["-p"], sample="cli-help/claude-p-mock-429-apikey.txt", times=1)
    res = pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.out + res.err
    assert "retrying once" in res.out
    retry = [a for a in fakes.argvs("claude") if "--resume" in a]
    assert len(retry) == 1 and retry[0][retry[0].index("--resume") + 1] == sample_session
    state = state_record(repo, tid_of(TASK))
    assert state["status"] == "stopped" and state["blockers"] == []


def test_a_quota_stop_without_automatic_resume_says_when_the_limit_resets_and_blocks(
    repo: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GIT_PILOT_NOW", "2026-11-30T12:26:00Z")
    fakes.rule("claude", ["-p"], sample="cli-help/claude-p-mock-429-oauth-five_hour.txt")
    res = pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 1
    assert "quota exhausted; the limit resets at 2026-11-30T15:43" in res.out
    assert "Automatic resume is off" in res.out
    state = state_record(repo, tid_of(TASK))
    assert state["status"] == "blocked" and any("quota exhausted" in b for b in state["blockers"])
    assert [a for a in fakes.argvs("claude") if "--resume" in a] == []  # a quota stop is not retried
