"""Scoring and choosing sections: the signals real tasks need, the budget, the cut at boundaries."""

from __future__ import annotations

import pytest

from gitpilot.context.markdown import parse, split_lines
from gitpilot.context.select import Doc, Ranking, select
from gitpilot.context.text import identifiers, stem, tokens


def _docs(files: dict[str, str], rules: tuple[str, ...] = ()) -> list[Doc]:
    return [Doc(p, parse(t), split_lines(t), rule=p in rules) for p, t in files.items()]


def _picked_text(docs: list[Doc], sel: object) -> str:
    lines = {d.path: d.lines for d in docs}
    return "".join("".join(lines[p.path][p.start - 1 : p.end]) for p in sel.picks)  # type: ignore[attr-defined]


def _paths(sel: object) -> list[tuple[str, str]]:
    return [(p.path, p.heading) for p in sel.picks]  # type: ignore[attr-defined]


def _section_scores(ranking: Ranking, path: str) -> dict[str, float]:
    d = [doc.path for doc in ranking.docs].index(path)
    return {s.title: ranking.sec_scores[d][s.pos] for s in ranking.docs[d].smap.sections}


PADDING = "".join(f"## Appendix {i}\n\n" + "Colours and fonts of the dashboard are listed here. " * 12 + "\n\n"
                  for i in range(20))  # makes a file too long to be shown whole


def test_tokens_split_identifiers_and_stem_lightly() -> None:
    assert tokens("Running the testSuite") == ["run", "test", "suit", "testsuite"]
    assert stem("configuration") == stem("configure") == "configur"
    assert tokens("parse_json") == ["pars", "json", "parse_json"]


def test_identifiers_the_task_names() -> None:
    task = (
        "Fix `build_capsule()` in src/app/capsule.py for the --print flag; CapsuleResult "
        "and load_config break in Phase 5 (see D12 and #123)."
    )
    found = {(i.kind, i.text) for i in identifiers(task)}
    for want in [
        ("call", "build_capsule"),
        ("path", "src/app/capsule.py"),
        ("path", "capsule.py"),
        ("flag", "--print"),
        ("camel", "CapsuleResult"),
        ("snake", "load_config"),
        ("ref", "Phase 5"),
        ("ref", "D12"),
        ("ref", "#123"),
    ]:
        assert want in found, want


def test_a_numbered_reference_matches_only_its_number() -> None:
    docs = _docs(
        {
            "docs/plan.md": "# Plan\n\n## Phase 5\n\nShip the importer.\n\n## Phase 50\n\nLater work.\n",
            "docs/other.md": "# Other\n\nUnrelated words about shipping.\n",
        }
    )
    ranking = Ranking(docs, "Finish Phase 5", {})
    assert ranking.docs[max(range(2), key=lambda d: ranking.doc_scores[d])].path == "docs/plan.md"
    d = [x.path for x in ranking.docs].index("docs/plan.md")
    by_title = {s.title: ranking.signals[d].sections[s.pos]["s_ids"] for s in docs[0].smap.sections}
    assert by_title["Phase 5"] > 0 and by_title["Phase 50"] == 0


def test_testing_and_commit_conventions_are_chosen_though_the_task_never_names_them() -> None:
    docs = _docs(
        {
            "CONTRIBUTING.md": (
                "# Contributing\n\n## Running the test suite\n\nRun `make check` before pushing.\n\n"
                "## Commit messages\n\nUse the imperative mood.\n\n## Release process\n\nMaintainers only.\n"
            ),
            "docs/billing.md": "# Billing\n\n## Invoices\n\nInvoices are rounded to cents.\n",
            "docs/guide.md": "# Guide\n\n## Testing your deployment\n\nOpen the dashboard.\n",
        },
        rules=("CONTRIBUTING.md",),
    )
    sel = select(docs, "Invoices should round half up instead of truncating")
    chosen = _paths(sel)
    assert chosen[0][0] == "docs/billing.md"
    text = " ".join(h for _, h in chosen)
    assert "Running the test suite" in text and "Commit messages" in text
    assert "Release process" not in text
    assert "Testing your deployment" not in text  # a product page's heading is not a convention


