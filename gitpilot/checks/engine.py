"""Running the checks: decide per check whether a recorded pass can be reused, run the rest
quietly and record the results. What is shown of them is ``gitpilot/checks/report.py``'s.

Imported on the cache-hit hot path without click or pygit2: a hit costs one tree-id
computation with stock git and one ``git cat-file --batch`` read of the note.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

from gitpilot import output
from gitpilot.checks.records import CHECKS_REF, Record, judge, key_hash, new_record, parse_body, this_platform
from gitpilot.checks.scope import Scope, Snapshot, scope_of, scoped_snapshot, worktree_snapshot
from gitpilot.config import CheckSpec, Config
from gitpilot.errors import PilotError, RecordLost
from gitpilot.repo import Repo
from gitpilot.store.notes import NotesStore

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gitpilot.share.trust import Trust

_TASK_RE = re.compile(r"^[A-Za-z0-9._-]{1,80}$")
class CheckOptions:
    """What the command line asked for."""

    __slots__ = ("force", "only", "bail", "json", "explain", "range", "progress")

    def __init__(self, force: bool = False, only: str | None = None, bail: bool = False, json: bool = False,
                 explain: bool = False, range: str | None = None, progress: bool = True) -> None:
        self.force = force
        self.only = only
        self.bail = bail
        self.json = json
        self.explain = explain
        self.range = range  # "A..B": check each commit's tree (gitpilot/checks/range.py)
        self.progress = progress


class Outcome:
    """What happened to one check in this invocation."""

    def __init__(self, check: CheckSpec, result: str, reused: Record | None = None, seconds: float = 0.0,
                 exit_code: int | None = None, timed_out: bool = False, log_path: Path | None = None,
                 log_size: int = 0, flaky: bool = False, reason: str = "", minutes: float = 0.0,
                 tree: str = "") -> None:
        self.check = check
        self.tree = tree  # the checked state's tree id this outcome belongs to
        self.result = result  # "pass" / "fail"
        self.reused = reused
        self.seconds = seconds
        self.exit_code = exit_code
        self.timed_out = timed_out
        self.log_path = log_path
        self.log_size = log_size
        self.excerpt: list[str] = []
        self.excerpt_shown = 0
        self.excerpt_total = 0
        self.passed_count: int | None = None
        self.recorded = False
        self.not_recorded_reason = ""
        self.flaky = flaky
        self.reason = reason
        self.minutes = minutes


def current_task() -> str:
    task = os.environ.get("GIT_PILOT_TASK", "")
    return task if _TASK_RE.match(task) else "adhoc"


def load_trust(repo: Repo, cfg: Config) -> Trust:
    """Whose records count here: ``git config pilot.trust``, narrowed by ``[share] trust``."""
    from gitpilot.share.trust import load_trust as load

    return load(repo, cfg)


def load_records(repo: Repo, tree: str) -> list[Record]:
    """The records of ``tree``: those made here (no ``remote``) and those ``git pilot share pull``
    merged in, each tagged by the pull with the remote it arrived from (see gitpilot/share)."""
    return load_records_of(repo, [tree])[tree]


def load_records_of(repo: Repo, trees: list[str]) -> dict[str, list[Record]]:
    """The records of each tree, read in one ``git cat-file --batch``."""
    bodies = NotesStore(repo, CHECKS_REF).read_many(trees)
    return {t: parse_body(bodies.get(t)) for t in trees}


def select_checks(cfg: Config, opts: CheckOptions) -> list[CheckSpec]:
    checks = [cfg.check(opts.only)] if opts.only else list(cfg.checks)
    if not checks:
        raise PilotError("no checks configured: add [[check]] tables to .gitpilot.toml (git pilot init writes one)")
    return checks


def reuse_enabled(cfg: Config) -> bool:
    return bool(cfg.get("leanloop.checks.reuse_unchanged_passes")) and bool(cfg.get("leanloop.enabled"))


class WorktreeRun:
    """The outcomes of one pass over the checks in one working tree, and its states before and after."""

    __slots__ = ("outcomes", "first", "final", "lost", "skipped")

    def __init__(self, outcomes: list[Outcome], first: Snapshot, final: Snapshot,
                 lost: PilotError | None = None, skipped: list[CheckSpec] | None = None) -> None:
        self.outcomes = outcomes
        self.first = first
        self.final = final
        self.lost = lost  # why the results could not be recorded (a stale lock, a failed signature)
        self.skipped = skipped or []  # the checks --bail did not run


def check_worktree(repo: Repo, cfg: Config, checks: list[CheckSpec], opts: CheckOptions) -> WorktreeRun:
    """Reuse or run each check in ``repo``'s working tree (the user's, or a range's temporary one)."""
    reuse_on = reuse_enabled(cfg)
    if reuse_on and not opts.force and not opts.json:  # --json reports the whole tree's id
        # Every check scoped and its pass on record: the scopes' trees alone decide, without
        # the whole tree's id (git then reads only the scopes' files). Anything else, or a
        # check that must run, takes the whole way below.
        scoped = scoped_snapshot(repo, checks)
        reused = reused_outcomes(repo, cfg, checks, scoped) if scoped is not None else None
        if scoped is not None and reused is not None:
            return WorktreeRun(reused, scoped, scoped)
    snap = worktree_snapshot(repo, checks)
    first = snap
    records = load_records_of(repo, snap.trees())
    platform = this_platform()
    trust = load_trust(repo, cfg)
    outcomes: list[Outcome] = []
    # A run's outcome belongs to the tree id computed just before it ran (for a scoped check,
    # the tree of its files), and only when that id just after is the same: a later check that
    # changes the working tree must not move earlier passes onto a tree they never saw.
    to_record: dict[str, list[Record]] = {}
    scoped_trees: dict[str, tuple[str, Scope]] = {}  # a recorded scoped id -> (whole tree, scope)
    progress = output.Progress()
    progress.active = progress.active and not opts.json and opts.progress
    email: str | None = None
    run_dir: Path | None = None
    skipped: list[CheckSpec] = []
    for n, check in enumerate(checks):
        key = key_hash(check)
        tree = snap.tree_for(check)
        seen = records[tree] + to_record.get(tree, [])  # a check listed twice reuses this run's pass
        verdict = judge(seen, check, key, platform, trust, tree)
        if verdict.reusable is not None and reuse_on and not opts.force:
            outcomes.append(Outcome(check, "pass", reused=verdict.reusable, flaky=verdict.flaky,
                                    reason=verdict.reason, tree=tree))
            continue
        reason = verdict.reason
        if opts.force:
            reason = "ran: --force"
        elif not reuse_on:
            reason = "ran: reuse of passes is off in the config"
        if run_dir is None:
            run_dir = _new_run_dir(repo)
        if email is None:
            email = repo.config_get("user.email") or ""
        outcome = _run_one(repo, cfg, check, run_dir, progress, reason, verdict.flaky)
        outcome.tree = tree
        outcomes.append(outcome)
        after = worktree_snapshot(repo, checks)
        if after.tree_for(check) != tree:
            outcome.not_recorded_reason = "not recorded: the check changed the working tree"
        else:
            when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            if check.files:
                assert snap.full is not None  # worktree_snapshot always works out the whole tree
                scoped_trees[tree] = (snap.full, scope_of(check))
            to_record.setdefault(tree, []).append(new_record(check, key, outcome.result, outcome.seconds,
                                                             outcome.exit_code, email, when))
            outcome.recorded = True
            if outcome.result == "fail" and verdict.reusable is not None:
                outcome.flaky = True
            if outcome.result == "pass" and verdict.counted_fails:
                outcome.flaky = True
        if after != snap:  # later checks are keyed by what they really see
            snap = after
            records = load_records_of(repo, snap.trees())
        if outcome.result == "fail" and opts.bail:
            skipped = checks[n + 1 :]
            break
    progress.clear()
    lost: PilotError | None = None
    _write_scoped_trees(repo, scoped_trees, to_record, outcomes)
    if to_record:
        try:
            _store(repo, trust, to_record)
        except PilotError as exc:  # the results still count and are shown; only their record is lost
            for o in outcomes:
                o.recorded = False
            if isinstance(exc, RecordLost):
                lost = exc  # a stale lock or a failed signature must not pass unnoticed: exit 1 below
            else:
                output.err(f"warning: check results not recorded: {exc}")
    if run_dir is not None:
        _prune_runs(run_dir.parent, int(cfg.get("leanloop.checks.keep_runs")))
    return WorktreeRun(outcomes, first, snap, lost, skipped)


