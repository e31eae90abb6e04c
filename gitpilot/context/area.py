"""The task's area in the code: which directories with documents of their own it concerns.

Tasks name their area in their own words or by identifiers, flags and config keys that live in
that directory, rarely by path. Two kinds of evidence, both from the tree:

- **names**: every identifier the task gives (``RESTClient``, ``duckdb_appender_column_count``,
  ``--save-peer``) is searched for with ``git grep`` (all at once) in the code files (never in documentation,
  tests or fixtures, never in a credential-named file or a symlink); a directory holding many of
  an identifier's files, and few others, gets much of its weight, a rare identifier more than a
  common one;
- **words**: each directory is described by the words of the paths of the code files below it
  (``discovery/consul/consul.go``: "discovery", "consul"), each task word counted by its rarity
  among the directories and by the share of the directory's files that hold it, so "a new
  service discovery mechanism" points at ``discovery/``, not at the package that holds it among
  forty other directories.

Only directories that hold a candidate document (``discovery/README.md``) are scored, the root
never (every document is below it). Scores are divided by the best, so the area of the top
directory is 1. ``Area.core`` (the files the task names and those that hold its rare names) is
what front-matter scopes (``paths:``, ``applyTo:``) are matched against.

The search runs in the background (``start``) while the documents are read and scored.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitpilot.context.text import Identifier, tokens
from gitpilot.fileio import keep, read_kept

K1 = 1.2  # how fast a word's evidence grows with the files that hold it
NAME_WEIGHT = 2.0  # of one identifier's evidence, against the words' BM25
MAX_NAMES = 12  # identifiers searched, at most
MAX_ARG_BYTES = 96_000  # file arguments per git grep
# Pathspecs of the one git grep of the names, at most: git matches every index entry against every
# pathspec it is given (3,500 code files named one by one on vercel/ai: ~330 ms of git's CPU), so
# it searches a few directories that hold them all (``covering``) and only the code files' lines
# are read.
GREP_PATHSPECS = 64
MAX_AREA_FILES = 2000
CORE_HITS = 20  # a name in at most this many files (or the task's rarest) says where the task works
_DOC_EXT = (".md", ".mdx", ".markdown", ".rst", ".txt", ".mdc", ".adoc")
# Parts of a path that are not the code of an area: tests, fixtures, examples, vendored code, docs.
_NOT_CODE = re.compile(
    r"(^|/)(tests?|\w+[-_]tests?|e2e|testdata|test[-_]data|fixtures?|__tests__|__snapshots__|snapshots|cassettes|"
    r"examples?|vendor|third[-_]party|node_modules|benchmarks?|docs?|documentation)(/|$)",
    re.I,
)
# A directory whose name starts with a dot holds a tool's configuration (``.github/workflows``,
# ``.circleci``, ``.vscode``, ``.cargo``), not the code of a part of the product: never an area.
_TOOL_DIR = re.compile(r"(^|/)\.[^/]+/")
FILES = "/"  # a word bag's count of its directory's code files (no word holds a slash)
_NAME_KINDS = ("code", "camel", "snake", "call", "flag")


@dataclass
class Area:
    """The area scores by directory, and where the task works: the files it names and those that
    hold its rare names (``core``). A path-scoped rule (``paths:``) applies to the task when it
    covers one of the ``core`` files (``sources.first_covered``); a file that holds one of the
    task's common names somewhere else does not make it apply."""

    scores: dict[str, float] = field(default_factory=dict)
    core: list[str] = field(default_factory=list)


def code_files(paths: Iterable[str], is_credential: Any, links: Iterable[str] = ()) -> list[str]:
    """Tracked files that are code of an area: not documentation, tests, fixtures or examples,
    not a tool's configuration (a dot-directory), not credential-named, not symlinks."""
    skip = set(links)
    return [
        p
        for p in sorted(paths)
        if p not in skip
        and not p.lower().endswith(_DOC_EXT)
        and not _NOT_CODE.search(p)
        and not _TOOL_DIR.search(p)
        and not is_credential(p)
    ]


def names_of(ids: Sequence[Identifier]) -> list[str]:
    """The identifiers worth a search: code names, flags and keys of four characters or more."""
    out: list[str] = []
    for i in ids:
        text = i.text.lstrip("-") if i.kind == "flag" else i.text
        if i.kind in _NAME_KINDS and len(text) >= 4 and text not in out:
            out.append(text)
    return out[:MAX_NAMES]


