"""Reading a working-tree file without leaving the repository.

A path is read only where it lies inside the repository's root, symlinks followed: a link, a
``..`` part or an ``@../`` import that leads outside is never followed. The fast way opens each
directory on the way without following a symlink (``Reader`` keeps them open for one pass over
many files) and the file itself likewise; anything else (a link on the way, a ``.`` or ``..``
part) is resolved the long way (``inside``) first. A file over ``MAX_FILE_BYTES`` is not read,
a file that is not UTF-8 is not decoded: each says so (``Loaded.status``).

Which files may be read at all (never a credential-named one) is ``sources``' rule: it asks here
only for the paths it planned.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

MAX_FILE_BYTES = 1_000_000


def inside(root: Path, path: str) -> bool:
    """True when ``path`` (repository-relative) resolves, symlinks followed, inside ``root``."""
    if path.startswith("/") or path.startswith("~"):
        return False
    real_root = os.path.realpath(root)
    real = os.path.realpath(os.path.join(real_root, path))
    return real == real_root or real.startswith(real_root + os.sep)


def real_path(root: Path, path: str) -> str | None:
    """``path`` with every symlink on the way resolved, repository-relative (None: outside)."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(os.path.join(real_root, path))
    if not real.startswith(real_root + os.sep):
        return None
    return os.path.relpath(real, real_root).replace(os.sep, "/")


class Resolver:
    """``inside`` and ``real_path`` for many paths of one root at once, each directory on the way
    resolved once: a path of plain parts (no empty, ``.`` or ``..`` part) resolves to its
    directory's real path joined with its name, the name followed where it is a symlink, which is
    what ``os.path.realpath`` makes of it one part after the other. Other paths take
    ``os.path.realpath`` itself. Meant for one pass over the sources (the working tree as it is
    then), not to be kept."""

    def __init__(self, root: Path) -> None:
        self.real_root = os.path.realpath(root)
        self._dirs: dict[str, str] = {"": self.real_root}

    def real(self, path: str) -> str:
        """``os.path.realpath`` of ``path`` joined to the real root."""
        if not _plain(path):
            return os.path.realpath(os.path.join(self.real_root, path))
        directory, _, name = path.rpartition("/")
        return _follow(self._dir(directory), name)

    def _dir(self, directory: str) -> str:
        got = self._dirs.get(directory)
        if got is None:
            parent, _, name = directory.rpartition("/")
            got = self._dirs[directory] = _follow(self._dir(parent), name)
        return got

    def inside(self, path: str) -> bool:
        if path.startswith("/") or path.startswith("~"):
            return False
        real = self.real(path)
        return real == self.real_root or real.startswith(self.real_root + os.sep)

    def real_path(self, path: str) -> str | None:
        real = self.real(path)
        if not real.startswith(self.real_root + os.sep):
            return None
        if self.real_root == os.sep:
            return os.path.relpath(real, self.real_root).replace(os.sep, "/")
        return real[len(self.real_root) + 1 :].replace(os.sep, "/")


def _plain(path: str) -> bool:
    return bool(path) and not path.startswith("/") and all(p not in ("", ".", "..") for p in path.split("/"))


def _follow(real_dir: str, name: str) -> str:
    """``real_dir`` (a real path) joined with ``name``, resolved when ``name`` is a symlink."""
    full = os.path.join(real_dir, name)
    return os.path.realpath(full) if os.path.islink(full) else full


def normalize(base_dir: str, target: str) -> str | None:
    """A repository-relative path for ``target`` seen from ``base_dir``; None when it leaves the repo."""
    if target.startswith(("/", "~")):
        return None
    joined = os.path.normpath(os.path.join(base_dir, target)) if base_dir else os.path.normpath(target)
    if joined == "." or joined.startswith("..") or os.path.isabs(joined):
        return None
    return joined.replace(os.sep, "/")


@dataclass(frozen=True)
class Loaded:
    text: str | None
    status: str  # "ok", "not-utf8", "too-large", "missing", "outside"


def read_text(root: Path, path: str, reader: Reader | None = None) -> Loaded:
    """The exact UTF-8 text of a working-tree file inside the repository (never follows links out).
    With ``reader``, the directories on the way are those it opened already."""
    data = reader.plain(path) if reader is not None else _read_plain(root, path)
    if data is not None:
        if isinstance(data, int):
            return Loaded(None, "too-large")
        try:
            return Loaded(data.decode("utf-8"), "ok")
        except UnicodeDecodeError:
            return Loaded(None, "not-utf8")
    if not inside(root, path):
        return Loaded(None, "outside")
    full = root / path
    try:
        size = os.stat(full).st_size
        if size > MAX_FILE_BYTES:
            return Loaded(None, "too-large")
        data = full.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return Loaded(None, "missing")
    try:
        return Loaded(data.decode("utf-8"), "ok")
    except UnicodeDecodeError:
        return Loaded(None, "not-utf8")


