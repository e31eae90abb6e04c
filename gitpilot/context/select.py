"""Scoring Markdown sections against a task and choosing what fits the capsule's budget.

Signals, all deterministic:
- BM25 of the task's words and their synonyms (``query``) over each section's own part (heading
  path weighted up, file path words) and over its whole subtree, so a parent whose substance
  sits in its subsections still scores;
- the identifiers the task names (backticked names, CamelCase, snake_case, ``call()``, paths,
  flags, numbered references), found verbatim, as strong pseudo-terms;
- pseudo-relevance feedback (rare words of the best sections, ``query``) and the reference
  entries of the identifiers the best sections name (a section headed `worker.shutdown_timeout`);
- files whose path matches a path, directory or module the task names;
- structural priors for what real tasks need but never name: the testing, commit, development
  and style conventions of rule files and developer documents (and, for a task about
  documentation, how the docs are built), from ``conventions``;
- a damping of changelogs and release notes unless the task is about them.

Sections within ``RELATIVE_CUT`` of the best score are taken greedily, best first, up to the
excerpt budget; conventions chosen by a prior alone take at most ``PRIOR_PER_CLASS`` slots a
class and ``PRIOR_SHARE`` of the budget; no single excerpt above ``max_section_bytes`` (a
convention section too big gives its first subsections instead); a parent is taken whole when
its subsections are all relevant (or its substance is spread over them), otherwise only the
subsections that matter; a heading alone is never an excerpt. Cuts fall on section boundaries.
"""

from __future__ import annotations

import heapq
import math
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from gitpilot.context.conventions import convention_priors, own_body
from gitpilot.context.markdown import SectionMap, range_text, sha256_text
from gitpilot.context.query import feedback_terms, query_weights
from gitpilot.context.text import (
    Identifier,
    hits_for,
    identifiers,
    named_paths,
    term_counts,
    tokens,
    word_counts,
)

K1 = 1.2
B = 0.75
SUBTREE_WEIGHT = 0.85
RELATIVE_CUT = 0.4
OUTLIER_FACTOR = 2.0  # the cut is measured against at most twice the runner-up file's best
RUNNER_UP = 3
HEADING_WEIGHT = 3
ID_WEIGHT = {"ref": 3.0, "path": 2.0}
DEFAULT_ID_WEIGHT = 2.0
PRIOR_SHARE = 0.45  # of the excerpt budget at most goes to sections chosen by a prior alone
PRIOR_PER_CLASS = 2
FOLLOW_FROM = 3  # the best sections whose named identifiers lead to their reference entries
FOLLOW_SHARE = 0.5  # of the naming section's score
LEFT_OUT_LISTED = 20
MANIFEST_LEFT_OUT = 400

_CHANGELOG = re.compile(
    r"(^|/)(change[-_]?log|changes|history|news|release[-_]?notes?|releases)([-_./]|$)", re.I
)
# A task is about release history when it says so, or names a version.
_CHANGELOG_TASK = re.compile(
    r"\b(change ?logs?|release notes?|what'?s new|news entr(y|ies)|v?\d+\.\d+(\.\d+)?)\b", re.I
)
# Dated narrative (blog posts, news, archives) rarely states how things work now.
_DATED = re.compile(r"(^|/)(blog|blogs|posts|news|archive|archived|press)(/|$)", re.I)
# A directory of one version of the documentation: ``docs/v2/``, ``versioned_docs/version-1.4/``.
_VERSION_DIR = re.compile(r"(^|/)(v\d+(\.\d+)*|\d+\.\d+(\.\d+|\.x)?|version-[\w.]+)/", re.I)


# A task that adds to the changelog (a version number alone only asks about history).
_CHANGELOG_EDIT = re.compile(r"\b(change ?logs?|release notes?|news (entr(y|ies)|fragments?)|changesets?)\b", re.I)
CHANGELOG_TOP = 0.6  # of the best word score: the head of a changelog, for a task that adds to it
CHANGELOG_FILES = 2  # whose head is offered: the shallowest ones (the root CHANGELOG.md first)


def _changelog_tops(docs: Sequence[Doc]) -> set[tuple[int, int]]:
    """Where a new changelog entry goes: the head of each of the shallowest changelog files (its
    title section's own text, which states the format, e.g. "based on Keep a Changelog") and its
    first entry section with text (the newest release: an example of the form)."""
    logs = sorted(
        (d for d, doc in enumerate(docs) if _CHANGELOG.search(doc.path)),
        key=lambda d: (docs[d].path.count("/"), docs[d].path),
    )[:CHANGELOG_FILES]
    out: set[tuple[int, int]] = set()
    for d in logs:
        secs = docs[d].smap.sections
        if not secs:
            continue
        out.add((d, 0))
        entry_level = min((sec.level for sec in secs[1:] if sec.level), default=0)
        for sec in secs[1:]:
            if sec.level == entry_level and re.search(r"\w", range_text(docs[d].lines, sec.start + 1, sec.end)):
                # the release with its subsections ("### Fixed"), shown whole
                out.update((d, s.pos) for s in secs if sec.start <= s.start <= sec.end)
                break
    return out


