"""``git pilot efficiency [--json] [--task [ID]]``: bytes delivered to agents vs kept out, per mechanism."""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.command("efficiency")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@click.option("--task", "task", is_flag=False, flag_value="", default=None, metavar="[ID]",
              help="Break the summary down per task; with an ID (or prefix), only that task.")
def command(as_json: bool, task: str | None) -> int:
    """Summarize the local efficiency ledger (token figures are an estimate, not provider billing)."""
    from gitpilot.efficiency import render, report
    from gitpilot.output import out
    from gitpilot.repo import Repo

    repo = Repo.discover(Path.cwd())
    data = report(repo, task=task or None, by_task=task == "")
    if as_json:
        out(json.dumps(data, sort_keys=True, ensure_ascii=False, indent=1))
    else:
        for line in render(data):
            out(line)
    return 0
