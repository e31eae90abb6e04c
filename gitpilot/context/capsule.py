"""Assembly of the Context Capsule, and ``build_capsule``, its public entry point.

The capsule holds, in this order: the task verbatim; a summary of the configuration; the
agent's memory files listed by path and hash; the instruction files in full; the mandatory
sections (keyword-headed sections of rule files, ``always_include`` entries, ``pilot:always``
blocks, nested instruction files for the paths the task names); the relevant sections chosen
by ``select``; and what was left out, withheld or skipped. Every excerpt is the exact source
text with its path, heading, line range, sha256 and the signals that chose it. A file that
repeats another (a symlink, an ``@import``-only file, the same blob) is never a candidate
itself; a nested instruction file is taken whole when the best matches are about its directory,
and the budget its sections held is chosen again; when every candidate file in full costs no
more than the selection, the capsule holds them all and leaves nothing out.

The capsule and its manifest go to ``<git dir>/pilot/capsule-<task>.md`` / ``.json`` and to the
task record ``refs/pilot/tasks/<task>``. ``warm.try_reuse`` serves an unchanged capsule without
parsing anything.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitpilot.context import sources as S
from gitpilot.context.cache import fingerprint
from gitpilot.context.markdown import SectionMap, range_text, sha256_text, slug, split_lines
from gitpilot.repo import Repo

MANIFEST_FORMAT = 1
LEFT_OUT_SHOWN = 20
LEFT_OUT_FLOOR = 0.2  # of the best score: the left-out list shows near misses above it
AREA_PICKS = 3  # the best relevant excerpts whose directories say what area the task is in
AREA_HEADINGS = 6  # an excerpt with more headings than this says little of one area
PROJECT_WORD_SHARE = 0.5  # a directory name in more of the context files than this names the project
PROJECT_WORD_MIN_FILES = 10  # (too few files to tell)
PROJECT_WORD_SAMPLE = 400  # files looked at, at most, in a larger tree
_NO_SRC = S.Source("", set(), "")
_SKIP_STATUSES = {"ignored", "credential", "outside", "missing", "not-utf8", "too-large"}


@dataclass
class CapsuleResult:
    """What ``build_capsule`` made (or reused)."""

    text: str
    manifest: dict[str, Any]
    path: Path | None
    reused: bool
    baseline_bytes: int
    capsule_bytes: int
    task_id: str = ""
    json_path: Path | None = None


def build_capsule(repo: Repo, task_text: str, *, use_cache: bool = True) -> CapsuleResult:
    """The capsule for ``task_text`` in ``repo``: reused when its fingerprint matches, else built."""
    from gitpilot.context import stamp, warm

    if use_cache and repo.root is not None:
        hit = stamp.express(repo.root, task_text)
        if hit is not None:
            return result_from_hit(hit)
    state = warm.prepare(repo, task_text)
    if use_cache:
        reused = warm.try_reuse(repo, state)
        if reused is not None:
            return reused
    return _build(repo, task_text, state, use_cache=use_cache)


def result_from_hit(hit: Any) -> CapsuleResult:
    """The result for a capsule served by its stamp (the manifest is read from its file)."""
    try:
        manifest = json.loads(Path(hit.json_path).read_bytes())
    except (OSError, ValueError):
        manifest = {}
    return CapsuleResult(
        hit.body.decode("utf-8"),
        manifest,
        Path(hit.md_path),
        True,
        int(hit.stamp["baseline_bytes"]),
        len(hit.body),
        hit.task_id,
        Path(hit.json_path),
    )


def build_from_state(repo: Repo, state: Any, *, use_cache: bool = True) -> CapsuleResult:
    """A fresh build from an already prepared state (the warm path missed)."""
    return _build(repo, state.task_text, state, use_cache=use_cache)


def _build(repo: Repo, task_text: str, state: Any, *, use_cache: bool) -> CapsuleResult:
    # Tens of thousands of small objects and no cycles: the cyclic collector only costs time here.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _build_capsule(repo, task_text, state, use_cache=use_cache)
    finally:
        if enabled:
            gc.enable()


# --- building ---------------------------------------------------------------------------------


@dataclass
class _Piece:
    """An excerpt: exact lines of one file."""

    path: str
    start: int
    end: int
    heading: str
    why: str
    text: str

    @property
    def sha256(self) -> str:
        return sha256_text(self.text)


@dataclass
class _Files:
    """Texts and maps of the readable sources."""

    texts: dict[str, str] = field(default_factory=dict)
    lines: dict[str, list[str]] = field(default_factory=dict)
    maps: dict[str, SectionMap] = field(default_factory=dict)
    parsed: int = 0


def _build_capsule(repo: Repo, task_text: str, state: Any, *, use_cache: bool) -> CapsuleResult:
    from gitpilot.redact import contains_secret, is_credential_filename

    root: Path = state.root
    opts: S.Options = state.options
    srcs: dict[str, S.Source] = state.sources
    skipped: list[tuple[str, str]] = []
    files = _Files()
    _expand_imports(root, state.inventory, srcs, is_credential_filename, files, skipped)
    _read_all(root, srcs, files, skipped)
    _load_maps(repo, srcs, files, contains_secret, use_cache)

    ids = _identifiers(task_text)
    shown: dict[str, list[tuple[int, int]]] = {}
    withheld: list[_Piece] = []
    instr, aliases = _instructions(srcs, files, opts, shown, withheld)
    copies = _copies(srcs, files, shown)
    mandatory = _mandatory(root, srcs, files, opts, task_text, ids, shown, withheld, skipped, copies)
    from gitpilot.context.select import Doc, Ranking

    docs = [
        Doc(p, files.maps[p], files.lines[p], rule=("rule" in s.roles), nested=("nested" in s.roles))
        for p, s in srcs.items()
        if p in files.maps
        and _candidate(s)
        and p not in copies
        and not _repeats_shown(p, srcs, files, shown, copies)
    ]
    ranking = Ranking(docs, task_text, shown)
    sel = ranking.choose(opts.max_excerpt_bytes, opts.max_section_bytes)
    whole = _matching_nested(srcs, files, sel, shown, copies, opts.max_section_bytes)
    if whole:
        # Shown in full now: its sections leave the choice, and the budget they held is refilled.
        sel = ranking.choose(opts.max_excerpt_bytes, opts.max_section_bytes, frozenset(whole))
    mandatory += [
        piece
        for path in whole
        for piece in _whole(
            path,
            files,
            "",
            f"nested instruction file for `{_dir(path)}/`, the area of the best matches",
            shown,
            withheld,
        )
    ]
    relevant = [
        _Piece(
            p.path,
            p.start,
            p.end,
            p.heading,
            "; ".join(p.signals),
            range_text(files.lines[p.path], p.start, p.end),
        )
        for p in sel.picks
    ]
    ignored = S.ignored_context_files(root, opts)
    for name in ignored:
        if not any(n == name for n, _ in skipped):
            skipped.append((name, "ignored by git: not read"))
    text = _render(state, repo, srcs, files, instr, aliases, mandatory, relevant, sel, withheld, skipped)
    every = _everything(docs, files, sel, shown, withheld, len(text.encode("utf-8")))
    if every is not None:
        full = _render(
            state, repo, srcs, files, instr, aliases, mandatory, every[0], every[2], every[1], skipped
        )
        if len(full.encode("utf-8")) <= len(text.encode("utf-8")):
            # The whole context costs no more than a selection from it: every file in full.
            (relevant, withheld, sel), text = every, full
    manifest = _manifest(state, srcs, files, instr, mandatory, relevant, sel, withheld, skipped, text)
    return _write(repo, state, text, manifest)


def _everything(
    docs: Sequence[Any],
    files: _Files,
    sel: Any,
    shown: Mapping[str, Sequence[tuple[int, int]]],
    withheld: Sequence[_Piece],
    capsule_bytes: int,
) -> tuple[list[_Piece], list[_Piece], Any] | None:
    """Every candidate file in full (minus what is shown already), nothing left out: the capsule
    for a repository whose whole context is small (a selection and its left-out list can cost
    more than the files). Files with chosen excerpts come first, in the selection's order."""
    from dataclasses import replace

    if sum(len(files.texts[d.path].encode("utf-8")) for d in docs) > capsule_bytes:
        return None  # the files alone exceed the selective capsule
    order: dict[str, int] = {}
    for i, pick in enumerate(sel.picks):
        order.setdefault(pick.path, i)
    paths = sorted((d.path for d in docs), key=lambda p: (order.get(p, len(order)), p))
    seen = {k: list(v) for k, v in shown.items()}
    held = list(withheld)
    pieces = [pc for p in paths for pc in _whole(p, files, "", "context file, in full", seen, held)]
    return pieces, held, replace(sel, picks=[], left_out=[], left_out_total=0, complete=True)


