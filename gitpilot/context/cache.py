"""The context cache: section maps in git notes, and the fingerprint that decides capsule reuse.

Section maps are notes on the blob id of each Markdown file in ``refs/notes/pilot/sections``
(headings, levels, line ranges, hashes; never text), so a file whose blob did not change is
never parsed again, in any branch or worktree. The fingerprint is blake3 over the git pilot
version, the capsule options, the task id and every source's path, roles, status and blob id:
a capsule is reused only when it matches, so a changed rule is never reported as unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from gitpilot import __version__

if TYPE_CHECKING:  # pragma: no cover
    from gitpilot.context.markdown import SectionMap
    from gitpilot.repo import Repo

SECTIONS_REF = "refs/notes/pilot/sections"
FORMAT = "capsule-v1"


def fingerprint(options: Mapping[str, object], task_id: str, sources: Iterable[Mapping[str, object]]) -> str:
    """blake3 over what the capsule depends on (sources given as path/roles/status/blob records)."""
    import blake3

    h = blake3.blake3()
    head = {"format": FORMAT, "version": __version__, "options": options, "task": task_id}
    h.update(json.dumps(head, sort_keys=True, separators=(",", ":")).encode("utf-8"))
    for rec in sorted(sources, key=lambda r: str(r["path"])):
        line = "\0".join([str(rec["path"]), ",".join(sorted(map(str, rec["roles"]))),  # type: ignore[call-overload]
                          str(rec["status"]), str(rec.get("blob", ""))])
        h.update(line.encode("utf-8", "surrogateescape") + b"\n")
    return h.hexdigest()


def load_maps(
    repo: Repo,
    texts: Mapping[str, tuple[str, str]],
    parse: Callable[[str], SectionMap],
    *,
    use_cache: bool = True,
) -> tuple[dict[str, SectionMap], int]:
    """Section maps for ``{path: (blob id, text)}``: from notes where present, else parsed and stored.

    Returns the maps by path and how many files were parsed.
    """
    from gitpilot.context.markdown import SectionMap
    from gitpilot.store.notes import NotesStore

    store = NotesStore(repo, SECTIONS_REF)
    blobs = sorted({blob for blob, _ in texts.values() if blob})
    stored = store.read_many(blobs) if (use_cache and blobs) else {}
    maps: dict[str, SectionMap] = {}
    fresh: dict[str, bytes] = {}
    parsed = 0
    for path in sorted(texts):
        blob, text = texts[path]
        smap = SectionMap.from_json(stored[blob]) if blob in stored else None
        if smap is not None and smap.line_count != _line_count(text):
            smap = None  # a note that does not fit the text (a hash collision is not the worry; a bad note is)
        if smap is None:
            smap = parse(text)
            parsed += 1
            if blob:
                fresh[blob] = smap.to_json()
        maps[path] = smap
    if fresh:
        try:
            store.put(fresh, f"pilot: section maps for {len(fresh)} file(s)")
        except Exception:  # a cache that cannot be written is not an error for the capsule
            pass
    return maps, parsed


def _line_count(text: str) -> int:
    from gitpilot.context.markdown import split_lines

    return len(split_lines(text))
