"""Delta Resume: each situation of the issue's table, through the fake claude's own resume."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import git
from fake_agents import FakeAgents, install
from fake_agents.pilot import WIDGETS_MD, context_repo, pilot, session_record, state_record, tid_of

TASK = "Raise the widget spin speed cap to 12000 rpm in widgets/speed.py"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    # a context too large to be shown whole: the delta names changed sections the capsule left out
    return context_repo(tmp_path / "repo", shelf=True)


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeAgents:
    return install(tmp_path, monkeypatch)


def _sessions(fakes: FakeAgents) -> list[list[str]]:
    return [a for a in fakes.argvs("claude") if "-p" in a or "--bg" in a]


def _started(
    repo: Path,
    fakes: FakeAgents,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> str:
    res = pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.err
    return str(session_record(repo, tid_of(TASK))["sessions"][-1]["session_id"])


def test_unchanged_context_gets_a_short_continuation_on_the_same_session(
    repo: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sid = _started(repo, fakes, monkeypatch, capsys)
    res = pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.err
    argv = _sessions(fakes)[-1]
    assert argv[argv.index("--resume") + 1] == sid and "-p" in argv
    message = argv[-1]
    assert len(message.encode()) <= 512
    assert "unchanged" in message and "authoritative" in message and "git and PR state" in message
    assert ".md" not in message  # nothing to re-read
    assert "continuation" in res.out
    assert fakes.state()["sessions"][sid]["messages"][-1] == message  # same conversation, same id
    assert [s["session_id"] for s in session_record(repo, tid_of(TASK))["sessions"]] == [sid]


def test_resume_by_task_prefix_or_session_id_is_the_same_continuation(
    repo: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sid = _started(repo, fakes, monkeypatch, capsys)
    for ident in (tid_of(TASK)[:10], sid):
        res = pilot(repo, "resume", ident, monkeypatch=monkeypatch, capsys=capsys)
        assert res.code == 0, res.err
        argv = _sessions(fakes)[-1]
        assert argv[argv.index("--resume") + 1] == sid
        assert len(argv[-1].encode()) <= 512


def test_changed_context_gets_a_delta_with_exactly_the_changed_sections(
    repo: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sid = _started(repo, fakes, monkeypatch, capsys)
    new_speed = "## Spin speed\n\nThe spin speed is set in `widgets/speed.py` and capped at 12000 rpm.\n"
    edited = WIDGETS_MD.replace(
        "## Spin speed\n\nThe spin speed is set in `widgets/speed.py` and capped at 9000 rpm.\n", new_speed
    )
    edited = edited.replace("## Colours\n\nWidgets come in red and blue.\n", "")
    (repo / "docs/widgets.md").write_text(edited)
    gadgets = (repo / "docs/gadgets.md").read_text().replace("50 Hz", "60 Hz")
    (repo / "docs/gadgets.md").write_text(gadgets)
    res = pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.err
    argv = _sessions(fakes)[-1]
    assert argv[argv.index("--resume") + 1] == sid
    tid = tid_of(TASK)
    delta_path = repo / ".git" / "pilot" / f"delta-{tid}.md"
    assert str(delta_path) in argv[-1]
    delta = delta_path.read_text()
    # The changed, relevant section: its exact new text.
    assert new_speed in delta
    # Removed section: named, with its old lines.
    assert re.search(r"removed: Widgets › Colours \(was lines \d+-\d+\)", delta)
    # Unchanged sections and unchanged files are not there at all.
    assert "Widgets are the spinning parts" not in delta
    assert "CLAUDE.md" not in delta and "Run the tests" not in delta
    # The changed section the task does not need: a line range, never its text.
    assert "docs/gadgets.md" in delta and "60 Hz" not in delta
    assert re.search(r"changed: Gadgets › Humming — `docs/gadgets.md` lines \d+-\d+", delta)
    assert len(delta.encode()) < len((repo / ".git" / "pilot" / f"capsule-{tid}.md").read_bytes())
    # What the session now knows is the new context: a second resume is a plain continuation.
    pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert "unchanged" in _sessions(fakes)[-1][-1]


def test_delta_is_served_from_the_working_tree_even_before_a_commit_and_never_stale(
    repo: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _started(repo, fakes, monkeypatch, capsys)
    (repo / "CLAUDE.md").write_text((repo / "CLAUDE.md").read_text().replace("`pytest -q`", "`pytest -q -x`"))
    pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    delta = (repo / ".git" / "pilot" / f"delta-{tid_of(TASK)}.md").read_text()
    assert (
        "Run the tests with `pytest -q -x` before every commit." in delta
    )  # instruction file: given in full
    git(repo, "commit", "-qam", "tests: stop at the first failure")
    pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert "unchanged" in _sessions(fakes)[-1][-1]  # committing changed no text


def test_no_record_of_what_the_session_read_sends_the_capsule(
    repo: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sid = _started(repo, fakes, monkeypatch, capsys)
    from gitpilot.repo import Repo
    from gitpilot.tasks.session import update_session

    update_session(Repo.discover(repo), tid_of(TASK), lambda rec: rec.update(given=None), "test: forget")
    res = pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.err
    argv = _sessions(fakes)[-1]
    assert argv[argv.index("--resume") + 1] == sid
    assert f"capsule-{tid_of(TASK)}.md" in argv[-1] and "Read " in argv[-1]
    assert session_record(repo, tid_of(TASK))["given"] is not None


def test_background_resume_forks_and_the_new_session_id_is_read_back_and_recorded(
    repo: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / ".gitpilot.toml").write_text('[agent]\nmode = "background"\n')
    git(repo, "add", ".gitpilot.toml")
    git(repo, "commit", "-qm", "background sessions")
    res = pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.err
    tid = tid_of(TASK)
    first = session_record(repo, tid)["sessions"][-1]
    assert first["mode"] == "background" and first["short_id"]
    job = next(j for j in fakes.state()["jobs"] if j["id"] == first["short_id"])
    assert first["session_id"] == job["sessionId"]
    fakes.set_job_state(first["short_id"], "failed")
    res = pilot(repo, "resume", tid[:12], monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.err
    argv = _sessions(fakes)[-1]
    assert argv[argv.index("--bg") + 1 : argv.index("--bg") + 3] == ["--resume", first["session_id"]]
    assert ["agents", "--json", "--all"] in fakes.argvs("claude")
    second = session_record(repo, tid)["sessions"][-1]
    assert second["session_id"] != first["session_id"]
    assert second["forked_from"] == first["session_id"]
    new_job = next(j for j in fakes.state()["jobs"] if j["id"] == second["short_id"])
    assert second["session_id"] == new_job["sessionId"]
    assert state_record(repo, tid)["sessions"] == [first["session_id"], second["session_id"]]
    assert "forked from" in res.out
    launched = [e["argv"][1:] for e in session_record(repo, tid)["launches"]]
    assert ["agents", "--json", "--all"] in launched  # the listing is logged like any launch


def test_an_idle_background_session_is_stopped_before_it_is_resumed(
    repo: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / ".gitpilot.toml").write_text('[agent]\nmode = "background"\n')
    pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    short = session_record(repo, tid_of(TASK))["sessions"][-1]["short_id"]
    fakes.set_job_state(short, "idle")
    res = pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.err
    argvs = fakes.argvs("claude")
    stop_at = argvs.index(["stop", short])
    resume_at = max(i for i, a in enumerate(argvs) if "--resume" in a)
    assert stop_at < resume_at
    assert next(j for j in fakes.state()["jobs"] if j["id"] == short)["state"] == "stopped"
    assert f"stopped idle background session {short}" in res.out


def test_a_background_session_still_working_is_never_resumed_into_a_copy(
    repo: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / ".gitpilot.toml").write_text('[agent]\nmode = "background"\n')
    pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    before = len(_sessions(fakes))
    res = pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 1
    assert "still working" in res.err and "git pilot stop" in res.err
    assert len(_sessions(fakes)) == before


def test_a_cli_that_cannot_resume_gets_the_delta_path_and_the_command_for_the_user(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fakes = install(tmp_path, monkeypatch)
    sid = _started(repo, fakes, monkeypatch, capsys)
    monkeypatch.setenv("FAKE_AGENT_HIDE", "--resume")  # another claude, without --resume
    shim = fakes.bindir / "claude"
    shim.write_text(shim.read_text() + "# another version\n")
    (repo / "docs/widgets.md").write_text(WIDGETS_MD.replace("9000", "9500"))
    res = pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.err
    assert "cannot resume a session from the command line" in res.out
    delta = repo / ".git" / "pilot" / f"delta-{tid_of(TASK)}.md"
    assert f"message file: {delta}" in res.out and delta.is_file()
    command = res.out.split("command: ", 1)[1]
    assert f"--resume {sid}" in command and str(delta) in command
    assert not any("--resume" in a for a in _sessions(fakes))  # nothing was resumed behind the user's back


def test_a_session_the_cli_no_longer_knows_is_replaced_by_a_new_one_with_the_capsule(
    repo: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sid = _started(repo, fakes, monkeypatch, capsys)
    fakes.save_state({"sessions": {}, "jobs": []})  # the CLI's history is gone
    res = pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.err
    assert f"has no session {sid}" in res.out
    last = _sessions(fakes)[-1]
    assert "--resume" not in last and "capsule-" in last[-1]
    sessions = session_record(repo, tid_of(TASK))["sessions"]
    assert sessions[-1]["session_id"] != sid


def test_a_quota_resume_note_is_put_before_the_continuation(
    repo: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _started(repo, fakes, monkeypatch, capsys)
    monkeypatch.setenv("GIT_PILOT_RESUME_REASON", "quota")
    monkeypatch.setenv("GIT_PILOT_RESUME_NOTE", "The usage limit has reset.")
    res = pilot(repo, "resume", tid_of(TASK), monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.err
    message = _sessions(fakes)[-1][-1]
    assert message.startswith("The usage limit has reset.") and len(message.encode()) <= 512


def test_resume_of_an_unknown_id_is_one_clear_error(
    repo: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    res = pilot(repo, "resume", "deadbeef", monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 1
    assert res.err.strip() == "git pilot: no task or session 'deadbeef' (see git pilot status)"
    assert json.dumps(fakes.argvs("claude")) == "[]"


def test_each_delivered_message_is_accounted_in_the_efficiency_ledger(
    repo: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _started(repo, fakes, monkeypatch, capsys)
    pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    (repo / "docs/widgets.md").write_text(WIDGETS_MD.replace("9000", "9500"))
    pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    pilot(repo, "run", "--dry-run", TASK, monkeypatch=monkeypatch, capsys=capsys)  # delivers nothing
    ledger = repo / ".git" / "pilot" / "efficiency.jsonl"
    events = [json.loads(line) for line in ledger.read_text().splitlines()]
    mine = [e for e in events if e["mechanism"] in ("capsule", "continuation", "delta")]
    assert [e["mechanism"] for e in mine] == ["capsule", "continuation", "delta"]
    assert all(e["task"] == tid_of(TASK) for e in mine)
    capsule, continuation, delta = mine
    assert continuation["delivered"] <= 512
    assert continuation["delivered"] + continuation["avoided"] > capsule["delivered"] - 10
    assert 0 < delta["delivered"] < capsule["delivered"] and delta["avoided"] > 0


def test_a_new_instruction_file_is_given_in_full_and_a_deleted_source_is_named(
    repo: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _started(repo, fakes, monkeypatch, capsys)
    (repo / "AGENTS.md").write_text("# Agents\n\n## Commits\n\nSign off every commit with -s.\n")
    git(repo, "rm", "-q", "docs/gadgets.md")
    res = pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.err
    delta = (repo / ".git" / "pilot" / f"delta-{tid_of(TASK)}.md").read_text()
    assert "## `AGENTS.md`: new" in delta
    assert "## Commits\n\nSign off every commit with -s.\n" in delta
    assert "## `docs/gadgets.md`: removed" in delta
    assert "Widgets" not in delta  # untouched sources stay out