def _write_scoped_trees(repo: Repo, scoped: dict[str, tuple[str, Scope]], to_record: dict[str, list[Record]],
                        outcomes: list[Outcome]) -> None:
    """Write the scoped trees that get records (the hit path only hashes them), so stock git can
    show what a scoped pass was keyed by; git's id must be the one hashed, or nothing is recorded."""
    for tree, (full, scope) in sorted(scoped.items()):
        try:
            written = repo.tree_ids_of(full, [scope], write=True)[0]
        except PilotError as exc:
            output.err(f"warning: scoped tree {tree[:12]} not written: {exc}")
            continue
        if written != tree:
            output.err(f"warning: scoped tree {tree[:12]} hashed differently by git ({written[:12]}); not recorded")
            to_record.pop(tree, None)
            for o in outcomes:
                if o.tree == tree and o.recorded:
                    o.recorded = False
                    o.not_recorded_reason = "not recorded: its scoped tree id could not be confirmed by git"


def reused_outcomes(repo: Repo, cfg: Config, checks: list[CheckSpec], snap: Snapshot) -> list[Outcome] | None:
    """Every check's reused pass on ``snap`` (a stored tree's state), or None when one must run."""
    if not reuse_enabled(cfg):
        return None
    records = load_records_of(repo, snap.trees())
    platform, trust = this_platform(), load_trust(repo, cfg)
    outcomes = []
    for check in checks:
        tree = snap.tree_for(check)
        verdict = judge(records[tree], check, key_hash(check), platform, trust, tree)
        if verdict.reusable is None:
            return None
        outcomes.append(Outcome(check, "pass", reused=verdict.reusable, flaky=verdict.flaky,
                                reason=verdict.reason, tree=tree))
    return outcomes


