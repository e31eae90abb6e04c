"""What the capsule shows whatever the task, and the pieces every part is made of.

The instruction files in full (a symlink, an ``@import``-only file or a byte-identical copy
once); the mandatory sections: keyword-headed sections of rule files, ``always_include``
entries, ``pilot:always`` blocks, nested instruction files for the paths the task names or, when
short, for the area of the best matches, the details a mandatory rule defers to and the files an
instruction file orders read (``deferred``). ``_pieces`` cuts any of these into exact excerpts,
minus lines shown already and sections that hold a credential. ``capsule`` assembles, renders
and stores the result.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gitpilot.context import safepaths, sources
from gitpilot.context.markdown import Section, SectionMap, range_text, sha256_text, slug

PROJECT_WORD_SHARE = 0.5  # a directory name in more of the context files than this names the project
PROJECT_WORD_MIN_FILES = 10  # (too few files to tell)
PROJECT_WORD_SAMPLE = 400  # files looked at, at most, in a larger tree
_NO_SRC = sources.Source("", set(), "")
SKIP_STATUSES = {"ignored", "credential", "outside", "missing", "not-utf8", "too-large"}


@dataclass
class Piece:
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
class Files:
    """Texts and maps of the readable sources."""

    texts: dict[str, str] = field(default_factory=dict)
    lines: dict[str, Sequence[str]] = field(default_factory=dict)  # (``lines.Lines``: split on first use)
    maps: dict[str, SectionMap] = field(default_factory=dict)
    parsed: int = 0


def is_candidate(src: sources.Source) -> bool:
    roles = src.roles
    if src.status in SKIP_STATUSES:
        return False
    if "memory" in roles and "instruction" not in roles:
        return False  # the agent loads its memory itself: not repeated
    return bool(roles & {"context", "rule", "nested", "always"})


def withhold(path: str, smap: SectionMap, lines: Sequence[str], sec: Section, withheld: list[Piece]) -> None:
    """Name a section withheld for a credential format (once): path, heading, lines, and which
    formats (never the text)."""
    from gitpilot.redact import secret_kinds

    if any(w.path == path and w.start == sec.start for w in withheld):
        return
    heading = " › ".join(smap.heading_path(sec.pos)) or "(preamble)"
    kinds = secret_kinds(range_text(lines, sec.start, sec.body_end)) or ["credential"]
    withheld.append(Piece(path, sec.start, sec.body_end, heading, "holds a " + ", ".join(kinds), ""))


def _pieces(
    path: str,
    smap: SectionMap,
    lines: Sequence[str],
    start: int,
    end: int,
    label: str,
    why: str,
    shown: dict[str, list[tuple[int, int]]],
    withheld: list[Piece],
) -> list[Piece]:
    """Lines ``start..end`` of a file as excerpts, minus lines shown already and withheld sections."""
    blocked: set[int] = set()
    for a, b in shown.get(path, ()):
        blocked.update(range(a, b + 1))
    for sec in smap.sections:
        if sec.withheld and start <= sec.start <= end and sec.start not in blocked:
            withhold(path, smap, lines, sec, withheld)
            blocked.update(range(sec.start, sec.body_end + 1))
    out: list[Piece] = []
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
) -> Piece:
    while b > a and not lines[b - 1].strip():
        b -= 1
    while a < b and not lines[a - 1].strip():
        a += 1
    return Piece(path, a, b, label or _heading_at(smap, a), why, range_text(lines, a, b))


def _heading_at(smap: SectionMap, line: int) -> str:
    best = None
    for sec in smap.sections:
        if sec.start <= line <= max(sec.end, sec.start):
            best = sec
    return " › ".join(smap.heading_path(best.pos)) if best is not None else ""


def whole_file(
    path: str,
    files: Files,
    label: str,
    why: str,
    shown: dict[str, list[tuple[int, int]]],
    withheld: list[Piece],
) -> list[Piece]:
    lines = files.lines[path]
    if not lines:
        return []
    return _pieces(path, files.maps[path], lines, 1, len(lines), label, why, shown, withheld)


def instruction_pieces(
    srcs: Mapping[str, sources.Source],
    files: Files,
    opts: sources.Options,
    shown: dict[str, list[tuple[int, int]]],
    withheld: list[Piece],
) -> tuple[list[Piece], list[str]]:
    """Root instruction files in full; a symlink, an import-only file or a byte-identical copy
    is included once, as the file it repeats."""
    pieces: list[Piece] = []
    notes: list[str] = []
    done: set[str] = set()
    by_text: dict[str, str] = {}
    for name in opts.instruction_files:
        src = srcs.get(name)
        if src is None or src.status in SKIP_STATUSES:
            continue
        targets = [name]
        if src.alias_of:
            notes.append(f"`{name}` is a symlink to `{src.alias_of}`")
            targets = [src.alias_of]
        elif name in files.texts and sources.only_imports(files.texts[name]):
            base = name.rsplit("/", 1)[0] if "/" in name else ""
            imported = sources.imports_of(files.texts[name])
            targets = [t for t in (safepaths.normalize(base, i) for i in imported) if t]
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
            pieces += whole_file(t, files, "", "instruction file, in full", shown, withheld)
    return pieces, notes


def _keyword_rx(words: Iterable[str]) -> re.Pattern[str] | None:
    alts = [r"\s+".join(re.escape(w) for w in word.split()) for word in words if word.strip()]
    return re.compile(r"(?<![\w])(?:" + "|".join(alts) + r")(?![\w])", re.IGNORECASE) if alts else None


def mandatory_pieces(
    root: Path,
    srcs: Mapping[str, sources.Source],
    files: Files,
    opts: sources.Options,
    task: str,
    named: Sequence[str],
    shown: dict[str, list[tuple[int, int]]],
    withheld: list[Piece],
    skipped: list[tuple[str, str]],
    copies: Mapping[str, str],
) -> list[Piece]:
    out: list[Piece] = []
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
        if is_candidate(src) or "rule" in src.roles:
            for a, b in smap.always:
                regions.append((path, a, b))
                out += _pieces(path, smap, files.lines[path], a, b, "", "pilot:always block", shown, withheld)
    out += _deferred_details(regions, srcs, files, opts, shown, withheld, copies)
    return out


def _deferred_details(
    regions: Sequence[tuple[str, int, int]],
    srcs: Mapping[str, sources.Source],
    files: Files,
    opts: sources.Options,
    shown: dict[str, list[tuple[int, int]]],
    withheld: list[Piece],
    copies: Mapping[str, str],
) -> list[Piece]:
    """What the instruction files order read, whole, and the section a mandatory rule points to
    for its details (``context/deferred.py``); together at most one ``max_section_bytes``."""
    from gitpilot.context.deferred import deferred, required_reading

    maps = {p: m for p, m in files.maps.items() if p in srcs and p not in copies}
    out: list[Piece] = []
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
            out += whole_file(dest, files, "", f"required reading named at {path}:{line}", shown, withheld)
    for dest, sec, src_path, line in deferred(regions, maps, files.lines, budget):
        why = f"details of the mandatory rule at {src_path}:{line}"
        out += _pieces(dest, maps[dest], files.lines[dest], sec.start, sec.end, "", why, shown, withheld)
    return out


def _within(ranges: Iterable[tuple[int, int]], a: int, b: int) -> bool:
    return any(x <= a and b <= y for x, y in ranges)


def _nested(
    srcs: Mapping[str, sources.Source],
    files: Files,
    task: str,
    named: Sequence[str],
    shown: dict[str, list[tuple[int, int]]],
    withheld: list[Piece],
    copies: Mapping[str, str],
) -> list[Piece]:
    """Nested AGENTS.md/CLAUDE.md in full when the task names a path (or the directory) they govern."""
    tracked = [p for p, s in srcs.items()]
    out: list[Piece] = []
    for path, src in srcs.items():
        if "nested" not in src.roles or path not in files.maps or src.status in SKIP_STATUSES:
            continue
        if repeats_shown(path, srcs, files, shown, copies):
            continue
        directory = path.rsplit("/", 1)[0]
        base = directory.rsplit("/", 1)[-1]
        word_rx = re.compile(r"(?<![\w/.-])" + re.escape(base) + r"(?![\w-])", re.IGNORECASE)
        by_word = len(base) >= 3 and word_rx.search(task) and not _names_the_project(word_rx, files)
        by_path = re.search(r"(?<![\w/.-])" + re.escape(directory) + r"(?![\w-])", task, re.IGNORECASE)
        if sources.applies_to(named, directory, tracked) or by_word or by_path:
            why = f"nested instruction file for `{directory}/`, which the task names"
            out += whole_file(path, files, "", why, shown, withheld)
    return out


def rules_claude_would_load(
    srcs: Mapping[str, sources.Source],
    files: Files,
    area_files: Sequence[str],
    shown: dict[str, list[tuple[int, int]]],
    withheld: list[Piece],
) -> list[Piece]:
    """For an agent that does not load ``.claude/rules`` itself (any but Claude Code), the rules
    Claude Code would have loaded for this task, in full: an unscoped one (Claude Code loads it
    at every start) and a path-scoped one (``paths:``) whose paths hold a file of the task's area
    (Claude Code loads it when it reads such a file). The others stay candidates."""
    from gitpilot.context import frontmatter

    out: list[Piece] = []
    for path in sorted(srcs):
        src = srcs[path]
        if (not sources.is_memory_path(path) or path in sources.MEMORY_FILES or src.status in SKIP_STATUSES
                or path not in files.maps):
            continue
        front = frontmatter.parse(files.lines[path])
        if front.scoped:
            hit = sources.first_covered(front.scopes, area_files)
            if hit is None:
                continue
            globs = ", ".join(f"`{g}`" for g in front.scopes)
            why = (f"a Claude Code rule for {globs}, which covers `{hit}`, where the task works "
                   "(Claude Code loads it there; this agent does not)")
        else:
            why = "a Claude Code rule for every task (Claude Code loads it at every start; this agent does not)"
        out += whole_file(path, files, "", why, shown, withheld)
    return out


def _names_the_project(word_rx: re.Pattern[str], files: Files) -> bool:
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


def repeats_shown(
    path: str,
    srcs: Mapping[str, sources.Source],
    files: Files,
    shown: Mapping[str, Sequence[tuple[int, int]]],
    copies: Mapping[str, str],
) -> bool:
    """Whether the text of ``path`` is shown in full already under another path (the file it
    repeats, or one with the same blob), or is a link or import of a file beside it (which
    applies on its own). A copy that governs another directory is still shown when it applies
    and its original is not."""
    if (
        path in copies
        and dir_of(copies[path]) == dir_of(path)
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


def dir_of(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def _always_include(
    srcs: Mapping[str, sources.Source],
    files: Files,
    opts: sources.Options,
    shown: dict[str, list[tuple[int, int]]],
    withheld: list[Piece],
    skipped: list[tuple[str, str]],
) -> list[Piece]:
    out: list[Piece] = []
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
            out += whole_file(path, files, "", f"always_include “{entry}”", shown, withheld)
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
