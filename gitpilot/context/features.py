"""The signals of every candidate document and section for one task, each a number in [0, 1].

Document signals (what a document is about, as a whole):
- ``bm25``: BM25 of the task's words (and their synonyms, ``query``) over the whole document;
- ``heads``: the same over its title, headings and front-matter description, which say what it
  is for;
- ``path``: the same over the words of its path (``discovery/README.md``: "discovery");
- ``dir``: the share of the words of its own directory's name that the task uses (``errors/README.md``
  for a task about an error; ``api_spec/README.md`` half for one about the C API): the README,
  CONTRIBUTING or AGENTS.md of a directory is about what the directory is named for (a word in
  most candidates' paths, the project's own name, counts for little);
- ``ids``: the share of the identifiers the task names (``RESTClient``, ``--save-peer``) that
  occur in it verbatim;
- ``linked``: an instruction or rule file links to it (what the maintainers point contributors to),
  worth the share of the candidates that are not linked: a link every document has tells none apart;
- ``area``: it lies in the code directory the task concerns (``area``);
- ``scoped`` / ``applies``: its front matter limits it to some paths, and those paths hold files
  of the task's area;
- ``kind:<k>``: its document type (``doctypes``), one signal a type.

Section signals (what a part of a chosen document is about):
- ``s_bm25``, ``s_head``, ``s_ids``: as above over the section's own text and its heading path;
- ``c_<class>``: the section states the project's testing, commit/change-log, development, style
  or (for a documentation task) documentation conventions (``conventions``).

BM25 scores are divided by the best of the task, so the weights (``weights``) mean the same in a
small repository and a large one.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import overload

from gitpilot.context.doctypes import KINDS
from gitpilot.context.frontmatter import NONE, FrontMatter
from gitpilot.context.lines import newlines_only
from gitpilot.context.markdown import SectionMap
from gitpilot.context.terms import DocTerms
from gitpilot.context.text import Identifier, literal, tokens

K1 = 1.2
B = 0.75
PATH_B = 0.3  # path words: a long path is not less about each of its words
NORM_FLOOR = 0.15  # of a match of every query term: scores are divided by at least this
DOC_SIGNALS = ("bm25", "heads", "path", "dir", "ids", "linked", "area", "scoped", "applies") + tuple(
    f"kind:{k}" for k in KINDS
)
CONVENTIONS = ("testing", "commits", "development", "style", "docs")
SECTION_SIGNALS = ("s_bm25", "s_head", "s_ids") + tuple(f"c_{c}" for c in CONVENTIONS)
# Path parts that say nothing of a document's subject.
GENERIC_DIRS = frozenset(
    "src lib libs source sources app apps pkg pkgs packages internal cmd docs doc main core common util utils "
    "include bin scripts readme index md mdx".split()
)


@dataclass(frozen=True)
class Doc:
    """One candidate Markdown file: its section map, exact lines and what is known of it."""

    path: str
    smap: SectionMap
    lines: Sequence[str]
    rule: bool = False  # a rule file (instruction, memory, CONTRIBUTING, SECURITY, configured)
    nested: bool = False  # an AGENTS.md/CLAUDE.md below the root
    kind: str = ""  # ``doctypes.kind_of`` (computed when empty)
    linked: bool = False  # linked from an instruction or rule file
    front: FrontMatter = NONE
    terms: DocTerms | None = None  # cached term counts (computed when None)
    text: str = ""  # the exact text, "".join(lines), where the caller has it at hand
    blob: str = ""  # the git blob id of the text, where it is known
    front_tokens: tuple[str, ...] | None = None  # ``tokens(front.text)``, where known (``KeptCandidates``)
    path_bag: dict[str, int] | None = None  # ``path_counts(path)``, where known


@dataclass
class DocSignals:
    """One document's signals, and its sections' by column: ``bm25`` (``s_bm25``) of the
    sections that hold a query term in their text or heading path, ``head`` (``s_head``) of those
    under a title that holds one, ``ids`` (``s_ids``) of those that name an identifier, ``conv``
    (convention and prior) of those that state a convention. Every other value is zero;
    ``section`` gives one section's signals as a row."""

    values: dict[str, float]
    count: int = 0  # sections in the document
    bm25: dict[int, float] = field(default_factory=dict)
    head: dict[int, float] = field(default_factory=dict)
    ids: dict[int, float] = field(default_factory=dict)
    conv: dict[int, tuple[str, float]] = field(default_factory=dict)

    def positions(self) -> list[int]:
        """The sections with a signal, in order."""
        return sorted(p for p in self.bm25.keys() | self.head.keys() | self.ids.keys() | self.conv.keys()
                      if p < self.count)

    def section(self, pos: int) -> dict[str, float]:
        row = zero_row()
        fill_row(row, self, pos)
        return row

    @property
    def sections(self) -> list[dict[str, float]]:
        """Every section's signals, in order."""
        return [self.section(i) for i in range(self.count)]