# Where the system has no O_NOFOLLOW/O_DIRECTORY, every read takes the long way.
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW
_FAST_READ = hasattr(os, "O_NOFOLLOW") and hasattr(os, "O_DIRECTORY")


def _read_plain(root: Path, path: str) -> bytes | int | None:
    """The bytes of a regular file reached from ``root`` through real directories only (each
    directory opened without following a symlink, the file too), so it lies inside the repository
    as ``inside`` would find; its size when that is over ``MAX_FILE_BYTES``; None for anything
    else (a symlink on the way, a missing file, a path with ``.`` or ``..`` parts), which
    ``read_text`` then resolves the long way. The file itself is opened by its full path, as
    every other read names it."""
    if not _FAST_READ or not _plain(path) or path.startswith("~"):
        return None
    parts = path.split("/")
    if len(parts) > 1:
        try:
            fd = os.open(root, _DIR_FLAGS & ~getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return None
        try:
            for part in parts[:-1]:
                sub = os.open(part, _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = sub
        except OSError:
            return None
        finally:
            os.close(fd)
    try:
        file_fd = os.open(os.path.join(root, path), os.O_RDONLY | _NOFOLLOW)
    except OSError:
        return None
    return _read_fd(file_fd)


def _read_fd(file_fd: int) -> bytes | int | None:
    """The bytes of the regular file open at ``file_fd`` (then closed), its size when that is over
    ``MAX_FILE_BYTES``, None for anything else."""
    try:
        st = os.fstat(file_fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        if st.st_size > MAX_FILE_BYTES:
            return st.st_size
        # read to the end with plain reads (a buffered file object would ask the terminal and
        # the offset first: three system calls more a file, 750 files a capsule)
        parts = [os.read(file_fd, st.st_size + 1)]
        while parts[-1]:
            parts.append(os.read(file_fd, 1 << 16))
        return b"".join(parts)
    except OSError:
        return None
    finally:
        os.close(file_fd)


class Reader:
    """``_read_plain`` for many files of one root in one pass: each directory on the way is
    opened once (without following a symlink, as ``_read_plain`` opens it) and kept open until
    ``close`` (vercel/ai: 750 files, 3,600 opens -> 1,100); the file itself is opened by its full
    path, as ``_read_plain`` opens it. Meant for one pass over the sources, then closed."""

    KEEP = 64  # directories kept open at most (beyond, those not on the current path are closed)

    def __init__(self, root: Path) -> None:
        self.root = root
        self._fds: dict[str, int] = {}  # directory (repository-relative) -> its fd, -1: not a real one

    def _dir(self, directory: str) -> int:
        fd = self._fds.get(directory)
        if fd is None:
            if len(self._fds) >= self.KEEP:
                self._drop_all_but(directory)
            try:
                if directory == "":
                    fd = os.open(self.root, _DIR_FLAGS & ~getattr(os, "O_NOFOLLOW", 0))
                else:
                    parent, _, name = directory.rpartition("/")
                    up = self._dir(parent)
                    fd = -1 if up < 0 else os.open(name, _DIR_FLAGS, dir_fd=up)
            except OSError:
                fd = -1
            self._fds[directory] = fd
        return fd

    def plain(self, path: str) -> bytes | int | None:
        """What ``_read_plain(root, path)`` gives."""
        if not _FAST_READ or not _plain(path) or path.startswith("~"):
            return None
        directory, _, name = path.rpartition("/")
        fd = self._dir(directory)
        if fd < 0:
            return None
        try:
            # by its full path, as every other read names it (what an audit of the opens sees)
            file_fd = os.open(os.path.join(self.root, path), os.O_RDONLY | _NOFOLLOW)
        except OSError:
            return None
        return _read_fd(file_fd)

    def _drop_all_but(self, directory: str) -> None:
        """Close every directory kept but ``directory``'s ancestors (a tree of many directories
        must not use up this process's file descriptors)."""
        for d in [d for d in self._fds if not (d == "" or directory.startswith(d + "/"))]:
            fd = self._fds.pop(d)
            if fd >= 0:
                os.close(fd)

    def close(self) -> None:
        for fd in self._fds.values():
            if fd >= 0:
                os.close(fd)
        self._fds.clear()

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def link_target(root: Path, path: str) -> str | None:
    """The repository-relative target of a symlinked file (None: not a link, or outside)."""
    full = root / path
    if not os.path.islink(full):
        return None
    target = os.readlink(full)
    base = path.rsplit("/", 1)[0] if "/" in path else ""
    rel = normalize(base, target)
    if rel is None or not inside(root, rel):
        return ""
    return rel
