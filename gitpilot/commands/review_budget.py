"""``git pilot review-budget [--base B] [--json]``: the Codex review rounds this change warrants, and why."""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.command("review-budget")
@click.option("--base", metavar="BRANCH",
              help="The base branch (default: base_branch, origin/HEAD, main, master).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
def command(base: str | None, as_json: bool) -> int:
    """Class, review rounds and reasons for the working tree's change against the base branch."""
    from gitpilot.output import out
    from gitpilot.repo import Repo
    from gitpilot.review.budget import compute_budget

    budget = compute_budget(Repo.discover(Path.cwd()), base)
    if as_json:
        out(json.dumps(budget.to_json(), sort_keys=True, ensure_ascii=False))
        return 0
    mb = f", merge base {budget.merge_base[:12]}" if budget.merge_base else ""
    out(f"review budget: {budget.rounds} round(s) · {budget.cls} · against {budget.base}{mb}")
    for reason in budget.reasons:
        out(f"  {reason}")
    return 0