_CONV_KEYS = tuple((c, f"c_{c}") for c in CONVENTIONS)
_KIND_KEYS = tuple((k, f"kind:{k}") for k in KINDS)


def fill_row(row: dict[str, float], sig: DocSignals, pos: int) -> None:
    """Set every section signal of ``row`` to section ``pos``'s value."""
    row["s_bm25"] = sig.bm25.get(pos, 0.0)
    row["s_head"] = sig.head.get(pos, 0.0)
    row["s_ids"] = sig.ids.get(pos, 0.0)
    name, prior = sig.conv.get(pos, ("", 0.0))
    for c, key in _CONV_KEYS:
        row[key] = prior if name == c else 0.0


def column_weights(sig: DocSignals, table: Mapping[str, float]) -> list[tuple[float, Mapping[int, float]]] | None:
    """The weighted section signals of ``table`` as (weight, column) pairs, in the table's order
    and without the zero weights: the terms of ``weights.section_score`` for a section are
    ``weight * column.get(pos, 0.0)``. None when the table weighs a signal ``fill_row`` sets and
    the columns do not hold (its rows then have to be filled one by one)."""
    cols: dict[str, Mapping[int, float]] = {"s_bm25": sig.bm25, "s_head": sig.head, "s_ids": sig.ids}
    out: list[tuple[float, Mapping[int, float]]] = []
    for key, w in table.items():
        if not w or key not in SECTION_SIGNALS:
            continue  # (a row has no other key: it adds nothing)
        col = cols.get(key)
        if col is None:
            cls = key[2:] if key.startswith("c_") else ""
            if cls not in CONVENTIONS:
                return None
            col = {p: prior for p, (name, prior) in sig.conv.items() if name == cls}
        out.append((w, col))
    return out


def zero_row() -> dict[str, float]:
    """The signals of a section that matches nothing and states no convention."""
    return dict.fromkeys(SECTION_SIGNALS, 0.0)


def path_words(path: str) -> list[str]:
    stem = path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path
    parts = [p for p in re.split(r"[/]", stem) if p.lower() not in GENERIC_DIRS]
    return tokens(" ".join(_spaced(p) for p in parts))


def path_counts(path: str) -> dict[str, int]:
    """The words of ``path`` (``path_words``) with their counts, in the order they first come."""
    return _counts(path_words(path))


def _spaced(name: str) -> str:
    """A file or directory name with its separators (``-``, ``_``, ``.``) as spaces."""
    return name.replace("-", " ").replace("_", " ").replace(".", " ")


