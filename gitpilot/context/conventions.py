"""Convention priors: which Markdown sections say how to test, commit, build, format or document
the project, and how strongly.

Real tasks need these sections but never name them: how to run and write the tests, commit and
pull-request conventions, build/setup/development and style sections of rule files and developer
documents (and, for a task about documentation, how the docs are built). Developer documents are
known by their path (``CONTRIBUTING.md``, ``docs/development/``, ``.github/``, ``HACKING.md``),
not when it is about end-user usage; in a README only a heading makes a convention, and it counts
less. A section's prior is its class weight times its strength: how much of its heading is about
the class, the body breaking ties (or, in a developer document, stating the rules itself); a
subsection inherits its convention parent's class, a little weaker; a section whose own text is
a template's placeholder takes none; a convention section that links to a local Markdown file
lends its class to that file's best section of the class (and, when it is only the pointer, is
then the weaker of the two). ``select`` turns a prior into a score and caps the slots of a class.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from gitpilot.context.markdown import Section, SectionMap, link_target, range_text
from gitpilot.context.query import DOCS_TASK
from gitpilot.context.text import word_tokens

# Convention classes: what a heading names when a section says how to test, commit, build or
# format. Each has core words ("commit message", "running tests") and weak ones ("workflow",
# "guidelines"), which count half. Longer alternatives first, so a phrase is covered as a whole.
_Class = tuple[str, float, re.Pattern[str], re.Pattern[str]]
_CLASSES: tuple[_Class, ...] = (
    (
        "testing",
        0.85,
        re.compile(r"\b(test suites?|unit tests?|tests?|testing|pytest)\b", re.I),
        re.compile(r"\b(specs?|check(s)? before|verif(y|ication))\b", re.I),
    ),
    (
        "commits",
        0.75,
        re.compile(
            r"\b(commit messages?|commits?|pull requests?|PRs?|merge requests?|"
            r"change ?logs?( entr(y|ies))?|news entr(y|ies)|changesets?|sign(ing)?[- ]?offs?|DCO)\b",
            re.I,
        ),
        re.compile(
            r"\b(submitting|submissions?|(code )?reviews?|merg(e|ing)|checklists?|branch(es|ing)?|"
            r"git workflow|workflow)\b",
            re.I,
        ),
    ),
    (
        "development",
        0.6,
        re.compile(
            r"\b(build(ing)?|setup|set(ting)? up|development|developing|dev environment|local dev\w*|"
            r"prerequisites|bootstrap\w*|running locally|quick ?start|hacking)\b",
            re.I,
        ),
        re.compile(r"\b(tooling)\b", re.I),
    ),
    (
        "style",
        0.6,
        re.compile(
            r"\b(code style|coding (style|standards|conventions|guidelines)|style guide|lint(ing|ers?)?|"
            r"format(ting|ters?)?)\b",
            re.I,
        ),
        re.compile(r"\b(conventions|guidelines)\b", re.I),
    ),
    (
        # Only for a task about documentation (``query.DOCS_TASK``): how the docs are built and previewed.
        "docs",
        0.6,
        re.compile(
            r"\b(documentation|docs|docs? site|writing docs|mkdocs|docusaurus|sphinx|doc previews?)\b", re.I
        ),
        re.compile(r"\b(docstrings?|readme)\b", re.I),
    ),
)
# A task that asks for documentation work.
# What a section's body says when it is about a class: commands and statements, not one word.
_CLASS_BODY: dict[str, re.Pattern[str]] = {
    "testing": re.compile(
        r"\b(pytest|cargo (nex)?test|go test|(npm|pnpm|yarn|bun)( run)? test\S*|make (check|test)\S*|tox|nox|"
        r"jest|vitest|mocha|rspec|ctest|(mvn|gradle|bazel) test|"
        r"(run|add|update|writ(e|ing)|modify)( or \w+)?( (all|the|new|your|a|unit|integration|e2e))* tests?|"
        r"tests? (pass|fail)\w*|test coverage)\b",
        re.I,
    ),
    "commits": re.compile(
        r"\b(commit messages?|(PR|pull request) (titles?|descriptions?)|squash\w*|rebase|sign(ed)?[- ]off|DCO|"
        r"conventional commits|changelog entr(y|ies)|changesets?|imperative mood)\b",
        re.I,
    ),
    "development": re.compile(
        r"\b(git clone|install (the )?(dependencies|toolchain)|build from source|"
        r"(cargo|go|npm|pnpm|yarn|make|just) (build|install)|virtualenv|venv|uv sync|poetry install|"
        r"pip install -e)\b",
        re.I,
    ),
    "docs": re.compile(
        r"\b(mkdocs|sphinx|docusaurus|(build|serve|preview)\w* (the )?(docs|documentation)|"
        r"docs (live|build|preview|server))\b",
        re.I,
    ),
    "style": re.compile(
        r"\b(ruff|black|isort|prettier|eslint|clippy|rustfmt|gofmt|golangci-lint|stylelint|"
        r"linters?|formatters?)\b",
        re.I,
    ),
}
# Heading words that neither make nor unmake a convention heading ("Pull request titles").
_NEUTRAL = frozenset(
    "guid guidelin rule how titl descript process instruct note tip best practic writ run add general "
    "overview basic step command chang type kind project repo repository our".split()
)
PRIOR_MIN_COVER = 0.5  # of a heading's words about the class, unless the body says it too
INHERITED = 0.8  # a subsection's share of its convention parent's prior
# Developer-facing documents, by a path part (``CONTRIBUTING.md``, ``contribute/``, ``docs/development/``),
# by where tools keep agent and repository-process files (``.github/``, skill files), or by a
# file name about pull requests, commits or code review (``create-pull-request.md``).
# Not "testing": ``testing-dependencies.md`` in a user guide tells users how to test their app.
_DEV_FILE = re.compile(
    r"(^|/)(contribut(e|ing|ions?)|dev[-_]?(guide|docs|setup|environment)|developers?[-_]?(guide|docs|notes)|"
    r"maintainers?|conventions|(code[-_]?)?style[-_]?guide|code[-_]?style)([-_./]|$)"
    r"|(^|/)(\.github|\.claude/skills|\.agents/skills|\.cursor/rules)/"
    r"|(^|[/_-])(pull[-_]?requests?|merge[-_]?requests?|commit[-_]?(messages?|conventions?|guidelines?)|"
    r"committing|code[-_]?reviews?)([-_.][^/]*)?$",
    re.I,
)
# A directory or file named for work on the project itself (``docs/dev/``, ``docs/development/``,
# ``HACKING.md``, ``internals.md``): a developer document unless its path is about end-user usage
# (``_USER_DIR`` above that part, ``_USER_NAME`` in the file name).
_DEV_PART = re.compile(
    r"(^|/)((development|developing|hacking)([-_./]|$)|(dev|developers?|internals)(/|\.[^/]*$))", re.I
)
_USER_NAME = r"users?|usage|end[-_]?users?"
_USER_NAME_RX = re.compile(rf"(^|[-_.])({_USER_NAME})([-_.]|$)", re.I)
_USER_DIR_RX = re.compile(
    rf"(^|[/_.-])({_USER_NAME}|tutorials?|getting[-_]?started|how[-_]?tos?|cookbooks?)([/_.-]|$)|(^|/)guides?/",
    re.I,
)


class DocFile(Protocol):
    """What the convention rules read of a candidate Markdown file (``select.Doc`` is one)."""

    @property
    def path(self) -> str: ...
    @property
    def smap(self) -> SectionMap: ...
    @property
    def lines(self) -> Sequence[str]: ...
    @property
    def rule(self) -> bool: ...
    @property
    def nested(self) -> bool: ...


def convention_priors(
    docs: Sequence[DocFile], task: str
) -> tuple[dict[int, list[tuple[str, float]]], dict[tuple[int, int], str]]:
    """Each section's convention class and prior in the developer documents and READMEs among
    ``docs`` (by document index, then section), and the sections lent a class by a convention
    section's link, with the linking file's path."""
    kinds = [_file_kind(doc) for doc in docs]
    classes = tuple(c for c in _CLASSES if c[0] != "docs" or DOCS_TASK.search(task))
    priors = {d: _section_priors(doc, kinds[d], classes) for d, doc in enumerate(docs) if kinds[d]}
    linked = _follow_convention_links(docs, priors, classes)
    return priors, linked


def own_body(doc: DocFile, sec: Section) -> str:
    """The text of a section's own part below its heading line."""
    return range_text(doc.lines, sec.start + (1 if sec.level else 0), sec.body_end)


