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

Imports: os, json, hashlib, subprocess (and blake3 for the task id); no pygit2, no markdown-it,
no config or redaction module.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

STAMP_FORMAT = 1
CONFIG_PROBES = (".gitpilot.toml", ".autopilot/config.json")
_ENV_BLOCKERS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY")


class Hit(NamedTuple):
    """A capsule served by its stamp (a NamedTuple: dataclasses cost an import on this path)."""

    task_id: str
    md_path: Path
    json_path: Path
    body: bytes
    stamp: dict[str, Any]


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
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def dirty_paths(root: Path) -> set[str] | None:
    from gitpilot.gitrun import clean_env

    try:
        proc = subprocess.run(
            ["git", "diff-files", "--name-only", "-z"],
            cwd=root,
            env=clean_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
    except OSError:
        return None
    if proc.returncode != 0:
        return None
    return {p.decode("utf-8", "surrogateescape") for p in proc.stdout.split(b"\0") if p}


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
    if hashlib.sha256(body).hexdigest() != stamp.get("capsule_sha256"):
        return None
    return Hit(tid, md_path, git_dir / "pilot" / f"capsule-{tid}.json", body, stamp)


def write_stamp(
    git_dir: Path,
    root: Path,
    tid: str,
    *,
    index_sig: list[int],
    fingerprint: str,
    capsule_sha256: str,
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
        "capsule_sha256": capsule_sha256,
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
