"""Choosing what fits the capsule's budget: the best documents first, then their best sections.

Documents are taken in the order of their score (``weights.doc_score``), at most
``weights.MAX_DOCS`` of them and none below ``weights.DOC_CUT`` of the best. A document that
costs at most ``weights.WHOLE_DOC_BYTES`` and ``max_section_bytes`` (after the lines shown
already), with at least ``weights.WHOLE_FOCUS`` of its text in sections that match, comes whole: a short guide, an area's README, a rule file is read as one
text, its procedure together. From a longer one its best sections come, those within
``weights.SECTION_CUT`` of its best, at most ``weights.SECTIONS_PER_DOC`` and ``weights.DOC_BYTES``, each with its
subsections when that fits ``max_section_bytes``, else its own part. Sections of one procedure
come together: when two subsections of one section are chosen, or one numbered step, the whole
section comes when it fits. A long document most of whose text was chosen comes whole
(``weights.WHOLE_SHARE``), as does an agent skill's ``SKILL.md`` up to ``weights.DOC_BYTES`` once any
of it is chosen: the agent running a skill reads it whole. A short document with no room left for all of it gives its best
sections as a long one does. A document sections are taken from brings its introduction (its
title's own text, at most ``weights.INTRO_BYTES``): what the document is and what holds for all of
it ("generated from this directory: never edit by hand"). No excerpt holds a withheld (credential) line or a line shown
already; a heading alone is never an excerpt (a title with no text of its own comes with its first
section, a file that is only headings not at all); cuts fall on section boundaries.

What is left out is listed best first: the sections of documents not taken and the sections of
taken documents not shown, with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, compress
from operator import not_
from typing import Protocol

from gitpilot.context import weights
from gitpilot.context.features import Doc
from gitpilot.context.markdown import Section, range_text, sha256_text

MANIFEST_LEFT_OUT = 400
_WRITING = re.compile(r"\b(add|adding|write|writing|new|creat\w*|cases?|conventions?|guidelines?|rules|quality|"
                      r"determinis\w*|assertions?|fixtures?|patterns?)\b", re.I)
_RUNNING = re.compile(r"\b(run|running|execut\w*|ci)\b", re.I)
_STEP = re.compile(r"^\s*(step\s*\d+|\d+[.)]|\d+\s*[-:—])", re.I)
_UNDERLINE = re.compile(r" {0,3}(=+|-+)[ \t]*\r?\n?$")  # a setext heading's second line


class _WhyLookup(Protocol):
    def get(self, key: tuple[int, int], default: tuple[str, ...] = ..., /) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class Pick:
    """One excerpt: a contiguous line range of one file, cut at section boundaries."""

    path: str
    start: int
    end: int
    heading: str
    score: float
    signals: tuple[str, ...]
    content: bool = True


@dataclass(frozen=True)
class LeftOut:
    path: str
    heading: str
    start: int
    end: int
    sha256: str
    score: float
    reason: str


@dataclass
class Selection:
    picks: list[Pick]
    left_out: list[LeftOut]
    left_out_total: int
    query_terms: list[str] = field(default_factory=list)
    identifiers: list[str] = field(default_factory=list)
    best: float = 0.0
    complete: bool = False  # every candidate file is shown in full: nothing was left out


class _Lines:
    """Which lines of a file may be shown (not shown already, not withheld), and their bytes."""

    def __init__(self, doc: Doc, excluded: Sequence[tuple[int, int]]) -> None:
        self.doc = doc
        blocked: set[int] = set()
        for a, b in excluded:
            blocked.update(range(a, b + 1))
        if doc.smap.any_withheld:  # (a map read back makes its sections on first use)
            for s in doc.smap.sections:
                if s.withheld:
                    blocked.update(range(s.start, s.body_end + 1))
        self.blocked = blocked
        self._heads: frozenset[int] | None = None
        raw = _line_bytes(doc)
        sizes = [0 if i + 1 in blocked else n for i, n in enumerate(raw)] if blocked else raw
        self.cum = [0, *accumulate(sizes)]  # self.cum[i]: bytes of lines 1..i

    def bytes(self, start: int, end: int) -> int:
        end = min(end, len(self.cum) - 1)
        return self.cum[end] - self.cum[start - 1] if end >= start else 0

    def says_something(self, start: int, end: int) -> bool:
        """Whether lines ``start..end`` that may be shown hold text besides headings: a heading
        alone (a title over sections shown apart, a README that is only a title) says nothing."""
        heads = self.heads
        return any(
            (i + 1) not in self.blocked and (i + 1) not in heads and self.doc.lines[i].strip()
            for i in range(start - 1, end)
        )

    @property
    def heads(self) -> frozenset[int]:
        """The lines of the document's headings (a setext heading's underline too)."""
        got = self._heads
        if got is None:
            lines = self.doc.lines
            out: set[int] = set()
            for sec in self.doc.smap.sections:
                if sec.level:
                    out.add(sec.start)
                    if sec.start < len(lines) and _UNDERLINE.match(lines[sec.start]):
                        out.add(sec.start + 1)
            got = self._heads = frozenset(out)
        return got


_BYTES: dict[int, tuple[Doc, list[int]]] = {}


def _line_bytes(doc: Doc) -> list[int]:
    """Each line's size in bytes (kept per document while it lives: choose runs many times in a fit)."""
    got = _BYTES.get(id(doc))
    if got is not None and got[0] is doc:
        return got[1]
    if len(_BYTES) > 20_000:
        _BYTES.clear()
    ascii_text = doc.text.isascii() if doc.text else all(map(str.isascii, doc.lines))
    # (an ASCII line's bytes are its characters: most documentation is ASCII, and most lines of
    # the rest; only the others are encoded)
    sizes = list(map(len, doc.lines))
    if not ascii_text:
        lines = doc.lines
        for i in compress(range(len(sizes)), map(not_, map(str.isascii, lines))):
            sizes[i] = len(lines[i].encode("utf-8"))
    _BYTES[id(doc)] = (doc, sizes)
    return sizes


