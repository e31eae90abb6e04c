"""Which files feed the capsule, in which roles, and which of them may be read.

What is read: the working-tree text of tracked files (the agent works on the working tree,
so a modified rule counts as modified). Blob ids are git's: the index id for a file whose
stat data says it is unchanged, else the id of the working-tree bytes hashed the way
``git hash-object`` does, so a dirty file is never served from a stale cache.

Roles: ``instruction`` (``instruction_files`` at the root, in full), ``memory`` (what Claude
Code loads itself: CLAUDE.md, .claude/CLAUDE.md, .claude/rules/*.md and their ``@imports``),
``rule`` (instruction and memory files, CONTRIBUTING*, SECURITY*, ``rule_files``),
``nested`` (an AGENTS.md/CLAUDE.md below the root), ``always`` (``always_include``) and
``context`` (``files``, default every tracked *.md/*.mdx outside vendored, generated,
test-data and translated paths).

Safety: a credential-named file is never opened; an ignored file is named, never read;
nothing outside the repository is read, whether reached through a symlink, a ``..`` path or
an ``@../`` import (``safepaths`` reads); a non-UTF-8 file is skipped and named, a huge one
bounded.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from gitpilot.context.safepaths import Resolver, inside, normalize

if TYPE_CHECKING:
    from gitpilot.repo import IndexEntry, Repo

MEMORY_FILES = ("CLAUDE.md", ".claude/CLAUDE.md")
MEMORY_RULES_DIR = ".claude/rules"
IMPORT_DEPTH = 5
DEFAULT_FILES = ("*.md", "*.mdx")
STAT_CHECK_MIN = 32  # from this many paths on, the index's stat data spares git the unchanged ones
_IMPORT = re.compile(r"^[ \t]*@(\S+)[ \t]*$")
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")

# Path parts that mark vendored, generated, test-data or translated material.
_SKIP_DIRS = frozenset(
    """vendor vendors vendored node_modules bower_components jspm_packages third_party third-party
    thirdparty external externals _vendor site-packages .venv venv .tox .nox Pods Carthage
    dist build _build builddir generated __generated__ gen out target coverage htmlcov .next .nuxt
    .docusaurus .vitepress/cache .cache .yarn
    testdata test-data test_data fixtures __fixtures__ __snapshots__ snapshots golden goldens""".split()
)
# Directories of translated pages: what lies below them in a language's folder (``i18n/es/``) or
# is named for a language (``i18n/ja.md``) is a translation; a page directly inside, such as
# ``i18n/README.md`` on how translations are made, is the project's own.
_TRANSLATION_DIRS = frozenset("i18n l10n locale locales translations translated".split())
# Directories of tests: a Markdown file below one is test data (a formatter's input, a snapshot),
# unless it says how the tests are written (a README, an instruction file, a contributing guide)
# or sits directly in the tests directory (``tests/writing-tests.md``).
_TEST_DIRS = frozenset("tests test __tests__".split())
_TEST_DOC_NAMES = ("readme", "agents", "claude", "contributing")
_LANGS = frozenset(
    """ar bg bn ca cs da de el es et fa fi fr ga he hi hr hu hy id it ja ka kk km ko lt lv mk ml mn
    ms my nb ne nl nn no pa pl pt ro ru si sk sl sq sr sv sw ta te th tl tr uk ur uz vi zh
    pt-br pt-pt zh-cn zh-tw zh-hk zh-hans zh-hant es-419 es-es fr-ca en-gb""".split()
)
_LANG_SUFFIX = re.compile(r"[._-]([a-z]{2}(?:[-_][a-z]{2,4})?)$")


@dataclass
class Inventory:
    """The index (``git ls-files -s``) and which entries differ from the working tree.

    Which entries differ is asked of git (``git diff-files``) only for the paths a caller
    names (``check_dirty``): git re-reads a file whose stat data it cannot trust (every file
    of a fresh clone), and it must never be made to open a credential file for us.
    """

    repo: Repo
    entries: dict[str, IndexEntry]
    conflicted: frozenset[str]
    listing: bytes = b""  # what git listed of the index (``Repo.index_listing``), the entries' source
    _dirty: set[str] = field(default_factory=set)
    _checked: set[str] = field(default_factory=set)
    _hashed: dict[str, str | None] = field(default_factory=dict)

    @property
    def root(self) -> Path:
        return self.repo.workdir

    @property
    def dirty(self) -> frozenset[str]:
        """The checked paths that differ from the index (and every conflicted one)."""
        return frozenset(self._dirty | self.conflicted)

    def check_dirty(self, paths: Iterable[str]) -> None:
        """Ask git which of ``paths`` (tracked ones not asked before) differ from the index."""
        todo = sorted({p for p in paths if p in self.entries and p not in self._checked})
        if not todo:
            return
        self._checked.update(todo)
        if len(todo) >= STAT_CHECK_MIN:
            # git matches each index entry against each path named: for many paths, those the
            # index's stat data shows unchanged are not named at all (``indexstat``)
            from gitpilot.indexstat import unchanged

            same = unchanged(str(self.root), str(self.repo.git_dir / "index"), todo)
            todo = [p for p in todo if p not in same]
        if todo:
            self._dirty.update(self.repo.worktree_changed(todo))

    def is_dirty(self, path: str) -> bool:
        if path not in self._checked and path in self.entries:  # (``check_dirty`` asks nothing else)
            self.check_dirty((path,))
        return path in self._dirty or path in self.conflicted

    def blob(self, path: str) -> str | None:
        """The blob id of the working-tree content (None when the file is gone)."""
        ent = self.entries.get(path)
        if ent is not None and not self.is_dirty(path):
            return ent.oid
        if path not in self._hashed:
            self._hashed[path] = hash_file(self.root, path)
        return self._hashed[path]

    def status(self, path: str) -> str:
        if path in self.entries:
            return "modified" if self.is_dirty(path) else "clean"
        return "untracked"


@dataclass(frozen=True)
class Options:
    """The ``[leanloop.context]`` settings."""

    files: tuple[str, ...] = DEFAULT_FILES
    files_configured: bool = False
    instruction_files: tuple[str, ...] = ("CLAUDE.md", "AGENTS.md")
    rule_files: tuple[str, ...] = ()
    always_include: tuple[str, ...] = ()
    always_include_headings: tuple[str, ...] = (
        "safety",
        "security",
        "secrets",
        "credentials",
        "policy",
        "guardrails",
        "constraints",
        "never",
        "do not",
        "must not",
        "forbidden",
        "human gates",
    )
    max_excerpt_bytes: int = 27000
    max_section_bytes: int = 8000
    agent: str = "claude"  # Claude Code loads CLAUDE.md and .claude/rules itself; other agents do not

    def as_dict(self) -> dict[str, object]:
        return {
            "agent": self.agent,
            "files": list(self.files),
            "instruction_files": list(self.instruction_files),
            "rule_files": list(self.rule_files),
            "always_include": list(self.always_include),
            "always_include_headings": list(self.always_include_headings),
            "max_excerpt_bytes": self.max_excerpt_bytes,
            "max_section_bytes": self.max_section_bytes,
        }


@dataclass
class Source:
    """One file the capsule considered: its roles, status and blob id."""

    path: str
    roles: set[str]
    status: str  # clean, modified, untracked, ignored, credential, outside, missing, not-utf8, too-large
    blob: str = ""
    alias_of: str = ""  # a symlink to, or an @import-only file of, this path
    note: str = ""

    def record(self) -> dict[str, object]:
        rec: dict[str, object] = {
            "path": self.path,
            "roles": sorted(self.roles),
            "status": self.status,
            "blob": self.blob,
        }
        if self.alias_of:
            rec["alias_of"] = self.alias_of
        if self.note:
            rec["note"] = self.note
        return rec


def git_blob_id(data: bytes) -> str:
    """The id ``git hash-object`` gives ``data``."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def hash_file(root: Path, path: str) -> str | None:
    full = root / path
    try:
        if os.path.islink(full):
            return git_blob_id(os.fsencode(os.readlink(full)))
        return git_blob_id(full.read_bytes())
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def inventory(repo: Repo) -> Inventory:
    """Index entries, from one cheap git call; no file is read (``check_dirty`` asks the rest)."""
    entries: dict[str, IndexEntry] = {}
    conflicted: set[str] = set()
    for ent in repo.index_entries():
        path = ent.path
        if not path.isascii():
            try:
                path.encode("utf-8")
            except UnicodeEncodeError:  # surrogate escapes: bytes that are not UTF-8
                continue  # a name that is not UTF-8 cannot be quoted in a UTF-8 capsule: not a source
        if ent.stage != "0":
            conflicted.add(path)
        if ent.mode != "160000":
            entries[path] = ent
    return Inventory(repo, entries, frozenset(conflicted), repo.last_index_listing)


