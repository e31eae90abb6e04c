"""Reading a check's log in bounded memory: blocks of whole lines, and a sparse view of the lines kept.

A check's log can be hundreds of megabytes; what the agent is shown of it is a few kilobytes.
The log is read in chunks and cut into blocks of whole lines (a newline never falls inside a
UTF-8 sequence or a terminal escape, so each block decodes and cleans on its own). A line longer
than ``giant`` bytes keeps only its head, with the count of the bytes left out. ``LogView`` holds
the lines a reader chose to keep, by line number; every other line reads as "". ``Scan`` is the
excerpt's reader: one pass that keeps the lines around each failure, the runner's verdicts and
list of failures, and the log's end, within fixed budgets, and redacts private key blocks
with the lines around them in view. Pure: no git, no printing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from gitpilot.checks import markers
from gitpilot.checks.ansi import strip_ansi
from gitpilot.redact import redact_lines

CHUNK = 1 << 20  # bytes read at a time
GIANT = 1 << 20  # a line longer than this keeps its head only


def file_chunks(path: Path, size: int = CHUNK) -> Iterator[bytes]:
    """The bytes of the file at ``path``, ``size`` at a time."""
    with open(path, "rb") as fh:
        while chunk := fh.read(size):
            yield chunk


def byte_chunks(data: bytes, size: int = CHUNK) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


def blocks(chunks: Iterable[bytes], giant: int = GIANT) -> Iterator[tuple[bytes, int]]:
    """(block, dropped): whole lines, each block ending with a newline except the log's last.

    A line longer than ``giant`` bytes comes as a block of its own holding its first ``giant``
    bytes (and its newline); ``dropped`` is the number of its bytes left out (0 otherwise).
    """
    pending = bytearray()
    dropped = 0  # > 0: inside a giant line, whose head is in pending
    for chunk in chunks:
        if dropped:
            nl = chunk.find(b"\n")
            if nl < 0:
                dropped += len(chunk)
                continue
            dropped += nl
            yield bytes(pending) + b"\n", dropped
            pending.clear()
            dropped = 0
            chunk = chunk[nl + 1 :]
        pending += chunk
        nl = pending.rfind(b"\n")
        if nl >= 0:
            yield bytes(pending[: nl + 1]), 0
            del pending[: nl + 1]
        if len(pending) > giant:
            dropped = len(pending) - giant
            del pending[giant:]
    if pending or dropped:
        yield bytes(pending), dropped


class LogView:
    """The kept lines of a log, by 0-based line number: their head (at most ``keep`` characters),
    how many UTF-8 bytes of each were cut off, and which are final (already redacted)."""

    __slots__ = ("total", "texts", "hidden", "final", "chars")

    def __init__(self) -> None:
        self.total = 0
        self.texts: dict[int, str] = {}
        self.hidden: dict[int, int] = {}
        self.final: set[int] = set()
        self.chars = 0

    def __len__(self) -> int:
        return self.total

    def __getitem__(self, i: int) -> str:
        return self.texts.get(i, "")

    def kept(self, i: int) -> bool:
        return i in self.texts

    def keep(self, i: int, line: str, keep: int, dropped: int = 0, final: str | None = None) -> int:
        """Keep line ``i`` (its first ``keep`` characters); returns the characters it added."""
        if i in self.texts:
            return 0
        head = line[:keep] if final is None else final
        cut = len(line[keep:].encode("utf-8")) + dropped
        self.texts[i] = head
        if cut:
            self.hidden[i] = cut
        if final is not None:
            self.final.add(i)
        self.chars += len(head)
        return len(head)


# --- the lines an excerpt can show ----------------------------------------------------------

# failure evidence. Past them further evidence is not kept; the log's end always is.
_STRONG_BUDGET = 4 << 20
_WEAK_BUDGET = 1 << 20
_KEY_OPENER = ["-----BEGIN PRIVATE KEY-----", "A" * 64]  # makes redact_lines start inside a key block
_KEY_LINE = "[REDACTED:private-key]"


class ExcerptView(LogView):
    """The kept lines of a log and what the scan found in it: strong and likely failure lines
    (`scores`), weak mentions, the runner's verdict lines and its list of failures."""

    __slots__ = ("scores", "mentions", "verdicts", "listing")

    def __init__(self) -> None:
        super().__init__()
        self.scores: dict[int, int] = {}
        self.mentions: list[int] = []
        self.verdicts: list[int] = []  # in log order, the last `Scan.verdict_cap`
        self.listing: list[int] = []


class _Block:
    """One block of whole lines, cleaned: its first line number, the lines, the text they
    came from, the bytes dropped from its last line, and its lines as redacted when a private
    key block touches it (None otherwise)."""

    __slots__ = ("base", "lines", "text", "dropped", "finals")

    def __init__(self, base: int, raw: bytes, dropped: int) -> None:
        self.base = base
        self.text = strip_ansi(raw.decode("utf-8", "replace"))
        self.lines = self.text.split("\n")
        if self.lines[-1] == "":
            self.lines.pop()
        self.dropped = dropped
        self.finals: list[str] | None = None

    def end(self) -> int:
        return self.base + len(self.lines)


