"""Failure excerpts and pass counts of quiet checks, computed from a check's full log.

Responsible for turning the bytes a failing check printed into the few lines an agent
sees: terminal escapes removed, credentials redacted, chosen around the failure (error
lines with their context, the runner's final summary, then the tail), bounded by both a
line and a byte budget, every omitted run marked. Also reads the test count a passing
runner states. The log is read in blocks and only the lines an excerpt can show are kept
(``logscan``), so memory stays bounded whatever the log's size. Pure: no git, no printing (a
log file is only read); the same bytes give the same excerpt.

Gap marks, one line each, in the excerpt's own line budget:
    `… (N earlier lines)`  omitted lines before the first shown line
    `… (N lines)`          omitted lines between two shown lines
    `… (N later lines)`    omitted lines after the last shown line
An over-long line is cut and ends with `… (+N bytes)`. The last meaningful lines of the output
(where tools print their closing summary: `Found 9 errors.`, `565 files would be reformatted`)
are always shown.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from gitpilot.checks import logscan, markers
from gitpilot.checks.ansi import strip_ansi
from gitpilot.checks.passcount import count_passed, count_passed_file
from gitpilot.redact import redact

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["Excerpt", "count_passed", "count_passed_file", "excerpt_of_file", "make_excerpt", "strip_ansi"]


@dataclass(frozen=True, slots=True)
class Excerpt:
    """What to print for a failed check: `lines` (gap marks included), `shown` log lines
    among them, and `total` lines in the log."""

    lines: list[str]
    shown: int
    total: int

_NESTING = 8  # how many enclosing blocks of one anchor are looked for
_MIN_CUT = 40  # bytes; a line cut shorter than this says too little to be worth its place

_GAP_MARK = "… ({n} {what})"
_CLOSING = 3  # the last meaningful lines always shown (fewer on a budget under 24 lines)
_REDACT_MARGIN = 8192  # characters redacted beyond what a cut line shows

# --- the excerpt ----------------------------------------------------------------------------


def make_excerpt(log: bytes, max_lines: int, max_bytes: int) -> Excerpt:
    """The failure excerpt of `log`: at most `max_lines` lines and `max_bytes` UTF-8 bytes
    once joined with newlines, gap marks included."""
    return _excerpt(logscan.byte_chunks(log), max_lines, max_bytes)


def excerpt_of_file(path: Path, max_lines: int, max_bytes: int) -> Excerpt:
    """`make_excerpt` of the log at `path`, read in blocks: memory does not grow with its size."""
    return _excerpt(logscan.file_chunks(path), max_lines, max_bytes)


def _excerpt(chunks: Iterable[bytes], max_lines: int, max_bytes: int) -> Excerpt:
    line_cap = min(max_bytes, max(120, max_bytes // 6))
    keep = max(line_cap, 0) + _REDACT_MARGIN
    view = logscan.Scan(max(max_lines, 1), keep).run(chunks)
    total = view.total
    if total == 0 or max_lines <= 0 or max_bytes <= 0:
        return Excerpt([], 0, total)
    shown = _Shown(view, line_cap)
    plan = _Plan(total, max_lines, max_bytes, shown)
    if not plan.add_all():
        for group in _candidates(view, max_lines):
            if plan.lines >= max_lines:
                break  # only one-line gaps can still change, below
            for index in group.indices:
                if not plan.add(index, may_cut=group.may_cut) and group.contiguous:
                    break
        plan.fill_single_gaps()
    return Excerpt(plan.render(), plan.shown, total)


class _Shown:
    """Log lines as the excerpt shows them: redacted, and cut to a byte limit.

    The scan keeps a long line's head only (redacting megabytes of minified code to show a
    kilobyte of it is wasted work), with a margin wider than any single-line credential so
    that one straddling the visible end is still recognised whole. Lines of a private key
    block come redacted from the scan, which sees the lines around them.
    """

    def __init__(self, view: logscan.ExcerptView, line_cap: int) -> None:
        self.view, self.line_cap = view, line_cap
        self.cache: dict[int, tuple[str, int]] = {}

    def kept(self, i: int) -> bool:
        return self.view.kept(i)

    def text(self, i: int, limit: int | None = None) -> str:
        """Line `i` in at most `limit` (and the line cap) UTF-8 bytes."""
        if i not in self.cache:
            head = self.view[i]
            self.cache[i] = (head if i in self.view.final else redact(head), self.view.hidden.get(i, 0))
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
        if not self.shown_as.kept(i):  # a line the scan did not keep is never a candidate
            return False
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

    def headline(self, scores: dict[int, int]) -> list[int]:
        return sorted(self.anchors, key=lambda i: (-scores[i], i))

    def context(self) -> list[tuple[int, int]]:
        """(distance to the nearest anchor, line) for every line of the site, nearest first."""
        marks = self.anchors

        def distance(i: int) -> int:
            k = bisect.bisect_left(marks, i)
            return min(abs(marks[j] - i) for j in (k - 1, k) if 0 <= j < len(marks))

        return sorted((distance(i), i) for i in range(self.lo, self.hi))


def _candidates(view: logscan.ExcerptView, max_lines: int) -> Iterator[_Group]:
    """Groups of candidate lines, best first: the last meaningful lines; the runner's summary;
    the headline and then the near context of the leading failures (nearest lines first,
    sites taking turns); the same for the other failures; the rest of each failure's block;
    the tail."""
    scores = dict(view.scores)
    sites = _sites(view, scores)
    per_site = max(3, max_lines // 8)
    context_cap = max(8, max_lines // 2)
    leading = max(1, max_lines // 10)
    yield _Group(_closing_lines(view, max(1, min(_CLOSING, max_lines // 8))), may_cut=True)
    yield _Group(_summary_lines(view), may_cut=True)
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
    total = view.total
    tail = total if not sites else min(total, max(5, max_lines // 6))
    yield _Group(range(total - 1, total - 1 - tail, -1), contiguous=True)


def _closing_lines(view: logscan.ExcerptView, most: int) -> list[int]:
    """The last meaningful lines, last first: up to `most` non-blank lines from the end,
    ending at a blank line. Tools print their closing summary there (ruff's `Found 9 errors.`
    and `[*] 2 fixable`, `565 files would be reformatted`, pytest's final counts)."""
    out: list[int] = []
    i = view.total - 1
    while i >= 0 and len(out) < most and view.kept(i):
        if view[i].strip():
            out.append(i)
        elif out:
            break
        i -= 1
    return out

def _sites(view: logscan.ExcerptView, scores: dict[int, int]) -> list[_Site]:
    """Failure sites, most evidence first. Weak mentions of "error" count only when
    nothing stronger is in the log."""
    anchors = sorted(scores)
    if not anchors:
        anchors = list(view.mentions)
        for i in anchors:
            scores[i] = 1
    if not anchors:
        return []
    blocks = [(i, end) for i in anchors if (end := markers.block_end(view, i)) is not None]
    starts = [b[0] for b in blocks]
    regions = []
    total = view.total
    for a in anchors:
        k = bisect.bisect_right(starts, a)
        around = [(start, end) for start, end in blocks[max(0, k - _NESTING) : k] if end > a]
        if around and max(b[1] for b in around) - min(b[0] for b in around) > 1:
            # the whole block, and nothing of the neighbouring one
            lo, hi = min(b[0] for b in around), max(b[1] for b in around)
        else:
            lo, hi = max(0, a - markers.BEFORE), min(total, a + markers.AFTER + 1)
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

def _summary_lines(view: logscan.ExcerptView) -> list[int]:
    """The runner's verdict lines (last first), then its list of failures in order."""
    return [*reversed(view.verdicts), *view.listing]

