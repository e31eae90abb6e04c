"""The capsule's document-first selection, rule by rule, on small repositories built in tmp_path:
document kinds, front-matter scopes, the task's area from the code, a guide's procedure, changelog
damping in every layout, and .claude/rules for an agent that does not load them."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import DISCOVERY_FILES, make_repo, run_pilot

from gitpilot.context import frontmatter
from gitpilot.context.doctypes import frozen_copies, is_fragment, kind_of
from gitpilot.context.links import linked_documents
from gitpilot.context.runner import build_capsule
from gitpilot.repo import Repo


def _filler(n: int = 30) -> dict[str, str]:
    return {
        f"docs/guide/page{i}.md": f"# Page {i}\n\n## Overview {i}\n\n"
        + "".join(f"Paragraph {j} of page {i} describes the dashboard layout and colours.\n" for j in range(12))
        for i in range(n)
    }


def _relevant(text: str) -> str:
    return text[text.index("## Relevant sections") : text.index("## Left out")]


def _build(tmp_path: Path, files: dict[str, str], task: str, agent: str | None = None) -> str:
    root = make_repo(tmp_path / "repo", {**files, **_filler()})
    return build_capsule(Repo.discover(root), task, use_cache=False, agent=agent).text


# --- document kinds --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        (".claude/rules/testing.md", "agent_rule"),
        (".cursor/rules/style.mdc", "agent_rule"),
        (".github/instructions/api.instructions.md", "agent_rule"),
        (".github/copilot-instructions.md", "agent_rule"),
        (".continue/agents/cli-output.md", "agent_rule"),
        (".claude/skills/release/SKILL.md", "agent_skill"),
        (".agents/skills/changeset/format.md", "agent_skill"),
        ("skills/add-provider/SKILL.md", "agent_skill"),
        (".changeset/README.md", "process"),
        ("CONTRIBUTING.md", "contrib"),
        ("crates/std/CONTRIBUTING.md", "contrib"),
        ("contributing/releases.md", "contrib"),
        ("devdocs/rust_style.md", "contrib"),
        ("docs/README.md", "contrib"),
        ("SECURITY.md", "policy"),
        ("AI_POLICY.md", "policy"),
        ("docs/reference/policies/versioning.md", "policy"),  # a directory of the project's policies
        ("governance/voting.md", "policy"),
        ("examples/support-bot/policies/scheduling_hold_policy.md", "example"),  # an example's own
        ("examples/bot/SECURITY.md", "example"),
        ("architecture/provider-abstraction.md", "design"),
        ("docs/adr/0001-record.md", "design"),
        ("examples/demo/README.md", "example"),
        ("docs/reference/cli.md", "reference"),
        ("README.md", "root"),
        ("LICENSE.md", "root"),
        ("AGENTS.md", "root"),
        ("examples/todomvc/.github/agents/test-generator.agent.md", "example"),
        ("docs/examples/CONTRIBUTING.md", "contrib"),
        ("MIGRATION_GUIDE.md", "project"),
        ("VERSIONING.md", "project"),
        ("Dependencies.md", "project"),
        ("docs/EXPERIMENTAL.md", "project"),
        ("docs/BUG-BOUNTY.md", "project"),
        ("docs/libcurl/opts/CURLOPT_PROXY.md", "userdoc"),
        ("docs/release.md", "userdoc"),
        ("TESTING.md", "contrib"),
        ("REVIEW.md", "contrib"),
        ("RELEASE.md", "project"),
        ("RELEASING.md", "project"),
        ("Releases.md", "changelog"),
        ("RELEASE_NOTES.md", "changelog"),
        ("ARCHITECTURE.md", "design"),
        ("docs/guides/testing.md", "userdoc"),
        ("docs/usage/lockfile.md", "userdoc"),
        ("discovery/README.md", "area"),
        ("api_spec/VERSIONING.md", "area"),
        (".github/ISSUE_TEMPLATE/bug_report.md", "automation"),
        (".github/ISSUE_TEMPLATE.md", "automation"),
        (".github/DISCUSSION_TEMPLATE/ideas.md", "automation"),
        (".github/workflows/pr-review.md", "automation"),
        (".github/workflows/shared/prompts/bug-hunter.md", "automation"),
        (".github/workflows/README.md", "contrib"),
        (".github/pull_request_template.md", "contrib"),
        ("src/agents/memory/prompts/summary.md", "asset"),
        ("packages/cli-core/src/tools/skills/cli/SKILL.md", "asset"),
        ("crates/mcp/src/instructions.md", "asset"),
        ("prompts/system.md", "asset"),
        ("packages/astro/src/core/errors/README.md", "area"),
        ("docs/src/api/class-mouse.md", "reference"),
    ],
)
def test_document_kinds_come_from_the_path(path: str, kind: str) -> None:
    assert kind_of(path) == kind


@pytest.mark.parametrize(
    "path",
    [
        "CHANGELOG.md",
        "packages/core/CHANGELOG.md",
        "HISTORY.md",
        "NEWS.md",
        "RELEASE_NOTES.md",
        "release-notes.md",
        "changelogs/1.2.0.md",
        "changelog/2024-06.md",
        "docs/releases/v3.md",
        "docs/website/docs/release-notes/1.13.md",
        "blog/2024-01-02-launch.md",
        "changes/4711.feature.md",
        "release notes/v0.30.0.md",
        "docs/Release Notes.md",
    ],
)
def test_release_history_is_a_changelog_in_every_layout(path: str) -> None:
    assert kind_of(path) == "changelog"


def test_an_issue_template_is_not_how_a_change_is_made(tmp_path: Path) -> None:
    """An issue form and a CI bot's prompt share a task's words (a bug, a stack trace, a checklist)
    but say nothing of how to make the change: the contributor guide's section comes before them."""
    form = "".join(
        f"## Bug report field {i}\n\nDescribe the bug: the stack trace, the crash, the error message. "
        "Check the checklist before you file the bug.\n\n" for i in range(8)
    )
    files = {
        "AGENTS.md": "# Guide\n\nKeep diffs small.\n",
        ".github/ISSUE_TEMPLATE/bug_report.md": "# Bug report\n\n" + form + "## Checklist\n\n- [ ] I searched for a "
        "similar issue\n- [ ] I wrote a commit message\n",
        ".github/workflows/bug-hunter.md": "# Bug hunter\n\n" + form.replace("field", "step"),
        "CONTRIBUTING.md": "# Contributing\n\n## Regressions\n\nA fix comes with its regression test first; "
        "a message must say what to do next.\n",
    }
    text = _build(tmp_path, files, "The export command crashes with a stack trace and an unhelpful error message")
    relevant = _relevant(text)
    first = relevant.index("A fix comes with its regression test first")
    assert first < relevant.find("Describe the bug: the stack trace")


