"""The express path of a warm ``git pilot capsule``: a stamp check with the standard library only.

When a capsule is built (or fully re-verified), a stamp is written beside it: the index
file's stat signature, the lstat signature of every source the capsule was built from (the
context, instruction and memory files and their imports), of the files that live outside
the index (config, untracked instruction and memory files, ``.claude/rules`` directories),
and the capsule's exact bytes. A later run with the same task accepts the capsule when the
index file is the same file unchanged (so the tracked files, roles and blob ids are the
same), every source and probe has the same signature, and the capsule on disk is still
byte for byte what was written.
A file modified after the full check started (or within git's racy window before it) is
never trusted by its signature, exactly as git treats racily clean index entries. Anything
else falls back to the full check in ``warm``: a stamp can only make a run faster, never
serve a capsule the fingerprint would reject.

The stamp is a ``marshal`` dump of plain values, and this module imports only ``os`` and
``marshal`` (builtins) at module level, and the built-in blake2b for the stamp's name: no
json, re, pathlib, typing or blake3, whose imports cost more than the whole check. The signatures are
compared as bytes (one ``marshal.dumps`` of a list of tuples), not hashed.
"""

from __future__ import annotations

import marshal
import os

from gitpilot.fileio import atomic_write, read_kept
from gitpilot.gitenv import REPO_LOCATION_VARS, find_git

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path
    from typing import Any

STAMP_FORMAT = 8  # 8: the code's signature (7: names separated by NUL, as a name may hold a newline)
CODE_OUTSIDE_CONTEXT = ("redact.py", "config.py")
CONFIG_PROBES = (".gitpilot.toml", ".autopilot/config.json")
# git's racy window: a file whose mtime is this close to (or after) the moment its content
# was read may change again without its signature changing.
RACY_NS = 2_000_000_000
# marshal format 2 writes no back-references, so equal signatures always give equal bytes
# (later formats mark an object by its reference count, which differs between processes).
SIGS_MARSHAL = 2
# With a calling hook's repository variables set, the express path steps aside for the full one.
_ENV_BLOCKERS = REPO_LOCATION_VARS


class Hit:
    """A capsule served by its stamp (a plain class: NamedTuple and dataclass cost imports here)."""

    __slots__ = ("task_id", "md_path", "json_path", "body", "stamp")

    def __init__(self, task_id: str, md_path: str, json_path: str, body: bytes, stamp: dict[str, Any]) -> None:
        self.task_id = task_id
        self.md_path = md_path
        self.json_path = json_path
        self.body = body
        self.stamp = stamp


def signature(path: str | os.PathLike[str]) -> list[int]:
    """A file's lstat signature: [] when missing, else [size, mtime_ns, inode, mode]."""
    try:
        st = os.lstat(path)
    except OSError:
        return []
    return [st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode]


def code_files() -> list[str]:
    """The source files that decide what a capsule holds: the context package, redaction, config defaults.

    A capsule built by other code (an upgrade, a reinstall, a development build that kept the
    version number) is never served as if this code had chosen it.
    """
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ctx = os.path.join(pkg, "context")
    try:
        names = sorted(n for n in os.listdir(ctx) if n.endswith(".py"))
    except OSError:
        names = []
    return [os.path.join(ctx, n) for n in names] + [os.path.join(pkg, n) for n in CODE_OUTSIDE_CONTEXT]


def code_signature() -> list[list[int]]:
    """The lstat signatures of ``code_files()``: the express path's cheap test for the same code."""
    return [signature(p) for p in code_files()]


def worktree_and_git_dir(cwd: str) -> tuple[str, str] | None:
    """(worktree root, git dir) without running git; None when unsure, or when the environment
    names another repository or index (then git must say)."""
    if any(k in os.environ for k in _ENV_BLOCKERS):
        return None
    found = find_git(cwd)
    return None if found is None else (found[0], found[1])


def stamp_key(task_text: str, agent: str = "") -> str:
    """The name of a task's stamp: blake2b of the exact task text (and of the agent the capsule
    was asked for by name, whose capsule may differ). The stamp records the task's id (blake3)
    itself, so this path never loads blake3, whose import costs more than the hash."""
    try:
        from _blake2 import blake2b  # built into CPython; hashlib would load OpenSSL first
    except ImportError:  # pragma: no cover - a Python built without it
        from hashlib import blake2b
    data = task_text.encode("utf-8") + (b"\0agent:" + agent.encode("utf-8") if agent else b"")
    return blake2b(data, digest_size=16).hexdigest()


def stamp_path(git_dir: str | os.PathLike[str], key: str) -> str:
    return os.path.join(git_dir, "pilot", f"capsule-{key}.stamp")


