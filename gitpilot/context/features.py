"""The signals of every candidate document and section for one task, each a number in [0, 1].

Document signals (what a document is about, as a whole):
- ``bm25``: BM25 of the task's words (and their synonyms, ``query``) over the whole document;
- ``heads``: the same over its title, headings and front-matter description, which say what it
  is for;
- ``path``: the same over the words of its path (``discovery/README.md``: "discovery");
- ``ids``: the share of the identifiers the task names (``RESTClient``, ``--save-peer``) that
  occur in it verbatim;
- ``linked``: an instruction or rule file links to it (what the maintainers point contributors to);
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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gitpilot.context.doctypes import KINDS
from gitpilot.context.frontmatter import NONE, FrontMatter
from gitpilot.context.markdown import SectionMap
from gitpilot.context.terms import DocTerms
from gitpilot.context.text import Identifier, tokens

K1 = 1.2
B = 0.75
PATH_B = 0.3  # path words: a long path is not less about each of its words
NORM_FLOOR = 0.15  # of a match of every query term: scores are divided by at least this
DOC_SIGNALS = ("bm25", "heads", "path", "ids", "linked", "area", "scoped", "applies") + tuple(
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


@dataclass
class DocSignals:
    values: dict[str, float]
    sections: list[dict[str, float]] = field(default_factory=list)


def path_words(path: str) -> list[str]:
    stem = path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path
    parts = [p for p in re.split(r"[/]", stem) if p.lower() not in GENERIC_DIRS]
    return tokens(" ".join(p.replace("-", " ").replace("_", " ").replace(".", " ") for p in parts))


class _Bm25:
    """BM25 of one query over a set of term-count documents (only the query's terms are looked at)."""

    def __init__(self, weights: Mapping[str, float], bags: Sequence[Mapping[str, int]], lengths: Sequence[int],
                 b: float = B) -> None:
        self.weights = weights
        n = len(bags)
        df = dict.fromkeys(weights, 0)
        for bag in bags:
            for t in weights:
                if t in bag:
                    df[t] += 1
        self.idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
        self.avg = (sum(lengths) / n) if n else 1.0
        self.avg = self.avg or 1.0
        self.b = b

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


def signals(
    docs: Sequence[Doc],
    weights: Mapping[str, float],
    ids: Sequence[Identifier],
    conventions: Mapping[int, Sequence[tuple[str, float]]],
    area: Mapping[str, float],
    area_files: Sequence[str],
) -> list[DocSignals]:
    """Every document's and section's signals for the query ``weights`` (term -> weight)."""
    from gitpilot.context.sources import matches

    terms = [d.terms for d in docs]
    wset = set(weights)
    heading_bags: list[dict[str, int]] = []
    heading_lens: list[int] = []
    body_bags: list[dict[str, int]] = []
    body_lens: list[int] = []
    sec_bags: list[dict[str, int]] = []
    sec_lens: list[int] = []
    head_bags: list[dict[str, int]] = []  # each section's heading path, the query's terms only
    head_lens: list[int] = []
    for doc, dt in zip(docs, terms, strict=True):
        assert dt is not None
        heads: dict[str, int] = {}
        for toks in dt.headings:
            for t in toks:
                heads[t] = heads.get(t, 0) + 1
        for t in tokens(doc.front.text):
            heads[t] = heads.get(t, 0) + 2  # the author's own statement of what the file is for
        heading_lens.append(sum(heads.values()))
        heads = {t: n for t, n in heads.items() if t in wset}
        heading_bags.append(heads)
        body: dict[str, int] = dict(heads)
        paths: list[dict[str, int]] = []
        plens: list[int] = []
        for pos, counts in enumerate(dt.sections):
            hit = sorted(counts.keys() & wset)  # sorted: a set's order changes with PYTHONHASHSEED
            for t in hit:
                body[t] = body.get(t, 0) + counts[t]
            parent = doc.smap.sections[pos].parent
            own = dt.headings[pos]
            path_heads = dict(paths[parent]) if parent is not None else {}
            for t in own:
                if t in wset:
                    path_heads[t] = path_heads.get(t, 0) + 1
            plen = (plens[parent] if parent is not None else 0) + len(own)
            paths.append(path_heads)
            plens.append(plen)
            bag = {t: counts[t] for t in hit}
            for t, n in path_heads.items():
                bag[t] = bag.get(t, 0) + n
            sec_bags.append(bag)
            sec_lens.append(dt.lengths[pos] + plen)
        head_bags.extend(paths)
        head_lens.extend(plens)
        body_bags.append(body)
        body_lens.append(sum(dt.lengths) + heading_lens[-1])
    path_bags = [_counts(path_words(d.path)) for d in docs]
    m_body = _Bm25(weights, body_bags, body_lens)
    m_head = _Bm25(weights, heading_bags, heading_lens)
    m_path = _Bm25(weights, path_bags, [sum(p.values()) for p in path_bags], b=PATH_B)
    m_sec = _Bm25(weights, sec_bags, sec_lens)
    m_shead = _Bm25(weights, head_bags, head_lens)
    rx = [i.regex() for i in ids]
    out: list[DocSignals] = []
    k = 0
    for d, doc in enumerate(docs):
        found_lines = _id_lines(doc, ids, rx) if ids else []
        values = {
            "bm25": m_body.score(body_bags[d], body_lens[d]),
            "heads": m_head.score(heading_bags[d], heading_lens[d]),
            "path": 0.0 if doc.nested else m_path.score(path_bags[d], sum(path_bags[d].values())),
            "ids": sum(1 for f in found_lines if f) / len(ids) if ids else 0.0,
            "linked": 1.0 if doc.linked else 0.0,
            "area": _area_of(doc.path, area),
            "scoped": 1.0 if doc.front.scoped else 0.0,
            "applies": 1.0 if doc.front.scoped and any(matches(f, doc.front.scopes) for f in area_files) else 0.0,
        }
        for kind in KINDS:
            values[f"kind:{kind}"] = 1.0 if doc.kind == kind else 0.0
        secs: list[dict[str, float]] = []
        conv = conventions.get(d, ())
        for pos, sec in enumerate(doc.smap.sections):
            bag, length = sec_bags[k], sec_lens[k]
            row = {
                "s_bm25": m_sec.score(bag, length) if bag else 0.0,
                "s_head": m_shead.score(head_bags[k], head_lens[k]) if head_bags[k] else 0.0,
                "s_ids": (sum(1 for f in found_lines if any(sec.start <= n <= sec.body_end for n in f)) / len(ids))
                if ids else 0.0,
            }
            k += 1
            name, prior = conv[pos] if pos < len(conv) else ("", 0.0)
            for c in CONVENTIONS:
                row[f"c_{c}"] = prior if name == c else 0.0
            secs.append(row)
        out.append(DocSignals(values, secs))
    rows = [o.values for o in out]
    for key, model in (("bm25", m_body), ("heads", m_head), ("path", m_path)):
        _normalize(rows, key, NORM_FLOOR * model.mass())
    srows = [s for o in out for s in o.sections]
    for key, model in (("s_bm25", m_sec), ("s_head", m_shead)):
        _normalize(srows, key, NORM_FLOOR * model.mass())
    return out


def _counts(toks: Sequence[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for t in toks:
        out[t] = out.get(t, 0) + 1
    return out


def _id_lines(doc: Doc, ids: Sequence[Identifier], rx: Sequence[re.Pattern[str]]) -> list[list[int]]:
    """For each identifier, the (1-based) lines of ``doc`` it occurs on ([] when it does not)."""
    text = "".join(doc.lines)
    low = text.lower()
    out: list[list[int]] = []
    starts: list[int] | None = None
    for i, pattern in zip(ids, rx, strict=True):
        if i.text.lower() not in low:
            out.append([])
            continue
        hits = [m.start() for m in pattern.finditer(text)]
        if hits and starts is None:
            starts = [0]
            for line in doc.lines:
                starts.append(starts[-1] + len(line))
        out.append(sorted({bisect_right(starts, h) for h in hits}) if hits and starts is not None else [])
    return out


def _area_of(path: str, area: Mapping[str, float]) -> float:
    """The area score of the nearest directory above ``path`` that has one (0 at the root)."""
    cur = path.rsplit("/", 1)[0] if "/" in path else ""
    while cur:
        got = area.get(cur)
        if got is not None:
            return got
        cur = cur.rsplit("/", 1)[0] if "/" in cur else ""
    return 0.0