def test_a_change_fragment_is_no_candidate_but_its_directory_readme_is() -> None:
    assert is_fragment(".changeset/brave-lions-sing.md") and is_fragment("news/123.feature.md")
    assert not is_fragment(".changeset/README.md") and not is_fragment("docs/news.md")


def test_a_changeset_readme_is_a_candidate_and_its_fragments_are_not_context(tmp_path: Path) -> None:
    files = {
        "AGENTS.md": "# Guide\n\nKeep diffs small.\n",
        ".changeset/README.md": "# Changesets\n\n## Version types\n\nA bug fix is a patch; a new option is "
        "a minor bump.\n",
        ".changeset/brave-lions-sing.md": "---\n\"pkg\": patch\n---\n\nFix the version types of the bump.\n",
        "src/bump.ts": "export function bump() {}\n",
    }
    root = make_repo(tmp_path / "repo", {**files, **_filler()})
    res = build_capsule(Repo.discover(root), "Record the version bump for this fix", use_cache=False)
    assert "A bug fix is a patch; a new option is a minor bump." in _relevant(res.text)
    assert "Fix the version types of the bump." not in res.text
    paths = {r["path"] for r in res.manifest["sources"]}
    assert ".changeset/README.md" in paths and ".changeset/brave-lions-sing.md" not in paths


def test_a_frozen_copy_needs_a_current_twin() -> None:
    paths = ["docs/x.md", "docs/v2/x.md", "docs/v2/only.md", "versioned_docs/version-1.4/y.md"]
    assert frozen_copies(paths) == {"docs/v2/x.md"}