# Directories of examples, samples, demos and templates: their READMEs describe themselves.
_EXAMPLE_DIR = re.compile(r"(^|/)(examples?|samples?|demos?|templates?|starters?|boilerplates?)/", re.I)


def _file_kind(doc: DocFile) -> str:
    """ "dev" for rule files and developer-facing documents, "readme" for READMEs, else "".

    A nested instruction file's conventions are its directory's: never conventions for the task
    (when the task is in that directory, the whole file is shown). So are an example's: the
    "Running the tests" of ``examples/auth-demo/README.md`` runs that example, not the project's."""
    if doc.nested or (not doc.rule and _EXAMPLE_DIR.search(doc.path)):
        return ""
    if doc.rule or _DEV_FILE.search(doc.path) or _dev_by_name(doc.path):
        return "dev"
    return "readme" if doc.path.lower().rsplit("/", 1)[-1].startswith("readme") else ""


def _dev_by_name(path: str) -> bool:
    """A path under (or a file named) ``dev``, ``development``, ``hacking``, ``internals``..., not
    about end-user usage: ``docs/user-guide/development.md`` and ``docs/dev/usage.md`` stay out."""
    m = _DEV_PART.search(path)
    if m is None:
        return False
    name = path.rsplit("/", 1)[-1]
    return not (_USER_DIR_RX.search(path[: m.start()] + "/") or _USER_NAME_RX.search(name))


