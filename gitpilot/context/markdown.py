"""Section maps of Markdown files, from the block structure markdown-it-py finds in them.

The headings and code blocks come from ``blocks.block_structure``, a scanner that follows
markdown-it-py's block rules without making tokens (about six times faster); markdown-it-py
itself (``reference_structure``) is the reference it is checked against.

A section is a heading and everything up to the next heading of the same or a higher level,
so sections nest: ``start..end`` covers the subtree, ``start..body_end`` the section's own
part before its first subsection. Line numbers are 1-based and inclusive and count lines the
way markdown-it does (``\\r\\n``, ``\\r`` and ``\\n`` each end a line), so the exact source text
of any range is ``"".join(lines[start - 1:end])``. Headings inside fenced or indented code,
lists, block quotes and HTML are not headings; setext headings are; YAML (``---``) and TOML
(``+++``) front matter is skipped. Text before the first heading is a level-0 "preamble".

The map (levels, titles, line ranges, hashes, withheld flags, always-include blocks) is what
the context cache stores in git notes; it never holds the text itself.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from operator import itemgetter
from typing import Any, NamedTuple

from gitpilot.context.blocks import block_structure

MAP_VERSION = 2  # 2: always-markers only at the start of a line
_NEWLINE = re.compile(r"\r\n|\r|\n")
_FRONT_OPEN = {"---": ("---", "..."), "+++": ("+++",)}
_ALWAYS_OPEN = re.compile(r"<!--\s*(?:auto)?pilot:always\s*-->")
_ALWAYS_CLOSE = re.compile(r"<!--\s*/(?:auto)?pilot:always\s*-->")


class Section(NamedTuple):
    """One heading's section: ``start..end`` is the subtree, ``start..body_end`` its own part.

    A NamedTuple, not a dataclass: thousands are built from notes on every cold capsule.
    """

    pos: int  # position in the file's section list
    level: int  # 1-6 for headings, 0 for the preamble
    title: str
    parent: int | None
    start: int
    end: int
    body_end: int
    sha256: str  # of the exact text of start..end
    withheld: bool = False  # the own part holds a credential: never shown, never hashed


@dataclass(frozen=True)
class SectionMap:
    """Every section of one file, in document order, plus its always-include blocks."""

    line_count: int
    sections: tuple[Section, ...]
    always: tuple[tuple[int, int], ...] = ()
    children: tuple[tuple[int, ...], ...] = field(default=(), compare=False)

    def heading_path(self, index: int) -> list[str]:
        """Titles from the outermost ancestor down to the section itself."""
        titles: list[str] = []
        cur: int | None = index
        while cur is not None:
            sec = self.sections[cur]
            if sec.title:
                titles.append(sec.title)
            cur = sec.parent
        return titles[::-1]

    def kids(self, index: int) -> tuple[int, ...]:
        if not self.children and self.sections:
            # worked out on the first look-up (a map loaded from a copy does not carry them)
            object.__setattr__(self, "children", _children(self.sections))
        return self.children[index]

    def to_json(self) -> bytes:
        """The note body: sorted-key JSON, no text beyond the headings."""
        body: dict[str, Any] = {
            "v": MAP_VERSION,
            "lines": self.line_count,
            "sections": [
                [
                    s.level,
                    s.title,
                    s.parent,
                    s.start,
                    s.end,
                    s.body_end,
                    "" if s.withheld else s.sha256,
                    int(s.withheld),
                ]
                for s in self.sections
            ],
            "always": [list(r) for r in self.always],
        }
        return json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    @classmethod
    def from_json(cls, data: bytes) -> SectionMap | None:
        """A map read back from a note; None when it is not one this version understands."""
        try:
            body = json.loads(data)
            if body.get("v") != MAP_VERSION:
                return None
            secs = tuple(
                Section(
                    i, int(lv), str(t), None if p is None else int(p), int(a), int(b), int(c), str(h), bool(w)
                )
                for i, (lv, t, p, a, b, c, h, w) in enumerate(body["sections"])
            )
            always = tuple((int(a), int(b)) for a, b in body["always"])
            return cls(int(body["lines"]), secs, always, _children(secs))
        except (ValueError, TypeError, KeyError, AttributeError):
            return None


def map_to_marshal(smap: SectionMap) -> bytes:
    """A map as plain values, for the machine-local copy of a parsed note (``NoteMirror``)."""
    import marshal

    return marshal.dumps((MAP_VERSION, smap.line_count, tuple(tuple(s) for s in smap.sections), smap.always))


def map_from_marshal(data: bytes) -> SectionMap | None:
    """A map written by ``map_to_marshal`` (None when it is not one this version wrote)."""
    import marshal

    try:
        version, line_count, rows, always = marshal.loads(data)
        if version != MAP_VERSION:
            return None
        # made without a Python call a section (tuple.__new__ is what Section._make calls)
        secs = tuple(map(partial(tuple.__new__, Section), rows))
        if set(map(len, secs)) - {len(Section._fields)} or list(map(itemgetter(0), secs)) != list(range(len(secs))):
            return None
        return SectionMap(line_count, secs, tuple(always))  # (children: on the first ``kids``)
    except (ValueError, EOFError, TypeError, IndexError):
        return None


# What ``str.splitlines`` ends a line at besides \n (markdown-it ends lines at \r and \n only).
_OTHER_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split exactly where markdown-it splits them."""
    if not any(c in text for c in _OTHER_BREAKS):  # (one scan a character: faster than a class)
        return text.splitlines(keepends=True)  # only \n ends lines here: the fast way agrees
    lines: list[str] = []
    pos = 0
    for m in _NEWLINE.finditer(text):
        lines.append(text[pos : m.end()])
        pos = m.end()
    if pos < len(text):
        lines.append(text[pos:])
    return lines