def test_front_matter_says_what_a_file_is_for_and_where_it_applies() -> None:
    claude = frontmatter.parse(
        ["---\n", "paths:\n", '  - "dlt/**/*.py"\n', "  - tests/**\n", "---\n", "# Rules\n"]
    )
    assert claude.scopes == ("dlt/**/*.py", "tests/**") and claude.text == ""
    cursor = frontmatter.parse(["---\n", "description: Styling rules\n", "globs: src/**/*.tsx, src/**/*.css\n",
                                "alwaysApply: false\n", "---\n"])
    assert cursor.text == "Styling rules" and cursor.scopes == ("src/**/*.tsx", "src/**/*.css")
    assert not cursor.always
    copilot = frontmatter.parse(["---\n", 'applyTo: "**/*.go"\n', "---\n"])
    assert copilot.scopes == ("**/*.go",)
    skill = frontmatter.parse(["---\n", "name: changeset\n", "description: >\n", "  Create a changeset\n",
                               "  for every PR.\n", "---\n"])
    assert skill.text == "Create a changeset for every PR. changeset" and not skill.scoped
    assert frontmatter.parse(["# No front matter\n"]) == frontmatter.NONE
    assert frontmatter.parse(["---\n", "name: never closed\n"]) == frontmatter.NONE


def test_documents_the_rule_files_point_to_are_linked() -> None:
    pointers = {
        "AGENTS.md": "Read `docs/dev/testing.md` and [the ADRs](architecture/) first. See https://x.io/y.md.",
        "crates/std/CONTRIBUTING.md": "See [design](./design.md).",
    }
    cands = ["docs/dev/testing.md", "architecture/a.md", "architecture/b.md", "crates/std/design.md", "docs/other.md"]
    assert linked_documents(pointers, cands) == {
        "docs/dev/testing.md", "architecture/a.md", "architecture/b.md", "crates/std/design.md"
    }


# --- the task's area from the code -------------------------------------------------------------


def test_an_identifier_the_task_names_finds_the_directory_that_defines_it(tmp_path: Path) -> None:
    text = _build(tmp_path, DISCOVERY_FILES, "Add a `RefreshInterval` option to our new inventory source")
    # no word of the task is in discovery/README.md; RefreshInterval is defined under discovery/
    assert "Every mechanism implements the Discoverer interface" in _relevant(text)
    assert "code area" in _relevant(text)
    assert "Blocks are two hours long." not in text


def test_a_directory_is_about_what_it_is_named_for(tmp_path: Path) -> None:
    """``src/errors/`` holds ``codes.ts`` and ``format.ts``: no file name says "error", the
    directory's does, so a task about an error finds the directory's README."""
    from gitpilot.context import area
    from gitpilot.context.query import query_weights

    code = ["src/errors/codes.ts", "src/errors/format.ts", "src/render/engine.ts", "src/render/passes.ts"]
    bags = area.word_bags(code, ["src/errors", "src/render"])
    assert bags["src/errors"].get("error") == 2 and "error" not in bags["src/render"]
    got = area.scores(bags, query_weights("Show a proper error when the engine fails"), {})
    assert got.scores["src/errors"] > got.scores.get("src/render", 0.0)
    repo = {
        "AGENTS.md": "# Guide\n\nKeep diffs small.\n",
        "src/errors/README.md": "# Messages\n\n## Shape\n\nEvery message has a code, a title and a hint.\n",
        "src/errors/codes.ts": "export const CODES = {};\n",
        "src/errors/format.ts": "export function format() {}\n",
        "src/render/README.md": "# Rendering\n\n## Passes\n\nPages render in two passes.\n",
        "src/render/engine.ts": "export function run() {}\n",
    }
    text = _build(tmp_path, repo, "Show a proper error when rendering crashes")
    assert "Every message has a code, a title and a hint." in _relevant(text)


