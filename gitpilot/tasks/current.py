"""The current task of a worktree: the one last run or resumed in it.

``git pilot run`` and ``git pilot resume`` remember the task they acted on in
``<git dir>/pilot/current-task`` (the worktree's own git dir: each linked worktree has its
own current task). Commands that need a task and were given none (``git pilot state``, outside
an agent session that sets ``GIT_PILOT_TASK``) use it.
"""

from __future__ import annotations

from gitpilot.fileio import atomic_write
from gitpilot.repo import Repo

FILE_NAME = "current-task"


def remember(repo: Repo, tid: str) -> None:
    """Record ``tid`` as this worktree's current task (atomically: a reader sees one id or the other)."""
    path = repo.worktree_pilot_dir / FILE_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, (tid + "\n").encode("utf-8"), fsync=True)  # the user's place in their work: synced


def recall(repo: Repo) -> str | None:
    """This worktree's current task, while its record exists; None otherwise."""
    from gitpilot.store.tasks import TaskStore

    try:
        tid = (repo.worktree_pilot_dir / FILE_NAME).read_text("utf-8").strip()
    except OSError:
        return None
    if not tid or TaskStore(repo).tip(tid) is None:
        return None
    return tid