def _versioned_copies(paths: Sequence[str]) -> set[str]:
    """Pages under a version directory that repeat a page of the current documentation
    (``docs/v2/servers/tools.mdx`` beside ``docs/servers/tools.mdx``): the frozen copy of an
    older release, damped like release notes. A version directory with no current twin (the
    only copy of the docs) is left alone."""
    have = set(paths)
    out: set[str] = set()
    for path in paths:
        for m in _VERSION_DIR.finditer(path):
            twin = path[: m.start()] + m.group(1) + path[m.end() :]
            if twin in have:
                out.add(path)
                break
    return out
GENERIC_DIRS = frozenset(
    "src lib libs source sources app apps pkg pkgs packages internal cmd docs doc test tests spec "
    "specs main core common util utils include bin scripts".split()
)


@dataclass(frozen=True)
class Doc:
    """One candidate Markdown file: its section map and exact lines."""

    path: str
    smap: SectionMap
    lines: Sequence[str]
    rule: bool = False  # a rule file (instruction, memory, CONTRIBUTING, SECURITY, configured)
    nested: bool = False  # an AGENTS.md/CLAUDE.md below the root: its path words say nothing of the task


@dataclass(frozen=True)
class Pick:
    """One excerpt: a contiguous line range of one file, cut at section boundaries."""

    path: str
    start: int
    end: int
    heading: str
    score: float
    signals: tuple[str, ...]
    content: bool = True  # chosen for what it says, not by a convention prior alone


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
    best: float = 0.0  # the best score of a section that can be shown
    complete: bool = False  # every candidate file is shown in full: nothing was left out


@dataclass
class _Node:
    doc: int
    sec: int
    own_tf: Counter[str]
    own_len: int
    sub_tf: dict[str, int] = field(default_factory=dict)
    sub_len: int = 0
    score: float = 0.0
    base: float = 0.0
    own_score: float = 0.0
    prior: str = ""
    signals: list[str] = field(default_factory=list)


# --- scoring ----------------------------------------------------------------------------------


def _path_words(path: str) -> list[str]:
    stemless = path.rsplit(".", 1)[0] if "/" not in path.rsplit(".", 1)[-1] else path
    parts = [p for p in stemless.split("/") if p.lower() not in GENERIC_DIRS]
    return tokens(" ".join(parts))


def _build_nodes(
    docs: Sequence[Doc], excluded: Mapping[str, Sequence[tuple[int, int]]], terms: set[str]
) -> tuple[list[_Node], list[tuple[Counter[str], list[str]]]]:
    """One node per candidate section, counting only the query's terms (and every word for length)."""
    nodes: list[_Node] = []
    counted: list[tuple[Counter[str], list[str]]] = []
    vocab: set[str] = set()
    for d, doc in enumerate(docs):
        path_tokens = [] if doc.nested else _path_words(doc.path)
        title_tokens = [tokens(s.title) for s in doc.smap.sections]
        shown = excluded.get(doc.path, ())
        for sec in doc.smap.sections:
            if sec.withheld or (shown and _covered(shown, sec.start, sec.end)):
                continue
            wc, length = word_counts(range_text(doc.lines, sec.start + (1 if sec.level else 0), sec.body_end))
            vocab.update(wc)
            extra = [t for t in title_tokens[sec.pos] for _ in range(HEADING_WEIGHT)]
            anc = sec.parent
            while anc is not None:
                extra.extend(title_tokens[anc])
                anc = doc.smap.sections[anc].parent
            extra.extend(path_tokens)
            counted.append((wc, extra))
            nodes.append(_Node(d, sec.pos, Counter(), max(1, length + len(extra))))
    hits = hits_for(vocab, terms)
    for node, (wc, extra) in zip(nodes, counted, strict=True):
        node.own_tf.update(term_counts(wc, hits, terms))
        node.own_tf.update(t for t in extra if t in terms)
    return nodes, counted


def _covered(ranges: Sequence[tuple[int, int]], start: int, end: int) -> bool:
    return any(a <= start and end <= b for a, b in ranges)