def test_a_documents_own_directory_name_is_a_signal() -> None:
    from gitpilot.context.features import _dir_share
    from gitpilot.context.query import query_weights

    q = query_weights("Turn the crash into a proper error for the C API")
    assert _dir_share("packages/astro/src/core/errors/README.md", q, {}, 10) == 1.0
    assert _dir_share("api_spec/README.md", q, {}, 10) == 0.5  # "api" of "api spec"
    assert _dir_share("src/docs/README.md", q, {}, 10) == 0.0  # generic directories say nothing: none left
    assert _dir_share("README.md", q, {}, 10) == 0.0
    assert _dir_share("crates/nu-std/CONTRIBUTING.md", q, {}, 10) == 0.0
    # a word in most candidates' paths (the project's own name) counts for little
    assert _dir_share("src/errors/README.md", q, {"error": 9}, 10) == pytest.approx(0.1)
    # a synonym of a task word is weaker than the word ("failure" for "crash")
    assert 0 < _dir_share("src/failures/README.md", q, {}, 10) < 1.0


def test_a_directory_name_share_is_the_same_number_in_every_process() -> None:
    """The words of a directory's name are summed in the name's order, not a set's: a set of
    strings iterates in an order that changes with each process's string hashing, and a sum of
    floats in another order can differ in its last bit (0.1 + 0.2 + 0.3 is not 0.3 + 0.2 + 0.1)."""
    import os
    import subprocess
    import sys

    import gitpilot

    code = ("from gitpilot.context.features import _dir_share; "
            "print(repr(_dir_share('alpha-beta-gamma/README.md', "
            "{'alpha': 0.1, 'beta': 0.2, 'gamma': 0.3}, {}, 10)))")
    root = os.path.dirname(os.path.dirname(os.path.abspath(gitpilot.__file__)))
    seen = set()
    for seed in range(12):
        env = {**os.environ, "PYTHONHASHSEED": str(seed), "PYTHONPATH": root}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        seen.add(out.stdout.strip())
    assert seen == {repr((0.1 + 0.2 + 0.3) / 3)}


def test_the_area_is_the_directory_particular_to_the_task() -> None:
    """A package holding many directories holds all their words and names; the task's area is the
    directory where they are concentrated (``models/`` with its model files), not the package."""
    from gitpilot.context import area
    from gitpilot.context.query import query_weights

    code = [f"pkg/models/{n}.py" for n in ("openai", "cerebras", "groq", "mistral")]
    code += [f"pkg/{d}/{n}.py" for d in ("ui", "tools", "graph", "evals") for n in ("run", "state", "view", "misc")]
    dirs = ["pkg", "pkg/models", "pkg/ui"]
    bags = area.word_bags(code, dirs)
    assert {d: b[area.FILES] for d, b in bags.items()} == {"pkg": 20, "pkg/models": 4, "pkg/ui": 4}
    q = query_weights("Cerebras models reject the penalty settings")
    found = {"CerebrasModel": ["pkg/models/cerebras.py", "pkg/ui/view.py"]}
    got = area.scores(bags, q, found)
    assert got.scores["pkg/models"] == 1.0 > got.scores["pkg"]
    # a word most candidate documents use says nothing of an area
    common = area.scores(bags, query_weights("models"), {}, (), {"model": 1.0})
    assert common.scores == {}


def test_a_link_most_candidates_have_is_weak_evidence() -> None:
    """An instruction file that links every document says little about which one a task needs:
    the ``linked`` signal is worth the share of candidates that are not linked."""
    from gitpilot.context.features import Doc, signals
    from gitpilot.context.markdown import parse, split_lines
    from gitpilot.context.query import query_weights
    from gitpilot.context.select import prepared

    def doc(path: str, text: str, linked: bool) -> Doc:
        return prepared(Doc(path, parse(text), split_lines(text), linked=linked))

    q = query_weights("retry the upload")
    few = [doc("a.md", "# A\n\nretry the upload\n", True)] + [
        doc(f"d{i}.md", "# D\n\nother text\n", False) for i in range(3)
    ]
    many = [doc("a.md", "# A\n\nretry the upload\n", True)] + [
        doc(f"d{i}.md", "# D\n\nother text\n", True) for i in range(3)
    ]
    assert signals(few, q, [], {}, {}, [])[0].values["linked"] == 0.75
    assert signals(many, q, [], {}, {}, [])[0].values["linked"] == 0.0


