"""The details a mandatory rule defers to another Markdown file.

A guardrail often states a rule and points to where it is spelled out: "never drop a column in
one step; use the expand/contract pattern described in `services/api/AGENTS.md`". The pointer is
mandatory material, so the part of the other file it points to is too: without it the agent has
the rule's name, not the rule. This module finds, for every reference to a local Markdown file
in mandatory text (a section of a rule file whose heading names a mandatory keyword, or a
``pilot:always`` block), the one section of that file the reference is about:

- the section its ``#anchor`` names, when it has one;
- otherwise the section whose heading shares a word with the referring sentence and whose own
  text shares at least ``MIN_SHARED`` words with it, the most shared words winning (a sentence
  that shares nothing particular with any section is a pointer to the whole file, which the
  capsule names in its left-out list instead).

An instruction file can also order reading outright: "You MUST do all of the following: at
the start of every task, read `docs/ai/coding_conventions.md` and `docs/ai/mandatory_checks.md`".
Such required reading (a read/follow/consult verb with a reference, where the item or the lead
of its section states an obligation) is taken whole (``required_reading``).

Only sections up to the capsule's ``max_section_bytes`` are taken, and no more than that in
all, required reading included: a deferred detail is a rule, not a chapter. Pure functions over section maps and lines; the capsule turns the result into
excerpts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence

from gitpilot.context.markdown import Section, SectionMap, link_target, slug
from gitpilot.context.text import tokens

MIN_SHARED = 2  # distinct words the referring sentence and the section's own text must share
CONTEXT_LINES = 3  # the referring sentence: its paragraph, at most this many lines either side

# `path/to/FILE.md` or `FILE.md#anchor` in backticks, a Markdown link to one, or an agent
# memory style mention, "see @docs/testing.md".
_REF = re.compile(
    r"`([^`\s]+?\.(?:md|mdx|markdown))(#[^`\s]*)?`"
    r"|\]\(\s*<?([^()\s<>]+?\.(?:md|mdx|markdown))(#[^()\s<>]*)?>?(?:\s+\"[^\"]*\")?\s*\)"
    r"|(?<![\w@/`])@([\w./-]+?\.(?:md|mdx|markdown))(?![\w/-])",
    re.I,
)


def references(line: str) -> list[tuple[str, str]]:
    """(target as written, anchor without '#') of every local Markdown file ``line`` refers to."""
    out: list[tuple[str, str]] = []
    for m in _REF.finditer(line):
        target = m.group(1) or m.group(3) or m.group(5) or ""
        anchor = (m.group(2) or m.group(4) or "").lstrip("#")
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("//"):
            continue
        out.append((target, anchor))
    return out


def resolve(from_path: str, target: str, exists: Callable[[str], bool]) -> str:
    """The repository path ``target`` names from ``from_path``: relative to the referring file's
    directory, else to the repository root (instruction files often write root paths); "" when
    neither exists or the path leaves the repository."""
    for base in (from_path, ""):
        path = link_target(base, target)
        if path and exists(path):
            return path
    return ""


def sentence(lines: Sequence[str], line_no: int, lo: int, hi: int) -> str:
    """The paragraph (or list item) around 1-based ``line_no``, within ``lo..hi``, bounded."""
    a = b = line_no
    while a > max(lo, line_no - CONTEXT_LINES) and lines[a - 2].strip() and not _item_start(lines[a - 1]):
        a -= 1
    while b < min(hi, line_no + CONTEXT_LINES) and lines[b].strip() and not _item_start(lines[b]):
        b += 1
    return "".join(lines[a - 1 : b])


def _item_start(line: str) -> bool:
    return bool(re.match(r"\s*(?:[-*+]|\d+[.)])\s", line))


def best_section(
    smap: SectionMap, lines: Sequence[str], said: str, anchor: str, target: str
) -> Section | None:
    """The section of the target file the referring sentence ``said`` is about (see the module)."""
    if anchor:
        want = slug(anchor)
        for sec in smap.sections:
            if sec.level and slug(sec.title) == want:
                return sec
        return None
    # the path's own words say which file, not which section
    words = set(tokens(said)) - set(tokens(target.replace("/", " ").replace(".", " ")))
    best: tuple[int, int] | None = None
    chosen: Section | None = None
    for sec in smap.sections:
        if not sec.level:
            continue
        heading = set(tokens(sec.title))
        if not heading & words:
            continue
        own = heading | set(tokens("".join(lines[sec.start : sec.body_end])))
        shared = len(own & words)
        if shared < MIN_SHARED:
            continue
        key = (shared, -sec.pos)
        if best is None or key > best:
            best, chosen = key, sec
    return chosen


def deferred(
    regions: Iterable[tuple[str, int, int]],
    maps: Mapping[str, SectionMap],
    lines: Mapping[str, Sequence[str]],
    max_bytes: int,
) -> list[tuple[str, Section, str, int]]:
    """For mandatory text ``(path, first line, last line)``: (target path, section, referring
    path, referring line) of every section a reference in it defers to, once each, in order,
    while they add up to at most ``max_bytes`` (a guardrail list that points to many files
    would otherwise turn the capsule into all of them; the rest stay ordinary candidates)."""
    out: list[tuple[str, Section, str, int]] = []
    seen: set[tuple[str, int]] = set()
    total = 0
    for path, lo, hi in regions:
        text = lines.get(path)
        if text is None:
            continue
        for n in range(lo, min(hi, len(text)) + 1):
            for target, anchor in references(text[n - 1]):
                dest = resolve(path, target, lambda p: p in maps)
                if not dest or dest == path:
                    continue
                sec = best_section(maps[dest], lines[dest], sentence(text, n, lo, hi), anchor, target)
                if sec is None or (dest, sec.pos) in seen:
                    continue
                size = len("".join(lines[dest][sec.start - 1 : sec.end]).encode("utf-8"))
                if total + size > max_bytes:
                    continue
                total += size
                seen.add((dest, sec.pos))
                out.append((dest, sec, path, n))
    return out


_READ_VERB = re.compile(r"\b(read|follow|consult|load|study)\b", re.I)
_OBLIGATION = re.compile(
    r"\b(must|mandatory|required|always|every task|before (?:you|any|starting|making|declaring|writing))\b", re.I
)
# An item that starts with the order itself: "Read and follow [AI_POLICY.md](AI_POLICY.md)".
_IMPERATIVE = re.compile(r"\s*(?:(?:[-*+]|\d+[.)])\s+)?(?:\*\*|__)?(?:read|follow|consult)\b", re.I)
LEAD_LINES = 15  # how far above a list item its section's lead ("You MUST do all of the following:") may stand


def required_reading(
    path: str,
    smap: SectionMap,
    text: Sequence[str],
    maps: Mapping[str, SectionMap],
    lines: Mapping[str, Sequence[str]],
    max_bytes: int,
) -> list[tuple[str, int, int]]:
    """(target path, referring line, size) of every file the instruction file ``path`` orders
    read, whole, while they add up to at most ``max_bytes``; in order, once each."""
    out: list[tuple[str, int, int]] = []
    seen: set[str] = set()
    total = 0
    for n in range(1, len(text) + 1):
        refs = references(text[n - 1])
        if not refs:
            continue
        lo, hi = _section_bounds(smap, n, len(text))
        said = sentence(text, n, lo, hi)
        lead = "".join(text[max(lo, n - LEAD_LINES) - 1 : n])
        ordered = _IMPERATIVE.match(said) or _OBLIGATION.search(said) or _OBLIGATION.search(lead)
        if not _READ_VERB.search(said) or not ordered:
            continue
        for target, _anchor in refs:
            dest = resolve(path, target, lambda p: p in maps)
            if not dest or dest == path or dest in seen:
                continue
            size = len("".join(lines[dest]).encode("utf-8"))
            if total + size > max_bytes:
                continue
            total += size
            seen.add(dest)
            out.append((dest, n, size))
    return out


def _section_bounds(smap: SectionMap, line: int, last: int) -> tuple[int, int]:
    """The first and last line of the innermost section's own part holding ``line``."""
    lo, hi = 1, last
    for sec in smap.sections:
        if sec.start <= line <= max(sec.body_end, sec.start):
            lo, hi = sec.start, max(sec.body_end, sec.start)
    return lo, hi