def _copies(
    srcs: Mapping[str, S.Source], files: _Files, shown: Mapping[str, Sequence[tuple[int, int]]]
) -> dict[str, str]:
    """Files that repeat another source (a symlink, a file of ``@imports`` only, the same blob),
    each with the file it repeats.

    Their text is reached through the original, so they are never candidates themselves
    (neither for keyword-mandatory nor for relevant sections). Of identical files the one shown
    in full wins, else the first by path.
    """
    out = {p: s.alias_of for p, s in srcs.items() if s.alias_of}
    for path, text in files.texts.items():
        if path in srcs and path not in out and S.only_imports(text):
            base = _dir(path)
            targets = [t for t in (S.normalize(base, i) for i in S.imports_of(text)) if t]
            out[path] = targets[0] if targets else ""
    first: dict[str, str] = {}
    for path in sorted(srcs, key=lambda p: (p not in shown, p)):
        blob = srcs[path].blob
        if path in out or path not in files.texts or not blob:
            continue
        if blob in first:
            out[path] = first[blob]
        else:
            first[blob] = path
    return out


def _candidate(src: S.Source) -> bool:
    roles = src.roles
    if src.status in _SKIP_STATUSES:
        return False
    if "memory" in roles and "instruction" not in roles:
        return False  # the agent loads its memory itself: not repeated
    return bool(roles & {"context", "rule", "nested", "always"})


