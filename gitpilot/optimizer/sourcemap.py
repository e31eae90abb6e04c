"""The source map: tracked source files and their declarations, ranked, within a character budget.

Responsible for choosing, deterministically and explainably, which files of a repository an
agent sees the declarations of, and for caching that map per tree id in
``refs/notes/pilot/sourcemap``.

How a map is built (``build``):

1. Tracked files come from the index (``git ls-files -s``). Symlinks, submodules, hidden
   paths, credential-shaped names (never opened), vendored and generated paths (by
   directory, name, ``linguist-*`` attributes or a "generated, do not edit" marker) are
   left out and counted.
2. Contents are read from the working tree. For a clean tree these are the tree's blobs
   byte for byte (git status compared them), and reading them directly is several times
   faster than ``git cat-file`` on loose objects; a dirty tree is mapped as it stands.
3. Each file is scored: ``8 x doublings of the files importing it`` (floor(log2(n + 1)); an
   import names a module by a path suffix: ``pkg.mod``, ``./mod``, ``crate::mod``, a Go
   package path) ``+ 4 x doublings of its commits among the last 200`` ``+ (4 - directory
   depth)``; tests lose 16, examples, docs, benchmarks and fixtures 8. Within a directory
   each further file counts 6 less, so one busy directory cannot fill the map alone. Ties
   go by path.
4. In that order, each file's line (its declarations, capped) is added while it fits in the
   budget; files without recognizable declarations are skipped. The map is printed grouped
   by directory, in path order, and ends with what was left out, per directory.

A clean tree's map (at the configured budget) is stored as a note on its tree id, and a later
call on the same clean tree prints the note without importing pygit2 or reading any file.
"""

from __future__ import annotations

import heapq
import os
import re
import subprocess
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitpilot.errors import PilotError
from gitpilot.gitrun import run_git
from gitpilot.optimizer import decls

NOTES_REF = "refs/notes/pilot/sourcemap"
FORMAT = "v1"
DEFAULT_BUDGET = 6000
MIN_BUDGET = 200
HEAD_BYTES = 8192  # imports are read from the first 8 KB of a file
DECL_BYTES = 256 * 1024  # declarations from the first 256 KB
MAX_FILE_BYTES = 1024 * 1024  # a larger "source" file is data or generated
HISTORY_COMMITS = 200
LINE_CAP = 200  # one file's line
TEST_PENALTY = 16
SIDE_PENALTY = 8
SAME_DIR_STEP = 6  # each further file of one directory counts this much less
FOOTER_CAP = 480

VENDORED_DIRS = frozenset(
    "vendor vendors third_party third-party thirdparty node_modules bower_components jspm_packages "
    "external extern site-packages _vendor Pods Carthage".split()
)
GENERATED_DIRS = frozenset("dist generated __generated__ gen-src".split())
_GENERATED_NAME = re.compile(
    r"(?:\.min\.(?:js|css)$|_pb2(?:_grpc)?\.pyi?$|\.pb\.(?:go|cc|h|rs)$|\.pb\.gw\.go$|_grpc\.pb\.go$"
    r"|(?:^|[._-])generated\.[a-z+]+$|^zz_generated|\.g\.(?:cs|dart)$|_generated\.[a-z+]+$)",
    re.I,
)
# "Code generated ... DO NOT EDIT." (Go), "@generated" (Meta, Rust), protoc and the like, matched
# on the lowercased top of a file (a case-insensitive regex is several times slower).
_GENERATED_MARK = re.compile(rb"@generated|do not edit|automatically generated|auto-?generated (?:file|code)")
TEST_DIRS = frozenset("test tests __tests__ spec specs testing testdata e2e".split())
_TEST_NAME = re.compile(
    r"(?:^test_.*\.py$|_test\.(?:py|go|rb|cc|cpp)$|\.(?:test|spec)\.[jt]sx?$|Tests?\.java$"
    r"|_spec\.rb$|^conftest\.py$)"
)
SIDE_DIRS = frozenset(
    "example examples docs doc bench benches benchmark benchmarks fixtures samples sample demo demos".split()
)

_HEADER = re.compile(r"^# Source map (?P<fmt>v\d+): .*; budget (?P<budget>\d+)$", re.M)