def test_a_parent_whose_substance_is_in_its_subsections_is_taken_whole() -> None:
    docs = _docs(
        {
            "docs/cache.md": (
                "# Cache\n\nOverview.\n\n## Eviction\n\nThe cache evicts the least recently used "
                "entry when full.\n\n### Eviction timing\n\nEviction runs every minute; the cache "
                "never blocks readers.\n\n## Unrelated\n\nColours of the logo.\n\n" + PADDING
            ),
            "docs/other.md": "# Other\n\nNothing here.\n",
        }
    )
    sel = select(docs, "cache eviction blocks readers")
    pick = next(p for p in sel.picks if p.heading.startswith("Cache › Eviction"))
    assert pick.end - pick.start >= 6  # Eviction with its subsection, one excerpt
    assert "Colours of the logo" not in _picked_text(docs, sel)


def test_the_budget_and_the_section_limit_hold_and_cuts_fall_on_boundaries() -> None:
    big = "# Jitter\n\n" + ("retry backoff jitter " * 300) + "\n"
    files = {f"docs/p{i}.md": f"# Retry backoff {i}\n\nretry backoff jitter {'word ' * 250}\n" for i in range(12)}
    files.update({f"docs/q{i}.md": f"# Unrelated {i}\n\nnothing {'word ' * 300}\n" for i in range(12)})
    files["docs/huge.md"] = big
    docs = _docs(files)
    sel = select(docs, "retry backoff jitter", max_excerpt_bytes=5000, max_section_bytes=4000)
    sizes = [len("".join(split_lines(files[p.path])[p.start - 1 : p.end]).encode()) for p in sel.picks]
    assert 0 < sum(sizes) <= 5000
    assert max(sizes) <= 4000  # no excerpt, not even a whole file, above max_section_bytes
    assert all(p.start == 1 for p in sel.picks)  # whole sections only
    assert any(x.path == "docs/huge.md" and "max_section_bytes" in x.reason for x in sel.left_out)
    assert any("max_excerpt_bytes" in x.reason for x in sel.left_out)


def test_changelog_security_headings_do_not_crowd_out_the_docs() -> None:
    log = "# Changelog\n\n" + "".join(
        f"## 1.{i}.0\n\n### Security\n\nFixed token refresh.\n\n" for i in range(40)
    )
    docs = _docs(
        {
            "CHANGELOG.md": log,
            "docs/auth.md": "# Authentication\n\n## Token refresh\n\nTokens refresh every hour.\n",
        }
    )
    sel = select(docs, "token refresh happens too often")
    assert sel.picks[0].path == "docs/auth.md"


def test_a_file_the_task_names_is_preferred() -> None:
    docs = _docs(
        {
            "docs/api/limits.md": "# Limits\n\nRequests per minute.\n",
            "docs/faq.md": "# FAQ\n\nRequests per minute are limited, see limits.\n",
        }
    )
    sel = select(docs, "Update docs/api/limits.md with the new numbers")
    assert sel.picks[0].path == "docs/api/limits.md"
    assert any("path" in s for s in sel.picks[0].signals)


def test_excluded_lines_are_not_repeated() -> None:
    docs = _docs({"docs/a.md": "# A\n\nalpha beta\n\n## B\n\nalpha gamma\n"})
    sel = select(docs, "alpha", excluded={"docs/a.md": [(5, 7)]})
    for p in sel.picks:
        assert p.end < 5


def test_one_outlier_does_not_crowd_out_the_rest() -> None:
    files = {
        "docs/adr/0037-ordering.md": "# 0037: Event ordering\n\nADR 0037 ADR 0037 decides ordering of events.\n",
        "docs/guides/retries.md": "# Delivery and retries\n\nRetried events may arrive out of order.\n",
        "docs/a.md": "# A\n\nNothing.\n",
        "docs/b.md": "# B\n\nStill nothing.\n",
        "docs/c.md": "# C\n\nEvents are listed in the dashboard.\n",
    }
    sel = select(_docs(files), "Ordered retries for events, a follow-up to ADR 0037")
    paths = [p.path for p in sel.picks]
    assert paths[0] == "docs/adr/0037-ordering.md" and "docs/guides/retries.md" in paths