def _expand_imports(
    root: Path,
    inv: S.Inventory,
    srcs: dict[str, S.Source],
    cred: Callable[[str], bool],
    files: _Files,
    skipped: list[tuple[str, str]],
) -> None:
    """Follow ``@imports`` of memory and instruction files (depth 5), adding them as sources."""
    queue = [(p, 0) for p, s in srcs.items() if s.roles & {"memory", "instruction"}]
    seen = {p for p, _ in queue}
    while queue:
        path, depth = queue.pop(0)
        src = srcs[path]
        if src.status in _SKIP_STATUSES or depth >= S.IMPORT_DEPTH:
            continue
        loaded = _read_one(root, src, files)
        if loaded is None:
            continue
        base = path.rsplit("/", 1)[0] if "/" in path else ""
        for spec in S.imports_of(loaded):
            rel = S.normalize(base, spec)
            if rel is None or not S.inside(root, rel):
                skipped.append((spec, f"imported by {path}: outside the repository, refused"))
                continue
            if rel not in srcs:
                srcs[rel] = S.Source(rel, {"import", "memory", "rule"}, "")
                S.settle(root, inv, {rel: srcs[rel]}, cred)
            else:
                srcs[rel].roles.update({"import", "memory", "rule"})
            if rel not in seen and srcs[rel].status not in _SKIP_STATUSES and _markdownish(rel):
                seen.add(rel)
                queue.append((rel, depth + 1))
    for path in sorted(srcs):
        src = srcs[path]
        target: str | None = None
        if src.status not in ("credential", "outside"):
            target = S.link_target(root, path)
        if target == "":
            src.status = "outside"
            src.note = "a symlink that leaves the repository"
        elif target:
            src.alias_of = target
            if target not in srcs:
                srcs[target] = S.Source(target, set(), "")
                S.settle(root, inv, {target: srcs[target]}, cred)
            srcs[target].roles.update(r for r in src.roles if r in ("instruction", "memory", "rule"))


def _markdownish(path: str) -> bool:
    return path.lower().endswith((".md", ".mdx", ".markdown", ".txt"))


def _read_one(root: Path, src: S.Source, files: _Files) -> str | None:
    if src.path in files.texts:
        return files.texts[src.path]
    if src.status in _SKIP_STATUSES:
        return None
    loaded = S.read_text(root, src.path)
    if loaded.text is None:
        src.status = loaded.status
        src.blob = "" if loaded.status == "outside" else src.blob
        return None
    files.texts[src.path] = loaded.text
    return loaded.text


def _read_all(root: Path, srcs: dict[str, S.Source], files: _Files, skipped: list[tuple[str, str]]) -> None:
    for path, src in srcs.items():
        if src.alias_of:
            continue
        if src.status not in _SKIP_STATUSES and (_markdownish(path) or "always" in src.roles):
            _read_one(root, src, files)
        if src.status in _SKIP_STATUSES and src.status != "missing":
            skipped.append((path, _STATUS_WORDS[src.status] + (f" ({src.note})" if src.note else "")))
        elif src.status == "missing" and src.roles & {"always", "import"}:
            skipped.append((path, "named in the configuration or an import, but missing"))


_STATUS_WORDS = {
    "ignored": "ignored by git: not read",
    "credential": "named like a credential file: never opened",
    "outside": "outside the repository: refused",
    "not-utf8": "not UTF-8 text: skipped",
    "too-large": f"larger than {S.MAX_FILE_BYTES} bytes: skipped",
    "missing": "missing",
}


def _load_maps(
    repo: Repo,
    srcs: Mapping[str, S.Source],
    files: _Files,
    contains_secret: Callable[[str], bool],
    use_cache: bool,
) -> None:
    from gitpilot.context import markdown
    from gitpilot.context.cache import load_maps

    for path, text in files.texts.items():
        files.lines[path] = split_lines(text)
    md = {
        p: (srcs[p].blob, t, files.lines[p]) for p, t in files.texts.items() if _markdownish(p) or p in srcs
    }
    clean = {p: v for p, v in md.items() if not contains_secret(v[1])}
    maps, parsed = load_maps(
        repo, clean, lambda text, lines: markdown.parse(text, None, lines), use_cache=use_cache
    )
    for path in sorted(set(md) - set(clean)):
        # A file with a credential in it: parsed fresh so the withheld flags are current.
        maps[path] = markdown.parse(md[path][1], contains_secret, md[path][2])
        parsed += 1
    files.maps = maps
    files.parsed = parsed


def _identifiers(task: str) -> list[str]:
    from gitpilot.context.text import identifiers, named_paths

    return named_paths(identifiers(task))


# --- instruction files and mandatory material -------------------------------------------------


def _pieces(
    path: str,
    smap: SectionMap,
    lines: Sequence[str],
    start: int,
    end: int,
    label: str,
    why: str,
    shown: dict[str, list[tuple[int, int]]],
    withheld: list[_Piece],
) -> list[_Piece]:
    """Lines ``start..end`` of a file as excerpts, minus lines shown already and withheld sections."""
    blocked: set[int] = set()
    for a, b in shown.get(path, ()):
        blocked.update(range(a, b + 1))
    for sec in smap.sections:
        if sec.withheld and start <= sec.start <= end and sec.start not in blocked:
            heading = " › ".join(smap.heading_path(sec.pos)) or "(preamble)"
            if not any(w.path == path and w.start == sec.start for w in withheld):
                withheld.append(_Piece(path, sec.start, sec.body_end, heading, "holds a credential", ""))
            blocked.update(range(sec.start, sec.body_end + 1))
    out: list[_Piece] = []
    run: list[int] = []
    for ln in range(start, end + 1):
        if ln in blocked:
            if run:
                out.append(_piece_of(path, smap, lines, run[0], run[-1], label, why))
                run = []
            continue
        run.append(ln)
    if run:
        out.append(_piece_of(path, smap, lines, run[0], run[-1], label, why))
    out = [p for p in out if p.text.strip()]
    shown.setdefault(path, []).append((start, end))
    return out


