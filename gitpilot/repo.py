"""The Repo facade: the one module that imports pygit2.

Paths come from one ``git rev-parse`` call, and everything on a hot path (tree ids, blob
reads, ref updates) uses stock git, so a cache hit never pays pygit2's import (60-90 ms).
pygit2 is imported lazily for object-level work: building trees and commits, diffs.
"Not found" is ``None``; library errors become ``PilotError``.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from gitpilot.errors import PilotError, RecordLost, StaleLock
from gitpilot.gitrun import clean_env, first_line, run_git, start_git

_LISTING = "ls-files-s-z/1"  # the kept index listing's format (``Repo.index_listing``)

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and pygit2 cost import time on hot paths
    from typing import Any

    import pygit2

ZERO_OID = "0" * 40
# git holds a ref's lock for milliseconds; one this old was left by a git that was killed.
STALE_LOCK_SECONDS = 5.0
CAS_ATTEMPTS = 200
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
# The local branches taken for the default one, in this order, when origin/HEAD names none.
DEFAULT_BRANCHES = ("main", "master")
_DELTA_NAMES = {"A": "added", "D": "deleted", "M": "modified", "R": "renamed", "C": "copied",
                "T": "typechange"}


class TreeEntry:
    """One entry of a git tree: name (bytes, as git stores it), mode, object id."""

    __slots__ = ("name", "mode", "oid")

    def __init__(self, name: bytes, mode: int, oid: str) -> None:
        self.name = name
        self.mode = mode
        self.oid = oid

    @property
    def is_tree(self) -> bool:
        return self.mode == 0o040000

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TreeEntry) and (self.name, self.mode, self.oid) == (other.name, other.mode, other.oid)

    def __hash__(self) -> int:
        return hash((self.name, self.mode, self.oid))

    def __repr__(self) -> str:
        return f"TreeEntry({self.name!r}, {self.mode:o}, {self.oid})"


if TYPE_CHECKING:
    from typing import NamedTuple

    class IndexEntry(NamedTuple):
        path: str
        mode: str
        oid: str
        stage: str
else:  # a namedtuple costs less to import than typing, and less per entry than a class
    from collections import namedtuple

    IndexEntry = namedtuple("IndexEntry", "path mode oid stage")
    IndexEntry.__doc__ = """One entry of the index: path (exact; bytes that are not UTF-8 as surrogate
    escapes), mode and object id as git prints them (``100644``, hex), stage (``0``, or ``1``-``3``
    in a conflict)."""


class FileChange:
    """One changed file of a tree diff (renames detected). ``lines``: (``+``/``-``, line number,
    text) of changed lines, bounded in bytes per file; ``added``/``deleted`` always count all."""

    __slots__ = ("old_path", "new_path", "status", "added", "deleted", "binary", "lines")

    def __init__(self, old_path: str | None, new_path: str | None, status: str, added: int, deleted: int,
                 binary: bool, lines: tuple[tuple[str, int, str], ...] = ()) -> None:
        self.old_path = old_path  # None: added
        self.new_path = new_path  # None: deleted
        self.status = status  # added, deleted, modified, renamed, copied, typechange
        self.added = added
        self.deleted = deleted
        self.binary = binary
        self.lines = lines

    def __repr__(self) -> str:
        return f"FileChange({self.status} {self.old_path!r} -> {self.new_path!r} +{self.added} -{self.deleted})"


def _pathspecs(globs: Sequence[str]) -> list[str]:
    return [f":(exclude,glob){g[1:]}" if g.startswith("!") else f":(glob){g}" for g in globs]


def tree_id_of_entries(entries: bytes) -> str:
    """The id git gives the tree of these index entries (``git ls-files -s -z`` output), worked
    out without writing anything.

    One pass: the index lists paths in git's tree order (a path compares as its directories
    joined by ``/``), so each directory's entries arrive together and in order; a directory's
    tree is hashed when the listing leaves it.
    """
    from binascii import unhexlify

    try:  # the bare sha1 module: hashlib (and OpenSSL) cost ~10 ms of import on the cache-hit path
        from _sha1 import sha1  # type: ignore[import-not-found]
    except ImportError:
        from hashlib import sha1

    stack: list[tuple[bytes, list[bytes]]] = [(b"", [])]  # open directories: (path, entries so far)

    def close() -> None:
        path, items = stack.pop()
        body = b"".join(items)
        digest: bytes = sha1(b"tree %d\0" % len(body) + body).digest()
        stack[-1][1].append(b"40000 " + path.rpartition(b"/")[2] + b"\0" + digest)

    for rec in entries.split(b"\0"):
        if not rec:
            continue
        meta, _, path = rec.partition(b"\t")
        mode, oid, _stage = meta.split(b" ")
        parent, _, name = path.rpartition(b"/")
        while stack[-1][0] and parent != stack[-1][0] and not parent.startswith(stack[-1][0] + b"/"):
            close()
        here = stack[-1][0]
        if parent != here:
            rest = parent[len(here) + 1:] if here else parent
            for part in rest.split(b"/"):
                here = here + b"/" + part if here else part
                stack.append((here, []))
        stack[-1][1].append(mode + b" " + name + b"\0" + unhexlify(oid))
    if len(stack) == 1 and not stack[0][1]:
        return EMPTY_TREE
    while len(stack) > 1:
        close()
    body = b"".join(stack[0][1])
    tree_id: bytes = sha1(b"tree %d\0" % len(body) + body).digest()
    return tree_id.hex()


def _unsupported(stderr: str) -> str | None:
    low = stderr.lower()
    if "unknown repository extension" in low or "unknown repository extensions" in low:
        names = [ln.strip() for ln in stderr.splitlines()[1:] if ln.strip()]
        ext = ", ".join(names) or "unknown"
        return f"this repository uses the git extension {ext}, which git pilot cannot open"
    return None


class Repo:
    """A git repository (and the worktree we run in)."""

    def __init__(self, root: Path | None, git_dir: Path, common_dir: Path) -> None:
        self.root = root
        self.git_dir = git_dir
        self.common_dir = common_dir
        self._pg: pygit2.Repository | None = None
        self.last_index_listing = b""  # what the last ``index_entries`` read (``index_listing``)

    # -- discovery -----------------------------------------------------------------
    @classmethod
    def discover(cls, path: str | Path = ".") -> Repo:
        path = Path(path)
        if not path.exists():
            raise PilotError(f"no such directory: {path}")
        proc = run_git(
            ["rev-parse", "--absolute-git-dir", "--git-common-dir", "--show-object-format",
             "--is-bare-repository", "--show-toplevel"],
            path,
            check=False,
        )
        lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
        if proc.returncode != 0 and len(lines) < 4:
            err = proc.stderr.decode("utf-8", "replace")
            msg = _unsupported(err)
            if msg:
                raise PilotError(msg)
            raise PilotError(f"not a git repository: {path.resolve()}")
        git_dir = Path(lines[0])
        common = Path(lines[1])
        if not common.is_absolute():
            common = (path / common).resolve()
        if lines[2].strip() != "sha1":
            raise PilotError(
                f"this repository uses the git extension objectFormat={lines[2].strip()}, "
                "which git pilot cannot open (only sha1 repositories are supported)"
            )
        # In a bare repository (or inside .git) --show-toplevel fails after the other answers.
        root = Path(lines[4]) if proc.returncode == 0 and len(lines) > 4 and lines[4] else None
        return cls(root, git_dir, common)

    # -- places --------------------------------------------------------------------
    @property
    def pilot_dir(self) -> Path:
        """Machine-local data shared by all worktrees: ``<git common dir>/pilot``."""
        return self.common_dir / "pilot"

    @property
    def worktree_pilot_dir(self) -> Path:
        """Files an agent in this worktree reads: ``<git dir>/pilot``."""
        return self.git_dir / "pilot"

    @property
    def workdir(self) -> Path:
        if self.root is None:
            raise PilotError("this command needs a working tree (the repository is bare)")
        return self.root

    # -- stock git -----------------------------------------------------------------
    def git(
        self,
        *args: str,
        input: bytes | None = None,
        env: dict[str, str] | None = None,
        check: bool = True,
    ) -> bytes:
        cwd = self.root if self.root is not None else self.git_dir
        return run_git(list(args), cwd, input=input, env=env, check=check).stdout

    def git_proc(
        self, *args: str, input: bytes | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        cwd = self.root if self.root is not None else self.git_dir
        return run_git(list(args), cwd, input=input, env=env, check=False)

    def rev_parse(self, rev: str) -> str | None:
        proc = self.git_proc("rev-parse", "--verify", "--quiet", "--end-of-options", rev)
        out = proc.stdout.decode().strip()
        return out if proc.returncode == 0 and out else None

    def head(self) -> str | None:
        return self.rev_parse("HEAD^{commit}")

    def current_branch(self) -> str | None:
        proc = self.git_proc("symbolic-ref", "--quiet", "--short", "HEAD")
        out = proc.stdout.decode("utf-8", "surrogateescape").strip()
        return out if proc.returncode == 0 and out else None

    def default_branch(self) -> str | None:
        """The branch a change is compared with when none is configured, as a revision: the one
        ``origin/HEAD`` names (``origin/main``), else the first of ``DEFAULT_BRANCHES`` that exists
        here; None when there is none. One git call (an origin/HEAD whose branch is gone is
        skipped by git)."""
        out = self.git_proc(
            "for-each-ref", "--format=%(refname)%00%(symref)", "refs/remotes/origin/HEAD",
            *(f"refs/heads/{name}" for name in DEFAULT_BRANCHES),
        ).stdout.decode("utf-8", "surrogateescape")
        found = dict(line.split("\0", 1) for line in out.splitlines() if "\0" in line)
        target = found.get("refs/remotes/origin/HEAD", "")
        if target:
            return target.removeprefix("refs/remotes/")
        return next((name for name in DEFAULT_BRANCHES if f"refs/heads/{name}" in found), None)

    def config_get(self, key: str) -> str | None:
        proc = self.git_proc("config", "--get", key)
        return proc.stdout.decode("utf-8", "surrogateescape").rstrip("\n") if proc.returncode == 0 else None

    def ls_files(self, *pathspec: str) -> list[str]:
        out = self.git("ls-files", "-z", "--", *pathspec)
        return [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]

    def index_entries(self) -> list[IndexEntry]:
        """Every entry of the index (``git ls-files -s``), in git's order, conflict stages and
        submodules included. Paths are exact: bytes that are not UTF-8 stay surrogate escapes."""
        # Decoded whole, once: the fields are ASCII and a path's bytes never run into the tab or
        # NUL around it, so each path comes out as its own surrogateescape decoding would.
        raw = self.index_listing()
        self.last_index_listing = raw  # (the listing these entries come from: ``warm._tracked_digest``)
        out = raw.decode("utf-8", "surrogateescape")
        entries: list[IndexEntry] = []
        add, make = entries.append, IndexEntry._make
        for rec in out.split("\0"):
            if rec:
                meta, _, path = rec.partition("\t")
                mode, oid, stage = meta.split(" ")
                add(make((path, mode, oid, stage)))
        return entries

    def index_listing(self) -> bytes:
        """``git ls-files -s -z``: what git lists depends on the index file alone, so it is kept
        on this machine beside the index file's signature (``<git dir>/pilot/index-listing``:
        size, mtime, inode, mode; git replaces the index through a lock file and a rename, never
        in place, so a rewrite gives it a new inode, as the capsule's stamp relies on too). The
        signature is taken before git reads the index: a change while it lists leaves a listing
        that is never used. Best effort; a record that does not load is not used."""
        from gitpilot.fileio import keep, read_kept

        index = self.git_dir / "index"
        try:
            st = os.lstat(index)
            sig = [st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode]
        except OSError:
            sig = []
        kept = self.git_dir / "pilot" / "index-listing"
        if sig:
            got = read_kept(kept)
            if isinstance(got, tuple) and len(got) == 3 and got[0] == _LISTING and got[1] == sig \
                    and isinstance(got[2], bytes):
                return got[2]
        out = self.git("ls-files", "-s", "-z")
        if sig:
            keep(kept, (_LISTING, sig, out))
        return out

    def worktree_changed(self, paths: Sequence[str]) -> set[str]:
        """Which of the tracked ``paths`` differ from the index (``git diff-files``, literal paths).

        git opens exactly the files named here (to re-check those whose stat data it cannot
        trust), so a caller names only files it may read.
        """
        changed: set[str] = set()
        for i in range(0, len(paths), 2000):
            out = self.git("--literal-pathspecs", "diff-files", "--name-only", "-z", "--", *paths[i:i + 2000])
            changed.update(p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p)
        return changed

    def ignored(self, paths: Iterable[str]) -> set[str]:
        """Which of the untracked ``paths`` git ignores (``git check-ignore``; no file is opened)."""
        names = b"".join(os.fsencode(p) + b"\0" for p in paths)
        if not names:
            return set()
        out = self.git_proc("check-ignore", "-z", "--stdin", input=names).stdout
        return {p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p}

    def ignored_files(self, pathspecs: Sequence[str]) -> list[str]:
        """The ignored untracked files that match ``pathspecs``, sorted (names only: git reads no contents)."""
        return self.ignored_files_later(pathspecs)()

    def ignored_files_later(self, pathspecs: Sequence[str]) -> Callable[[], list[str]]:
        """``ignored_files``, started now: git walks the tree while the caller works on, and the
        call returned waits for it."""
        cwd = self.root if self.root is not None else self.git_dir
        args = ["git", "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--", *pathspecs]
        proc = subprocess.Popen(args, cwd=cwd, env=clean_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)

        def result() -> list[str]:
            out, _ = proc.communicate()
            return sorted(p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p)

        return result

    def attributes(self, paths: Sequence[str], names: Sequence[str]) -> list[tuple[str, str, str]]:
        """(path, attribute, value) for each of ``paths`` and attribute ``names`` (``git check-attr``);
        value is ``set``, ``unset``, ``unspecified`` or the attribute's text."""
        if not paths:
            return []
        data = b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)
        fields = self.git_proc("check-attr", "-z", "--stdin", *names, input=data).stdout.split(b"\0")
        return [(fields[i].decode("utf-8", "surrogateescape"), fields[i + 1].decode("utf-8", "surrogateescape"),
                 fields[i + 2].decode("utf-8", "surrogateescape")) for i in range(0, len(fields) - 2, 3)]

    def recent_changes(self, commits: int) -> list[str] | None:
        """The paths each of the last ``commits`` commits of HEAD changed, one item per change
        (renames not followed); None when HEAD has no history."""
        proc = self.git_proc("-c", "core.quotepath=off", "log", f"-n{commits}", "--no-renames", "--format=",
                             "--name-only", "-z", "HEAD", "--")
        if proc.returncode != 0:
            return None
        return [p for p in proc.stdout.decode("utf-8", "surrogateescape").replace("\n", "\0").split("\0") if p]

    def read_blob(self, oid: str) -> bytes | None:
        proc = self.git_proc("cat-file", "blob", oid)
        return proc.stdout if proc.returncode == 0 else None

    def cat_file_batch(self, specs: Sequence[str]) -> list[bytes | None]:
        """Contents of each object named by ``specs`` (``rev:path`` forms allowed); None if missing."""
        if not specs:
            return []
        data = "".join(f"{s}\n" for s in specs).encode("utf-8", "surrogateescape")
        out = self.git("cat-file", "--batch", input=data)
        results: list[bytes | None] = []
        pos = 0
        for _ in specs:
            nl = out.index(b"\n", pos)
            header = out[pos:nl].split(b" ")
            pos = nl + 1
            if len(header) == 3 and header[1] in (b"blob", b"tree", b"commit", b"tag"):
                size = int(header[2])
                results.append(out[pos : pos + size])
                pos += size + 1
            else:
                results.append(None)
        return results

    def update_ref(self, ref: str, new: str, old: str | None, message: str) -> bool:
        """Compare-and-swap ``ref`` from ``old`` (None: must not exist) to ``new``; False if it lost."""
        proc = self.git_proc("update-ref", "-m", message, ref, new, old or ZERO_OID)
        return proc.returncode == 0

    def update_ref_retrying(self, ref: str, build: Callable[[str | None], str | None], message: str,
                            *, absent: bool = False) -> str | None:
        """Move ``ref`` to ``build(old)`` by compare-and-swap, building again whenever another writer won.

        ``build`` gets the ref's value (None: no ref yet) and returns the new one, or None to leave
        the ref as it is. A writer that lost the race re-reads the ref and calls ``build`` again
        (after a jittered backoff), so no concurrent update is lost. Returns the value the ref
        holds now. A lock left by a killed git raises ``StaleLock`` at once (nothing could win);
        ``CAS_ATTEMPTS`` lost races raise ``RecordLost``. ``absent``: the caller has just seen that
        ``ref`` does not exist, so the first attempt does not read it again (were it wrong, that
        attempt only loses its compare-and-swap).
        """
        for attempt in range(CAS_ATTEMPTS):
            old = None if absent and attempt == 0 else self.rev_parse(ref)
            new = build(old)
            if new is None:
                return old
            if self.update_ref(ref, new, old, message):
                return new
            stale = self.stale_ref_lock(ref)
            if stale is not None:
                lock, age = stale
                raise StaleLock(f"{ref} is locked by {lock}, {age:.0f} s old: a git process that was "
                                f"killed leaves one behind; if no git is running here, remove it (rm '{lock}')")
            import random  # (a lost race only: not imported by every command)

            time.sleep(min(0.2, 0.002 * (attempt + 1)) * (0.5 + random.random()))
        raise RecordLost(f"could not update {ref}: too many concurrent writers, try again")

    def stale_ref_lock(self, ref: str, min_age: float = STALE_LOCK_SECONDS) -> tuple[Path, float] | None:
        """The lock file that keeps ``ref`` from being updated, with its age, when it is older than ``min_age``."""
        now = time.time()
        for lock in (self.common_dir / f"{ref}.lock", self.common_dir / "packed-refs.lock"):
            try:
                age = now - lock.stat().st_mtime
            except OSError:
                continue
            if age >= min_age:
                return lock, age
        return None

    def worktree_tree_id(self) -> str:
        """Tree id of tracked plus untracked-not-ignored files as the working tree holds them.

        Built in a copy of the index, so the user's index (and its lock) is never touched.
        """
        return self.worktree_tree_ids(())[0]

    def worktree_tree_ids(self, scopes: Sequence[Sequence[str]],
                          known: Callable[[str], Sequence[str | None]] | None = None) -> tuple[str, list[str]]:
        """The worktree's tree id (as ``worktree_tree_id``) and, per scope (a list of globs, a
        leading ``!`` excludes), the tree id of its matching files only.

        ``known(tree)`` may give scoped ids already worked out for that tree (None where not):
        a scoped id is a pure function of the tree and the globs, so a memo is never stale.
        """
        with self._private_index() as (tmp, env):
            index = str(self.git_dir / "index")
            add = run_git(["add", "-A", "--", "."], self.workdir, env=env, check=False)
            if add.returncode != 0:
                # git names our private copy; the user knows (and must repair) their own index.
                why = first_line(add.stderr).replace(tmp, index)
                raise PilotError(f"cannot read the working tree: {why}")
            full = run_git(["write-tree"], self.workdir, env=env).stdout.decode().strip()
            have = list(known(full)) if known is not None and scopes else [None] * len(scopes)
            return full, [h or self._matching_tree(env, scope) for h, scope in zip(have, scopes, strict=True)]

    def worktree_scoped_ids(self, scopes: Sequence[Sequence[str]]) -> list[str] | None:
        """Per scope, the tree id ``worktree_tree_ids`` gives it, worked out without the whole
        tree: ``git add -A`` limited to the scopes' globs, in a private index, then the entries
        that match each scope. git looks at the matching files only (a few thousand lstats
        instead of every file's, and no untracked scan outside them), and nothing is written
        when none of them changed.

        It is the same id: every path a scope matches is matched by the positive globs given to
        ``git add``, which updates, adds and removes exactly those entries as ``git add -A .``
        would; entries outside them keep the user's index's state and no scope lists them.
        None when git refuses those pathspecs (a glob that matches no file, a path beyond a
        symbolic link or inside a submodule, an ignored path named, sparse entries): the caller
        then works out the whole tree, which has no such refusals.
        """
        if not scopes or not all(any(not g.startswith("!") for g in scope) for scope in scopes):
            return None  # a scope of exclusions only matches everything else: the whole tree's work
        positive = sorted({g for scope in scopes for g in scope if not g.startswith("!")})
        with self._private_index() as (_tmp, env):
            add = run_git(["add", "-A", "--", *_pathspecs(positive)], self.workdir, env=env, check=False)
            if add.returncode != 0:
                return None
            return [self._matching_tree(env, scope) for scope in scopes]

    def tree_ids_of(self, tree: str, scopes: Sequence[Sequence[str]], write: bool = False) -> list[str]:
        """Per scope, the tree id of the files of ``tree`` that match it (as ``worktree_tree_ids``);
        with ``write`` the trees are also written to the object database (``git ls-tree`` shows them)."""
        if not scopes:
            return []
        with self._private_index(start_empty=True) as (_tmp, env):
            self.git("read-tree", tree, env=env)
            if not write:
                return [self._matching_tree(env, scope) for scope in scopes]
            out = []
            for scope in scopes:
                entries = self.git("ls-files", "-s", "-z", "--", *_pathspecs(scope), env=env)
                if not entries:
                    out.append(EMPTY_TREE)
                    continue
                with self._private_index(start_empty=True) as (_t, sub):
                    self.git("update-index", "-z", "--index-info", input=entries, env=sub)
                    out.append(self.git("write-tree", env=sub).decode().strip())
            return out

    def _matching_tree(self, env: dict[str, str], globs: Sequence[str]) -> str:
        """The id of the tree of the entries of the index in ``env`` that match ``globs``.

        git matches (``ls-files`` with ``:(glob)`` pathspecs); the tree objects are hashed here,
        not written, which spares two git processes on the cache-hit path. ``tree_ids_of(...,
        write=True)`` writes them when a result is recorded.
        """
        return tree_id_of_entries(self.git("ls-files", "-s", "-z", "--", *_pathspecs(globs), env=env))

    @contextmanager
    def _private_index(self, start_empty: bool = False) -> Iterator[tuple[str, dict[str, str]]]:
        """A private index file (and the env naming it), removed afterwards; a link to the
        user's index unless ``start_empty``."""
        tmpdir = self.git_dir / "pilot" / "tmp"
        tmpdir.mkdir(parents=True, exist_ok=True)
        _drop_stale_indexes(tmpdir)
        # A private name per process: concurrent checks in one worktree never share it.
        tmp = str(tmpdir / f"index-{os.getpid()}-{time.monotonic_ns()}")
        try:
            if not start_empty:
                index = self.git_dir / "index"
                # git replaces an index through "<file>.lock" and a rename, never in place, so a
                # hard link starts us from the user's index (and its stat cache) without copying
                # it, and the user's file is never written.
                try:
                    os.link(index, tmp)
                except FileNotFoundError:
                    pass  # no index yet: start empty
                except OSError:
                    import shutil  # (shutil imports the archive modules: only here)

                    shutil.copy2(index, tmp)  # keep the mtime: git judges racy entries by it
            yield tmp, {"GIT_INDEX_FILE": tmp}
        finally:
            for leftover in (tmp, tmp + ".lock"):
                try:
                    os.unlink(leftover)
                except FileNotFoundError:
                    pass

    # -- pygit2: object-level work -------------------------------------------------
    def pygit2_repo(self) -> pygit2.Repository:
        if self._pg is None:
            import pygit2

            try:
                self._pg = pygit2.Repository(str(self.git_dir))
            except pygit2.GitError as exc:
                raise PilotError(self._open_error(str(exc))) from exc
        return self._pg

    def _open_error(self, message: str) -> str:
        if self.config_get("core.splitindex") == "true":
            return "this repository uses the split index (core.splitIndex), which git pilot cannot open"
        ext = self.git_proc("config", "--get-regexp", r"^extensions\.").stdout.decode().strip()
        if ext:
            return f"this repository uses the git extension {ext.splitlines()[0]}, which git pilot cannot open"
        return f"cannot open the repository: {message}"

    def tree_entries(self, tree_oid: str) -> list[TreeEntry]:
        import pygit2

        pg = self.pygit2_repo()
        try:
            tree = pg[tree_oid]
        except (KeyError, ValueError):
            return []
        if not isinstance(tree, pygit2.Tree):
            return []
        return [TreeEntry(_raw_name(e), int(e.filemode), str(e.id)) for e in tree]

    def write_tree(self, entries: Iterable[TreeEntry]) -> str:
        """Write a tree from entries (names unique); git sorts them."""
        import pygit2

        pg = self.pygit2_repo()
        tb = pg.TreeBuilder()
        for e in entries:
            tb.insert(e.name.decode("utf-8", "surrogateescape"), pygit2.Oid(hex=e.oid), e.mode)
        return str(tb.write())

    def commit_tree(self, tree: str, parents: Sequence[str], message: str) -> str:
        import pygit2

        pg = self.pygit2_repo()
        sig = self._signature()
        oid = pg.create_commit(
            None, sig, sig, message, pygit2.Oid(hex=tree), [pygit2.Oid(hex=p) for p in parents]
        )
        return str(oid)

    def blob_data(self, oid: str) -> bytes | None:
        """A blob's bytes through pygit2 (for loops that would otherwise spawn git per blob)."""
        import pygit2

        try:
            obj = self.pygit2_repo()[oid]
        except (KeyError, ValueError):
            return None
        return bytes(obj.data) if isinstance(obj, pygit2.Blob) else None

    def create_blob(self, data: bytes) -> str:
        return str(self.pygit2_repo().create_blob(data))

    def diff_stats(self, old_tree: str | None, new_tree: str, max_line_bytes: int = 1 << 18,
                   max_total_bytes: int = 1 << 24,
                   lines_for: Callable[[str], bool] | None = None) -> list[FileChange]:
        """The changes from ``old_tree`` (None: the empty tree) to ``new_tree``, renames detected.

        Changed-line texts are kept per file up to ``max_line_bytes``, in all up to
        ``max_total_bytes``, and only for paths ``lines_for`` accepts; the counts are always complete.
        """
        import pygit2

        try:
            return self._diff_stats(old_tree, new_tree, max_line_bytes, max_total_bytes, lines_for)
        except pygit2.GitError as exc:  # libgit2 reads more than the trees (the index: split index)
            raise PilotError(self._open_error(str(exc))) from exc

    def _diff_stats(self, old_tree: str | None, new_tree: str, max_line_bytes: int, max_total_bytes: int,
                    lines_for: Callable[[str], bool] | None) -> list[FileChange]:
        import pygit2

        pg = self.pygit2_repo()
        try:
            new = pg[new_tree].peel(pygit2.Tree)
            old = pg[old_tree].peel(pygit2.Tree) if old_tree is not None else None
        except (KeyError, ValueError, pygit2.GitError) as exc:
            raise PilotError(f"cannot diff {old_tree or 'the empty tree'} against {new_tree}: {exc}") from exc
        if old is not None:
            diff = old.diff_to_tree(new, context_lines=0)
        else:
            diff = new.diff_to_tree(context_lines=0, swap=True)
        diff.find_similar(flags=pygit2.enums.DiffFind.FIND_RENAMES)
        changes = []
        total = max_total_bytes
        for patch in diff:
            if patch is None:
                continue
            delta = patch.delta
            kind = _DELTA_NAMES.get(delta.status_char(), "modified")
            _, added, deleted = patch.line_stats
            lines: list[tuple[str, int, str]] = []
            budget = min(max_line_bytes, total)
            wanted = not delta.is_binary and budget > 0 and (
                lines_for is None or lines_for(_raw_path(delta.new_file if kind != "deleted" else delta.old_file)))
            for hunk in patch.hunks if wanted else ():
                for ln in hunk.lines:
                    if ln.origin not in ("+", "-") or budget <= 0:
                        continue
                    raw = bytes(ln.raw_content)
                    budget -= len(raw)
                    number = ln.new_lineno if ln.origin == "+" else ln.old_lineno
                    lines.append((ln.origin, int(number), raw.decode("utf-8", "replace").rstrip("\r\n")))
            total -= sum(len(t) for _, _, t in lines)
            changes.append(FileChange(
                None if kind == "added" else _raw_path(delta.old_file),
                None if kind == "deleted" else _raw_path(delta.new_file),
                kind, int(added), int(deleted), bool(delta.is_binary), tuple(lines)))
        return changes

    def commit_files(self, files: Sequence[tuple[str, bytes]], parents: Sequence[str], message: str) -> str:
        """A commit of a flat tree holding ``files`` (name, bytes; names unique), written with
        stock git alone: ``hash-object -w`` for the blobs (run side by side), ``mktree``,
        ``commit-tree``. The same commit ``create_blob``/``write_tree``/``commit_tree`` make, the
        same identity and date, without importing pygit2 (60-90 ms) for a handful of objects."""
        cwd = self.root if self.root is not None else self.git_dir
        who = start_git(["config", "-z", "--get-regexp", r"^user\.(name|email)$"], cwd)  # meanwhile
        procs = [
            subprocess.Popen(["git", "hash-object", "-w", "--no-filters", "--stdin"], cwd=cwd, env=clean_env(),
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for _ in files
        ]
        oids = []
        try:
            for proc, (_name, data) in zip(procs, files, strict=True):
                out, err = proc.communicate(data)
                if proc.returncode != 0:
                    raise PilotError(f"git hash-object failed: {first_line(err) or f'exit {proc.returncode}'}")
                oids.append(out.decode("ascii").strip())
            identity = who.communicate()[0]
        finally:
            # interrupted or failed part-way: the copies still waiting for their input are ended,
            # not left behind blocked on a pipe nobody writes to
            for proc in (*procs, who):
                if proc.returncode is None:
                    proc.kill()
                    proc.wait()
        listing = b"".join(b"100644 blob %s\t%s\0" % (oid.encode("ascii"), name.encode("utf-8", "surrogateescape"))
                           for (name, _), oid in zip(files, oids, strict=True))
        tree = self.git("mktree", "-z", input=listing).decode("ascii").strip()
        name, email = _identity(identity)
        when = self._commit_date()
        env = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": when,
               "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email, "GIT_COMMITTER_DATE": when}
        args = ["commit-tree", tree]
        for parent in parents:
            args += ["-p", parent]
        return self.git(*args, input=message.encode("utf-8"), env=env).decode("ascii").strip()

    @staticmethod
    def _commit_date() -> str:
        """``GIT_COMMITTER_DATE`` as ``_signature`` reads it ("@<epoch> <tz>", "<epoch> <tz>"),
        else now in the local time zone, as ``epoch +hhmm``."""
        when = os.environ.get("GIT_COMMITTER_DATE")
        if when:
            parts = when.lstrip("@").split()
            try:
                offset = _tz_minutes(parts[1]) if len(parts) > 1 else 0
                return f"{int(parts[0])} {_tz_text(offset)}"
            except ValueError:
                pass
        now = time.time()
        return f"{int(now)} {_tz_text((time.localtime(now).tm_gmtoff or 0) // 60)}"

    def commit_tree_of(self, commit: str) -> str | None:
        """The tree of ``commit``; None when it is missing or not a commit (a ref set to a tree or blob)."""
        return self.rev_parse(f"{commit}^{{commit}}^{{tree}}")

    def _signature(self) -> Any:
        import pygit2

        name = self.config_get("user.name") or "git pilot"
        email = self.config_get("user.email") or "git-pilot@localhost"
        when = os.environ.get("GIT_COMMITTER_DATE")
        if when:
            # Tests pin dates through git's own variable; honour "@<epoch> <tz>" and "<epoch> <tz>".
            parts = when.lstrip("@").split()
            try:
                offset = _tz_minutes(parts[1]) if len(parts) > 1 else 0
                return pygit2.Signature(name, email, int(parts[0]), offset)
            except ValueError:
                pass
        return pygit2.Signature(name, email)


def _identity(listing: bytes) -> tuple[str, str]:
    """``user.name`` and ``user.email`` as ``Repo._signature`` takes them, from the listing of
    ``git config -z --get-regexp`` (one git call for both)."""
    found: dict[str, str] = {}
    for rec in listing.decode("utf-8", "surrogateescape").split("\0"):
        key, _, value = rec.partition("\n")
        if key:
            found[key.lower()] = value  # the last value wins, as with ``git config --get``
    return found.get("user.name") or "git pilot", found.get("user.email") or "git-pilot@localhost"


def _drop_stale_indexes(tmpdir: Path) -> None:
    """Remove the private index copies (and their locks) of processes that were killed mid-way.

    Judged by the pid in the name, not by the mtime: a hard link shares the user's index
    inode, whose mtime says nothing about when the copy was made.
    """
    try:
        names = os.listdir(tmpdir)
    except OSError:
        return
    for name in names:
        pid = name.split("-", 2)[1] if name.startswith("index-") and name.count("-") >= 2 else ""
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        from gitpilot.procs import alive  # only when there is something to judge

        if not alive(int(pid)):
            try:
                os.unlink(tmpdir / name)
            except OSError:
                pass


def _tz_minutes(tz: str) -> int:
    sign = -1 if tz.startswith("-") else 1
    tz = tz.lstrip("+-")
    return sign * (int(tz[:2]) * 60 + int(tz[2:4]))


def _tz_text(minutes: int) -> str:
    sign = "-" if minutes < 0 else "+"
    return f"{sign}{abs(minutes) // 60:02d}{abs(minutes) % 60:02d}"


def _raw_path(diff_file: Any) -> str:
    raw = getattr(diff_file, "raw_path", None)
    if isinstance(raw, bytes):
        return raw.decode("utf-8", "surrogateescape")
    return str(diff_file.path)


def _raw_name(entry: Any) -> bytes:
    raw = getattr(entry, "raw_name", None)
    if isinstance(raw, bytes):
        return raw
    return str(entry.name).encode("utf-8", "surrogateescape")
