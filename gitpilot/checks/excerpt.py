"""Failure excerpts and pass counts of quiet checks, computed from a check's full log.

Responsible for turning the bytes a failing check printed into the few lines an agent
sees: terminal escapes removed, credentials redacted, chosen around the failure (error
lines with their context, the runner's final summary, then the tail), bounded by both a
line and a byte budget, every omitted run marked. Also reads the test count a passing
runner states. Pure: no git, no files, no printing; the same bytes give the same excerpt.

Gap marks, one line each, in the excerpt's own line budget:
    `… (N earlier lines)`  omitted lines before the first shown line
    `… (N lines)`          omitted lines between two shown lines
    `… (N later lines)`    omitted lines after the last shown line
An over-long line is cut and ends with `… (+N bytes)`.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from gitpilot.redact import redact, redact_lines

__all__ = ["Excerpt", "count_passed", "make_excerpt", "strip_ansi"]


@dataclass(frozen=True, slots=True)
class Excerpt:
    """What to print for a failed check: `lines` (gap marks included), `shown` log lines
    among them, and `total` lines in the log."""

    lines: list[str]
    shown: int
    total: int


# --- terminal escapes ---------------------------------------------------------------------

_ESCAPES = re.compile(
    r"\x1b\[[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]"  # CSI, private modes (ESC[?25l) included
    r"|\x9b[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]"  # 8-bit CSI
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"  # OSC DCS SOS PM APC
    r"|\x1b[\x20-\x2f]+[\x30-\x7e]"  # nF: charset selection ESC ( B, ESC # 8
    r"|\x1b[\x30-\x7e]?"  # other two-char escapes (ESC 7, ESC =, ESC M) and a lone ESC
    r"|[\x80-\x9f]"  # stray C1 controls
    r"|[\x00-\x07\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]"  # C0 controls but \t \n \r and backspace
)


def strip_ansi(text: str) -> str:
    """`text` as a terminal would leave it, without any escape or control sequence.

    Removes CSI (colours, cursor moves, private modes), OSC (titles, hyperlinks; ended by
    BEL or ST), DCS/SOS/PM/APC strings, charset selections, other ESC pairs and stray
    C0/C1 controls. A line redrawn with `\\r` (progress bars) keeps its final state, the
    last non-empty redraw; backspaces erase the character before them. Newlines and tabs
    stay, so line numbers stay true.
    """
    text = _ESCAPES.sub("", text.replace("\r\n", "\n"))
    if "\r" in text:
        text = "\n".join(_final_redraw(line) for line in text.split("\n"))
    if "\x08" in text:
        text = "\n".join(_apply_backspaces(line) for line in text.split("\n"))
    return text


def _final_redraw(line: str) -> str:
    if "\r" not in line:
        return line
    for part in reversed(line.split("\r")):
        if part.strip():
            return part
    return ""


def _apply_backspaces(line: str) -> str:
    if "\x08" not in line:
        return line
    out: list[str] = []
    for ch in line:
        if ch != "\x08":
            out.append(ch)
        elif out:
            out.pop()
    return "".join(out)


# --- what the runners print -----------------------------------------------------------------

# The runner's final verdict: always kept, last ones first.
_SUMMARY = re.compile(
    r"^=+ .*\b(?:failed|passed|errors?|skipped|deselected|xfailed|xpassed|warnings?|no tests ran)\b.*=+$"
    r"|^\d+ (?:failed|passed|errors?)\b.*\bin [\d.]+s\b"  # pytest -q
    r"|^test result: "  # cargo
    r"|^error: (?:test failed|\d+ targets? failed)"  # cargo
    r"|^FAIL(?:\s|$)"  # go package line and total; jest file line
    r"|^(?:Tests|Test Suites):\s"  # jest
    r"|^\s*(?:Test Files|Tests)\s{2,}\d"  # vitest
    r"|^\s*\d+ (?:passing|failing)\b"  # mocha
    r"|^Ran \d+ tests? in |^FAILED \((?:failures|errors)=|^OK(?: \(.*\))?$"  # unittest
    r"|^make(?:\[\d+\])?: \*\*\* "  # make
    r"|^npm (?:ERR!|error) (?:code |Test failed|command failed|Exit status)"  # npm
)
_PYTEST_SHORT_SUMMARY = re.compile(r"^=+ short test summary info =+$")
_PYTEST_FINAL = re.compile(r"^=+ .* in [\d.]+s\b.*=+$")

# Lines that state an error, with how sure that is (3 sure, 2 likely, 1 a mere mention).
# Each score has patterns matched at the start of the line and patterns searched anywhere;
# the latter begin with a literal so that `re` can skip ahead (logs run to millions of lines).
_STRONG_AT_START = (
    r"E\s{2,}\S",  # pytest's explanation of a failed assert
    r"(?:[A-Za-z_][\w.]*\.)?(?:[A-Z]\w*)?(?:Error|Exception)(?::\s|:?$)",  # Python, JS
    r"Exception in thread |Caused by: ",  # JVM
    r"\s*error(?:\[[A-Z]*\d+\])?:",  # rustc, cargo, many CLIs
    r"[^\s:][^:]*:\d+(?::\d+)?:\s*(?:fatal )?(?i:error)\b",  # cc, tsc --pretty false
    r"\S+\(\d+,\d+\): error ",  # tsc, msbuild
    r"\s*(?:--- )?FAIL\b",  # go, jest
    r"\s*[●✕✖×] ",  # jest, vitest
    r"panic: ",  # go
    r"_{3,} .+ _{3,}$",  # pytest: the failing test's section
)
_STRONG_ANYWHERE = r"Traceback \(most recent call last\)|FAILED(?<!\wFAILED)\b|panicked at "
_LIKELY_AT_START = (
    r">\s{3,}\S",  # pytest: the failing source line
    r"\S+\.py:\d+: (?!in )\S",  # pytest: where the error was raised
    r"\s*--> \S+:\d+",  # rustc: error location
    r"\S+:\d+:\d+: (?!warning|note|info)",  # go vet, compilers: file:line:col
    r"npm (?:ERR!|error) |make(?:\[\d+\])?: \*\*\* ",
)
_LIKELY_WORDS = ("Segmentation fault", "core dumped", "Killed", "ut of memory", "Aborted")  # `in` is faster
_STRONG = re.compile("|".join(f"(?:{p})" for p in _STRONG_AT_START))
_STRONG_SEARCH = re.compile(_STRONG_ANYWHERE)
_LIKELY = re.compile("|".join(f"(?:{p})" for p in _LIKELY_AT_START))
_MENTION = re.compile(r"(?i)\b(?:error|errors|fail|failed|failure|fatal|exception|assert|assertion)\b")
_SCORED_PREFIX = 4096  # characters of a line that scoring looks at
_REDACT_MARGIN = 8192  # characters redacted beyond what a cut line shows
_NOT_AN_ERROR = re.compile(r"(?i)\b(?:0|no|zero) (?:errors?|failures?|failed)\b|-Werror|\berrors?=0\b")

# Blocks whose lines belong together: (opening line, how the block goes on).
_TRACEBACK = re.compile(r"^\s*Traceback \(most recent call last\)")
_PYTEST_SECTION = re.compile(r"^_{3,} .+ _{3,}$")
_SECTION_END = re.compile(r"^(?:_{3,} .+ _{3,}|={3,}.*|-{3,} .+ -{3,})$")
_COMPILER_ERROR = re.compile(r"^error(?:\[[A-Z]*\d+\])?: ")
_LOCATED_ERROR = re.compile(r"^[^\s:][^:]*:\d+(?::\d+)?:\s*(?:fatal )?error\b")
# What follows a compiler diagnostic: its source excerpt, carets, notes and help.
_DIAGNOSTIC_MORE = re.compile(r"^(?:\s+\S|\s*\d*\s*\||(?:help|note|= \w+):)")
_GO_FAIL = re.compile(r"^(\s*)--- FAIL: ")
_JEST_FAIL = re.compile(r"^\s*● ")
_JEST_END = re.compile(r"^\s*● |^(?:Tests|Test Suites|Snapshots|Time):")
_BLOCK_LIMIT = 400  # lines; a block longer than this is cut there

_BEFORE, _AFTER = 2, 4  # context lines around an anchor outside any block
_NESTING = 8  # how many enclosing blocks of one anchor are looked for
_MIN_CUT = 40  # bytes; a line cut shorter than this says too little to be worth its place

_GAP_MARK = "… ({n} {what})"


# --- the excerpt ----------------------------------------------------------------------------


def make_excerpt(log: bytes, max_lines: int, max_bytes: int) -> Excerpt:
    """The failure excerpt of `log`: at most `max_lines` lines and `max_bytes` UTF-8 bytes
    once joined with newlines, gap marks included."""
    lines = _log_lines(log)
    total = len(lines)
    if total == 0 or max_lines <= 0 or max_bytes <= 0:
        return Excerpt([], 0, total)
    shown = _Shown(lines, line_cap=min(max_bytes, max(120, max_bytes // 6)))
    plan = _Plan(total, max_lines, max_bytes, shown)
    if not plan.add_all():
        for group in _candidates(lines, max_lines):
            if plan.lines >= max_lines:
                break  # only one-line gaps can still change, below
            for index in group.indices:
                if not plan.add(index, may_cut=group.may_cut) and group.contiguous:
                    break
        plan.fill_single_gaps()
    return Excerpt(plan.render(), plan.shown, total)


def _log_lines(log: bytes) -> list[str]:
    text = strip_ansi(log.decode("utf-8", "replace"))
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


class _Shown:
    """Log lines as the excerpt shows them: redacted, and cut to a byte limit.

    A long line is shortened before it is redacted (redacting megabytes of minified code
    to show a kilobyte of it is wasted work), with a margin wider than any single-line
    credential so that one straddling the visible end is still recognised whole.
    """

    def __init__(self, lines: list[str], line_cap: int) -> None:
        self.lines, self.line_cap = lines, line_cap
        self.keep = line_cap + _REDACT_MARGIN
        self.whole: list[str] | None = None
        if any("PRIVATE KEY" in line for line in lines):  # a key block spans lines
            self.whole = redact_lines([line[: self.keep] for line in lines])
        self.cache: dict[int, tuple[str, int]] = {}

    def text(self, i: int, limit: int | None = None) -> str:
        """Line `i` in at most `limit` (and the line cap) UTF-8 bytes."""
        if i not in self.cache:
            line = self.lines[i]
            head = self.whole[i] if self.whole is not None else redact(line[: self.keep])
            self.cache[i] = (head, len(line[self.keep :].encode("utf-8")))
        head, hidden = self.cache[i]
        return cut_line(head, self.line_cap if limit is None else min(limit, self.line_cap), hidden)


def cut_line(text: str, limit: int, hidden: int = 0) -> str:
    """`text` if it fits in `limit` UTF-8 bytes, else its head and `… (+N bytes)`, where N
    counts what is left out (including `hidden` bytes already cut from the end of `text`)."""
    raw = text.encode("utf-8")
    if len(raw) <= limit and hidden == 0:
        return text
    keep = limit
    for _ in range(3):  # the marker's width depends on N, which depends on keep
        marker = f" … (+{len(raw) - keep + hidden} bytes)"
        keep = max(0, limit - len(marker.encode("utf-8")))
    head = raw[:keep].decode("utf-8", "ignore")
    out = head + f" … (+{len(raw) - len(head.encode('utf-8')) + hidden} bytes)"
    if len(out.encode("utf-8")) <= limit:
        return out
    return "…" if limit >= 3 else ""


def _gap_mark(start: int, end: int, total: int) -> str | None:
    n = end - start
    if n <= 0:
        return None
    if start == 0 and end < total:
        what = "earlier line" if n == 1 else "earlier lines"
    elif end == total and start > 0:
        what = "later line" if n == 1 else "later lines"
    else:
        what = "line" if n == 1 else "lines"
    return _GAP_MARK.format(n=n, what=what)


def _size(text: str | None) -> int:
    return 0 if text is None else len(text.encode("utf-8"))


class _Plan:
    """The chosen lines and what printing them with their gap marks costs."""

    def __init__(self, total: int, max_lines: int, max_bytes: int, shown: _Shown) -> None:
        self.total, self.max_lines, self.max_bytes, self.shown_as = total, max_lines, max_bytes, shown
        self.chosen: list[int] = []
        self.texts: dict[int, str] = {}
        self.lines = 1  # the mark that stands for the whole log
        self.bytes = _size(_gap_mark(0, total, total))

    @property
    def shown(self) -> int:
        return len(self.chosen)

    def add_all(self) -> bool:
        """Choose every line when the whole log fits; False (and nothing chosen) otherwise."""
        if self.total > self.max_lines:
            return False
        texts = {i: self.shown_as.text(i) for i in range(self.total)}
        size = sum(_size(t) for t in texts.values()) + self.total - 1
        if size > self.max_bytes:
            return False
        self.chosen, self.texts = list(range(self.total)), texts
        self.lines, self.bytes = self.total, size
        return True

    def add(self, i: int, *, may_cut: bool = False) -> bool:
        """Choose line `i` if it fits with the gap marks it changes; True when chosen."""
        pos = bisect.bisect_left(self.chosen, i)
        if pos < len(self.chosen) and self.chosen[pos] == i:
            return True
        lo = self.chosen[pos - 1] + 1 if pos > 0 else 0
        hi = self.chosen[pos] if pos < len(self.chosen) else self.total
        old = _gap_mark(lo, hi, self.total)
        new = [m for m in (_gap_mark(lo, i, self.total), _gap_mark(i + 1, hi, self.total)) if m]
        d_lines = 1 + len(new) - (old is not None)
        d_bytes = sum(_size(m) for m in new) - _size(old) + d_lines  # a newline per item
        if self.lines + d_lines > self.max_lines:
            return False
        room = self.max_bytes - self.bytes - d_bytes
        text = self.shown_as.text(i)
        if _size(text) > room:
            if not may_cut or room < _MIN_CUT:
                return False
            text = self.shown_as.text(i, room)
        self.chosen.insert(pos, i)
        self.texts[i] = text
        self.lines += d_lines
        self.bytes += d_bytes + _size(text)
        return True

    def fill_single_gaps(self) -> None:
        """Show the line itself where a gap mark would stand for just that line."""
        bounds = [-1, *self.chosen, self.total]
        for a, b in zip(bounds, bounds[1:], strict=False):
            if b - a == 2:
                self.add(a + 1)

    def render(self) -> list[str]:
        out: list[str] = []
        prev = -1
        for i in self.chosen:
            mark = _gap_mark(prev + 1, i, self.total)
            if mark:
                out.append(mark)
            out.append(self.texts[i])
            prev = i
        mark = _gap_mark(prev + 1, self.total, self.total)
        if mark:
            out.append(mark)
        if len(out) > self.max_lines or _size("\n".join(out)) > self.max_bytes:
            return []  # only when not even the mark for the whole log fits
        return out


# --- choosing lines ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Group:
    """Candidate lines in order of merit. `contiguous`: stop at the first that does not fit
    (the tail must not skip a long line and go on above it)."""

    indices: Iterable[int]
    may_cut: bool = False
    contiguous: bool = False


@dataclass(slots=True)
class _Site:
    """One place where the log reports a failure: its anchors and the lines around them."""

    lo: int
    hi: int  # exclusive
    anchors: list[int]
    weight: int = 0

    def headline(self, scores: list[int]) -> list[int]:
        return sorted(self.anchors, key=lambda i: (-scores[i], i))

    def context(self) -> list[tuple[int, int]]:
        """(distance to the nearest anchor, line) for every line of the site, nearest first."""
        marks = self.anchors

        def distance(i: int) -> int:
            k = bisect.bisect_left(marks, i)
            return min(abs(marks[j] - i) for j in (k - 1, k) if 0 <= j < len(marks))

        return sorted((distance(i), i) for i in range(self.lo, self.hi))


def _candidates(lines: list[str], max_lines: int) -> Iterator[_Group]:
    """Groups of candidate lines, best first: the runner's summary; the headline and then
    the near context of the leading failures (nearest lines first, sites taking turns);
    the same for the other failures; the rest of each failure's block; the tail."""
    scores = [_score(line) for line in lines]
    sites = _sites(lines, scores)
    per_site = max(3, max_lines // 8)
    context_cap = max(8, max_lines // 2)
    leading = max(1, max_lines // 10)
    yield _Group(_summary_lines(lines, max_lines), may_cut=True)
    top = max((site.weight for site in sites), default=1)
    rests: list[list[int]] = []
    for batch in (sites[:leading], sites[leading:]):
        for site in batch:
            yield _Group(site.headline(scores)[:per_site], may_cut=True)
        # A site with more evidence gets proportionally more of the near context, sooner.
        near: list[tuple[float, int, int]] = []
        for n, site in enumerate(batch):
            ctx = site.context()
            cap = max(2, context_cap * site.weight // top)
            near += [(d * top / site.weight, n, i) for d, i in ctx[:cap]]
            rests.append([i for _, i in ctx[cap:]])
        yield _Group([i for _, _, i in sorted(near)])
    for rest in rests:
        yield _Group(rest)
    # The tail: where no failure was recognised it is the best guess and fills the budget;
    # where one was, a few closing lines are enough (the budget is a bound, not a target).
    tail = len(lines) if not sites else min(len(lines), max(5, max_lines // 6))
    yield _Group(range(len(lines) - 1, len(lines) - 1 - tail, -1), contiguous=True)


def _score(line: str) -> int:
    """3, 2 or 0: how surely `line` reports a failure (mere mentions are scored apart)."""
    head = line[:_SCORED_PREFIX]
    if _STRONG.match(head) or _STRONG_SEARCH.search(head):
        return 3
    if _LIKELY.match(head) or any(word in head for word in _LIKELY_WORDS):
        return 2
    return 0


def _mentions(lines: list[str]) -> list[int]:
    """Lines that merely mention an error or a failure (and not "0 errors")."""
    return [
        i
        for i, line in enumerate(lines)
        if _MENTION.search(line[:_SCORED_PREFIX]) and not _NOT_AN_ERROR.search(line[:_SCORED_PREFIX])
    ]


def _sites(lines: list[str], scores: list[int]) -> list[_Site]:
    """Failure sites, most evidence first. Weak mentions of "error" count only when
    nothing stronger is in the log."""
    anchors = [i for i, s in enumerate(scores) if s >= 2]
    if not anchors:
        anchors = _mentions(lines)
        for i in anchors:
            scores[i] = 1
    if not anchors:
        return []
    blocks = [(i, end) for i in anchors if (end := _block_end(lines, i)) is not None]
    starts = [b[0] for b in blocks]
    regions = []
    for a in anchors:
        k = bisect.bisect_right(starts, a)
        around = [(start, end) for start, end in blocks[max(0, k - _NESTING) : k] if end > a]
        if around and max(b[1] for b in around) - min(b[0] for b in around) > 1:
            # the whole block, and nothing of the neighbouring one
            lo, hi = min(b[0] for b in around), max(b[1] for b in around)
        else:
            lo, hi = max(0, a - _BEFORE), min(len(lines), a + _AFTER + 1)
        regions.append((lo, hi, a))
    sites: list[_Site] = []
    for lo, hi, a in sorted(regions):
        if sites and lo < sites[-1].hi:
            site = sites[-1]
            site.hi = max(site.hi, hi)
            bisect.insort(site.anchors, a)
        else:
            sites.append(_Site(lo, hi, [a]))
    for site in sites:
        site.weight = sum(scores[a] for a in site.anchors)
    return sorted(sites, key=lambda s: (-s.weight, s.lo))


def _block_end(lines: list[str], i: int) -> int | None:
    """End (exclusive) of the block that line `i` opens, or None when it opens none."""
    line = lines[i]
    limit = min(len(lines), i + _BLOCK_LIMIT)
    j = i + 1
    if _TRACEBACK.match(line):
        while j < limit and lines[j][:1] in (" ", "\t"):
            j += 1
        return min(j + 1, limit)  # the exception line closes it
    if _PYTEST_SECTION.match(line):
        while j < limit and not _SECTION_END.match(lines[j]):
            j += 1
        return j
    if _COMPILER_ERROR.match(line) or _LOCATED_ERROR.match(line):
        while j < limit and _DIAGNOSTIC_MORE.match(lines[j]):
            j += 1
        return j
    if m := _GO_FAIL.match(line):
        indent = len(m.group(1))
        while j < limit and len(lines[j]) - len(lines[j].lstrip()) > indent:
            j += 1
        return j
    if _JEST_FAIL.match(line):
        while j < limit and not _JEST_END.match(lines[j]):
            j += 1
        return j
    return None


def _summary_lines(lines: list[str], max_lines: int) -> list[int]:
    """The runner's verdict lines (last first), then its list of failures in order."""
    verdicts = [i for i in range(len(lines) - 1, -1, -1) if _SUMMARY.search(lines[i])]
    listing: list[int] = []
    for i in range(len(lines) - 1, -1, -1):
        if _PYTEST_SHORT_SUMMARY.match(lines[i]):
            j = i + 1
            while j < len(lines) and not _PYTEST_FINAL.match(lines[j]) and not lines[j].startswith("="):
                j += 1
            listing = list(range(i, j))
            break
    return verdicts[: max(2, max_lines // 4)] + listing[: max(2, max_lines // 3)]


# --- pass counts ------------------------------------------------------------------------------

_CARGO_RESULT = re.compile(r"^test result: \w+\. (\d+) passed;", re.MULTILINE)
_PYTEST_RESULT = re.compile(r"^(?:=+ )?(?:\d+ \w+, )*(\d+) passed\b[^\n]* in [\d.]+s\b[^\n]*$", re.MULTILINE)
_JEST_RESULT = re.compile(r"^Tests:[^\n]*?\b(\d+) passed\b", re.MULTILINE)
_VITEST_RESULT = re.compile(r"^\s*Tests\s{2,}[^\n]*?\b(\d+) passed\b", re.MULTILINE)
_MOCHA_RESULT = re.compile(r"^\s*(\d+) passing\b", re.MULTILINE)
_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in [^\n]*\n+(OK|FAILED)(?: \(([^)\n]*)\))?$", re.MULTILINE)
_BUN_RESULT = re.compile(r"^\s*(\d+) pass$", re.MULTILINE)
_GO_PASS = re.compile(r"^--- PASS: ", re.MULTILINE)
_ANY_PASSED = re.compile(r"\b(\d+) (?:tests? )?passed\b")


def count_passed(log_text: str) -> int | None:
    """How many tests the runner says passed, or None when it states no count.

    Understands cargo (summed over its test binaries), pytest (summed over runs), jest,
    vitest, mocha, unittest, bun, `go test -v` (top-level `--- PASS` lines), and otherwise
    the last `N passed` in the log.
    """
    text = strip_ansi(log_text)
    for pattern in (_CARGO_RESULT, _PYTEST_RESULT):
        found = pattern.findall(text)
        if found:
            return sum(int(n) for n in found)
    for pattern in (_JEST_RESULT, _VITEST_RESULT, _MOCHA_RESULT, _BUN_RESULT):
        found = pattern.findall(text)
        if found:
            return int(found[-1])
    ran = _UNITTEST_RAN.findall(text)
    if ran:
        return _unittest_passed(*ran[-1])
    go = len(_GO_PASS.findall(text))
    if go:
        return go
    found = _ANY_PASSED.findall(text)
    return int(found[-1]) if found else None


def _unittest_passed(ran: str, verdict: str, details: str) -> int:
    """`Ran 12 tests` / `FAILED (failures=1, errors=1, skipped=2)` -> 8."""
    not_passed = 0
    for item in details.split(","):
        name, _, value = item.strip().partition("=")
        if value.isdigit() and name in ("failures", "errors", "skipped", "expected failures"):
            not_passed += int(value)
    return max(0, int(ran) - not_passed)