def _count_identifiers(docs: Sequence[Doc], nodes: list[_Node], ids: Sequence[Identifier]) -> list[str]:
    """Add each identifier's matches in a section's own part as a pseudo-term; returns the term names."""
    where: dict[tuple[int, int], _Node] = {(n.doc, n.sec): n for n in nodes}
    texts = ["".join(doc.lines) for doc in docs] if ids else []
    terms: list[str] = []
    for ident in ids:
        term = f"\0id:{ident.text.lower()}"
        terms.append(term)
        rx = ident.regex()
        for d, doc in enumerate(docs):
            text = texts[d]
            if not rx.search(text):
                continue
            starts = _line_starts(doc.lines)
            owners = _own_owner(doc.smap)
            for m in rx.finditer(text):
                line = bisect_right(starts, m.start())
                sec = owners[line - 1] if 0 < line <= len(owners) else -1
                node = where.get((d, sec))
                if node is not None:
                    heading = doc.smap.sections[sec].start == line and doc.smap.sections[sec].level > 0
                    node.own_tf[term] += HEADING_WEIGHT if heading else 1
    return terms


def _line_starts(lines: Sequence[str]) -> list[int]:
    out, pos = [], 0
    for ln in lines:
        out.append(pos)
        pos += len(ln)
    return out


def _own_owner(smap: SectionMap) -> list[int]:
    """For each line, the section whose own part holds it (-1 outside every section)."""
    owner = [-1] * smap.line_count
    for s in smap.sections:
        for i in range(s.start - 1, min(s.body_end, smap.line_count)):
            owner[i] = s.pos
    return owner


def _bm25(
    tf: Mapping[str, int], length: int, avg: float, weights: Mapping[str, float], idf: Mapping[str, float]
) -> float:
    norm = K1 * (1 - B + B * length / avg)
    total = 0.0
    for term, w in weights.items():
        f = tf.get(term, 0)
        if f:
            total += w * idf[term] * f * (K1 + 1) / (f + norm)
    return total


def _aggregate_subtrees(docs: Sequence[Doc], nodes: list[_Node], terms: Iterable[str]) -> None:
    """Each node's term counts and length over its whole subtree (only for the query's terms)."""
    by_key = {(n.doc, n.sec): n for n in nodes}
    term_list = list(terms)
    for n in sorted(nodes, key=lambda n: (n.doc, -n.sec)):  # children come after parents
        n.sub_tf = {t: n.own_tf[t] for t in term_list if n.own_tf.get(t)}
        n.sub_len = n.own_len
    for n in sorted(nodes, key=lambda n: (n.doc, -n.sec)):
        parent = docs[n.doc].smap.sections[n.sec].parent
        p = by_key.get((n.doc, parent)) if parent is not None else None
        if p is not None:  # every descendant of n was added to n before n reaches its parent
            for t, f in n.sub_tf.items():
                p.sub_tf[t] = p.sub_tf.get(t, 0) + f
            p.sub_len += n.sub_len


def score(
    docs: Sequence[Doc], task: str, excluded: Mapping[str, Sequence[tuple[int, int]]]
) -> tuple[list[_Node], _Query]:
    """Every candidate section with its score and signals."""
    weights = query_weights(task)
    nodes, counted = _build_nodes(docs, excluded, set(weights))
    if not nodes:
        return nodes, _Query({}, {}, (), ())
    ids = identifiers(task)
    id_terms = _count_identifiers(docs, nodes, ids)
    for ident, term in zip(ids, id_terms, strict=True):
        weights[term] = ID_WEIGHT.get(ident.kind, DEFAULT_ID_WEIGHT)
    live, idf = _bm25_all(docs, nodes, weights)
    expansion = feedback_terms([n.own_score for n in nodes], counted, weights, idf)
    if expansion:
        _count_terms(nodes, counted, set(expansion))
        weights.update(expansion)
        live, idf = _bm25_all(docs, nodes, weights)
    _follow_definitions(docs, nodes)
    _apply_paths_and_priors(docs, nodes, task, ids, weights)
    return nodes, _Query(live, idf, ids, id_terms)


_CODE_SPAN = re.compile(r"`([^`\n]{3,100})`")
_IDENT_LIKE = re.compile(r"^[\w.:/@-]*([._:/-]|[a-z][A-Z])[\w.:/@-]*$")  # dotted, snake, camel, path, flag


