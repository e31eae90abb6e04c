"""The block structure markdown-it-py finds in a Markdown text, without markdown-it's tokens.

``markdown.parse`` needs two things of a text's block parse: its top-level headings (line,
level, title) and the line ranges of its fenced and indented code blocks. This module finds
exactly what markdown-it-py's "commonmark" parser with tables gives for them (the reference,
kept in ``markdown.reference_structure``), by the same block rules in the same order over the
same line marks (``bMarks``, ``eMarks``, ``tShift``, ``sCount``, ``bsCount``, changed and put
back by block quotes and list items as markdown-it does), but it makes no token, tries a rule
only when a line's first character allows it, and scans a paragraph once for both a setext
underline and its end. Equality on every Markdown file of the corpus is checked by
``python -m bench markdown-check``; the tricky cases are pinned in tests/test_blocks.py.

Names follow markdown-it's where a rule is ported (``start``, ``end``, ``next_line``), so
each function can be read side by side with its ``rules_block/*.py``.
"""

from __future__ import annotations

import re
from itertools import accumulate
from operator import add, sub

_MAX_NESTING = 20  # the "commonmark" preset's maxNesting
# String.prototype.trim's characters minus U+FEFF (markdown-it's MD_TRIM_CHARS)
_TRIM = "".join(
    chr(c)
    for c in sorted(
        {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0xA0, 0x1680, 0x202F, 0x205F, 0x3000}
        | set(range(0x2000, 0x200B))
        | {0x2028, 0x2029}
    )
)
_HEADER_CELL = re.compile(r"^:?-+:?$")
_BLOCK_NAMES = (
    "address article aside base basefont blockquote body caption center col colgroup dd details dialog dir "
    "div dl dt fieldset figcaption figure footer form frame frameset h1 h2 h3 h4 h5 h6 head header hr html "
    "iframe legend li link main menu menuitem nav noframes ol optgroup option p param search section summary "
    "table tbody td tfoot th thead title tr track ul"
).split()
_ATTR = (
    "(?:\\s+[a-zA-Z_:][a-zA-Z0-9:._-]*(?:\\s*=\\s*(?:[^\"'=<>`\\x00-\\x20]+|'[^']*'|\"[^\"]*\"))?)"
)
_OPEN_CLOSE_TAG = "^(?:<[A-Za-z][A-Za-z0-9\\-]*" + _ATTR + "*\\s*\\/?>|<\\/[A-Za-z][A-Za-z0-9\\-]*\\s*>)"
# (opening, closing, can it end a paragraph), in markdown-it's order
_HTML_SEQUENCES: tuple[tuple[re.Pattern[str], re.Pattern[str], bool], ...] = (
    (
        re.compile(r"^<(?a:(script|pre|style|textarea))(?=(\s|>|$))", re.IGNORECASE),
        re.compile(r"<\/(?a:(script|pre|style|textarea))>", re.IGNORECASE),
        True,
    ),
    (re.compile(r"^<!--"), re.compile(r"-->"), True),
    (re.compile(r"^<\?"), re.compile(r"\?>"), True),
    (re.compile(r"^<![A-Za-z]"), re.compile(r">"), True),
    (re.compile(r"^<!\[CDATA\["), re.compile(r"\]\]>"), True),
    (
        re.compile("^</?(?a:(" + "|".join(_BLOCK_NAMES) + "))(?=(\\s|/?>|$))", re.IGNORECASE),
        re.compile(r"^$"),
        True,
    ),
    (re.compile(_OPEN_CLOSE_TAG + "\\s*$"), re.compile(r"^$"), False),
)
_DIGITS = "0123456789"

Headings = list[tuple[int, int, str]]
CodeRanges = list[tuple[int, int]]