def take_sigs(root: str, names: list[str], racy_after: int | None = None) -> tuple[bytes, list[str], bool]:
    """The lstat signatures of ``root/name`` for every name, as the ``marshal`` bytes of one
    list of (size, mtime_ns, inode, mode); the names that are missing; and whether any file
    has an mtime at or after ``racy_after``.

    Bytes rather than a digest: comparing them costs nothing, and no hash module is loaded.
    """
    sigs: list[tuple[int, int, int, int]] = []
    missing: list[str] = []
    racy = False
    prefix = root.rstrip("/") + "/"
    lstat = os.lstat
    for rel in names:
        try:
            st = lstat(prefix + rel)
        except OSError:
            missing.append(rel)
            continue
        if racy_after is not None and st.st_mtime_ns >= racy_after:
            racy = True
        sigs.append((st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode))
    return marshal.dumps(sigs, SIGS_MARSHAL), missing, racy


def _sig_list(names: list[str]) -> list[tuple[int, int, int, int]]:
    """(size, mtime_ns, inode, mode) of every name; OSError when one is missing."""
    return [(st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode) for st in map(os.lstat, names)]


def sigs_hold(root: str, present: list[str], absent: list[str], expected: bytes) -> bool:
    """Whether every ``present`` file still has its recorded signature and no ``absent`` one exists.

    The names are looked up relative to ``root`` as the working directory (restored after):
    the kernel then walks no absolute prefix for each of thousands of files."""
    try:
        here = os.getcwd()
        os.chdir(root)
    except OSError:
        return False
    try:
        return _sigs_hold_here(present, absent, expected)
    finally:
        os.chdir(here)


def _sigs_hold_here(present: list[str], absent: list[str], expected: bytes) -> bool:
    try:
        # (a second thread for half the files was tried: in a fresh process starting it costs
        # more than the overlap saves)
        got = _sig_list(present)
    except OSError:  # a file went missing
        return False
    if marshal.dumps(got, SIGS_MARSHAL) != expected:
        return False
    for rel in absent:
        try:
            os.lstat(rel)
        except OSError:
            continue
        return False
    return True


def _names(value: object) -> list[str] | None:
    if not isinstance(value, str):
        return None
    return value.split("\0") if value else []


def express(cwd: str | os.PathLike[str], task_text: str, agent: str = "") -> Hit | None:
    """The stored capsule for ``task_text`` when its stamp still holds; None otherwise."""
    found = worktree_and_git_dir(os.fspath(cwd))
    if found is None:
        return None
    root, git_dir = found
    stamp = read_kept(stamp_path(git_dir, stamp_key(task_text, agent)))
    from gitpilot import __version__

    tid = stamp.get("task_id") if isinstance(stamp, dict) else None
    if (
        not isinstance(tid, str)
        or len(tid) != 64
        or not tid.isalnum()
        or stamp.get("format") != STAMP_FORMAT
        or stamp.get("version") != __version__
        or stamp.get("code") != code_signature()
        or stamp.get("root") != root
        or stamp.get("index") != signature(os.path.join(git_dir, "index"))
    ):
        return None
    present, absent, sigs = _names(stamp.get("present")), _names(stamp.get("absent")), stamp.get("sigs")
    if present is None or absent is None or not isinstance(sigs, bytes) or not sigs:
        return None
    if not sigs_hold(root, present, absent, sigs):
        return None
    md_path = os.path.join(git_dir, "pilot", f"capsule-{tid}.md")
    try:
        with open(md_path, "rb") as fh:
            body = fh.read()
    except OSError:
        return None
    # the capsule as written, byte for byte: a hand edit of any kind is never served
    if body != stamp.get("capsule"):
        return None
    return Hit(tid, md_path, os.path.join(git_dir, "pilot", f"capsule-{tid}.json"), body, stamp)


def write_stamp(
    git_dir: Path,
    root: Path,
    tid: str,
    *,
    key: str,
    index_sig: list[int],
    capsule: bytes,
    sources: Iterable[str],
    probes: Iterable[str],
    started_ns: int,
    baseline_bytes: int,
) -> None:
    """Record what the express path compares (after a full build or a full re-verification).

    A file whose mtime is not safely before ``started_ns`` (when the full check began reading)
    leaves the stamp without signatures, which the express path never accepts.
    """
    from gitpilot import __version__

    names = sorted(set(sources) | set(probes) | set(CONFIG_PROBES))
    real_root = os.path.realpath(root)
    sigs, missing, racy = take_sigs(real_root, names, racy_after=started_ns - RACY_NS)
    gone = set(missing)
    # git replaces the index through a lock file and a rename, never in place: any rewrite
    # gives it a new inode, so its signature needs no racy window.
    index = list(index_sig)
    body = {
        "format": STAMP_FORMAT,
        "version": __version__,
        "code": code_signature(),
        "task_id": tid,
        "root": real_root,
        "index": index,
        "capsule": bytes(capsule),
        # NUL-separated: a path never holds one, but may hold a newline (a symlink's target
        # written with one, as real repositories have), which would split into two names here
        "present": "\0".join(n for n in names if n not in gone),
        "absent": "\0".join(missing),
        # a file changed in the racy window: no signatures, so the next run checks in full
        "sigs": b"" if racy else sigs,
        "baseline_bytes": baseline_bytes,  # for the reuse line: the capsule's own size is len(capsule)
    }
    path = stamp_path(git_dir, key)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    atomic_write(path, marshal.dumps(body))  # a cache (the full check rebuilds it): not synced
