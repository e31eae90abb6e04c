"""``git pilot stop ID``: stop a task's session and cancel its pending quota resume."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("stop")
@click.argument("ident", metavar="ID")
def command(ident: str) -> int:
    """Stop task ID's session (ID: task id, unique prefix, or session id)."""
    from gitpilot.output import out
    from gitpilot.repo import Repo
    from gitpilot.tasks.control import stop

    report = stop(Repo.discover(Path.cwd()), ident)
    for line in report.lines:
        out(line)
    return 0
