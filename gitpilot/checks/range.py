"""``git pilot check --range A..B``: check the tree of each commit of a range, oldest first.

Each commit's tree is judged from the stored records first, with no checkout at all: a commit
whose every check already passed on its tree (or on its scoped subtrees) costs a notes read.
Only a commit with something to run is checked out, into one temporary detached worktree
under ``<git dir>/pilot/range/`` (hooks off, its own index), which is moved from commit to
commit (``checkout --force`` and ``clean -fd``: untracked files a check left are removed,
ignored build output is kept, as an incremental build would) and removed at the end, on an
interrupt too. The user's working tree, index, HEAD and refs are never touched. The checks are
the current configuration's, so a check added today can be run over old commits.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from gitpilot import output
from gitpilot.checks.engine import (
    CheckOptions,
    Outcome,
    check_worktree,
    outcome_json,
    reused_outcomes,
    shown_command,
)
from gitpilot.checks.scope import tree_snapshot
from gitpilot.config import CheckSpec, Config
from gitpilot.errors import PilotError, UsageError
from gitpilot.repo import Repo


class Commit:
    __slots__ = ("sha", "tree", "subject")

    def __init__(self, sha: str, tree: str, subject: str) -> None:
        self.sha = sha
        self.tree = tree
        self.subject = subject


def range_commits(repo: Repo, spec: str) -> list[Commit]:
    """The commits of ``spec`` (``A..B`` and the other forms git takes), parents before children."""
    if not spec or spec.startswith("-"):
        raise UsageError(f"--range needs a range such as main..HEAD, not {spec!r}")
    parsed = repo.git_proc("rev-parse", "--revs-only", "--end-of-options", spec)
    if parsed.returncode != 0 or not parsed.stdout.strip():
        raise UsageError(f"--range {spec}: not a range of this repository's commits")
    if not any(ln.startswith(b"^") for ln in parsed.stdout.splitlines()):
        raise UsageError(f"--range {spec}: no lower bound, it would check every commit back to the first; "
                         "write A..B (commits after A up to B)")
    proc = repo.git_proc("rev-list", "--reverse", "--topo-order", "--no-commit-header",
                         "--format=%H%x00%T%x00%s", "--end-of-options", spec, "--")
    if proc.returncode != 0:
        raise UsageError(f"--range {spec}: not a range of this repository's commits")
    commits = []
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        sha, _, rest = line.partition("\0")
        tree, _, subject = rest.partition("\0")
        if sha and tree:
            commits.append(Commit(sha, tree, subject))
    return commits


class Scratch:
    """The temporary worktree, created when the first commit needs a checkout."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        self.path: Path | None = None

    def checkout(self, sha: str) -> Repo:
        quiet = {"GIT_PILOT_SKIP_HOOKS": "1"}
        if self.path is None:
            base = self.repo.worktree_pilot_dir / "range"
            base.mkdir(parents=True, exist_ok=True)
            self._drop_stale(base)
            self.path = base / f"wt-{os.getpid()}-{time.monotonic_ns()}"
            # No hooks in the temporary worktree: neither ours nor the user's post-checkout.
            self.repo.git("-c", "core.hooksPath=/dev/null", "worktree", "add", "--quiet", "--detach",
                          str(self.path), sha, env=quiet)
        else:
            wt = Repo.discover(self.path)
            wt.git("-c", "core.hooksPath=/dev/null", "checkout", "--quiet", "--force", "--detach", sha, env=quiet)
            wt.git("clean", "-fdq")
        return Repo.discover(self.path)

    def _drop_stale(self, base: Path) -> None:
        """The temporary worktrees of range runs that were killed (their pid is gone)."""
        from gitpilot.procs import alive

        for entry in sorted(base.iterdir()):
            parts = entry.name.split("-")
            if len(parts) == 3 and parts[0] == "wt" and parts[1].isdigit() and not alive(int(parts[1])):
                self.repo.git_proc("worktree", "remove", "--force", str(entry))
                shutil.rmtree(entry, ignore_errors=True)
        self.repo.git_proc("worktree", "prune")

    def remove(self) -> None:
        if self.path is not None:
            self.repo.git_proc("worktree", "remove", "--force", str(self.path))
            shutil.rmtree(self.path, ignore_errors=True)
            self.repo.git_proc("worktree", "prune")
            try:
                self.path.parent.rmdir()  # only when no other range run is using it
            except OSError:
                pass
            self.path = None


