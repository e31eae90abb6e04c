"""Selection rules of the capsule on small synthetic repositories: what reaches the agent, and what not."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import git, make_repo

from gitpilot.context.runner import build_capsule
from gitpilot.repo import Repo


def _filler(n: int = 30) -> dict[str, str]:
    """Unrelated user documentation, so the repository is not small enough to be shown whole."""
    return {
        f"docs/guide/page{i}.md": f"# Page {i}\n\n## Overview {i}\n\n"
        + "".join(
            f"Paragraph {j} of page {i} describes the dashboard layout and colours.\n" for j in range(12)
        )
        for i in range(n)
    }


def _part(text: str, head: str, nxt: str) -> str:
    return text[text.index(head) : text.index(nxt)]


def _excerpt_paths(text: str) -> list[str]:
    return [line.split("`")[1] for line in text.splitlines() if line.startswith("#### `")]


def test_a_symlink_or_copy_of_a_file_shown_in_full_is_never_shown_again(tmp_path: Path) -> None:
    agents = (
        "# Guide\n\nKeep diffs small.\n\n## Secrets\n\nNever log tokens.\n\n"
        "## Writing tests\n\nEvery token refresh change needs a pytest case in tests/auth/.\n"
    )
    files = {"AGENTS.md": agents, ".github/copilot-instructions.md": agents, **_filler()}
    root = make_repo(tmp_path / "repo", files)
    os.symlink("AGENTS.md", root / "CLAUDE.md")
    git(root, "add", "CLAUDE.md")
    git(root, "commit", "-qm", "link")
    res = build_capsule(Repo.discover(root), "Add tests for the token refresh")
    assert res.text.count("Never log tokens.") == 1
    assert res.text.count("Every token refresh change needs a pytest case") == 1
    assert _excerpt_paths(res.text) == ["AGENTS.md"]  # neither the link nor the copy


def _mandatory(text: str) -> str:
    return _part(text, "## Mandatory sections", "## Relevant sections")


def test_a_nested_rule_file_is_not_taken_whole_for_sharing_the_tasks_words(tmp_path: Path) -> None:
    charts = "# Charts package\n\n" + "".join(
        f"## Rule {i}\n\nChart rule {i}: legends stay left-aligned in the renderer.\n\n" for i in range(30)
    )
    charts += "## Feature flags\n\nChart features behind a flag read it through `useFlag()` in tests.\n"
    files = {
        "AGENTS.md": "# Guide\n\nKeep diffs small.\n",
        "packages/charts/AGENTS.md": charts,
        "docs/admin/feature-flags.md": "# Feature flags\n\nAn admin turns a feature flag on for a workspace "
        "from the flags page; the export button reads its flag on load.\n",
        **_filler(),
    }
    res = build_capsule(
        Repo.discover(make_repo(tmp_path / "repo", files)), "Put the export button behind a feature flag"
    )
    assert "Chart rule 3" not in res.text  # not the whole charts file for one matching section
    assert "An admin turns a feature flag on" in res.text


def test_a_nested_rule_file_comes_when_it_speaks_to_the_task_and_not_otherwise(tmp_path: Path) -> None:
    # Nested instruction files are candidates like any document, with a prior of their kind: the
    # worker's rules answer the task ("running twice"), the billing rules do not (issue 12).
    files = {
        "AGENTS.md": "# Guide\n\nKeep diffs small.\n",
        "services/worker/AGENTS.md": "# Worker\n\n## Rules for jobs\n\nEvery job must tolerate running twice.\n",
        "services/billing/AGENTS.md": "# Billing\n\n## Rules\n\nAmounts are integer cents.\n",
        "docs/ops/rollouts.md": "# Rollouts\n\n## Rolling updates\n\nPods are replaced one at a time during a "
        "rollout.\n\n### Worker shutdown\n\nOn SIGTERM the worker finishes its current jobs, then exits; pods "
        "killed before that drop the jobs they hold.\n",
        **_filler(),
    }
    task = "Customers receive the same receipt twice whenever we do a rollout; pods seem killed mid-way"
    res = build_capsule(Repo.discover(make_repo(tmp_path / "repo", files)), task)
    relevant = _part(res.text, "## Relevant sections", "## Left out")
    assert "Every job must tolerate running twice." in relevant
    assert "On SIGTERM the worker finishes its current jobs" in relevant
    assert "Amounts are integer cents." not in res.text


def test_the_task_area_in_the_code_brings_the_areas_instruction_file(tmp_path: Path) -> None:
    # The widgets' AGENTS.md shares no word with the task; the code the task is about lives in
    # its directory (packages/widgets/picker/popup.ts: "picker", "popup"), which is its area.
    files = {
        "AGENTS.md": "# Guide\n\nKeep diffs small.\n",
        "docs/widgets/popup.md": "# Popup\n\nThe field picker popup opens with Ctrl+Space.\n",
        "packages/widgets/AGENTS.md": "# Widgets\n\nQuery the DOM by role in tests.\n",
        "packages/widgets/CLAUDE.md": "@AGENTS.md\n",
        "packages/widgets/picker/popup.ts": "export function openPopup() {}\n",
        "packages/widgets/picker/field.ts": "export const field = 1;\n",
        "packages/charts/legend.ts": "export const legend = 1;\n",
        "packages/charts/AGENTS.md": "# Charts\n\nLegends stay left-aligned.\n",
        **_filler(),
    }
    res = build_capsule(
        Repo.discover(make_repo(tmp_path / "repo", files)), "The field picker popup ignores Esc"
    )
    relevant = _part(res.text, "## Relevant sections", "## Left out")
    assert "Query the DOM by role in tests." in relevant
    assert "Legends stay left-aligned." not in res.text
    assert "`packages/widgets/CLAUDE.md`" not in res.text.split("## Left out")[0]


def test_the_budget_goes_to_the_best_documents_first(tmp_path: Path) -> None:
    toml = "[leanloop.context]\nmax_excerpt_bytes = 700\n"
    files = {
        ".gitpilot.toml": toml,
        "AGENTS.md": "# Guide\n\nKeep diffs small.\n",
        "docs/widgets/popup.md": "# Popup\n\nThe field picker popup opens with Ctrl+Space; arrow keys move "
        "the selection and Esc closes the popup.\n",
        "docs/widgets/keys.md": "# Keyboard\n\n## Popup keys reference\n\nArrow keys in the popup move the "
        "highlighted field; Esc closes the popup.\n" + "Padding line about the picker keyboard.\n" * 6,
        # a third matching document, too long for what is left of the budget
        "docs/widgets/colours.md": "# Colours\n\n## Picker\n\nThe picker popup uses the accent colour; Esc keeps it.\n"
        + "A line about colours and nothing else.\n" * 30,
        **_filler(),
    }
    res = build_capsule(
        Repo.discover(make_repo(tmp_path / "repo", files)),
        "The field picker popup ignores the arrow keys and Esc",
    )
    relevant = _part(res.text, "## Relevant sections", "## Left out")
    assert "The field picker popup opens with Ctrl+Space" in relevant
    assert "Arrow keys in the popup move the highlighted field" in relevant
    assert "The picker popup uses the accent colour" not in relevant
    shown = [p for p in res.manifest["relevant"]]
    lines = {p: (tmp_path / "repo" / p).read_text().splitlines(True) for p in {x["path"] for x in shown}}
    assert sum(len("".join(lines[x["path"]][x["start"] - 1 : x["end"]]).encode()) for x in shown) <= 700
    # what did not fit is named with its place, and why
    left = {x["path"]: x for x in res.manifest["left_out"]}
    assert left["docs/widgets/colours.md"]["reason"] == "no room left in max_excerpt_bytes"
    assert left["docs/widgets/colours.md"]["heading"] == "Colours › Picker"


def test_a_small_context_is_shown_whole_when_that_costs_no_more_than_a_selection(tmp_path: Path) -> None:
    files = {
        "CLAUDE.md": "# Working on calc\n\n- Run the tests before you say a change is done.\n",
        "README.md": "# calc\n\nA tiny calculator.\n\n## Development\n\nRun the tests with `python3 tests/run.py`.\n",
        "docs/arithmetic.md": "# Arithmetic\n\n## Division\n\n`divide(a, b)` raises `ZeroDivisionError` when `b` "
        "is zero.\n\n## Addition\n\n`add(a, b)` adds two integers.\n",
    }
    res = build_capsule(
        Repo.discover(make_repo(tmp_path / "repo", files)), "Add a modulo function to calc.py"
    )
    relevant = _part(res.text, "## Relevant sections", "## Left out")
    assert files["README.md"] in relevant and files["docs/arithmetic.md"] in relevant
    assert "`docs/arithmetic.md` § Arithmetic\nlines 1-9 · sha256 " in relevant  # still labelled
    assert "Nothing: every context file is in full above." in res.text
    assert res.manifest["left_out"] == []


def test_a_larger_context_is_still_a_selection(tmp_path: Path) -> None:
    files = {"AGENTS.md": "# Guide\n\nKeep diffs small.\n", **_filler()}
    files["docs/arithmetic.md"] = "# Arithmetic\n\n## Division\n\n`divide(a, b)` raises on zero.\n"
    res = build_capsule(Repo.discover(make_repo(tmp_path / "repo", files)), "Division by zero should raise")
    assert "Paragraph 3 of page 7" not in res.text
    assert "`divide(a, b)` raises on zero." in res.text
    assert "every context file is in full" not in res.text


def test_identical_nested_rule_files_each_govern_their_own_directory(tmp_path: Path) -> None:
    rules = "# Package rules\n\nNever import from a sibling package.\n"
    files = {
        "AGENTS.md": "# Guide\n\nKeep diffs small.\n",
        "packages/alpha/AGENTS.md": rules,
        "packages/beta/AGENTS.md": rules,
        "packages/beta/main.py": "x = 1\n",
        **_filler(),
    }
    res = build_capsule(
        Repo.discover(make_repo(tmp_path / "repo", files)), "Fix the crash in packages/beta/main.py"
    )
    assert "`packages/beta/AGENTS.md`" in _mandatory(res.text)
    assert res.text.count("Never import from a sibling package.") == 1


PR_TEMPLATE = (
    "## Summary\n\nDescribe the change.\n\n#### How to test the change:\n1. ...\n\n"
    "## Review / Merge checklist\n\n- [ ] The PR title goes into the changelog; use `(no-changelog)` otherwise.\n"
    "- [ ] Tests included: a bug is not fixed until a test stops it from coming back.\n"
)
CONTRIBUTING = (
    "# Contributing\n\n## Running the tests\n\nRun `make test` before you push; it runs every unit test.\n"
)


def test_a_pull_request_checklist_is_a_convention_the_task_never_names(tmp_path: Path) -> None:
    files = {".github/pull_request_template.md": PR_TEMPLATE, "CONTRIBUTING.md": CONTRIBUTING, **_filler()}
    root = make_repo(tmp_path / "repo", files)
    res = build_capsule(Repo.discover(root), "The export button downloads an empty CSV file")
    relevant = _part(res.text, "## Relevant sections", "## Left out")
    assert "The PR title goes into the changelog; use `(no-changelog)` otherwise." in relevant
    assert "Run `make test` before you push" in relevant


def test_a_template_prompt_with_nothing_below_it_takes_no_convention_slot(tmp_path: Path) -> None:
    files = {".github/pull_request_template.md": PR_TEMPLATE, "CONTRIBUTING.md": CONTRIBUTING, **_filler()}
    root = make_repo(tmp_path / "repo", files)
    res = build_capsule(Repo.discover(root), "The export button downloads an empty CSV file")
    relevant = _part(res.text, "## Relevant sections", "## Left out")
    # the testing slot goes to the section that says how to test, not to the form's prompt
    # (which may still be shown as part of the template, labelled a commits convention)
    labels = [ln for ln in relevant.splitlines() if ln.startswith("lines ")]
    excerpts = _excerpt_paths(relevant)
    testing = [path for path, label in zip(excerpts, labels, strict=True) if "testing convention" in label]
    assert testing == ["CONTRIBUTING.md"]
    assert "Run `make test` before you push" in relevant


def test_one_short_sentence_under_a_convention_heading_is_a_rule_not_a_placeholder(tmp_path: Path) -> None:
    contributing = "# Contributing\n\n## Commit messages\n\nUse Conventional Commits.\n"
    files = {"CONTRIBUTING.md": contributing, **_filler()}
    root = make_repo(tmp_path / "repo", files)
    res = build_capsule(Repo.discover(root), "The export button downloads an empty CSV file")
    assert "Use Conventional Commits." in _part(res.text, "## Relevant sections", "## Left out")


def test_a_section_whose_heading_names_no_class_takes_the_class_that_matters_more(tmp_path: Path) -> None:
    contributing = (
        "# Contributing\n\nSend pull requests against main.\n\n"
        "## Steps to Contribute\n\nClaim an issue first.\n\n```\nmake test   # make sure all tests pass\n```\n\n"
        "We use golangci-lint; the linter runs in CI, and a formatter fixes most of what it reports.\n"
    )
    files = {"CONTRIBUTING.md": contributing, **_filler()}
    root = make_repo(tmp_path / "repo", files)
    res = build_capsule(Repo.discover(root), "The export button downloads an empty CSV file")
    relevant = _part(res.text, "## Relevant sections", "## Left out")
    assert "make test   # make sure all tests pass" in relevant
    label = next(ln for ln in relevant.splitlines() if "Steps to Contribute" in ln and ln.startswith("#### "))
    signals = relevant.split(label, 1)[1].splitlines()[1]
    assert "testing convention" in signals


def test_the_testing_slot_goes_to_how_tests_are_written_before_how_they_are_run(tmp_path: Path) -> None:
    """The instruction files say how to run the tests; a change that needs a test needs the rules
    for writing one."""
    contributing = (
        "# Contributing\n\n## Running the tests\n\nRun `make test` before you push; it runs every unit test.\n\n"
        "## Writing a test\n\nEach regression test names the issue it covers and asserts on the output, "
        "never on log lines; add it beside the module it tests.\n"
        + "".join(f"## Topic {i}\n\n" + "Unrelated maintainer notes on the release train. " * 30 + "\n\n"
                  for i in range(8))
    )
    files = {"AGENTS.md": "# Guide\n\nRun `make test` to run the tests.\n", "CONTRIBUTING.md": contributing,
             **_filler()}
    root = make_repo(tmp_path / "repo", files)
    res = build_capsule(Repo.discover(root), "The export button downloads an empty CSV file")
    relevant = _part(res.text, "## Relevant sections", "## Left out")
    labels = [ln for ln in relevant.splitlines() if ln.startswith("#### ")]
    testing = [ln for ln, sig in zip(labels, [ln for ln in relevant.splitlines() if ln.startswith("lines ")],
                                     strict=True) if "testing convention" in sig]
    assert testing == ["#### `CONTRIBUTING.md` § Contributing › Writing a test"]


def test_a_frozen_copy_of_an_older_version_yields_to_the_current_page(tmp_path: Path) -> None:
    page = "# Settings\n\n## Client\n\nThe client waits `{}` seconds for the handshake (`CLIENT_INIT_TIMEOUT`).\n"
    old = page.format(10) + "If the server never answers, the handshake hangs forever.\n"
    files = {"docs/more/settings.md": page.format(30), "docs/v3/more/settings.md": old, **_filler()}
    files["docs/v3/only-old.md"] = "# Legacy\n\n## Handshake\n\nThe v3 handshake had no timeout at all.\n"
    root = make_repo(tmp_path / "repo", files)
    res = build_capsule(Repo.discover(root), "`CLIENT_INIT_TIMEOUT`: the handshake hangs forever")
    relevant = _part(res.text, "## Relevant sections", "## Left out")
    assert "waits `30` seconds" in relevant
    first = _excerpt_paths(relevant)[0]
    assert first == "docs/more/settings.md"
    # a page with no current twin is not a copy: it still competes on its own words
    assert "docs/v3/only-old.md" in _excerpt_paths(relevant)


def test_an_examples_readme_and_a_list_of_pull_requests_take_no_convention_slot(tmp_path: Path) -> None:
    files = {
        "CONTRIBUTING.md": CONTRIBUTING,
        "examples/demo/README.md": "# Demo\n\n## Running the tests\n\nRun `pytest demo_test.py` in this folder.\n",
        "dev-docs/notes/providers.md": "# Provider notes\n\n## PR\n\n- #2748 - Convert provider tests\n",
        **_filler(),
    }
    root = make_repo(tmp_path / "repo", files)
    res = build_capsule(Repo.discover(root), "The export button downloads an empty CSV file")
    relevant = _part(res.text, "## Relevant sections", "## Left out")
    assert "Run `make test` before you push" in relevant
    assert "demo_test.py" not in relevant
    assert "#2748" not in relevant


def test_a_translation_guide_in_i18n_is_read_but_the_translations_are_not(tmp_path: Path) -> None:
    from gitpilot.context.sources import excluded_by_default

    files = {
        "i18n/README.md": "# Documentation translations\n\nRun `make i18n-sync` after changing an English page.\n",
        "i18n/es/README.md": "# Traducciones\n\nEjecute `make i18n-sync` tras cambiar una página.\n",
        "i18n/ja.md": "# 翻訳\n\n`make i18n-sync` を実行してください。\n",
        **_filler(),
    }
    root = make_repo(tmp_path / "repo", files)
    res = build_capsule(Repo.discover(root), "How do I update the translated pages after an English change?")
    assert "Run `make i18n-sync` after changing an English page." in res.text
    assert "Ejecute" not in res.text and "実行" not in res.text
    assert [excluded_by_default(p) for p in ("i18n/README.md", "i18n/es/README.md", "i18n/ja.md")] == [
        False,
        True,
        True,
    ]


def test_markdown_test_data_below_a_tests_directory_is_not_context(tmp_path: Path) -> None:
    """A formatter's Markdown inputs and snapshots under ``tests/`` share every word of a task
    about them; the README that says how those tests are written is the project's own."""
    from gitpilot.context.sources import excluded_by_default

    files = {
        "crates/md_formatter/tests/README.md": "# Formatter tests\n\nAdd a case under `specs/` and run "
        "`cargo insta review` to accept the new snapshot of the formatted table.\n",
        "crates/md_formatter/tests/specs/table.md": "# Table\n\n| formatted | table |\n|---|---|\n"
        "| a formatted table | snapshot |\n",
        **_filler(),
    }
    root = make_repo(tmp_path / "repo", files)
    res = build_capsule(Repo.discover(root), "The formatted table snapshot is wrong after formatting twice")
    assert "run `cargo insta review` to accept the new snapshot" in res.text
    assert "| a formatted table | snapshot |" not in res.text
    assert [excluded_by_default(p) for p in (
        "tests/AGENTS.md", "tests/writing-tests.md", "test/sql/README.md", "test/sql/join.md",
        "crates/md_formatter/tests/specs/table.md",
    )] == [False, False, False, True, True]


