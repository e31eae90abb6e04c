"""The fit judges a weight table by what a capsule would quote with it: ``bench/fit.py`` keeps the
signals once and re-chooses, so its choice must be the capsule's own for the table in force, and
another table's must be that table's capsule."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import make_repo

FILLER = "".join(f"## Topic {n}\n\n" + "Unrelated prose about colours and shapes. " * 40 + "\n\n" for n in range(6))
FILES = {
    "AGENTS.md": "# Agents\n\nRead CONTRIBUTING.md.\n",
    "CONTRIBUTING.md": "# Contributing\n\n## Tests\n\nWrite a test for each change.\n\n"
    "## Changesets\n\nAdd a changeset.\n",
    # a long guide: its sections are chosen one by one, the one that names `max_retries` first
    "docs/retries.md": "# Client guide\n\n## Backoff\n\nThe client retries a request with backoff, and stops at "
    "the limit. " + "It waits a little longer each time. " * 12 + "\n\n## Settings\n\nSet `max_retries`.\n\n" + FILLER,
    # a change log whose entries hold the task's words best: never quoted, it sets no scale
    "CHANGELOG.md": "# Changelog\n\n## 2.0\n\n" + "- retries request backoff limit retry stop\n" * 60
    + "\n## 1.0\n\n- Client.\n",
    "src/client.py": "def request(max_retries=5):\n    pass\n",
}
TASK = "Requests should stop retrying at the limit (`max_retries`), with backoff between retries"


def _picks(sel) -> list[tuple[str, int, int]]:  # type: ignore[no-untyped-def]
    return [(p.path, p.start, p.end) for p in sel.picks]


def test_the_fit_chooses_what_the_capsule_chooses_for_each_table(tmp_path: Path) -> None:
    from bench import fit
    from gitpilot.context import capsule, warm
    from gitpilot.context import weights as W
    from gitpilot.context.select import Ranking
    from gitpilot.repo import Repo

    root = make_repo(tmp_path / "repo", FILES)
    repo = {"name": "example/retries"}
    case = {"id": "retries-limit", "task": TASK,
            "required": [{"path": "docs/retries.md", "heading": "Backoff", "level": 2}]}
    got = fit.prepare_case(root, repo, case)
    r = Repo.discover(root)
    task = TASK + "\n"
    state = warm.prepare(r, task)
    prep = capsule.prepare(r, task, state)
    budget, most = state.options.max_excerpt_bytes, state.options.max_section_bytes

    def fitted(doc_w: dict[str, float], sec_w: dict[str, float]) -> list[tuple[str, int, int]]:
        return _picks(fit.choice(got, doc_w, sec_w)[1])

    def capsule_picks() -> list[tuple[str, int, int]]:
        ranking = Ranking(prep.docs, task, prep.shown, area=prep.area.scores, area_files=prep.area.core)
        return _picks(ranking.choose(budget, most))

    want = capsule_picks()
    assert want and fitted(W.DOC, W.SECTION) == want
    assert fit.judge(got, W.DOC, W.SECTION)[0] == 1  # the Backoff section is quoted
    # another table: the change log quotable, its sections then set the scale
    other_doc = {**W.DOC, "kind:changelog": 3.0}
    other_sec = {**W.SECTION, "s_ids": 0.0, "c_testing": 2.0}
    saved = dict(W.DOC), dict(W.SECTION)
    try:
        W.DOC.update(other_doc)
        W.SECTION.update(other_sec)
        other = capsule_picks()
    finally:
        W.DOC.clear(), W.DOC.update(saved[0])
        W.SECTION.clear(), W.SECTION.update(saved[1])
    assert any(p[0] == "CHANGELOG.md" for p in other) and other != want
    assert fitted(other_doc, other_sec) == other


def test_the_fits_restarts_are_the_same_for_the_same_cases_and_never_lose_what_the_climb_had(
    tmp_path: Path,
) -> None:
    from bench import fit
    from gitpilot.context import weights as W

    root = make_repo(tmp_path / "repo", FILES)
    case = {"id": "retries-limit", "task": TASK,
            "required": [{"path": "docs/retries.md", "heading": "Backoff", "level": 2}]}
    got = fit.prepare_case(root, {"name": "example/retries"}, case)
    # a table that quotes the change log and not the guide: the climb has to find its way back
    doc0 = {**W.DOC, "kind:changelog": 3.0, "bm25": 0.0, "heads": 0.0}
    sec0 = {**W.SECTION, "s_ids": 0.0}
    shape = fit._shape()
    try:
        climbed = fit.ascent([got], dict(doc0), dict(sec0), 2, shape)
        fit._set_shape(climbed[2])
        floor = fit.evaluate([got], climbed[0], climbed[1])[0]
        first = fit.search([got], dict(doc0), dict(sec0), 2, shape, kicks=3)
        again = fit.search([got], dict(doc0), dict(sec0), 2, shape, kicks=3)
        fit._set_shape(first[2])
        kicked = fit.evaluate([got], first[0], first[1])
    finally:
        fit._set_shape(shape)
    assert first == again  # a fixed seed: the same cases give the same table
    assert kicked[0] >= floor
    assert kicked[1] == 1  # the Backoff section is quoted with the table it ends on


def test_the_fit_puts_a_document_the_task_names_first_as_the_capsule_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task that names a document's path has it first, above the best of the others: with a
    document cut (``weights.DOC_CUT``) that lifts the bar for the others too, and the fit must
    judge a table by that choice, not by the documents' own scores."""
    from bench import fit
    from gitpilot.context import capsule, warm
    from gitpilot.context import weights as W
    from gitpilot.context.select import Ranking
    from gitpilot.repo import Repo

    monkeypatch.setattr(W, "DOC_CUT", 0.6)
    files = {**FILES, "docs/faq.md": "# FAQ\n\n## Colours\n\nThe client prints in colour.\n"}
    task = "Add a question on retries with backoff to `docs/faq.md`: requests stop retrying at the limit"
    root = make_repo(tmp_path / "repo", files)
    case = {"id": "faq-retries", "task": task,
            "required": [{"path": "docs/retries.md", "heading": "Backoff", "level": 2}]}
    got = fit.prepare_case(root, {"name": "example/retries"}, case)
    assert [got.docs[d].path for d in got.named] == ["docs/faq.md"]
    r = Repo.discover(root)
    state = warm.prepare(r, task + "\n")
    prep = capsule.prepare(r, task + "\n", state)
    ranking = Ranking(prep.docs, task + "\n", prep.shown, area=prep.area.scores, area_files=prep.area.core)
    want = _picks(ranking.choose(state.options.max_excerpt_bytes, state.options.max_section_bytes))
    assert want[0][0] == "docs/faq.md"
    assert not any(p[0] == "docs/retries.md" for p in want)  # below the cut of the named page's score
    assert _picks(fit.choice(got, W.DOC, W.SECTION)[1]) == want
    assert fit.judge(got, W.DOC, W.SECTION)[0] == 0