def run_range(repo: Repo, cfg: Config, checks: list[CheckSpec], opts: CheckOptions) -> int:
    assert opts.range is not None
    commits = range_commits(repo, opts.range)
    done: list[tuple[Commit, list[Outcome]]] = []
    scratch = Scratch(repo)
    lost: PilotError | None = None
    try:
        for commit in commits:
            outcomes = None if opts.force else reused_outcomes(repo, cfg, checks, tree_snapshot(repo, commit.tree, checks))
            if outcomes is None:
                run = check_worktree(scratch.checkout(commit.sha), cfg, checks, opts)
                outcomes = run.outcomes
                lost = lost or run.lost
            done.append((commit, outcomes))
            if not opts.json:
                for line in commit_lines(commit, outcomes):
                    output.out(line)
            if opts.bail and any(o.result == "fail" for o in outcomes):
                break
    finally:
        scratch.remove()
    failed = any(o.result == "fail" for _, outs in done for o in outs)
    if opts.json:
        output.out(json.dumps(range_json(opts.range, commits, done), indent=2, sort_keys=True))
    else:
        for line in summary_lines(opts.range, commits, done, opts.explain):
            output.out(line)
    if lost is not None:
        output.err(f"git pilot: check results not recorded: {lost}")
        return 1
    return 1 if failed else 0


def _detail(o: Outcome) -> str:
    if o.reused is not None:
        return "reused"
    if o.result == "pass":
        return f"{o.seconds:.1f}s" + (f" · {o.passed_count} passed" if o.passed_count is not None else "")
    how = f"timed out after {o.minutes:g} min" if o.timed_out else f"exit {o.exit_code} ({o.seconds:.1f}s)"
    return f"{how} · log: {o.log_path}"


def commit_lines(commit: Commit, outcomes: list[Outcome]) -> list[str]:
    """One line per check of the commit."""
    subject = commit.subject if len(commit.subject) <= 50 else commit.subject[:49] + "…"
    lines = []
    for o in outcomes:
        verdict = output.paint("PASS", "green") if o.result == "pass" else output.paint("FAIL", "red")
        lines.append(f"{verdict} {commit.sha[:12]} {o.check.name}: {_detail(o)}  {subject}")
        if o.not_recorded_reason:
            lines.append(f"{o.not_recorded_reason} ({commit.sha[:12]} {o.check.name})")
    return lines


def summary_lines(spec: str, commits: list[Commit], done: list[tuple[Commit, list[Outcome]]],
                  explain: bool) -> list[str]:
    if not commits:
        return [f"range {spec}: no commits"]
    outs = [o for _, outcomes in done for o in outcomes]
    passed = sum(1 for o in outs if o.result == "pass")
    reused = sum(1 for o in outs if o.reused is not None)
    failing = [(c, o) for c, outcomes in done for o in outcomes if o.result == "fail"]
    bad_commits = len({c.sha for c, _ in failing})
    line = (f"range {spec}: {len(done)} of {len(commits)} commits checked, {passed} passed"
            f"{f' ({reused} reused)' if reused else ''}, {len(failing)} failed")
    if failing:
        line += f" on {bad_commits} commit{'s' if bad_commits != 1 else ''}"
    lines = [line]
    if len(done) < len(commits):
        lines.append(f"stopped at the first failing commit (--bail): {len(commits) - len(done)} not checked")
    if failing:
        c, o = failing[0]
        lines.append(f"first failure: {c.sha[:12]} {o.check.name} ({shown_command(o.check.run)}) "
                     f"· excerpt {o.excerpt_shown} of {o.excerpt_total} lines")
        lines.extend(o.excerpt)
    if explain:
        for c, outcomes in done:
            lines.extend(f"explain: {c.sha[:12]} {o.check.name}: {o.reason} (tree {o.tree})" for o in outcomes)
    return lines


def range_json(spec: str, commits: list[Commit], done: list[tuple[Commit, list[Outcome]]]) -> dict[str, object]:
    outs = [o for _, outcomes in done for o in outcomes]
    return {
        "range": spec,
        "commits": [{"commit": c.sha, "tree": c.tree, "subject": c.subject,
                     "checks": [outcome_json(o) for o in outcomes]} for c, outcomes in done],
        "commits_in_range": len(commits),
        "passed": sum(1 for o in outs if o.result == "pass"),
        "failed": sum(1 for o in outs if o.result == "fail"),
        "reused": sum(1 for o in outs if o.reused is not None),
    }
