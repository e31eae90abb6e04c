"""A mandatory rule that points elsewhere for its details brings those details into the capsule."""

from __future__ import annotations

from pathlib import Path

from conftest import make_repo

from gitpilot.context.runner import build_capsule
from gitpilot.repo import Repo

ROOT_AGENTS = """# Agent guide

## How to work

- Prose follows `docs/STYLE.md`.

## Guardrails

- Never write a database migration that drops a column in one step; use the
  expand/contract pattern described in `services/api/AGENTS.md`.
- Handle reports as [the reporting guide](docs/reporting.md#reporting-a-flaw) says.
- See `docs/overview.md`.
"""
API_AGENTS = """# services/api

## Commands

Run `make test`.

## Database migrations

Migrations run on start-up. Use expand/contract: add the new column, backfill,
switch reads, drop the old column in a later release.

## Handlers

One file per resource.
"""
REPORTING = """# Reporting

## Supported versions

Only the latest release.

## Reporting a flaw

Mail sec@example.com; we answer within two days.
"""
STYLE = "# Style\n\n## Headings\n\nSentence case for every heading.\n"
OVERVIEW = "# Overview\n\n## Database\n\nPostgres 16 holds every column of billing data.\n"
TASK = "Add an opt-in flag for ordered webhook retries"


def _capsule(tmp_path: Path, files: dict[str, str], task: str = TASK) -> str:
    root = make_repo(tmp_path / "repo", files)
    return build_capsule(Repo.discover(root), task, use_cache=False).text


def _base() -> dict[str, str]:
    shelf = {f"docs/shelf/page{i}.md": f"# Shelf {i}\n\n" + "Notes on the office plants.\n" * 20 for i in range(12)}
    return {
        **shelf,
        "AGENTS.md": ROOT_AGENTS,
        "services/api/AGENTS.md": API_AGENTS,
        "docs/reporting.md": REPORTING,
        "docs/STYLE.md": STYLE,
        "docs/overview.md": OVERVIEW,
    }


def test_a_guardrail_brings_the_section_it_defers_to_and_only_that(tmp_path: Path) -> None:
    text = _capsule(tmp_path, _base())
    assert "Use expand/contract: add the new column, backfill," in text
    assert "details of the mandatory rule at AGENTS.md:10" in text
    # the rest of the nested file is not pulled in by the pointer (the relevance choice may
    # still find it, on its own signals, further down)
    mandatory = text[text.index("## Mandatory sections") : text.index("## Relevant sections")]
    assert "One file per resource." not in mandatory


def test_an_anchor_names_the_section(tmp_path: Path) -> None:
    text = _capsule(tmp_path, _base())
    assert "we answer within two days" in text
    assert "Only the latest release." not in text  # the other section of that file


def test_a_bare_pointer_or_a_rule_outside_the_mandatory_sections_brings_nothing(tmp_path: Path) -> None:
    text = _capsule(tmp_path, _base())
    # "See `docs/overview.md`." shares no words with any of its sections
    assert "Postgres 16 holds every column" not in text
    # "How to work" is not a mandatory heading: its pointer to the style guide stays a pointer
    assert "Sentence case for every heading." not in text


def test_a_pilot_always_block_is_mandatory_text_too(tmp_path: Path) -> None:
    files = _base()
    files["AGENTS.md"] = (
        "# Agent guide\n\n<!-- pilot:always -->\nEvery heading is in sentence case, as `docs/STYLE.md` says.\n"
        "<!-- /pilot:always -->\n"
    )
    assert "Sentence case for every heading." in _capsule(tmp_path, files)


def test_a_section_too_big_or_outside_the_repository_is_not_pulled(tmp_path: Path) -> None:
    files = _base()
    files["services/api/AGENTS.md"] = API_AGENTS.replace(
        "switch reads,", "switch reads, " + "and again " * 1200 + "\n"
    )
    files["AGENTS.md"] = ROOT_AGENTS + "- Secrets follow the secrets rules in `../outside/AGENTS.md`.\n"
    text = _capsule(tmp_path, files)
    assert "Use expand/contract: add the new column" not in text  # above max_section_bytes (8000)
    assert "outside/AGENTS.md" in text  # the guardrail itself, in full, is all there is


def test_a_deferred_section_holding_a_credential_is_withheld(tmp_path: Path) -> None:
    files = _base()
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    files["services/api/AGENTS.md"] = API_AGENTS.replace("switch reads,", f"switch reads (token {token}),")
    text = _capsule(tmp_path, files)
    assert token not in text
    withheld = text.split("Withheld (a known credential format is in the text", 1)[1]
    assert "`services/api/AGENTS.md` § services/api › Database migrations · lines 7-10" in withheld