class _State:
    """markdown-it's StateBlock, reduced to what the block rules read and write."""

    __slots__ = ("src", "size", "b", "e", "t", "s", "bs", "blk", "line", "line_max", "list_indent", "level",
                 "headings", "code")

    def __init__(self, src: str) -> None:
        self.src = src
        self.size = len(src)
        lines = src.split("\n")
        lens = list(map(len, lines))
        b = list(accumulate([n + 1 for n in lens[:-1]], initial=0))  # each line's first offset
        e: list[int] = list(map(add, b, lens))
        t: list[int] = list(map(sub, lens, map(len, [ln.lstrip(" \t") for ln in lines])))  # leading spaces and tabs
        s = t.copy()  # the same, tabs expanded to the next multiple of 4
        if "\t" in src:
            for i in [i for i, n in enumerate(t) if n and "\t" in lines[i][:n]]:
                offset = 0
                for ch in lines[i][: t[i]]:
                    offset += 4 - offset % 4 if ch == "\t" else 1
                s[i] = offset
        # markdown-it marks no line after a final "\n", nor a last line of only spaces and tabs
        if src.endswith("\n") or t[-1] == lens[-1]:
            for marks in (b, e, t, s):
                marks.pop()
        n = len(src)
        for marks, fake in ((b, n), (e, n), (t, 0), (s, 0)):
            marks.append(fake)
        self.b, self.e, self.t, self.s = b, e, t, s
        self.bs = [0] * len(b)
        self.blk = 0
        self.line = 0
        self.line_max = len(b) - 1
        self.list_indent = -1
        self.level = 0
        self.headings: Headings = []
        self.code: CodeRanges = []


def block_structure(text: str) -> tuple[Headings, CodeRanges]:
    """Top-level headings as (0-based line, level, title) and the 0-based [start, end) line ranges
    of code blocks, as markdown-it-py's block tokens give them (see the module's docstring)."""
    if "\r" in text:
        text = re.sub(r"\r\n?", "\n", text)
    if "\0" in text:
        text = text.replace("\0", "\ufffd")
    if not text:
        return [], []
    st = _State(text)
    _tokenize(st, 0, st.line_max)
    return st.headings, st.code


def _tokenize(st: _State, line: int, end: int) -> None:
    b, e, t, s = st.b, st.e, st.t, st.s
    src = st.src
    while line < end:
        line_max = st.line_max
        while line < line_max and b[line] + t[line] >= e[line]:
            line += 1
        st.line = line
        if line >= end:
            break
        if s[line] < st.blk:
            break  # the end of a nested block (a list item, a block quote)
        if st.level >= _MAX_NESTING:
            st.line = end
            break
        _block(st, line, end, src, b, e, t, s)
        line = st.line
        if line < end and b[line] + t[line] >= e[line]:
            line += 1
            st.line = line


def _block(st: _State, line: int, end: int, src: str, b: list[int], e: list[int], t: list[int], s: list[int]) -> None:
    """The first block rule that matches at ``line`` (markdown-it's rule order), applied."""
    if s[line] - st.blk >= 4:
        _code(st, line, end)
        return
    if line + 2 <= end:
        q = b[line + 1] + t[line + 1]
        if q < e[line + 1] and _may_delimit(src, q) and _table(st, line, end, False):
            return
    c = src[b[line] + t[line]]
    if c in "`~" and _fence(st, line, end, False):
        return
    if c == ">":
        _blockquote(st, line, end)
        return
    if c in "*-_" and _hr(st, line):
        st.line = line + 1
        return
    if (c in "*-+" or c in _DIGITS) and _list(st, line, end, False, False):
        return
    if c == "[" and _reference(st, line, end, False):
        return
    if c == "<" and _html_block(st, line, end, False):
        return
    if c == "#" and _heading(st, line, False):
        return
    _paragraph(st, line, end)


def _code(st: _State, start: int, end: int) -> None:
    b, e, t, s, blk = st.b, st.e, st.t, st.s, st.blk
    last = next_line = start + 1
    while next_line < end:
        if b[next_line] + t[next_line] >= e[next_line]:
            next_line += 1
            continue
        if s[next_line] - blk >= 4:
            next_line += 1
            last = next_line
            continue
        break
    st.line = last
    st.code.append((start, last))


def _fence(st: _State, start: int, end: int, silent: bool) -> bool:
    b, e, t, s, blk, src = st.b, st.e, st.t, st.s, st.blk, st.src
    pos = b[start] + t[start]
    maximum = e[start]
    if s[start] - blk >= 4 or pos + 3 > maximum:
        return False
    marker = src[pos]
    if marker not in "~`":
        return False
    head = src[pos:maximum]
    length = len(head) - len(head.lstrip(marker))
    if length < 3:
        return False
    if marker == "`" and "`" in head[length:]:
        return False
    if silent:
        return True
    have_end = False
    next_line = start
    size = st.size
    while True:
        next_line += 1
        if next_line >= end:
            break  # unclosed: ends with the document or its parent
        pos = b[next_line] + t[next_line]
        maximum = e[next_line]
        if pos < maximum and s[next_line] < blk:
            break
        if pos >= size:
            break
        if src[pos] != marker:
            continue
        if s[next_line] - blk >= 4:
            continue
        seg = src[pos:maximum]
        rest = seg.lstrip(marker)
        if len(seg) - len(rest) < length:
            continue
        if rest.lstrip(" \t"):
            continue
        have_end = True
        break
    st.line = next_line + (1 if have_end else 0)
    st.code.append((start, st.line))
    return True