# -- files ---------------------------------------------------------------------------------
@dataclass
class SourceFile:
    """A tracked source file that may appear in the map."""

    path: str
    lang: str
    head: bytes = b""
    module: tuple[str, ...] = ()
    importers: int = 0
    changes: int = 0
    score: int = 0

    @property
    def directory(self) -> str:
        return self.path.rsplit("/", 1)[0] + "/" if "/" in self.path else "./"

    def explain(self) -> dict[str, int]:
        return {
            "importers": self.importers,
            "changes": self.changes,
            "depth": self.path.count("/"),
            "score": self.score,
        }


@dataclass
class Inventory:
    """What the index holds: the mappable files, and what was left out and why."""

    files: list[SourceFile] = field(default_factory=list)
    excluded: Counter[str] = field(default_factory=Counter)


def exclusion(path: str) -> str | None:
    """Why a tracked path is never mapped (judged by its path alone), or None."""
    from gitpilot.redact import is_credential_filename

    if path.startswith(".") or "/." in path:
        return "hidden"
    if is_credential_filename(path):
        return "credential-shaped"
    dirs = set(path.split("/")[:-1])
    if not dirs.isdisjoint(VENDORED_DIRS):
        return "vendored"
    if not dirs.isdisjoint(GENERATED_DIRS) or _GENERATED_NAME.search(path, path.rfind("/") + 1):
        return "generated"
    return None


def _ls_files(root: Path) -> list[tuple[str, str]]:
    """(mode, path) of each stage-0 index entry."""
    out = run_git(["ls-files", "-s", "-z"], root).stdout
    entries: list[tuple[str, str]] = []
    for rec in out.split(b"\0"):
        if not rec:
            continue
        meta, _, raw = rec.partition(b"\t")
        fields = meta.split(b" ")
        if len(fields) == 3 and fields[2] == b"0":
            entries.append((fields[0].decode(), raw.decode("utf-8", "surrogateescape")))
    return entries


def _attributes(root: Path, paths: Sequence[str]) -> dict[str, str]:
    """Paths marked ``linguist-generated`` or ``linguist-vendored`` in .gitattributes."""
    marked: dict[str, str] = {}
    if not paths:
        return marked
    proc = run_git(
        ["check-attr", "-z", "--stdin", "linguist-generated", "linguist-vendored"],
        root,
        input=b"\0".join(p.encode("utf-8", "surrogateescape") for p in paths) + b"\0",
        check=False,
    )
    fields = proc.stdout.split(b"\0")
    for i in range(0, len(fields) - 2, 3):
        path, attr, value = fields[i], fields[i + 1], fields[i + 2]
        if value in (b"set", b"true"):
            marked[path.decode("utf-8", "surrogateescape")] = (
                "generated" if attr == b"linguist-generated" else "vendored"
            )
    return marked


def inventory(root: Path) -> Inventory:
    """The mappable source files of the worktree at ``root``, with their heads read."""
    inv = Inventory()
    candidates: list[tuple[str, str]] = []
    attributes_file = False
    for mode, path in _ls_files(root):
        if path.endswith(".gitattributes"):
            attributes_file = True
        lang = decls.language_of(path)
        if lang is None or mode == "160000":
            continue
        if mode == "120000":
            inv.excluded["symlink"] += 1
            continue
        reason = exclusion(path)
        if reason:
            inv.excluded[reason] += 1
            continue
        candidates.append((path, lang))
    marked = _attributes(root, [p for p, _ in candidates]) if attributes_file else {}
    base = str(root)
    for path, lang in candidates:
        if path in marked:
            inv.excluded[marked[path]] += 1
            continue
        head, problem = _read_head(os.path.join(base, path))
        if problem is None and _generated(head):
            problem = "generated"
        if problem is not None:
            inv.excluded[problem] += 1
            continue
        inv.files.append(SourceFile(path, lang, head, decls.module_parts(path)))
    return inv


def _generated(head: bytes) -> bool:
    return _GENERATED_MARK.search(head[:2048].lower()) is not None


def _read_head(path: str) -> tuple[bytes, str | None]:
    """The first HEAD_BYTES of a regular file, or why it cannot be mapped."""
    try:
        st = os.lstat(path)
    except OSError:
        return b"", "missing"
    if st.st_mode & 0o170000 == 0o120000:
        return b"", "symlink"  # a file the index has but the working tree made a link
    if st.st_mode & 0o170000 != 0o100000:
        return b"", "missing"
    if st.st_size > MAX_FILE_BYTES:
        return b"", "too large"
    try:
        with open(path, "rb") as fh:
            return fh.read(HEAD_BYTES), None
    except OSError:
        return b"", "missing"