def _prior(kind: str, title: str, body: str, classes: Sequence[_Class] = ()) -> tuple[str, float]:
    """The convention class a section belongs to, and its prior: the class weight times its strength.

    Strength is how much of the heading is about the class ("Running the tests": all of it;
    "Development code signing on macOS": a quarter) plus what the body says (test commands,
    commit-message rules); a heading only a little about the class needs the body to agree.
    """
    if not title or not kind:
        return "", 0.0
    dev = kind == "dev"
    best: tuple[str, float] = ("", 0.0)
    for name, weight, core, weak in classes or _CLASSES:
        strong = [m.span() for m in core.finditer(title)]
        light = [m.span() for m in weak.finditer(title)]
        if not strong and not light and not dev:
            continue  # outside developer documents only a heading makes a convention
        if not dev and not (
            name in ("testing", "commits")
            or re.search(r"\b(development|contribut\w*|from source)\b", title, re.I)
        ):
            continue
        prior = weight * _strength(name, title, strong, light, body) * (1.0 if dev else 0.75)
        # The heading decides the class (its cover outweighs what the body adds); where only the
        # body speaks ("Steps to contribute" over `make test` and a linter), the class that
        # matters more to a task wins. Ties go to the first.
        if prior > best[1]:
            best = (name, prior)
    return best


def _strength(
    name: str,
    title: str,
    strong: Sequence[tuple[int, int]],
    light: Sequence[tuple[int, int]],
    body: str,
) -> float:
    cls = other = 0.0
    for m in re.finditer(r"\w+", title):
        toks = word_tokens(m.group(0))
        if any(a < m.end() and m.start() < b for a, b in strong):
            cls += 1
        elif any(a < m.end() and m.start() < b for a, b in light):
            cls += 0.5
            other += 0.5
        elif toks and not all(t in _NEUTRAL for t in toks):
            other += 1
    cover = cls / (cls + other) if cls else 0.0
    said = min(3, len(_CLASS_BODY[name].findall(body))) if body else 0
    if cover < PRIOR_MIN_COVER and said < 2:
        return 0.0
    # The heading decides; the body only breaks ties, so a section that mentions pull requests
    # does not outrank one headed "Pull request titles".
    return min(1.0, max(cover, 0.5) + 0.05 * said)


# A pull-request template: ``.github/pull_request_template.md``, ``PULL_REQUEST_TEMPLATE/x.md``.
_PR_TEMPLATE = re.compile(r"(^|/)pull_request_template(\.mdx?$|/)", re.I)
TEMPLATE_PART = 0.9  # a template section whose heading names no convention


def _commits_weight(classes: Sequence[_Class]) -> float:
    return next(weight for name, weight, _core, _weak in classes if name == "commits")


def _section_priors(doc: DocFile, kind: str, classes: Sequence[_Class]) -> list[tuple[str, float]]:
    """Each section's convention class and prior; a subsection of a convention section inherits
    its class, a little weaker at each level ("Testing › Writing tests for X › Best practices"),
    unless its own heading says more."""
    out: list[tuple[str, float]] = []
    template = bool(_PR_TEMPLATE.search(doc.path)) and any(c[0] == "commits" for c in classes)
    for sec in doc.smap.sections:
        body = own_body(doc, sec)
        own = _prior(kind, sec.title, body, classes) if sec.title else ("", 0.0)
        if template and sec.level:
            # every part of a pull-request template is about the pull request; a part whose
            # heading says so ("Review / Merge checklist") a little more than "Summary"
            own = ("commits", _commits_weight(classes) * (1.0 if own[0] == "commits" else TEMPLATE_PART))
        if own[0] and not doc.smap.kids(sec.pos) and _placeholder(body):
            own = ("", 0.0)  # "#### How to test the change:" over "1. ...": a form to fill, no rule
        if sec.parent is not None and out[sec.parent][0]:
            name, prior = out[sec.parent]
            if prior * INHERITED > own[1]:
                own = (name, prior * INHERITED)
        out.append(own)
    return out


