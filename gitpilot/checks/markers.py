"""What test runners, compilers and linters print when something fails, as patterns.

How surely a line reports a failure (``score``), which lines merely mention one, the runner's
verdict lines, the blocks whose lines belong together (a traceback, a pytest section, a
compiler diagnostic, a Go or Jest failure), and a fast test of which lines of a big block can
matter at all (``trigger_lines``). Pure functions over text.
"""

from __future__ import annotations

import re
from typing import Protocol

__all__ = ["AFTER", "BEFORE", "BLOCK_LIMIT", "MENTION", "NOT_AN_ERROR", "PYTEST_FINAL", "PYTEST_SHORT_SUMMARY",
           "SCORED_PREFIX", "SUMMARY", "block_end", "opens_block", "score", "trigger_lines"]


class Lines(Protocol):
    """Lines by number: a log's kept lines (every other line reads as "")."""

    def __len__(self) -> int: ...

    def __getitem__(self, i: int) -> str: ...


# The runner's final verdict: always kept, last ones first.
SUMMARY = re.compile(
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
PYTEST_SHORT_SUMMARY = re.compile(r"^=+ short test summary info =+$")
PYTEST_FINAL = re.compile(r"^=+ .* in [\d.]+s\b.*=+$")

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
MENTION = re.compile(r"(?i)\b(?:error|errors|fail|failed|failure|fatal|exception|assert|assertion)\b")
SCORED_PREFIX = 4096  # characters of a line that scoring looks at
NOT_AN_ERROR = re.compile(r"(?i)\b(?:0|no|zero) (?:errors?|failures?|failed)\b|-Werror|\berrors?=0\b")

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
BLOCK_LIMIT = 400  # lines; a block longer than this is cut there
BEFORE, AFTER = 2, 4  # context lines around an anchor outside any block

# A line that holds none of these can be no anchor, mention, verdict or summary header: the
# scan tests only the lines where one is found (most lines of a big log hold none). Every
# pattern above that can score, mention or summarise a line needs one of them. Searched in the
# block's UTF-8 bytes: the words in its ASCII-lower-cased copy, the rest as they are.
_WORDS = (b"error", b"fail", b"fatal", b"exception", b"assert", b"traceback", b"panic", b"segmentation fault",
          b"core dumped", b"killed", b"ut of memory", b"aborted")
_NEEDLES = (b"Caused by: ", b"--> ")
_LINE_START = re.compile(
    rb"\n(?:E\s|>\s|___|npm |make|=|\d+ (?:failed|passed)|Ran \d|OK|test result: |\s*Test"
    rb"|\s*\d+ (?:passing|failing)|\s*(?:\xe2\x97\x8f|\xe2\x9c\x95|\xe2\x9c\x96|\xc3\x97) )")
_LOCATIONS = (re.compile(rb":\d+:\d+: "), re.compile(rb"\.py:\d"))  # each with a literal prefix: fast


def trigger_lines(text: str) -> list[int]:
    """Indices of the lines of `text` that may matter (see `_WORDS`), in order."""
    raw = text.encode("utf-8")
    low = raw.lower()  # ASCII letters only: offsets stay the same
    offsets: set[int] = set()
    for haystack, needles in ((low, _WORDS), (raw, _NEEDLES)):
        for needle in needles:
            pos = haystack.find(needle)
            while pos >= 0:
                offsets.add(pos)
                nl = haystack.find(b"\n", pos)
                if nl < 0:
                    break
                pos = haystack.find(needle, nl + 1)
    offsets.update(m.start() for m in _LINE_START.finditer(b"\n" + raw))  # a line start, shifted by one
    for pattern in _LOCATIONS:
        offsets.update(m.start() for m in pattern.finditer(raw))
    lines: list[int] = []
    line = prev = 0
    for off in sorted(offsets):
        line += raw.count(b"\n", prev, off)
        prev = off
        if not lines or lines[-1] != line:
            lines.append(line)
    return lines




def score(line: str) -> int:
    """3, 2 or 0: how surely `line` reports a failure (mere mentions are scored apart)."""
    head = line[:SCORED_PREFIX]
    if _STRONG.match(head) or _STRONG_SEARCH.search(head):
        return 3
    if _LIKELY.match(head) or any(word in head for word in _LIKELY_WORDS):
        return 2
    return 0


def opens_block(line: str) -> bool:
    return bool(_TRACEBACK.match(line) or _PYTEST_SECTION.match(line) or _COMPILER_ERROR.match(line)
                or _LOCATED_ERROR.match(line) or _GO_FAIL.match(line) or _JEST_FAIL.match(line))


def block_end(lines: Lines, i: int) -> int | None:
    """End (exclusive) of the block that line `i` opens, or None when it opens none."""
    line = lines[i]
    limit = min(len(lines), i + BLOCK_LIMIT)
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