def _blockquote_starts(st: _State, start: int) -> bool:
    pos = st.b[start] + st.t[start]
    return st.s[start] - st.blk < 4 and pos < st.size and st.src[pos] == ">"


def _quote_line(st: _State, line: int, pos: int, maximum: int) -> bool:
    """Shift one line's marks past its ``>`` marker (at ``pos - 1``) as markdown-it does; True when
    nothing follows the marker."""
    src, bs = st.src, st.bs
    initial = offset = st.s[line] + 1
    nxt = src[pos] if pos < st.size else None
    adjust_tab = False
    if nxt == " ":
        pos += 1
        initial += 1
        offset += 1
        space_after = True
    elif nxt == "\t":
        space_after = True
        if (bs[line] + offset) % 4 == 3:
            pos += 1
            initial += 1
            offset += 1
        else:
            adjust_tab = True
    else:
        space_after = False
    st.b[line] = pos
    while pos < maximum:
        ch = src[pos]
        if ch == "\t":
            offset += 4 - (offset + bs[line] + (1 if adjust_tab else 0)) % 4
        elif ch == " ":
            offset += 1
        else:
            break
        pos += 1
    bs[line] = st.s[line] + 1 + (1 if space_after else 0)
    st.s[line] = offset - initial
    st.t[line] = pos - st.b[line]
    return pos >= maximum


def _blockquote(st: _State, start: int, end: int) -> None:
    b, e, t, s, bs = st.b, st.e, st.t, st.s, st.bs
    src = st.src
    old_line_max = st.line_max
    pos = b[start] + t[start] + 1
    saved = [(b[start], t[start], s[start], bs[start])]
    last_line_empty = _quote_line(st, start, pos, e[start])
    next_line = start + 1
    while next_line < end:
        outdented = s[next_line] < st.blk
        pos = b[next_line] + t[next_line]
        maximum = e[next_line]
        if pos >= maximum:
            break  # an empty line ends the quote
        if src[pos] == ">" and not outdented:
            saved.append((b[next_line], t[next_line], s[next_line], bs[next_line]))
            last_line_empty = _quote_line(st, next_line, pos + 1, maximum)
            next_line += 1
            continue
        if last_line_empty:
            break
        if _ends_quote(st, next_line, end):
            st.line_max = next_line
            if st.blk != 0:
                saved.append((b[next_line], t[next_line], s[next_line], bs[next_line]))
                s[next_line] -= st.blk
            break
        saved.append((b[next_line], t[next_line], s[next_line], bs[next_line]))
        s[next_line] = -1  # a lazy continuation line
        next_line += 1
    old_indent = st.blk
    st.blk = 0
    st.level += 1
    _tokenize(st, start, next_line)
    st.level -= 1
    st.line_max = old_line_max
    for i, (bm, tm, sm, bsm) in enumerate(saved):
        b[start + i], t[start + i], s[start + i], bs[start + i] = bm, tm, sm, bsm
    st.blk = old_indent


def _hr(st: _State, start: int) -> bool:
    pos = st.b[start] + st.t[start]
    if st.s[start] - st.blk >= 4 or pos >= st.size:
        return False
    marker = st.src[pos]
    if marker not in "*-_":
        return False
    line = st.src[pos : st.e[start]]
    if line.count(marker) < 3:  # (most lines that start so are list items: done at once)
        return False
    return not line.replace(" ", "").replace("\t", "").strip(marker)


def _bullet_marker(st: _State, start: int) -> int:
    pos = st.b[start] + st.t[start]
    maximum = st.e[start]
    if pos >= st.size or st.src[pos] not in "*-+":
        return -1
    pos += 1
    if pos < maximum and st.src[pos] not in " \t":
        return -1
    return pos


