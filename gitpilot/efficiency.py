"""The efficiency ledger and its report: what reached the agents, and what each mechanism kept out.

The ledger is ``<git common dir>/pilot/efficiency.jsonl``, machine-local and append-only: one
JSON object per event, ``{"at", "mechanism", "delivered", "avoided", "task", "facts"}``, where
``delivered`` is the bytes that reached the agent and ``avoided`` the bytes the mechanism kept
out (the full context beside a capsule, the full logs beside quiet check output, the capsule
beside a continuation or delta, review rounds and plans skipped). Writers take an exclusive
``fcntl`` lock on the file, so concurrent appends never interleave. ``record`` is what the
other parts call: stdlib only, one append, and it never raises (accounting must never break
the command it accounts for). Nothing here leaves the machine.

The report sums the ledger per mechanism and in total, with a token-equivalent at 4 bytes per
token: an estimate for comparison, not what any provider bills.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from gitpilot.repo import Repo

LEDGER = "efficiency.jsonl"
BYTES_PER_TOKEN = 4
ESTIMATE_NOTE = "tokens are an estimate at 4 bytes per token, not provider billing"
_TASK_RE = re.compile(r"^[A-Za-z0-9._-]{1,80}$")


def ledger_path(repo: Repo) -> Path:
    return repo.pilot_dir / LEDGER


def _current_task() -> str | None:
    task = os.environ.get("GIT_PILOT_TASK", "")
    return task if _TASK_RE.match(task) else None


def _fact(value: Any) -> Any:
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    return str(value)


def record(repo: Repo, mechanism: str, delivered_bytes: int, avoided_bytes: int, task: str | None = None,
           **facts: Any) -> bool:
    """Append one event; ``task`` defaults to ``$GIT_PILOT_TASK``. False (never an error) on failure."""
    entry = {
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "mechanism": str(mechanism),
        "delivered": max(0, int(delivered_bytes)),
        "avoided": max(0, int(avoided_bytes)),
        "task": task if task is not None else _current_task(),
        "facts": {str(k): _fact(v) for k, v in sorted(facts.items())},
    }
    line = (json.dumps(entry, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")
    try:
        return append_line(ledger_path(repo), line)
    except (OSError, ValueError):
        return False


def append_line(path: Path, line: bytes) -> bool:
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            from gitpilot.fileio import append_whole_line

            append_whole_line(fd, line)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    return True


# -- reading and summarizing -----------------------------------------------------------------
@dataclass(frozen=True)
class Event:
    at: str
    mechanism: str
    delivered: int
    avoided: int
    task: str | None
    facts: dict[str, Any]


def read_events(path: Path) -> Iterator[Event]:
    """The ledger's events; lines that are not understood are skipped, never fatal."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    for raw in data.splitlines():
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("mechanism"), str):
            continue
        delivered, avoided = obj.get("delivered"), obj.get("avoided")
        if not isinstance(delivered, int) or not isinstance(avoided, int) or isinstance(delivered, bool):
            continue
        task = obj.get("task")
        facts = obj.get("facts")
        yield Event(str(obj.get("at", "")), obj["mechanism"], max(0, delivered), max(0, avoided),
                    task if isinstance(task, str) else None, facts if isinstance(facts, dict) else {})


@dataclass
class Totals:
    """Sums for one mechanism (or all of them)."""

    events: int = 0
    delivered: int = 0
    avoided: int = 0
    counts: dict[str, int] = field(default_factory=dict)  # summed integer facts (rounds_skipped, ...)

    def add(self, e: Event) -> None:
        self.events += 1
        self.delivered += e.delivered
        self.avoided += e.avoided
        for key, value in e.facts.items():
            if isinstance(value, int) and not isinstance(value, bool) and key.endswith(_COUNTED):
                self.counts[key] = self.counts.get(key, 0) + value

    def to_json(self) -> dict[str, Any]:
        full = self.delivered + self.avoided
        return {
            "events": self.events,
            "delivered_bytes": self.delivered,
            "avoided_bytes": self.avoided,
            "full_bytes": full,
            "kept_out_percent": round(100.0 * self.avoided / full, 1) if full else 0.0,
            "delivered_tokens_estimate": self.delivered // BYTES_PER_TOKEN,
            "avoided_tokens_estimate": self.avoided // BYTES_PER_TOKEN,
            "counts": dict(sorted(self.counts.items())),
        }


# Integer facts worth summing in the report: counts of things skipped or reused.
_COUNTED = ("_skipped", "_reused", "_used")


