"""A capsule as its callers get it (``CapsuleResult``) and as it lands in the worktree (``write_files``).

Every way to a capsule ends here: a build (``capsule``), a reuse that nothing it depends on
changed (``warm``), the stamp's express path (``stamp``, whose hit ``result_from_hit`` turns
into a result). The two files an agent reads, ``capsule-<task>.md`` and its manifest
``capsule-<task>.json`` in ``<git dir>/pilot/``, are written by ``write_files`` alone, each
replaced whole: a reader never sees half of one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class CapsuleResult:
    """What ``build_capsule`` made (or reused)."""

    text: str
    manifest: dict[str, Any]
    path: Path | None
    reused: bool
    baseline_bytes: int
    capsule_bytes: int
    task_id: str = ""
    json_path: Path | None = None


def result_from_hit(hit: Any) -> CapsuleResult:
    """The result for a capsule served by its stamp (the manifest is read from its file)."""
    import json

    try:
        manifest = json.loads(Path(hit.json_path).read_bytes())
    except (OSError, ValueError):
        manifest = {}
    return CapsuleResult(
        hit.body.decode("utf-8"),
        manifest,
        Path(hit.md_path),
        True,
        int(hit.stamp["baseline_bytes"]),
        len(hit.body),
        hit.task_id,
        Path(hit.json_path),
    )


def write_files(md_path: Path, json_path: Path, body: bytes, manifest: bytes) -> None:
    """The capsule and its manifest, each replaced whole (their directory made when missing). Not
    synced: the task record holds both, and a lost copy is restored from it."""
    from gitpilot.fileio import atomic_write

    md_path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(md_path, body)
    atomic_write(json_path, manifest)
