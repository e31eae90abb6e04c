"""Task records: ``refs/pilot/tasks/<task-id>``, a commit chain whose trees hold the task's files.

Each update is a new commit on the task ref (compare-and-swap, retried when another writer
won), so a record's history is kept and two writers never lose each other's files.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path

from gitpilot.errors import PilotError
from gitpilot.fileio import atomic_write, read_kept
from gitpilot.repo import Repo

_ID = re.compile(r"^[0-9a-f]{8,64}$")


def task_id(task_text: str) -> str:
    """The task id: blake3 hex of the task text (exact bytes, UTF-8)."""
    import blake3

    return blake3.blake3(task_text.encode("utf-8")).hexdigest()


class TaskStore:
    """Read and write task records."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo

    @staticmethod
    def ref(tid: str) -> str:
        if not _ID.match(tid):
            raise PilotError(f"not a task id: {tid!r}")
        return f"refs/pilot/tasks/{tid}"

    def list_ids(self) -> list[str]:
        out = self.repo.git("for-each-ref", "--format=%(refname)", "refs/pilot/tasks/")
        # A ref under refs/pilot/tasks/ that git pilot did not name (a stray, hand-made ref) is
        # not a task: skip it rather than let it hide every other record.
        prefix = "refs/pilot/tasks/"
        names = (ln[len(prefix):] for ln in out.decode("utf-8", "replace").splitlines() if ln.startswith(prefix))
        return sorted(n for n in names if _ID.match(n))

    def tip(self, tid: str) -> str | None:
        return self.repo.rev_parse(self.ref(tid))

    def read(self, tid: str) -> dict[str, bytes] | None:
        """The files of the task's latest record, or None when there is no record."""
        tip = self.tip(tid)
        return None if tip is None else self.read_commit(tip)

    def read_commit(self, commit: str) -> dict[str, bytes] | None:
        """The files of one record commit."""
        tree = self.repo.commit_tree_of(commit)
        if tree is None:
            return None
        names = self.repo.git("ls-tree", "-z", "--name-only", tree).split(b"\0")
        paths = [n.decode("utf-8", "surrogateescape") for n in names if n]
        bodies = self.repo.cat_file_batch([f"{tree}:{p}" for p in paths])
        return {p: b for p, b in zip(paths, bodies, strict=True) if b is not None}

    def read_file(self, tid: str, name: str) -> bytes | None:
        tip = self.tip(tid)
        if tip is None:
            return None
        return self.repo.cat_file_batch([f"{tip}:{name}"])[0]

    def write(self, tid: str, files: Mapping[str, bytes | None], message: str, *, absent: bool = False) -> str:
        """Set (or, with None, remove) files in the record; returns the new commit. ``absent``: the
        caller has just seen that there is no record (``Repo.update_ref_retrying``)."""
        return self.update(tid, lambda cur: {**cur, **files}, message, absent=absent)

    def update(
        self, tid: str, change: Callable[[dict[str, bytes]], Mapping[str, bytes | None]], message: str,
        *, absent: bool = False,
    ) -> str:
        """Apply ``change`` to the current files in a new commit (CAS, retried on a lost race)."""
        ref = self.ref(tid)

        def build(old: str | None) -> str | None:
            if old is not None and self.repo.commit_tree_of(old) is None:
                raise PilotError(f"{ref} does not point at a commit; nothing was written "
                                 f"(inspect it with git cat-file -t {ref}, remove it with git update-ref -d {ref})")
            current = (self.read_commit(old) or {}) if old else {}
            new_files = {k: v for k, v in change(dict(current)).items() if v is not None}
            if old is not None and current == new_files:
                return None  # nothing changed: the record stays as it is
            return self.repo.commit_files(sorted(new_files.items()), [old] if old else [], message)

        tip = self.repo.update_ref_retrying(ref, build, message, absent=absent)
        assert tip is not None  # build made a commit, or kept an existing one
        return tip


# -- forgetting tasks ------------------------------------------------------------------------
class Forgettable:
    """One task record and the machine-local files that belong to it."""

    __slots__ = ("tid", "tip", "updated", "files", "blocked")

    def __init__(self, tid: str, tip: str, updated: int, files: list[Path], blocked: str = "") -> None:
        self.tid = tid
        self.tip = tip  # the ref's value, for the compare-and-swap delete
        self.updated = updated  # unix time of the record's last commit
        self.files = files
        self.blocked = blocked  # why it must not be forgotten now ("" when it may)


def record_times(repo: Repo) -> dict[str, tuple[str, int]]:
    """task id -> (tip commit, unix time it was committed), for every task record, in one git call."""
    out = repo.git("for-each-ref", "--format=%(refname) %(objectname) %(committerdate:unix)", "refs/pilot/tasks/")
    found: dict[str, tuple[str, int]] = {}
    for line in out.decode("utf-8", "replace").splitlines():
        ref, _, rest = line.partition(" ")
        tip, _, when = rest.partition(" ")
        tid = ref[len("refs/pilot/tasks/"):]
        if _ID.match(tid):
            found[tid] = (tip, int(when) if when.isdigit() else 0)
    return found


def local_files(repo: Repo, tid: str) -> list[Path]:
    """The files git pilot keeps for a task outside its ref: the capsule, manifest, delta and plan
    in each worktree's ``<git dir>/pilot/``, the capsule stamps naming it, its check logs and
    review rounds under ``<git common dir>/pilot/``."""
    common = repo.common_dir
    git_dirs = [common, *sorted(p for p in (common / "worktrees").glob("*") if p.is_dir())]
    found: list[Path] = []
    for gd in git_dirs:
        pilot = gd / "pilot"
        found += [pilot / f"{stem}-{tid}{ext}" for stem, ext in (("capsule", ".md"), ("capsule", ".json"),
                                                                 ("delta", ".md"), ("plan", ".md"))]
        found += [s for s in sorted(pilot.glob("capsule-*.stamp")) if _stamp_names(s, tid)]
    found += [repo.pilot_dir / "checks" / tid, repo.pilot_dir / "review" / tid, repo.pilot_dir / "run" / f"{tid}.json"]
    return [p for p in found if p.exists()]


def _stamp_names(path: Path, tid: str) -> bool:
    stamp = read_kept(path)
    return isinstance(stamp, dict) and stamp.get("task_id") == tid


def forget(repo: Repo, item: Forgettable) -> bool:
    """Delete the task's ref (only if it still has the value judged) and its local files.
    False when the ref moved meanwhile (then nothing is removed)."""
    import shutil

    proc = repo.git_proc("update-ref", "-m", "git pilot tasks forget", "-d", TaskStore.ref(item.tid), item.tip)
    if proc.returncode != 0:
        return False
    for path in item.files:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    _drop_task_file_entries(repo, item.tid)
    return True


def _drop_task_file_entries(repo: Repo, tid: str) -> None:
    """``<common>/pilot/task-files.json`` maps task files to the id of their last text."""
    import json

    index = repo.pilot_dir / "task-files.json"
    try:
        known = json.loads(index.read_text("utf-8"))
    except (OSError, ValueError):
        return
    if not isinstance(known, dict) or tid not in known.values():
        return
    kept = {k: v for k, v in known.items() if v != tid}
    atomic_write(index, json.dumps(kept, sort_keys=True).encode("utf-8"), fsync=True)  # as tasks.run writes it