def _piece_of(
    path: str, smap: SectionMap, lines: Sequence[str], a: int, b: int, label: str, why: str
) -> _Piece:
    while b > a and not lines[b - 1].strip():
        b -= 1
    while a < b and not lines[a - 1].strip():
        a += 1
    return _Piece(path, a, b, label or _heading_at(smap, a), why, range_text(lines, a, b))


def _heading_at(smap: SectionMap, line: int) -> str:
    best = None
    for sec in smap.sections:
        if sec.start <= line <= max(sec.end, sec.start):
            best = sec
    return " › ".join(smap.heading_path(best.pos)) if best is not None else ""


def _whole(
    path: str,
    files: _Files,
    label: str,
    why: str,
    shown: dict[str, list[tuple[int, int]]],
    withheld: list[_Piece],
) -> list[_Piece]:
    lines = files.lines[path]
    if not lines:
        return []
    return _pieces(path, files.maps[path], lines, 1, len(lines), label, why, shown, withheld)


def _instructions(
    srcs: Mapping[str, S.Source],
    files: _Files,
    opts: S.Options,
    shown: dict[str, list[tuple[int, int]]],
    withheld: list[_Piece],
) -> tuple[list[_Piece], list[str]]:
    """Root instruction files in full; a symlink, an import-only file or a byte-identical copy
    is included once, as the file it repeats."""
    pieces: list[_Piece] = []
    notes: list[str] = []
    done: set[str] = set()
    by_text: dict[str, str] = {}
    for name in opts.instruction_files:
        src = srcs.get(name)
        if src is None or src.status in _SKIP_STATUSES:
            continue
        targets = [name]
        if src.alias_of:
            notes.append(f"`{name}` is a symlink to `{src.alias_of}`")
            targets = [src.alias_of]
        elif name in files.texts and S.only_imports(files.texts[name]):
            base = name.rsplit("/", 1)[0] if "/" in name else ""
            targets = [t for t in (S.normalize(base, i) for i in S.imports_of(files.texts[name])) if t]
            notes.append(f"`{name}` only imports " + ", ".join(f"`{t}`" for t in targets))
        for t in targets:
            if t in done or t not in files.maps:
                continue
            done.add(t)
            same = by_text.get(files.texts.get(t, ""))
            if same is not None:
                notes.append(f"`{t}` is identical to `{same}`")
                continue
            by_text.setdefault(files.texts.get(t, ""), t)
            pieces += _whole(t, files, "", "instruction file, in full", shown, withheld)
    return pieces, notes


def _keyword_rx(words: Iterable[str]) -> re.Pattern[str] | None:
    alts = [r"\s+".join(re.escape(w) for w in word.split()) for word in words if word.strip()]
    return re.compile(r"(?<![\w])(?:" + "|".join(alts) + r")(?![\w])", re.IGNORECASE) if alts else None


def _mandatory(
    root: Path,
    srcs: Mapping[str, S.Source],
    files: _Files,
    opts: S.Options,
    task: str,
    named: Sequence[str],
    shown: dict[str, list[tuple[int, int]]],
    withheld: list[_Piece],
    skipped: list[tuple[str, str]],
    copies: Mapping[str, str],
) -> list[_Piece]:
    out: list[_Piece] = []
    out += _nested(srcs, files, task, named, shown, withheld, copies)
    out += _always_include(srcs, files, opts, shown, withheld, skipped)
    rx = _keyword_rx(opts.always_include_headings)
    regions: list[tuple[str, int, int]] = []  # mandatory text, shown here or in a file in full
    for path, src in srcs.items():
        smap = files.maps.get(path)
        if smap is None or path in copies:
            continue
        if rx is not None and "rule" in src.roles:
            for sec in smap.sections:
                m = rx.search(sec.title) if sec.level else None
                if m:
                    regions.append((path, sec.start, sec.end))
                    out += _pieces(
                        path,
                        smap,
                        files.lines[path],
                        sec.start,
                        sec.end,
                        "",
                        f"heading names “{m.group(0)}” in a rule file",
                        shown,
                        withheld,
                    )
        if _candidate(src) or "rule" in src.roles:
            for a, b in smap.always:
                regions.append((path, a, b))
                out += _pieces(path, smap, files.lines[path], a, b, "", "pilot:always block", shown, withheld)
    out += _deferred_details(regions, srcs, files, opts, shown, withheld, copies)
    return out


