"""Small file primitives shared by the ledgers and state files: stdlib only, cheap to import."""

from __future__ import annotations

import os
import time


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


def atomic_write(path: str | os.PathLike[str], data: bytes, *, mode: int | None = None, fsync: bool = False) -> None:
    """Write ``data`` to ``path`` so a reader sees the old file or the new one, never a part.

    The bytes go to a private temporary name beside ``path`` and replace it with ``os.replace``;
    ``mode`` sets the new file's permissions (default: the process's), ``fsync`` makes the data
    and the rename durable before returning (for files a crash must not lose, like receipts).
    A failed write leaves ``path`` as it was and removes the temporary file.
    """
    target = os.fspath(path)
    directory, name = os.path.split(target)
    tmp = os.path.join(directory, f".{name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(tmp, flags, 0o666 if mode is None else mode)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if mode is not None:
                os.fchmod(fd, mode)
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if fsync:
        dfd = os.open(directory or ".", os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
