"""Every weight of the capsule's score, in one place.

A document's score is the weighted sum of its signals (``features.DOC_SIGNALS``: words, headings,
path, names, links, code area, front-matter scope, and one prior a document kind); a section's is
the weighted sum of its own (``features.SECTION_SIGNALS``). ``choose`` takes documents in the
order of their score and, from a long one, sections in the order of theirs.

The values between the FIT markers are written by ``python -m bench fit`` (bench/fit.py), which
fits them by coordinate ascent on the development corpus and reports the leave-one-repository-out
figure: never edit them by hand for one repository. The constants below the table are the shape
of the choice, chosen with the fit and kept few.
"""

from __future__ import annotations

from collections.abc import Mapping

# FIT: begin (written by bench/fit.py)
DOC: dict[str, float] = {
    "bm25": 2.5,
    "heads": 1.5,
    "path": 1.5,
    "dir": 0.5,
    "ids": 1.5,
    "linked": 0.5,
    "area": 1.5,
    "scoped": 0,
    "applies": 0,
    "kind:nested": 1.5,
    "kind:agent_rule": 1,
    "kind:agent_skill": 0,
    "kind:automation": -2,
    "kind:asset": -2,
    "kind:changelog": -4.5,
    "kind:process": 1,
    "kind:contrib": 2,
    "kind:policy": 1.5,
    "kind:design": 0.5,
    "kind:example": -3,
    "kind:reference": -0.5,
    "kind:root": -4,
    "kind:project": 0.5,
    "kind:userdoc": -1,
    "kind:area": 0.5,
    "kind:archive": -2,
}
SECTION: dict[str, float] = {
    "s_bm25": 1,
    "s_head": 0,
    "s_ids": 1.5,
    "c_testing": -0.5,
    "c_commits": 0.5,
    "c_development": 0,
    "c_style": 0,
    "c_docs": 0,
}
# FIT: end

# FIT: shape begin (written by bench/fit.py)
WHOLE_DOC_BYTES = 8000  # a document at most this long comes whole ...
WHOLE_FOCUS = 0.3  # ... when at least this share of its text is in sections that match the task
MAX_DOCS = 8  # documents an excerpt comes from, at most
DOC_CUT = 0  # of the best document's score: a document below it gives nothing
SECTION_CUT = 0.5  # of a long document's best section: its other sections within this come too
SECTIONS_PER_DOC = 4  # sections of one long document, at most
DOC_BYTES = 24000  # bytes of one long document's sections, at most (its first section always fits)
TESTING_SLOTS = 1  # the project's testing conventions, shown whatever the task says
CHANGES_SLOTS = 1  # how a change is recorded (changelog entries, news fragments, changesets, PRs)
# FIT: shape end

# A long document whose chosen sections hold this share of its text comes whole (as sections that
# fit max_section_bytes), when the room allows: the gaps between them are the guide's other steps.
WHOLE_SHARE = 2 / 3

# What the budget keeps, after the best documents, for the best sections not yet taken of the
# RUNNER_DOCS best documents (a hedge for a document order that missed; at most a quarter of it),
# down to RUNNER_CUT of the best section's score (a weak match is not worth the reader's time).
RUNNER_BYTES = 3000
RUNNER_DOCS = 30
RUNNER_CUT = 0.3

# The documents the budget is offered to, at most, best first. Past the best few, a document is
# offered only what the best left, and on a large tree the loop went on through hundreds of them
# (vercel/ai: 378 documents, 118,000 lines measured, ~45 ms of a new task) for, at most, the first
# lines of a stub page (2 of the 60 capsules of both sets changed, recall the same).
LOOKED_AT = 60

# A document sections are taken from brings its introduction (its title's own text) when at most this long.
INTRO_BYTES = 1200

CONVENTION_KINDS = frozenset({"contrib", "agent_rule", "agent_skill", "process", "root", "policy"})
CONV_WRITE = 0.1  # a testing section on writing tests (the instruction files say how to run them), against one on running them
CONVENTION_TASK = 0.25  # of a convention section's own score for the task, beside its prior

# What a document says about the task; the other signals (its kind, a rule file's link, a
# front-matter scope) only order documents that say something about it.
CONTENT = ("bm25", "heads", "path", "ids", "area")


def convention_slots() -> dict[str, int]:
    return {"testing": int(TESTING_SLOTS), "commits": int(CHANGES_SLOTS)}


def doc_score(values: Mapping[str, float], table: Mapping[str, float] = DOC) -> float:
    if not any(values.get(k, 0.0) > 0 for k in CONTENT):
        return 0.0
    return sum(w * values.get(k, 0.0) for k, w in table.items() if w)


def section_score(values: Mapping[str, float], table: Mapping[str, float] = SECTION) -> float:
    return sum(w * values.get(k, 0.0) for k, w in table.items() if w)