def test_a_task_that_adds_to_the_changelog_gets_its_head(tmp_path: Path) -> None:
    releases = "".join(
        f"## 1.{i}.0 - 2026-0{1 + i % 9}-01\n\n### Fixed\n\n- Fixed widget {i} colours on the dashboard.\n\n"
        for i in range(9, 0, -1)
    )
    history = (
        "# History\n\nAll notable changes are recorded here.\n"
        "The format follows keepachangelog.com; new entries go under Unreleased.\n\n## Unreleased\n\n" + releases
    )
    envs = "# Environments\n\n## Listing\n\nThe environments list truncates long dependency names at 30 characters.\n"
    files = {"docs/history/app.md": history, "docs/envs.md": envs, **_filler()}
    root = make_repo(tmp_path / "repo", files)
    task = "Long dependency names are cut off in the environments list. Fix it and add a line to the changelog."
    text = build_capsule(Repo.discover(root), task).text
    assert "The format follows keepachangelog.com; new entries go under Unreleased." in text
    assert "Fixed widget 9 colours" in text  # the newest release: an example of the form
    text = build_capsule(Repo.discover(root), "Long dependency names are cut off in the environments list").text
    assert "truncates long dependency names" in text
    assert "keepachangelog.com" not in text


def test_every_part_of_a_pull_request_template_is_about_the_pull_request(tmp_path: Path) -> None:
    template = (
        "## Description\n\nThank you for contributing! Please make sure that:\n\n"
        "- [ ] the lint and unit sessions pass locally;\n- [ ] a news fragment is added under `changes/`.\n"
    )
    files = {".github/PULL_REQUEST_TEMPLATE.md": template, "CONTRIBUTING.md": CONTRIBUTING, **_filler()}
    root = make_repo(tmp_path / "repo", files)
    res = build_capsule(Repo.discover(root), "The export button downloads an empty CSV file")
    relevant = _part(res.text, "## Relevant sections", "## Left out")
    assert "a news fragment is added under `changes/`." in relevant