class Search:
    """Which code files hold each name, started now (``git grep`` in the background), read by
    ``result``.

    One ``git grep -o`` per chunk of files looks for every name at once: it prints each match
    after the file's name, so a file holds a name when the name is printed for it. A match can
    hide only a name that overlaps it (one inside the other, or the end of one the start of the
    other), and only in a file where that match is printed: so for a name that overlaps another,
    those files are searched again for it alone. A name with a colon (which would make a printed
    line ambiguous) is searched for alone from the start. File names are read as git prints them
    (quoted where ``core.quotePath`` says), as a search a name (``git grep -l``) prints them.

    What is searched is the index's content, as the rest of the capsule's inputs are keyed (a
    capsule is reused while the index file is unchanged): the working tree is searched, as it
    is quicker than reading blobs, and a file ``git diff-files`` names (an unstaged edit, a
    deletion) is searched in the index instead (``git grep --cached``)."""

    def __init__(self, root: Path, files: Sequence[str], names: Sequence[str],
                 within: Sequence[str] | None = None) -> None:
        from gitpilot.gitrun import start_git

        self.root = root
        self.names = list(names)
        self.files = set(files)
        self.procs: list[tuple[str | None, Any]] = []  # (the name of a -l search, or None for -o)
        self.together = [n for n in self.names if ":" not in n]
        self.changed: Any = None  # git diff-files over the same pathspecs (they hold no file we may not open)
        # (``within``: pathspecs that hold every file, and others, whose lines are not read)
        self.within = within is not None
        if not self.names or not files:
            return
        specs = files if within is None else within
        self.changed = [start_git(["-c", "core.preloadIndex=false", "diff-files", "--name-only", "-z", "--", *chunk],
                                  root, env=_ENV)
                        for chunk in _chunks(specs)]
        self.procs = self._start(specs, cached=False)

    def _start(self, specs: Sequence[str], cached: bool) -> list[tuple[str | None, Any]]:
        from gitpilot.gitrun import start_git

        grep = _grep(cached)
        pats = [a for n in self.together for a in ("-e", n)]
        procs: list[tuple[str | None, Any]] = []
        for chunk in _chunks(specs):
            if pats:
                procs.append((None, start_git([*grep, "-o", *_GREP, *pats, "--", *chunk], self.root, env=_ENV)))
            for name in self.names:
                if ":" in name:
                    procs.append((name, start_git([*grep, "-l", *_GREP, "-e", name, "--", *chunk], self.root,
                                                  env=_ENV)))
        return procs

    def result(self) -> dict[str, list[str]]:
        out: dict[str, set[str]] = {n: set() for n in self.names}
        changed: set[str] = set()
        for proc in self.changed or ():
            data, _ = proc.communicate()
            changed.update(p for p in data.decode("utf-8", "surrogateescape").split("\0") if p in self.files)
        within, ours = self.within, self._ours

        def wanted(printed: str) -> bool:  # one of ours, and not one the index holds otherwise
            return (not within or ours(printed)) and (not changed or _unquoted(printed) not in changed)

        self._read(self.procs, out, wanted if within or changed else None)
        if changed:  # those files as the index holds them
            self._read(self._start(sorted(changed), cached=True), out, None)
        for name, partners in sorted(overlaps(self.together).items()):
            maybe = sorted(set().union(*(out[b] for b in partners)) - out[name])
            if maybe:
                out[name].update(self._again(name, maybe, changed))
        return {n: sorted(v) for n, v in out.items()}

    def _read(self, procs: list[tuple[str | None, Any]], out: dict[str, set[str]], wanted: Any) -> None:
        """Add what ``procs`` print to ``out``: the files (as git printed them) that hold each name,
        those ``wanted`` accepts (when given)."""
        # "path:name" lines: no name here has a colon, so only the name printed ends the line
        ends = [(b":" + n.encode("utf-8", "surrogateescape"), n) for n in self.together]
        for name, proc in procs:
            data, _ = proc.communicate()
            if name is not None:
                out[name].update(p for p in _lines(data) if wanted is None or wanted(p))
                continue
            for line in data.split(b"\n"):
                for end, n in ends:
                    if line.endswith(end):
                        printed = line[: -len(end)].decode("utf-8", "surrogateescape")
                        if wanted is None or wanted(printed):
                            out[n].add(printed)
                        break

    def _ours(self, printed: str) -> bool:
        """Whether a file git printed (quoted or not, as ``core.quotePath`` says) is one of ours."""
        return printed in self.files or (printed.startswith('"') and _unquoted(printed) in self.files)

    def _again(self, name: str, printed: Sequence[str], changed: set[str]) -> list[str]:
        """The files among ``printed`` (as git printed them) that hold ``name``: ``git grep -l``
        (``--cached`` for the ``changed`` ones)."""
        from gitpilot.gitrun import run_git

        paths = [_unquoted(p) for p in printed]
        if any(p not in self.files for p in paths):  # a name git printed that is not ours: all files
            paths = sorted(self.files)
        found: list[str] = []
        for cached in (False, True):
            for chunk in _chunks([p for p in paths if (p in changed) == cached]):
                proc = run_git([*_grep(cached), "-l", *_GREP, "-e", name, "--", *chunk], self.root, env=_ENV, check=False)
                found += _lines(proc.stdout)
        return found