def test_an_at_mention_is_a_reference_too_but_an_email_address_is_not(tmp_path: Path) -> None:
    from gitpilot.context.deferred import references

    assert references("For Playwright, see @packages/testing/AGENTS.md (janitor).") == [
        ("packages/testing/AGENTS.md", "")
    ]
    assert references("Write to ops@example.md or see `docs/a.md` and [b](b.md#c).") == [
        ("docs/a.md", ""),
        ("b.md", "c"),
    ]
    files = _base()
    files["AGENTS.md"] = ROOT_AGENTS.replace(
        "described in `services/api/AGENTS.md`", "described in @services/api/AGENTS.md"
    )
    assert "Use expand/contract: add the new column, backfill," in _capsule(tmp_path, files)


def test_the_details_of_many_pointers_add_up_to_one_section_budget_at_most(tmp_path: Path) -> None:
    files = _base()
    rules = []
    for i in range(6):
        files[f"docs/rule{i}.md"] = (
            f"# Rule {i}\n\n## Retention {i}\n\nKeep records of kind {i} for {i + 1} years. " + "Detail. " * 240 + "\n"
        )
        rules.append(f"- Retention of kind {i} records follows `docs/rule{i}.md`.\n")
    files["AGENTS.md"] = ROOT_AGENTS + "".join(rules)
    root = make_repo(tmp_path / "repo", files)
    res = build_capsule(Repo.discover(root), TASK, use_cache=False)
    deferred = [p for p in res.manifest["mandatory"] if "details of the mandatory rule" in p["why"]]
    assert 1 < len(deferred) < 7
    sizes = [len("".join(files[p["path"]].splitlines(True)[p["start"] - 1 : p["end"]]).encode()) for p in deferred]
    assert sum(sizes) <= 8000  # the default max_section_bytes


def test_files_an_instruction_file_orders_read_come_whole_and_a_mere_mention_does_not(tmp_path: Path) -> None:
    agents = (
        "# Agent guide\n\n## Workflow\n\nYou MUST do all of the following:\n\n"
        "1. At the start of every task, read\n   `docs/ai/conventions.md` and `docs/ai/checks.md`.\n"
        "2. Keep diffs small.\n\n## Background\n\nThe history is in `docs/ai/history.md`; read it if curious.\n"
    )
    files = {
        "AGENTS.md": agents,
        "docs/ai/conventions.md": "# Conventions\n\nType hints everywhere.\n",
        "docs/ai/checks.md": "# Checks\n\nRun `make lint test` before you finish.\n",
        "docs/ai/history.md": "# History\n\nThe project began in 2019.\n",
    }
    root = make_repo(tmp_path / "repo", files)
    res = build_capsule(Repo.discover(root), "Rename the export button", use_cache=False)
    mandatory = res.text[res.text.index("## Mandatory sections") : res.text.index("## Relevant sections")]
    assert "Type hints everywhere." in mandatory and "Run `make lint test` before you finish." in mandatory
    assert "required reading named at AGENTS.md:8" in mandatory  # the line that names them
    assert "The project began in 2019." not in mandatory  # "read it if curious" orders nothing


def test_required_reading_over_the_budget_stays_a_pointer(tmp_path: Path) -> None:
    agents = "# Agent guide\n\nYou must always read `docs/ai/book.md` before you start.\n"
    files = {"AGENTS.md": agents, "docs/ai/book.md": "# Book\n\n" + "A long chapter of prose. " * 400 + "\n"}
    root = make_repo(tmp_path / "repo", files)
    res = build_capsule(Repo.discover(root), "Rename the export button", use_cache=False)
    assert "required reading" not in res.text


def test_an_item_that_starts_with_the_order_is_required_reading(tmp_path: Path) -> None:
    agents = "# Agent guide\n\n- Read and follow [AI_POLICY.md](AI_POLICY.md).\n- See `docs/history.md` for background.\n"
    files = {
        "AGENTS.md": agents,
        "AI_POLICY.md": "# AI Policy\n\nDisclose AI assistance in the pull request description.\n",
        "docs/history.md": "# History\n\nThe project began in 2019.\n",
    }
    root = make_repo(tmp_path / "repo", files)
    res = build_capsule(Repo.discover(root), "Rename the export button", use_cache=False)
    mandatory = res.text[res.text.index("## Mandatory sections") : res.text.index("## Relevant sections")]
    assert "Disclose AI assistance in the pull request description." in mandatory
    assert "The project began in 2019." not in mandatory  # "See ..." points, it does not order