def _follow_definitions(docs: Sequence[Doc], nodes: list[_Node]) -> None:
    """The reference entry of an identifier the best sections name: `worker.shutdown_timeout` in
    the section that matches best, and a section headed `worker.shutdown_timeout` elsewhere (where
    its default and meaning are), which the task's words alone do not reach."""
    top = heapq.nlargest(FOLLOW_FROM, range(len(nodes)), key=lambda i: (nodes[i].own_score, -i))
    named: dict[str, tuple[float, str]] = {}
    for i in top:
        n = nodes[i]
        if n.own_score <= 0:
            continue
        doc = docs[n.doc]
        for m in _CODE_SPAN.finditer(own_body(doc, doc.smap.sections[n.sec])):
            ident = m.group(1).strip()
            if _IDENT_LIKE.match(ident):
                named.setdefault(ident.lower(), (n.own_score, doc.path))
    if not named:
        return
    sources = {(nodes[i].doc, nodes[i].sec) for i in top}
    for n in nodes:
        title = docs[n.doc].smap.sections[n.sec].title
        if (n.doc, n.sec) in sources or not title:
            continue
        spans = [m.group(1).strip().lower() for m in _CODE_SPAN.finditer(title)] or [title.strip().lower()]
        for ident in spans:
            hit = named.get(ident)
            if hit is not None and docs[n.doc].path != hit[1]:
                n.base = max(n.base, FOLLOW_SHARE * hit[0])
                n.signals.append(f"defines `{ident}`, named in {hit[1]}")
                break


def _bm25_all(
    docs: Sequence[Doc], nodes: list[_Node], weights: Mapping[str, float]
) -> tuple[dict[str, float], dict[str, float]]:
    """Each node's own, subtree and base score; returns the live query weights and their idf."""
    df: Counter[str] = Counter()
    for n in nodes:
        for t in n.own_tf:
            if t in weights:
                df[t] += 1
    total = len(nodes)
    idf = {t: math.log(1 + (total - df[t] + 0.5) / (df[t] + 0.5)) for t in weights}
    _aggregate_subtrees(docs, nodes, [t for t in weights if df[t]])
    avg_own = sum(n.own_len for n in nodes) / total
    avg_sub = sum(n.sub_len for n in nodes) / total
    live = {t: w for t, w in weights.items() if df[t]}
    for n in nodes:
        n.own_score = n.base = 0.0
        if n.sub_tf:
            n.own_score = _bm25(n.own_tf, n.own_len, avg_own, live, idf) if n.own_tf else 0.0
            sub = SUBTREE_WEIGHT * _bm25(n.sub_tf, n.sub_len, avg_sub, live, idf)
            n.base = max(n.own_score, sub)
    return live, idf


def _count_terms(
    nodes: Sequence[_Node], counted: Sequence[tuple[Counter[str], list[str]]], terms: set[str]
) -> None:
    vocab: set[str] = set()
    for wc, _ in counted:
        vocab.update(wc)
    hits = hits_for(vocab, terms)
    for node, (wc, extra) in zip(nodes, counted, strict=True):
        node.own_tf.update(term_counts(wc, hits, terms))
        node.own_tf.update(t for t in extra if t in terms)


@dataclass(frozen=True)
class _Query:
    weights: Mapping[str, float]
    idf: Mapping[str, float]
    ids: Sequence[Identifier]
    id_terms: Sequence[str]

    def signals(self, n: _Node) -> list[str]:
        """Why a section scored: the names and words it matched, its path and convention signals."""
        return _term_signals(n, self.weights, self.idf, self.ids, self.id_terms) + n.signals


def _term_signals(
    n: _Node,
    weights: Mapping[str, float],
    idf: Mapping[str, float],
    ids: Sequence[Identifier],
    id_terms: Sequence[str],
) -> list[str]:
    names = [f"`{i.text}`" for i, t in zip(ids, id_terms, strict=True) if n.sub_tf.get(t)]
    words = sorted(
        (t for t in weights if not t.startswith("\0") and n.sub_tf.get(t)),
        key=lambda t: (-weights[t] * idf[t], t),
    )[:6]
    out = []
    if names:
        out.append("names " + ", ".join(names[:6]))
    if words:
        out.append("words " + ", ".join(words))
    return out