def test_a_tools_configuration_directory_is_never_the_area(tmp_path: Path) -> None:
    """CI workflows named for what they run (``.github/workflows/release.yml``) do not make
    ``.github/`` the area of a release task: its pull-request template is not promoted."""
    from gitpilot.context import area
    from gitpilot.redact import is_credential_filename

    files = [".github/workflows/release.yml", ".circleci/config.yml", "src/release/publish.py",
             "integration_tests/test_release.py", "e2e/release.spec.ts", "src/release/unit-tests/test_tag.py"]
    assert area.code_files(files, is_credential_filename) == ["src/release/publish.py"]
    assert area.doc_dirs([".github/PULL_REQUEST_TEMPLATE.md", "src/release/README.md"]) == ["src/release"]
    repo = {
        "AGENTS.md": "# Guide\n\nKeep diffs small.\n",
        ".github/PULL_REQUEST_TEMPLATE.md": "# Pull request\n\n- [ ] I added a test\n",
        ".github/workflows/release.yml": "name: release\non: push\n",
        ".github/workflows/release-nightly.yml": "name: release nightly\non: push\n",
        "src/release/README.md": "# Publishing\n\n## Tags\n\nEvery tag is signed by the release key.\n",
        "src/release/publish.py": "def publish():\n    pass\n",
    }
    root = make_repo(tmp_path / "repo", {**repo, **_filler()})
    got = build_capsule(Repo.discover(root), "Make the nightly release skip unsigned tags", use_cache=False)
    relevant = _relevant(got.text)
    assert "Every tag is signed by the release key." in relevant
    # the template may come as how a change is recorded, never as the task's code area
    why = [ln for ln in relevant.splitlines() if ln.startswith("lines ") and "code area" in ln]
    assert len(why) == 1 and relevant.index(why[0]) < relevant.index("Every tag is signed")
    assert "`.github/PULL_REQUEST_TEMPLATE.md`" not in relevant.split("Every tag is signed")[0]


def test_a_credential_file_and_a_symlink_are_never_searched_for_names(tmp_path: Path) -> None:
    from gitpilot.context import area
    from gitpilot.redact import is_credential_filename

    files = ["src/app.py", "src/.env", "deploy/server.pem", "docs/x.md", "tests/test_app.py", "src/link.py"]
    code = area.code_files(files, is_credential_filename, links=["src/link.py"])
    assert code == ["src/app.py"]


# --- front-matter scopes: Claude Code loads .claude/rules; Codex does not ------------------------

RULE = (
    "---\npaths:\n  - \"billing/**/*.py\"\n---\n\n# Public API\n\n## Deprecation\n\n"
    "Keep a renamed keyword working for two minor releases and warn with `DeprecationWarning`.\n"
)
OTHER_RULE = "---\npaths:\n  - \"ui/**\"\n---\n\n# UI\n\n## Colours\n\nUse the palette tokens.\n"


def _rules_repo() -> dict[str, str]:
    return {
        "AGENTS.md": "# Guide\n\nKeep diffs small.\n",
        ".claude/rules/public-api.md": RULE,
        ".claude/rules/ui.md": OTHER_RULE,
        "billing/invoices.py": "def total(amount_cents):\n    return amount_cents\n",
        "ui/theme.ts": "export const palette = {};\n",
    }


def test_claude_gets_its_rules_by_hash_and_is_told_which_apply(tmp_path: Path) -> None:
    text = _build(tmp_path, _rules_repo(), "Rename the `amount_cents` keyword of `total()` to `cents`")
    memory = text[text.index("## Agent memory") : text.index("## Instruction files")]
    assert "`.claude/rules/public-api.md` · sha256" in memory
    line = next(ln for ln in memory.splitlines() if "public-api.md" in ln)
    assert "applies to the files this task concerns" in line
    other = next(ln for ln in memory.splitlines() if "ui.md" in ln)
    assert "applies" not in other
    assert "Keep a renamed keyword working" not in text  # Claude Code loads it itself


def _mandatory(text: str) -> str:
    return text[text.index("## Mandatory sections") : text.index("## Relevant sections")]


def test_codex_gets_the_text_of_the_rules_that_apply(tmp_path: Path) -> None:
    text = _build(tmp_path, _rules_repo(), "Rename the `amount_cents` keyword of `total()` to `cents`",
                  agent="codex")
    memory = text[text.index("## Agent memory") : text.index("## Instruction files")]
    assert ".claude/rules/public-api.md" not in memory  # nothing loads it for Codex
    # Claude Code would load it on reading billing/invoices.py: Codex gets it whole, whatever it scores
    mandatory = _mandatory(text)
    assert "Keep a renamed keyword working for two minor releases" in mandatory
    assert "a Claude Code rule for `billing/**/*.py`, which covers `billing/invoices.py`" in mandatory
    assert "Use the palette tokens." not in text


