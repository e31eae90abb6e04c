"""Codex review rounds within the budget: ``git pilot codex review``.

One call runs at most one round: the native ``codex review --base <branch>`` (exactly that argv,
never a model flag; the working directory is the repository, since ``codex review`` has no
``-C``). The agent fixes what a round found and calls again; the next round runs only while
the task has budget left. Review stops early when a round finds nothing: further calls on the
same checked state run nothing, and the rounds the budget no longer needs are recorded in the
efficiency ledger as skipped.

What "finds nothing" means, from the real CLI (codex-cli 0.171.0, ``fixtures/agent-cli-
samples/``): a review with findings prints on stdout a header line ``Review comment:`` (one
finding) or ``Full review comments:`` (several), each finding as ``- [P<n>] <title> — <path>:
<lines>``; a review with none prints only its overall explanation. So a round *found nothing*
when codex exits 0 and its stdout has neither header nor ``[P<n>]`` item. A round that exits
non-zero, or prints ``Review was interrupted`` (the usage-limit case), failed: it is not
counted and the failure line is shown. A usage limit is recorded on the task (``waiting-quota``
with the stated reset, and a resume ticket when ``[quota] auto_resume`` is on: quota/schedule).

Only the review text (stdout, credentials redacted) reaches the agent; codex's stderr (its
banner, the prompt echo, warnings, and a second copy of the review) goes to a log file, and
those bytes are what the ledger records as kept out. Rounds are counted in the task record
(``state.json``'s ``review_rounds_used``, and ``review.json`` with one entry per round); outside
a task, per branch and merge base in ``<git common dir>/pilot/review/rounds.json``.

A count that cannot be read never grants rounds: when ``rounds.json`` (or a task's
``review.json``) is damaged (not JSON, or its rounds not a list of rounds), the budget is
treated as spent, the report says which file and why, and the file is left as it is (writing
a fresh one would reset the count). Only a missing file or entry means no round ran yet.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitpilot.errors import PilotError
from gitpilot.fileio import atomic_write
from gitpilot.repo import Repo
from gitpilot.review.budget import Budget, compute_budget

REVIEW_FILE = "review.json"
ROUND_TIMEOUT = 60 * 60.0
_FINDING = re.compile(r"^\s*-\s*\[P\d+\]", re.M)
_HEADER = re.compile(r"^\s*(Review comment|Full review comments):\s*$", re.M)
_INTERRUPTED = "Review was interrupted"
_ERROR_PREFIX = re.compile(r"^ERROR:\s*")


@dataclass
class ReviewReport:
    """What one ``codex review`` call did: ran a round, or why it ran none."""

    action: str  # "ran", "failed", "no-review" (budget 0), "done" (clean already), "spent"
    budget: Budget
    task: str | None
    rounds_used: int
    round: int | None = None
    findings: int = 0
    clean: bool = False
    review: str = ""
    log: str | None = None
    failure: str | None = None
    quota: str | None = None  # a usage limit stopped the round: what was recorded for it
    argv: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "task": self.task, "rounds_used": self.rounds_used,
                "round": self.round, "findings": self.findings, "clean": self.clean, "review": self.review,
                "log": self.log, "failure": self.failure, "quota": self.quota, "argv": self.argv,
                "budget": self.budget.to_json()}


def round_findings(stdout: str) -> int:
    """Findings a review printed (0: it found nothing); see the module docstring."""
    items = len(_FINDING.findall(stdout))
    return items if items else (1 if _HEADER.search(stdout) else 0)


# -- where rounds are counted -----------------------------------------------------------------
def task_of(repo: Repo, ident: str | None) -> str | None:
    """The task named by ``--task`` (must exist), else ``$GIT_PILOT_TASK`` if it has a record."""
    from gitpilot.store.tasks import TaskStore
    from gitpilot.tasks.session import find_task

    if ident:
        return find_task(repo, ident)
    env = os.environ.get("GIT_PILOT_TASK", "").strip()
    if env:
        try:
            tid = find_task(repo, env)
        except PilotError:
            return None
        return tid if TaskStore(repo).tip(tid) is not None else None
    return None


class DamagedHistory(PilotError):
    """The rounds already used cannot be read; no round may run on a guess."""


def _parse_history(data: bytes | None) -> tuple[dict[str, Any], str | None]:
    """The history in a stored ``review.json`` (None: none yet), and why it is damaged, if it is."""
    if data is None:
        return _history_from({}), None
    try:
        raw = json.loads(data.decode("utf-8"))
    except ValueError:
        return _history_from({}), "not valid JSON"
    return _checked(raw)


def _checked(raw: object) -> tuple[dict[str, Any], str | None]:
    if not isinstance(raw, dict):
        return _history_from({}), "not a JSON object"
    rounds = raw.get("rounds", [])
    if not isinstance(rounds, list) or not all(isinstance(r, dict) for r in rounds):
        return _history_from({}), "its 'rounds' is not a list of rounds"
    return _history_from(raw), None


def _history_from(raw: dict[str, Any]) -> dict[str, Any]:
    skipped = raw.get("skipped_recorded")
    return {"rounds": list(raw.get("rounds", [])),
            "skipped_recorded": skipped if isinstance(skipped, int) and not isinstance(skipped, bool) else 0}


def _dump(obj: Any) -> bytes:
    return (json.dumps(obj, sort_keys=True, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


class History:
    """The rounds of one task (in its record) or of one branch and merge base (local file)."""

    def __init__(self, repo: Repo, tid: str | None, budget: Budget) -> None:
        self.repo, self.tid = repo, tid
        self.key = f"{repo.current_branch() or 'HEAD'}@{budget.base}@{budget.merge_base or '-'}"
        self.local = repo.pilot_dir / "review" / "rounds.json"
        self.damaged: str | None = None  # where and why the count cannot be read (after read())

    def read(self) -> dict[str, Any]:
        """The history; ``self.damaged`` says when it could not be read (then treat it as spent)."""
        if self.tid is not None:
            from gitpilot.store.tasks import TaskStore

            history, why = _parse_history(TaskStore(self.repo).read_file(self.tid, REVIEW_FILE))
            self.damaged = f"{REVIEW_FILE} of task {self.tid[:12]} is damaged ({why})" if why else None
            return history
        history, self.damaged = self._local_history()
        return history

    def _local_history(self) -> tuple[dict[str, Any], str | None]:
        allh, why = self._local()
        if why is None and self.key in allh:
            history, bad = _checked(allh[self.key])
            why = f"its entry for {self.key}: {bad}" if bad else None
        else:
            history = _history_from({})
        return history, (f"{self.local} is damaged ({why})" if why else None)

    def _local(self) -> tuple[dict[str, Any], str | None]:
        """Every branch's history in the local file, and why the file is damaged, if it is."""
        try:
            data = self.local.read_bytes()
        except FileNotFoundError:
            return {}, None
        except OSError as exc:
            return {}, f"cannot be read: {exc.strerror or exc}"
        try:
            raw = json.loads(data.decode("utf-8"))
        except ValueError:
            return {}, "not valid JSON"
        return (raw, None) if isinstance(raw, dict) else ({}, "not a JSON object")

    def update(self, change: Any, message: str) -> dict[str, Any]:
        """Apply ``change(history)``; in a task, ``review_rounds_used`` lands in the same commit.

        A damaged history is never overwritten (a fresh one would reset the count): DamagedHistory."""
        if self.tid is None:
            allh, _ = self._local()
            history, damaged = self._local_history()
            if damaged:
                raise DamagedHistory(f"{damaged}; not overwritten")
            change(history)
            allh[self.key] = history
            self.local.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.local, _dump(allh), fsync=True)  # the rounds a budget counts: synced
            return history
        from gitpilot.store.tasks import TaskStore
        from gitpilot.tasks.state import STATE_FILE, parse_state, state_bytes

        result: dict[str, Any] = {}
        tid = self.tid

        def apply(files: dict[str, bytes]) -> dict[str, bytes | None]:
            history, why = _parse_history(files.get(REVIEW_FILE))
            if why:
                raise DamagedHistory(f"{REVIEW_FILE} of task {tid[:12]} is damaged ({why}); not overwritten")
            change(history)
            state = parse_state(files.get(STATE_FILE))
            state["review_rounds_used"] = len(history["rounds"])
            result.clear()
            result.update(history)
            return {**files, REVIEW_FILE: _dump(history), STATE_FILE: state_bytes(state)}

        TaskStore(self.repo).update(self.tid, apply, message)
        return result


