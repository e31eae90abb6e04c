"""What kind of document a Markdown file is, from its path and roles alone.

The kind is the document-type prior of the capsule's score (``weights.KIND``): what a task needs
is far more often in a contributor guide, an agent's rule or skill file, or the README of the code
directory it concerns than in end-user pages, generated reference, examples or release notes. The
kinds, in the order they are tried:

- ``nested``: an AGENTS.md/CLAUDE.md below the root (it governs its directory);
- ``agent_rule``: a rule file written for coding agents (``.claude/rules/``, ``.cursor/rules/``,
  ``.github/instructions/``, ``.github/copilot-instructions.md``, ``.continue/rules`` and
  ``.continue/agents``, ``.windsurf/rules``, ``.clinerules``);
- ``asset``: text the product itself ships or reads, kept in its source tree: a prompt, a skill
  or instructions the software hands to a model, a fragment its build includes
  (``src/agents/memory/prompts/summary.md``, ``packages/cli/src/skills/cli/SKILL.md``): what the
  program says, not what a contributor follows (a README, an AGENTS.md or a contributing guide
  there is the directory's own);
- ``agent_skill``: a skill and the files beside it (``.claude/skills/``, ``.agents/``, any
  ``skills/<name>/`` directory holding a ``SKILL.md``);
- ``automation``: what the repository's automation reads, not what a contributor follows: issue
  and discussion templates (a form for reporters), and the Markdown sources and prompts of CI
  workflows (``.github/workflows/*.md``: agentic workflows, a bot's prompt), a directory's README
  excepted;
- ``changelog``: release history (``CHANGELOG*``, ``HISTORY``, ``NEWS``, release notes, a
  ``changelogs/`` or ``releases/`` directory, blogs);
- ``process``: how a change is recorded (the README of a changeset or news-fragment directory);
- ``contrib``: contributor and developer documents (``CONTRIBUTING*`` anywhere, a
  ``contributing/``, ``devdocs/``, ``dev/``, ``development/``, ``internals/`` directory,
  ``HACKING``, the README of the documentation directory, which says how the docs are built);
- ``policy``: ``SECURITY*``, ``*POLICY*``, governance and conduct, and the documents of a
  ``policies/``, ``policy/`` or ``governance/`` directory (an example project's are the example's);
- ``design``: architecture, design notes, ADRs, RFCs, specs, proposals;
- ``example``: examples, demos, templates, starters, playgrounds;
- ``reference``: reference pages of the user documentation (often generated);
- ``root``: the root README (what the product is, for its users) and the legal files; a file at the root named for
  making a change is a contributor document (``TESTING.md``, ``REVIEW.md``, ``BUILDING.md``,
  ``STYLE.md``), one named for the design a design note (``ARCHITECTURE.md``): at the root, such a
  name is about the repository, not about its users;
- ``project``: a document about the project itself that no name above places: any other file at
  the root (``VERSIONING.md``, ``Dependencies.md``, ``RELEASE.md`` the release process,
  ``CODEOWNERS.md``), needed when a task is about what it says, and a file of the
  documentation tree named in capitals as such documents are (``docs/EXPERIMENTAL.md``,
  ``docs/BUG-BOUNTY.md``; not a reference page named for an identifier, ``CURLOPT_PROXY.md``);
- ``userdoc``: the user documentation tree (``docs/``, ``website/``, ``content/`` ...);
- ``area``: any other document inside the code: the area's own document (``discovery/README.md``,
  ``api_spec/VERSIONING.md``);
- ``archive``: the frozen copy of an older release's page (``docs/v2/x.md`` beside ``docs/x.md``,
  ``frozen_copies``): it states how things were.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

KINDS = (
    "nested",
    "agent_rule",
    "asset",
    "agent_skill",
    "automation",
    "changelog",
    "process",
    "contrib",
    "policy",
    "design",
    "example",
    "reference",
    "root",
    "project",
    "userdoc",
    "area",
    "archive",
)

_AGENT_RULE = re.compile(
    r"(^|/)\.(claude|cursor|windsurf|continue|clinerules|roo|kiro)/(rules|agents|steering)/"
    r"|^\.github/instructions/|(^|/)\.github/copilot-instructions\.md$|(^|/)\.clinerules(/|$)"
)
_AGENT_SKILL = re.compile(r"(^|/)(\.claude|\.agents|\.opencode|\.codex|\.github)/(skills|references|commands)/"
                          r"|(^|/)\.agents/")
_AUTOMATION = re.compile(
    r"(^|/)\.github/(\w*issue_template|discussion_template)(/|\.mdx?$)|(^|/)\.github/workflows/(.+/)?(?!readme)[^/]+$"
)
# The source tree of code (``src/``, ``lib/``), outside a documentation tree, and prompt directories.
_SOURCE_DIR = re.compile(r"(^|/)(src|lib)/")
_PROMPT_DIR = re.compile(r"(^|/)prompts?/")
_OWN_DOC = ("readme", "agents", "claude", "contributing", "changelog")
_LOG_NAME = re.compile(r"^(change[-_ ]?logs?|changes|history|news|release[-_ ]?notes?|releases)([-_. ]|$)")
# Words of release history that name other things too: the page on how releases are cut
# (``docs/releases.md``), a history service, a news feature. A file so named is the history only
# when its headings name versions (``## 1.4.0``, ``## v2.26.0 (2025-06-01)``, ``## Unreleased``).
_LOG_WORD = re.compile(r"^(changes|history|news|releases)([-_. ]|$)")
_VERSION_HEADING = re.compile(r"(?<![\w.])v?\d+\.\d+(\.\d+|\.x)?(?![\w.])|\bunreleased\b|\d{4}-\d{2}-\d{2}", re.I)
_LOG_DIR = re.compile(r"(^|/)(change[-_ ]?logs?|changes|news|release[-_ ]?notes|releases|blogs?|posts|announcements)(/|$)")
# Directories of one fragment per change (``.changeset/``, ``changelog.d/``, ``news/``): their
# README states how a fragment is written, which nearly every code change needs.
FRAGMENT_DIRS = frozenset({".changeset", ".changesets", "changelog.d", "changes.d", "newsfragments", "news", ".changes"})
_DEV_DIR = re.compile(
    r"(^|/)(contribut\w*|devdocs|dev-?docs|dev|development|developers?|hacking|internals|maintainers?|"
    r"agent[-_]docs|\.github)(/|$)"
)
_DEV_NAME = re.compile(r"^(contribut\w*|development|developing|hacking|howtos?|maintainers?|internals|"
                       r"code[-_]?style|style[-_]?guide|conventions)([-_.]|$)")
# At the root only (``docs/guides/testing.md`` tells users how to test their app): how the project
# itself is tested, reviewed, built, styled or debugged.
_ROOT_DEV_NAME = re.compile(r"^(((unit|e2e|integration)[-_]?)?test(s|ing)|(code[-_]?)?review(s|ing)?|build(ing)?|style|"
                            r"debugging)([-_.]|$)")
_ROOT_DESIGN_NAME = re.compile(r"^(architecture|design)([-_.]|$)")
# The root's product description and legal files.
_ROOT_NAME = re.compile(r"^(readme|license|licence|copying|notice|authors|contributors|patents|third[-_]party|"
                        r"agents|claude|gemini)([-_.]|$)")
# A name in capitals (words joined by hyphens): how a project names its documents about itself.
_CAPS_NAME = re.compile(r"^[A-Z]{2,}(-[A-Z]{2,})*\.[A-Za-z]+$")
_POLICY_NAME = re.compile(r"^(security|governance|code[-_]of[-_]conduct)([-_.]|$)|policy")
_POLICY_DIR = re.compile(r"(^|/)(policies|policy|governance)(/|$)")
_DESIGN_DIR = re.compile(r"(^|/)(architecture|design|designs|adrs?|rfcs?|specs?|proposals?|decisions|notes)(/|$)")
_EXAMPLE_DIR = re.compile(r"(^|/)(examples?|demos?|templates?|playgrounds?|samples?|starters?|boilerplates?|"
                          r"cookbooks?|recipes)(/|$)")
_USER_ROOT = re.compile(r"^(docs?|documentation|website|site|content|guides?|book|manual|pages|www|apps/docs)(/|$)")
_REFERENCE_DIR = re.compile(r"(^|/)(reference|references|api|api-reference|generated)(/|$)")
_DOC_DIRS = frozenset({"docs", "doc", "documentation", "website"})


def log_word(path: str) -> bool:
    """Whether ``path``'s name is a word of release history that names other things too
    (``history.md``, ``RELEASES.md``): its headings decide (``kind_of``)."""
    return bool(_LOG_WORD.search(path.lower().rpartition("/")[2]))


def kind_of(path: str, nested: bool = False, headings: Sequence[str] | None = None) -> str:
    """The document kind of ``path`` (one of ``KINDS``); ``nested`` for an AGENTS.md/CLAUDE.md below
    the root; ``headings``, the document's heading titles, where its name is a ``log_word``: three
    or more headings none of which names a version are not a history."""
    if nested:
        return "nested"
    low = path.lower()
    directory, _, base = low.rpartition("/")
    if _AGENT_RULE.search(low):
        return "agent_rule"
    if (_SOURCE_DIR.search(directory + "/") or _PROMPT_DIR.search(directory + "/")) and not base.startswith(_OWN_DOC) \
            and not _USER_ROOT.search(directory) and not low.startswith("."):
        return "asset"
    if _AGENT_SKILL.search(low) or ("skills/" in low and _in_skill_dir(low)):
        return "agent_skill"
    if _AUTOMATION.search(low):
        return "automation"
    if directory.rsplit("/", 1)[-1] in FRAGMENT_DIRS and base.startswith("readme"):
        return "process"
    if directory == "" and _ROOT_DEV_NAME.search(base):
        return "contrib"
    if directory == "" and _ROOT_DESIGN_NAME.search(base):
        return "design"
    if _LOG_DIR.search(directory) or (
        _LOG_NAME.search(base)
        and not (base.startswith("release") and _DEV_DIR.search(directory))  # contributing/releases.md: a guide
        and not (headings is not None and len(headings) >= 3 and _LOG_WORD.search(base)
                 and not any(_VERSION_HEADING.search(h) for h in headings))
    ):
        return "changelog"
    if _DEV_NAME.search(base):
        return "contrib"
    dev, example = _DEV_DIR.search(directory), _EXAMPLE_DIR.search(directory)
    if dev and not (example and example.start() < dev.start()):
        return "contrib"  # (an example project's own .github/ or docs/dev/ is the example's, below)
    if directory in _DOC_DIRS and base.startswith("readme"):
        return "contrib"  # the documentation's own README: how the docs are written and built
    if (_POLICY_NAME.search(base) or _POLICY_DIR.search(directory)) and not example:
        return "policy"  # (an example project's policies are the example's, below)
    if _DESIGN_DIR.search(directory):
        return "design"
    if _EXAMPLE_DIR.search(directory):
        return "example"
    if directory == "":
        return "root" if _ROOT_NAME.search(base) else "project"
    if _USER_ROOT.search(directory) or "/docs/" in f"/{directory}/":
        if _CAPS_NAME.match(path.rsplit("/", 1)[-1]) and not base.startswith(("readme", "index")):
            return "project"
        return "reference" if _REFERENCE_DIR.search(directory) else "userdoc"
    return "area"


def _in_skill_dir(low: str) -> bool:
    """A file under ``skills/<name>/`` (a skill and the files beside its SKILL.md)."""
    parts = low.split("/")
    return any(p == "skills" and i + 2 < len(parts) for i, p in enumerate(parts))


def is_fragment(path: str) -> bool:
    """One change's fragment (``.changeset/brave-lions-sing.md``): never a candidate; the
    directory's README is (kind ``process``)."""
    directory, _, base = path.lower().rpartition("/")
    return directory.rsplit("/", 1)[-1] in FRAGMENT_DIRS and not base.startswith("readme")


# A directory of one version of the documentation: ``docs/v2/``, ``versioned_docs/version-1.4/``.
_VERSION_DIR = re.compile(r"(^|/)(v\d+(\.\d+)*|\d+\.\d+(\.\d+|\.x)?|version-[\w.]+)/", re.I)


def frozen_copies(paths: Sequence[str]) -> set[str]:
    """Pages under a version directory that repeat a page of the current documentation
    (``docs/v2/servers/tools.mdx`` beside ``docs/servers/tools.mdx``). A version directory with
    no current twin (the only copy of the docs) is left alone."""
    have = set(paths)
    out: set[str] = set()
    for path in paths:
        for m in _VERSION_DIR.finditer(path):
            if path[: m.start()] + m.group(1) + path[m.end() :] in have:
                out.add(path)
                break
    return out