def _apply_paths_and_priors(
    docs: Sequence[Doc],
    nodes: list[_Node],
    task: str,
    ids: Sequence[Identifier],
    weights: Mapping[str, float],
) -> None:
    ref = max((n.base for n in nodes), default=0.0) or 1.0
    paths = named_paths(list(ids))
    changelog_task = bool(_CHANGELOG_TASK.search(task))
    file_boost = [_path_match(doc.path, paths) for doc in docs]
    copies = _versioned_copies([doc.path for doc in docs])
    damped = [
        (bool(_CHANGELOG.search(doc.path)) or bool(_DATED.search(doc.path)) or doc.path in copies)
        and not changelog_task
        for doc in docs
    ]
    priors, linked = convention_priors(docs, task)
    tops = _changelog_tops(docs) if _CHANGELOG_EDIT.search(task) else set()
    for n in nodes:
        doc = docs[n.doc]
        sec = doc.smap.sections[n.sec]
        kind, boost = file_boost[n.doc]
        s = n.base
        if (n.doc, n.sec) in tops:
            # its own text is what matters (the format line), not the releases below it
            s = max(s, CHANGELOG_TOP * ref)
            n.own_score = max(n.own_score, s)
            n.signals.append("where a changelog entry goes")
        if boost:
            s += boost * ref * (1.0 if sec.parent is None else 0.6)
            n.signals.append(f"path {kind}")
        if damped[n.doc]:
            s *= 0.4
        if doc.nested:
            s *= 0.5  # rules for another directory than the task's (else the whole file is shown)
        prior_class, prior = priors[n.doc][n.sec] if n.doc in priors and not damped[n.doc] else ("", 0.0)
        if prior_class:
            via_prior = prior * ref + 0.25 * s
            if via_prior > s:
                n.prior = prior_class
                n.signals.append(f"convention {prior_class}")
                if (n.doc, n.sec) in linked:
                    n.signals.append(f"linked from {linked[(n.doc, n.sec)]}")
                s = via_prior
        n.score = s


def _path_match(path: str, named: Sequence[str]) -> tuple[str, float]:
    """How strongly a file's path matches the paths the task names."""
    low = path.lower()
    best = ("", 0.0)
    for name in named:
        n = name.lower().strip("/")
        if not n:
            continue
        if low == n or low.endswith("/" + n):
            return "named", 0.6
        parent = low.rsplit("/", 1)[0] if "/" in low else ""
        stem = low.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        n_parts = [p for p in re.split(r"[/.]", n) if p and p not in GENERIC_DIRS]
        if parent and (
            parent == n
            or parent.endswith("/" + n)
            or n.startswith(parent + "/")
            and parent not in GENERIC_DIRS
        ):
            best = max(best, ("directory", 0.35), key=lambda x: x[1])
        elif stem and stem not in GENERIC_DIRS and stem in n_parts and stem not in ("readme", "index"):
            best = max(best, ("module", 0.3), key=lambda x: x[1])
    return best


# --- choosing ---------------------------------------------------------------------------------


def select(
    docs: Sequence[Doc],
    task: str,
    *,
    excluded: Mapping[str, Sequence[tuple[int, int]]] | None = None,
    max_excerpt_bytes: int = 12000,
    max_section_bytes: int = 4000,
) -> Selection:
    """The excerpts for ``task`` from ``docs``, minus the ``excluded`` line ranges (shown elsewhere)."""
    return Ranking(docs, task, excluded or {}).choose(max_excerpt_bytes, max_section_bytes)


class Ranking:
    """Every candidate section scored against the task, once; ``choose`` fills the budget from it.

    Choosing again without some files (shown in full elsewhere after a first choice) reuses
    the scores, so the budget those files held goes to the next sections.
    """

    def __init__(self, docs: Sequence[Doc], task: str, excluded: Mapping[str, Sequence[tuple[int, int]]]):
        self.docs = docs
        self.task = task
        self.excluded = excluded
        self.nodes, self.query = score(docs, task, excluded)

    def choose(
        self, max_excerpt_bytes: int, max_section_bytes: int, without: frozenset[str] = frozenset()
    ) -> Selection:
        docs, query = self.docs, self.query
        gone = {d for d, doc in enumerate(docs) if doc.path in without}
        nodes = [n for n in self.nodes if n.doc not in gone] if gone else self.nodes
        if not nodes:
            return Selection([], [], 0, [], [])
        terms = sorted(t for t in query_weights(self.task))
        return _choose(docs, nodes, query, self.excluded, max_excerpt_bytes, max_section_bytes, terms)