def _read_text(path: Path) -> str:
    try:
        with open(path, "rb") as fh:
            return fh.read(DECL_BYTES).decode("utf-8", "replace")
    except OSError:
        return ""


# -- ranking ---------------------------------------------------------------------------------
def count_importers(files: Sequence[SourceFile]) -> None:
    """Set each file's ``importers``: how many other files import its module (path-suffix match)."""
    unique: dict[str, set[tuple[str, ...]]] = defaultdict(set)
    for f in files:
        if f.module:
            unique[f.module[-1]].add(f.module)  # a Go package: one module for all its files
    by_last = {last: sorted(mods) for last, mods in unique.items()}
    importers: dict[tuple[str, ...], set[str]] = defaultdict(set)
    matches: dict[tuple[str, ...], list[tuple[str, ...]]] = {}
    for f in files:
        region = decls.import_region(f.path, f.head, f.lang)
        if not region:
            continue
        for target in decls.imports(f.path, region.decode("utf-8", "replace"), f.lang):
            found = matches.get(target)
            if found is None:
                # `pkg.mod` names src/pkg/mod.py; a Go import path ends with the package directory
                found = [
                    m
                    for m in by_last.get(target[-1], ())
                    if m[-len(target) :] == target or target[-len(m) :] == m
                ]
                matches[target] = found
            for mod in found:
                if mod != f.module:
                    importers[mod].add(f.path)
    for f in files:
        f.importers = len(importers.get(f.module, ()))


def count_changes(root: Path, files: Sequence[SourceFile], commits: int = HISTORY_COMMITS) -> None:
    """Set each file's ``changes``: in how many of the last ``commits`` commits it changed."""
    proc = run_git(
        [
            "-c",
            "core.quotepath=off",
            "log",
            f"-n{commits}",
            "--no-renames",
            "--format=",
            "--name-only",
            "-z",
            "HEAD",
            "--",
        ],
        root,
        check=False,
    )
    if proc.returncode != 0:
        return
    counts = Counter(
        p for p in proc.stdout.decode("utf-8", "surrogateescape").replace("\n", "\0").split("\0") if p
    )
    for f in files:
        f.changes = counts.get(f.path, 0)


def doublings(n: int) -> int:
    """floor(log2(n + 1)): 0 for 0, 1 for 1, 2 for 3, 3 for 7 ... (integer, deterministic)."""
    return (n + 1).bit_length() - 1


def score(f: SourceFile) -> int:
    """8 per doubling of importers + 4 per doubling of recent changes + shallowness - penalties."""
    parts = f.path.split("/")
    value = 8 * doublings(f.importers) + 4 * doublings(f.changes) + max(0, 4 - (len(parts) - 1))
    dirs = {p.lower() for p in parts[:-1]}
    if dirs & TEST_DIRS or _TEST_NAME.search(parts[-1]):
        value -= TEST_PENALTY
    elif dirs & SIDE_DIRS:
        value -= SIDE_PENALTY
    return value


def ranked(files: Sequence[SourceFile]) -> Iterable[SourceFile]:
    """Files best first; within a directory each further file counts SAME_DIR_STEP less."""
    by_dir: dict[str, list[SourceFile]] = defaultdict(list)
    for f in files:
        f.score = score(f)
        by_dir[f.directory].append(f)
    heap: list[tuple[int, str, int, str]] = []
    for d, group in by_dir.items():
        group.sort(key=lambda f: (-f.score, f.path))
        heapq.heappush(heap, (-group[0].score, group[0].path, 0, d))
    while heap:
        _, _, k, d = heapq.heappop(heap)
        yield by_dir[d][k]
        if k + 1 < len(by_dir[d]):
            nxt = by_dir[d][k + 1]
            heapq.heappush(heap, (-(nxt.score - SAME_DIR_STEP * (k + 1)), nxt.path, k + 1, d))


