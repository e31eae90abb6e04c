"""``git pilot tasks forget ID|--older-than AGE [--dry-run]``: remove task records and their local files.

A task record is the ref ``refs/pilot/tasks/<id>`` (a commit chain) plus the files git pilot
keeps for it on this machine (capsule, manifest, delta, plan, stamps, check logs, review
rounds). ``forget`` deletes the ref with a compare-and-swap (a record that moved meanwhile is
kept) and then those files. A task whose session is running, or that a pending quota resume
will continue, is refused: ``git pilot stop ID`` first. ``--dry-run`` lists what would go.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import click

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gitpilot.repo import Repo
    from gitpilot.store.tasks import Forgettable

_AGE = re.compile(r"^(\d+)\s*([smhdw])$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str) -> int:
    """Seconds in ``30d``, ``12h``, ``2w``, ``90m``, ``45s``."""
    m = _AGE.match(text.strip().lower())
    if not m:
        raise click.UsageError(f"--older-than {text!r}: write a number and a unit, e.g. 30d, 12h, 2w")
    return int(m.group(1)) * _UNIT[m.group(2)]


def age_text(seconds: float) -> str:
    """A short age: 45s, 12m, 5h, 3d, 6w."""
    s = max(0, int(seconds))
    for unit, size in (("w", 7 * 86400), ("d", 86400), ("h", 3600), ("m", 60)):
        if s >= size * (2 if unit == "w" else 1):
            return f"{s // size}{unit}"
    return f"{s}s"


def _blocked(repo: Repo, tid: str) -> str:
    from gitpilot.tasks.launch import running_process

    proc = running_process(repo, tid)
    if proc is not None:
        return f"its session is running (pid {proc['pid']}): git pilot stop {tid[:12]} first"
    try:
        from gitpilot.quota.tickets import pending
    except ImportError:
        return ""
    ticket = pending(repo.pilot_dir)
    if ticket is not None and ticket.task_id == tid:
        return f"a quota resume is pending for it: git pilot stop {tid[:12]} first"
    return ""


def select(repo: Repo, ident: str | None, older_than: int | None, now: float) -> list[Forgettable]:
    from gitpilot.errors import PilotError
    from gitpilot.store.tasks import Forgettable, local_files, record_times

    times = record_times(repo)
    if ident is not None:
        matches = sorted(t for t in times if t.startswith(ident.lower())) if len(ident) >= 4 else []
        if not matches:
            raise PilotError(f"no task record {ident!r} (git pilot status lists them)")
        if len(matches) > 1:
            raise PilotError(f"{ident!r} names {len(matches)} tasks ({', '.join(m[:12] for m in matches)}): "
                             "give more of the id")
        chosen = matches
    else:
        assert older_than is not None
        chosen = sorted(t for t, (_tip, when) in times.items() if now - when > older_than)
    return [Forgettable(t, times[t][0], times[t][1], local_files(repo, t), _blocked(repo, t)) for t in chosen]


def forget_tasks(cwd: Path, ident: str | None, older_than: str | None, dry_run: bool) -> tuple[list[str], int]:
    from gitpilot.repo import Repo
    from gitpilot.store.tasks import forget

    if (ident is None) == (older_than is None):
        raise click.UsageError("give a task id or --older-than AGE (not both)")
    repo = Repo.discover(cwd)
    now = time.time()
    items = select(repo, ident, parse_age(older_than) if older_than else None, now)
    lines: list[str] = []
    code = 0
    done = 0
    for item in items:
        what = f"task {item.tid[:12]} (updated {age_text(now - item.updated)} ago, {len(item.files)} local file(s))"
        if item.blocked:
            lines.append(f"kept {what}: {item.blocked}")
            code = 1
        elif dry_run:
            lines.append(f"would forget {what}")
            lines += [f"  {p}" for p in item.files]
        elif forget(repo, item):
            lines.append(f"forgot {what}")
            done += 1
        else:
            lines.append(f"kept {what}: its record changed meanwhile; try again")
            code = 1
    if not items:
        lines.append(f"no task record updated more than {older_than} ago" if older_than else "nothing to forget")
    elif dry_run:
        lines.append(f"dry run: {sum(1 for i in items if not i.blocked)} task record(s) would be forgotten; nothing removed")
    else:
        lines.append(f"{done} task record(s) forgotten")
    return lines, code


@click.group("tasks")
def command() -> None:
    """Tidy task records (refs/pilot/tasks/*)."""


@command.command("forget")
@click.argument("ident", metavar="ID", required=False)
@click.option("--older-than", metavar="AGE", help="Every task whose record was last updated longer ago (30d, 12h, 2w).")
@click.option("--dry-run", is_flag=True, help="List what would be removed, remove nothing.")
def forget_cmd(ident: str | None, older_than: str | None, dry_run: bool) -> int:
    """Remove task records (the ref and the task's local files)."""
    from gitpilot.output import out

    lines, code = forget_tasks(Path.cwd(), ident, older_than, dry_run)
    for line in lines:
        out(line)
    return code
