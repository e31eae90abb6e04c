"""One pure function over many files, spread over the machine's processors.

A cold capsule on a large documentation tree parses every Markdown file and counts its terms
(vercel/ai: 750 files, seconds of one processor): work that depends on each file alone. ``map_all``
gives ``[fn(x) for x in items]``, the items cut into consecutive slices, each slice but the first
done by a forked copy of this process that sends its results back through a pipe (as bytes:
``encode`` in the copy, ``decode`` here). The results are the same values in the same order
whichever process made them; a copy that fails, or a system without ``fork``, leaves its slice
to this process. Small batches are not worth a fork and run here, and so is everything on a
machine whose processors are busy already (``workers``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

MIN_ITEMS = 64  # fewer items than this run in this process
MAX_WORKERS = 4


def workers() -> int:
    """How many processes may work at once: this one and the processors it may run on that are not
    busy already (the load average says how many are), at most 4. On a machine whose processors
    are all busy, forked copies only add work (each copy's and this process's pages are copied as
    they are written): one process then does it all."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    try:
        busy = os.getloadavg()[0]
    except (AttributeError, OSError):
        busy = 0.0
    spare = n - int(busy + 0.5)
    return max(1, min(1 + spare, n, MAX_WORKERS))


def map_all(
    fn: Callable[[T], R],
    items: Sequence[T],
    encode: Callable[[R], bytes],
    decode: Callable[[bytes], R | None],
    *,
    processes: int | None = None,
) -> list[R]:
    """``[fn(x) for x in items]``, computed by up to ``processes`` processes (``workers()``)."""
    n = workers() if processes is None else max(1, processes)
    if n == 1 or len(items) < MIN_ITEMS or not hasattr(os, "fork"):
        return [fn(x) for x in items]
    size = -(-len(items) // n)
    slices = [items[i : i + size] for i in range(0, len(items), size)]
    children: list[tuple[int, int] | None] = [_start(fn, part, encode) for part in slices[1:]]
    out = [fn(x) for x in slices[0]]
    for part, child in zip(slices[1:], children, strict=True):
        got = _collect(child, len(part), decode)
        out += got if got is not None else [fn(x) for x in part]
    return out


def _start(fn: Callable[[T], R], part: Sequence[T], encode: Callable[[R], bytes]) -> tuple[int, int] | None:
    """Fork a copy that works out ``part`` and writes its results to a pipe: (pid, read end)."""
    try:
        read_fd, write_fd = os.pipe()
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(read_fd)
        os.close(write_fd)
        return None
    if pid == 0:  # the copy: compute, send, and leave without running any of the parent's exit code
        code = 1
        try:
            os.close(read_fd)
            body = b"".join(_frame(encode(fn(x))) for x in part)
            view = memoryview(body)
            while view:
                view = view[os.write(write_fd, view) :]
            code = 0
        except BaseException:  # noqa: BLE001 - any failure: the parent does this slice itself
            code = 1
        finally:
            os._exit(code)
    os.close(write_fd)
    return pid, read_fd


def _frame(data: bytes) -> bytes:
    return len(data).to_bytes(8, "big") + data


def _collect(child: tuple[int, int] | None, count: int, decode: Callable[[bytes], R | None]) -> list[R] | None:
    """The results a copy sent (None when it failed or sent anything else)."""
    if child is None:
        return None
    pid, read_fd = child
    chunks = []
    try:
        while True:
            chunk = os.read(read_fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_fd)
        _, status = os.waitpid(pid, 0)
    if status != 0:
        return None
    data = b"".join(chunks)
    out: list[R] = []
    pos = 0
    while pos < len(data) and len(out) < count:
        size = int.from_bytes(data[pos : pos + 8], "big")
        item = decode(data[pos + 8 : pos + 8 + size])
        if item is None:
            return None
        out.append(item)
        pos += 8 + size
    return out if len(out) == count and pos == len(data) else None