# --- path rules -------------------------------------------------------------------------------


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """A gitignore-like glob: no slash matches the base name anywhere; ``**`` spans directories."""
    pat = pattern.strip()
    anchored = "/" in pat.rstrip("/")
    pat = pat.lstrip("/")
    out = []
    i = 0
    while i < len(pat):
        c = pat[i]
        if pat.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pat.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        out.append({"*": "[^/]*", "?": "[^/]"}.get(c, re.escape(c)))
        i += 1
    body = "".join(out)
    return re.compile(
        ("^" if anchored else "^(?:.*/)?") + body + "(?:/.*)?$"
        if pat.endswith("/")
        else ("^" if anchored else "^(?:.*/)?") + body + "$",
        re.IGNORECASE,
    )


def matches(path: str, patterns: Iterable[str]) -> bool:
    low: str | None = None
    for p in patterns:
        suffix = _suffix(p)
        if suffix is not None:
            if low is None:
                low = path.lower()
            if low.endswith(suffix):
                return True
        elif glob_regex(p).match(path):
            return True
    return False


def first_covered(scopes: Sequence[str], paths: Iterable[str]) -> str | None:
    """The first of ``paths`` a rule's front-matter scopes (``paths:``, ``globs:``, ``applyTo:``)
    cover; None for an unscoped rule or when they cover none: where the rule applies."""
    if not scopes:
        return None
    return next((p for p in paths if matches(p, scopes)), None)


