"""What Claude Code's transcripts and Codex's rollouts have in common: JSON Lines files an agent
appends to, read by ``claude_files`` and ``codex_files``.

Both are read the cheap way: a line is decoded only when it contains one of the byte strings
its reader looks for (a substring test is far faster than ``json.loads`` on long histories),
and a file's end is read without the rest. Standard library only, and nothing imported at load
beyond ``os`` and ``json``: the Codex hook reads a rollout's tail on every tool call.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs import time on the hook's hot path
    from collections.abc import Iterator
    from typing import Any


def loads(line: bytes | str) -> dict[str, Any] | None:
    """One JSON object line, or None (not JSON, or not an object)."""
    try:
        rec = json.loads(line)
    except ValueError:
        return None
    return rec if isinstance(rec, dict) else None


def records(path: str | os.PathLike[str], needles: tuple[bytes, ...]) -> Iterator[dict[str, Any]]:
    """The JSON objects of the lines of ``path`` that contain any of ``needles`` (nothing when the
    file cannot be read)."""
    try:
        with open(path, "rb") as fh:
            for line in fh:
                if any(n in line for n in needles):
                    rec = loads(line)
                    if rec is not None:
                        yield rec
    except OSError:
        return


def tail(path: str | os.PathLike[str], limit: int) -> bytes | None:
    """The last ``limit`` bytes of ``path`` from their first whole line; None when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            start = max(0, size - limit - 1)  # one byte more: is the first line cut?
            fh.seek(start)
            data = fh.read()
    except OSError:
        return None
    if size > limit:
        data = data[data.find(b"\n") + 1:]  # from the first whole line (all of it when there is none)
    return data


def inside(cwd: str, root: str | os.PathLike[str]) -> bool:
    """Whether the directory ``cwd`` an agent recorded is ``root`` or below it."""
    if not cwd:
        return False
    top = os.fspath(root).rstrip("/")
    return cwd == top or cwd.startswith(top + "/")