def _ordered_marker(st: _State, start: int) -> int:
    src = st.src
    first = pos = st.b[start] + st.t[start]
    maximum = st.e[start]
    if pos + 1 >= maximum or src[pos] not in _DIGITS:
        return -1
    pos += 1
    while True:
        if pos >= maximum:
            return -1
        ch = src[pos]
        pos += 1
        if ch in _DIGITS:
            if pos - first >= 10:
                return -1
            continue
        if ch in ").":
            break
        return -1
    if pos < maximum and src[pos] not in " \t":
        return -1
    return pos


def _list(st: _State, start: int, end: int, silent: bool, ends_paragraph: bool) -> bool:
    b, e, t, s, src = st.b, st.e, st.t, st.s, st.src
    if s[start] - st.blk >= 4:
        return False
    if st.list_indent >= 0 and s[start] - st.list_indent >= 4 and s[start] < st.blk:
        return False
    terminating = silent and ends_paragraph and s[start] >= st.blk
    after = _ordered_marker(st, start)
    if after >= 0:
        ordered = True
        first = b[start] + t[start]
        if terminating and int(src[first : after - 1]) != 1:
            return False
    else:
        after = _bullet_marker(st, start)
        if after < 0:
            return False
        ordered = False
    if terminating and not src[after : e[start]].lstrip(" \t"):
        return False  # an empty item does not end a paragraph
    marker_char = src[after - 1]
    if silent:
        return True
    next_line = start
    st.level += 1
    while next_line < end:
        pos = after
        maximum = e[next_line]
        initial = offset = s[next_line] + after - (b[start] + t[start])
        while pos < maximum:
            ch = src[pos]
            if ch == "\t":
                offset += 4 - (offset + st.bs[next_line]) % 4
            elif ch == " ":
                offset += 1
            else:
                break
            pos += 1
        content_start = pos
        indent_after = 1 if content_start >= maximum else offset - initial
        if indent_after > 4:
            indent_after = 1
        indent = initial + indent_after
        old_t, old_s, old_list_indent = t[start], s[start], st.list_indent
        st.list_indent = st.blk
        st.blk = indent
        t[start] = content_start - b[start]
        s[start] = offset
        if content_start >= maximum and b[start + 1] + t[start + 1] >= e[start + 1]:
            st.line = min(st.line + 2, end)
        else:
            st.level += 1
            _tokenize(st, start, end)
            st.level -= 1
        st.blk = st.list_indent
        st.list_indent = old_list_indent
        t[start] = old_t
        s[start] = old_s
        next_line = start = st.line
        if next_line >= end:
            break
        if s[next_line] < st.blk:
            break
        if s[start] - st.blk >= 4:
            break
        if _ends_list_item(st, next_line, end):
            break
        if ordered:
            after = _ordered_marker(st, next_line)
            if after < 0:
                break
        else:
            after = _bullet_marker(st, next_line)
            if after < 0:
                break
        if marker_char != src[after - 1]:
            break
    st.level -= 1
    st.line = next_line
    return True


def _reference(st: _State, start: int, end: int, silent: bool) -> bool:
    """A link reference definition (markdown-it's rules_block/reference.py and its helpers)."""
    b, e, t, src = st.b, st.e, st.t, st.src
    pos = b[start] + t[start]
    maximum = e[start]
    next_line = start + 1
    if st.s[start] - st.blk >= 4 or src[pos] != "[":
        return False
    string = src[pos : maximum + 1]
    maximum = len(string)
    label_end = -1
    pos = 1
    while pos < maximum:
        ch = string[pos]
        if ch == "[":
            return False
        if ch == "]":
            label_end = pos
            break
        if ch == "\n":
            more = _next_ref_line(st, next_line)
            if more is not None:
                string += more
                maximum = len(string)
                next_line += 1
        elif ch == "\\":
            pos += 1
            if pos < maximum and string[pos] == "\n":
                more = _next_ref_line(st, next_line)
                if more is not None:
                    string += more
                    maximum = len(string)
                    next_line += 1
        pos += 1
    if label_end < 0 or string[label_end + 1 : label_end + 2] != ":":
        return False
    pos = label_end + 2
    while pos < maximum:
        ch = string[pos]
        if ch == "\n":
            more = _next_ref_line(st, next_line)
            if more is not None:
                string += more
                maximum = len(string)
                next_line += 1
        elif ch not in " \t":
            break
        pos += 1
    pos = _link_destination(string, pos, maximum)
    if pos < 0:
        return False
    dest_end_pos = pos
    dest_end_line = next_line
    begin = pos
    while pos < maximum:
        ch = string[pos]
        if ch == "\n":
            more = _next_ref_line(st, next_line)
            if more is not None:
                string += more
                maximum = len(string)
                next_line += 1
        elif ch not in " \t":
            break
        pos += 1
    title_res = _link_title(string, pos, maximum, None)
    while title_res.can_continue:
        more = _next_ref_line(st, next_line)
        if more is None:
            break
        string += more
        pos = maximum
        maximum = len(string)
        next_line += 1
        title_res = _link_title(string, pos, maximum, title_res)
    if pos < maximum and begin != pos and title_res.ok:
        title = title_res.text
        pos = title_res.pos
    else:
        title = ""
        pos = dest_end_pos
        next_line = dest_end_line
    while pos < maximum and string[pos] in " \t":
        pos += 1
    if pos < maximum and string[pos] != "\n" and title:
        # garbage after the title: the definition ends with its destination
        title = ""
        pos = dest_end_pos
        next_line = dest_end_line
        while pos < maximum and string[pos] in " \t":
            pos += 1
    if pos < maximum and string[pos] != "\n":
        return False
    if not string[1:label_end].strip(_TRIM):  # (normalizeReference: empty only when this is)
        return False
    if not silent:
        st.line = next_line
    return True


