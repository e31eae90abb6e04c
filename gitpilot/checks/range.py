"""``git pilot check --range A..B``: check the tree of each commit of a range, oldest first
(what is shown of it is ``gitpilot/checks/report.py``'s).

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

import os
import shutil
import time
from collections.abc import Generator
from pathlib import Path

from gitpilot.checks.engine import CheckOptions, Outcome, check_worktree, reused_outcomes
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


class RangeRun:
    """The commits of a range, checked oldest first: iterating yields each commit and its
    outcomes as soon as it is done, and stops after a failing commit with ``--bail``. The
    temporary worktree is removed when the iteration ends (or is abandoned)."""

    def __init__(self, repo: Repo, cfg: Config, checks: list[CheckSpec], opts: CheckOptions) -> None:
        assert opts.range is not None
        self.repo, self.cfg, self.checks, self.opts = repo, cfg, checks, opts
        self.commits = range_commits(repo, opts.range)
        self.lost: PilotError | None = None  # why some results could not be recorded

    def __iter__(self) -> Generator[tuple[Commit, list[Outcome]], None, None]:
        repo, cfg, checks, opts = self.repo, self.cfg, self.checks, self.opts
        scratch = Scratch(repo)
        try:
            for commit in self.commits:
                outcomes = None if opts.force else reused_outcomes(repo, cfg, checks,
                                                                   tree_snapshot(repo, commit.tree, checks))
                if outcomes is None:
                    run = check_worktree(scratch.checkout(commit.sha), cfg, checks, opts)
                    outcomes = run.outcomes
                    self.lost = self.lost or run.lost
                yield commit, outcomes
                if opts.bail and any(o.result == "fail" for o in outcomes):
                    break
        finally:
            scratch.remove()