def test_codex_gets_the_rules_claude_code_loads_for_every_task(tmp_path: Path) -> None:
    files = {**_rules_repo(), ".claude/rules/commits.md": "# Commits\n\nSign every commit off with `-s`.\n"}
    text = _build(tmp_path, files, "Rename the `amount_cents` keyword of `total()` to `cents`", agent="codex")
    assert "Sign every commit off with `-s`." in _mandatory(text)
    claude = _build(tmp_path / "claude", files, "Rename the `amount_cents` keyword of `total()` to `cents`")
    assert "Sign every commit off with `-s`." not in claude  # Claude Code loads it itself


def test_a_rule_applies_where_the_task_works_not_wherever_its_words_are(tmp_path: Path) -> None:
    """The task's names are found in many directories; a path-scoped rule applies to the directory
    the task concerns most, not to every file that mentions one of its words."""
    files = {
        **_rules_repo(),
        ".claude/rules/cli.md": "---\npaths:\n  - \"cli/**\"\n---\n\n# CLI\n\n## Output\n\nPrint with `echo()`.\n",
        # a common name of the task (``total``, in thirty files) in a file of another directory
        "cli/report.py": "def report(rows):\n    return total(rows)\n",
        **{f"stats/m{i}.py": f"def f{i}(rows):\n    return total(rows)\n" for i in range(30)},
        "billing/credit.py": "from billing.invoices import total\n\ndef credit(amount_cents):\n    return -total(amount_cents)\n",
    }
    task = "Rename the `amount_cents` keyword of `total()` to `cents`"
    codex = _build(tmp_path, files, task, agent="codex")
    assert "Keep a renamed keyword working" in _mandatory(codex)
    assert "Print with `echo()`." not in _mandatory(codex)
    claude = _build(tmp_path / "claude", files, task)
    memory = claude[claude.index("## Agent memory") : claude.index("## Instruction files")]
    line = next(ln for ln in memory.splitlines() if "cli.md" in ln)
    assert "applies" not in line
    assert "applies to the files this task concerns" in next(ln for ln in memory.splitlines() if "public-api.md" in ln)


def test_the_capsule_command_takes_the_agent(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", {**_rules_repo(), **_filler()})
    task = "Rename the `amount_cents` keyword of `total()` to `cents`"
    claude = run_pilot("capsule", "--task", task, "--print", cwd=root)
    codex = run_pilot("capsule", "--task", task, "--print", "--agent", "codex", cwd=root)
    assert claude.returncode == 0 and codex.returncode == 0
    assert "Keep a renamed keyword working" not in claude.stdout
    assert "Keep a renamed keyword working" in codex.stdout
    # each served again from its own stamp, never the other's
    assert run_pilot("capsule", "--task", task, "--print", cwd=root).stdout == claude.stdout
    again = run_pilot("capsule", "--task", task, "--print", "--agent", "codex", cwd=root)
    assert again.stdout == codex.stdout
    bad = run_pilot("capsule", "--task", task, "--agent", "nobody", cwd=root)
    assert bad.returncode == 2


# --- a guide's procedure, together --------------------------------------------------------------


def test_a_guides_steps_come_together(tmp_path: Path) -> None:
    steps = "".join(
        f"### Step {i}: {name}\n\n" + f"For a new integration, {name.lower()} as the template shows. " * 6 + "\n\n"
        for i, name in enumerate(["Create the module", "Register it", "Write the tests", "Add the docs page"], 1)
    )
    guide = (
        "# Contributing\n\n## Adding a new integration\n\nFollow these steps in order.\n\n" + steps
        + "".join(f"## Other topic {i}\n\n" + "Unrelated maintainer notes. " * 40 + "\n\n" for i in range(12))
    )
    text = _build(tmp_path, {"AGENTS.md": "# Guide\n\nKeep diffs small.\n", "CONTRIBUTING.md": guide},
                  "Support the Acme queue as a new integration")
    relevant = _relevant(text)
    for name in ("Create the module", "Register it", "Write the tests", "Add the docs page"):
        assert name in relevant
    assert "Unrelated maintainer notes." not in relevant


# --- changelog damping ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "log_path", ["CHANGELOG.md", "changelogs/2.3.0.md", "docs/releases/2.3.md", "HISTORY.md"]
)
def test_release_notes_do_not_crowd_out_the_page_that_explains(tmp_path: Path, log_path: str) -> None:
    notes = "# 2.3.0\n\n" + "".join(f"- Fixed retry backoff bug {i} in the webhook sender.\n" for i in range(40))
    files = {
        "AGENTS.md": "# Guide\n\nKeep diffs small.\n",
        log_path: notes,
        "docs/webhooks.md": "# Webhooks\n\n## Retries\n\nFailed webhooks are retried with exponential backoff, "
        "at most five times.\n",
    }
    text = _build(tmp_path, files, "Webhook retries should use a longer backoff")
    relevant = _relevant(text)
    assert "Failed webhooks are retried with exponential backoff" in relevant
    assert "Fixed retry backoff bug 3" not in relevant


