"""Scoped checks: the tree a check's results are keyed by.

A check without ``files`` is keyed by the checked state's whole tree. A check with ``files``
globs is keyed by the tree of its matching files only (git's ``:(glob)`` pathspecs, a leading
``!`` excludes), so an edit outside them reuses its pass. That scoped id is a pure function of
the whole tree's id and the globs; a small memo in ``<git common dir>/pilot/scopes.memo``
keeps the recent ones, so a cache hit on an unchanged tree costs no git process beyond the
whole tree's id. When every check is scoped, a cache hit does not need the whole tree at all:
``scoped_snapshot`` asks git for the scopes' files only (``Repo.worktree_scoped_ids``).
Stdlib only: this is on the cache-hit path.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gitpilot.config import CheckSpec
from gitpilot.fileio import keep, read_kept
from gitpilot.repo import Repo

MEMO = "scopes.memo"
_MEMO_ENTRIES = 512  # a few hundred trees x scopes; older ones are worked out again when needed

Scope = tuple[str, ...]


def scope_of(check: CheckSpec) -> Scope:
    """A check's globs in a canonical order (the same files whatever order the config lists)."""
    return tuple(sorted(set(check.files)))


class Snapshot:
    """The checked state: its whole tree id and, per scope, the tree id of the matching files.

    ``full`` is None in a snapshot of scoped checks only (``scoped_snapshot``), where nothing
    asks for the whole tree.
    """

    __slots__ = ("full", "scoped")

    def __init__(self, full: str | None, scoped: dict[Scope, str]) -> None:
        self.full = full
        self.scoped = scoped

    def tree_for(self, check: CheckSpec) -> str:
        scope = scope_of(check)
        if scope:
            return self.scoped[scope]
        assert self.full is not None, "a snapshot of scoped checks only asked for the whole tree"
        return self.full

    def trees(self) -> list[str]:
        return sorted({*([self.full] if self.full is not None else []), *self.scoped.values()})

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Snapshot) and (self.full, self.scoped) == (other.full, other.scoped)

    def __hash__(self) -> int:
        return hash((self.full, tuple(sorted(self.scoped.items()))))


def scopes_in(checks: Sequence[CheckSpec]) -> list[Scope]:
    """The distinct scopes of ``checks``, in config order."""
    return list(dict.fromkeys(s for s in (scope_of(c) for c in checks) if s))


def worktree_snapshot(repo: Repo, checks: Sequence[CheckSpec]) -> Snapshot:
    """The snapshot of the working tree as it is now (tracked and untracked-not-ignored files)."""
    scopes = scopes_in(checks)
    if not scopes:
        return Snapshot(repo.worktree_tree_id(), {})
    memo = _Memo(repo.pilot_dir / MEMO)
    full, ids = repo.worktree_tree_ids(scopes, known=lambda tree: [memo.get(tree, s) for s in scopes])
    memo.update(full, dict(zip(scopes, ids, strict=True)))
    return Snapshot(full, dict(zip(scopes, ids, strict=True)))


def scoped_snapshot(repo: Repo, checks: Sequence[CheckSpec]) -> Snapshot | None:
    """The snapshot of the working tree when every check is scoped, without the whole tree's id
    (``full`` is None): what a cache hit of such checks needs, for a fraction of the whole
    tree's cost. None when a check is not scoped, or when git refused the scopes' pathspecs
    (``Repo.worktree_scoped_ids``); a refusal is remembered until the user's index changes, so
    a scope with a glob that matches nothing does not pay for the attempt on every hit.
    """
    scopes = scopes_in(checks)
    if not scopes or not all(c.files for c in checks):
        return None
    memo = _Memo(repo.pilot_dir / MEMO)
    # per worktree: each has its own index
    refused = "\0".join(("refused", str(repo.git_dir), *("\1".join(s) for s in scopes)))
    index = _index_signature(repo)
    if memo.lookup(refused) == index:
        return None
    ids = repo.worktree_scoped_ids(scopes)
    if ids is None:
        memo.store({refused: index})
        return None
    return Snapshot(None, dict(zip(scopes, ids, strict=True)))


def _index_signature(repo: Repo) -> str:
    """The user's index file, changed by every rewrite (git replaces it by a rename). Not its
    ctime: the hard links of ``Repo._private_index`` change that on every run."""
    from gitpilot.fileio import file_signature

    return file_signature(repo.git_dir / "index") or "absent"


def tree_snapshot(repo: Repo, tree: str, checks: Sequence[CheckSpec]) -> Snapshot:
    """The snapshot of a stored tree (a commit's), without touching any working tree."""
    scopes = scopes_in(checks)
    if not scopes:
        return Snapshot(tree, {})
    memo = _Memo(repo.pilot_dir / MEMO)
    have = {s: memo.get(tree, s) for s in scopes}
    missing = [s for s in scopes if have[s] is None]
    found = dict(zip(missing, repo.tree_ids_of(tree, missing), strict=True))
    scoped = {s: have[s] or found[s] for s in scopes}
    memo.update(tree, scoped)
    return Snapshot(tree, scoped)


def describe(check: CheckSpec) -> str:
    """The scope as ``--explain`` shows it."""
    return ", ".join(check.files) if check.files else "the whole tree"


class _Memo:
    """(whole tree, scope) -> scoped tree id, and the scopes git refused for an index
    (``scoped_snapshot``), kept with marshal; a lost or broken file is empty."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._data: dict[str, str] | None = None

    @staticmethod
    def _key(tree: str, scope: Scope) -> str:
        return "\0".join((tree, *scope))

    def _load(self) -> dict[str, str]:
        if self._data is None:
            data = read_kept(self.path)
            self._data = data if isinstance(data, dict) else {}
        return self._data

    def get(self, tree: str, scope: Scope) -> str | None:
        return self.lookup(self._key(tree, scope))

    def lookup(self, key: str) -> str | None:
        value = self._load().get(key)
        return value if isinstance(value, str) else None

    def update(self, tree: str, scoped: dict[Scope, str]) -> None:
        self.store({self._key(tree, s): t for s, t in scoped.items()})

    def store(self, new: dict[str, str]) -> None:
        data = self._load()
        if all(data.get(k) == v for k, v in new.items()):
            return
        for k in new:
            data.pop(k, None)  # re-inserted last: the newest entries survive the trim
        data.update(new)
        kept = dict(list(data.items())[-_MEMO_ENTRIES:])
        keep(self.path, kept)  # a memo, worked out again when lost; concurrent writers: the last one wins
        self._data = kept