def _link_destination(string: str, pos: int, maximum: int) -> int:
    """markdown-it's parseLinkDestination and the link validation a definition's destination
    passes: the position after a valid destination, -1 when there is none."""
    start = pos
    if pos < maximum and string[pos] == "<":
        pos += 1
        while pos < maximum:
            ch = string[pos]
            if ch in "\n<":
                return -1
            if ch == ">":
                return pos + 1 if _valid_link(string[start + 1 : pos]) else -1
            if ch == "\\" and pos + 1 < maximum:
                pos += 2
                continue
            pos += 1
        return -1
    level = 0
    while pos < maximum:
        ch = string[pos]
        if ch == " " or ch < " " or ch == "\x7f":
            break
        if ch == "\\" and pos + 1 < maximum:
            if string[pos + 1] == " ":
                break
            pos += 2
            continue
        if ch == "(":
            level += 1
            if level > 32:
                return -1
        if ch == ")":
            if level == 0:
                break
            level -= 1
        pos += 1
    if start == pos or level != 0:
        return -1
    return pos if _valid_link(string[start:pos]) else -1


_BAD_PROTOCOLS = ("vbscript", "javascript", "file", "data")


def _valid_link(raw: str) -> bool:
    """markdown-it's ``validateLink(normalizeLink(unescapeAll(raw)))``. Normalizing keeps a URL's
    start (its protocol, lower-cased), so an ASCII destination with nothing to unescape (no
    backslash, no "&" before a ";") that starts with none of the refused protocols' names is
    valid; any other is asked of markdown-it itself."""
    plain = raw.isascii() and "\\" not in raw and ("&" not in raw or ";" not in raw[raw.index("&") :])
    if plain and not raw.strip().lower().startswith(_BAD_PROTOCOLS):
        return True
    from markdown_it.common.normalize_url import normalizeLink, validateLink
    from markdown_it.common.utils import unescapeAll

    return bool(validateLink(normalizeLink(unescapeAll(raw))))


class _Title:
    """markdown-it's parseLinkTitle state; of the title's text only whether it is empty matters
    (unescaping never empties a text), so the raw text is kept."""

    __slots__ = ("ok", "can_continue", "pos", "text", "marker")

    def __init__(self) -> None:
        self.ok = False
        self.can_continue = False
        self.pos = 0
        self.text = ""
        self.marker = ""


def _link_title(string: str, start: int, maximum: int, prev: _Title | None) -> _Title:
    pos = start
    state = _Title()
    if prev is not None:
        state.text = prev.text
        state.marker = prev.marker
    else:
        if pos >= maximum:
            return state
        marker = string[pos]
        if marker not in "\"'(":
            return state
        start += 1
        pos += 1
        state.marker = ")" if marker == "(" else marker
    while pos < maximum:
        ch = string[pos]
        if ch == state.marker:
            state.pos = pos + 1
            state.text += string[start:pos]
            state.ok = True
            return state
        if ch == "(" and state.marker == ")":
            return state
        if ch == "\\" and pos + 1 < maximum:
            pos += 1
        pos += 1
    state.can_continue = True
    state.text += string[start:pos]
    return state


