"""How much of a remote's check notes one pull takes: bounded per note, per tree and per pull.

A remote is data written by someone else, possibly hostile: a fork's notes of 330,000 valid
lines on 100,001 trees (one note of 50 MB) once made a pull take 37 s and 653 MB and every
later check on that tree 2 s. What honest clones write is far below these bounds (a tree
gets one line per check run); what is left out is counted and reported, never silently lost.

* per note: a note larger than ``MAX_NOTE_BYTES`` is not read at all;
* per tree: at most ``MAX_LINES_PER_TREE`` lines from one remote are kept on a tree (those
  already merged count), the newest first;
* per pull: at most ``MAX_TREES_PER_PULL`` notes and ``MAX_LINES_PER_PULL`` lines, the notes
  of trees of this clone's recent commits first, then by object id.

A check reads only the note of its own tree, so its cost never depends on other trees' notes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gitpilot.repo import Repo

MAX_NOTE_BYTES = 256 * 1024
MAX_LINES_PER_TREE = 100
MAX_TREES_PER_PULL = 5_000
MAX_LINES_PER_PULL = 20_000
RECENT_COMMITS = 2_000
_READ_CHUNK_BYTES = 16 << 20  # note bodies are read this much at a time


@dataclass
class Dropped:
    """What a pull left out, by reason."""

    big_notes: int = 0  # notes over MAX_NOTE_BYTES, not read
    notes: int = 0  # notes past MAX_TREES_PER_PULL (or once MAX_LINES_PER_PULL was reached)
    lines: int = 0  # valid lines past MAX_LINES_PER_TREE or MAX_LINES_PER_PULL

    def any(self) -> bool:
        return bool(self.big_notes or self.notes or self.lines)

    def describe(self) -> str:
        parts = []
        if self.big_notes:
            parts.append(f"{self.big_notes} note(s) over {MAX_NOTE_BYTES // 1024} KiB")
        if self.notes:
            parts.append(f"{self.notes} note(s) past the {MAX_TREES_PER_PULL:,} trees one pull takes")
        if self.lines:
            parts.append(f"{self.lines} line(s) past {MAX_LINES_PER_TREE} per tree from one remote "
                         f"or {MAX_LINES_PER_PULL:,} per pull")
        return "; ".join(parts)


def recent_trees(repo: Repo) -> set[str]:
    """Tree ids of this clone's recent commits (branches, remote branches, tags): the trees
    whose passes a check here is most likely to reuse."""
    proc = repo.git_proc("log", "--branches", "--remotes", "--tags", f"--max-count={RECENT_COMMITS}",
                         "--format=%T")
    return set(proc.stdout.decode("ascii", "replace").split()) if proc.returncode == 0 else set()


def choose_notes(sizes: dict[str, int], preferred: set[str], dropped: Dropped) -> list[str]:
    """The annotated objects whose notes this pull reads, in the order they are taken."""
    order = sorted(sizes, key=lambda oid: (oid not in preferred, oid))
    chosen: list[str] = []
    for oid in order:
        if sizes[oid] > MAX_NOTE_BYTES:
            dropped.big_notes += 1
        elif len(chosen) < MAX_TREES_PER_PULL:
            chosen.append(oid)
        else:
            dropped.notes += 1
    return chosen


def chunks(oids: Sequence[str], sizes: dict[str, int]) -> Iterable[list[str]]:
    """``oids`` in runs whose notes add up to at most ``_READ_CHUNK_BYTES`` (memory stays bounded)."""
    run: list[str] = []
    total = 0
    for oid in oids:
        if run and total + sizes[oid] > _READ_CHUNK_BYTES:
            yield run
            run, total = [], 0
        run.append(oid)
        total += sizes[oid]
    if run:
        yield run