@lru_cache(maxsize=256)
def _suffix(pattern: str) -> str | None:
    """The lower-case ending a plain ``*.ext`` pattern stands for (None for any other pattern)."""
    if pattern.startswith("*.") and "/" not in pattern and not any(c in pattern[2:] for c in "*?["):
        return pattern[1:].lower()
    return None


def excluded_by_default(path: str) -> bool:
    """Vendored, generated, test-data (deeper below a tests directory: ``_TEST_DIRS``) or
    translated documentation, or one change's fragment (``.changeset/brave-lions-sing.md``; the
    directory's README is context): the default ``files`` skips it."""
    from gitpilot.context.doctypes import is_fragment

    if is_fragment(path):
        return True
    parts = path.split("/")
    stem = parts[-1].rsplit(".", 1)[0].lower()
    for i, part in enumerate(parts[:-1]):
        low = part.lower()
        if low in _SKIP_DIRS or part in _SKIP_DIRS or low in _LANGS:
            return True
        if low in _TRANSLATION_DIRS and (i < len(parts) - 2 or stem.replace("_", "-") in _LANGS):
            return True
        if low in _TEST_DIRS and i < len(parts) - 2 and not stem.startswith(_TEST_DOC_NAMES):
            return True
    m = _LANG_SUFFIX.search(stem)
    if m and m.group(1).replace("_", "-") in _LANGS and m.group(1) not in ("md",):
        return True
    return ".generated." in parts[-1].lower()


def is_memory_path(path: str) -> bool:
    return path in MEMORY_FILES or (path.startswith(MEMORY_RULES_DIR + "/") and path.lower().endswith(".md"))


# Where a repository keeps its security policy (GitHub reads SECURITY.md from these three):
# elsewhere a ``security.md`` is a product page or a design note, not a rule for every task.
_POLICY_DIRS = ("", "docs", ".github")


def is_rule_name(path: str, opts: Options) -> bool:
    """A rule file by name: a contributing guide (``CONTRIBUTING*`` anywhere), the security
    policy (``SECURITY*`` at the root, in ``docs/`` or ``.github/``), or a ``rule_files`` match."""
    directory, _, name = path.rpartition("/")
    base = name.upper()
    if base.endswith((".MD", ".MDX")) and (
        base.startswith("CONTRIBUTING") or (base.startswith("SECURITY") and directory.lower() in _POLICY_DIRS)
    ):
        return not excluded_by_default(path)
    return matches(path, opts.rule_files) if opts.rule_files else False


def nested_dir(path: str, opts: Options) -> str | None:
    """The directory a nested AGENTS.md/CLAUDE.md applies to (None for other files and root ones)."""
    if "/" not in path or path.startswith(".claude/"):
        return None
    base = path.rsplit("/", 1)[-1]
    if base in _base_names(opts.instruction_files) and not excluded_by_default(path):
        return path.rsplit("/", 1)[0]
    return None


@lru_cache(maxsize=16)
def _base_names(paths: tuple[str, ...]) -> frozenset[str]:
    """The file names of ``paths`` (worked out once, not once an index entry)."""
    return frozenset(n.rsplit("/", 1)[-1] for n in paths)


# --- planning (cheap: no file contents) --------------------------------------------------------


