"""Exit codes and messages that tell the truth (issue 11 item 6): `run` without the agent CLI
exits 1 with one line; `state` without --task acts on this worktree's current task; `resume`
takes a unique prefix of a session id; `share` names the verb it was called with. Real git
pilot processes in real repositories (and linked worktrees), fake agents where one runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import git, make_repo, run_pilot
from fake_agents import FakeAgents, install
from fake_agents.pilot import context_repo, session_record, state_record, tid_of

TASK = "Raise the widget spin speed cap to 12000 rpm in widgets/speed.py"
OTHER = "Document the gadget humming frequency in docs/gadgets.md"


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeAgents:
    return install(tmp_path, monkeypatch)


def test_run_without_the_agent_cli_exits_1_with_one_line(tmp_path: Path) -> None:
    repo = context_repo(tmp_path / "repo")
    res = run_pilot("run", TASK, cwd=repo, env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"})
    assert res.returncode == 1
    assert res.stderr == "git pilot: claude is not installed (not found on PATH); run the command above once it is\n"
    assert "\ncommand: claude " in res.stdout  # the command to run once it is installed
    assert f"capsule: {repo / '.git' / 'pilot'}" in res.stdout


def test_state_without_task_acts_on_the_task_last_run_in_this_worktree(tmp_path: Path, fakes: FakeAgents) -> None:
    repo = context_repo(tmp_path / "repo")
    git(repo, "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "other")
    linked = tmp_path / "wt"
    none_yet = run_pilot("state", "--pr", "42", cwd=repo)
    assert none_yet.returncode == 2
    assert none_yet.stderr == ("git pilot: which task? no task was run or resumed in this worktree yet: "
                               "give --task ID\n")
    assert run_pilot("run", TASK, cwd=repo).returncode == 0
    assert run_pilot("run", OTHER, cwd=linked).returncode == 0
    res = run_pilot("state", "--pr", "42", "--ci", "passing", cwd=repo)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(f"{tid_of(TASK)[:12]}  ") and "PR #42" in res.stdout
    assert state_record(repo, tid_of(TASK))["pr"] == 42
    assert state_record(repo, tid_of(OTHER))["pr"] is None  # the linked worktree's task is its own
    here = run_pilot("state", "--blocker", "waiting for review", cwd=linked)
    assert here.returncode == 0 and here.stdout.startswith(f"{tid_of(OTHER)[:12]}  ")
    # a resume makes its task the current one too
    assert run_pilot("resume", tid_of(OTHER)[:12], cwd=repo).returncode == 0
    shown = json.loads(run_pilot("state", "--json", cwd=repo).stdout)
    assert shown["task"] == tid_of(OTHER) and shown["blockers"] == ["waiting for review"]
    # --task and GIT_PILOT_TASK still win
    assert json.loads(run_pilot("state", "--json", "--task", tid_of(TASK)[:12], cwd=repo).stdout)["pr"] == 42
    env = {"GIT_PILOT_TASK": tid_of(TASK)}
    assert json.loads(run_pilot("state", "--json", cwd=repo, env=env).stdout)["task"] == tid_of(TASK)


def test_resume_takes_a_unique_prefix_of_a_session_id(tmp_path: Path, fakes: FakeAgents) -> None:
    repo = context_repo(tmp_path / "repo")
    assert run_pilot("run", TASK, cwd=repo).returncode == 0
    assert run_pilot("run", OTHER, cwd=repo).returncode == 0
    sid = str(session_record(repo, tid_of(TASK))["sessions"][-1]["session_id"])
    other = str(session_record(repo, tid_of(OTHER))["sessions"][-1]["session_id"])
    # a prefix that is not a task id's: it goes past the first '-' of the uuid
    prefix = sid[:13]
    res = run_pilot("resume", prefix, cwd=repo)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(f"task {tid_of(TASK)}")
    resumed = [a for a in fakes.argvs("claude") if "--resume" in a][-1]
    assert resumed[resumed.index("--resume") + 1] == sid
    assert run_pilot("resume", other[:13], cwd=repo).stdout.startswith(f"task {tid_of(OTHER)}")
    # a third task whose session id begins like the first one's: that prefix names two sessions
    from gitpilot.repo import Repo
    from gitpilot.store.tasks import TaskStore

    twin = sid[:13] + "0000-4000-8000-000000000000"
    TaskStore(Repo.discover(repo)).write("ab" * 32, {"session.json": json.dumps(
        {"agent": "claude", "sessions": [{"session_id": twin, "agent": "claude"}]}).encode()}, "test: a twin")
    ambiguous = run_pilot("resume", prefix, cwd=repo)
    assert ambiguous.returncode == 1
    assert ambiguous.stderr == f"git pilot: {prefix!r} begins 2 session ids: give more of it\n"
    assert run_pilot("resume", sid[:20], cwd=repo).returncode == 0  # more of it is unique again
    unknown = run_pilot("resume", "zzzz-not-a-session", cwd=repo)
    assert unknown.returncode == 1 and unknown.stderr == (
        "git pilot: no task or session 'zzzz-not-a-session' (see git pilot status)\n")


@pytest.mark.parametrize("verb", ["pull", "push", "setup"])
def test_share_without_a_remote_names_the_verb_used(tmp_path: Path, verb: str) -> None:
    repo = make_repo(tmp_path / "repo")
    res = run_pilot("share", verb, cwd=repo)
    assert res.returncode == 1
    assert res.stderr == f"git pilot: no remote to share with: name one (git pilot share {verb} REMOTE)\n"
    empty = tmp_path / "empty"
    git(tmp_path, "init", "-q", str(empty))  # not even a commit
    res = run_pilot("share", verb, cwd=empty)
    assert res.returncode == 1 and f"(git pilot share {verb} REMOTE)" in res.stderr
