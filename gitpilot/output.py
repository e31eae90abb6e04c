"""All terminal output: plain lines, colour, a one-line progress display, sizes as people read them.

The only module that imports colorama, and only when colour is really wanted: on a
terminal and without NO_COLOR. An agent or CI (not a terminal) gets plain quiet lines.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO

_COLOURS = {"green": "\x1b[32m", "red": "\x1b[31m", "yellow": "\x1b[33m", "dim": "\x1b[2m", "bold": "\x1b[1m"}
_RESET = "\x1b[0m"
_colorama_ready = False


def is_tty(stream: TextIO | None = None) -> bool:
    stream = stream or sys.stdout
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def colour_enabled(stream: TextIO | None = None) -> bool:
    if "NO_COLOR" in os.environ:
        return False
    return is_tty(stream)


def _ensure_colorama() -> None:
    global _colorama_ready
    if not _colorama_ready and sys.platform == "win32":  # pragma: no cover - not on CI
        import colorama

        colorama.just_fix_windows_console()
    _colorama_ready = True


def paint(text: str, colour: str, stream: TextIO | None = None) -> str:
    """``text`` in ``colour`` when the stream is a terminal and NO_COLOR is unset."""
    if not colour_enabled(stream):
        return text
    _ensure_colorama()
    return f"{_COLOURS[colour]}{text}{_RESET}"


def out(text: str = "") -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def write(data: bytes) -> None:
    """Raw bytes to stdout (full logs are shown byte for byte)."""
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def err(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


class Progress:
    """One updating status line on a terminal; nothing at all elsewhere."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout
        self.active = is_tty(self.stream)
        self._label = ""
        self._start = 0.0
        self._shown = False

    def start(self, label: str) -> None:
        self._label = label
        self._start = time.monotonic()
        self.tick()

    def tick(self) -> None:
        if not self.active:
            return
        secs = time.monotonic() - self._start
        line = f"running {self._label} ({secs:.0f}s)"
        width = 79
        self.stream.write("\r\x1b[K" + line[:width])
        self.stream.flush()
        self._shown = True

    def clear(self) -> None:
        if self.active and self._shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._shown = False


def human_size(n: int) -> str:
    """A byte count as people read it: ``512 B``, ``1.5 KiB``, ``3.2 MiB``."""
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB"):
        value /= 1024
        if value < 1024 or unit == "GiB":
            return f"{value:.1f} {unit}"
    return f"{n} B"
