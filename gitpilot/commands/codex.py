"""``git pilot codex review`` and ``git pilot codex plan [--force]``: Codex within the budget."""

from __future__ import annotations

import json
from pathlib import Path

import click

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gitpilot.review.codex import ReviewReport
    from gitpilot.review.plan import PlanReport


@click.group("codex", help="Codex review rounds within the review budget, and planning at most once.")
def command() -> None:
    pass


@command.command("review")
@click.option("--base", metavar="BRANCH",
              help="The base branch (default: base_branch, origin/HEAD, main, master).")
@click.option("--task", "ident", metavar="ID", help="The task (default: $GIT_PILOT_TASK).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
def review_command(base: str | None, ident: str | None, as_json: bool) -> int:
    """Run one `codex review --base B` round if the budget has one left; stop once a round finds nothing."""
    from gitpilot.repo import Repo
    from gitpilot.review.codex import review

    return _show(review(Repo.discover(Path.cwd()), base, ident), as_json)


@command.command("plan")
@click.option("--force", is_flag=True, help="Ask Codex again even if the task is already planned.")
@click.option("--task", "ident", metavar="ID", help="The task (default: $GIT_PILOT_TASK).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
def plan_command(force: bool, ident: str | None, as_json: bool) -> int:
    """Ask Codex for a plan once per task (only with [planner] enabled = true)."""
    from gitpilot.repo import Repo
    from gitpilot.review.plan import plan

    return _show(plan(Repo.discover(Path.cwd()), ident, force), as_json)


def _show(report: ReviewReport | PlanReport, as_json: bool) -> int:
    from gitpilot.output import out

    if as_json:
        out(json.dumps(report.to_json(), sort_keys=True, ensure_ascii=False))
    else:
        for line in report.lines:
            out(line)
    return 1 if report.action == "failed" else 0