def _next_ref_line(st: _State, line: int) -> str | None:
    """markdown-it's reference.getNextLine: the next line of a definition, or None where it ends."""
    if line >= st.line_max or st.b[line] + st.t[line] >= st.e[line]:
        return None
    continuation = st.s[line] - st.blk >= 4 or st.s[line] < 0
    if not continuation and _ends_paragraph(st, line, st.line_max, False):
        return None
    return st.src[st.b[line] + st.t[line] : st.e[line] + 1]


def _html_block(st: _State, start: int, end: int, silent: bool) -> bool:
    b, e, t, s, src = st.b, st.e, st.t, st.s, st.src
    pos = b[start] + t[start]
    if s[start] - st.blk >= 4 or pos >= st.size or src[pos] != "<":
        return False
    text = src[pos : e[start]]
    seq = next((seq for seq in _HTML_SEQUENCES if seq[0].search(text)), None)
    if seq is None:
        return False
    _opening, closing, ends_paragraph = seq
    if silent:
        return ends_paragraph
    next_line = start + 1
    on_blank = bool(closing.search(""))
    if not closing.search(text):
        while next_line < end:
            if s[next_line] < st.blk and (on_blank or b[next_line] + t[next_line] < e[next_line]):
                break
            text = src[b[next_line] + t[next_line] : e[next_line]]
            if closing.search(text):
                if text:
                    next_line += 1
                break
            next_line += 1
    st.line = next_line
    return True


def _heading(st: _State, start: int, silent: bool) -> bool:
    src = st.src
    pos = st.b[start] + st.t[start]
    maximum = st.e[start]
    if st.s[start] - st.blk >= 4 or pos >= maximum or src[pos] != "#":
        return False
    head = src[pos:maximum]
    level = len(head) - len(head.lstrip("#"))
    if level > 6 or (level < len(head) and head[level] not in " \t"):
        return False
    if silent:
        return True
    st.line = start + 1
    if st.level == 0:
        pos += level
        maximum = pos + len(src[pos:maximum].rstrip(" \t"))  # (skipSpacesBack)
        tmp = pos + len(src[pos:maximum].rstrip("#"))  # (skipCharsStrBack "#")
        if tmp > pos and src[tmp - 1] in " \t":
            maximum = tmp
        st.headings.append((start, level, " ".join(src[pos:maximum].split())))
    return True


def _paragraph(st: _State, start: int, end: int) -> None:
    """markdown-it's lheading rule (a setext heading) and, when it finds no underline, its paragraph
    rule, in one scan: both go the same way line by line until the underline or the end."""
    b, e, t, s, src, blk = st.b, st.e, st.t, st.s, st.src, st.blk
    next_line = start + 1
    level = 0
    while next_line < end:
        pos = b[next_line] + t[next_line]
        maximum = e[next_line]
        if pos >= maximum:
            break
        sc = s[next_line]
        if sc - blk > 3:
            next_line += 1  # a lazy continuation, whatever it holds
            continue
        if sc >= blk:
            marker = src[pos]
            if marker in "-=" and not src[pos:maximum].lstrip(marker).lstrip(" \t"):
                level = 1 if marker == "=" else 2
                break
        if sc < 0:
            next_line += 1  # (a block quote's lazy line: already checked there)
            continue
        if _ends_paragraph(st, next_line, end, True):
            break
        next_line += 1
    if level:
        st.line = next_line + 1
        if st.level == 0:
            text = "".join(src[b[i] : e[i] + 1] for i in range(start, next_line))
            st.headings.append((start, level, " ".join(text.split())))
        return
    if end != st.line_max:
        # The paragraph rule scans to the parser's last line, and asks its table terminator about
        # the lines before it: not always where the heading rule stopped (a quote's last lines).
        next_line = start + 1
        line_max = st.line_max
        while next_line < line_max:
            pos = b[next_line] + t[next_line]
            if pos >= e[next_line]:
                break
            sc = s[next_line]
            if sc - blk > 3 or sc < 0:
                next_line += 1
                continue
            if _ends_paragraph(st, next_line, line_max, True):
                break
            next_line += 1
    st.line = next_line


