"""The express path of a warm ``git pilot capsule``: a stamp check with the standard library only.

When a capsule is built (or fully re-verified), a stamp is written beside it: the context
fingerprint, the index file's stat signature, the dirty context files with their blob ids,
the stat signatures of the files that live outside the index (config, untracked instruction
and memory files, ``.claude/rules`` directories) and the capsule's hash. A later run with the
same task accepts the capsule when the index file is the same file unchanged (so ``git ls-files
-s``, the roles and the blob ids are the same), ``git diff-files`` names the same dirty context
files with the same blob ids, every probed file has the same stat signature, and the capsule
on disk still has its hash. Anything else falls back to the full check in ``warm``: a stamp can
only make a run faster, never serve a capsule the fingerprint would reject.

Imports: os and json (blake3 for the task id and the capsule's hash, hashlib only for a dirty file); no pygit2, no markdown-it,
no config or redaction module.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Iterable, Mapping

STAMP_FORMAT = 1
CONFIG_PROBES = (".gitpilot.toml", ".autopilot/config.json")
# Variables that point git at another repository, index or object store (a calling hook's):
# with any of them set the express path steps aside for the full one.
_ENV_BLOCKERS = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_PREFIX",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_QUARANTINE_PATH",
)


class Hit:
    """A capsule served by its stamp (a plain class: NamedTuple and dataclass cost imports here)."""

    __slots__ = ("task_id", "md_path", "json_path", "body", "stamp")

    def __init__(
        self, task_id: str, md_path: Path, json_path: Path, body: bytes, stamp: dict[str, Any]
    ) -> None:
        self.task_id = task_id
        self.md_path = md_path
        self.json_path = json_path
        self.body = body
        self.stamp = stamp


def signature(path: Path) -> list[int]:
    """A file's lstat signature: [] when missing, else [size, mtime_ns, inode, mode]."""
    try:
        st = os.lstat(path)
    except OSError:
        return []
    return [st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode]


def find_repo(cwd: Path) -> tuple[Path, Path] | None:
    """(worktree root, git dir) found by walking up from ``cwd``; None when unsure (use git)."""
    if any(k in os.environ for k in _ENV_BLOCKERS):
        return None
    cur = cwd.resolve()
    for folder in (cur, *cur.parents):
        dot = folder / ".git"
        if dot.is_dir():
            return (folder, dot) if (dot / "HEAD").is_file() else None
        if dot.is_file():
            try:
                text = dot.read_text("utf-8").strip()
            except (OSError, UnicodeDecodeError):
                return None
            if not text.startswith("gitdir:"):
                return None
            gd = Path(text[7:].strip())
            gd = gd if gd.is_absolute() else (folder / gd).resolve()
            return (folder, gd) if (gd / "HEAD").is_file() else None
    return None


def task_id(task_text: str) -> str:
    import blake3

    return blake3.blake3(task_text.encode("utf-8")).hexdigest()


def stamp_path(git_dir: Path, tid: str) -> Path:
    return git_dir / "pilot" / f"capsule-{tid}.stamp"


def git_blob_id(data: bytes) -> str:
    import hashlib  # only when a context file is dirty: OpenSSL's start-up is not free

    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def content_hash(data: bytes) -> str:
    """The stamp's hash of the capsule file (blake3: already loaded for the task id)."""
    import blake3

    return blake3.blake3(data).hexdigest()


def dirty_paths(root: Path) -> set[str] | None:
    """Tracked paths whose working-tree stat differs from the index (``git diff-files``)."""
    out = _git(root, "diff-files", "--name-only", "-z")
    if out is None:
        return None
    return {p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p}


def _git(root: Path, *args: str) -> bytes | None:
    """stdout of ``git -C root args`` (None on failure), spawned without importing subprocess.

    ``find_repo`` has already refused an environment that points git elsewhere, so the
    environment is passed as it is.
    """
    r, w = os.pipe()
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        pid = os.posix_spawnp(
            "git",
            ["git", "-C", str(root), *args],
            os.environ,
            file_actions=[
                (os.POSIX_SPAWN_DUP2, devnull, 0),
                (os.POSIX_SPAWN_DUP2, w, 1),
                (os.POSIX_SPAWN_DUP2, devnull, 2),
                (os.POSIX_SPAWN_CLOSE, r),
            ],
        )
    except OSError:
        os.close(r)
        return None
    finally:
        os.close(w)
        os.close(devnull)
    chunks = []
    with os.fdopen(r, "rb") as pipe:
        while chunk := pipe.read(65536):
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    return b"".join(chunks) if os.waitstatus_to_exitcode(status) == 0 else None


def express(cwd: Path, task_text: str) -> Hit | None:
    """The stored capsule for ``task_text`` when its stamp still holds; None otherwise."""
    found = find_repo(cwd)
    if found is None:
        return None
    root, git_dir = found
    tid = task_id(task_text)
    try:
        stamp = json.loads(stamp_path(git_dir, tid).read_bytes())
    except (OSError, ValueError):
        return None
    from gitpilot import __version__

    if (
        not isinstance(stamp, dict)
        or stamp.get("format") != STAMP_FORMAT
        or stamp.get("version") != __version__
    ):
        return None
    if stamp.get("index") != signature(git_dir / "index") or stamp.get("root") != str(root):
        return None
    for rel, sig in stamp.get("probes", {}).items():
        if signature(root / rel) != sig:
            return None
    dirty = dirty_paths(root)
    if dirty is None:
        return None
    sources = set(stamp.get("sources", "").split("\n"))
    want: Mapping[str, str] = stamp.get("dirty", {})
    now = sorted(p for p in dirty if p in sources)
    if now != sorted(want):
        return None
    for rel in now:
        try:
            blob = git_blob_id((root / rel).read_bytes()) if not os.path.islink(root / rel) else ""
        except OSError:
            blob = ""
        if blob != want[rel]:
            return None
    md_path = git_dir / "pilot" / f"capsule-{tid}.md"
    try:
        body = md_path.read_bytes()
    except OSError:
        return None
    if content_hash(body) != stamp.get("capsule_blake3"):
        return None
    return Hit(tid, md_path, git_dir / "pilot" / f"capsule-{tid}.json", body, stamp)


def write_stamp(
    git_dir: Path,
    root: Path,
    tid: str,
    *,
    index_sig: list[int],
    fingerprint: str,
    capsule: bytes,
    sources: Iterable[str],
    dirty: Mapping[str, str],
    probes: Iterable[str],
    baseline_bytes: int,
    capsule_bytes: int,
) -> None:
    """Record what the express path compares (after a full build or a full re-verification)."""
    from gitpilot import __version__

    probe_sigs = {rel: signature(root / rel) for rel in sorted(set(probes) | set(CONFIG_PROBES))}
    body = {
        "format": STAMP_FORMAT,
        "version": __version__,
        "root": str(root),
        "index": index_sig,
        "fingerprint": fingerprint,
        "capsule_blake3": content_hash(capsule),
        "sources": "\n".join(sorted(set(sources))),
        "dirty": dict(sorted(dirty.items())),
        "probes": probe_sigs,
        "baseline_bytes": baseline_bytes,
        "capsule_bytes": capsule_bytes,
    }
    path = stamp_path(git_dir, tid)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8"))
    os.replace(tmp, path)
