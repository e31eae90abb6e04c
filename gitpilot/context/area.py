"""The task's area in the code: which directories with documents of their own it concerns.

Tasks name their area in their own words or by identifiers, flags and config keys that live in
that directory, rarely by path. Two kinds of evidence, both from the tree:

- **names**: every identifier the task gives (``RESTClient``, ``duckdb_appender_column_count``,
  ``--save-peer``) is searched for with ``git grep`` in the code files (never in documentation,
  tests or fixtures, never in a credential-named file or a symlink); a directory holding many of
  an identifier's files gets much of its weight, a rare identifier more than a common one;
- **words**: each directory is described by the words of the paths of the code files below it
  (``discovery/consul/consul.go``: "discovery", "consul"), scored with BM25 against the task's
  words, so "a new service discovery mechanism" points at ``discovery/``.

Only directories that hold a candidate document (``discovery/README.md``) are scored, the root
never (every document is below it). Scores are divided by the best, so the area of the top
directory is 1. ``area_files`` (the files the names were found in, and those the task names) is
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

K1 = 1.2
B = 0.5
NAME_WEIGHT = 2.0  # of one identifier's evidence, against the words' BM25
MAX_NAMES = 12  # identifiers searched, at most
MAX_ARG_BYTES = 96_000  # file arguments per git grep
MAX_AREA_FILES = 2000
_DOC_EXT = (".md", ".mdx", ".markdown", ".rst", ".txt", ".mdc", ".adoc")
# Parts of a path that are not the code of an area: tests, fixtures, examples, vendored code, docs.
_NOT_CODE = re.compile(
    r"(^|/)(tests?|testdata|test[-_]data|fixtures?|__tests__|__snapshots__|snapshots|cassettes|"
    r"examples?|vendor|third[-_]party|node_modules|benchmarks?|docs?|documentation)(/|$)",
    re.I,
)
_NAME_KINDS = ("code", "camel", "snake", "call", "flag")


@dataclass
class Area:
    """The area scores by directory and the files the evidence came from."""

    scores: dict[str, float] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)


def code_files(paths: Iterable[str], is_credential: Any, links: Iterable[str] = ()) -> list[str]:
    """Tracked files that are code of an area: not documentation, tests, fixtures or examples,
    not credential-named, not symlinks."""
    skip = set(links)
    return [
        p
        for p in sorted(paths)
        if p not in skip and not p.lower().endswith(_DOC_EXT) and not _NOT_CODE.search(p) and not is_credential(p)
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
    """``git grep -l`` for each name over the code files, started now, read by ``result``."""

    def __init__(self, root: Path, files: Sequence[str], names: Sequence[str]) -> None:
        from gitpilot.gitrun import start_git

        self.names = list(names)
        self.procs: list[tuple[str, Any]] = []
        if not self.names or not files:
            return
        for name in self.names:
            for chunk in _chunks(files):
                args = ["grep", "-l", "-I", "-F", "--no-color", "-e", name, "--", *chunk]
                self.procs.append((name, start_git(args, root, env={"GIT_LITERAL_PATHSPECS": "1"})))

    def result(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {n: [] for n in self.names}
        for name, proc in self.procs:
            data, _ = proc.communicate()
            out[name].extend(p.decode("utf-8", "surrogateescape") for p in data.split(b"\n") if p)
        return {n: sorted(set(v)) for n, v in out.items()}


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


def start(root: Path, files: Sequence[str], ids: Sequence[Identifier]) -> Search:
    return Search(root, files, names_of(ids))


def word_bags(files: Sequence[str], dirs: Iterable[str]) -> dict[str, dict[str, int]]:
    """For each directory, how many of its code files' relative paths hold each word."""
    want = set(dirs)
    bags: dict[str, dict[str, int]] = {d: {} for d in want}
    seen: dict[str, list[str]] = {}
    for f in files:
        parts = f.split("/")
        for i in range(1, len(parts)):
            d = "/".join(parts[:i])
            if d not in want:
                continue
            rel = "/".join(parts[i:])
            toks = seen.get(rel)
            if toks is None:
                stem = rel.rsplit(".", 1)[0]
                toks = sorted(set(tokens(re.sub(r"[/._-]+", " ", stem))))
                seen[rel] = toks
            bag = bags[d]
            for t in toks:
                bag[t] = bag.get(t, 0) + 1
    return bags


def scores(
    bags: Mapping[str, Mapping[str, int]],
    query: Mapping[str, float],
    found: Mapping[str, Sequence[str]],
    named_files: Sequence[str] = (),
) -> Area:
    """The area of each directory in ``bags`` from the words and the names found."""
    n = len(bags) or 1
    df = dict.fromkeys(query, 0)
    for bag in bags.values():
        for t in query:
            if t in bag:
                df[t] += 1
    lens = {d: sum(b.values()) for d, b in bags.items()}
    avg = (sum(lens.values()) / n) or 1.0
    out: dict[str, float] = {}
    for d, bag in bags.items():
        total = 0.0
        norm = K1 * (1 - B + B * lens[d] / avg)
        for t, w in query.items():
            f = bag.get(t)
            if f:
                total += w * math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) * f * (K1 + 1) / (f + norm)
        out[d] = total
    files: set[str] = set(named_files)
    for _name, hits in sorted(found.items()):
        if not hits:
            continue
        files.update(hits)
        under: dict[str, int] = {}
        for hit in hits:
            parts = hit.split("/")
            for i in range(1, len(parts)):
                key = "/".join(parts[:i])
                if key in bags:
                    under[key] = under.get(key, 0) + 1
        rarity = math.log(1 + 10 / len(hits))
        for d, c in under.items():
            out[d] = out.get(d, 0.0) + NAME_WEIGHT * rarity * c / len(hits)
    best = max(out.values(), default=0.0)
    scaled = {d: v / best for d, v in out.items() if v > 0} if best > 0 else {}
    return Area(scaled, sorted(files)[:MAX_AREA_FILES])


def doc_dirs(paths: Iterable[str]) -> list[str]:
    """The directories (not the root) that hold a candidate document and are code, not docs."""
    out = {p.rsplit("/", 1)[0] for p in paths if "/" in p}
    return sorted(d for d in out if not _NOT_CODE.search(d + "/"))
