"""Git notes with git's two-hex fan-out, batched compare-and-swap writes and union merges.

libgit2 writes notes flat, which makes large notes trees slow; we build the trees ourselves
as ``ab/cdef...`` (git's own layout) and read flat and deeper layouts too, so notes written
by ``git notes`` or arriving from another clone are understood. Every write is one commit
whose parent is the ref's old value, landed by ``Repo.update_ref_retrying`` (``git update-ref
<new> <old>``); a writer that loses the race re-reads and reapplies its change, so no
concurrent record is lost.
Reads use one ``git cat-file --batch`` process and never import pygit2.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping

from gitpilot.errors import PilotError
from gitpilot.repo import Repo, TreeEntry

_HEX40 = re.compile(rb"^[0-9a-f]{40}$")
_HEX2 = re.compile(rb"^[0-9a-f]{2}$")
_BLOB = 0o100644
_TREE = 0o040000

Mutation = Callable[[bytes | None], bytes | None]


def union_lines(*bodies: bytes | None) -> bytes:
    """Sorted unique non-empty lines of all bodies (git's ``cat_sort_uniq``)."""
    lines: set[bytes] = set()
    for body in bodies:
        if body:
            lines.update(ln for ln in body.split(b"\n") if ln.strip())
    return b"".join(ln + b"\n" for ln in sorted(lines))


class NotesStore:
    """The notes under one ref, e.g. ``refs/notes/pilot/checks``."""

    def __init__(self, repo: Repo, ref: str) -> None:
        if not ref.startswith("refs/notes/"):
            raise PilotError(f"notes must live under refs/notes/: {ref}")
        self.repo = repo
        self.ref = ref

    # -- reading (stock git, no pygit2) ------------------------------------------------
    def read(self, oid: str) -> bytes | None:
        return self.read_many([oid]).get(oid)

    def read_many(self, oids: Iterable[str]) -> dict[str, bytes]:
        wanted = sorted(set(oids))
        specs: list[str] = []
        for oid in wanted:
            specs += [f"{self.ref}:{oid[:2]}/{oid[2:]}", f"{self.ref}:{oid}",
                      f"{self.ref}:{oid[:2]}/{oid[2:4]}/{oid[4:]}"]
        found = self.repo.cat_file_batch(specs)
        result: dict[str, bytes] = {}
        for i, oid in enumerate(wanted):
            bodies = [b for b in found[3 * i : 3 * i + 3] if b is not None]
            if len(bodies) == 1:
                result[oid] = bodies[0]
            elif bodies:
                result[oid] = union_lines(*bodies)
        return result

    def items(self) -> Iterator[tuple[str, bytes]]:
        """Every (annotated object id, note body), in object id order."""
        tip = self.repo.rev_parse(self.ref)
        if tip is None:
            return
        tree = self.repo.commit_tree_of(tip)
        if tree is None:
            return
        notes = self._flatten(tree, b"")
        for oid in sorted(notes):
            data = self.repo.blob_data(notes[oid])
            if data is not None:
                yield oid, data

    # -- writing -------------------------------------------------------------------------
    def add_lines(self, entries: Mapping[str, Iterable[str | bytes]], message: str) -> None:
        """Union the given lines into each object's note (sorted, unique)."""
        new = {oid: union_lines(b"\n".join(_b(x) for x in lines)) for oid, lines in entries.items()}
        self.update({oid: _union_with(body) for oid, body in new.items()}, message)

    def put(self, entries: Mapping[str, bytes], message: str) -> None:
        """Replace each object's note body."""
        self.update({oid: _replace_with(body) for oid, body in entries.items()}, message)

    def update(self, mutations: Mapping[str, Mutation], message: str) -> None:
        """Apply mutations (old body or None -> new body or None to delete) in one commit, CAS."""
        if mutations:
            self.repo.update_ref_retrying(self.ref, lambda old: self._build(old, mutations, message), message)

    def merge_union(
        self, from_ref: str, message: str, line_filter: Callable[[bytes], bytes | None] | None = None
    ) -> int:
        """Union every note of ``from_ref`` into ours; ``line_filter`` may rewrite or drop lines.

        Returns how many objects' notes changed.
        """
        incoming: dict[str, bytes] = {}
        for oid, body in NotesStore(self.repo, from_ref).items():
            lines = [ln for ln in body.split(b"\n") if ln.strip()]
            if line_filter is not None:
                kept = [line_filter(ln) for ln in lines]
                lines = [ln for ln in kept if ln]
            if lines:
                incoming[oid] = union_lines(b"\n".join(lines))
        if not incoming:
            return 0
        current = self.read_many(incoming)
        changed = {o: b for o, b in incoming.items() if union_lines(current.get(o), b) != union_lines(current.get(o))}
        if changed:
            self.add_lines({o: b.split(b"\n") for o, b in changed.items()}, message)
        return len(changed)

    # -- tree building -------------------------------------------------------------------
    def _build(self, old: str | None, mutations: Mapping[str, Mutation], message: str) -> str | None:
        repo = self.repo
        root: list[TreeEntry] = []
        if old is not None:
            tree = repo.commit_tree_of(old)
            if tree is None:
                raise PilotError(f"{self.ref} does not point at a commit; nothing was written "
                                 f"(inspect it with git cat-file -t {self.ref}, "
                                 f"remove it with git update-ref -d {self.ref})")
            root = repo.tree_entries(tree)
        keep: dict[bytes, TreeEntry] = {}
        flat: dict[str, str] = {}
        buckets: dict[str, str] = {}
        for e in root:
            if _HEX40.match(e.name) and e.mode == _BLOB:
                flat[e.name.decode()] = e.oid
            elif _HEX2.match(e.name) and e.is_tree:
                buckets[e.name.decode()] = e.oid
            else:
                keep[e.name] = e
        # Flat entries (written by libgit2 or an old writer) move into the fan-out.
        touched = sorted({o[:2] for o in mutations} | {o[:2] for o in flat})
        changed = bool(flat)
        new_buckets: dict[str, str | None] = {}
        for prefix in touched:
            modes: dict[str, int] = {}
            notes = self._flatten(buckets[prefix], prefix.encode(), modes) if prefix in buckets else {}
            for oid, blob in flat.items():
                if oid[:2] == prefix:
                    if oid in notes:
                        merged = union_lines(repo.blob_data(notes[oid]), repo.blob_data(blob))
                        notes[oid] = repo.create_blob(merged)
                    else:
                        notes[oid] = blob
            for oid in sorted(o for o in mutations if o[:2] == prefix):
                before = repo.blob_data(notes[oid]) if oid in notes else None
                after = mutations[oid](before)
                if after == before:
                    continue
                changed = True
                modes.pop(oid, None)
                if after is None:
                    notes.pop(oid, None)
                else:
                    notes[oid] = repo.create_blob(after)
            # Entries we did not touch keep their mode (a hand-made symlink or gitlink stays as it was).
            new_buckets[prefix] = (
                repo.write_tree(TreeEntry(o[2:].encode(), modes.get(o, _BLOB), b) for o, b in notes.items())
                if notes else None
            )
        if not changed:
            return None
        for prefix, tree_oid in new_buckets.items():
            if tree_oid is None:
                buckets.pop(prefix, None)
            else:
                buckets[prefix] = tree_oid
        entries = list(keep.values()) + [TreeEntry(p.encode(), _TREE, t) for p, t in buckets.items()]
        new_tree = repo.write_tree(entries)
        return repo.commit_tree(new_tree, [old] if old else [], message)

    def _flatten(self, tree: str, prefix: bytes, modes: dict[str, int] | None = None) -> dict[str, str]:
        """Annotated object id -> note blob id for every note under ``tree`` (``modes``: filled
        with the mode of each entry that is not a plain blob)."""
        result: dict[str, str] = {}
        for e in self.repo.tree_entries(tree):
            name = prefix + e.name
            if e.is_tree and re.match(rb"^[0-9a-f]+$", e.name) and len(name) < 40:
                result.update(self._flatten(e.oid, name, modes))
            elif not e.is_tree and _HEX40.match(name):
                result[name.decode()] = e.oid
                if modes is not None and e.mode != _BLOB:
                    modes[name.decode()] = e.mode
        return result


def _union_with(add: bytes) -> Mutation:
    def mutate(old: bytes | None) -> bytes | None:
        return union_lines(old, add)

    return mutate


def _replace_with(body: bytes) -> Mutation:
    def mutate(_old: bytes | None) -> bytes | None:
        return body

    return mutate


def _b(x: str | bytes) -> bytes:
    return x if isinstance(x, bytes) else x.encode("utf-8")

