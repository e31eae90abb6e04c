"""Which tracked files are certainly unchanged, told from the index file's stat data alone.

``git diff-files`` with a pathspec a file is exact but slow for many files: git matches every
index entry against every path given (vercel/ai: 753 paths over 8,066 entries, ~100 ms). The
index (git's documented format, versions 2 to 4) holds each entry's stat data; a file whose
``lstat`` gives the very same data, and that was not changed in or after the second the index was
written (git's "racily clean" case), is one git too would call unchanged without reading it. Only
the others are asked of git. Anything unexpected (another index version, an entry with flags, a
file that is not a plain regular file) proves nothing here and is left to git: this can only
spare git calls, never answer differently from git.
"""

from __future__ import annotations

import os
import stat
import struct
from collections.abc import Iterable, Sequence

_HEADER = struct.Struct(">4sII")
# ctime s/ns, mtime s/ns, dev, ino, mode, uid, gid, size, then the object id and the flags
_ENTRY = struct.Struct(">10I20sH")
_MASK = 0xFFFFFFFF  # the index keeps 32 bits of each field
_FLAGS = struct.Struct(">H")
_FLAGS_AT = _ENTRY.size - 2
_EXTENDED = 0x4000
_NAME_MASK = 0x0FFF


def read_stats(index_path: str, wanted: Iterable[str]) -> dict[str, tuple[int, ...]] | None:
    """The stat data the index holds for the ``wanted`` paths (of stage 0, without flags), with
    the index file's own modification time (whole seconds) under the key ``""``; None when the
    file cannot be read as an index of version 2, 3 or 4."""
    want = {p.encode("utf-8", "surrogateescape") for p in wanted}
    try:
        with open(index_path, "rb") as fh:
            st = os.fstat(fh.fileno())
            data = fh.read()
    except OSError:
        return None
    try:
        sig, version, count = _HEADER.unpack_from(data, 0)
        if sig != b"DIRC" or version not in (2, 3, 4):
            return None
        found = _entries_v4(data, count, want) if version == 4 else _entries(data, count, want, version)
    except (struct.error, ValueError, IndexError):
        return None
    if found is None:
        return None
    out: dict[str, tuple[int, ...]] = {"": (st.st_mtime_ns // 1_000_000_000,)}
    for name, at in found.items():
        fields = _ENTRY.unpack_from(data, at)
        if not fields[11] & ~_NAME_MASK:  # stage 0, no assume-valid or extended flags
            out[name.decode("utf-8", "surrogateescape")] = fields[:10]
    return out


def _entries(data: bytes, count: int, want: set[bytes], version: int) -> dict[bytes, int] | None:
    """Where each wanted entry starts, in an index of version 2 or 3 (entries NUL-padded to a
    multiple of eight bytes, the name's length in the flags up to 0xFFF)."""
    flags_of = _FLAGS.unpack_from
    found: dict[bytes, int] = {}
    pos = _HEADER.size
    for _ in range(count):
        (flags,) = flags_of(data, pos + _FLAGS_AT)
        head = _ENTRY.size
        if flags & _EXTENDED:
            if version < 3:
                return None
            head += 2
        n = flags & _NAME_MASK
        if n == _NAME_MASK:  # a longer name: up to its NUL
            n = data.index(b"\0", pos + head) - pos - head
        name = data[pos + head : pos + head + n]
        if name in want:
            found[name] = pos
        pos += (head + n + 8) & ~7
    return found


def _entries_v4(data: bytes, count: int, want: set[bytes]) -> dict[bytes, int] | None:
    """The same for version 4 (each name stored as what it keeps of the one before, no padding)."""
    flags_of = _FLAGS.unpack_from
    found: dict[bytes, int] = {}
    pos = _HEADER.size
    prev = b""
    for _ in range(count):
        (flags,) = flags_of(data, pos + _FLAGS_AT)
        at = pos
        pos += _ENTRY.size + (2 if flags & _EXTENDED else 0)
        strip, pos = _varint(data, pos)
        end = data.index(b"\0", pos)
        if strip > len(prev):
            return None
        name = prev[: len(prev) - strip] + data[pos:end]
        pos = end + 1
        prev = name
        if name in want:
            found[name] = at
    return found


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """git's offset varint (``varint.c``): seven bits a byte, each continuation adding one."""
    c = data[pos]
    pos += 1
    value = c & 0x7F
    while c & 0x80:
        c = data[pos]
        pos += 1
        value = ((value + 1) << 7) | (c & 0x7F)
    return value, pos


def unchanged(root: str, index_path: str, paths: Sequence[str]) -> set[str]:
    """Those of the tracked ``paths`` that git would call unchanged from their stat data alone:
    regular files whose ``lstat`` matches the index's record field for field, last changed before
    the second the index was written."""
    stats = read_stats(index_path, paths)
    if stats is None:
        return set()
    (index_second,) = stats[""]
    same: set[str] = set()
    for path in paths:
        rec = stats.get(path) if path else None
        if rec is None:
            continue
        ctime_s, ctime_ns, mtime_s, mtime_ns, dev, ino, mode, uid, gid, size = rec
        if not size or mtime_s >= index_second or not stat.S_ISREG(mode):
            continue  # an empty or smudged entry, a racily clean one, a link: git reads these
        try:
            st = os.lstat(os.path.join(root, path))
        except OSError:
            continue
        if (
            stat.S_ISREG(st.st_mode)
            and (st.st_mode ^ mode) & 0o100 == 0
            and st.st_size & _MASK == size
            and (st.st_mtime_ns // 1_000_000_000) & _MASK == mtime_s
            and st.st_mtime_ns % 1_000_000_000 == mtime_ns
            and (st.st_ctime_ns // 1_000_000_000) & _MASK == ctime_s
            and st.st_ctime_ns % 1_000_000_000 == ctime_ns
            and st.st_ino & _MASK == ino
            and st.st_dev & _MASK == dev
            and st.st_uid & _MASK == uid
            and st.st_gid & _MASK == gid
        ):
            same.add(path)
    return same
