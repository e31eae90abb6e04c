"""``git pilot efficiency [--json] [--task [ID]] [--html FILE]``: bytes delivered to agents vs kept out, per mechanism."""

from __future__ import annotations

import json
from pathlib import Path

import click

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gitpilot.repo import Repo


@click.command("efficiency")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@click.option("--task", "task", is_flag=False, flag_value="", default=None, metavar="[ID]",
              help="Break the summary down per task; with an ID (or prefix), only that task.")
@click.option("--html", "html", metavar="FILE", type=click.Path(dir_okay=False),
              help="Write the report as one self-contained page (charts and the ledger over time).")
def command(as_json: bool, task: str | None, html: str | None) -> int:
    """Summarize the local efficiency ledger (token figures are an estimate, not provider billing)."""
    from gitpilot.efficiency import render, report
    from gitpilot.output import out
    from gitpilot.repo import Repo

    repo = Repo.discover(Path.cwd())
    if html is not None:
        out(write_page(repo, Path(html), task or None))
        return 0
    data = report(repo, task=task or None, by_task=task == "")
    if as_json:
        out(json.dumps(data, sort_keys=True, ensure_ascii=False, indent=1))
    else:
        for line in render(data):
            out(line)
    return 0


def write_page(repo: Repo, path: Path, task: str | None) -> str:
    """Write the page (beside, then renamed into place: a reader never sees half of it)."""
    from gitpilot.efficiency import ledger_path, read_events
    from gitpilot.efficiency_page import render_page
    from gitpilot.errors import PilotError
    from gitpilot.fileio import atomic_write

    events = list(read_events(ledger_path(repo)))
    if task is not None:
        events = [e for e in events if e.task is not None and e.task.startswith(task)]
    page = render_page(events, str(ledger_path(repo)), task)
    if not path.parent.is_dir():
        raise PilotError(f"cannot write {path}: {path.parent} is not a directory")
    try:
        atomic_write(path, page.encode("utf-8"))  # rendered again from the ledger at will: not synced
    except OSError as exc:
        raise PilotError(f"cannot write {path}: {exc.strerror}") from exc
    return f"wrote {path} ({len(events)} events, {len(page.encode('utf-8')):,} bytes, no external assets)"