@pytest.mark.parametrize(
    ("path", "headings", "kind"),
    [
        ("docs/releases.md", ["Releases", "Release cycle", "Supported versions", "Patching"], "userdoc"),
        ("RELEASES.md", ["Releases", "npm packages", "Prerelease", "Stable release"], "project"),
        ("docs/architecture/history-service.md", ["History service", "Events", "Replication"], "design"),
        ("docs/releases.md", ["Releases", "v2.1.0", "v2.0.0"], "changelog"),
        ("NEWS.md", ["News", "Release v2.26.0 (2025-06-01)", "Features", "Bug fixes"], "changelog"),
        ("HISTORY.md", ["History", "Unreleased", "Fixes", "Features"], "changelog"),
        ("CHANGES.md", [], "changelog"),  # (no headings to tell by: its name decides)
        ("CHANGELOG.md", ["Packages", "Providers", "Integrations"], "changelog"),  # (never another thing)
    ],
)
def test_a_page_named_releases_or_history_is_the_history_only_when_its_headings_name_versions(
    path: str, headings: list[str], kind: str
) -> None:
    assert kind_of(path, False, headings) == kind


def test_the_page_on_how_releases_are_cut_is_not_damped_as_release_history(tmp_path: Path) -> None:
    """``docs/releases.md`` that says how a hotfix is released is the page a release task needs; a
    ``NEWS.md`` of versions with the same words is release history and stays out."""
    steps = "".join(
        f"### {i}. {name}\n\n" + f"For a hotfix patch release, {name.lower()} on the release branch. " * 5 + "\n\n"
        for i, name in enumerate(["Open the patch pull request", "Review and merge it", "Trigger the release"], 1)
    )
    releases = ("# Releases\n\n## Release cadence\n\nA stable release every week.\n\n## Patching\n\n"
                "A hotfix goes out as a patch release.\n\n" + steps)
    news = "# News\n\n" + "".join(
        f"## v1.{i}.1\n\n- Hotfix patch release: fixed the release branch trigger {i}.\n\n" for i in range(30)
    )
    files = {"AGENTS.md": "# Guide\n\nKeep diffs small.\n", "docs/releases.md": releases, "NEWS.md": news}
    for i in range(10):  # pages that share a word or two with the task: more than the capsule's documents
        files[f"docs/guide-{i}.md"] = f"# Guide {i}\n\n## Stable settings {i}\n\n" + "Settings stay stable. " * 60 + "\n"
    relevant = _relevant(_build(tmp_path, files, "Ship the crash fix to stable as a hotfix patch release"))
    assert "open the patch pull request on the release branch" in relevant
    assert "trigger the release on the release branch" in relevant
    assert "fixed the release branch trigger 3." not in relevant


# --- a document's introduction, and a short document with no room for the whole of it ------------