def test_when_few_files_match_the_cut_still_holds() -> None:
    files = {
        "docs/admin/flags.md": "# Export button feature flag\n\nAn admin turns the export feature flag on.\n",
        "docs/misc.md": "# Misc\n\n" + "Colours, fonts and spacing of the dashboard. " * 60 + "A button.\n",
    }
    files.update({f"docs/filler{i}.md": f"# Filler {i}\n\nNothing relevant here.\n" for i in range(8)})
    sel = select(_docs(files), "Put the export button behind a feature flag")
    assert [p.path for p in sel.picks] == ["docs/admin/flags.md"]


def test_developer_documents_are_known_by_directory_skill_files_and_pull_request_names() -> None:
    from gitpilot.context.doctypes import kind_of

    assert kind_of("contribute/create-pull-request.md") == "contrib"
    assert kind_of(".claude/skills/commit-helper/SKILL.md") == "agent_skill"
    assert kind_of("docs/tutorial/testing-dependencies.md") == "userdoc"  # a user guide about testing an app
    docs = _docs(
        {
            ".claude/skills/commit-helper/SKILL.md": (
                "# Commit helper\n\n## Commit message structure\n\nSubject under 72 characters, then a blank line.\n"
            ),
            "docs/tutorial/testing-dependencies.md": (
                "# Testing dependencies\n\n## Testing\n\nOverride a dependency in your app's tests.\n"
            ),
            "docs/billing.md": "# Billing\n\n## Invoices\n\nInvoices are rounded to cents.\n",
        }
    )
    sel = select(docs, "Invoices should round half up instead of truncating")
    chosen = {p for p, _ in _paths(sel)}
    assert ".claude/skills/commit-helper/SKILL.md" in chosen  # how a change is recorded, unasked
    assert "docs/tutorial/testing-dependencies.md" not in chosen


def test_a_heading_alone_is_never_an_excerpt() -> None:
    body = "".join(f"Step {i}: open the report page and read it carefully.\n" for i in range(40))
    docs = _docs(
        {
            "CONTRIBUTING.md": f"# Contributing\n\n## Testing\n\n### Fixtures\n\n{body}\n### Reports\n\n{body}",
            "docs/billing.md": "# Billing\n\n## Invoices\n\nInvoices are rounded to cents.\n",
        },
        rules=("CONTRIBUTING.md",),
    )
    sel = select(docs, "Invoices should round half up instead of truncating", max_section_bytes=2500)
    lines = {p: t.splitlines() for p, t in [(d.path, "".join(d.lines)) for d in docs]}
    for p in sel.picks:
        text = [ln for ln in lines[p.path][p.start - 1 : p.end] if ln.strip()]
        assert any(not ln.startswith("#") for ln in text), (p.path, p.start, p.end)


def test_a_subsection_of_a_convention_section_is_a_convention_too() -> None:
    docs = _docs(
        {
            "CONTRIBUTING.md": (
                "# Contributing\n\n## Testing\n\n### Rules for Acme\n\n"
                "Every fix needs a regression case that fails without the fix.\n"
            ),
            "docs/billing.md": "# Billing\n\n## Invoices\n\nInvoices are rounded to cents.\n",
        },
        rules=("CONTRIBUTING.md",),
    )
    sel = select(docs, "Invoices should round half up instead of truncating")
    assert "Every fix needs a regression case" in _picked_text(docs, sel)