class Scan:
    """One pass over a log, a block at a time, keeping what an excerpt can show: the lines
    around each failure (a block's worth after one that opens a block), the verdict lines, the
    list of failures, and the log's end; and the redaction of private key blocks, which needs
    the lines around them."""

    def __init__(self, max_lines: int, keep: int) -> None:
        self.keep = keep
        self.verdict_cap = max(2, max_lines // 4)
        self.listing_cap = max(2, max_lines // 3)
        self.tail_cap = 2 * max_lines + markers.BEFORE + 2
        self.view = ExcerptView()
        self.listing_left = 0  # lines still to take into the listing of failures
        self.keep_until = 0  # keep every line before this one (context after an anchor)
        self.in_key = False
        self.strong = self.weak = 0  # characters kept for strong and weak evidence
        self.tail: list[tuple[int, str, int, str | None]] = []

    def run(self, chunks: Iterable[bytes]) -> ExcerptView:
        base = 0
        pending: _Block | None = None
        for raw, dropped in blocks(chunks, max(GIANT, 4 * self.keep)):
            block = _Block(base, raw, dropped)
            base = block.end()
            if pending is not None:
                self._feed(pending, block.lines[:2])
            pending = block
        if pending is not None:
            self._feed(pending, [])
        self._finish(base)
        return self.view

    # -- one block ---------------------------------------------------------------------------
    def _feed(self, block: _Block, following: list[str]) -> None:
        self._redact_keys(block, following)
        ranges: list[tuple[int, int, str]] = []
        if self.keep_until > block.base:
            ranges.append((block.base, self.keep_until, ""))
        if self.listing_left:
            self._take_listing(block, 0, ranges)
        for j in markers.trigger_lines(block.text):
            if j < len(block.lines):
                self._line(block, j, ranges)
        for lo, hi, kind in ranges:
            self._keep_range(block, lo, hi, kind)
        first = max(0, len(block.lines) - self.tail_cap)
        self.tail = (self.tail + [self._entry(block, j) for j in range(first, len(block.lines))])[-self.tail_cap :]

    def _line(self, block: _Block, j: int, ranges: list[tuple[int, int, str]]) -> None:
        line, i = block.lines[j], block.base + j
        view = self.view
        if markers.SUMMARY.search(line):
            view.verdicts = (view.verdicts + [i])[-self.verdict_cap :]
            ranges.append((i, i + 1, ""))
        if markers.PYTEST_SHORT_SUMMARY.match(line):
            view.listing = [i]
            ranges.append((i, i + 1, ""))
            self.listing_left = self.listing_cap - 1
            self._take_listing(block, j + 1, ranges)
        head = line[:markers.SCORED_PREFIX]
        score = markers.score(head)
        if score >= 2 and self.strong < _STRONG_BUDGET:
            view.scores[i] = score
            after = markers.BLOCK_LIMIT if markers.opens_block(line) else markers.AFTER + 1
            ranges.append((i - markers.BEFORE, i + after, "strong"))
        elif score == 0 and self.weak < _WEAK_BUDGET and markers.MENTION.search(head) and not markers.NOT_AN_ERROR.search(head):
            view.mentions.append(i)
            ranges.append((i - markers.BEFORE, i + markers.AFTER + 1, "weak"))

    def _take_listing(self, block: _Block, j: int, ranges: list[tuple[int, int, str]]) -> None:
        """The lines after pytest's `short test summary info`, up to the next `=` line."""
        while self.listing_left and j < len(block.lines):
            line = block.lines[j]
            if markers.PYTEST_FINAL.match(line) or line.startswith("="):
                self.listing_left = 0
                return
            self.view.listing.append(block.base + j)
            ranges.append((block.base + j, block.base + j + 1, ""))
            self.listing_left -= 1
            j += 1

    def _keep_range(self, block: _Block, lo: int, hi: int, kind: str) -> None:
        added = 0
        for i in range(max(lo, block.base - len(self.tail)), block.base):  # context before: from the tail
            _, line, dropped, final = self.tail[len(self.tail) - (block.base - i)]
            added += self.view.keep(i, line, self.keep, dropped, final)
        for i in range(max(lo, block.base), min(hi, block.end())):
            added += self._keep(block, i - block.base)
        if hi > block.end():
            self.keep_until = max(self.keep_until, hi)
        if kind == "strong":
            self.strong += added
        elif kind == "weak":
            self.weak += added

    def _keep(self, block: _Block, j: int) -> int:
        dropped = block.dropped if j == len(block.lines) - 1 else 0
        final = block.finals[j] if block.finals is not None else None
        return self.view.keep(block.base + j, block.lines[j], self.keep, dropped, final)

    def _entry(self, block: _Block, j: int) -> tuple[int, str, int, str | None]:
        dropped = block.dropped if j == len(block.lines) - 1 else 0
        return (block.base + j, block.lines[j], dropped, block.finals[j] if block.finals is not None else None)

    def _redact_keys(self, block: _Block, following: list[str]) -> None:
        """Lines of a private key block, redacted as `redact_lines` redacts the whole log: it
        runs on this block (and the two lines after it), starting inside a key block when the
        last block ended inside one."""
        if not self.in_key and "PRIVATE KEY" not in block.text:
            return
        keep = self.keep
        heads = [line[:keep] for line in block.lines]
        after = [line[:keep] for line in following]
        opener = _KEY_OPENER if self.in_key else []
        out = redact_lines(opener + heads + after)[len(opener) :]
        block.finals = out[: len(heads)]
        # Whether the block ended inside a key block: the line after it reads as a key line
        # (an equivalent reading where that line itself opens or is a key).
        self.in_key = bool(after) and out[len(heads)].startswith(_KEY_LINE)

    def _finish(self, total: int) -> None:
        view = self.view
        view.total = total
        for i, line, dropped, final in self.tail:  # the end of the log is always kept, and read
            view.keep(i, line, self.keep, dropped, final)
            head = line[:markers.SCORED_PREFIX]
            if i not in view.scores and markers.trigger_lines(line):
                score = markers.score(head)
                if score >= 2:
                    view.scores[i] = score
                elif score == 0 and i not in view.mentions and markers.MENTION.search(head) \
                        and not markers.NOT_AN_ERROR.search(head):
                    view.mentions.append(i)
        view.mentions.sort()