# -- one call ---------------------------------------------------------------------------------
def review(repo: Repo, base: str | None = None, task: str | None = None) -> ReviewReport:
    """Run one review round if the budget allows; else say why not (and record rounds skipped)."""
    budget = compute_budget(repo, base)
    tid = task_of(repo, task)
    hist = History(repo, tid, budget)
    history = hist.read()
    rounds = history["rounds"]
    used = len(rounds)
    report = ReviewReport("ran", budget, tid, used)
    if hist.damaged and budget.rounds > 0:
        report.action = "spent"
        report.rounds_used = budget.rounds
        report.lines.append(f"review budget treated as spent: {hist.damaged}, so the rounds already used "
                            f"are unknown; no further Codex review for this {budget.cls} change "
                            "(the file was left as it is; repair it to review again)")
        return report
    if budget.rounds == 0:
        report.action = "no-review"
        report.lines.append(f"no review round: {budget.cls} change against {budget.base} "
                            f"({budget.reasons[-2] if len(budget.reasons) > 1 else budget.reasons[0]})")
        if budget.cls != "empty" and not hist.damaged:  # nothing changed: no round would have run anyway, nothing saved
            _record_skipped(repo, hist, tid, budget, used, history)
        return report
    last = rounds[-1] if rounds else None
    if last is not None and last.get("clean") and last.get("tree") == budget.tree:
        report.action = "done"
        report.lines.append(f"review done: round {used} found nothing on this state; not run again "
                            f"({used} of {budget.rounds} round(s) used)")
        return report
    if used >= budget.rounds:
        report.action = "spent"
        report.lines.append(f"review budget spent: {used} of {budget.rounds} round(s) used for this "
                            f"{budget.cls} change; no further Codex review")
        _record_skipped(repo, hist, tid, budget, used, history)
        return report
    return _run_round(repo, hist, report, history)


