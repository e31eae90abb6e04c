"""A file's lines, split the first time they are needed.

A new task on a large documentation tree reads every candidate's text (its names are looked for
in all of them), but the lines of most files are never asked for: their section maps and term
statistics are cached, and they are neither chosen nor listed as left out (vercel/ai: the change
logs, 4 of 7.9 MB, hundreds of thousands of short lines). ``Lines`` is the list
``markdown.split_lines`` gives, made on first use; its length and the first lines (front matter)
are read from the text without it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

from gitpilot.context.markdown import _OTHER_BREAKS, split_lines

HEAD = 256  # the first lines are cut from the text without splitting the rest


def newlines_only(text: str) -> bool:
    """Whether only ``\\n`` ends a line of ``text`` (as ``split_lines`` splits it)."""
    return not any(c in text for c in _OTHER_BREAKS)


class Lines(Sequence[str]):
    """``split_lines(text)``, split on first use (``all``); ``len`` and the first ``HEAD`` lines
    of a text whose lines end in ``\\n`` only are read without splitting it."""

    __slots__ = ("text", "_all", "_plain", "_count")

    def __init__(self, text: str) -> None:
        self.text = text
        self._all: list[str] | None = None
        self._plain: bool | None = None
        self._count = -1

    def all(self) -> list[str]:
        """Every line, with its ending."""
        got = self._all
        if got is None:
            got = self._all = split_lines(self.text)
        return got

    def _newlines_only(self) -> bool:
        if self._plain is None:
            self._plain = newlines_only(self.text)
        return self._plain

    def __len__(self) -> int:
        if self._all is not None:
            return len(self._all)
        if self._count < 0:
            if not self._newlines_only():
                return len(self.all())
            text = self.text
            self._count = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
        return self._count

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> list[str]: ...

    def __getitem__(self, i: int | slice) -> str | list[str]:
        if self._all is None and self._newlines_only():
            if isinstance(i, slice):
                if i.step is None and 0 <= (i.start or 0) and i.stop is not None and 0 <= i.stop <= HEAD:
                    return self._head(i.stop)[i]
            elif 0 <= i < HEAD:
                head = self._head(i + 1)
                if i < len(head):
                    return head[i]
                raise IndexError("line index out of range")
        return self.all()[i]

    def _head(self, n: int) -> list[str]:
        """The first ``n`` lines (all of them in a shorter text): a prefix with ``n`` line ends
        is split, a longer one each time it has fewer."""
        text = self.text
        size = 128 * n
        while size < len(text):
            part = text[:size]
            if part.count("\n") >= n:  # its first n lines are whole
                return part.splitlines(keepends=True)[:n]
            size *= 4
        return self.all()[:n]

    def __iter__(self) -> Iterator[str]:
        return iter(self.all())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Lines):
            return self.text == other.text
        if isinstance(other, list):
            return self.all() == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Lines({self.all()!r})"
