"""Small JSON state files shared by concurrent processes: locked, atomically replaced.

Hook processes for one agent session can run at the same time (Claude Code runs hooks of
parallel tool calls concurrently). Every read-modify-write of a state file happens under an
exclusive ``fcntl`` lock on a sibling ``.lock`` file, and the new content lands with
``fileio.atomic_write`` (a temporary file in the same directory, renamed over the old one),
so a reader never sees half a file and no update is lost. Stdlib only: this is on the hook's hot path.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from gitpilot.fileio import append_whole_line, atomic_write


@contextmanager
def locked(path: str) -> Iterator[None]:
    """Hold the exclusive lock of ``path`` (its ``<path>.lock`` file) for the block."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def read_json(path: str) -> Any:
    """The JSON in ``path``, or ``None`` when it is missing or unreadable."""
    try:
        with open(path, "rb") as fh:
            return json.loads(fh.read())
    except (OSError, ValueError):
        return None


def write_json(path: str, data: Any, *, indent: int | None = None, fsync: bool = False) -> None:
    """Replace ``path`` with ``data`` as JSON, atomically (``fsync``: durably too)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    text = json.dumps(data, indent=indent, sort_keys=True, ensure_ascii=False)
    atomic_write(path, (text + "\n").encode("utf-8"), fsync=fsync)


def replace_text(path: str, text: str) -> None:
    """Replace ``path`` with ``text``, atomically (not synced: the callers keep logs)."""
    atomic_write(path, text.encode("utf-8"))


def append_line(path: str, record: dict[str, Any]) -> None:
    """Append one JSON line, under the file's lock (the one a rewrite of the file holds too).

    A writer killed mid-line leaves a last line without its newline: that line is ended
    first, or this record would be glued to it and lost with it (readers skip the cut line).
    """
    data = (json.dumps(record, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")
    with locked(path):
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            append_whole_line(fd, data)
        finally:
            os.close(fd)


def tail_lines(path: str, max_bytes: int = 65536) -> list[str]:
    """The complete lines in the last ``max_bytes`` of ``path`` (``[]`` when missing)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            start = max(0, size - max_bytes)
            fh.seek(start)
            data = fh.read()
    except OSError:
        return []
    lines = data.decode("utf-8", "replace").splitlines()
    if start > 0 and lines:
        lines = lines[1:]  # the first line was cut
    return lines