def test_a_chosen_documents_introduction_comes_with_its_sections(tmp_path: Path) -> None:
    sections = "".join(
        f"## Topic {i}\n\n" + f"Notes on the serializer's internal detail number {i}. " * 30 + "\n\n" for i in range(10)
    )
    spec = (
        "# Specification\n\nThe headers under `include/` are generated from this directory: never edit "
        "them by hand, run `make regenerate` instead.\n\n" + sections
        + "## Adding a function\n\nDescribe a new function of the wire API in `functions.json` with its "
        "signature and the version that adds it.\n\n" + sections.replace("Topic", "Later topic")
    )
    files = {
        "AGENTS.md": "# Guide\n\nKeep diffs small.\n",
        "wire/README.md": spec,
        "wire/encode.c": "int wire_encode_frame(void) { return 0; }\n",
    }
    relevant = _relevant(_build(tmp_path, files, "Add a wire API function that encodes a frame header"))
    assert "Describe a new function of the wire API" in relevant
    assert "never edit them by hand, run `make regenerate` instead." in relevant
    assert "internal detail number 3" not in relevant


def test_a_short_document_without_room_for_all_of_it_gives_its_best_sections(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gitpilot.context import weights

    monkeypatch.setattr(weights, "RUNNER_BYTES", 0)  # (the runners' share would hedge for it)
    guide = "# Queue guide\n\n" + "".join(
        f"## Queue topic {i}\n\nThe webhook queue retries deliveries; detail {i}. " + "More queue words. " * 12 + "\n\n"
        for i in range(6)
    )
    short = (
        "# Webhook signing\n\n## Rotating the signing secret\n\nRotate the webhook signing secret with "
        "`hooks rotate`; old signatures stay valid for a day.\n" + "A rotated secret signs new deliveries. " * 20
        + "\n\n" + "".join(f"## Unrelated part {i}\n\n" + "Colours and fonts of the dashboard. " * 12 + "\n\n"
                           for i in range(6))
    )
    files = {
        ".gitpilot.toml": "[leanloop.context]\nmax_excerpt_bytes = 4000\n",
        "AGENTS.md": "# Guide\n\nKeep diffs small.\n",
        "CONTRIBUTING.md": guide,
        "docs/signing.md": short,
        # a weaker match that fits whole in what the signing page leaves
        "docs/queue-tuning.md": "# Queue tuning\n\n" + "Webhook queue deliveries can be tuned. " * 55 + "\n",
    }
    relevant = _relevant(_build(tmp_path, files, "Webhook queue deliveries fail after rotating the signing secret"))
    assert "Rotate the webhook signing secret with `hooks rotate`" in relevant
    assert "Colours and fonts of the dashboard." not in relevant


def test_a_name_the_task_gives_does_not_make_the_rest_of_its_document_look_weak(tmp_path: Path) -> None:
    """The section that holds the task's name comes first; a section of the same guide that matches
    the task's words is compared with the best section's words, not with its words and its name."""
    filler = "".join(
        f"## Topic {i}\n\n" + f"Notes on the analyzer's internal detail number {i}. " * 30 + "\n\n" for i in range(10)
    )
    guide = (
        "# Analyzer\n\n" + filler
        + "## Rule groups\n\nThe rule `noUnusedImports` lives in the `correctness` group; a group sets the "
        "default severity of its rules.\n\n"
        + "## Placement of new rules\n\nA new rule starts in the nursery group; promoting a rule out of the "
        "nursery waits for the next minor release.\n\n" + filler.replace("Topic", "Later topic")
    )
    # user pages that match the task's words better take what the budget leaves to the runners-up
    pages = {
        f"docs/rules/page{i}.md": f"# Stable rules {i}\n\n## Promote a nursery rule {i}\n\n"
        + "A stable rule was promoted from the nursery group; a promoted rule is stable. " * 8 + "\n"
        for i in range(3)
    }
    files = {".gitpilot.toml": "[leanloop.context]\nmax_excerpt_bytes = 1500\n",
             "AGENTS.md": "# Guide\n\nKeep diffs small.\n", "crates/analyzer/CONTRIBUTING.md": guide,
             "crates/analyzer/src/rules.rs": "pub fn noUnusedImports() {}\n", **pages}
    relevant = _relevant(_build(tmp_path, files, "Promote `noUnusedImports` from the nursery group to a stable rule"))
    assert "The rule `noUnusedImports` lives in the `correctness` group" in relevant
    assert "promoting a rule out of the nursery waits for the next minor release" in relevant