# One thread: git's default (several) costs more CPU for the same search (vercel/ai: ~54 -> ~47 ms),
# and the search runs beside the build, which takes longer than it either way.
_GREP = ("-I", "-F", "--no-color", "--threads=1")
_ENV = {"GIT_LITERAL_PATHSPECS": "1"}


def _grep(cached: bool) -> list[str]:
    """``git grep`` of the working tree, or of the index (``--cached``)."""
    return ["grep", "--cached"] if cached else ["grep"]


def _lines(data: bytes) -> list[str]:
    return [p.decode("utf-8", "surrogateescape") for p in data.split(b"\n") if p]


def overlaps(names: Sequence[str]) -> dict[str, list[str]]:
    """For each name that overlaps another (one inside the other, or the end of one the start of
    the other: ``parse_config`` and ``getFromApi``), the names it overlaps: a match of one can
    hide the other from ``git grep -o``."""
    out: dict[str, list[str]] = {}
    for a in names:
        for b in names:
            if a != b and (a in b or b in a or _joins(a, b) or _joins(b, a)):
                out.setdefault(a, []).append(b)
    return out


def _joins(a: str, b: str) -> bool:
    """Whether a proper end of ``a`` is a start of ``b``."""
    return any(a.endswith(b[:k]) for k in range(1, min(len(a), len(b))))


_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def _unquoted(printed: str) -> str:
    """A path as git printed it, C-quoted (``"d\\303\\251/x.py"``) or not, back to the path itself."""
    if len(printed) < 2 or not (printed.startswith('"') and printed.endswith('"')):
        return printed
    body, out, i = printed[1:-1], bytearray(), 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            digits = body[i + 1 : i + 4]
            if len(digits) == 3 and all(d in "01234567" for d in digits):
                out.append(int(digits, 8) & 0xFF)
                i += 4
                continue
            out.append(_ESCAPES.get(nxt, ord(nxt)))
            i += 2
            continue
        out += c.encode("utf-8", "surrogateescape")
        i += 1
    return out.decode("utf-8", "surrogateescape")


