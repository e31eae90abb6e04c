"""``git pilot resume ID``: continue a task's session with only what it lacks (Delta Resume)."""

from __future__ import annotations

import os
from pathlib import Path

import click


@click.command("resume")
@click.argument("ident", metavar="ID")
@click.option("--agent", default=None, metavar="NAME", help="Agent CLI (default: the session's).")
@click.option("--dry-run", is_flag=True, help="Print the exact command; run nothing.")
def command(ident: str, agent: str | None, dry_run: bool) -> int:
    """Resume task ID (a task id, a unique prefix, or a session id)."""
    from gitpilot.commands.run import _notify, render
    from gitpilot.repo import Repo
    from gitpilot.tasks.run import resume

    # The quota helper passes its continuation note (the limit has reset) through the environment.
    note = os.environ.get("GIT_PILOT_RESUME_NOTE", "") if os.environ.get("GIT_PILOT_RESUME_REASON") else ""
    report = resume(Repo.discover(Path.cwd()), ident, agent=agent, dry_run=dry_run, notify=_notify, note=note)
    return render(report)