def plan(root: Path, inv: Inventory, opts: Options, *, is_credential: object,
         roles: Callable[[Inventory, Options, str], dict[str, list[str]]] | None = None) -> dict[str, Source]:
    """Every source that the index and a few stats name, with roles, status and blob id (the
    index paths' roles from ``roles(inv, opts, memory)`` when given: ``index_roles`` of them)."""
    cred = is_credential
    assert callable(cred)
    sources: dict[str, Source] = {}

    def add(path: str, role: str) -> None:
        src = sources.get(path)
        if src is None:
            src = sources[path] = Source(path, set(), "")
        src.roles.add(role)

    # What Claude Code loads itself (CLAUDE.md, .claude/rules) is its memory: listed, not repeated.
    # Another agent loads none of it, so there it is a rule file like any other, and a candidate.
    memory = "memory" if opts.agent == "claude" else "context"
    named = roles(inv, opts, memory) if roles is not None else index_roles(inv.entries, opts, memory)
    for path, held in named.items():
        for role in held:
            add(path, role)
    for path in opts.instruction_files:
        add(path, "instruction")
        add(path, "rule")
    for path in MEMORY_FILES:
        if path in sources or os.path.lexists(root / path):
            add(path, memory)
            add(path, "rule")
    rules_dir = root / MEMORY_RULES_DIR
    if rules_dir.is_dir() and inside(root, MEMORY_RULES_DIR):
        for dirpath, _dirs, names in sorted(os.walk(rules_dir)):
            for name in sorted(names):
                rel = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
                if rel.lower().endswith(".md"):
                    add(rel, memory)
                    add(rel, "rule")
    for entry in opts.always_include:
        add(entry.split("#", 1)[0], "always")
    settle(root, inv, sources, cred)
    return dict(sorted(sources.items()))


def index_roles(paths: Iterable[str], opts: Options, memory: str) -> dict[str, list[str]]:
    """The roles index paths have by their names alone (``context`` files, ``memory`` (or
    ``context`` for an agent other than Claude), rule and nested instruction files), for each
    path that has one (``warm.kept_index_roles`` keeps them for the index's paths)."""
    out: dict[str, list[str]] = {}
    for path in paths:
        roles: list[str] = []
        if matches(path, opts.files) and (opts.files_configured or not excluded_by_default(path)):
            roles.append("context")
        if is_memory_path(path):
            roles += (memory, "rule")
        if is_rule_name(path, opts):
            roles.append("rule")
        if nested_dir(path, opts) is not None:
            roles.append("nested")
        if roles:
            out[path] = roles
    return out


def settle(root: Path, inv: Inventory, sources: dict[str, Source], cred: object) -> None:
    """Status and blob id of each source: credential and outside files untouched, ignored ones unread."""
    assert callable(cred)
    cred = lru_cache(maxsize=None)(cred)  # (asked of a path and of its real path, here and in _set_status)
    res = Resolver(root)
    inv.check_dirty(p for p in sources if not cred(p) and not cred(res.real_path(p) or p))
    for src in sources.values():
        _set_status(root, inv, src, cred, res)
    resolve_ignored(inv.repo, sources)
    for path, src in sources.items():
        if src.status == "untracked":
            src.blob = inv.blob(path) or ""
            if not src.blob:
                src.status = "missing"


def _set_status(root: Path, inv: Inventory, src: Source, cred: object, res: Resolver | None = None) -> None:
    assert callable(cred)
    res = res or Resolver(root)
    path = src.path
    if cred(path):  # before anything asks git about it (git may open a file it is asked about)
        src.status = "credential"
        return
    ent = inv.entries.get(path)
    # A clean regular index entry lies inside the working tree (git never tracks files behind a
    # symlinked directory); anything else is resolved on disk.
    trusted = ent is not None and ent.mode in ("100644", "100755") and not inv.is_dirty(path)
    if not trusted and (normalize("", path) != path or not res.inside(path)):
        src.status = "outside"
    elif not trusted and cred(real := res.real_path(path) or path):
        # The name rule holds for what a link leads to: `docs/env.md -> ../.env` is `.env`.
        src.status = "credential"
        src.note = f"a symlink to {real}"
    elif path in inv.entries:
        src.status = inv.status(path)
        src.blob = inv.blob(path) or ""
        if not src.blob:
            src.status = "missing"
        elif not trusted and (inv.entries[path].mode == "120000" or os.path.islink(root / path)):
            src.status = "symlink" if src.status == "clean" else src.status
    elif os.path.lexists(root / path):
        src.status = "untracked"  # hashed by settle() only once git says it is not ignored
    else:
        src.status = "missing"


