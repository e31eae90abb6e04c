"""``git pilot state [--pr N] [--ci S] [--blocker R] [--status S]``: record a task's orchestration facts."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from gitpilot.errors import UsageError


@click.command("state")
@click.option("--task", "ident", metavar="ID",
              help="The task (default: $GIT_PILOT_TASK, else the task last run or resumed in this worktree).")
@click.option("--pr", type=int, metavar="N", help="The pull request number.")
@click.option("--ci", metavar="STATE", help="passing, failing or pending.")
@click.option("--blocker", "blockers", multiple=True, metavar="REASON", help="Add a blocker (repeatable).")
@click.option("--clear-blockers", is_flag=True, help="Remove every recorded blocker first.")
@click.option("--status", metavar="STATUS", help="ready, working, blocked or waiting-quota.")
@click.option("--json", "as_json", is_flag=True, help="Print the state as JSON.")
def command(ident: str | None, pr: int | None, ci: str | None, blockers: tuple[str, ...],
            clear_blockers: bool, status: str | None, as_json: bool) -> int:
    """Update (or, with no options, show) the task's state.json; each update is one commit."""
    from gitpilot.output import out
    from gitpilot.repo import Repo
    from gitpilot.tasks.current import recall
    from gitpilot.tasks.launch import now_iso
    from gitpilot.tasks.session import find_task
    from gitpilot.tasks.state import read_state, set_facts, summary_line

    repo = Repo.discover(Path.cwd())
    name = ident or os.environ.get("GIT_PILOT_TASK", "")
    tid = find_task(repo, name) if name else recall(repo)
    if tid is None:
        raise UsageError("which task? no task was run or resumed in this worktree yet: give --task ID")
    if pr is None and ci is None and not blockers and not clear_blockers and status is None:
        state = read_state(repo, tid) or {}
    else:
        state = set_facts(repo, tid, pr=pr, ci=ci, blockers=blockers, clear_blockers=clear_blockers,
                          status=status, now=now_iso())
    if as_json:
        out(json.dumps({"task": tid, **state}, sort_keys=True, ensure_ascii=False))
    else:
        out(f"{tid[:12]}  {summary_line(state)}")
    return 0
