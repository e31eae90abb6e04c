"""Helpers for tests that run git pilot against the fake agents: a repository with context
files, ``git pilot`` run in-process in that repository, and readers for the task record."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

CLAUDE_MD = """# Project rules

## Testing

Run the tests with `pytest -q` before every commit.

## Security

Never commit credentials or tokens.
"""

WIDGETS_MD = """# Widgets

Widgets are the spinning parts of the product.

## Spin speed

The spin speed is set in `widgets/speed.py` and capped at 9000 rpm.

## Colours

Widgets come in red and blue.
"""

GADGETS_MD = """# Gadgets

## Humming

Gadgets hum at 50 Hz.
"""


@dataclass
class Result:
    code: int
    out: str
    err: str


def context_repo(path: Path, shelf: bool = False) -> Path:
    """A repository with a rule file and two documentation files, committed; with ``shelf``, also
    a shelf of unrelated pages, so its context is too large to be shown whole."""
    from conftest import make_repo

    pages = {
        f"docs/shelf/page{i}.md": f"# Shelf page {i}\n\n" + "Notes on the office plants and the coffee rota.\n" * 20
        for i in range(12)
    } if shelf else {}
    return make_repo(
        path,
        {
            "CLAUDE.md": CLAUDE_MD,
            "docs/widgets.md": WIDGETS_MD,
            "docs/gadgets.md": GADGETS_MD,
            "widgets/speed.py": "SPEED = 9000\n",
            **pages,
        },
    )


def pilot(
    repo: Path, *args: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Result:
    """Run ``git pilot ARGS`` in-process with ``repo`` as the working directory."""
    from gitpilot.cli import main

    monkeypatch.chdir(repo)
    capsys.readouterr()
    code = main(list(args))
    captured = capsys.readouterr()
    return Result(code, captured.out, captured.err)


def task_files(repo: Path, tid: str) -> dict[str, bytes]:
    from gitpilot.repo import Repo
    from gitpilot.store.tasks import TaskStore

    return TaskStore(Repo.discover(repo)).read(tid) or {}


def session_record(repo: Path, tid: str) -> dict[str, Any]:
    data = task_files(repo, tid).get("session.json")
    return json.loads(data) if data else {}


def state_record(repo: Path, tid: str) -> dict[str, Any]:
    data = task_files(repo, tid).get("state.json")
    return json.loads(data) if data else {}


def tid_of(text: str) -> str:
    from gitpilot.store.tasks import task_id

    return task_id(text)


def start_task(repo: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> str:
    """A task record as ``git pilot run`` leaves it, and the agent's environment pointing at it."""
    from gitpilot.repo import Repo
    from gitpilot.store.tasks import TaskStore
    from gitpilot.tasks.state import empty_state, state_bytes

    tid = tid_of(text)
    TaskStore(Repo.discover(repo)).write(
        tid, {"task.md": text.encode(), "state.json": state_bytes(empty_state())}, "test: task"
    )
    monkeypatch.setenv("GIT_PILOT_TASK", tid)
    return tid
