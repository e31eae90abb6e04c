"""What the capsule holds and in which order, on real repositories."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import git, make_repo

from gitpilot.context.runner import build_capsule
from gitpilot.repo import Repo

AGENTS = "# Agent guide\n\nUse Python 3.11.\n\n## Never\n\nNever push to main.\n"
CONTRIB = (
    "# Contributing\n\n## Running the tests\n\nRun `pytest -q` from the root.\n\n"
    "## Commit messages\n\nImperative mood, one topic per commit.\n\n"
    "## Security\n\nReport to sec@example.com.\n"
)
RETRY = (
    "# Retries\n\nRequests are retried with `max_retries` (default 5).\n\n"
    "## Backoff\n\nExponential, capped at 60 s.\n"
)
CHANGELOG = "# Changelog\n\n## 2.0.0\n\n### Security\n\nPatched a token leak.\n"
TOML = (
    'base_branch = "main"\n\n[[check]]\nname = "test"\nrun = "pytest -q"\n\n'
    '[safety]\nhuman_gates = ["deploying to production", "deleting user data"]\n'
    'notes = "Ask before migrations."\n'
)


def _repo(tmp_path: Path, extra: dict[str, str] | None = None) -> Repo:
    files = {
        "AGENTS.md": AGENTS,
        "CONTRIBUTING.md": CONTRIB,
        "docs/retries.md": RETRY,
        "CHANGELOG.md": CHANGELOG,
        ".gitpilot.toml": TOML,
        "src/app.py": "x = 1\n",
    }
    files.update(extra or {})
    return Repo.discover(make_repo(tmp_path / "repo", files))


def test_the_capsule_holds_everything_in_the_documented_order(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {"CLAUDE.md": "# Memory\n\nPrefer small diffs.\n"})
    task = "Lower the default of max_retries to 3.\n"
    res = build_capsule(repo, task)
    text = res.text
    heads = [
        "## Task",
        "## Configuration",
        "## Agent memory",
        "## Instruction files",
        "## Mandatory sections",
        "## Relevant sections",
        "## Left out",
    ]
    positions = [text.index(h) for h in heads]
    assert positions == sorted(positions)
    assert text[text.index("## Task") :].startswith("## Task\n\n" + task)
    config = text[positions[1] : positions[2]]
    assert "`main`" in config and "`test`: `pytest -q`" in config
    assert (
        "deploying to production" in config
        and "deleting user data" in config
        and "Ask before migrations." in config
    )
    assert "Requests are retried with `max_retries` (default 5)." in text[positions[5] : positions[6]]
    assert res.path is not None and res.path.read_text() == text
    assert res.path.parent == repo.git_dir / "pilot"
    assert res.capsule_bytes == len(text.encode())
    assert not res.reused


def _base_line(repo: Repo, n: int) -> str:
    text = build_capsule(repo, f"Lower the default of max_retries to {n}.\n").text  # a new task each time
    return next(line for line in text.splitlines() if line.startswith("- base branch:"))


def test_without_a_configured_base_branch_the_capsule_names_the_one_origin_head_points_at(tmp_path: Path) -> None:
    # the base branch a user expects, the one review-budget compares with: origin's default
    # branch (even one with a slash), else a local main or master, else none
    from gitpilot.config import load
    from gitpilot.errors import PilotError
    from gitpilot.review.budget import resolve_base

    def reviewed(repo: Repo) -> str:
        try:
            return resolve_base(repo, load(repo.workdir))[0].removeprefix("origin/")
        except PilotError:
            return "(not set)"

    toml = TOML.replace('base_branch = "main"\n\n', "")
    src = make_repo(tmp_path / "src", {"AGENTS.md": AGENTS, "docs/retries.md": RETRY, ".gitpilot.toml": toml})
    git(src, "branch", "-m", "main", "release/2.x")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(src), str(clone))
    assert git(clone, "symbolic-ref", "refs/remotes/origin/HEAD").strip() == "refs/remotes/origin/release/2.x"
    git(clone, "branch", "-q", "main")  # a local main does not outrank origin's default
    assert _base_line(Repo.discover(clone), 1) == "- base branch: `release/2.x`"
    assert reviewed(Repo.discover(clone)) == "release/2.x"
    git(clone, "remote", "set-head", "origin", "--delete")
    git(clone, "branch", "-q", "trunk")
    git(clone, "branch", "-q", "master")
    assert _base_line(Repo.discover(clone), 2) == "- base branch: `main`"
    assert reviewed(Repo.discover(clone)) == "main"
    git(clone, "branch", "-q", "-D", "main")
    git(clone, "branch", "-q", "main/old")  # not a branch named main
    assert _base_line(Repo.discover(clone), 3) == "- base branch: `master`"
    assert reviewed(Repo.discover(clone)) == "master"
    git(clone, "checkout", "-q", "-b", "topic")
    git(clone, "branch", "-q", "-D", "master", "release/2.x", "main/old")  # trunk is no default
    assert _base_line(Repo.discover(clone), 4) == "- base branch: `(not set)`"
    assert reviewed(Repo.discover(clone)) == "(not set)"


def test_excerpts_are_exact_and_labelled_with_lines_and_hash(tmp_path: Path) -> None:
    import hashlib

    repo = _repo(tmp_path)
    res = build_capsule(repo, "Lower the default of max_retries")
    rel = [x for x in res.manifest["relevant"] if x["path"] == "docs/retries.md"][0]
    lines = RETRY.splitlines(keepends=True)
    exact = "".join(lines[rel["start"] - 1 : rel["end"]])
    assert exact in res.text
    assert rel["sha256"] == hashlib.sha256(exact.encode()).hexdigest()
    assert f"lines {rel['start']}-{rel['end']} · sha256 {rel['sha256']}" in res.text


def test_baseline_counts_every_context_file_and_nothing_else(tmp_path: Path) -> None:
    # "read every context file": the files themselves, not .gitpilot.toml (issue 12)
    repo = _repo(tmp_path)
    task = "Lower the default of max_retries"
    res = build_capsule(repo, task)
    expected = sum(len(t) for t in (AGENTS, CONTRIB, RETRY, CHANGELOG))
    assert res.baseline_bytes == expected


def test_keyword_sections_come_from_rule_files_only(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    res = build_capsule(repo, "Rename the logger")
    mandatory = res.text[res.text.index("## Mandatory sections") : res.text.index("## Relevant sections")]
    assert "Report to sec@example.com." in mandatory
    assert "Patched a token leak." not in mandatory  # CHANGELOG is documentation, not a rule file


def test_mandatory_material_is_never_cut_to_the_budget(tmp_path: Path) -> None:
    long_rules = "# Agent guide\n\n" + "".join(f"Rule {i}: keep line {i} exactly.\n" for i in range(900))
    toml = TOML + "\n[leanloop.context]\nmax_excerpt_bytes = 500\nmax_section_bytes = 200\n"
    repo = _repo(tmp_path, {"AGENTS.md": long_rules, ".gitpilot.toml": toml})
    res = build_capsule(repo, "Lower the default of max_retries")
    assert long_rules in res.text
    assert "Report to sec@example.com." in res.text


def test_every_kind_of_always_include(tmp_path: Path) -> None:
    toml = TOML + (
        '\n[leanloop.context]\nalways_include = ["docs/style.md", "docs/ops.md#Deploy windows", '
        '"docs/missing.md"]\n'
    )
    repo = _repo(
        tmp_path,
        {
            ".gitpilot.toml": toml,
            "docs/style.md": "# Style\n\nTabs, never spaces.\n",
            "docs/ops.md": "# Ops\n\n## Deploy windows\n\nOnly on Tuesdays.\n\n"
            "### Freeze\n\nNo deploys in December.\n\n"
            "## Paging\n\nPage the on-call.\n",
            "docs/notes.md": "# Notes\n\nFiller.\n\n<!-- pilot:always -->\n"
            "Always run the linter.\n<!-- /pilot:always -->\n",
            "docs/legacy.md": "# Legacy\n\n<!-- autopilot:always -->\n"
            "Legacy rule kept.\n<!-- /autopilot:always -->\n",
        },
    )
    res = build_capsule(repo, "Rename the logger")
    mandatory = res.text[res.text.index("## Mandatory sections") : res.text.index("## Relevant sections")]
    assert "Tabs, never spaces." in mandatory
    assert "Only on Tuesdays." in mandatory and "No deploys in December." in mandatory  # with subsections
    assert "Page the on-call." not in mandatory
    assert "Always run the linter." in mandatory and "Legacy rule kept." in mandatory
    assert "`docs/missing.md`: always_include entry not found" in res.text


def test_nested_instruction_files_apply_to_the_paths_the_task_names(tmp_path: Path) -> None:
    extra = {
        "services/billing/AGENTS.md": "# Billing rules\n\nAmounts are integer cents.\n",
        "services/search/AGENTS.md": "# Search rules\n\nReindex after schema changes.\n",
        "services/billing/invoice.py": "x = 1\n",
    }
    repo = _repo(tmp_path, extra)
    res = build_capsule(repo, "Fix rounding in services/billing/invoice.py")
    mandatory = res.text[res.text.index("## Mandatory sections") : res.text.index("## Relevant sections")]
    assert "Amounts are integer cents." in mandatory
    assert "Reindex after schema changes." not in mandatory
    res2 = build_capsule(repo, "Tune the search ranking weights")
    assert "Reindex after schema changes." in res2.text  # the directory named as a word


def test_memory_is_listed_by_hash_not_repeated(tmp_path: Path) -> None:
    import hashlib

    style = "# Style\n\nUse dataclasses.\n"
    repo = _repo(tmp_path, {".claude/rules/style.md": style, ".claude/CLAUDE.md": "# Local\n\nBe brief.\n"})
    res = build_capsule(repo, "Use dataclasses in the config loader")
    memory = res.text[res.text.index("## Agent memory") : res.text.index("## Instruction files")]
    assert f"`.claude/rules/style.md` · sha256 {hashlib.sha256(style.encode()).hexdigest()}" in memory
    assert "`.claude/CLAUDE.md`" in memory
    assert "Use dataclasses." not in res.text.replace(memory, "")


def test_an_import_only_or_symlinked_claude_md_includes_its_target_once(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {"CLAUDE.md": "@AGENTS.md\n"})
    res = build_capsule(repo, "Rename the logger")
    assert res.text.count("Use Python 3.11.") == 1
    assert "`CLAUDE.md` only imports `AGENTS.md`" in res.text

    root = tmp_path / "linked"
    make_repo(root, {"AGENTS.md": AGENTS})
    os.symlink("AGENTS.md", root / "CLAUDE.md")
    git(root, "add", "CLAUDE.md")
    git(root, "commit", "-qm", "link")
    res = build_capsule(Repo.discover(root), "Rename the logger")
    assert res.text.count("Use Python 3.11.") == 1
    assert "`CLAUDE.md` is a symlink to `AGENTS.md`" in res.text

    # a tracked file made a symlink in the working tree (not committed) is a symlink too
    root = tmp_path / "relinked"
    make_repo(root, {"AGENTS.md": AGENTS, "CLAUDE.md": "# Memory\n\nKeep it short.\n"})
    (root / "CLAUDE.md").unlink()
    os.symlink("AGENTS.md", root / "CLAUDE.md")
    res = build_capsule(Repo.discover(root), "Rename the logger")
    assert res.text.count("Use Python 3.11.") == 1
    assert "`CLAUDE.md` is a symlink to `AGENTS.md`" in res.text


def test_imports_of_memory_files_become_listed_memory(tmp_path: Path) -> None:
    repo = _repo(
        tmp_path,
        {
            "CLAUDE.md": "# Memory\n\nSee below.\n\n@docs/conventions.md\n",
            "docs/conventions.md": "# Conventions\n\nSnake case everywhere.\n",
        },
    )
    res = build_capsule(repo, "Rename the logger")
    memory = res.text[res.text.index("## Agent memory") : res.text.index("## Instruction files")]
    assert "`docs/conventions.md` · sha256" in memory
    roles = {s["path"]: s["roles"] for s in res.manifest["sources"]}
    assert "import" in roles["docs/conventions.md"]


def test_a_nested_instruction_file_of_the_tasks_code_area_comes_and_another_does_not(tmp_path: Path) -> None:
    # the code the task concerns (packages/ui/popup/picker.ts) is the ui package's: its rules apply
    repo = _repo(
        tmp_path,
        {
            "packages/ui/AGENTS.md": "# UI package\n\n## Rules\n\nQuery the DOM by role in tests.\n",
            "packages/ui/popup/picker.ts": "export function openPicker() {}\n",
            "packages/parser/AGENTS.md": "# Parser package\n\n## Rules\n\nNever allocate in the lexer.\n",
            "packages/parser/lexer.ts": "export const lexer = 1;\n",
            "docs/ui/popups.md": "# Popups\n\nThe field picker popup opens with Ctrl+Space and closes with Esc.\n",
            "docs/parser/lexer.md": "# Lexer\n\nTokens are byte spans.\n",
            **{f"docs/p{i}.md": f"# Page {i}\n\n" + "Colours and fonts of the dashboard.\n" * 30 for i in range(30)},
        },
    )
    res = build_capsule(repo, "The field picker popup ignores the arrow keys and Esc")
    assert "Query the DOM by role in tests." in res.text
    assert "Never allocate in the lexer." not in res.text


def test_the_left_out_list_names_a_place_once(tmp_path: Path) -> None:
    toml = TOML + "\n[leanloop.context]\nmax_excerpt_bytes = 200\n"
    extra = {
        ".gitpilot.toml": toml,
        "docs/backoff.md": "# Backoff\n\nRetry backoff doubles after each failed retry attempt.\n\n## Cap\n\n"
        "Retry backoff is capped at 60 s for every retry.\n\n## Jitter\n\nRetry backoff adds jitter to each retry.\n",
    }
    extra.update(
        {f"docs/p{i}.md": f"# Page {i}\n\n" + "Colours and fonts of the dashboard.\n" * 30 for i in range(30)}
    )
    res = build_capsule(_repo(tmp_path, extra), "Retry backoff should be capped lower")
    listed = [
        ln for ln in res.text.split("## Left out", 1)[1].splitlines() if ln.startswith("- `docs/backoff.md`")
    ]
    places = [tuple(int(x) for x in ln.split(" · lines ")[1].split(" · ")[0].split("-")) for ln in listed]
    assert listed and len(set(places)) == len(places)  # no place twice
    # and none inside another listed one: a section and its subsection are one place to look
    assert not any(a != b and b[0] <= a[0] <= a[1] <= b[1] for a in places for b in places)
    shown = {(x["start"], x["end"]) for x in res.manifest["left_out"] if x["path"] == "docs/backoff.md"}
    assert set(places) <= shown  # all in the manifest


def test_a_long_excerpt_of_many_headings_names_no_area(tmp_path: Path) -> None:
    notes = "# Migration notes\n\n" + "".join(
        f"## Add {area} table {i}\n\nMigration {i} adds the {area} table and its index.\n\n"
        for i, area in enumerate(["events", "logging", "workers", "blocks", "events", "logging", "workers", "blocks"])
    )
    extra = {
        "db/MIGRATION-NOTES.md": notes,
        **{f"packages/{a}/AGENTS.md": f"# {a}\n\n## Rules\n\nThe {a} package rule.\n" for a in ("events", "logging")},
    }
    extra.update({f"docs/p{i}.md": f"# Page {i}\n\n" + "Colours and fonts of the dashboard.\n" * 30 for i in range(30)})
    res = build_capsule(_repo(tmp_path, extra), "Add a migration with a new table index")
    assert "`db/MIGRATION-NOTES.md`" in res.text.split("## Relevant sections", 1)[1]
    assert "the area of the best matches" not in res.text
    assert "package rule" not in res.text


def test_a_directory_named_like_the_project_is_not_named_by_the_word_alone(tmp_path: Path) -> None:
    extra = {
        "src/acme/AGENTS.md": "# acme package\n\n## Rules\n\nKeep the acme core free of I/O.\n",
        "packages/ledger/AGENTS.md": "# ledger\n\n## Rules\n\nLedger amounts are integers.\n",
        **{f"docs/p{i}.md": f"# Page {i}\n\nAcme shows page {i} of the dashboard.\n" for i in range(20)},
    }
    repo = _repo(tmp_path, extra)
    text = build_capsule(repo, "Acme crashes when the ledger is empty").text
    # a word only its own area uses names it; "Acme" is on every page: it names the project
    assert "nested instruction file for `packages/ledger/`, which the task names" in text
    assert "nested instruction file for `src/acme/`" not in text
    text = build_capsule(repo, "Acme crashes in src/acme/cli.py when started twice").text
    assert "nested instruction file for `src/acme/`, which the task names" in text  # a path still does


def test_a_security_page_outside_the_policy_places_is_not_a_rule_file(tmp_path: Path) -> None:
    extra = {
        "design/ctl/security.md": "# Control plane security design\n\n## Security\n\nTokens rotate every hour.\n",
        ".github/SECURITY.md": "# Security policy\n\nReport flaws to sec@example.com.\n",
        "docs/community/contributing.md": "# Contributing\n\n## Never\n\nNever force-push to a shared branch.\n",
    }
    extra.update({f"docs/p{i}.md": f"# Page {i}\n\n" + "Colours and fonts of the dashboard.\n" * 30 for i in range(30)})
    res = build_capsule(_repo(tmp_path, extra), "The export button downloads an empty CSV file")
    mandatory = res.text[res.text.index("## Mandatory sections") : res.text.index("## Relevant sections")]
    assert "Report flaws to sec@example.com." in mandatory  # the policy, where GitHub reads it
    assert "Never force-push to a shared branch." in mandatory  # a contributing guide anywhere
    assert "Tokens rotate every hour." not in res.text  # a design note named security.md


def test_a_long_nested_instruction_file_of_an_inferred_area_is_not_made_mandatory(tmp_path: Path) -> None:
    long_rules = "# UI package\n\n" + "".join(f"## Rule {i}\n\nUI rule number {i} about widgets.\n\n" for i in range(150))
    extra = {
        "packages/ui/AGENTS.md": long_rules,
        "docs/ui/popups.md": "# Popups\n\nThe field picker popup opens with Ctrl+Space and closes with Esc.\n",
    }
    extra.update({f"docs/p{i}.md": f"# Page {i}\n\n" + "Colours and fonts of the dashboard.\n" * 30 for i in range(30)})
    res = build_capsule(_repo(tmp_path, extra), "The field picker popup ignores Ctrl+Space")
    assert len(long_rules.encode()) > 4000
    assert "the area of the best matches" not in res.text  # too long to be shown whole on a guess


def test_a_byte_identical_copy_of_an_instruction_file_is_shown_once(tmp_path: Path) -> None:
    rules = "# Rules\n\nKeep every public function documented.\n"
    res = build_capsule(_repo(tmp_path, {"AGENTS.md": rules, "CLAUDE.md": rules}), "Rename the logger")
    assert res.text.count("Keep every public function documented.") == 1
    assert "`AGENTS.md` is identical to `CLAUDE.md`" in res.text or "`CLAUDE.md` is identical to `AGENTS.md`" in res.text


def test_the_manifest_is_the_indented_sorted_json_of_its_content_byte_for_byte(tmp_path: Path) -> None:
    # manifest.json is written by a hand-made encoder (json's indenting one is slow): it must give
    # what json.dumps(..., sort_keys=True, ensure_ascii=False, indent=1) gives, on a real manifest
    # and on every kind of value json knows
    import json

    from gitpilot.context.render import manifest_bytes

    def reference(value: object) -> bytes:
        return (json.dumps(value, sort_keys=True, ensure_ascii=False, indent=1) + "\n").encode("utf-8")

    repo = _repo(tmp_path, {"docs/überblick.md": "# Überblick\n\nRetries: \"max_retries\"\tand\\back\u2028slash.\n"})
    res = build_capsule(repo, "Lower the default of max_retries (Überblick)")
    assert res.json_path is not None
    data = res.json_path.read_bytes()
    assert data == reference(json.loads(data)) == manifest_bytes(res.manifest)
    tricky = {
        "z": [1, -2, 10**30, 0.1, 1e-7, -0.0, 2.5e300, float("nan"), float("inf"), float("-inf")],
        "a": {"nested": {"deeper": [[], {}, [[{}]], (1, "two")]}, "": None},
        "é\x00\x1f\"\\\n": [True, False, None, "\u2028\x7f🙂", ""],
        "ints only": [3, 1, 2],
        "empty": {},
    }
    assert manifest_bytes(tricky) == reference(tricky)
    assert manifest_bytes({1: "a non-string key"}) == reference({1: "a non-string key"})  # left to json