def _record_skipped(repo: Repo, hist: History, tid: str | None, budget: Budget, used: int,
                    history: dict[str, Any]) -> None:
    """Rounds the fixed ``max_rounds`` would have run that this change no longer needs (once)."""
    from gitpilot.efficiency import record

    skipped = budget.max_rounds - used - int(history["skipped_recorded"])
    if skipped <= 0:
        return
    sizes = [int(r.get("delivered", 0)) for r in history["rounds"]]
    mean = sum(sizes) // len(sizes) if sizes else 0

    def change(h: dict[str, Any]) -> None:
        h["skipped_recorded"] = int(h["skipped_recorded"]) + skipped

    hist.update(change, f"pilot: review rounds skipped ({skipped})")
    record(repo, "review", 0, skipped * mean, task=tid, rounds_skipped=skipped,
           review_class=budget.cls, budget=budget.rounds, max_rounds=budget.max_rounds,
           avoided_estimate="rounds skipped x mean review output of this change" if mean else "no round ran")


def _run_round(repo: Repo, hist: History, report: ReviewReport, history: dict[str, Any]) -> ReviewReport:
    from gitpilot.agents.base import REVIEW
    from gitpilot.agents.codex import CodexAdapter
    from gitpilot.efficiency import record
    from gitpilot.redact import redact

    budget, tid = report.budget, report.task
    adapter = CodexAdapter()
    features = adapter.features(cache_dir=repo.pilot_dir / "agents")
    cmd = f"codex review --base {budget.base}"
    if not features.installed:
        raise PilotError(f"codex is not installed (not found on PATH); run the review yourself: {cmd}")
    if not features.has(REVIEW):
        raise PilotError(f"the installed codex ({features.version or features.path}) has no `review` "
                         "command; update codex")
    argv = [str(features.path), "review", "--base", budget.base]
    report.argv = argv
    n = report.rounds_used + 1
    if tid is not None:
        from gitpilot.agents.base import Invocation
        from gitpilot.tasks.launch import log_launch

        log_launch(repo, tid, Invocation(tuple(argv), "print"), f"codex review round {n}")
    code, stdout, stderr = run_cli(repo, argv, tid, ROUND_TIMEOUT)
    log = _write_log(repo, tid, n, argv, code, stdout, stderr)
    report.log = str(log)
    report.round = n
    if code != 0 or _INTERRUPTED in stdout:
        report.action = "failed"
        report.failure = _failure(stdout, stderr, code)
        report.lines.append(f"codex review round {n} failed (not counted): {report.failure}")
        report.quota = quota_stop(repo, tid, stdout, stderr, "git pilot codex review")
        if report.quota:
            report.lines.append(report.quota)
        report.lines.append(f"log: {log}")
        return report
    text = redact(stdout.strip("\n"))
    report.review = text
    report.findings = round_findings(stdout)
    report.clean = report.findings == 0
    delivered = len(text.encode("utf-8")) + 1
    entry = {"n": n, "at": _now(), "tree": budget.tree, "base": budget.base, "class": budget.cls,
             "findings": report.findings, "clean": report.clean, "delivered": delivered}

    def change(h: dict[str, Any]) -> None:
        h["rounds"].append(entry)

    updated = hist.update(change, f"pilot: codex review round {n} ({report.findings} finding(s))")
    report.rounds_used = len(updated["rounds"])
    head = (f"codex review round {n} of {budget.rounds} ({budget.cls} change against {budget.base}): "
            f"{report.findings} finding(s)")
    report.lines.append(head)
    report.lines.append(text)
    if report.clean:
        left = budget.rounds - report.rounds_used
        report.lines.append(f"round {n} found nothing: review done, stopping early"
                            + (f" ({left} round(s) of the budget unused)" if left else ""))
    elif report.rounds_used >= budget.rounds:
        report.lines.append(f"that was the last round of the budget ({budget.rounds}); fix what it found "
                            "and finish without another Codex review")
    else:
        report.lines.append(f"fix what it found, then run git pilot codex review again "
                            f"({budget.rounds - report.rounds_used} round(s) left)")
    report.lines.append(f"full codex output: {log}")
    record(repo, "review", delivered, len(stderr.encode("utf-8")), task=tid, rounds_run=1, round=n,
           findings=report.findings, review_class=budget.cls)
    if report.clean:
        _record_skipped(repo, hist, tid, budget, report.rounds_used, updated)
    return report


