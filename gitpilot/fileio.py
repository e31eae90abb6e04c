"""Small file primitives shared by the ledgers and state files: stdlib only, cheap to import.

Every file git pilot replaces goes through ``atomic_write``, and every rename through
``rename``: this is the one module that calls ``os.replace``. Each caller states whether the
file must survive a crash (``fsync=True``: a record the user relies on, like a receipt) or
can be rebuilt (a cache, a log, a file regenerated on the next run). The machine-local caches
(the index listing, the parsed config, the capsule's kept records) are written by ``keep`` and
read by ``read_kept``: best effort both ways, each caller checking that what it reads is its own.
"""

from __future__ import annotations

import marshal
import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs import time on the hot paths that write through this module
    from typing import Any


def file_signature(path: str | os.PathLike[str]) -> str | None:
    """A file's identity for a cache keyed on it: inode, size and modification time (git replaces
    its index by a rename, so every rewrite gives a new one); None when it cannot be stat'ed."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"


def read_kept(path: str | os.PathLike[str]) -> Any:
    """The value of a machine-local record written by ``keep``; None when there is none or it
    does not load (the caller checks that the value is the record it wants)."""
    try:
        with open(path, "rb") as fh:
            return marshal.loads(fh.read())
    except (OSError, EOFError, ValueError, TypeError):
        return None


def keep(path: str | os.PathLike[str], value: Any) -> bool:
    """Keep ``value`` in ``path`` (``marshal``, atomically, its directory made): a cache, worked
    out again when lost, so not synced and best effort: False when it could not be written (a
    value marshal cannot hold, a full or read-only disk)."""
    try:
        data = marshal.dumps(value)
        os.makedirs(os.path.dirname(os.fspath(path)) or ".", exist_ok=True)
        atomic_write(path, data)
    except (OSError, ValueError):
        return False
    return True


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


def atomic_write(path: str | os.PathLike[str], data: bytes, *, mode: int | None = None, fsync: bool = False,
                 exclusive: bool = False) -> None:
    """Write ``data`` to ``path`` so a reader sees the old file or the new one, never a part.

    The bytes go to a temporary name beside ``path`` (``.<name>.<pid>.<random>.tmp``: unique per
    process and call) that then replaces it. ``mode`` sets the new file's permission bits exactly;
    without it a file that is there keeps its bits and a new one gets 0666 less the umask.
    ``fsync`` makes the data and the rename durable before returning. ``exclusive`` never
    replaces a file: one that is there (or appears meanwhile) raises ``FileExistsError``.
    A failed write leaves ``path`` as it was and no temporary file.
    """
    target = os.fspath(path)
    directory, name = os.path.split(target)
    if mode is None and not exclusive:
        try:
            mode = os.stat(target).st_mode & 0o7777
        except OSError:
            pass  # a new file (an unreadable one fails below, where it is written)
    tmp = os.path.join(directory, f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(tmp, flags, 0o666 if mode is None else mode)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if mode is not None:
                os.fchmod(fd, mode)  # os.open's mode is cut by the umask; an executable stays one
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        if exclusive:
            os.link(tmp, target)  # a link never replaces its target
        else:
            os.replace(tmp, target)
    except BaseException:
        _unlink(tmp)
        raise
    if exclusive:
        _unlink(tmp)
    if fsync:
        _sync_dir(directory)


def rename(src: str | os.PathLike[str], dst: str | os.PathLike[str], *, fsync: bool = False) -> None:
    """Rename ``src`` to ``dst`` in one step, replacing ``dst`` (a symlink moves as itself).

    ``fsync`` makes the rename durable before returning (the directory is synced).
    """
    os.replace(src, dst)
    if fsync:
        _sync_dir(os.path.dirname(os.fspath(dst)))


def _sync_dir(directory: str) -> None:
    fd = os.open(directory or ".", os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