def slug(text: str) -> str:
    """A heading as an ``#anchor`` names it: lower case, punctuation dropped, spaces as dashes."""
    return re.sub(r"[^\w\- ]", "", text.lower()).strip().replace(" ", "-")


def link_target(from_path: str, target: str) -> str:
    """The repository path a relative link in ``from_path`` names ("" for a URL or a path that
    leaves the repository); a leading ``/`` is the repository root."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("//"):
        return ""
    joined = target.lstrip("/") if target.startswith("/") else posixpath.join(posixpath.dirname(from_path), target)
    norm = posixpath.normpath(joined)
    return "" if norm.startswith("..") or norm in (".", "") else norm


def range_text(lines: Sequence[str], start: int, end: int) -> str:
    """The exact source text of lines ``start..end`` (1-based, inclusive)."""
    return "".join(lines[start - 1 : end])


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def parse(
    text: str, is_secret: Callable[[str], bool] | None = None, lines: list[str] | None = None
) -> SectionMap:
    """The section map of ``text``; ``is_secret`` marks sections whose own part must be withheld."""
    lines = split_lines(text) if lines is None else lines
    first = _front_matter_end(lines)
    body = "".join("\n" if i < first else ln for i, ln in enumerate(lines)) if first else text
    headings, code_ranges = block_structure(body)
    secs = _sections(lines, headings, first, is_secret)
    always = _always_blocks(lines, code_ranges, first)
    return SectionMap(len(lines), secs, always, _children(secs))


def _front_matter_end(lines: Sequence[str]) -> int:
    """How many leading lines are front matter (0 when there is none)."""
    if not lines:
        return 0
    opener = lines[0].rstrip("\r\n").rstrip()
    closers = _FRONT_OPEN.get(opener.lstrip("\ufeff"))
    if closers is None:
        return 0
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r\n").rstrip() in closers:
            return i + 1
    return 0


_MD: Any = None


def _parser() -> Any:
    global _MD
    if _MD is None:
        from markdown_it import MarkdownIt

        md = MarkdownIt("commonmark").enable("table")
        # Only the block structure matters; inline parsing is most of the cost.
        md.disable(["inline", "text_join"], ignoreInvalid=True)
        _MD = md
    return _MD


def reference_structure(text: str) -> tuple[list[tuple[int, int, str]], list[tuple[int, int]]]:
    """What ``blocks.block_structure`` finds, from markdown-it-py's own tokens: top-level headings
    as (0-based line, level, title) and 0-based code line ranges. The reference that the scanner
    is checked against (tests, ``python -m bench markdown-check``); not used to build maps."""
    tokens = _parser().parse(text)
    headings: list[tuple[int, int, str]] = []
    code: list[tuple[int, int]] = []
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.level == 0 and tok.map:
            title = " ".join(tokens[i + 1].content.split()) if i + 1 < len(tokens) else ""
            headings.append((tok.map[0], int(tok.tag[1]), title))
        elif tok.type in ("fence", "code_block") and tok.map:
            code.append((tok.map[0], tok.map[1]))
    return headings, code


def _last_text_line(lines: Sequence[str], start: int, end: int) -> int:
    """The last 1-based line in ``start..end`` that is not blank (``start`` at least)."""
    while end > start and not lines[end - 1].strip():
        end -= 1
    return end


def _sections(
    lines: Sequence[str],
    headings: Sequence[tuple[int, int, str]],
    first: int,
    is_secret: Callable[[str], bool] | None,
) -> tuple[Section, ...]:
    n = len(lines)
    out: list[Section] = []
    pre_end = headings[0][0] if headings else n
    pre_start = first + 1
    while pre_start <= pre_end and not lines[pre_start - 1].strip():
        pre_start += 1
    if pre_start <= pre_end:
        last = _last_text_line(lines, pre_start, pre_end)
        out.append(_make(lines, len(out), 0, "", None, pre_start, last, last, is_secret))
    base = len(out)
    # each heading's subtree ends where the next heading of its level or a higher one starts
    ends = [n] * len(headings)
    waiting: list[int] = []
    for k, (line0, level, _) in enumerate(headings):
        while waiting and headings[waiting[-1]][1] >= level:
            ends[waiting.pop()] = line0
        waiting.append(k)
    stack: list[int] = []  # indexes into out of open headings
    for k, (line0, level, title) in enumerate(headings):
        while stack and out[stack[-1]].level >= level:
            stack.pop()
        start = line0 + 1
        end = ends[k]
        next_line = headings[k + 1][0] if k + 1 < len(headings) else n
        body_end = _last_text_line(lines, start, min(next_line, end))
        out.append(
            _make(
                lines,
                base + k,
                level,
                title,
                stack[-1] if stack else None,
                start,
                _last_text_line(lines, start, end),
                body_end,
                is_secret,
            )
        )
        stack.append(base + k)
    return _unhash_withheld_ancestors(out)


def _unhash_withheld_ancestors(out: list[Section]) -> tuple[Section, ...]:
    """A section whose subtree holds withheld text gets no hash either (notes never carry it)."""
    for sec in list(out):
        if sec.withheld:
            cur = sec.parent
            while cur is not None:
                out[cur] = out[cur]._replace(sha256="")
                cur = out[cur].parent
    return tuple(out)


def _make(
    lines: Sequence[str],
    index: int,
    level: int,
    title: str,
    parent: int | None,
    start: int,
    end: int,
    body_end: int,
    is_secret: Callable[[str], bool] | None,
) -> Section:
    withheld = bool(is_secret and is_secret(range_text(lines, start, body_end)))
    sha = "" if withheld else sha256_text(range_text(lines, start, end))
    return Section(index, level, title, parent, start, end, body_end, sha, withheld)


def _children(secs: Sequence[Section]) -> tuple[tuple[int, ...], ...]:
    kids: list[list[int]] = [[] for _ in secs]
    for s in secs:
        if s.parent is not None:
            kids[s.parent].append(s.pos)
    return tuple(tuple(k) for k in kids)


def _always_blocks(
    lines: Sequence[str], code: Sequence[tuple[int, int]], first: int
) -> tuple[tuple[int, int], ...]:
    """Line ranges from a ``pilot:always`` marker to its closing marker (or the end of file)."""
    if not any("pilot:always" in ln for ln in lines):
        return ()
    in_code: set[int] = set()
    for a, b in code:
        in_code.update(range(a, b))
    blocks: list[tuple[int, int]] = []
    open_at: int | None = None
    for i in range(first, len(lines)):
        if i in in_code:
            continue
        line = lines[i]
        # A marker is an HTML comment that starts its line (at most three spaces in, as an
        # HTML block must); one quoted in prose, a table or a code span is text.
        if open_at is None:
            m = _ALWAYS_OPEN.match(line, len(line) - len(line.lstrip(" ")))
            if m and len(line) - len(line.lstrip(" ")) <= 3:
                open_at = i + 1
                if _ALWAYS_CLOSE.search(line, m.end()):
                    blocks.append((open_at, i + 1))
                    open_at = None
        elif _ALWAYS_CLOSE.match(line.lstrip(" ")) or _ALWAYS_CLOSE.search(line.rstrip()[-40:]) and line.rstrip().endswith("-->"):
            blocks.append((open_at, i + 1))
            open_at = None
    if open_at is not None:
        blocks.append((open_at, _last_text_line(lines, open_at, len(lines))))
    return tuple(blocks)