def _lines_for(doc: Doc, excluded: Sequence[tuple[int, int]], memo: dict[int, _Lines]) -> _Lines:
    got = memo.get(id(doc))
    if got is None:
        got = memo[id(doc)] = _Lines(doc, excluded)
    return got


def choose(
    docs: Sequence[Doc],
    doc_scores: Sequence[float],
    sec_scores: Sequence[Sequence[float]],
    why: _WhyLookup,
    excluded: Mapping[str, Sequence[tuple[int, int]]],
    max_excerpt_bytes: int,
    max_section_bytes: int,
    *,
    conventions: Mapping[int, Sequence[tuple[str, float]]] | None = None,
    left_out: bool = True,
) -> Selection:
    """The excerpts for the task, given every document's and section's score (``left_out``:
    also list what was not taken)."""
    order = sorted(range(len(docs)), key=lambda d: (-doc_scores[d], docs[d].path))
    best = doc_scores[order[0]] if order else 0.0
    names = getattr(sec_scores, "names", None)  # (``_NamesLookup``: each section's part of its score from names)
    order = [d for d in order if doc_scores[d] > 0 and doc_scores[d] >= weights.DOC_CUT * best]
    order = order[: weights.LOOKED_AT]
    chosen: dict[int, list[tuple[int, int, int]]] = {}  # doc -> (start, end, section)
    reasons: dict[tuple[int, int], str] = {}
    memo: dict[int, _Lines] = {}
    used = _conventions(docs, sec_scores, conventions or {}, excluded, max_section_bytes, chosen, memo)
    runners = min(weights.RUNNER_BYTES, max_excerpt_bytes // 4)
    room = max_excerpt_bytes - runners
    taken = 0
    for d in order:
        if taken >= weights.MAX_DOCS or used >= room:
            break
        doc = docs[d]
        lines = _lines_for(doc, excluded.get(doc.path, ()), memo)
        total = lines.bytes(1, len(doc.lines))
        if total == 0 or not lines.says_something(1, len(doc.lines)):
            continue
        whole_max = min(weights.WHOLE_DOC_BYTES, max_section_bytes)  # a whole file is one excerpt too
        if total <= whole_max and _focus(doc, lines, sec_scores[d]) >= weights.WHOLE_FOCUS:
            prior = sum(lines.bytes(a, b) for a, b, _ in chosen.get(d, ()))
            if used - prior + total <= room:
                chosen[d] = [(1, len(doc.lines), -1)]
                used += total - prior
                taken += 1
                continue
            # no room for the whole of it: its best sections, as from a long document
        kept = chosen.get(d, [])
        held = sum(lines.bytes(a, b) for a, b, _ in kept)
        picked, cost = _sections(d, doc, lines, sec_scores[d], max_section_bytes, room - used + held,
                                 reasons, kept, names(d) if names is not None else None)
        if picked and (cost >= weights.WHOLE_SHARE * total or _skill(doc) and total <= weights.DOC_BYTES) \
                and used - held + total <= room:
            whole = _cover(doc, lines, max_section_bytes)
            if whole is not None:
                picked, cost = whole, sum(lines.bytes(a, b) for a, b, _ in whole)
        if picked:
            chosen[d] = picked
            used += cost - held
            used += _intro(doc, picked, lines, room - used)
            taken += 1
    _runners(docs, order, sec_scores, excluded, max_excerpt_bytes - used, max_section_bytes, chosen, reasons, memo)
    picks = _picks(docs, doc_scores, sec_scores, why, chosen, excluded, memo)
    left, total_left = _left_out(docs, doc_scores, sec_scores, chosen, excluded, reasons) if left_out else ([], 0)
    return Selection(picks, left[:MANIFEST_LEFT_OUT], total_left, best=best)


def _skill(doc: Doc) -> bool:
    """An agent skill's own file (``.claude/skills/<name>/SKILL.md``): written to be read whole, as
    the agent that runs the skill loads it whole; the files beside it it loads when it needs them."""
    return doc.kind == "agent_skill" and doc.path.rsplit("/", 1)[-1] == "SKILL.md"


def _intro(doc: Doc, have: list[tuple[int, int, int]], lines: _Lines, room: int) -> int:
    """Add the introduction of a document sections were taken from (its title's own text, when at
    most ``weights.INTRO_BYTES`` and ``room``) to ``have``: what the document is and what holds for
    all of it. Returns its bytes."""
    title = next((s for s in doc.smap.sections if s.level), None)
    if title is None or title.parent is not None or title.end == title.body_end:
        return 0  # no title over the rest (a flat document): no introduction
    if any(a <= title.start <= b for a, b, _ in have):
        return 0
    size = lines.bytes(title.start, title.body_end)
    if size > min(weights.INTRO_BYTES, room) or not lines.says_something(title.start + 1, title.body_end):
        return 0
    have.append((title.start, title.body_end, title.pos))
    return size


def _cover(doc: Doc, lines: _Lines, max_section: int) -> list[tuple[int, int, int]] | None:
    """The whole of ``doc`` as sections that fit ``max_section`` (a subtree, else its own part
    and its children's), None when one own part does not fit."""
    secs = doc.smap.sections
    out: list[tuple[int, int, int]] = []
    todo = [s.pos for s in secs if s.parent is None]
    while todo:
        i = todo.pop(0)
        sec = secs[i]
        if lines.bytes(sec.start, sec.end) <= max_section:
            out.append((sec.start, sec.end, i))
            continue
        if lines.bytes(sec.start, sec.body_end) > max_section:
            return None
        out.append((sec.start, sec.body_end, i))
        todo[:0] = doc.smap.kids(i)
    return _join_bare(lines, sorted(out), max_section)


def _join_bare(lines: _Lines, pieces: list[tuple[int, int, int]], max_section: int) -> list[tuple[int, int, int]]:
    """Contiguous pieces of one document where a piece that is only its heading (a title over
    sections that do not fit one excerpt together) goes with the piece after it, when the two
    fit one excerpt: a heading alone is never an excerpt."""
    out: list[tuple[int, int, int]] = []
    for a, b, i in pieces:
        if out:
            pa, pb, pi = out[-1]
            between = range(pb + 1, a)  # (blank lines between sections belong to neither)
            if (not lines.says_something(pa, pb) and lines.bytes(pa, b) <= max_section
                    and all(n not in lines.blocked and not lines.doc.lines[n - 1].strip() for n in between)):
                out[-1] = (pa, b, pi)
                continue
        out.append((a, b, i))
    return out


def _runners(
    docs: Sequence[Doc],
    order: Sequence[int],
    sec_scores: Sequence[Sequence[float]],
    excluded: Mapping[str, Sequence[tuple[int, int]]],
    room: int,
    max_section: int,
    chosen: dict[int, list[tuple[int, int, int]]],
    reasons: dict[tuple[int, int], str],
    memo: dict[int, _Lines],
) -> int:
    """The best-scoring sections not yet taken, of the ``weights.RUNNER_DOCS`` best documents,
    in what is left of the budget (at least ``weights.RUNNER_BYTES`` of it), down to
    ``weights.RUNNER_CUT`` of the best one's score: where the documents' order missed the one a
    task needs, its best passage may still be among the best passages of the runners-up. Returns
    the bytes they take."""
    cands = sorted(
        ((d, i) for d in order[: weights.RUNNER_DOCS] for i, score in enumerate(sec_scores[d]) if score > 0),
        key=lambda x: (-sec_scores[x[0]][x[1]], docs[x[0]].path, x[1]),
    )
    used = 0
    top = sec_scores[cands[0][0]][cands[0][1]] if cands else 0.0
    for d, i in cands:
        if used >= room or sec_scores[d][i] < weights.RUNNER_CUT * top:
            break
        doc = docs[d]
        sec = doc.smap.sections[i]
        if any(a <= sec.start <= b for a, b, _ in chosen.get(d, ())):
            continue
        span = _span(sec, _lines_for(doc, excluded.get(doc.path, ()), memo), max_section)
        if span is None or used + span[2] > room:
            continue
        chosen.setdefault(d, []).append((span[0], span[1], i))
        reasons.pop((d, i), None)
        used += span[2]
    return used


def _focus(doc: Doc, lines: _Lines, scores: Sequence[float]) -> float:
    """The share of a document's text in sections that match the task: a short file mostly about
    the task is read whole; one matching paragraph among thirty rules is not."""
    total = lines.bytes(1, len(doc.lines)) or 1
    matching = sum(lines.bytes(s.start, s.body_end) for s in doc.smap.sections if scores[s.pos] > 0)
    if matching == 0:
        return 1.0  # chosen for what it is (the area's own rules), not for a paragraph: all of it
    return matching / total


def _sections(
    d: int,
    doc: Doc,
    lines: _Lines,
    scores: Sequence[float],
    max_section: int,
    room: int,
    reasons: dict[tuple[int, int], str],
    held: Sequence[tuple[int, int, int]] = (),
    names: Mapping[int, float] | None = None,
) -> tuple[list[tuple[int, int, int]], int]:
    """The best sections of one long document that fit ``room`` (with those ``held`` already).

    The others come when their score is within ``weights.SECTION_CUT`` of the best section's
    without what the task's names add to it (``names``: each section's part of its score from
    them): a name the task gives picks out its section, which comes first, but does not make the
    rest of the document look weak."""
    secs = doc.smap.sections
    ranked = sorted(range(len(secs)), key=lambda i: (-scores[i], i))
    if not ranked or scores[ranked[0]] <= 0:
        return list(held), sum(lines.bytes(a, b) for a, b, _ in held)
    top = scores[ranked[0]]
    if names:
        words = max(scores[i] - names.get(i, 0.0) for i in ranked)
        top = words if words > 0 else top
    out: list[tuple[int, int, int]] = list(held)
    used = sum(lines.bytes(a, b) for a, b, _ in out)
    for i in ranked:
        if scores[i] <= 0 or scores[i] < weights.SECTION_CUT * top or len(out) - len(held) >= weights.SECTIONS_PER_DOC:
            break
        sec = secs[i]
        if any(a <= sec.start <= b for a, b, _ in out):
            continue
        span = _span(sec, lines, max_section)
        if span is None:
            reasons[(d, i)] = "larger than max_section_bytes"
            continue
        a, b, size = span
        if used + size > room:
            reasons[(d, i)] = "no room left in max_excerpt_bytes"
            continue
        if out and used + size > weights.DOC_BYTES:
            reasons[(d, i)] = "its document has its share of the budget"
            continue
        out = [x for x in out if not (a <= x[0] and x[1] <= b)]  # a parent taken whole holds its parts
        out.append((a, b, i))
        used = sum(lines.bytes(x[0], x[1]) for x in out)
    out, used = _procedures(doc, lines, out, max_section, room, scores)
    return sorted(out), used


def _conventions(
    docs: Sequence[Doc],
    sec_scores: Sequence[Sequence[float]],
    conventions: Mapping[int, Sequence[tuple[str, float]]],
    excluded: Mapping[str, Sequence[tuple[int, int]]],
    max_section: int,
    chosen: dict[int, list[tuple[int, int, int]]],
    memo: dict[int, _Lines],
) -> int:
    """What nearly every change needs and no task names: for each class of ``weights.convention_slots``
    (how tests are written and run, how a change is recorded), its best sections in the
    contributor and rule documents, by their convention prior and then the task's own score of
    them (the testing rules of the task's area before another's). Returns the bytes they take."""
    used = 0
    for cls, slots in weights.convention_slots().items():
        cands: list[tuple[float, int, int]] = []
        for d, table in conventions.items():
            if docs[d].kind not in weights.CONVENTION_KINDS:
                continue
            for pos, (name, prior) in enumerate(table):
                if name == cls and prior > 0:
                    bonus = 0.0
                    if cls == "testing":
                        title = docs[d].smap.sections[pos].title
                        if _WRITING.search(title):
                            bonus = weights.CONV_WRITE
                        elif _RUNNING.search(title):
                            bonus = -weights.CONV_WRITE
                    cands.append((prior + bonus + weights.CONVENTION_TASK * max(0.0, sec_scores[d][pos]), d, pos))
        cands.sort(key=lambda x: (-x[0], docs[x[1]].path, x[2]))
        took = 0
        for _score, d, pos in cands:
            if took >= slots:
                break
            doc = docs[d]
            sec = doc.smap.sections[pos]
            have = chosen.get(d, [])
            if any(a <= sec.start <= b for a, b, _ in have):
                continue
            lines = _lines_for(doc, excluded.get(doc.path, ()), memo)
            span = _span(sec, lines, max_section)
            if span is None:
                continue
            a, b, size = span
            chosen.setdefault(d, []).append((a, b, pos))
            used += size
            took += 1
    return used


def _span(sec: object, lines: _Lines, max_section: int) -> tuple[int, int, int] | None:
    """The subtree when it fits, else the own part; None when neither fits or it says nothing."""
    start, end, body_end = sec.start, sec.end, sec.body_end  # type: ignore[attr-defined]
    tree = lines.bytes(start, end)
    if tree <= max_section and lines.says_something(start + 1, end):
        return start, end, tree
    own = lines.bytes(start, body_end)
    if own <= max_section and lines.says_something(start + 1, body_end):
        return start, body_end, own
    return None


def _procedures(
    doc: Doc, lines: _Lines, out: list[tuple[int, int, int]], max_section: int, room: int,
    scores: Sequence[float] = (),
) -> tuple[list[tuple[int, int, int]], int]:
    """A section whose parts were chosen comes whole: two chosen subsections of one parent, one
    numbered step ("Step 3", "2. Configure"), or one subsection of a parent whose own text matches
    the task too, bring the parent's subtree when it fits."""
    secs = doc.smap.sections
    changed = True
    while changed:
        changed = False
        used = sum(lines.bytes(a, b) for a, b, _ in out)
        by_parent: dict[int, list[int]] = {}
        for _a, _b, i in out:
            parent = secs[i].parent
            if parent is not None:
                by_parent.setdefault(parent, []).append(i)
        for parent, kids in sorted(by_parent.items()):
            stepped = any(_STEP.match(secs[i].title) for i in kids)
            matching = bool(scores) and scores[parent] > 0 and secs[parent].level > 0
            if len(kids) < 2 and not stepped and not matching:
                continue
            p = secs[parent]
            if any(a <= p.start and p.end <= b for a, b, _ in out):
                continue
            inside = [x for x in out if p.start <= x[0] and x[1] <= p.end]
            extra = lines.bytes(p.start, p.end) - sum(lines.bytes(a, b) for a, b, _ in inside)
            if lines.bytes(p.start, p.end) <= max_section and used + extra <= room:
                out = [x for x in out if x not in inside] + [(p.start, p.end, parent)]
                changed = True
                break
    return out, sum(lines.bytes(a, b) for a, b, _ in out)


def _picks(
    docs: Sequence[Doc],
    doc_scores: Sequence[float],
    sec_scores: Sequence[Sequence[float]],
    why: _WhyLookup,
    chosen: Mapping[int, list[tuple[int, int, int]]],
    excluded: Mapping[str, Sequence[tuple[int, int]]],
    memo: dict[int, _Lines],
) -> list[Pick]:
    """Chosen ranges as contiguous excerpts, minus shown and withheld lines, best document first."""
    out: list[Pick] = []
    for d in sorted(chosen, key=lambda d: (-doc_scores[d], docs[d].path)):
        doc = docs[d]
        lines = _lines_for(doc, excluded.get(doc.path, ()), memo)
        for start, end, sec in sorted(chosen[d]):
            for a, b in _runs(lines, start, end):
                label = _label(doc, a, b, sec)
                score = doc_scores[d] + (sec_scores[d][sec] if sec >= 0 else max(sec_scores[d], default=0.0))
                out.append(Pick(doc.path, a, b, label, score, why.get((d, sec), why.get((d, -1), ()))))
    return out


def _runs(lines: _Lines, start: int, end: int) -> list[tuple[int, int]]:
    """Runs of showable lines in ``start..end``, trimmed of blank lines; blank-only gaps bridged."""
    runs: list[tuple[int, int]] = []
    for ln in range(start, end + 1):
        if ln in lines.blocked:
            continue
        if runs and (ln == runs[-1][1] + 1 or all(
            not lines.doc.lines[i - 1].strip() for i in range(runs[-1][1] + 1, ln)
        ) and not any(i in lines.blocked for i in range(runs[-1][1] + 1, ln))):
            runs[-1] = (runs[-1][0], ln)
        else:
            runs.append((ln, ln))
    out = []
    for a, b in runs:
        while a < b and not lines.doc.lines[a - 1].strip():
            a += 1
        while b > a and not lines.doc.lines[b - 1].strip():
            b -= 1
        if lines.says_something(a, b):
            out.append((a, b))
    return out


def _label(doc: Doc, a: int, b: int, sec: int) -> str:
    """The heading path that names an excerpt: its section's, or for a whole file its first heading's."""
    smap = doc.smap
    inside = [s for s in smap.sections if a <= s.start <= b and s.level]
    head: Section | None
    if sec >= 0 and smap.sections[sec].start >= a:
        head = smap.sections[sec]
    else:
        cover = [s for s in smap.sections if s.start <= a <= max(s.end, s.start)]
        head = cover[-1] if cover else (inside[0] if inside else None)
    if head is None:
        return "(preamble)"
    return " › ".join(smap.heading_path(head.pos)) or "(preamble)"


def _left_out(
    docs: Sequence[Doc],
    doc_scores: Sequence[float],
    sec_scores: Sequence[Sequence[float]],
    chosen: Mapping[int, list[tuple[int, int, int]]],
    excluded: Mapping[str, Sequence[tuple[int, int]]],
    reasons: Mapping[tuple[int, int], str],
) -> tuple[list[LeftOut], int]:
    """Sections with a positive score that are not shown, best first (document and section score)."""
    cands: list[tuple[float, int, int]] = []
    for d, doc in enumerate(docs):
        if doc_scores[d] <= 0:
            continue
        shown = list(excluded.get(doc.path, ())) + [(a, b) for a, b, _ in chosen.get(d, ())]
        for sec in doc.smap.sections:
            s = sec_scores[d][sec.pos]
            if s <= 0 or sec.withheld or any(a <= sec.start and sec.body_end <= b for a, b in shown):
                continue
            cands.append((doc_scores[d] + s, d, sec.pos))
    cands.sort(key=lambda x: (-round(x[0], 9), docs[x[1]].path, x[2]))
    out: list[LeftOut] = []
    for score, d, pos in cands[:MANIFEST_LEFT_OUT]:
        doc = docs[d]
        sec = doc.smap.sections[pos]
        end = sec.end if sec.sha256 else sec.body_end  # a subtree with a withheld part: the own part
        sha = sec.sha256 or sha256_text(range_text(doc.lines, sec.start, end))
        reason = reasons.get((d, pos)) or ("lower score" if d in chosen else "its document scored lower")
        heading = " › ".join(doc.smap.heading_path(pos)) or "(preamble)"
        out.append(LeftOut(doc.path, heading, sec.start, end, sha, score, reason))
    return out, len(cands)