def _skill_text() -> str:
    """A long skill (over the whole-document size) with one section the task names, and others
    it does not, each a step an agent running the skill must follow."""
    parts = ["# Release notes\n\nHow a change is written up for the release notes.\n"]
    topics = [("Changelog entry", "Add a changelog entry under Unreleased for every new flag."),
              ("Tone", "Write for users, in the present tense."),
              ("Linking", "Link the pull request by number, never by URL."),
              ("Breaking changes", "Start the entry with BREAKING and say what to do instead."),
              ("Review", "Ask a maintainer of the area to read the entry."),
              ("Backports", "A backported fix gets its own entry in each maintained series.")]
    for head, rule in topics:
        parts.append(f"\n## {head}\n\n{rule}\n\n" + "".join(
            f"Detail {j} of {head.lower()}: the wording is checked by the docs team before release.\n"
            for j in range(20)))
    return "".join(parts)


def test_an_agent_skill_comes_whole_once_any_of_it_is_chosen(tmp_path: Path) -> None:
    """A skill's SKILL.md is read whole by the agent that runs it: once one of its sections is
    chosen, all of it comes (it is over the size a document comes whole at otherwise); a file
    beside it, which the skill loads when it needs it, gives its best sections as any document."""
    skill = _skill_text()
    assert len(skill.encode()) > 8000
    task = "Add a changelog entry for the new --dry-run flag"
    for name, whole in (("SKILL.md", True), ("reference.md", False)):
        files = {"AGENTS.md": "# Guide\n\nKeep diffs small.\n", f".agents/skills/release-notes/{name}": skill,
                 **_filler()}
        text = build_capsule(Repo.discover(make_repo(tmp_path / name, files)), task).text
        assert "Add a changelog entry under Unreleased for every new flag." in text, name
        rest = ["Write for users, in the present tense.", "Link the pull request by number, never by URL.",
                "A backported fix gets its own entry in each maintained series."]
        assert all(r in text for r in rest) == whole, name
        if not whole:
            assert not any(r in text for r in rest), name


