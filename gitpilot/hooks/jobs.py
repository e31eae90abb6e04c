"""The detached work of the post-* hooks: cache refresh and review budgets, coalesced under a lock.

Each capability plugs in through an optional function: ``gitpilot.context.cache.
refresh_section_maps(repo)`` refreshes the section maps of the context files whose blob ids
changed, and ``gitpilot.review.budget.record_for_commit(repo, commit)`` records a commit's
review budget. A capability that is not there (yet) is skipped, silently. Refreshes of one
worktree are coalesced: a hook that finds a refresh running leaves a request that the
running one picks up, so a burst of checkouts costs one or two refreshes, never a queue.
"""

from __future__ import annotations

import importlib
import os
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitpilot.fileio import rename

if TYPE_CHECKING:  # pragma: no cover
    from gitpilot.repo import Repo

_LOG_LIMIT = 1 << 20


def optional(module: str, attr: str) -> Callable[..., Any] | None:
    """``module.attr`` if that capability exists; None if its module is absent."""
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and (module == exc.name or module.startswith(exc.name + ".")):
            return None
        raise
    func = getattr(mod, attr, None)
    return func if callable(func) else None


def refresh(repo: Repo) -> bool:
    """Bring the caches up to date for the new HEAD; False when no capability has one."""
    func = optional("gitpilot.context.cache", "refresh_section_maps")
    if func is None:
        return False
    main = repo.git_dir.resolve() == repo.common_dir.resolve()
    name = "refresh-" + ("main" if main else f"wt-{repo.git_dir.name}")
    coalesced(repo, name, lambda: func(repo))
    return True


def record_budget(repo: Repo, commit: str | None) -> bool:
    """Record the review budget of ``commit``; False when the review capability is absent."""
    if commit is None:
        return False
    func = optional("gitpilot.review.budget", "record_for_commit")
    if func is None:
        return False
    func(repo, commit)
    return True


def coalesced(repo: Repo, name: str, work: Callable[[], object]) -> None:
    """Run ``work`` under an exclusive lock; if it is held, leave a request for the holder.

    The holder reruns ``work`` while requests keep arriving, and checks once more after it
    lets go, so no request made while it was working is lost.
    """
    import fcntl

    locks = repo.pilot_dir / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    pending = locks / f"{name}.pending"
    pending.touch()
    fd = os.open(locks / f"{name}.lock", os.O_CREAT | os.O_RDWR, 0o644)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return  # the holder will see our request
            try:
                while _take(pending):
                    work()
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
            if not pending.exists():
                return
    finally:
        os.close(fd)


def _take(pending: Path) -> bool:
    try:
        pending.unlink()
    except FileNotFoundError:
        return False
    return True


def log(repo: Repo | None, event: str, message: str) -> None:
    """Append one line to ``<git common dir>/pilot/logs/hooks.log`` (rotated at 1 MiB)."""
    if repo is None:
        return
    path = repo.pilot_dir / "logs" / "hooks.log"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and path.stat().st_size > _LOG_LIMIT:
            rename(path, path.with_suffix(".log.old"))  # a log: not synced
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"{stamp} {event} pid {os.getpid()}: {message.rstrip()}\n")
    except OSError:
        pass


def log_exception(repo: Repo, event: str) -> None:
    log(repo, event, "failed:\n" + traceback.format_exc())
