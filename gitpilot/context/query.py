"""The task's query: its words, their synonyms, and the words its best sections lend it.

A section is scored against weighted terms: the task's own tokens (a little more when one is
repeated), the synonyms software documentation uses for them ("remove" and "delete", "config"
and "settings"), weaker, and, after a first scoring, pseudo-relevance feedback: the words rare in
the corpus that the best few sections use, weaker still, since a task often describes in its own
words what the documentation names differently.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Mapping, Sequence

from gitpilot.context.text import hits_for, term_counts, tokens, word_tokens

SYNONYM_WEIGHT = 0.35
FEEDBACK_SECTIONS = 3  # pseudo-relevance feedback: how many top sections lend words
FEEDBACK_TERMS = 8
FEEDBACK_WEIGHT = 0.3
FEEDBACK_MAX_DF = 0.05  # a lent word must be rarer than this share of sections

# Words that mean much the same in software documentation; a task often says one, the docs another.
_SYNONYM_GROUPS = (
    "config configuration configure settings setting options option preferences",
    "remove delete drop erase purge",
    "error failure fail exception crash panic",
    "auth authentication login signin sign-in credential token",
    "doc docs documentation guide manual",
    "speed performance fast slow latency",
    "test tests testing spec specs check checks",
    "install installation setup set-up",
    "run execute invoke launch start",
    "build compile bundle",
    "commit commits changeset",
    "pr pull-request merge-request",
    "dependency dependencies package packages library libraries",
    "env environment variable variables",
    "dir directory folder",
    "repo repository",
    "cli command commands flag flags argument arguments",
    "bug defect regression issue",
    "upgrade update migrate migration",
    "lint linter linting format formatting style",
    "log logs logging",
    "cache caching cached",
    "user users account accounts",
    "permission permissions access role roles",
    "api endpoint endpoints route routes",
    "db database",
    "deploy deployment release publish",
)


def _synonyms() -> dict[str, list[str]]:
    table: dict[str, list[str]] = {}
    for group in _SYNONYM_GROUPS:
        stems = sorted({t for w in group.split() for t in tokens(w.replace("-", " "))})
        for s in stems:
            table.setdefault(s, [])
            table[s].extend(x for x in stems if x != s and x not in table[s])
    return table


def query_weights(task: str) -> dict[str, float]:
    """Task tokens (weight 1, a little more when repeated) and their synonyms (weaker)."""
    counts = Counter(tokens(task))
    weights = {t: 1.0 + 0.25 * math.log(c) for t, c in counts.items()}
    syn = _synonyms()
    for t in sorted(counts):
        for s in syn.get(t, ()):
            weights.setdefault(s, SYNONYM_WEIGHT)
    return weights


def feedback_terms(
    scores: Sequence[float],
    counted: Sequence[tuple[Counter[str], list[str]]],
    weights: Mapping[str, float],
    idf: Mapping[str, float],
) -> dict[str, float]:
    """Pseudo-relevance feedback: distinctive words of the best few sections, as weak extra terms.

    ``scores`` are the sections' own scores and ``counted`` their word counts and heading and
    path tokens, in the same order.

    A task often describes in its own words what the documentation names differently; the
    sections that match it best tend to use the documentation's words, which then find the rest
    (the reference page beside the guide). Only words rare in the corpus are taken, weakly.
    """
    top = heapq.nlargest(FEEDBACK_SECTIONS, range(len(scores)), key=lambda i: (scores[i], -i))
    top = [i for i in top if scores[i] > 0]
    if not top:
        return {}
    tf: Counter[str] = Counter()
    for i in top:
        wc, extra = counted[i]
        for word, n in wc.items():
            for t in word_tokens(word):
                tf[t] += n
        tf.update(extra)
    known = {t for t in weights}
    cands = [t for t in tf if t not in known and len(t) > 2 and not t.isdigit()]
    if not cands:
        return {}
    df = _doc_freq(counted, set(cands))
    total = len(counted)
    scored = []
    for t in cands:
        d = df.get(t, 0)
        if d == 0 or d > max(total * FEEDBACK_MAX_DF, 3) or tf[t] < 2:
            continue
        scored.append((tf[t] * math.log(1 + (total - d + 0.5) / (d + 0.5)), t))
    scored.sort(key=lambda x: (-x[0], x[1]))
    chosen = scored[:FEEDBACK_TERMS]
    if not chosen:
        return {}
    top_score = chosen[0][0]
    return {t: FEEDBACK_WEIGHT * sc / top_score for sc, t in chosen}


def _doc_freq(counted: Sequence[tuple[Counter[str], list[str]]], terms: set[str]) -> Counter[str]:
    vocab: set[str] = set()
    for wc, _ in counted:
        vocab.update(wc)
    hits = hits_for(vocab, terms)
    df: Counter[str] = Counter()
    for wc, extra in counted:
        found = set(term_counts(wc, hits, terms)) | (set(extra) & terms)
        df.update(found)
    return df
