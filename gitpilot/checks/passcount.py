"""How many tests a passing runner says passed, read from its log a block at a time.

Understands cargo, pytest, jest, vitest, mocha, unittest, bun and ``go test -v``, and
otherwise the last ``N passed`` in the log. Pure: the log file is only read.
"""

from __future__ import annotations

import re

from gitpilot.checks import logscan
from gitpilot.checks.ansi import strip_ansi

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["count_passed", "count_passed_file"]

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
    passes = _Passes()
    passes.feed(strip_ansi(log_text))
    return passes.result()


def count_passed_file(path: Path) -> int | None:
    """`count_passed` of the log at `path`, read in blocks (memory does not grow with its size)."""
    passes = _Passes()
    for raw, _ in logscan.blocks(logscan.file_chunks(path)):
        passes.feed(strip_ansi(raw.decode("utf-8", "replace")))
    return passes.result()


class _Passes:
    """The pass counts a log states, gathered a block of whole lines at a time. Each pattern
    runs only on blocks holding its literal (a big log has few such lines)."""

    _SUMMED = ((_CARGO_RESULT, "test result: "), (_PYTEST_RESULT, "passed"))
    _LAST = ((_JEST_RESULT, "Tests:"), (_VITEST_RESULT, "Tests"), (_MOCHA_RESULT, "passing"), (_BUN_RESULT, " pass"))

    def __init__(self) -> None:
        self.sums: list[int | None] = [None, None]
        self.last: list[str | None] = [None] * len(self._LAST)
        self.unittest: tuple[str, str, str] | None = None
        self.go = 0
        self.any: str | None = None
        self.carry = ""  # the end of the last block: unittest's verdict comes lines after `Ran N tests`

    def feed(self, text: str) -> None:
        for n, (pattern, literal) in enumerate(self._SUMMED):
            if literal in text and (found := pattern.findall(text)):
                self.sums[n] = (self.sums[n] or 0) + sum(int(x) for x in found)
        for n, (pattern, literal) in enumerate(self._LAST):
            if literal in text and (found := pattern.findall(text)):
                self.last[n] = found[-1]
        joined = self.carry + text
        if "Ran " in joined and (ran := _UNITTEST_RAN.findall(joined)):
            self.unittest = ran[-1]
        tail = text[-4096:]
        if len(text) > len(tail):  # start the carry at a line's start
            cut = tail.find("\n")
            tail = tail[cut + 1 :] if cut >= 0 else ""
        self.carry = tail
        if "--- PASS: " in text:
            self.go += len(_GO_PASS.findall(text))
        if "passed" in text and (found := _ANY_PASSED.findall(text)):
            self.any = found[-1]

    def result(self) -> int | None:
        for total in self.sums:
            if total is not None:
                return total
        for last in self.last:
            if last is not None:
                return int(last)
        if self.unittest is not None:
            return _unittest_passed(*self.unittest)
        if self.go:
            return self.go
        return int(self.any) if self.any is not None else None


def _unittest_passed(ran: str, verdict: str, details: str) -> int:
    """`Ran 12 tests` / `FAILED (failures=1, errors=1, skipped=2)` -> 8."""
    not_passed = 0
    for item in details.split(","):
        name, _, value = item.strip().partition("=")
        if value.isdigit() and name in ("failures", "errors", "skipped", "expected failures"):
            not_passed += int(value)
    return max(0, int(ran) - not_passed)

