"""The capsule's selection, as a pipeline a step a module.

1. candidates: the Markdown files ``capsule`` hands in, each a ``features.Doc`` with its kind
   (``doctypes``), front matter (``frontmatter``), whether a rule file links to it (``links``)
   and its cached term counts (``terms``);
2. the query: the task's words and their synonyms (``query``) and the names it gives
   (``text.identifiers``); the code area it concerns (``area``);
3. signals: a number in [0, 1] per signal, per document and per section (``features``);
4. one weighted score per document and per section (``weights``);
5. the choice under the budget, best documents first (``choose``).

``Ranking`` scores once; ``choose`` may be asked again without some files (shown in full
elsewhere after a first choice).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from typing import overload

from gitpilot.context import weights as W
from gitpilot.context.candidates import KeptPriors
from gitpilot.context.choose import LeftOut, Pick, Selection, choose
from gitpilot.context.doctypes import kind_of
from gitpilot.context.features import Doc, DocSignals, column_weights, fill_row, signals, zero_row
from gitpilot.context.query import query_weights
from gitpilot.context.terms import compute
from gitpilot.context.text import identifiers

__all__ = ["Doc", "LeftOut", "Pick", "Ranking", "Selection", "prepared", "select"]

WHY_SHOWN = 3  # the strongest signals named beside an excerpt
_NAMES = {
    "bm25": "words",
    "heads": "headings",
    "path": "path",
    "dir": "directory name",
    "ids": "names",
    "linked": "linked from a rule file",
    "area": "code area",
    "scoped": "path-scoped",
    "applies": "applies to the area",
    "s_bm25": "section words",
    "s_head": "section headings",
    "s_ids": "section names",
}


def prepared(doc: Doc) -> Doc:
    """``doc`` with its kind and term counts filled in."""
    kind = doc.kind or kind_of(doc.path, doc.nested)
    terms = doc.terms if doc.terms is not None else compute(doc.smap, doc.lines)
    return replace(doc, kind=kind, terms=terms) if (kind != doc.kind or terms is not doc.terms) else doc


def named_first(scores: list[float], named: Collection[int]) -> None:
    """A document the task names by its path is what the task is about: it comes first, above the
    best of the others by one and its own score (``scores`` changed in place; ``bench/fit.py``
    judges a weight table the same way)."""
    if named:
        top = max(max(scores), 0.0) + 1.0
        for d in named:
            scores[d] = top + max(scores[d], 0.0)


class Ranking:
    """Every candidate scored against the task, once; ``choose`` fills the budget from it."""

    def __init__(
        self,
        docs: Sequence[Doc],
        task: str,
        excluded: Mapping[str, Sequence[tuple[int, int]]],
        *,
        area: Mapping[str, float] | None = None,
        area_files: Sequence[str] = (),
        kept: KeptPriors | None = None,
    ) -> None:
        self.docs = [prepared(d) for d in docs]
        self.task = task
        self.excluded = excluded
        self.query = query_weights(task)
        self.ids = identifiers(task)
        priors, _ = (kept or KeptPriors(None)).priors(self.docs, task)
        self.priors = priors
        found = signals(self.docs, self.query, self.ids, priors, area or {}, area_files)
        self.signals: Sequence[DocSignals] = found
        self.doc_scores = [W.doc_score(s.values) for s in found]
        self.named = {d for d, doc in enumerate(self.docs) if names_path(task, doc.path)}
        named_first(self.doc_scores, self.named)
        # A section is chosen from a document with a positive score, or as a convention
        # (``choose``): only those documents' sections need their word signals.
        quotable = [d for d, s in enumerate(self.doc_scores) if s > 0]
        found.fill_sections([*quotable, *(d for d, s in enumerate(found) if s.conv)], quotable,
                            head=bool(W.SECTION.get("s_head")))
        self.sec_scores = _section_scores(self.signals)

    def choose(
        self, max_excerpt_bytes: int, max_section_bytes: int, without: frozenset[str] = frozenset()
    ) -> Selection:
        scores = [(-1.0 if d.path in without else s) for d, s in zip(self.docs, self.doc_scores, strict=True)]
        why = _Why(self)
        sel = choose(self.docs, scores, self.sec_scores, why, self.excluded, max_excerpt_bytes, max_section_bytes,
                     conventions=self.priors)
        sel.query_terms = sorted(self.query)
        sel.identifiers = [i.text for i in self.ids]
        return sel

    def _why(self, d: int, sec: int) -> tuple[str, ...]:
        """The strongest signals of the document (and of the section), as ``name value``."""
        sig = self.signals[d]
        parts = (["path named in the task"] if d in self.named else []) + _top(sig.values, W.DOC)
        kind = self.docs[d].kind
        parts.append(f"kind {kind}")
        if sec >= 0:
            parts += _top(sig.section(sec), W.SECTION)
            # what the section is, whatever its weight: a convention slot takes it for this
            table = self.priors.get(d, ())
            name, prior = table[sec] if sec < len(table) else ("", 0.0)
            if name and prior > 0 and not any(p.startswith(f"{name} convention") for p in parts):
                parts.append(f"{name} convention")
        return tuple(parts)


def _section_scores(sigs: Sequence[DocSignals]) -> SectionScores:
    """Every section's score (``SectionScores``: a document's, the first time it is asked for)."""
    return SectionScores(sigs)


class SectionScores(Sequence[list[float]]):
    """Every document's section scores, in document order, each document's worked out the first
    time ``choose`` asks for it: on a large documentation tree most sections are in documents that
    score nothing for the task (change logs, examples), are never chosen nor listed as left out,
    and their scores are never asked for. A section with no signal has the zero row's score; one
    with signals ``weights.section_score`` of its row, summed over its nonzero values only (a zero
    value adds nothing to the sum, so the score is the same number)."""

    def __init__(self, sigs: Sequence[DocSignals]) -> None:
        self._sigs = sigs
        self._rows: list[list[float] | None] = [None] * len(sigs)
        self._zero = W.section_score(zero_row())

    def __len__(self) -> int:
        return len(self._sigs)

    @overload
    def __getitem__(self, d: int) -> list[float]: ...

    @overload
    def __getitem__(self, d: slice) -> list[list[float]]: ...

    def __getitem__(self, d: int | slice) -> list[float] | list[list[float]]:
        if isinstance(d, slice):
            return [self[i] for i in range(*d.indices(len(self)))]
        row = self._rows[d]
        if row is None:
            row = self._rows[d] = _doc_section_scores(self._sigs[d], self._zero)
        return row

    def names(self, d: int) -> dict[int, float]:
        """Each section's part of its score that the task's names give (``choose`` compares the
        other sections with the best one's score without it)."""
        w = W.SECTION.get("s_ids", 0.0)
        return {p: w * v for p, v in self._sigs[d].ids.items()} if w else {}


def _doc_section_scores(sig: DocSignals, zero: float) -> list[float]:
    """One document's section scores (``SectionScores``)."""
    scores = [zero] * sig.count
    positions = sig.positions()
    if not positions:
        return scores
    columns = column_weights(sig, W.SECTION)
    if columns is None:  # a signal the columns do not hold: row by row
        row = zero_row()
        for pos in positions:
            fill_row(row, sig, pos)
            scores[pos] = W.section_score(row)
        return scores
    for pos in positions:
        parts = [w * v for w, col in columns if (v := col.get(pos, 0.0))]
        if parts:
            scores[pos] = sum(parts)
    return scores


class _Why:
    """The signals named beside an excerpt, worked out only for the excerpts shown."""

    def __init__(self, ranking: Ranking) -> None:
        self.ranking = ranking

    def get(self, key: tuple[int, int], default: tuple[str, ...] = ()) -> tuple[str, ...]:
        d, sec = key
        return self.ranking._why(d, sec) if 0 <= d < len(self.ranking.docs) else default


def names_path(task: str, path: str) -> bool:
    """The task names ``path`` itself (``docs/api/limits.md``, ``./docs/api/limits.md``), not a
    longer path that ends or starts with it."""
    if path not in task:
        return False  # (the pattern holds the path itself: a pattern a path, for 750 paths, is slow)
    return re.search(r"(?<![\w/.-])(?:\./)?" + re.escape(path) + r"(?!\.?[\w/-])", task) is not None


def _top(values: Mapping[str, float], table: Mapping[str, float]) -> list[str]:
    contrib = sorted(
        ((w * values.get(k, 0.0), k) for k, w in table.items() if not k.startswith("kind:") and w > 0),
        key=lambda x: (-x[0], x[1]),
    )
    out = []
    for c, k in contrib[:WHY_SHOWN]:
        if c <= 0:
            break
        name = _NAMES.get(k, k.replace("c_", "") + " convention")
        out.append(f"{name} {values[k]:.2f}")
    return out


def select(
    docs: Sequence[Doc],
    task: str,
    max_excerpt_bytes: int = 27000,
    max_section_bytes: int = 8000,
    excluded: Mapping[str, Sequence[tuple[int, int]]] | None = None,
    *,
    area: Mapping[str, float] | None = None,
    area_files: Sequence[str] = (),
) -> Selection:
    """Score ``docs`` against ``task`` and choose what fits (``Ranking`` once, ``choose`` once)."""
    ranking = Ranking(docs, task, excluded or {}, area=area, area_files=area_files)
    return ranking.choose(max_excerpt_bytes, max_section_bytes)
