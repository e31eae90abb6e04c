"""The task's query: its words and their synonyms.

A document and its sections are scored against weighted terms: the task's own tokens (a little
more when one is repeated) and the synonyms software documentation uses for them ("remove" and
"delete", "config" and "settings"), weaker. (Pseudo-relevance feedback, the words rare in the
corpus that the best few documents use, lent to the query, was measured in the document-first
pipeline and costs recall: ``bench/README.md``.)
"""

from __future__ import annotations

import math
import re
from collections import Counter

from gitpilot.context.text import tokens

SYNONYM_WEIGHT = 0.35

# A task about documentation: its convention priors have a class more (how the docs are built).
DOCS_TASK = re.compile(r"\b(document(s|ed|ing|ation)?|undocumented|docs|readme|docstrings?)\b", re.I)

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
