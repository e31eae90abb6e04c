"""What an installed hook runs: one git hook event, dispatched to its handler.

Called by the shims ``git pilot hooks install`` writes (and by ``git pilot hook <event>``). It first drops
the repository-location variables git set for the hook (GIT_DIR, GIT_INDEX_FILE, ...) from
its own environment, so nothing it starts (git against a temporary worktree or a remote, a
check command) inherits them; the repository is found from the working directory, which git
sets to the top of the worktree. The post-* events arrive detached (the shim put them in the
background): they leave the terminal's session, lower their priority, never fail, and log
errors to ``<git common dir>/pilot/logs/hooks.log``. pre-push runs in the foreground, since
its gate may refuse the push. Imports stay lazy: this module is on the hook's hot path.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from gitpilot.gitenv import REPO_LOCATION_VARS

# The git hooks git pilot has a part in (the shims of the others only forward).
EVENTS = ("post-checkout", "post-commit", "post-merge", "post-rewrite", "pre-push")


def main(argv: Sequence[str]) -> int:
    if not argv or argv[0] not in EVENTS:
        got = argv[0] if argv else "nothing"
        sys.stderr.write(f"git pilot hook: expected one of {', '.join(EVENTS)}, got {got}\n")
        return 2
    event, args = argv[0], list(argv[1:])
    for name in REPO_LOCATION_VARS:
        os.environ.pop(name, None)
    if event == "pre-push":
        return _pre_push(args)
    return _background(event, args)


def _pre_push(args: list[str]) -> int:
    from gitpilot.errors import PilotError
    from gitpilot.hooks.prepush import run_pre_push

    try:
        return run_pre_push(Path.cwd(), args, sys.stdin.buffer.read())
    except PilotError as exc:
        sys.stderr.write(f"git pilot: {exc}\n")
        return exc.exit_code


def _background(event: str, args: list[str]) -> int:
    if os.environ.get("GIT_PILOT_HOOKS_SYNC") != "1":
        _detach()
    from gitpilot.hooks import jobs

    try:
        from gitpilot.repo import Repo

        repo = Repo.discover(Path.cwd())
    except Exception as exc:  # not in a repository we can open: nothing to keep current
        jobs.log(None, event, f"skipped: {exc}")
        return 0
    try:
        if event in ("post-checkout", "post-merge", "post-rewrite"):
            jobs.refresh(repo)
        if event in ("post-commit", "post-rewrite"):
            jobs.record_budget(repo, repo.head())
    except Exception:  # a detached job must never fail the git command; the log says why
        jobs.log_exception(repo, event)
    return 0


def _detach() -> None:
    """Leave the terminal's session (no SIGHUP when it closes) and yield the CPU to the user."""
    try:
        os.setsid()
    except OSError:
        pass
    try:
        os.nice(10)
    except OSError:
        pass
