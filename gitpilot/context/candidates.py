"""What the candidate documents of one tree are, whatever the task, kept on this machine.

``KeptCandidates`` keeps each candidate's kind, front matter, the tokens of its front matter and
the words of its path (``<git common dir>/pilot/candidates/tree-<code>``), beside the other
per-tree records (``area.TreeCache``); ``KeptPriors`` keeps the tree's convention priors
(``conventions.convention_priors``, whose rules are imported only when they are worked out).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from gitpilot.context.frontmatter import FrontMatter
from gitpilot.context.query import DOCS_TASK
from gitpilot.fileio import keep, read_kept

TYPE_CHECKING = False
if TYPE_CHECKING:  # (conventions, with its rules, is imported only when priors are worked out)
    from gitpilot.context.conventions import DocFile

    class KeptDoc(DocFile, Protocol):
        @property
        def blob(self) -> str: ...


class KeptCandidates:
    """What the candidates of one tree are, whatever the task: each one's kind, front matter, the
    tokens of its front matter and the words of its path, kept on this machine
    (``<git common dir>/pilot/candidates/tree-<code>``). They depend on the candidates' paths
    (a kind can depend on the other paths: ``doctypes.frozen_copies``), their contents (blob ids)
    and whether each is a nested instruction file, and on the code (``cache.code_id``), so a
    new task on the same tree reads them back (vercel/ai: 749 candidates, ~40 ms of front
    matter, kinds and tokens). A set with a candidate of no known blob is worked out; one tree
    is kept; best effort."""

    def __init__(self, pilot_dir: Path | None) -> None:
        self.path: Path | None = None
        if pilot_dir is not None:
            from gitpilot.context.cache import code_id

            self.path = pilot_dir / "candidates" / f"tree-{code_id()[:16]}"

    @staticmethod
    def key(items: Sequence[tuple[str, str, bool]]) -> str | None:
        """The key of the candidates given as (path, blob id, nested); None when a blob is unknown."""
        import blake3

        h = blake3.blake3()
        for path, blob, nested in items:
            if not blob:
                return None
            h.update(f"{path}\0{blob}\0{int(nested)}\0".encode("utf-8", "surrogateescape"))
        return h.hexdigest()

    def get(self, key: str | None, count: int) -> list[tuple[str, FrontMatter, tuple[str, ...], dict[str, int]]] | None:
        """The kept (kind, front matter, its tokens, path words) of each candidate, or None."""
        if key is None or self.path is None:
            return None
        got = read_kept(self.path)
        if not (isinstance(got, tuple) and len(got) == 2 and got[0] == key and isinstance(got[1], list)):
            return None
        rows = got[1]
        if len(rows) != count or not all(_kept_row(r) for r in rows):
            return None
        return [(kind, FrontMatter(text, tuple(scopes), always), tuple(toks), bag)
                for kind, text, scopes, always, toks, bag in rows]

    def put(self, key: str | None, rows: Sequence[tuple[str, FrontMatter, Sequence[str], dict[str, int]]]) -> None:
        if key is None or self.path is None:
            return
        keep(self.path, (key, [(kind, f.text, list(f.scopes), f.always, list(toks), bag) for kind, f, toks, bag in rows]))


def _kept_row(row: object) -> bool:
    if not (isinstance(row, tuple) and len(row) == 6):
        return False
    kind, text, scopes, always, toks, bag = row
    return (
        isinstance(kind, str) and isinstance(text, str) and isinstance(always, bool)
        and isinstance(scopes, list) and all(isinstance(x, str) for x in scopes)
        and isinstance(toks, list) and all(isinstance(x, str) for x in toks)
        and isinstance(bag, dict) and all(isinstance(t, str) and type(n) is int for t, n in bag.items())
    )


class KeptPriors:
    """``convention_priors`` of one tree's candidates, kept on this machine
    (``<git common dir>/pilot/conventions/tree-<code>``): the priors depend on the documents
    (their paths, contents, whether they are rule or nested instruction files), on whether the
    task is about documentation, and on the code (``cache.code_id``), never otherwise on the task,
    so a new task on the same tree reads them back (vercel/ai: 102 developer documents and
    READMEs, ~40-55 ms of regular expressions). Documents are known by their blob ids; a set with
    a document of no known blob is worked out. One tree is kept (for tasks about documentation
    and for the others); best effort."""

    def __init__(self, pilot_dir: Path | None) -> None:
        self.path: Path | None = None
        if pilot_dir is None:
            return
        from gitpilot.context.cache import code_id

        self.path = pilot_dir / "conventions" / f"tree-{code_id()[:16]}"

    def priors(
        self, docs: Sequence[KeptDoc], task: str
    ) -> tuple[dict[int, list[tuple[str, float]]], dict[tuple[int, int], str]]:
        """``convention_priors(docs, task)``."""
        key = self._key(docs, task)
        path = None
        if key is not None and self.path is not None:
            # (a task about documentation has a class more: its priors are kept beside the others)
            path = self.path.with_name(self.path.name + ("-docs" if DOCS_TASK.search(task) else ""))
            got = read_kept(path)
            if isinstance(got, tuple) and len(got) == 3 and got[0] == key and _valid(got[1], got[2], docs):
                return got[1], got[2]
        from gitpilot.context.conventions import convention_priors  # (its rules: only when not kept)

        priors, linked = convention_priors(docs, task)
        if path is not None:
            keep(path, (key, priors, linked))
        return priors, linked

    @staticmethod
    def _key(docs: Sequence[KeptDoc], task: str) -> str | None:
        import blake3

        h = blake3.blake3(b"docs-task" if DOCS_TASK.search(task) else b"task")
        for doc in docs:
            if not doc.blob:
                return None
            h.update(f"\0{doc.path}\0{doc.blob}\0{int(doc.rule)}{int(doc.nested)}".encode("utf-8", "surrogateescape"))
        return h.hexdigest()


def _valid(priors: object, linked: object, docs: Sequence[DocFile]) -> bool:
    """A record of priors for these documents: a class and a prior a section, a link's source a path."""
    if not (isinstance(priors, dict) and isinstance(linked, dict)):
        return False
    for d, table in priors.items():
        if not (type(d) is int and 0 <= d < len(docs) and isinstance(table, list)):
            return False
        if len(table) != len(docs[d].smap.sections):
            return False
        if not all(
            isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str) and type(x[1]) is float for x in table
        ):
            return False
    return all(
        isinstance(k, tuple) and len(k) == 2 and all(type(n) is int for n in k) and isinstance(v, str)
        for k, v in linked.items()
    )
