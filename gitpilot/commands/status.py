"""``git pilot status [--json]``: a short summary per task."""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the summaries as JSON.")
def command(as_json: bool) -> int:
    """Show each task's status, session, PR, CI, blockers and review rounds."""
    from gitpilot.output import out
    from gitpilot.repo import Repo
    from gitpilot.tasks.control import summaries

    rows = summaries(Repo.discover(Path.cwd()))
    if as_json:
        out(json.dumps(rows, sort_keys=True, ensure_ascii=False, indent=1))
        return 0
    if not rows:
        out("no tasks yet: start one with git pilot run")
        return 0
    for row in rows:
        session = row["short_id"] or (row["session"] or "")[:8] or "-"
        out(f"{row['task'][:12]}  {row['summary']}  [{row['agent'] or '-'} {session}]  {row['title']}")
    return 0