def test_a_site_page_that_only_includes_a_file_is_not_a_document_of_its_own(tmp_path: Path) -> None:
    """A documentation site's page made of one include (MkDocs' snippets) repeats the file it
    includes: it is never an excerpt, and it takes no place among the documents chosen."""
    contributing = (
        "# Contributing\n\n## Running the tests\n\nRun `nox -s tests` before opening a pull request; "
        "every lockfile change needs a test in tests/lock/.\n"
    )
    files = {
        "CONTRIBUTING.md": contributing,
        "docs/dev/contributing.md": '--8<-- "CONTRIBUTING.md"\n',
        "docs/reference/contributing.md": "<!-- the guide, from the root -->\n\n--8<-- 'CONTRIBUTING.md'\n",
        "docs/dev/lockfile.md": "# Lockfile\n\nThe lockfile is written by `lock.py`; a test pins its format.\n\n"
        '--8<-- "docs/snippets/lock-format.md"\n',
        **_filler(),
    }
    res = build_capsule(Repo.discover(make_repo(tmp_path / "repo", files)),
                        "Contributing a lockfile change: how are the tests run, and where does its test go?")
    paths = _excerpt_paths(res.text)
    assert "CONTRIBUTING.md" in paths
    assert "docs/dev/contributing.md" not in paths and "docs/reference/contributing.md" not in paths
    assert "docs/dev/lockfile.md" in paths  # a page with text of its own besides an include is one
    assert res.text.count("every lockfile change needs a test") == 1