class _Bm25:
    """BM25 of one query over a set of term-count documents (only the query's terms are looked
    at), from each term's document frequency ``df`` among ``n`` documents of ``total`` tokens."""

    def __init__(self, weights: Mapping[str, float], df: Mapping[str, int], n: int, total: int,
                 b: float = B) -> None:
        self.weights = weights
        self.idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
        self.avg = (total / n) if n else 1.0
        self.avg = self.avg or 1.0
        self.b = b

    @classmethod
    def over(cls, weights: Mapping[str, float], bags: Sequence[Mapping[str, int]], lengths: Sequence[int],
             b: float = B) -> _Bm25:
        df = dict.fromkeys(weights, 0)
        for bag in bags:
            for t in weights:
                if t in bag:
                    df[t] += 1
        return cls(weights, df, len(bags), sum(lengths), b)

    def mass(self) -> float:
        """What a text holding every query term once would score, about: the scale of a strong match."""
        return sum(w * self.idf[t] for t, w in self.weights.items())

    def score(self, bag: Mapping[str, int], length: int) -> float:
        norm = K1 * (1 - self.b + self.b * length / self.avg)
        total = 0.0
        weights, idf = self.weights, self.idf
        for t, f in bag.items():
            w = weights.get(t)
            if w and f:
                total += w * idf[t] * f * (K1 + 1) / (f + norm)
        return total


def _normalize(rows: Sequence[dict[str, float]], key: str, floor: float = 0.0) -> None:
    """Divide by the best of the task, or by ``floor`` when the best is weaker: in a handful of
    files the best of a few stray words is not a strong match."""
    best = max(max((r[key] for r in rows), default=0.0), floor)
    if best > 0:
        for r in rows:
            r[key] = r[key] / best