# -- rendering -------------------------------------------------------------------------------
def render_entries(entries: Sequence[decls.Entry], cap: int) -> str:
    """Declarations joined with ", ", cut to ``cap`` characters with a "+N more" tail."""
    out: list[str] = []
    used = 0
    for i, e in enumerate(entries):
        text = e.render()
        sep = 2 if out else 0
        left = len(entries) - i
        tail = len(f", +{left} more") if left > 1 else 0
        if used + sep + len(text) + tail <= cap or (left == 1 and used + sep + len(text) <= cap):
            out.append(text)
            used += sep + len(text)
            continue
        if e.members:
            shown: list[str] = []
            room = cap - used - sep - len(e.name) - len(f"{{, +{len(e.members)}}}") - tail
            width = 0
            for m in e.members:
                if width + len(m) + 4 > room:
                    break
                shown.append(m + "()")
                width += len(m) + 4
            if shown:
                out.append(f"{e.name}{{{', '.join(shown)}, +{len(e.members) - len(shown)}}}")
                left -= 1
        if left:
            out.append(f"+{left} more")
        break
    return ", ".join(out)


def _footer(left_out: Counter[str], excluded: Counter[str]) -> list[str]:
    lines: list[str] = []
    total = sum(left_out.values())
    if total:
        head = f"# Left out {total} files:"
        items = sorted(left_out.items(), key=lambda kv: (-kv[1], kv[0]))
        shown: list[str] = []
        length = len(head)
        for i, (d, n) in enumerate(items):
            piece = f" {d} {n},"
            rest = f" +{len(items) - i} more directories ({sum(v for _, v in items[i:])} files)"
            if length + len(piece) + len(rest) > FOOTER_CAP - 80 and i < len(items) - 1:
                shown.append(rest)
                break
            shown.append(piece)
            length += len(piece)
        lines.append((head + "".join(shown)).rstrip(","))
    if excluded:
        parts = ", ".join(f"{n} {why}" for why, n in sorted(excluded.items()))
        lines.append(f"# Not mapped: {parts}")
    return lines


@dataclass
class Built:
    """A rendered map and what went into it."""

    text: str
    files: list[dict[str, Any]]
    left_out: dict[str, int]
    excluded: dict[str, int]
    total: int


def build(root: Path, budget: int, tree: str | None) -> Built:
    """Build the map of the worktree at ``root`` (``tree``: its tree id when clean, for the header)."""
    if budget < MIN_BUDGET:
        raise PilotError(f"a source map budget must be at least {MIN_BUDGET} characters (got {budget})")
    inv = inventory(root)
    count_importers(inv.files)
    count_changes(root, inv.files)
    where = f"tree {tree[:12]}" if tree else "working tree with uncommitted changes"
    ranking = (
        f"# Ranked by: +8 per doubling of files importing it, +4 per doubling of its commits among "
        f"the last {HISTORY_COMMITS}, shallow paths first; tests -{TEST_PENALTY}, examples/docs "
        f"-{SIDE_PENALTY}; each further file of a directory -{SAME_DIR_STEP}."
    )
    footer_room = min(FOOTER_CAP, budget // 4)
    chosen: dict[str, tuple[str, SourceFile, list[decls.Entry]]] = {}
    dirs: set[str] = set()
    header_room = 140 + len(ranking)
    room = budget - header_room - footer_room
    misses = 0
    for f in ranked(inv.files):
        if room < 16 or misses > 400:
            break
        entries = decls.extract(f.path, _read_text(root / f.path))
        if not entries:
            continue
        name = f.path.rsplit("/", 1)[-1]
        line = f"  {name}: {render_entries(entries, LINE_CAP - len(name) - 4)}"
        cost = len(line) + 1 + (0 if f.directory in dirs else len(f.directory) + 1)
        if cost > room:
            misses += 1
            continue
        chosen[f.path] = (line, f, entries)
        dirs.add(f.directory)
        room -= cost
    left_out = Counter(f.directory for f in inv.files if f.path not in chosen)
    lines = [
        f"# Source map {FORMAT}: {len(chosen)} of {len(inv.files)} source files; {where}; budget {budget}",
        ranking,
    ]
    current = None
    for path in sorted(chosen):
        line, f, _ = chosen[path]
        if f.directory != current:
            current = f.directory
            lines.append(current)
        lines.append(line)
    lines.extend(_footer(left_out, inv.excluded))
    text = "\n".join(lines) + "\n"
    if len(text) > budget:  # never: rooms are reserved; guard the contract anyway
        text = text[: budget - 1].rsplit("\n", 1)[0] + "\n"
    files = [
        {"path": p, "declarations": [e.render() for e in chosen[p][2]], **chosen[p][1].explain()}
        for p in sorted(chosen)
    ]
    return Built(
        text, files, dict(sorted(left_out.items())), dict(sorted(inv.excluded.items())), len(inv.files)
    )


# -- cache and entry point -------------------------------------------------------------------
@dataclass
class SourceMap:
    """The map as shown: text, tree id (None when dirty), whether it came from the cache."""

    text: str
    budget: int
    tree: str | None
    cached: bool
    built: Built | None = None

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "tree": self.tree,
            "clean": self.tree is not None,
            "budget": self.budget,
            "cached": self.cached,
            "chars": len(self.text),
            "map": self.text,
        }
        data.update(parse(self.text))
        if self.built is not None:
            data["files"] = self.built.files
        return data