def _deferred_details(
    regions: Sequence[tuple[str, int, int]],
    srcs: Mapping[str, S.Source],
    files: _Files,
    opts: S.Options,
    shown: dict[str, list[tuple[int, int]]],
    withheld: list[_Piece],
    copies: Mapping[str, str],
) -> list[_Piece]:
    """What the instruction files order read, whole, and the section a mandatory rule points to
    for its details (``context/deferred.py``); together at most one ``max_section_bytes``."""
    from gitpilot.context.deferred import deferred, required_reading

    maps = {p: m for p, m in files.maps.items() if p in srcs and p not in copies}
    out: list[_Piece] = []
    budget = opts.max_section_bytes
    for path in sorted(shown):
        if "instruction" not in srcs.get(path, _NO_SRC).roles or path not in maps:
            continue
        for dest, line, size in required_reading(
            path, maps[path], files.lines[path], maps, files.lines, budget
        ):
            if _within(shown.get(dest, ()), 1, len(files.lines[dest])):
                continue
            budget -= size
            out += _whole(dest, files, "", f"required reading named at {path}:{line}", shown, withheld)
    for dest, sec, src_path, line in deferred(regions, maps, files.lines, budget):
        why = f"details of the mandatory rule at {src_path}:{line}"
        out += _pieces(dest, maps[dest], files.lines[dest], sec.start, sec.end, "", why, shown, withheld)
    return out


def _within(ranges: Iterable[tuple[int, int]], a: int, b: int) -> bool:
    return any(x <= a and b <= y for x, y in ranges)


def _nested(
    srcs: Mapping[str, S.Source],
    files: _Files,
    task: str,
    named: Sequence[str],
    shown: dict[str, list[tuple[int, int]]],
    withheld: list[_Piece],
    copies: Mapping[str, str],
) -> list[_Piece]:
    """Nested AGENTS.md/CLAUDE.md in full when the task names a path (or the directory) they govern."""
    tracked = [p for p, s in srcs.items()]
    out: list[_Piece] = []
    for path, src in srcs.items():
        if "nested" not in src.roles or path not in files.maps or src.status in _SKIP_STATUSES:
            continue
        if _repeats_shown(path, srcs, files, shown, copies):
            continue
        directory = path.rsplit("/", 1)[0]
        base = directory.rsplit("/", 1)[-1]
        word_rx = re.compile(r"(?<![\w/.-])" + re.escape(base) + r"(?![\w-])", re.IGNORECASE)
        by_word = len(base) >= 3 and word_rx.search(task) and not _names_the_project(word_rx, files)
        by_path = re.search(r"(?<![\w/.-])" + re.escape(directory) + r"(?![\w-])", task, re.IGNORECASE)
        if S.applies_to(named, directory, tracked) or by_word or by_path:
            why = f"nested instruction file for `{directory}/`, which the task names"
            out += _whole(path, files, "", why, shown, withheld)
    return out


def _names_the_project(word_rx: re.Pattern[str], files: _Files) -> bool:
    """Whether a directory's name is a word most of the documentation uses: then it names the
    project (``src/prefect/`` in Prefect's repository), and a task that says it names no area."""
    paths = sorted(files.texts)
    if len(paths) < PROJECT_WORD_MIN_FILES:
        return False
    if len(paths) > PROJECT_WORD_SAMPLE:  # a huge tree: an evenly spaced sample tells the share
        step = len(paths) / PROJECT_WORD_SAMPLE
        paths = [paths[int(i * step)] for i in range(PROJECT_WORD_SAMPLE)]
    need = PROJECT_WORD_SHARE * len(paths)
    found = 0
    for i, path in enumerate(paths):
        if word_rx.search(files.texts[path]):
            found += 1
            if found > need:
                return True
        elif found + (len(paths) - i - 1) <= need:
            return False  # the rest cannot make it most
    return False


def _repeats_shown(
    path: str,
    srcs: Mapping[str, S.Source],
    files: _Files,
    shown: Mapping[str, Sequence[tuple[int, int]]],
    copies: Mapping[str, str],
) -> bool:
    """Whether the text of ``path`` is shown in full already under another path (the file it
    repeats, or one with the same blob), or is a link or import of a file beside it (which
    applies on its own). A copy that governs another directory is still shown when it applies
    and its original is not."""
    if (
        path in copies
        and _dir(copies[path]) == _dir(path)
        and "nested" in srcs.get(copies[path], _NO_SRC).roles
    ):
        return True
    blob = srcs[path].blob
    for other, ranges in shown.items():
        if (
            other == path
            or other not in srcs
            or not (other == copies.get(path) or (blob and srcs[other].blob == blob))
        ):
            continue
        if any(a <= 1 and b >= len(files.lines.get(other, ())) for a, b in ranges):
            return True
    return False