def test_a_developer_section_whose_body_states_test_rules_is_a_testing_convention() -> None:
    docs = _docs(
        {
            "CONTRIBUTING.md": (
                "# Contributing\n\n## Writing high-impact changes\n\n1. **Add or update tests.** A fix comes with "
                "a case that fails before it.\n2. Keep each change small; the tests pass at every step.\n\n"
                "## Community\n\nBe kind in reviews.\n"
            ),
            "docs/guide/quality.md": (
                "# Quality\n\n## Our promise\n\nWe add or update tests for every release, and the tests pass "
                "on every platform we ship.\n"
            ),
            "docs/billing.md": "# Billing\n\n## Invoices\n\nInvoices are rounded to cents.\n",
        },
        rules=("CONTRIBUTING.md",),
    )
    sel = select(docs, "Invoices should round half up instead of truncating")
    text = _picked_text(docs, sel)
    assert "**Add or update tests.**" in text
    assert "Be kind in reviews." not in text
    assert "We add or update tests for every release" not in text  # a user page, not a convention


def test_a_nested_rule_files_sections_are_never_conventions_for_another_task() -> None:
    docs = [
        Doc(p, parse(t), split_lines(t), rule=p.endswith("AGENTS.md"), nested=p.startswith("packages/"))
        for p, t in {
            "packages/charts/AGENTS.md": (
                "# Charts\n\n## Feature flags\n\nChart flags are read with `useFlag()`.\n\n"
                "## Testing\n\nRun `pnpm --dir packages/charts test` for chart changes.\n"
            ),
            "docs/admin/flags.md": "# Feature flags\n\nAn admin turns a feature flag on for a workspace.\n",
            "docs/billing.md": "# Billing\n\n## Invoices\n\nInvoices are rounded to cents.\n",
        }.items()
    ]
    sel = select(docs, "Put the export button behind a feature flag")
    assert "docs/admin/flags.md" in {p.path for p in sel.picks}
    other = select(docs, "Invoices should round half up instead of truncating")
    assert "pnpm --dir packages/charts test" not in _picked_text(docs, other)


def test_a_guide_under_a_dev_directory_is_a_developer_document_but_a_user_guide_is_not() -> None:
    ci = "## CI\n\nCI runs `cargo test`; set `RUN_SLOW_TESTS=1` locally too, and make sure the tests pass.\n"
    user = "## Before you publish\n\nRun your site's checks with `npm test`; make sure the tests pass.\n"
    docs = _docs(
        {
            "docs/dev/README.md": "# Contributor quick start\n\n" + ci,
            "docs/user-guide/development.md": "# Developing your site\n\n" + user,
            "docs/dev/usage.md": "# Using the dev server\n\n" + user.replace("npm test", "yarn test"),
            "docs/billing.md": "# Billing\n\n## Invoices\n\nInvoices are rounded to cents.\n",
        }
    )
    text = _picked_text(docs, select(docs, "Invoices should round half up instead of truncating"))
    assert "RUN_SLOW_TESTS=1" in text  # how to run the tests, from the developer guide
    assert "npm test" not in text and "yarn test" not in text  # end-user pages about their own sites


def test_a_spelled_out_form_matches_its_abbreviation_either_way() -> None:
    assert "e2e" in tokens("Write an end-to-end test") and "e2e" in tokens("E2E tests")
    assert "k8s" in tokens("Deploying on Kubernetes") and "ci" in tokens("Continuous integration runs")
    docs = _docs(
        {
            "docs/testing.md": (
                "# Testing\n\n## E2E tests\n\nBrowser flows live in `e2e/` and run with Playwright.\n\n"
                "## Unit tests\n\nRun `make unit` for the fast suite.\n"
            ),
            "docs/deploy.md": "# Deploy\n\n## Kubernetes\n\nThe chart sets two replicas.\n\n## VMs\n\nUse systemd.\n",
            **{f"docs/page{i}.md": f"# Page {i}\n\nWrite the test plan for page {i}.\n" for i in range(8)},
        }
    )
    ranking = Ranking(docs, "Write an end-to-end test for the login flow", {})
    scores = _section_scores(ranking, "docs/testing.md")
    assert scores["E2E tests"] > scores["Unit tests"]
    ranking = Ranking(docs, "How many replicas does the k8s chart run?", {})
    scores = _section_scores(ranking, "docs/deploy.md")
    assert scores["Kubernetes"] > scores["VMs"]
    assert "docs/deploy.md" == ranking.docs[max(range(len(docs)), key=lambda d: ranking.doc_scores[d])].path