# A relative Markdown link to a local Markdown file: ``[commit convention](./.github/commit-convention.md#type)``.
_MD_LINK = re.compile(
    r"\[([^\]\n]*)\]\(\s*<?([^()\s<>]+?\.(?:md|mdx|markdown))(?:#[^()\s<>]*)?>?(?:\s+\"[^\"]*\")?\s*\)", re.I
)
POINTER_WORDS = 10  # a convention section with at most this many words beside its links only points


def _follow_convention_links(
    docs: Sequence[DocFile], priors: dict[int, list[tuple[str, float]]], classes: Sequence[_Class]
) -> dict[tuple[int, int], str]:
    """A convention section that links to a local Markdown file lends its class and prior to that
    file's best section of the class ("see the [commit convention](.github/commit-convention.md)"):
    the rules themselves, not the pointer, take the convention slot. A section that is only the
    pointer is then weaker than what it points to. Returns the sections lent to, with the linking path."""
    where = {doc.path: d for d, doc in enumerate(docs)}
    lent: dict[tuple[int, int], tuple[str, float, str]] = {}
    pointers: list[tuple[int, int]] = []
    for d in sorted(priors):
        doc = docs[d]
        for sec in doc.smap.sections:
            name, prior = priors[d][sec.pos]
            if not name:
                continue
            body = own_body(doc, sec)
            targets = [t for t in (link_target(doc.path, m.group(2)) for m in _MD_LINK.finditer(body)) if t]
            hits = sorted(
                {where[t] for t in targets if t in where and where[t] != d and not docs[where[t]].nested}
            )
            lends = False
            for t in hits:
                own = priors.get(t) or _section_priors(docs[t], "dev", classes)
                best = max(
                    (x for x in docs[t].smap.sections if own[x.pos][0] == name),
                    key=lambda x: (own[x.pos][1], -x.pos),
                    default=None,
                )
                if best is None:
                    continue
                lends = True
                if lent.get((t, best.pos), ("", 0.0, ""))[1] < prior:
                    lent[(t, best.pos)] = (name, prior, doc.path)
            if lends and _is_pointer(body):
                pointers.append((d, sec.pos))
    for (t, pos), (name, prior, _) in sorted(lent.items()):
        table = priors.setdefault(t, [("", 0.0)] * len(docs[t].smap.sections))
        if prior > table[pos][1]:
            table[pos] = (name, prior)
            _lend_to_subsections(docs[t].smap, table, pos)
    for d, pos in pointers:
        name, prior = priors[d][pos]
        priors[d][pos] = (name, prior * INHERITED)
    return {key: src for key, (_, _, src) in lent.items()}


def _is_pointer(body: str) -> bool:
    """A body that says little beside its links ("Follow the [commit message convention](...)")."""
    rest = _MD_LINK.sub(" ", body)
    return len(re.findall(r"\w+", rest)) <= POINTER_WORDS


def _lend_to_subsections(smap: SectionMap, table: list[tuple[str, float]], pos: int) -> None:
    """The subsections of a section that was lent a convention inherit it, a little weaker at each level."""
    for sec in smap.sections[pos + 1 :]:
        parent = sec.parent
        if parent is None or parent < pos:
            break
        name, prior = table[parent]
        if name and prior * INHERITED > table[sec.pos][1]:
            table[sec.pos] = (name, prior * INHERITED)


_PLACEHOLDER_WORDS = frozenset("todo tbd tba xxx fixme".split())


# A list item that starts with a reference: "- #2748 - Convert provider tests", "* [#12](...)".
_REFERENCE_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:#\d+|\[[^\]]*\]\([^)]*\)|<?https?://)", re.M)


def _placeholder(body: str) -> bool:
    """Whether a section's own text states no rule: a template's placeholder (nothing but list
    marks, an ellipsis, a comment, or TODO: "1. ..." under "How to test the change:"), or a list
    of references ("## PR" over "- #2748 - Convert provider tests": which pull request, not how
    to make one). One short sentence ("Use Conventional Commits.") is a rule."""
    text = re.sub(r"<!--.*?-->", " ", body, flags=re.S)
    text = "\n".join(ln for ln in text.splitlines() if not _REFERENCE_ITEM.match(ln))
    words = re.findall(r"[^\W\d_]{2,}", text)
    return all(w.lower() in _PLACEHOLDER_WORDS for w in words)
