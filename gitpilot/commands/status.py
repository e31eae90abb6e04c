"""``git pilot status [--json]``: one line per task: its age, state and last session."""

from __future__ import annotations

import calendar
import json
import time
from pathlib import Path
from typing import Any

import click

from gitpilot.commands.tasks import age_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gitpilot.repo import Repo


@click.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the summaries as JSON.")
def command(as_json: bool) -> int:
    """Show each task's age, state (status, PR, CI, blockers, review rounds) and last session."""
    from gitpilot.output import out
    from gitpilot.repo import Repo
    from gitpilot.store.tasks import record_times
    from gitpilot.tasks.control import summaries

    repo = Repo.discover(Path.cwd())
    rows = summaries(repo)
    _quota_truth(repo, rows)
    times = record_times(repo)
    now = time.time()
    for row in rows:
        # unix time of the task record's last commit (the age is worked out from it when shown,
        # so --json stays the same bytes for the same records)
        row["record_updated"] = times.get(row["task"], ("", 0))[1] or None
    rows.sort(key=lambda r: (-int(r["record_updated"] or 0), str(r["task"])))  # the most recently touched first
    if as_json:
        out(json.dumps(rows, sort_keys=True, ensure_ascii=False, indent=1))
        return 0
    if not rows:
        out("no tasks yet: start one with git pilot run")
        return 0
    for line in table(rows, now):
        out(line)
    return 0


def _quota_truth(repo: Repo, rows: list[dict[str, Any]]) -> None:
    """A task's recorded quota wait as its ticket stands now: a cancelled or expired ticket is
    no "resume scheduled" (``quota_ticket``: scheduled, cancelled, expired, resumed, ...)."""
    from gitpilot.quota import clock, tickets

    waiting = [r for r in rows if r["status"] == "waiting-quota" and isinstance(r.get("quota_wait"), dict)]
    if not waiting:
        return
    moment = clock.now()
    for row in waiting:
        state, line = tickets.wait_line(repo.pilot_dir, row["task"], row["quota_wait"], moment)
        row["quota_ticket"] = state
        rest = row["summary"].partition(" · ")[2]  # the status comes first, then PR, CI, blockers
        row["summary"] = f"{line} · {rest}" if rest else line


def _session(row: dict[str, Any], now: float) -> str:
    ident = row["short_id"] or (row["session"] or "")[:8]
    if not row["agent"] and not ident:
        return "none"
    started = _epoch(row.get("session_started"))
    ago = f", started {age_text(now - started)} ago" if started is not None else ""
    return f"{row['agent'] or '-'} {ident or '-'}{ago}"


def _epoch(iso: object) -> float | None:
    if not isinstance(iso, str):
        return None
    try:
        return calendar.timegm(time.strptime(iso[:19], "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return None


def table(rows: list[dict[str, Any]], now: float) -> list[str]:
    """One line per task: id, age (since its record was last updated), state, [last session], title."""
    cells = []
    for row in rows:
        age = age_text(now - row["record_updated"]) if row["record_updated"] else "-"
        cells.append((row["task"][:12], age, row["summary"], f"[{_session(row, now)}]", row["title"]))
    widths = [max(len(c[i]) for c in cells) for i in range(4)]
    return [("  ".join([c[0], c[1].rjust(widths[1]), c[2].ljust(widths[2]), c[3].ljust(widths[3])]) + "  " + c[4]).rstrip()
            for c in cells]