def _choose(
    docs: Sequence[Doc],
    nodes: list[_Node],
    query: _Query,
    excluded: Mapping[str, Sequence[tuple[int, int]]],
    max_excerpt_bytes: int,
    max_section_bytes: int,
    terms: list[str],
) -> Selection:
    ids = query.ids
    by_key = {(n.doc, n.sec): n for n in nodes}
    sizes = _Sizes()
    # "Close to the best" is measured against the best section that can be shown at all.
    ranked = sorted(nodes, key=lambda n: (-n.score, docs[n.doc].path, n.sec))
    best = next((n.score for n in ranked if sizes.of(docs, (n.doc, n.sec), "own") <= max_section_bytes), 0.0)
    cut = RELATIVE_CUT * min(best, OUTLIER_FACTOR * _runner_up(docs, ranked))
    chosen: dict[tuple[int, int], str] = {}  # (doc, sec) -> "tree" | "own"
    used = 0
    prior_used = 0
    prior_count: Counter[str] = Counter()
    relaxed: set[tuple[int, int]] = set()
    too_big: set[tuple[int, int]] = set()
    no_room: set[tuple[int, int]] = set()
    quota: set[tuple[int, int]] = set()
    for n in ranked:
        key = (n.doc, n.sec)
        limit = cut * (0.5 if key in relaxed else 1.0)
        if n.score <= 0 or n.score < limit or _ancestor_tree(docs, chosen, key):
            continue
        only_prior = bool(n.prior) and n.base < cut
        mode, size = _mode(docs, by_key, n, cut, sizes, max_section_bytes)
        parts: list[tuple[tuple[int, int], str]] = []
        if only_prior and mode != "tree" and docs[n.doc].smap.sections[n.sec].parent is not None:
            # A convention section too big to show whole: its own part and first subsections instead.
            room = min(
                max_section_bytes, max_excerpt_bytes - used, int(PRIOR_SHARE * max_excerpt_bytes) - prior_used
            )
            parts = _fill(docs, by_key, key, chosen, sizes, room, cut)
            if parts:
                mode, size = "fill", sum(sizes.of(docs, k, m) for k, m in parts)
        if mode in ("", "skip"):
            if mode == "":
                too_big.add(key)
            continue
        refund = sum(
            sizes.of(docs, k, m) for k, m in chosen.items() if mode == "tree" and _inside(docs, k, key)
        )
        if used + size - refund > max_excerpt_bytes:
            no_room.add(key)
            continue
        promotes = any(_inside(docs, k, key) for k in chosen) if mode == "tree" else False
        if (
            only_prior
            and not promotes
            and (
                prior_used + size > PRIOR_SHARE * max_excerpt_bytes or prior_count[n.prior] >= PRIOR_PER_CLASS
            )
        ):
            quota.add(key)
            continue
        if mode == "tree":
            for k in [k for k in chosen if _inside(docs, k, key)]:
                del chosen[k]
        if mode == "fill":
            chosen.update(parts)
        else:
            chosen[key] = mode
        used += size - refund
        if only_prior:
            prior_used += size - refund
            prior_count[n.prior] += 0 if promotes else 1
        if mode == "own":
            relaxed.update((n.doc, c) for c in docs[n.doc].smap.kids(n.sec))
    _promote_parents(docs, chosen, sizes, max_section_bytes)
    picks = _runs(docs, by_key, chosen, excluded, query, cut)
    left, left_total = _left_out(docs, nodes, chosen, too_big, no_room, quota)
    return Selection(picks, left[:MANIFEST_LEFT_OUT], left_total, terms, [i.text for i in ids], best)


def _runner_up(docs: Sequence[Doc], ranked: Sequence[_Node]) -> float:
    """The score of the best section in the ``RUNNER_UP``-th best file (the best when there are fewer).

    One section that names the task's identifier (an ADR number, a function) can score far
    above everything else; "close to the best" then measures against the field, not the outlier.
    """
    seen: list[int] = []
    for n in ranked:
        if n.score <= 0:
            break  # fewer files match at all: no runner-up to measure against
        if n.doc not in seen:
            seen.append(n.doc)
            if len(seen) == RUNNER_UP:
                return n.score
    return ranked[0].score if ranked else 0.0


class _Sizes:
    def __init__(self) -> None:
        self.bytes_cache: dict[tuple[int, int, int], int] = {}

    def span(self, docs: Sequence[Doc], d: int, start: int, end: int) -> int:
        key = (d, start, end)
        got = self.bytes_cache.get(key)
        if got is None:
            got = len(range_text(docs[d].lines, start, end).encode("utf-8"))
            self.bytes_cache[key] = got
        return got

    def of(self, docs: Sequence[Doc], key: tuple[int, int], mode: str) -> int:
        sec = docs[key[0]].smap.sections[key[1]]
        return self.span(docs, key[0], sec.start, sec.end if mode == "tree" else sec.body_end)


