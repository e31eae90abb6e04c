"""What the candidate documents of one tree are, whatever the task, kept on this machine.

``KeptCandidates`` keeps each candidate's kind, front matter, the tokens of its front matter and
the words of its path (``<git common dir>/pilot/candidates/tree-<code>``), beside the other
per-tree records (``area.TreeCache``, ``conventions.KeptPriors``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gitpilot.context.frontmatter import FrontMatter
from gitpilot.fileio import keep, read_kept


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