def _chunks(files: Sequence[str]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    size = 0
    for f in files:
        if size + len(f) + 1 > MAX_ARG_BYTES and out[-1]:
            out.append([])
            size = 0
        out[-1].append(f)
        size += len(f) + 1
    return [c for c in out if c]


def start(root: Path, files: Sequence[str], ids: Sequence[Identifier], within: Sequence[str] | None = None) -> Search:
    return Search(root, files, names_of(ids), within)


def covering(paths: Iterable[str], files: Sequence[str], limit: int = GREP_PATHSPECS,
             never: Iterable[str] = ()) -> list[str]:
    """At most ``limit`` pathspecs (directories, and files of a directory split up), sorted, whose
    files among the tracked ``paths`` include every one of ``files`` (a subset of ``paths``), and
    few others: from the top-level entries that hold one of ``files``, the directory that holds the
    most other files is replaced by its entries that hold one, while the pathspecs stay within
    ``limit``. ``["."]`` (the whole tree) when the top level alone holds more.

    No pathspec holds one of the tracked files ``never`` (credential-named: git would open them):
    a directory above one is replaced by its entries that hold one of ``files``, down to the
    files themselves, even past ``limit``."""
    wanted = set(files)
    never = list(never)
    others: dict[str, int] = {}  # directory -> tracked files below it that are not ``files``
    kids: dict[str, set[str]] = {}  # directory ("" the root) -> its entries that hold one of ``files``
    for p in paths:
        parts = p.split("/")
        if p in wanted:
            parent = ""
            for i in range(1, len(parts) + 1):
                node = "/".join(parts[:i])
                got = kids.get(parent)
                if got is None:
                    kids[parent] = {node}
                elif node in got:
                    parent = node
                    continue
                else:
                    got.add(node)
                parent = node
        else:
            for i in range(1, len(parts)):
                d = "/".join(parts[:i])
                others[d] = others.get(d, 0) + 1
    if not wanted:
        return []
    specs = set(kids.get("", ()))
    above = {n[:i] for n in never for i in range(len(n)) if n[i] == "/"}  # the directories above them
    if len(specs) > limit:
        return _apart(specs, kids, above) if never else ["."]
    while True:
        for _n, d in sorted((-others.get(d, 0), d) for d in specs if d in kids and others.get(d, 0) > 0):
            if len(specs) - 1 + len(kids[d]) <= limit:
                specs.discard(d)
                specs.update(kids[d])
                break
        else:
            return _apart(specs, kids, above)


def _apart(specs: set[str], kids: Mapping[str, set[str]], above: set[str]) -> list[str]:
    """``specs`` with every directory in ``above`` replaced by its entries that hold a wanted file
    (``kids``), until none is left (a wanted file is never in ``above``: it is not a directory)."""
    out = set(specs)
    todo = sorted(d for d in out if d in above)
    while todo:
        d = todo.pop()
        out.discard(d)
        for k in kids.get(d, ()):
            out.add(k)
            if k in above:
                todo.append(k)
    return sorted(out)


def word_bags(files: Sequence[str], dirs: Iterable[str]) -> dict[str, dict[str, int]]:
    """For each directory, how many of its code files' relative paths hold each word, and under
    ``FILES`` how many code files it holds."""
    want = set(dirs)
    bags: dict[str, dict[str, int]] = {d: {} for d in want}
    seen: dict[str, list[str]] = {}
    for f in files:
        parts = f.split("/")
        for i in range(1, len(parts)):
            d = "/".join(parts[:i])
            if d not in want:
                continue
            rel = "/".join(parts[i - 1 :])  # with the directory's own name: it says what the files are
            toks = seen.get(rel)
            if toks is None:
                stem = rel.rsplit(".", 1)[0]
                toks = sorted(set(tokens(re.sub(r"[/._-]+", " ", stem))))
                seen[rel] = toks
            bag = bags[d]
            bag[FILES] = bag.get(FILES, 0) + 1
            for t in toks:
                bag[t] = bag.get(t, 0) + 1
    return bags


class TreeCache:
    """``code_files`` and ``word_bags`` of one tree, kept on this machine
    (``<git common dir>/pilot/area/tree-<code>``): neither depends on the task, only on the
    tracked paths, the candidate documents' directories and the code (``cache.code_id``), so a
    new task on an unchanged tree reads them back instead of tokenizing every code file's path
    again (vercel/ai: 3,500 code files under 107 directories, ~100 ms). One tree is kept: another
    tree's answer replaces it. Best effort: a record that cannot be read or written is worked out."""

    def __init__(self, pilot_dir: Path | None) -> None:
        self.path: Path | None = None
        self._record: tuple[str, list[str], str, dict[str, dict[str, int]], list[str]] = ("", [], "", {}, [])
        self._changed = False
        if pilot_dir is None:
            return
        from gitpilot.context.cache import code_id

        self.path = pilot_dir / "area" / f"tree-{code_id()[:16]}"
        got = read_kept(self.path)
        if _valid_record(got):
            self._record = got

    def code_files(self, paths: Sequence[str], is_credential: Any, links: Sequence[str] = ()) -> list[str]:
        """``code_files(paths, is_credential, links)``."""
        key = _digest("paths", paths, "links", sorted(set(links)))
        if self.path is not None and self._record[0] == key and _covers(self._record[4], self._record[1]):
            return list(self._record[1])
        files = code_files(paths, is_credential, links)
        never = [p for p in paths if is_credential(p)]
        self._record = (key, files, "", {}, covering(paths, files, never=never))
        self._changed = True
        return list(files)

    def within(self) -> list[str]:
        """``covering(paths, files)`` of the last ``code_files`` (the pathspecs of the names' search)."""
        return list(self._record[4])

    def word_bags(self, files: Sequence[str], dirs: Iterable[str]) -> dict[str, dict[str, int]]:
        """``word_bags(files, dirs)``."""
        want = sorted(set(dirs))
        key = _digest("files", files, "dirs", want)
        rec = self._record
        if self.path is not None and rec[2] == key:
            return {d: dict(bag) for d, bag in rec[3].items()}
        bags = word_bags(files, want)
        if rec[1] == list(files):  # kept beside the code files they were counted from
            self._record = (rec[0], rec[1], key, bags, rec[4])
            self._changed = True
        return {d: dict(bag) for d, bag in bags.items()}

    def save(self) -> None:
        if not self._changed or self.path is None:
            return
        keep(self.path, self._record)
        self._changed = False


def _covers(specs: Sequence[str], files: Sequence[str]) -> bool:
    """Whether every one of ``files`` is one of the pathspecs ``specs`` or lies below one (a
    record whose pathspecs would hide a code file from the search is not used)."""
    if list(specs) == ["."]:
        return True
    held = set(specs)
    for f in files:
        if f in held:
            continue
        i = f.find("/")
        while i >= 0 and f[:i] not in held:
            i = f.find("/", i + 1)
        if i < 0:
            return False
    return True


def _digest(*parts: str | Sequence[str]) -> str:
    """blake3 over each part's items, each ended by a NUL, each part by \\1 (the bytes hashed
    at once: one encoding, not one a path)."""
    import blake3

    h = blake3.blake3()
    for part in parts:
        items = [part] if isinstance(part, str) else part
        h.update(("\0".join(items) + ("\0\1" if items else "\1")).encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def _valid_record(got: object) -> bool:
    if not (isinstance(got, tuple) and len(got) == 5):
        return False
    key, files, bag_key, bags, within = got
    return (
        isinstance(key, str)
        and isinstance(bag_key, str)
        and isinstance(files, list)
        and all(isinstance(f, str) for f in files)
        and isinstance(within, list)
        and all(isinstance(f, str) for f in within)
        and isinstance(bags, dict)
        and all(
            isinstance(d, str) and isinstance(bag, dict)
            and all(isinstance(t, str) and type(n) is int for t, n in bag.items())
            for d, bag in bags.items()
        )
    )


def scores(
    bags: Mapping[str, Mapping[str, int]],
    query: Mapping[str, float],
    found: Mapping[str, Sequence[str]],
    named_files: Sequence[str] = (),
    common: Mapping[str, float] | None = None,
) -> Area:
    """The area of each directory in ``bags`` from the words and the names found.

    A directory is the task's area for what is particular to it: each word counts by the share
    of the directory's files that hold it (``FILES``), and each name by the share of its files
    that hold the name, so ``models/`` with thirty model files beats the package above it that
    holds them among three hundred others. A word most of the candidate documents use
    (``common``: the share of them; the project's own name) says nothing of an area."""
    n = len(bags) or 1
    common = common or {}
    df = dict.fromkeys(query, 0)
    for bag in bags.values():
        for t in query:
            if t in bag:
                df[t] += 1
    out: dict[str, float] = {}
    for d, bag in bags.items():
        total = 0.0
        size = bag.get(FILES) or 1
        for t, w in query.items():
            f = bag.get(t)
            if f:
                share = min(1.0, f / size)
                idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                total += w * (1.0 - common.get(t, 0.0)) * idf * share * f / (f + K1)
        out[d] = total
    for _name, hits in sorted(found.items()):
        if not hits:
            continue
        under: dict[str, int] = {}
        for hit in hits:
            parts = hit.split("/")
            for i in range(1, len(parts)):
                key = "/".join(parts[:i])
                if key in bags:
                    under[key] = under.get(key, 0) + 1
        rarity = math.log(1 + 10 / len(hits))
        for d, c in under.items():
            size = bags[d].get(FILES) or c
            out[d] = out.get(d, 0.0) + NAME_WEIGHT * rarity * c / len(hits) * math.sqrt(min(1.0, c / size))
    best = max(out.values(), default=0.0)
    scaled = {d: v / best for d, v in out.items() if v > 0} if best > 0 else {}
    return Area(scaled, _core(named_files, found))


def _core(named_files: Sequence[str], found: Mapping[str, Sequence[str]]) -> list[str]:
    """``Area.core``: the files the task names, and those of each of its names found in at most
    ``CORE_HITS`` files, or else of its rarest names."""
    counts = [len(h) for h in found.values() if h]
    limit = max(CORE_HITS, min(counts, default=0))
    core = set(named_files)
    for hits in found.values():
        if hits and len(hits) <= limit:
            core.update(hits)
    return sorted(core)[:MAX_AREA_FILES]


def common_words(query: Mapping[str, float], docs: Sequence[Any]) -> dict[str, float]:
    """For each query word, the share of the candidate documents whose text holds it."""
    if not docs:
        return {}
    out = dict.fromkeys(query, 0)
    for d in docs:
        for t in d.terms.held(query):
            out[t] += 1
    return {t: c / len(docs) for t, c in out.items()}


def doc_dirs(paths: Iterable[str]) -> list[str]:
    """The directories (not the root) that hold a candidate document and are code, not docs or
    a tool's configuration."""
    out = {p.rsplit("/", 1)[0] for p in paths if "/" in p}
    return sorted(d for d in out if not _NOT_CODE.search(d + "/") and not _TOOL_DIR.search(d + "/"))
