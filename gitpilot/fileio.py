"""Small file primitives shared by the ledgers and state files: stdlib only, cheap to import."""

from __future__ import annotations

import os


def append_whole_line(fd: int, line: bytes) -> None:
    """Append ``line`` (ending in a newline) to the file open at ``fd`` (O_APPEND), whole.

    A writer killed mid-line leaves a last line without its newline: that line is ended
    first, or this line would be glued to it and lost with it (readers skip the cut line).
    The caller holds the file's lock.
    """
    size = os.fstat(fd).st_size
    if size and os.pread(fd, 1, size - 1) != b"\n":
        line = b"\n" + line
    view = memoryview(line)
    while view:
        view = view[os.write(fd, view) :]