def _dir(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def _matching_nested(
    srcs: Mapping[str, S.Source],
    files: _Files,
    sel: Any,
    shown: Mapping[str, Sequence[tuple[int, int]]],
    copies: Mapping[str, str],
    max_bytes: int,
) -> list[str]:
    """Nested instruction files (not already in full) for the area the best matches are in.

    An AGENTS.md governs its directory as a whole: when the documentation that matches the task
    best is about that directory (its name is among their path and heading words), all of it
    applies, not one matching paragraph. A section of the file that merely shares the task's
    words is no such evidence: a long file always has one.
    """
    from gitpilot.context.text import tokens

    area = _area_words(srcs, files, sel)
    out: list[str] = []
    for path, src in srcs.items():
        if "nested" not in src.roles or path not in files.maps or path in shown:
            continue
        if _repeats_shown(path, srcs, files, shown, copies) or any(
            srcs[p].blob == src.blob for p in out if src.blob
        ):
            continue
        base = _dir(path).rsplit("/", 1)[-1]
        words = set(tokens(base.replace("-", " ").replace("_", " ")))
        # an inferred area brings a short file whole; a long one's sections stay candidates
        small = len("".join(files.lines.get(path, ())).encode("utf-8")) <= max_bytes
        if words and words <= area and small:
            out.append(path)
    return out


def _area_words(srcs: Mapping[str, S.Source], files: _Files, sel: Any) -> set[str]:
    """Path and heading words of the best content matches: the area of the code the task is about.

    ``docs/ui/components.md`` or a section "Worker shutdown" among the best matches say the task
    is about ``ui`` or the ``worker``; a ``packages/ui/AGENTS.md`` or ``services/worker/AGENTS.md``
    then applies. Rule files and sections chosen only as conventions say nothing of the area.
    The area is only inferred when the best match of all is such documentation: a content match
    that scores below a convention section won on words the task shares with many pages (on real
    repositories that pulled in the instruction file of an unrelated package).
    """
    from gitpilot.context.select import GENERIC_DIRS
    from gitpilot.context.text import tokens

    words: set[str] = set()
    top = [
        p
        for p in sel.picks
        if p.content and not (srcs.get(p.path) and srcs[p.path].roles & {"rule", "nested"})
    ][:AREA_PICKS]
    if not top or any(p.score > top[0].score for p in sel.picks):
        return words
    for pick in top:
        parts = pick.path.split("/")
        parts[-1] = parts[-1].rsplit(".", 1)[0]
        for part in parts:
            if part.lower() not in GENERIC_DIRS and part.lower() not in ("readme", "index"):
                words.update(tokens(part.replace("-", " ").replace("_", " ")))
        # the headings that name the excerpt (its path, the sections merged into it) and, for a
        # short excerpt, the subsections inside it ("Rolling update › Worker shutdown"); not the
        # headings of a long one: release notes with a hundred headings name every area there is
        first, *merged = pick.heading.split(" + ")
        words.update(tokens(first.replace("›", " ")))
        smap = files.maps.get(pick.path)
        inside = [
            sec.title
            for sec in (smap.sections if smap is not None else ())
            if sec.level and pick.start <= sec.start <= pick.end
        ]
        if len(inside) <= AREA_HEADINGS:
            for title in inside + merged:
                words.update(tokens(title))
    return words


def _always_include(
    srcs: Mapping[str, S.Source],
    files: _Files,
    opts: S.Options,
    shown: dict[str, list[tuple[int, int]]],
    withheld: list[_Piece],
    skipped: list[tuple[str, str]],
) -> list[_Piece]:
    out: list[_Piece] = []
    for entry in opts.always_include:
        path, _, heading = entry.partition("#")
        src = srcs.get(path)
        if src is None or path not in files.texts:
            if src is None or src.status == "missing":
                skipped.append((entry, "always_include entry not found"))
            continue
        if path not in files.maps:
            continue
        smap = files.maps[path]
        if not heading:
            out += _whole(path, files, "", f"always_include “{entry}”", shown, withheld)
            continue
        want = " ".join(heading.split()).lower()
        hits = [
            s
            for s in smap.sections
            if s.level and (s.title.lower() == want or slug(s.title) == slug(heading))
        ]
        if not hits:
            skipped.append((entry, "always_include heading not found"))
        for sec in hits:
            out += _pieces(
                path,
                smap,
                files.lines[path],
                sec.start,
                sec.end,
                "",
                f"always_include “{entry}”",
                shown,
                withheld,
            )
    return out


# --- rendering --------------------------------------------------------------------------------


def _fence(text: str) -> str:
    longest = max((len(m.group(1)) for m in re.finditer(r"^[ \t]*(`{3,})", text, re.MULTILINE)), default=0)
    return "`" * max(4, longest + 1)


def _excerpt(p: _Piece) -> str:
    fence = _fence(p.text)
    label = f"`{p.path}`" + (f" § {p.heading}" if p.heading else "")
    body = p.text if p.text.endswith(("\n", "\r")) else p.text + "\n"
    return (
        f"#### {label}\nlines {p.start}-{p.end} · sha256 {p.sha256} · {p.why}\n\n"
        f"{fence}markdown\n{body}{fence}\n\n"
    )


def _render(
    state: Any,
    repo: Repo,
    srcs: Mapping[str, S.Source],
    files: _Files,
    instr: Sequence[_Piece],
    aliases: Sequence[str],
    mandatory: Sequence[_Piece],
    relevant: Sequence[_Piece],
    sel: Any,
    withheld: Sequence[_Piece],
    skipped: Sequence[tuple[str, str]],
) -> str:
    parts = [
        f"# Context capsule\n\n<!-- git pilot {state.version} · task {state.task_id[:16]} -->\n\n"
        "Everything below is quoted exactly from its source; the line ranges and sha256 let you check it.\n\n"
    ]
    parts.append("## Task\n\n" + state.task_text + ("" if state.task_text.endswith("\n") else "\n") + "\n")
    parts.append("## Configuration\n\n" + _config_summary(state, repo) + "\n")
    parts.append(_memory_section(srcs, files))
    parts.append("## Instruction files\n\n")
    parts.extend(f"- {a}\n" for a in aliases)
    if aliases:
        parts.append("\n")
    parts.extend(_excerpt(p) for p in instr) if instr else parts.append("None found.\n\n")
    parts.append("## Mandatory sections\n\n")
    parts.extend(_excerpt(p) for p in mandatory) if mandatory else parts.append("None.\n\n")
    parts.append("## Relevant sections\n\n")
    parts.extend(_excerpt(p) for p in relevant) if relevant else parts.append("None matched the task.\n\n")
    parts.append(_left_out_section(sel, withheld, skipped, state))
    return "".join(parts)


def _config_summary(state: Any, repo: Repo) -> str:
    cfg = state.config
    lines = []
    base = cfg.get("base_branch") or _default_branch(repo) or "(not set)"
    lines.append(f"- base branch: `{base}`")
    if cfg.checks:
        lines.append("- checks (run them with `git pilot check`):")
        lines += [f"  - `{c.name}`: `{c.run}`" for c in cfg.checks]
    else:
        lines.append("- checks: none configured")
    for title, table in _tables_named(cfg.raw, ("plan", "review")):
        flat = ", ".join(
            f"{k} = {json.dumps(v, ensure_ascii=False)}"
            for k, v in sorted(table.items())
            if not isinstance(v, dict)
        )
        lines.append(f"- {title}: {flat or '(set)'}")
    gates = cfg.raw.get("safety", {}).get("human_gates") if isinstance(cfg.raw.get("safety"), dict) else None
    notes = cfg.raw.get("safety", {}).get("notes") if isinstance(cfg.raw.get("safety"), dict) else None
    if gates:
        lines.append("- human gates ([safety] human_gates, verbatim):")
        lines += [f"  - {g}" for g in (gates if isinstance(gates, list) else [gates])]
    if notes:
        text = str(notes) if str(notes).endswith("\n") else f"{notes}\n"
        fence = _fence(text)
        lines.append(f"- safety notes ([safety] notes, verbatim):\n\n{fence}text\n{text}{fence}\n")
    src = {"toml": ".gitpilot.toml", "v0.4": ".autopilot/config.json"}.get(
        cfg.source, "defaults (no config file)"
    )
    lines.append(f"- from: {src}")
    from gitpilot.redact import redact

    # Commands and notes are quoted from the config; a credential in them is not.
    return str(redact("\n".join(lines) + "\n"))


def _default_branch(repo: Repo) -> str | None:
    ref = repo.git_proc("symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD")
    if ref.returncode == 0 and ref.stdout.strip():
        return ref.stdout.decode().strip().split("/", 1)[-1]
    for name in ("main", "master", "trunk"):
        if repo.rev_parse(f"refs/heads/{name}") is not None:
            return name
    return None


def _tables_named(
    doc: Mapping[str, Any], words: Sequence[str], prefix: str = ""
) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for key in sorted(doc):
        val = doc[key]
        if isinstance(val, dict):
            name = f"{prefix}{key}"
            if any(w in key.lower() for w in words):
                out.append((name, val))
            else:
                out += _tables_named(val, words, name + ".")
    return out


def _memory_section(srcs: Mapping[str, S.Source], files: _Files) -> str:
    mem = [(p, s) for p, s in srcs.items() if "memory" in s.roles]
    head = (
        "## Agent memory\n\n"
        "Claude Code loads these itself; read one only if it is missing from your context.\n\n"
    )
    if not mem:
        return head + "None.\n\n"
    rows = []
    for path, src in mem:
        if path in files.texts:
            size = len(files.texts[path].encode("utf-8"))
            extra = " (also in full below)" if "instruction" in src.roles else ""
            rows.append(f"- `{path}` · sha256 {sha256_text(files.texts[path])} · {size} bytes{extra}")
        elif src.alias_of:
            rows.append(f"- `{path}` · symlink to `{src.alias_of}`")
        elif src.status != "missing":
            rows.append(f"- `{path}` · {_STATUS_WORDS.get(src.status, src.status)}")
    return head + ("\n".join(rows) if rows else "None.") + "\n\n"


def _left_out_section(
    sel: Any, withheld: Sequence[_Piece], skipped: Sequence[tuple[str, str]], state: Any
) -> str:
    parts = ["## Left out\n\n"]
    # Near misses only: a section far below the cut is noise here (the manifest lists them all).
    floor = LEFT_OUT_FLOOR * sel.best
    shown = _nested_once([x for x in sel.left_out if x.score >= floor])[:LEFT_OUT_SHOWN]
    if shown:
        parts.append("The closest sections not included (open one if you need it):\n\n")
        parts += [
            f"- `{x.path}` § {x.heading} · lines {x.start}-{x.end} · sha256 {x.sha256[:16]}\n" for x in shown
        ]
        more = sel.left_out_total - len(shown)
        if more > 0:
            parts.append(
                f"- … and {more} more matching sections, listed in `{state.json_name}` (`left_out`)\n"
            )
        parts.append("\n")
    elif getattr(sel, "complete", False):
        parts.append("Nothing: every context file is in full above.\n\n")
    else:
        parts.append("No other section matched the task.\n\n")
    if withheld:
        parts.append("Withheld (a known credential format is in the text; never copied anywhere):\n\n")
        parts += [f"- `{w.path}` § {w.heading} · lines {w.start}-{w.end}\n" for w in withheld]
        parts.append("\n")
    if skipped:
        parts.append("Skipped files:\n\n")
        parts += [f"- `{p}`: {why}\n" for p, why in sorted(set(skipped))]
        parts.append("\n")
    return "".join(parts)


def _nested_once(entries: Sequence[Any]) -> list[Any]:
    """The entries minus those inside, or around, a better one of the same file: a file's whole
    range and each of its subsections are one place to look, named once."""
    out: list[Any] = []
    for x in entries:
        if not any(
            y.path == x.path
            and (y.start <= x.start <= x.end <= y.end or x.start <= y.start <= y.end <= x.end)
            for y in out
        ):
            out.append(x)
    return out


# --- manifest and files -----------------------------------------------------------------------


def _piece_rec(p: _Piece) -> dict[str, Any]:
    return {
        "path": p.path,
        "heading": p.heading,
        "start": p.start,
        "end": p.end,
        "sha256": p.sha256,
        "why": p.why,
    }


def _manifest(
    state: Any,
    srcs: Mapping[str, S.Source],
    files: _Files,
    instr: Sequence[_Piece],
    mandatory: Sequence[_Piece],
    relevant: Sequence[_Piece],
    sel: Any,
    withheld: Sequence[_Piece],
    skipped: Sequence[tuple[str, str]],
    text: str,
) -> dict[str, Any]:
    used = {p.path for p in (*instr, *mandatory, *relevant)}
    records = []
    for path, src in srcs.items():
        rec = src.record()
        smap = files.maps.get(path)
        if smap is not None and (
            path in used or src.roles & {"instruction", "memory", "rule", "always", "nested"}
        ):
            rec["sections"] = [
                {
                    "heading": " › ".join(smap.heading_path(s.pos)) or "(preamble)",
                    "level": s.level,
                    "start": s.start,
                    "end": s.end,
                    "sha256": s.sha256,
                }
                for s in smap.sections
                if not s.withheld
            ]
        records.append(rec)
    from gitpilot.context.warm import extra_records

    extras = sorted(p for p in srcs if p not in state.sources_at_plan)
    fp = fingerprint(
        state.options.as_dict(),
        state.task_id,
        state.fp_records + extra_records(state, extras, {p: srcs[p].roles for p in extras}),
    )
    baseline = (
        state.task_bytes
        + state.config_bytes
        + sum(len(files.texts[p].encode("utf-8")) for p in sorted(files.texts) if p in srcs)
    )
    body = text.encode("utf-8")
    return {
        "format": MANIFEST_FORMAT,
        "version": state.version,
        "task_id": state.task_id,
        "fingerprint": fp,
        "extra_sources": extras,
        "capsule_sha256": hashlib.sha256(body).hexdigest(),
        "capsule_bytes": len(body),
        "baseline_bytes": baseline,
        "options": state.options.as_dict(),
        "config": {"path": state.config_rel, "blob": state.config_blob},
        "sources": records,
        "instructions": [_piece_rec(p) for p in instr],
        "mandatory": [_piece_rec(p) for p in mandatory],
        "relevant": [_piece_rec(p) for p in relevant],
        "left_out": [
            {
                "path": x.path,
                "heading": x.heading,
                "start": x.start,
                "end": x.end,
                "sha256": x.sha256,
                "reason": x.reason,
            }
            for x in sel.left_out
        ],
        "left_out_total": sel.left_out_total,
        "withheld": [
            {"path": w.path, "heading": w.heading, "start": w.start, "end": w.end} for w in withheld
        ],
        "skipped": [{"path": p, "why": why} for p, why in sorted(set(skipped))],
        "parsed_files": files.parsed,
        "query": {"terms": sel.query_terms, "identifiers": sel.identifiers},
    }


def manifest_bytes(manifest: Mapping[str, Any]) -> bytes:
    return (json.dumps(manifest, sort_keys=True, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def _write(repo: Repo, state: Any, text: str, manifest: dict[str, Any]) -> CapsuleResult:
    from gitpilot.store.tasks import TaskStore

    body = text.encode("utf-8")
    mbytes = manifest_bytes(manifest)
    out_dir = repo.worktree_pilot_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    md_path, json_path = out_dir / state.md_name, out_dir / state.json_name
    _atomic_write(md_path, body)
    _atomic_write(json_path, mbytes)
    TaskStore(repo).write(
        state.task_id,
        {"capsule.md": body, "manifest.json": mbytes, "task.md": state.task_text.encode("utf-8")},
        "pilot: capsule",
    )
    from gitpilot.context.warm import save_stamp

    save_stamp(repo, state, manifest, body)
    return CapsuleResult(
        text, manifest, md_path, False, manifest["baseline_bytes"], len(body), state.task_id, json_path
    )


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