def _mode(
    docs: Sequence[Doc],
    by_key: Mapping[tuple[int, int], _Node],
    n: _Node,
    cut: float,
    sizes: _Sizes,
    max_section: int,
) -> tuple[str, int]:
    """Take the whole subtree or only the section's own part, and its size ("" when neither fits)."""
    doc = docs[n.doc]
    sec = doc.smap.sections[n.sec]
    kids = doc.smap.kids(n.sec)
    tree = sizes.span(docs, n.doc, sec.start, sec.end)
    if _has_withheld(doc.smap, sec.pos):
        kids = kids or (sec.pos,)
    if not kids:
        if not own_body(doc, sec).strip():
            return "skip", 0  # a heading alone says nothing
        return ("tree", tree) if tree <= max_section else ("", tree)
    kid_nodes = [by_key.get((n.doc, k)) for k in kids]
    all_relevant = all(k is not None and k.score >= cut for k in kid_nodes)
    best_kid = max((k.base for k in kid_nodes if k is not None), default=0.0)
    spread = n.base > 1.1 * best_kid  # the subsections together say more than any one of them
    own_relevant = n.own_score >= cut or bool(n.prior)
    own = sizes.span(docs, n.doc, sec.start, sec.body_end)
    whole = all_relevant or spread or (own_relevant and tree <= 2 * own)
    if tree <= max_section and whole and not _has_withheld(doc.smap, sec.pos):
        return "tree", tree
    if not own_relevant or not own_body(doc, sec).strip():
        return "skip", 0  # one subsection carries the score, or the own part is a heading alone
    return ("own", own) if own <= max_section else ("", own)


def _fill(
    docs: Sequence[Doc],
    by_key: Mapping[tuple[int, int], _Node],
    key: tuple[int, int],
    chosen: Mapping[tuple[int, int], str],
    sizes: _Sizes,
    room: int,
    cut: float,
) -> list[tuple[tuple[int, int], str]]:
    """What of a too-big section fits ``room``: its own part when it says something, then its
    subsections (those that match the task first, then in document order), each whole when it
    fits, else its own part and its subsections in turn. Parts shown already are passed over."""
    out: list[tuple[tuple[int, int], str]] = []
    used = 0
    smap = docs[key[0]].smap

    def visit(k: tuple[int, int], top: bool) -> None:
        nonlocal used
        if _ancestor_tree(docs, chosen, k) or any(_inside(docs, k, c) for c in chosen):
            return
        sec = smap.sections[k[1]]
        tree = sizes.of(docs, k, "tree")
        if not top and used + tree <= room and not _has_withheld(smap, k[1]):
            if any(own_body(docs[k[0]], s).strip() for s in smap.sections if sec.start <= s.start <= sec.end):
                out.append((k, "tree"))
                used += tree
            return
        if own_body(docs[k[0]], sec).strip() and not sec.withheld:
            own = sizes.of(docs, k, "own")
            if used + own > room:
                return
            out.append((k, "own"))
            used += own
        kids = smap.kids(k[1])
        order = sorted(kids, key=lambda c: (not _above(by_key.get((k[0], c)), cut), c))
        for c in order:
            visit((k[0], c), False)

    visit(key, True)
    return out


def _above(n: _Node | None, cut: float) -> bool:
    return n is not None and n.base >= cut


def _has_withheld(smap: SectionMap, index: int) -> bool:
    sec = smap.sections[index]
    return any(s.withheld for s in smap.sections if sec.start <= s.start and s.end <= sec.end)


def _inside(docs: Sequence[Doc], inner: tuple[int, int], outer: tuple[int, int]) -> bool:
    if inner[0] != outer[0] or inner == outer:
        return False
    secs = docs[inner[0]].smap.sections
    a, b = secs[inner[1]], secs[outer[1]]
    return b.start <= a.start and a.end <= b.end


def _ancestor_tree(docs: Sequence[Doc], chosen: Mapping[tuple[int, int], str], key: tuple[int, int]) -> bool:
    secs = docs[key[0]].smap.sections
    cur = secs[key[1]].parent
    while cur is not None:
        if chosen.get((key[0], cur)) == "tree":
            return True
        cur = secs[cur].parent
    return key in chosen


def _promote_parents(
    docs: Sequence[Doc], chosen: dict[tuple[int, int], str], sizes: _Sizes, max_section: int
) -> None:
    """A parent whose own part and every subsection were chosen is taken whole."""
    changed = True
    while changed:
        changed = False
        for key, mode in sorted(chosen.items()):
            if mode != "own":
                continue
            smap = docs[key[0]].smap
            kids = smap.kids(key[1])
            if (
                kids
                and all(chosen.get((key[0], k)) == "tree" for k in kids)
                and not _has_withheld(smap, key[1])
            ):
                for k in kids:
                    del chosen[(key[0], k)]
                chosen[key] = "tree"
                changed = True
                break