def test_placeholder_names_of_examples_are_not_identifiers() -> None:
    names = {i.text for i in identifiers("A call like `foo()` or `bar` crashes `parse_config()` in spam.py")}
    assert "parse_config" in names and "spam.py" in names
    assert not names & {"foo", "bar"}


def test_a_file_the_task_names_comes_first_whatever_its_kind() -> None:
    # a changelog is the last kind of document a task needs, unless the task names it
    docs = _docs(
        {
            "CHANGELOG.md": "# Changelog\n\n## Unreleased\n\n- Nothing yet.\n",
            "docs/release.md": "# Releasing\n\nAdd a line to the changelog under Unreleased for every fix.\n",
        }
    )
    sel = select(docs, "Add the retry fix to CHANGELOG.md under Unreleased")
    assert sel.picks[0].path == "CHANGELOG.md"
    assert "path named in the task" in sel.picks[0].signals
    # a longer path that starts or ends with the name is not the file
    for task in ("Add the retry fix to packages/cli/CHANGELOG.md", "Restore CHANGELOG.md.bak, then release."):
        assert all("path named in the task" not in p.signals for p in select(docs, task).picks)
    assert "path named in the task" in select(docs, "Edit CHANGELOG.md.").picks[0].signals


def test_the_best_passage_of_a_runner_up_document_comes_after_the_best_documents(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A long document mostly about something else holds the one passage the task needs: its
    document scores below eight short pages on the task's broad words, so the documents' order
    alone leaves it out; the budget's runner-up share brings its best section, and no weak match."""
    from gitpilot.context import weights

    files = {
        f"ops/upload{i}.md": f"# Failed uploads {i}\n\nA failed upload is retried by the queue {i}.\n"
        + "The queue keeps its order. " * 15 + "\n"
        for i in range(9)
    }
    files.update({f"docs/other{i}.md": f"# Other {i}\n\nNothing of the kind.\n" for i in range(20)})
    files["ops/operations.md"] = (
        "# Operations\n\n" + PADDING + "## Retries\n\nA failed upload is retried with exponential backoff and jitter, "
        "five times, then the upload is marked failed.\n" + "Each wait doubles the one before. " * 14 + "\n\n"
        + PADDING.replace("Appendix", "Annex")
    )
    docs = _docs(files)
    task = "Uploads that fail should be retried with exponential backoff and jitter"
    sel = select(docs, task, max_excerpt_bytes=4000, max_section_bytes=2000)
    assert ("ops/operations.md", "Operations › Retries") in _paths(sel)
    assert "Colours and fonts" not in _picked_text(docs, sel)
    assert sum(len("".join(split_lines(files[p.path])[p.start - 1 : p.end]).encode()) for p in sel.picks) <= 4000
    monkeypatch.setattr(weights, "RUNNER_BYTES", 0)  # the eight pages fill the budget: no room is left for it
    without = select(docs, task, max_excerpt_bytes=4000, max_section_bytes=2000)
    assert ("ops/operations.md", "Operations › Retries") not in _paths(without)


def test_a_long_guide_mostly_chosen_comes_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plugin guide longer than a whole-file excerpt: the task matches five of its six steps,
    which hold most of its text, so the sixth step (publishing, in no word of the task) comes too,
    as excerpts that each fit max_section_bytes."""
    from gitpilot.context import weights

    steps = ["Write the command", "Register the command", "Add a config item", "Test the plugin command",
             "Document the plugin command"]
    body = "A plugin command is registered on the core object and reads its config item. " * 18
    guide = "# Plugins\n\nHow to write a plugin.\n\n" + "".join(f"## {s}\n\n{body}\n\n" for s in steps)
    guide += "## Publish\n\n" + "Upload the wheel to the index with a trusted publisher. " * 22 + "\n"
    files = {"docs/dev/plugins.md": guide, "docs/other.md": "# Other\n\nNothing here.\n"}
    docs = _docs(files)
    assert len(guide.encode()) > weights.WHOLE_DOC_BYTES
    task = "Add a plugin command that registers a config item"
    sel = select(docs, task, max_excerpt_bytes=27000, max_section_bytes=4000)
    assert "Upload the wheel" in _picked_text(docs, sel)
    assert all(len("".join(split_lines(guide)[p.start - 1 : p.end]).encode()) <= 4000 for p in sel.picks)
    monkeypatch.setattr(weights, "WHOLE_SHARE", 1.01)
    assert "Upload the wheel" not in _picked_text(docs, select(docs, task, max_excerpt_bytes=27000,
                                                               max_section_bytes=4000))


def test_a_title_over_sections_shown_apart_comes_with_the_first_and_a_bare_title_never_alone() -> None:
    """A guide too long for one excerpt comes whole as its sections: its title, which has no
    text of its own, comes in the excerpt of its first section, not as an excerpt of one
    heading. A README that is only a title says nothing: it is no excerpt at all."""
    steps = ["Write the command", "Register the command", "Add a config item", "Test the plugin command",
             "Document the plugin command", "Publish the plugin command"]
    body = "A plugin command is registered on the core object and reads its config item. " * 18
    guide = "# Plugin commands\n\n" + "".join(f"## {s}\n\n{body}\n\n" for s in steps)
    files = {"docs/dev/plugins.md": guide, "plugins/README.md": "# Plugin commands\n",
             "docs/other.md": "# Other\n\nNothing here.\n"}
    docs = _docs(files)
    sel = select(docs, "Add a plugin command that registers a config item", max_excerpt_bytes=27000,
                 max_section_bytes=4000)
    texts = {d.path: d.lines for d in docs}
    got = [(p.path, "".join(texts[p.path][p.start - 1 : p.end])) for p in sel.picks]
    assert [t for p, t in got if p == "docs/dev/plugins.md"][0].startswith("# Plugin commands\n\n## Write the command")
    assert "".join(t for p, t in got if p == "docs/dev/plugins.md").count("## ") == len(steps)  # whole
    assert all(any(not ln.startswith("#") for ln in t.splitlines() if ln.strip()) for _p, t in got), got
    assert "plugins/README.md" not in [p for p, _t in got]


def test_the_budget_is_offered_to_the_best_documents_only_not_to_every_one_that_matches() -> None:
    # On a large tree hundreds of documents match a task a little. Once the best have taken the
    # budget, what is left is offered to the next ones in order, but not to the whole tree: a
    # document ranked below weights.LOOKED_AT gives nothing, however little it would take.
    from gitpilot.context import weights
    from gitpilot.context.choose import choose

    n = weights.LOOKED_AT
    long_body = "retry backoff jitter. " * 200  # ~4.4 KB: more than the room the best leave
    files = {f"docs/guide{i:03}.md": f"# Guide {i}\n\n{long_body}\n" for i in range(n)}
    files.update({f"docs/tiny{i}.md": f"# Tiny {i}\n\nretry backoff.\n" for i in range(3)})
    docs = _docs(files)
    paths = [d.path for d in docs]
    doc_scores = [float(len(docs) - k) for k in range(len(docs))]  # in file order: the tiny ones last
    sec_scores = [[1.0] * d.smap.count for d in docs]
    budget = 4 * len(files["docs/guide000.md"].encode()) + 300  # four guides, then 300 bytes left
    sel = choose(docs, doc_scores, sec_scores, {}, {}, budget, 8000, left_out=True)
    chosen = {p.path for p in sel.picks}
    assert {f"docs/guide{i:03}.md" for i in range(4)} <= chosen
    assert not any(p.startswith("docs/tiny") for p in chosen)
    assert all(x.path in paths for x in sel.left_out)
    # the same tiny document ranked among the best is given the room the others leave
    doc_scores[paths.index("docs/tiny0.md")] = doc_scores[4] + 0.5
    sel = choose(docs, doc_scores, sec_scores, {}, {}, budget, 8000, left_out=True)
    assert "docs/tiny0.md" in {p.path for p in sel.picks}
