"""``git pilot codex plan``: never calls Codex unless planning is enabled, plans a task once (kept in
the task record), ``--force`` asks again; driven through a fake ``codex`` with captured real output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import make_repo
from fake_agents import FakeAgents, install
from fake_agents.pilot import pilot, session_record, state_record, task_files, tid_of

from gitpilot.repo import Repo
from gitpilot.store.tasks import TaskStore
from gitpilot.tasks.state import empty_state, state_bytes

TASK = "Add a --verbose flag to the export command"
ENABLED = "[planner]\nenabled = true\n"


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeAgents:
    return install(tmp_path, monkeypatch)


def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: str | None = ENABLED) -> tuple[Path, str]:
    files = {"README.md": "# demo\n"}
    if config is not None:
        files[".gitpilot.toml"] = config
    repo = make_repo(tmp_path / "repo", files)
    tid = tid_of(TASK)
    TaskStore(Repo.discover(repo)).write(tid, {"task.md": TASK.encode(), "state.json": state_bytes(empty_state())},
                                         "test: task")
    monkeypatch.setenv("GIT_PILOT_TASK", tid)
    return repo, tid


def asks(fakes: FakeAgents) -> list[list[str]]:
    return [a for a in fakes.argvs("codex") if "exec" in a]


def ledger(repo: Path) -> list[dict[str, object]]:
    path = repo / ".git" / "pilot" / "efficiency.jsonl"
    rows = [json.loads(ln) for ln in path.read_text().splitlines()] if path.exists() else []
    return [r for r in rows if r["mechanism"] == "plan"]


@pytest.mark.parametrize("config", [None, "[planner]\nenabled = false\n"])
def test_planning_off_never_calls_codex_and_says_so(
        tmp_path: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        config: str | None) -> None:
    repo, tid = setup(tmp_path, monkeypatch, config)
    for args in (("codex", "plan"), ("codex", "plan", "--force")):
        res = pilot(repo, *args, monkeypatch=monkeypatch, capsys=capsys)
        assert res.code == 0
        assert res.out.startswith("planning is off here ([planner] enabled is not true): Codex was not called")
    assert fakes.calls("codex") == []  # not even a --help probe
    assert state_record(repo, tid)["planned"] is False
    assert [r["facts"]["plans_skipped"] for r in ledger(repo)] == [1, 1]


def test_a_task_is_planned_once_and_the_plan_kept_in_its_record(
        tmp_path: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    repo, tid = setup(tmp_path, monkeypatch)
    first = pilot(repo, "codex", "plan", monkeypatch=monkeypatch, capsys=capsys)
    assert first.code == 0, first.err
    [argv] = asks(fakes)
    assert argv[:4] == ["exec", "--sandbox", "read-only", "--json"]  # planning never edits files
    assert TASK in argv[-1] and not any(a in ("-m", "--model") for a in argv)
    call = [c for c in fakes.calls("codex") if "exec" in c["argv"] and "--help" not in c["argv"]][0]
    assert Path(call["cwd"]).resolve() == repo.resolve() and call["env"]["GIT_PILOT_TASK"] == tid
    assert "Mock explanation." in first.out  # the agent message of the captured `codex exec --json` run
    plan = task_files(repo, tid)["plan.md"].decode()
    assert plan.startswith("Mock explanation.")
    assert state_record(repo, tid)["planned"] is True
    assert session_record(repo, tid)["launches"][-1]["what"] == "codex plan"
    plan_file = repo / ".git" / "pilot" / f"plan-{tid}.md"
    assert plan_file.read_text() == plan

    second = pilot(repo, "codex", "plan", monkeypatch=monkeypatch, capsys=capsys)
    assert second.code == 0
    assert len(asks(fakes)) == 1  # never asked twice
    assert f"already planned: the plan is in {plan_file}" in second.out
    assert "Mock explanation." not in second.out  # a pointer, not the plan again
    reused = ledger(repo)[-1]
    assert reused["facts"] == {"plans_reused": 1} and reused["avoided"] == len(plan.encode())

    forced = pilot(repo, "codex", "plan", "--force", monkeypatch=monkeypatch, capsys=capsys)
    assert forced.code == 0 and len(asks(fakes)) == 2


def test_a_failed_plan_records_nothing(
        tmp_path: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    repo, tid = setup(tmp_path, monkeypatch)
    fakes.rule("codex", ["exec", "--sandbox"], sample="cli-help/codex-exec-json-mock-usage-limit.txt", times=1)
    res = pilot(repo, "codex", "plan", monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 1
    assert "codex plan failed (nothing recorded): You’ve hit your usage limit" in res.out
    assert "plan.md" not in task_files(repo, tid) and state_record(repo, tid)["planned"] is False
    again = pilot(repo, "codex", "plan", monkeypatch=monkeypatch, capsys=capsys)  # asks again: nothing was kept
    assert again.code == 0 and len(asks(fakes)) == 2


def test_planning_needs_a_task(
        tmp_path: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    repo, _ = setup(tmp_path, monkeypatch)
    monkeypatch.delenv("GIT_PILOT_TASK")
    res = pilot(repo, "codex", "plan", monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 2 and "which task?" in res.err
    assert fakes.calls("codex") == []
    by_id = pilot(repo, "codex", "plan", "--task", tid_of(TASK)[:10], monkeypatch=monkeypatch, capsys=capsys)
    assert by_id.code == 0 and len(asks(fakes)) == 1