def run_cli(repo: Repo, argv: list[str], tid: str | None, timeout: float) -> tuple[int, str, str]:
    """Run a codex command in the worktree (clean git environment, the task id, no stdin)."""
    from gitpilot.gitrun import clean_env

    # Codex states a reset as a clock time without a zone ("try again at 3:42 PM"), in its own
    # local time: pin that zone, so the time can be read back (quota_stop).
    env = clean_env({"TZ": pinned_tz(), **({"GIT_PILOT_TASK": tid} if tid else {})})
    try:
        proc = subprocess.run(argv, cwd=repo.workdir, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode("utf-8", "replace") if isinstance(exc.stdout, bytes) else ""
        return 124, out, f"timed out after {timeout / 60:g} minutes"
    except OSError as exc:
        raise PilotError(f"cannot run {argv[0]}: {exc.strerror or exc}") from exc
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def pinned_tz() -> str:
    """The zone codex runs in: the user's TZ when zoneinfo knows it, else UTC."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    tz = os.environ.get("TZ", "")
    try:
        return tz if tz and ZoneInfo(tz) else "UTC"
    except (ZoneInfoNotFoundError, ValueError):
        return "UTC"


def quota_stop(repo: Repo, tid: str | None, stdout: str, stderr: str, what: str) -> str | None:
    """A usage limit in a failed codex command's output: recorded on the task (and a resume
    ticket when ``[quota] auto_resume`` is on); the line that says so, or None for another failure."""
    from gitpilot.quota.schedule import handle_tool_stop

    try:
        stop = handle_tool_stop(repo, output=stderr + "\n" + stdout, task_id=tid, provider="codex", what=what,
                                pinned_zone=pinned_tz())
    except (PilotError, ValueError) as exc:
        return f"could not record the quota stop: {exc}"
    return stop.message if stop.kind == "quota" else None


def _failure(stdout: str, stderr: str, code: int) -> str:
    from gitpilot.quota.classify import classify
    from gitpilot.quota.clock import now

    try:
        verdict = classify(stderr + "\n" + stdout, now())
        if verdict.kind != "unknown" and verdict.evidence:
            return f"{verdict.kind}: {_ERROR_PREFIX.sub('', verdict.evidence)}"
    except (ValueError, KeyError):
        pass
    errors = [ln.strip() for ln in (stderr + "\n" + stdout).splitlines() if ln.strip().startswith("ERROR")]
    if errors:
        return errors[-1]
    if _INTERRUPTED in stdout:
        return _INTERRUPTED
    first = next((ln.strip() for ln in stderr.splitlines() if ln.strip()), "")
    return first or f"exit {code}"


def _write_log(repo: Repo, tid: str | None, n: int, argv: list[str], code: int, stdout: str,
               stderr: str) -> Path:
    base = repo.pilot_dir / "review" / (tid or "adhoc")
    base.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    path = base / f"{stamp}-{os.getpid()}-round{n}.log"
    path.write_text(f"$ {' '.join(argv)}\n[exit {code}]\n--- stdout:\n{stdout}\n--- stderr:\n{stderr}",
                    "utf-8")
    return path


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