class _Matches:
    """What one document holds of the query's terms, found through its postings alone.

    ``heads``: the query terms of its titles and front matter, with counts, in the order a walk
    over its titles (then its front matter) meets them; ``body``: those and its sections' counts
    of the query terms; ``in_text``: the query terms of its sections' text, sorted; ``paths``: for
    each section under a title that holds a query term, its heading path's counts of them, in the
    order the path meets them; ``heading_len``: the tokens of its titles and (twice) of its front
    matter; ``posts``: the postings of each of ``in_text``, in its order (asked of ``dt`` once).
    ``bags`` gives each section's counts as the section score sums them.
    """

    __slots__ = ("dt", "heads", "body", "in_text", "paths", "heading_len", "posts")

    def __init__(self, doc: Doc, dt: DocTerms, weights: Mapping[str, float]) -> None:
        self.dt = dt
        front = list(doc.front_tokens) if doc.front_tokens is not None else tokens(doc.front.text)
        self.heading_len = dt.heads_total + 2 * len(front)
        titles = dt.title_postings
        in_titles = [t for t in weights if t in titles]
        heads: dict[str, int] = {}
        # a walk over the titles meets a term first in its first section, at its first place there
        for t in sorted(in_titles, key=lambda t: (titles[t][0], dt.headings[titles[t][0]].index(t))):
            heads[t] = len(titles[t])
        for t in front:  # the author's own statement of what the file is for
            if t in weights:
                heads[t] = heads.get(t, 0) + 2
        self.heads = heads
        body = dict(heads)
        post_of = dt.post
        self.in_text = sorted(dt.held(weights))
        posts = self.posts = {t: post_of(t) for t in self.in_text}
        for t in sorted(self.in_text, key=lambda t: (posts[t][0], t)):
            post = posts[t]
            body[t] = body.get(t, 0) + sum(post[1::2])
        self.body = body
        self.paths = _heading_paths(doc.smap, dt, in_titles, weights) if in_titles else {}

    def section_df(self) -> dict[str, int]:
        """For each query term, how many of the document's sections hold it in their own text or
        their heading path."""
        posts = self.posts
        out = {t: len(post) // 2 for t, post in posts.items()}
        if self.paths:
            titles = self.dt.title_postings  # (a heading path holds title tokens only)
            own = {t: set(post[0::2]) for t, post in posts.items() if t in titles}
            for pos, path in self.paths.items():
                for t in path:
                    if pos not in own.get(t, ()):
                        out[t] = out.get(t, 0) + 1
        return out

    def bags(self) -> dict[int, dict[str, int]]:
        """Each section's counts of the query terms: its own text's, sorted, then its heading
        path's (added to its own count of a term, else after, in the path's order)."""
        own: dict[int, dict[str, int]] = {}
        for t, post in self.posts.items():
            for i in range(0, len(post), 2):
                own.setdefault(post[i], {})[t] = post[i + 1]
        for pos, path in self.paths.items():
            bag = own.setdefault(pos, {})
            for t, n in path.items():
                bag[t] = bag.get(t, 0) + n
        return {pos: own[pos] for pos in sorted(own)}

    def section_scores(self, model: _Bm25) -> dict[int, float]:
        """``model``'s score of every section's ``bags`` entry, summed term by term over the
        postings: each section's terms come in the order its bag holds them."""
        dt, paths = self.dt, self.paths
        lengths, plens, avg, b = dt.lengths, dt.plens, model.avg, model.b
        acc: dict[int, float] = {}
        if not self.in_text and not paths:
            return acc
        norms = [K1 * (1 - b + b * (n + p) / avg) for n, p in zip(lengths, plens, strict=True)]
        k1p = K1 + 1
        get = acc.get
        for t, post in self.posts.items():
            w = model.weights.get(t)
            if not w:
                for pos in post[0::2]:
                    acc.setdefault(pos, 0.0)
                continue
            wi = w * model.idf[t]
            if paths:
                for pos, f in zip(post[0::2], post[1::2], strict=True):
                    path = paths.get(pos)
                    if path:
                        f += path.get(t, 0)
                    acc[pos] = get(pos, 0.0) + wi * f * k1p / (f + norms[pos])
            else:
                for pos, f in zip(post[0::2], post[1::2], strict=True):
                    acc[pos] = get(pos, 0.0) + wi * f * k1p / (f + norms[pos])
        own: dict[str, set[int]] = {}  # the sections whose own text holds a term of a heading path
        for pos in sorted(paths):
            total = acc.get(pos, 0.0)
            norm = norms[pos]
            for t, f in paths[pos].items():
                held = own.get(t)
                if held is None:
                    got = self.posts.get(t)  # (a path's word no section's text holds: none)
                    held = own[t] = set(got[0::2]) if got is not None else set()
                if pos in held:
                    continue  # counted with the section's own text
                w = model.weights.get(t)
                if w and f:
                    total += w * model.idf[t] * f * k1p / (f + norm)
            acc[pos] = total
        return acc


def _heading_paths(
    smap: SectionMap, dt: DocTerms, in_titles: Sequence[str], weights: Mapping[str, float]
) -> dict[int, dict[str, int]]:
    """For each section under a title that holds a query term (its own included), the query
    terms of its heading path (its ancestors' titles and its own) with counts, in the order the
    path meets them. A parent comes before its sections, so one walk from the first such title on
    sees every one."""
    parents = smap.parents  # (not smap.sections: a map read back makes its sections on first use)
    hits = {p for t in in_titles for p in dt.title_postings[t]}
    paths: dict[int, dict[str, int]] = {}
    for pos in range(min(hits), len(parents)):
        parent = parents[pos]
        base = paths.get(parent) if parent is not None else None
        if pos not in hits:
            if base is not None:
                paths[pos] = base  # its parent's path, the same object: no section's path is changed
            continue
        path = dict(base) if base else {}
        for t in dt.headings[pos]:
            if t in weights:
                path[t] = path.get(t, 0) + 1
        if path:
            paths[pos] = path
    return paths


def signals(
    docs: Sequence[Doc],
    weights: Mapping[str, float],
    ids: Sequence[Identifier],
    conventions: Mapping[int, Sequence[tuple[str, float]]],
    area: Mapping[str, float],
    area_files: Sequence[str],
) -> Signals:
    """Every document's signals for the query ``weights`` (term -> weight), and its sections'
    names and conventions; the sections' word signals come with ``Signals.fill_sections``, for
    the documents that need them.

    A section that holds no query term, names no identifier and states no convention has every
    signal zero; only the others are worked out (``DocSignals``' columns)."""
    from gitpilot.context.sources import first_covered

    found: list[_Matches] = []
    df_body = dict.fromkeys(weights, 0)
    df_head = dict.fromkeys(weights, 0)
    df_sec = dict.fromkeys(weights, 0)
    df_shead = dict.fromkeys(weights, 0)
    n_secs = body_total = head_total = sec_total = shead_total = 0
    for doc in docs:
        dt = doc.terms
        assert dt is not None
        m = _Matches(doc, dt, weights)
        found.append(m)
        for t in m.heads:
            df_head[t] += 1
        for t in m.body:
            df_body[t] += 1
        for t, n in m.section_df().items():
            df_sec[t] += n
        for path in m.paths.values():
            for t in path:
                df_shead[t] += 1
        n_secs += len(dt.lengths)
        head_total += m.heading_len
        body_total += dt.length_total + m.heading_len
        sec_total += dt.length_total + dt.plen_total
        shead_total += dt.plen_total
    path_bags = [dict(d.path_bag) if d.path_bag is not None else path_counts(d.path) for d in docs]
    path_df = _counts([t for bag in path_bags for t in bag])
    unlinked = sum(1 for d in docs if not d.linked) / (len(docs) or 1)
    m_body = _Bm25(weights, df_body, len(docs), body_total)
    m_head = _Bm25(weights, df_head, len(docs), head_total)
    m_path = _Bm25.over(weights, path_bags, [sum(p.values()) for p in path_bags], b=PATH_B)
    m_sec = _Bm25(weights, df_sec, n_secs, sec_total)
    m_shead = _Bm25(weights, df_shead, n_secs, shead_total)
    rx = [i.regex() for i in ids]
    names = [_literal_name(i) for i in ids]
    shares: dict[str, float] = {}  # directory -> ``_dir_share`` of its files (the same for each)
    out: list[DocSignals] = []
    for d, doc in enumerate(docs):
        dt, m = doc.terms, found[d]
        assert dt is not None
        lines_of = _id_lines(doc, ids, rx, names) if ids else []
        folder = doc.path.rpartition("/")[0]
        share = shares.get(folder)
        if share is None:
            share = shares[folder] = _dir_share(doc.path, weights, path_df, len(docs))
        id_secs = _id_sections(doc.smap, lines_of)
        values = {
            "bm25": m_body.score(m.body, dt.length_total + m.heading_len),
            "heads": m_head.score(m.heads, m.heading_len),
            "path": 0.0 if doc.nested else m_path.score(path_bags[d], sum(path_bags[d].values())),
            "dir": share,
            "ids": sum(1 for f in lines_of if f) / len(ids) if ids else 0.0,
            "linked": unlinked if doc.linked else 0.0,
            "area": _area_of(doc.path, area),
            "scoped": 1.0 if doc.front.scoped else 0.0,
            "applies": 1.0 if first_covered(doc.front.scopes, area_files) is not None else 0.0,
        }
        for kind, key in _KIND_KEYS:
            values[key] = 1.0 if doc.kind == kind else 0.0
        conv = conventions.get(d, ())
        out.append(DocSignals(
            values,
            doc.smap.count,
            ids={p: n / len(ids) for p, n in id_secs.items()} if ids else {},
            conv={p: (name, prior) for p, (name, prior) in enumerate(conv) if prior != 0 and name in CONVENTIONS},
        ))
    docrows = [o.values for o in out]
    for key, model in (("bm25", m_body), ("heads", m_head), ("path", m_path)):
        _normalize(docrows, key, NORM_FLOOR * model.mass())
    return Signals(out, found, m_sec, m_shead)


class Signals(Sequence[DocSignals]):
    """The signals of every candidate (``signals``), in document order.

    A section's word signals (``s_bm25``, ``s_head``) are worked out by ``fill_sections`` for the
    documents that need them, and divided by the best section of the documents a capsule can
    quote (those with a positive score), or by a floor when that best is weak: a section of a
    document that can never be quoted (a change log's, whose many entries hold many of a task's
    words) sets no scale. On a large documentation tree nine sections in ten are in such
    documents, and they are never summed."""

    def __init__(self, docs: list[DocSignals], found: Sequence[_Matches], m_sec: _Bm25, m_shead: _Bm25) -> None:
        self.docs = docs
        self._found = found
        self._models = (m_sec, m_shead)
        self.floors = (NORM_FLOOR * m_sec.mass(), NORM_FLOOR * m_shead.mass())

    def __len__(self) -> int:
        return len(self.docs)

    @overload
    def __getitem__(self, d: int) -> DocSignals: ...

    @overload
    def __getitem__(self, d: slice) -> list[DocSignals]: ...

    def __getitem__(self, d: int | slice) -> DocSignals | list[DocSignals]:
        return self.docs[d]

    def fill_sections(self, wanted: Iterable[int], quotable: Iterable[int] | None,
                      head: bool = True) -> None:
        """Work out the section word signals of the ``wanted`` documents, divided by the best
        of the ``quotable`` ones (each of them wanted; a value above that best is 1). With
        ``quotable`` None they are left as BM25 gives them (``bench/fit.py`` divides them for
        each weight table it tries); without ``head`` the heading-path signal stays zero (a
        table that does not weigh it)."""
        m_sec, m_shead = self._models
        wanted = sorted(set(wanted))
        for d in wanted:
            m, sig = self._found[d], self.docs[d]
            sig.bm25 = m.section_scores(m_sec)
            sig.head = _path_scores(m_shead, m.paths, m.dt.plens) if head else {}
        if quotable is None:
            return
        q = set(quotable)
        for col, floor in (("bm25", self.floors[0]), ("head", self.floors[1])):
            best = max((max(getattr(self.docs[d], col).values(), default=0.0) for d in q), default=0.0)
            divide(([getattr(self.docs[d], col) for d in wanted]), max(best, floor))


def divide(columns: Iterable[dict[int, float]], by: float) -> None:
    """Divide each value by ``by``, at most 1 (a section of a document above the scale's)."""
    if by > 0:
        for c in columns:
            for pos, v in c.items():
                c[pos] = min(v / by, 1.0)


def _path_scores(model: _Bm25, paths: Mapping[int, Mapping[str, int]], plens: Sequence[int]) -> dict[int, float]:
    """``model.score`` of each section's heading-path counts (length: its heading path's)."""
    weights, idf, b, avg = model.weights, model.idf, model.b, model.avg
    k1p = K1 + 1
    out: dict[int, float] = {}
    for pos, path in paths.items():
        norm = K1 * (1 - b + b * plens[pos] / avg)
        total = 0.0
        for t, f in path.items():
            w = weights.get(t)
            if w and f:
                total += w * idf[t] * f * k1p / (f + norm)
        out[pos] = total
    return out


def _counts(toks: Sequence[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for t in toks:
        out[t] = out.get(t, 0) + 1
    return out


def _id_lines(doc: Doc, ids: Sequence[Identifier], rx: Sequence[re.Pattern[str]],
              names: Sequence[bool] | None = None) -> list[list[int]]:
    """For each identifier, the (1-based) lines of ``doc`` it occurs on ([] when it does not);
    ``names``: ``_literal_name`` of each, where the caller worked them out once for every document."""
    text = doc.text or "".join(doc.lines)
    if names is None:
        names = [_literal_name(i) for i in ids]
    if not text.isascii() and not any(c in text for c in _FOLDS):
        return _id_lines_utf8(doc, text, ids, rx, names)
    low = text.lower()
    out: list[list[int]] = []
    places: _LinePlaces | None = None
    plain = text.isascii() or (len(low) == len(text) and not any(c in text for c in _FOLDS))
    for i, pattern, name in zip(ids, rx, names, strict=True):
        lit = i.text.lower()
        if lit not in low:
            out.append([])
            continue
        places = _LinePlaces(doc, text) if places is None else places
        if plain and name:
            out.append(_literal_lines(low, lit, pattern, places))
            continue
        out.append(places.numbers(m.start() for m in pattern.finditer(text)))
    return out


def _id_lines_utf8(doc: Doc, text: str, ids: Sequence[Identifier], rx: Sequence[re.Pattern[str]],
                   names: Sequence[bool]) -> list[list[int]]:
    """``_id_lines`` of a text with characters beyond ASCII and none of ``_FOLDS``, whose
    lower-case form is searched as UTF-8 bytes with only the ASCII letters lowered: no other
    character lowers to an ASCII one or to more than one character (only the dotted capital I
    and the Kelvin sign do, and they are ``_FOLDS``), so an ASCII name is in ``text.lower()``
    exactly where it is in those bytes, and a character's place is its byte's place less the
    UTF-8 continuation bytes before it. (``str.lower`` of such a text costs several times more:
    a third of a large documentation tree's bytes are in such files.)"""
    raw = text.encode("utf-8", "surrogatepass").lower()
    low: str | None = None
    cont: bytes | None = None
    out: list[list[int]] = []
    places: _LinePlaces | None = None
    for i, pattern, name in zip(ids, rx, names, strict=True):
        lit = i.text.lower()
        if lit.isascii():
            found = lit.encode("ascii") in raw
        else:
            low = text.lower() if low is None else low
            found = lit in low
        if not found:
            out.append([])
            continue
        places = _LinePlaces(doc, text) if places is None else places
        if name:  # (an ASCII name: ``lit`` is ASCII)
            cont = raw.translate(_CONTINUATION) if cont is None else cont
            out.append(places.matching(_char_places(raw, cont, lit.encode("ascii")), pattern))
            continue
        out.append(places.numbers(m.start() for m in pattern.finditer(text)))
    return out


class _LinePlaces:
    """The lines of places in a text, numbered as its lines (``doc.lines``) are: where only
    ``\n`` ends a line, by counting them in the text (the lines are not split for it), else by
    the lines' lengths. Places are given in rising order."""

    def __init__(self, doc: Doc, text: str) -> None:
        self.text = text
        self.starts: list[int] | None = None
        if not newlines_only(text):
            self.starts = [0, *accumulate(map(len, doc.lines))]

    def numbers(self, places: Iterable[int]) -> list[int]:
        """The lines of ``places``, each once."""
        starts = self.starts
        if starts is not None:
            return sorted({bisect_right(starts, h) for h in places})
        text, at, n = self.text, 0, 1
        out: list[int] = []
        for h in places:
            n += text.count("\n", at, h)
            at = h
            if not out or out[-1] != n:
                out.append(n)
        return out

    def matching(self, places: Iterable[int], pattern: re.Pattern[str]) -> list[int]:
        """The lines of ``places``, each once, on which ``pattern`` matches (searched within the
        line: from its start to its end)."""
        text, starts = self.text, self.starts
        if starts is not None:
            return [n for n in self.numbers(places) if pattern.search(text, starts[n - 1], starts[n]) is not None]
        at, n, last = 0, 1, 0
        out: list[int] = []
        for h in places:
            n += text.count("\n", at, h)
            at = h
            if n == last:
                continue
            last = n
            start, end = text.rfind("\n", 0, h) + 1, text.find("\n", h) + 1 or len(text)
            if pattern.search(text, start, end) is not None:
                out.append(n)
        return out


# Each UTF-8 continuation byte (0x80-0xBF) as 0x80, every other byte as 0.
_CONTINUATION = bytes(0x80 if 0x80 <= b < 0xC0 else 0 for b in range(256))


def _char_places(raw: bytes, cont: bytes, lit: bytes) -> list[int]:
    """The character places of the matches of ``lit`` in ``raw`` (UTF-8), one after another as
    ``re.finditer`` finds them; ``cont`` marks ``raw``'s continuation bytes."""
    out: list[int] = []
    before = at = 0
    for m in re.finditer(re.escape(lit), raw):
        start = m.start()
        before += cont.count(0x80, at, start)
        at = start
        out.append(start - before)
    return out


# The characters that Python's case-insensitive matching takes for ASCII letters ("ſ" for "s",
# the Kelvin sign for "k", dotted and dotless i): a text without them matches an ASCII name
# case-insensitively exactly where its lower-case form holds the name's.
_FOLDS = "\u0130\u0131\u017f\u212a"
_LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e")


def _literal_name(i: Identifier) -> bool:
    """An identifier whose pattern is its ASCII text as a whole name, with no line break in it."""
    return i.text.isascii() and i.pattern == literal(i.text) and _LINE_BREAKS.isdisjoint(i.text)


def _literal_lines(low: str, lit: str, pattern: re.Pattern[str], places: _LinePlaces) -> list[int]:
    """The lines where ``pattern`` (``lit`` as a whole name, case-insensitively) matches: the
    lines where the lower-case text holds ``lit``, each checked by the pattern itself. (A pattern
    that starts with a look-behind is tried at every character of the text; the lower-case text is
    searched for ``lit`` much faster. The text and ``low`` have the same length, and the name holds
    no line break, so a match and the place found for it are on the same line.)"""
    return places.matching((m.start() for m in re.finditer(re.escape(lit), low)), pattern)


def _id_sections(smap: SectionMap, found: Sequence[Sequence[int]]) -> dict[int, int]:
    """For each section whose own part (``start..body_end``) holds a line of an identifier, how
    many of the identifiers it holds."""
    if not any(found):
        return {}
    starts, ends = smap.starts, smap.body_ends  # (columns: a map read back makes its sections on first use)
    # a map as ``markdown.parse`` makes it: each own part ends before the next section starts
    ordered = all(ends[i] < starts[i + 1] for i in range(len(starts) - 1))
    out: dict[int, int] = {}
    for lines in found:
        if ordered:
            held: set[int] = set()
            for n in lines:
                i = bisect_right(starts, n) - 1
                if i >= 0 and starts[i] <= n <= ends[i]:
                    held.add(i)
        else:
            held = {i for i in range(len(starts)) if any(starts[i] <= n <= ends[i] for n in lines)}
        for i in held:
            out[i] = out.get(i, 0) + 1
    return out


def _dir_share(path: str, weights: Mapping[str, float], df: Mapping[str, int], n: int) -> float:
    """The share of the words of the name of ``path``'s nearest directory that says something
    (not ``src``, ``docs``, ``packages`` ...: ``GENERIC_DIRS``) that are query terms (0 at the root),
    each counted by its query weight (a synonym less) and by how few of the ``n`` candidates'
    paths hold it (``df``): a word in most paths (the project's own name, ``pydantic_ai/``) tells
    one document from another no more than the root does."""
    parts = path.split("/")[:-1]
    while parts and (parts[-1].lower() in GENERIC_DIRS or not parts[-1].strip(".")):
        parts.pop()
    if not parts:
        return 0.0
    words = dict.fromkeys(tokens(_spaced(parts[-1])))  # each once, in the name's order (not a set's: see below)
    if not words:
        return 0.0
    # (summed in one order in every process: a set of strings iterates in an order that changes
    # with each process's string hashing, and a sum of floats in another order can differ in its
    # last bit, which a tie between two documents' scores then decides)
    return sum(min(1.0, weights[w]) * (1.0 - df.get(w, 0) / n) for w in words if w in weights) / len(words)


def _area_of(path: str, area: Mapping[str, float]) -> float:
    """The area score of the nearest directory above ``path`` that has one (0 at the root)."""
    cur = path.rsplit("/", 1)[0] if "/" in path else ""
    while cur:
        got = area.get(cur)
        if got is not None:
            return got
        cur = cur.rsplit("/", 1)[0] if "/" in cur else ""
    return 0.0