def summarize(events: Iterable[Event]) -> tuple[dict[str, Totals], Totals]:
    per: dict[str, Totals] = {}
    total = Totals()
    for e in events:
        per.setdefault(e.mechanism, Totals()).add(e)
        total.add(e)
    return dict(sorted(per.items())), total


def report(repo: Repo, task: str | None = None, by_task: bool = False) -> dict[str, Any]:
    """The summary as JSON-ready data: per mechanism and total (optionally per task, or one task)."""
    events = list(read_events(ledger_path(repo)))
    if task is not None:
        events = [e for e in events if e.task is not None and e.task.startswith(task)]
    per, total = summarize(events)
    data: dict[str, Any] = {
        "ledger": str(ledger_path(repo)),
        "task": task,
        "bytes_per_token": BYTES_PER_TOKEN,
        "note": ESTIMATE_NOTE,
        "mechanisms": {name: t.to_json() for name, t in per.items()},
        "total": total.to_json(),
    }
    if by_task:
        tasks: dict[str, list[Event]] = {}
        for e in events:
            tasks.setdefault(e.task or "(no task)", []).append(e)
        data["tasks"] = {}
        for name in sorted(tasks):
            tper, ttotal = summarize(tasks[name])
            data["tasks"][name] = {"mechanisms": {k: t.to_json() for k, t in tper.items()},
                                   "total": ttotal.to_json()}
    return data


def render(data: dict[str, Any]) -> list[str]:
    """The report as lines of text (the command prints them)."""
    lines: list[str] = []
    if not data["total"]["events"]:
        scope = f" for task {data['task']}" if data.get("task") else ""
        return [f"no efficiency events recorded yet{scope} ({data['ledger']})"]
    lines.extend(_table(data["mechanisms"], data["total"]))
    lines.append("")
    lines.extend(bars(data["mechanisms"]))
    for name, block in (data.get("tasks") or {}).items():
        lines.append("")
        lines.append(f"task {name[:12] if name != '(no task)' else name}:")
        lines.extend("  " + ln for ln in _table(block["mechanisms"], block["total"]))
    lines.append("")
    lines.append(f"{ESTIMATE_NOTE}; local only ({data['ledger']})")
    return lines


def _table(mechanisms: dict[str, dict[str, Any]], total: dict[str, Any]) -> list[str]:
    rows = [("mechanism", "events", "delivered", "kept out", "kept out %", "~tokens kept out")]
    for name, t in [*mechanisms.items(), ("total", total)]:
        rows.append((name, str(t["events"]), _size(t["delivered_bytes"]), _size(t["avoided_bytes"]),
                     f"{t['kept_out_percent']:.1f}%", f"{t['avoided_tokens_estimate']:,}"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for r in rows:
        cells = [r[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(r[1:], widths[1:], strict=True)]
        out.append("  ".join(cells).rstrip())
    counted = [f"{name}: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in t["counts"].items())
               for name, t in mechanisms.items() if t["counts"]]
    out.extend(counted)
    return out


_BLOCKS = " ▏▎▍▌▋▊▉█"
BAR_WIDTH = 30


def bar(value: int, peak: int, width: int = BAR_WIDTH) -> str:
    """A bar of ``value`` against ``peak`` in eighths of a character (the longest is ``width``)."""
    if peak <= 0 or value <= 0:
        return ""
    eighths = max(1, round(8 * width * value / peak))
    return "█" * (eighths // 8) + (_BLOCKS[eighths % 8] if eighths % 8 else "")


def bars(mechanisms: dict[str, dict[str, Any]]) -> list[str]:
    """Per mechanism, a bar of the bytes it kept out and one of how often it acted."""
    names = sorted(mechanisms)
    if not names:
        return []
    pad = max(len(n) for n in names)
    kept = sorted(names, key=lambda n: (-mechanisms[n]["avoided_bytes"], n))
    acted = sorted(names, key=lambda n: (-mechanisms[n]["events"], n))
    peak_kept = max(mechanisms[n]["avoided_bytes"] for n in names)
    peak_acted = max(mechanisms[n]["events"] for n in names)
    lines = ["bytes kept out"]
    for n in kept:
        b = bar(mechanisms[n]["avoided_bytes"], peak_kept)
        lines.append(f"  {n.ljust(pad)}  {b.ljust(BAR_WIDTH)}  {_size(mechanisms[n]['avoided_bytes'])}")
    lines.append("times acted")
    for n in acted:
        b = bar(mechanisms[n]["events"], peak_acted)
        lines.append(f"  {n.ljust(pad)}  {b.ljust(BAR_WIDTH)}  {mechanisms[n]['events']:,}")
    return [ln.rstrip() for ln in lines]


def _size(n: int) -> str:
    from gitpilot.output import human_size

    return human_size(n)