def _runs(
    docs: Sequence[Doc],
    by_key: Mapping[tuple[int, int], _Node],
    chosen: Mapping[tuple[int, int], str],
    excluded: Mapping[str, Sequence[tuple[int, int]]],
    query: _Query,
    cut: float,
) -> list[Pick]:
    """Chosen ranges per file, minus lines shown elsewhere and withheld parts, as contiguous excerpts."""
    per_doc: dict[int, list[tuple[int, int, tuple[int, int]]]] = {}
    for key, mode in chosen.items():
        sec = docs[key[0]].smap.sections[key[1]]
        per_doc.setdefault(key[0], []).append((sec.start, sec.end if mode == "tree" else sec.body_end, key))
    picks: list[Pick] = []
    for d, ranges in sorted(per_doc.items()):
        doc = docs[d]
        blocked: set[int] = set()
        for a, b in excluded.get(doc.path, ()):
            blocked.update(range(a, b + 1))
        for s in doc.smap.sections:
            if s.withheld:
                blocked.update(range(s.start, s.body_end + 1))
        lines_in: dict[int, tuple[int, int]] = {}
        for a, b, key in sorted(ranges):
            for ln in range(a, b + 1):
                if ln not in blocked:
                    lines_in.setdefault(ln, key)
        for start, end in _contiguous(sorted(lines_in), doc.lines):
            keys = sorted(
                {lines_in[ln] for ln in range(start, end + 1) if ln in lines_in}, key=lambda k: k[1]
            )
            nodes = [by_key[k] for k in keys if k in by_key]
            first = doc.smap.sections[keys[0][1]]
            label = " › ".join(doc.smap.heading_path(first.pos)) or "(preamble)"
            if len(keys) > 1:
                label += " + " + " + ".join(doc.smap.sections[k[1]].title or "(preamble)" for k in keys[1:])
            signals = sorted({s for n in nodes for s in query.signals(n)})
            content = any(n.base >= cut for n in nodes)
            picks.append(
                Pick(doc.path, start, end, label, max(n.score for n in nodes), tuple(signals), content)
            )
    picks.sort(key=lambda p: (-round(p.score, 9), p.path, p.start))
    return picks


def _contiguous(line_numbers: Sequence[int], lines: Sequence[str]) -> list[tuple[int, int]]:
    """Runs of lines; a gap of blank lines only is bridged."""
    runs: list[tuple[int, int]] = []
    for ln in line_numbers:
        if runs:
            a, b = runs[-1]
            if ln == b + 1 or all(not lines[i - 1].strip() for i in range(b + 1, ln)):
                runs[-1] = (a, ln)
                continue
        runs.append((ln, ln))
    return [(a, _trim(lines, a, b)) for a, b in runs]


def _trim(lines: Sequence[str], a: int, b: int) -> int:
    while b > a and not lines[b - 1].strip():
        b -= 1
    return b


def _left_out(
    docs: Sequence[Doc],
    nodes: Sequence[_Node],
    chosen: Mapping[tuple[int, int], str],
    too_big: set[tuple[int, int]],
    no_room: set[tuple[int, int]],
    quota: set[tuple[int, int]],
) -> tuple[list[LeftOut], int]:
    shown: dict[int, list[tuple[int, int]]] = {}
    for (d, s), mode in chosen.items():
        sec = docs[d].smap.sections[s]
        shown.setdefault(d, []).append((sec.start, sec.end if mode == "tree" else sec.body_end))
    out = []
    ranked = heapq.nlargest(
        MANIFEST_LEFT_OUT + 200,
        (n for n in nodes if n.base > 0 or n.prior),
        key=lambda n: (n.score, -n.doc, -n.sec),
    )
    total = sum(1 for n in nodes if n.base > 0 or n.prior)
    for n in ranked:
        sec = docs[n.doc].smap.sections[n.sec]
        if _covered(shown.get(n.doc, []), sec.start, sec.body_end):
            continue
        key = (n.doc, n.sec)
        reason = (
            "larger than max_section_bytes"
            if key in too_big
            else "no room left in max_excerpt_bytes"
            if key in no_room
            else "convention quota (enough sections of its kind)"
            if key in quota
            else "lower score"
        )
        heading = " › ".join(docs[n.doc].smap.heading_path(n.sec)) or "(preamble)"
        end = sec.end if sec.sha256 else sec.body_end  # a subtree with a withheld part: the own part
        sha = sec.sha256 or sha256_text(range_text(docs[n.doc].lines, sec.start, end))
        out.append(LeftOut(docs[n.doc].path, heading, sec.start, end, sha, n.score, reason))
    out.sort(key=lambda x: (-round(x.score, 9), x.path, x.start))
    return out, total - (len(ranked) - len(out))