def _ends_paragraph(st: _State, line: int, end: int, paragraph: bool) -> bool:
    """Whether a block that may end a paragraph (or a reference definition) starts at ``line``:
    a table, or what ends a block quote."""
    if line + 2 <= end:
        q = st.b[line + 1] + st.t[line + 1]
        if q < st.e[line + 1] and _may_delimit(st.src, q) and _table(st, line, end, True):
            return True
    return _ends_quote(st, line, end, paragraph)


def _ends_quote(st: _State, line: int, end: int, paragraph: bool = False) -> bool:
    """The block quote's (and a table's) terminators: fence, quote, rule, list, HTML, heading
    (``paragraph``: a list may interrupt the paragraph it follows only as markdown-it allows)."""
    pos = st.b[line] + st.t[line]
    c = st.src[pos] if pos < st.size else "\n"
    if c in "`~":
        return _fence(st, line, end, True)
    if c == ">":
        return _blockquote_starts(st, line)
    if c in "*-_" and _hr(st, line):
        return True
    if c in "*-+" or c in _DIGITS:
        return _list(st, line, end, True, paragraph)
    if c == "<":
        return _html_block(st, line, end, True)
    if c == "#":
        return _heading(st, line, True)
    return False


def _ends_list_item(st: _State, line: int, end: int) -> bool:
    """The list's terminators: fence, block quote, rule."""
    pos = st.b[line] + st.t[line]
    c = st.src[pos] if pos < st.size else "\n"
    if c in "`~":
        return _fence(st, line, end, True)
    if c == ">":
        return _blockquote_starts(st, line)
    return c in "*-_" and _hr(st, line)


def _cells(text: str) -> int:
    """How many cells markdown-it's escapedSplit finds in a table row (an empty first and last dropped)."""
    if "\\" in text:
        parts: list[str] = []
        current = ""
        last = 0
        escaped = False
        for pos, ch in enumerate(text):
            if ch == "|":
                if not escaped:
                    parts.append(current + text[last:pos])
                    current = ""
                    last = pos + 1
                else:
                    current += text[last : pos - 1]
                    last = pos
            escaped = ch == "\\"
        parts.append(current + text[last:])
    else:
        parts = text.split("|")
    n = len(parts)
    if n and parts[0] == "":
        n -= 1
        if n and parts[-1] == "":
            n -= 1
    elif n and parts[-1] == "":
        n -= 1
    return n


def _may_delimit(src: str, pos: int) -> bool:
    """Whether a line starting at ``pos`` may be a table's delimiter row, by its first two
    characters as ``_table`` checks them first ("- item", a list item's line, may not)."""
    first = src[pos]
    if first == "-":
        return src[pos + 1 : pos + 2] not in (" ", "\t")
    return first == "|" or first == ":"


def _table(st: _State, start: int, end: int, silent: bool) -> bool:
    b, e, t, s, src, blk = st.b, st.e, st.t, st.s, st.src, st.blk
    if start + 2 > end:
        return False
    nxt = start + 1
    if s[nxt] < blk or s[nxt] - blk >= 4:
        return False
    pos = b[nxt] + t[nxt]
    maximum = e[nxt]
    if pos >= maximum:
        return False
    first = src[pos]
    if first not in "|-:" or pos + 1 >= maximum:
        return False
    second = src[pos + 1]
    if second not in "|-: \t" or (first == "-" and second in " \t"):
        return False
    delim = src[pos:maximum]
    if delim.strip("|-: \t"):
        return False
    columns = delim.split("|")
    aligns = 0
    for i, col in enumerate(columns):
        cell = col.strip(_TRIM)
        if not cell:
            if i == 0 or i == len(columns) - 1:
                continue
            return False
        if not _HEADER_CELL.search(cell):
            return False
        aligns += 1
    head = src[b[start] + t[start] : e[start]].strip(_TRIM)
    if "|" not in head or s[start] - blk >= 4:
        return False
    count = _cells(head)
    if count == 0 or count != aligns:
        return False
    if silent:
        return True
    autocompleted = 0
    next_line = start + 2
    while next_line < end:
        if s[next_line] < st.blk:
            break
        if _ends_quote(st, next_line, end):
            break
        row = src[b[next_line] + t[next_line] : e[next_line]].strip(_TRIM)
        if not row or s[next_line] - blk >= 4:
            break
        autocompleted += count - _cells(row)
        if autocompleted > 0x10000:
            break
        next_line += 1
    st.line = next_line
    return True