def parse(text: str) -> dict[str, Any]:
    """The structure of a rendered map: files with their declaration text, left-out counts."""
    files: list[dict[str, Any]] = []
    directory = ""
    left_out: dict[str, int] = {}
    for line in text.splitlines():
        if line.startswith("# Left out"):
            for d, n in re.findall(r" (\S+/) (\d+)", line):
                left_out[d] = int(n)
        elif line.startswith("#"):
            continue
        elif line.startswith("  ") and ": " in line:
            name, _, rest = line[2:].partition(": ")
            path = name if directory == "./" else directory + name
            files.append({"path": path, "declarations": rest})
        elif line.endswith("/"):
            directory = line
    return {"files": files, "left_out": left_out}


def _git_out(root: Path, *args: str) -> tuple[int, bytes]:
    proc = subprocess.run(
        ["git", *args], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=_env()
    )
    return proc.returncode, proc.stdout


def _env() -> dict[str, str]:
    from gitpilot.gitrun import clean_env

    return clean_env()


def clean_tree(root: Path) -> str | None:
    """HEAD's tree id when no tracked file differs from HEAD (untracked files do not matter:
    the map covers tracked files only); None when dirty or unborn."""
    status = subprocess.Popen(
        ["git", "status", "--porcelain", "-z", "--untracked-files=no", "--ignore-submodules=all"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=_env(),
    )
    code, tree = _git_out(root, "rev-parse", "--verify", "--quiet", "HEAD^{tree}")
    out, _ = status.communicate()
    if status.returncode != 0 or out.strip() or code != 0:
        return None
    return tree.decode().strip() or None


def cached_text(root: Path, tree: str, budget: int) -> str | None:
    """The stored map of ``tree`` when it was made by this format at this budget."""
    code, body = _git_out(root, "notes", f"--ref={NOTES_REF}", "show", tree)
    if code != 0:
        return None
    text = body.decode("utf-8", "replace")
    m = _HEADER.search(text.split("\n", 1)[0])
    if m is None or m.group("fmt") != FORMAT or int(m.group("budget")) != budget:
        return None
    return text


def store(root: Path, tree: str, text: str) -> None:
    """Store ``text`` as the note of ``tree`` (batched CAS write through the notes store)."""
    from gitpilot.repo import Repo
    from gitpilot.store.notes import NotesStore

    NotesStore(Repo.discover(root), NOTES_REF).put({tree: text.encode("utf-8")}, "git pilot: source map")


def source_map(
    root: Path, budget: int | None = None, *, configured_budget: int = DEFAULT_BUDGET
) -> SourceMap:
    """The map of the worktree at ``root``: from the cache when the tree is clean, else built.

    Only a clean tree's map at the configured budget is stored: a dirty tree's state is
    transient, and other budgets are one-off requests.
    """
    want = configured_budget if budget is None else budget
    tree = clean_tree(root)
    if tree is not None:
        text = cached_text(root, tree, want)
        if text is not None:
            return SourceMap(text, want, tree, True)
    built = build(root, want, tree)
    if tree is not None and want == configured_budget:
        store(root, tree, built.text)
    return SourceMap(built.text, want, tree, False, built)


def session_context(root: Path) -> str | None:
    """The map for SessionStart ``additionalContext`` when ``[optimizer] sourcemap_inject`` is on."""
    from gitpilot import config

    cfg = config.load(root)
    if not cfg.get("optimizer.sourcemap_inject"):
        return None
    return source_map(root, configured_budget=int(cfg.get("optimizer.sourcemap_budget"))).text