def resolve_ignored(repo: Repo, sources: dict[str, Source]) -> None:
    """Untracked sources that git ignores become ``ignored`` (named, never read)."""
    untracked = [p for p, s in sources.items() if s.status == "untracked"]
    if not untracked:
        return
    for path in repo.ignored(untracked):
        if path in sources:
            sources[path].status = "ignored"
            sources[path].blob = ""


def ignored_context_files_later(repo: Repo, opts: Options, limit: int = 50) -> Callable[[], list[str]]:
    """Ignored files that would otherwise be context files (names only; git reads no contents),
    listed by git while the caller works on; the call returned gives the list."""
    specs = [p if "/" in p else f":(glob)**/{p}" for p in opts.files]
    found = repo.ignored_files_later(specs)
    return lambda: [n for n in found() if not _tool_output(n)][:limit]


def _tool_output(path: str) -> bool:
    """An ignored file that a tool wrote into its cache, build or install directory
    (``.pytest_cache/README.md``, ``node_modules/x/README.md``): not the project's, not worth a line."""
    parts = path.split("/")[:-1]
    return excluded_by_default(path) or any(
        p.lower().endswith("cache") or p.startswith("__") or p.lower() in _TOOL_DIRS for p in parts
    )


_TOOL_DIRS = frozenset(".git .hg .svn .idea .vscode .gradle .terraform .serverless .eggs .direnv".split())


def imports_of(text: str) -> list[str]:
    """``@path`` lines (outside fenced code), in order, as written."""
    out: list[str] = []
    fence: str | None = None
    for line in text.splitlines():
        m = _FENCE.match(line)
        if m:
            mark = m.group(1)
            if fence is None:
                fence = mark
            elif mark[0] == fence[0] and len(mark) >= len(fence):
                fence = None
            continue
        if fence is None:
            im = _IMPORT.match(line)
            if im and not im.group(1).startswith("@"):
                out.append(im.group(1))
    return out


_HEAD = 2048  # characters of a file ``only_imports`` looks at first


def _only(text: str, line: re.Pattern[str]) -> list[re.Match[str]] | None:
    """The matches of ``line`` when every non-blank line of ``text`` (HTML comment lines aside)
    is one, in order; None when a line is not, or none is (the file is not one that only points
    elsewhere)."""
    head = text[:_HEAD]
    if len(head) < len(text):
        # The first lines decide almost every file: those wholly inside the head are lines of the
        # text (splitting a text at a line break gives the same lines before it).
        for ln in head.splitlines()[:-1]:
            bare = ln.strip()
            if bare and not bare.startswith("<!--") and not line.match(ln):
                return None
    out: list[re.Match[str]] = []
    for ln in text.splitlines():
        bare = ln.strip()
        if not bare or bare.startswith("<!--"):
            continue
        m = line.match(ln)
        if m is None:
            return None  # the first line that is not one decides
        out.append(m)
    return out or None


def only_imports(text: str) -> bool:
    """True when every non-blank line is an ``@import`` (the file just points elsewhere)."""
    return "@" in text and _only(text, _IMPORT) is not None  # ("@": most files hold no import line)


# A documentation site's page that includes another file whole (MkDocs' snippets: ``--8<-- "CONTRIBUTING.md"``).
_SNIPPET = re.compile(r"^[ \t]*-{1,}8<-{1,}[ \t]+([\"']?)([^\"'\s]+)\1[ \t]*$")


def snippet_targets(text: str) -> list[str] | None:
    """The files a page includes when it is nothing but includes (blank lines and HTML comments
    aside): ``--8<-- "CONTRIBUTING.md"`` (paths from the site's base, the repository's root
    unless configured); None for any other page. Such a page repeats what it includes."""
    if "8<" not in text[:_HEAD]:
        return None  # (most files: their first lines are not an include)
    got = _only(text, _SNIPPET)
    return [m.group(2) for m in got] if got is not None else None


def under(path: str, directory: str) -> bool:
    return directory == "" or path == directory or path.startswith(directory + "/")


def applies_to(named: Sequence[str], directory: str, tracked: Iterable[str]) -> bool:
    """True when a path the task names lies under ``directory`` (a full or trailing partial path)."""
    d = directory.lower()
    for name in named:
        n = name.lower().strip("/")
        if not n:
            continue
        if under(n, d) or d.endswith("/" + n) or d == n:
            return True
        if "/" in n or "." in n.rsplit("/", 1)[-1]:
            suffix = "/" + n
            if any(t.lower().endswith(suffix) and under(t.lower(), d) for t in tracked):
                return True
    return False