def _store(repo: Repo, trust: Trust, recs: dict[str, list[Record]]) -> None:
    # All records of one invocation land in one notes commit, each on the tree it was run on.
    if trust.settings.sign:
        from gitpilot.share.signing import sign_records

        recs = sign_records(trust.settings, recs)
    by_tree = {tree: [r.to_line() for r in lines] for tree, lines in recs.items()}
    count = sum(len(lines) for lines in recs.values())
    NotesStore(repo, CHECKS_REF).add_lines(by_tree, f"git pilot: record {count} check result(s)")


def _new_run_dir(repo: Repo) -> Path:
    base = repo.pilot_dir / "checks" / current_task()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f".{time.time_ns() % 1_000_000_000:09d}"
    run_dir = base / f"{stamp}-{os.getpid()}"
    run_dir.mkdir(parents=True, exist_ok=True)
    return run_dir


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "check"


def log_file_name(check: CheckSpec) -> str:
    return f"{check.index:02d}-{_safe_name(check.name)}.log"


def _run_one(repo: Repo, cfg: Config, check: CheckSpec, run_dir: Path, progress: output.Progress,
             reason: str, flaky: bool) -> Outcome:
    from gitpilot.checks.runner import run_command

    minutes = check.timeout_minutes if check.timeout_minutes is not None else cfg.get("leanloop.checks.timeout_minutes")
    progress.start(check.name)
    try:
        res = run_command(check.run, repo.workdir, run_dir / log_file_name(check), float(minutes) * 60,
                          tick=progress.tick)
    finally:
        progress.clear()
    ok = res.exit_code == 0 and not res.timed_out
    outcome = Outcome(check, "pass" if ok else "fail", seconds=res.seconds, exit_code=res.exit_code,
                      timed_out=res.timed_out, log_path=res.log_path, log_size=res.log_size, reason=reason,
                      flaky=flaky, minutes=float(minutes))
    from gitpilot.checks import excerpt as ex

    # The log is read in blocks, never whole: a check can print hundreds of megabytes.
    if ok:
        outcome.passed_count = ex.count_passed_file(res.log_path)
    else:
        exc = ex.excerpt_of_file(res.log_path, int(cfg.get("leanloop.checks.failure_excerpt_lines")),
                                 int(cfg.get("leanloop.checks.failure_excerpt_bytes")))
        outcome.excerpt, outcome.excerpt_shown, outcome.excerpt_total = list(exc.lines), exc.shown, exc.total
    return outcome


def _prune_runs(task_dir: Path, keep: int) -> None:
    runs = sorted(p for p in task_dir.iterdir() if p.is_dir())
    for old in runs[: max(0, len(runs) - max(keep, 1))]:
        shutil.rmtree(old, ignore_errors=True)


def latest_log(repo: Repo, cfg: Config, selector: str) -> Path:
    """The stored log of a check's latest run (any task), for ``--log``; the partial log of an
    interrupted run (``NN-name.interrupted.log``) when that run is the latest."""
    from gitpilot.checks.runner import interrupted_name

    check = cfg.check(selector)
    base = repo.pilot_dir / "checks"
    name = log_file_name(check)
    names = (name, interrupted_name(Path(name)).name)
    candidates = [p for n in names for p in base.glob(f"*/*/{n}")] if base.exists() else []
    if not candidates:
        raise PilotError(f"no stored log for check {check.name!r}: it has not run here (git pilot check --only {check.name})")
    return max(candidates, key=lambda p: (p.parent.name, str(p)))
