"""``leanloop.enabled = false`` is v0.4.0 for the agent (issue 11, item 3): the v0.4.0 launch
prompt word for word, no LeanLoop allow-list entries, no LeanLoop instruction, and every
continuation a new session with that prompt (``claude respawn`` only restarts a live background
worker, so it is no way back into a stopped conversation). Fixed review rounds with LeanLoop off
are tests/test_review_budget.py::test_leanloop_disabled_restores_fixed_rounds."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO_ROOT
from fake_agents import FakeAgents, install
from fake_agents.pilot import context_repo, pilot, session_record, tid_of

TASK = "Raise the widget spin speed cap to 12000 rpm in widgets/speed.py"
OFF = "[leanloop]\nenabled = false\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = context_repo(tmp_path / "repo")
    (path / ".gitpilot.toml").write_text(OFF)
    return path


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeAgents:
    return install(tmp_path, monkeypatch)


def v04(repo: Path) -> str:
    return (f"You are working in the git repository at {repo}.\n"
            "Before you change anything:\n"
            "1. Read the project rules in CLAUDE.md.\n"
            "2. Read the git pilot configuration in .gitpilot.toml.\n"
            "3. Read the task below.\n"
            "4. Read every context file listed here:\n"
            "- docs/gadgets.md\n"
            "- docs/widgets.md\n"
            "\n"
            "Task:\n"
            f"{TASK}\n")


def sessions(fakes: FakeAgents) -> list[list[str]]:
    return [a for a in fakes.argvs("claude") if a[:1] != ["agents"]]


def test_the_launch_is_the_v04_prompt_word_for_word_with_no_allow_list(
    repo: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    res = pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.out + res.err
    [argv] = sessions(fakes)
    assert argv[-1] == v04(repo)
    assert not any(a.startswith("--allowedTools") or a.startswith("Bash(") for a in argv)
    assert "git pilot check" not in argv[-1] and "capsule" not in argv[-1]  # no LeanLoop instruction
    assert not list((repo / ".git" / "pilot").glob("capsule-*"))


def test_the_prompt_is_the_one_the_capsule_benchmark_measures_against(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(REPO_ROOT))
    from bench.capsule import LAUNCH_PROMPT
    from gitpilot.tasks.prompts import V04_LAUNCH_PROMPT

    assert V04_LAUNCH_PROMPT == LAUNCH_PROMPT


@pytest.mark.parametrize("how", ["run", "resume"])
def test_a_continuation_is_a_new_session_with_the_v04_prompt(
    how: str, repo: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert pilot(repo, "run", TASK, monkeypatch=monkeypatch, capsys=capsys).code == 0
    tid = tid_of(TASK)
    first = session_record(repo, tid)["sessions"][-1]["session_id"]
    again = (("run", TASK) if how == "run" else ("resume", tid[:12]))
    res = pilot(repo, *again, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.out + res.err
    assert "leanloop disabled: a new session with the v0.4.0 launch prompt (no resume)" in res.out
    launches = sessions(fakes)
    assert len(launches) == 2
    assert all("--resume" not in a and "respawn" not in a for a in launches)
    assert launches[1][-1] == v04(repo)  # the whole v0.4.0 prompt again, not a continuation
    ids = [s["session_id"] for s in session_record(repo, tid)["sessions"]]
    assert len(ids) == 2 and ids[0] == first and ids[1] != first


def test_dry_run_shows_the_v04_command(
    repo: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    res = pilot(repo, "run", "--dry-run", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0
    assert "leanloop disabled: the v0.4.0 launch prompt" in res.out
    assert "--allowedTools" not in res.out and "You are working in the git repository at" in res.out
    assert sessions(fakes) == []
