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
from functools import partial
from operator import itemgetter
from typing import Any, NamedTuple

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


Columns = tuple[tuple[int | None, ...], tuple[int, ...], tuple[int, ...]]


class SectionMap:
    """Every section of one file, in document order, plus its always-include blocks.

    A map read back from this machine's copy (``map_from_marshal``) makes its ``Section`` objects
    on the first look at ``sections``: a new task on a large tree looks at the sections of a few
    documents only (vercel/ai: ~45,000 sections in 750 files, most of them in change logs), and
    needs of the others only their number (``count``), whether one is withheld, and a few columns:
    each section's ``parent``, ``start`` and ``body_end`` (``columns``)."""

    __slots__ = ("line_count", "_sections", "_rows", "_columns", "count", "any_withheld", "always", "children")

    def __init__(
        self,
        line_count: int,
        sections: tuple[Section, ...],
        always: tuple[tuple[int, int], ...] = (),
        children: tuple[tuple[int, ...], ...] = (),
    ) -> None:
        self.line_count = line_count
        self._sections: tuple[Section, ...] | None = sections
        self._rows: bytes | None = None
        self._columns: Columns | None = None
        self.count = len(sections)
        self.any_withheld = any(s.withheld for s in sections)
        self.always = always
        self.children = children

    @classmethod
    def _lazy(cls, line_count: int, count: int, any_withheld: bool, always: tuple[tuple[int, int], ...],
              columns: Columns, rows: bytes) -> SectionMap:
        smap = cls.__new__(cls)
        smap.line_count = line_count
        smap._sections = None
        smap._rows = rows
        smap._columns = columns
        smap.count = count
        smap.any_withheld = any_withheld
        smap.always = always
        smap.children = ()
        return smap

    @property
    def sections(self) -> tuple[Section, ...]:
        secs = self._sections
        if secs is None:
            assert self._rows is not None
            secs = _rows_to_sections(self._rows, self.count, self.any_withheld, self._columns)
            if secs is None:  # (the copy's bytes were checked when it was read: see ``map_from_marshal``)
                raise ValueError("a machine-local copy of a section map does not load")
            self._sections = secs
            self._rows = None
        return secs

    @property
    def columns(self) -> Columns:
        """Each section's ``parent``, ``start`` and ``body_end``, as three tuples."""
        got = self._columns
        if got is None:
            got = self._columns = _columns(self.sections)
        return got

    @property
    def parents(self) -> tuple[int | None, ...]:
        return self.columns[0]

    @property
    def starts(self) -> tuple[int, ...]:
        return self.columns[1]

    @property
    def body_ends(self) -> tuple[int, ...]:
        return self.columns[2]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SectionMap):
            return NotImplemented
        return (self.line_count, self.sections, self.always) == (other.line_count, other.sections, other.always)

    def __hash__(self) -> int:
        return hash((self.line_count, self.sections, self.always))

    def __repr__(self) -> str:
        return f"SectionMap(line_count={self.line_count!r}, sections={self.sections!r}, always={self.always!r})"

    def heading_path(self, index: int) -> list[str]:
        """Titles from the outermost ancestor down to the section itself."""
        titles: list[str] = []
        cur: int | None = index
        secs = self.sections
        while cur is not None:
            sec = secs[cur]
            if sec.title:
                titles.append(sec.title)
            cur = sec.parent
        return titles[::-1]

    def kids(self, index: int) -> tuple[int, ...]:
        if not self.children and self.count:
            # worked out on the first look-up (a map loaded from a copy does not carry them)
            self.children = _children(self.sections)
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


_COPY = ("section-map-copy", MAP_VERSION, 3)  # 3: the sections' rows marshalled apart, loaded on first use


def map_to_marshal(smap: SectionMap) -> bytes:
    """A map as plain values, for the machine-local copy of a parsed note (``NoteMirror``): the
    sections' rows as one marshalled string of their own, loaded when a task first looks at them."""
    import marshal

    rows = marshal.dumps(tuple(tuple(s) for s in smap.sections))
    return marshal.dumps((_COPY, smap.line_count, smap.count, smap.any_withheld, smap.always, smap.columns, rows))


def map_from_marshal(data: bytes | memoryview, *, check: bool = True) -> SectionMap | None:
    """A map written by ``map_to_marshal`` (None when it is not one this version wrote). With
    ``check``, its rows are loaded and checked now; without, on the first look at its sections (for
    bytes known to be a copy that loaded: ``cache.FittingNotes``)."""
    import marshal

    try:
        head, line_count, count, any_withheld, always, columns, rows = marshal.loads(data)
        if head != _COPY or not isinstance(rows, bytes) or type(count) is not int or type(any_withheld) is not bool:
            return None
        if not (isinstance(columns, tuple) and len(columns) == 3):
            return None
        if not all(isinstance(c, tuple) and len(c) == count for c in columns):
            return None
        smap = SectionMap._lazy(line_count, count, any_withheld, tuple(always), columns, rows)
        if check:
            secs = _rows_to_sections(rows, count, any_withheld, columns)
            if secs is None:
                return None
            smap._sections, smap._rows = secs, None
        return smap
    except (ValueError, EOFError, TypeError, IndexError):
        return None


def _rows_to_sections(
    rows: bytes, count: int, any_withheld: bool, columns: Columns | None
) -> tuple[Section, ...] | None:
    """The sections of a copy's rows, or None when they are not those its head describes."""
    import marshal

    try:
        # made without a Python call a section (tuple.__new__ is what Section._make calls)
        secs = tuple(map(partial(tuple.__new__, Section), marshal.loads(rows)))
    except (ValueError, EOFError, TypeError):
        return None
    if len(secs) != count or set(map(len, secs)) - {len(Section._fields)}:
        return None
    if list(map(itemgetter(0), secs)) != list(range(len(secs))) or any(s.withheld for s in secs) != any_withheld:
        return None
    if columns is not None and _columns(secs) != columns:
        return None
    return secs


def _columns(secs: Sequence[Section]) -> Columns:
    return tuple(map(itemgetter(3), secs)), tuple(map(itemgetter(4), secs)), tuple(map(itemgetter(6), secs))


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
    # (the scanner's patterns are compiled on the first parse, not at every import: a new task on
    # a tree whose maps are kept parses nothing)
    from gitpilot.context.blocks import block_structure

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
