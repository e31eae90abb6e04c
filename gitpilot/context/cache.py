"""The context cache: section maps in git notes, and the fingerprint that decides capsule reuse.

Section maps are notes on the blob id of each Markdown file in ``refs/notes/pilot/sections``
(headings, levels, line ranges, hashes; never text), so a file whose blob did not change is
never parsed again, in any branch or worktree. The fingerprint is blake3 over the git pilot
version and code (``code_id``), the capsule options, the task id and every source's path,
roles, status and blob id: a capsule is reused only when it matches, so a changed rule is
never reported as unchanged, and a capsule chosen by other code is never served as current.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitpilot import __version__

if TYPE_CHECKING:  # pragma: no cover
    from gitpilot.context.markdown import SectionMap
    from gitpilot.repo import Repo
    from gitpilot.store.notes import NotesStore

SECTIONS_REF = "refs/notes/pilot/sections"
FAST_IMPORT_MIN = 50  # from this many new notes on, write them as one pack
FORMAT = "capsule-v2"


@functools.cache
def code_id() -> str:
    """blake3 over the code that selects a capsule (``stamp.code_files``): a reuse key part that
    changes with the code even where the version number does not, and not with a reinstall."""
    import blake3

    from gitpilot.context.stamp import code_files

    h = blake3.blake3()
    for path in code_files():
        h.update(os.path.basename(path).encode("utf-8") + b"\0")
        try:
            h.update(Path(path).read_bytes())
        except OSError:
            h.update(b"\0(missing)")
        h.update(b"\0")
    return h.hexdigest()


def fingerprint(options: Mapping[str, object], task_id: str, sources: Iterable[Mapping[str, object]]) -> str:
    """blake3 over what the capsule depends on (sources given as path/roles/status/blob records)."""
    import blake3

    h = blake3.blake3()
    head = {"format": FORMAT, "version": __version__, "code": code_id(), "options": options, "task": task_id}
    h.update(json.dumps(head, sort_keys=True, separators=(",", ":")).encode("utf-8"))
    for rec in sorted(sources, key=lambda r: str(r["path"])):
        line = "\0".join(
            [
                str(rec["path"]),
                ",".join(sorted(map(str, rec["roles"]))),  # type: ignore[call-overload]
                str(rec["status"]),
                str(rec.get("blob", "")),
            ]
        )
        h.update(line.encode("utf-8", "surrogateescape") + b"\n")
    return h.hexdigest()


def load_maps(
    repo: Repo,
    items: Mapping[str, tuple[str, str, Sequence[str]]],
    parse: Callable[[str, Sequence[str]], SectionMap],
    *,
    use_cache: bool = True,
) -> tuple[dict[str, SectionMap], int]:
    """Section maps for ``{path: (blob id, text, lines)}``: from notes where present, else parsed and stored.

    Returns the maps by path and how many files were parsed.
    """
    from gitpilot.errors import PilotError
    from gitpilot.store.notes import NotesStore

    store = NotesStore(repo, SECTIONS_REF)
    blobs = sorted({blob for blob, _, _ in items.values() if blob})
    note_ids: dict[str, str] = {}
    mirror = NoteMirror(repo.pilot_dir)
    known = read_notes(repo, blobs, mirror=mirror, note_ids=note_ids) if (use_cache and blobs) else {}
    fitting = FittingNotes(repo.pilot_dir if use_cache else None)
    maps: dict[str, SectionMap] = {}
    fresh: dict[str, bytes] = {}
    todo: list[str] = []
    for path in sorted(items):
        blob, text, lines = items[path]
        smap = known.get(blob)
        note = note_ids.get(blob, "")
        copy = mirror.digests.get(note, "")
        if smap is not None and not fitting.fits(blob, f"{note}:{copy}" if copy else "", smap, lines):
            smap = None  # a note that does not fit this text is ignored, and replaced
        if smap is None:
            todo.append(path)
        else:
            maps[path] = smap
    from gitpilot.context.markdown import map_from_marshal, map_to_marshal
    from gitpilot.context.parallel import map_all

    # (parsed side by side on a cold build: each map depends on its file alone)
    made = map_all(lambda p: parse(items[p][1], items[p][2]), todo, map_to_marshal, map_from_marshal)
    for path, smap in zip(todo, made, strict=True):
        blob = items[path][0]
        if blob:
            fresh[blob] = smap.to_json()
        maps[path] = smap
    maps = dict(sorted(maps.items()))
    parsed = len(todo)
    fitting.save()
    if fresh and use_cache:
        try:
            put_notes(repo, store, fresh, f"pilot: section maps for {len(fresh)} file(s)")
        except PilotError:
            pass  # a cache that cannot be written (a read-only repository) does not stop the capsule
    return maps, parsed


def _fits(smap: SectionMap, lines: Sequence[str]) -> bool:
    """Whether a stored map describes these lines: every range inside the file and nested in
    its parent, and each top-level section's hash that of its text (a tampered or foreign
    note would otherwise make sections vanish from the capsule without a word)."""
    from gitpilot.context.markdown import range_text, sha256_text

    n = len(lines)
    if smap.line_count != n:
        return False
    secs = smap.sections
    for s in secs:
        if not (1 <= s.start <= s.body_end <= s.end <= n) and not (s.start > s.end and s.level == 0):
            return False
        if s.parent is not None:
            if not 0 <= s.parent < len(secs):
                return False
            p = secs[s.parent]
            if not (p.start <= s.start and s.end <= p.end):
                return False
        elif s.sha256 and not s.withheld and s.start <= s.end and sha256_text(range_text(lines, s.start, s.end)) != s.sha256:
            return False
    return all(1 <= a <= b <= n for a, b in smap.always)


class FittingNotes:
    """The (file blob, note blob, crc32 of the parsed copy, the text's length) entries ``_fits``
    accepted, kept on this machine (``<git common dir>/pilot/maps/fitting-<code>``): they name exact
    bytes, so what fit once always fits, and a new task does not check 750 maps against their
    files' lines again (vercel/ai: 45,000 sections and the sha256 of each top-level one). Only the
    text's length is compared again, the cheap guard that the text read is the blob's (its line
    count, the guard before, was a scan of every file: ~11 ms of a new task on vercel/ai). The list
    is kept per ``code_id`` (a new ``_fits``, a new list); best effort."""

    def __init__(self, pilot_dir: Path | None) -> None:
        self.path = pilot_dir / "maps" / f"fitting-{code_id()[:16]}" if pilot_dir is not None else None
        self.known: set[str] = set()
        self.new: set[str] = set()
        if self.path is not None:
            try:
                self.known = set(self.path.read_text("ascii").split())
            except (OSError, UnicodeDecodeError):
                self.known = set()

    def fits(self, blob: str, copy: str, smap: SectionMap, lines: Sequence[str]) -> bool:
        """``_fits(smap, lines)``, from the list when this file blob, map copy (``note:crc`` of the
        copy's bytes) and the length of the text ``lines`` (``lines.Lines``) split are on it."""
        text = getattr(lines, "text", None)
        entry = f"{blob}:{copy}:{len(text)}" if blob and copy and isinstance(text, str) else ""
        if entry and entry in self.known:
            return True  # (a copy's sections are loaded when first looked at: these bytes loaded before)
        try:
            ok = _fits(smap, lines)
        except ValueError:  # a copy whose sections do not load
            ok = False
        if ok and entry:
            self.new.add(entry)
        return ok

    def save(self) -> None:
        fresh = self.new - self.known
        if not fresh or self.path is None:
            return
        from gitpilot.fileio import atomic_write

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, ("\n".join(sorted(self.known | fresh)) + "\n").encode("ascii"))
        except OSError:
            pass


def put_notes(repo: Repo, store: NotesStore, entries: Mapping[str, bytes], message: str) -> None:
    """Store many notes at once: one ``git fast-import`` pack instead of thousands of loose blobs.

    (``NotesStore.put`` writes each note as a loose object: about a second per few thousand
    files on a cold capsule.) The new commit extends the ref's current tip with the notes at
    git's two-hex fan-out paths; fast-import will not move a ref that another writer moved
    meanwhile, and then the ordinary compare-and-swap writer takes over.
    """
    if len(entries) < FAST_IMPORT_MIN:
        store.put(entries, message)
        return
    import time

    old = repo.rev_parse(store.ref)
    ident = repo.git("var", "GIT_COMMITTER_IDENT").decode("utf-8", "replace").strip()
    who, _, _ = ident.rpartition(">")
    head = f"commit {store.ref}\ncommitter {who}> {int(time.time())} +0000\n"
    msg = message.encode("utf-8")
    parts = [head.encode("utf-8"), b"data %d\n" % len(msg), msg, b"\n"]
    if old:
        parts.append(f"from {old}\n".encode())
    for oid in sorted(entries):
        body = entries[oid]
        parts += [f"M 100644 inline {oid[:2]}/{oid[2:]}\n".encode(), b"data %d\n" % len(body), body, b"\n"]
    proc = repo.git_proc("fast-import", "--quiet", input=b"".join(parts))
    if proc.returncode != 0:
        store.put(entries, message)


def read_notes(repo: Repo, oids: Iterable[str], mirror: NoteMirror | None = None,
               note_ids: dict[str, str] | None = None) -> dict[str, Any]:
    """The section-map notes of ``oids``: one ``ls-tree`` of the notes tree, one batch read.

    (``NotesStore.read_many`` resolves a ``ref:path`` per object, which costs seconds for
    thousands of files; any fan-out depth is understood here.) Without ``mirror``, the notes'
    bytes; with it, the maps they hold (None for a note that is not a map), each note read and
    parsed once on this machine (``NoteMirror``, by the note's own blob id). ``note_ids`` is filled
    with the note blob of each object found."""
    proc = repo.git_proc("ls-tree", "-r", "-z", SECTIONS_REF)  # (no notes yet: git says so, and nothing is listed)
    if proc.returncode != 0:
        return {}
    wanted = set(oids)
    listing = proc.stdout
    found: dict[str, str] = {}
    for rec in listing.split(b"\0"):
        meta, _, path = rec.partition(b"\t")
        parts = meta.split(b" ")
        if len(parts) != 3 or parts[1] != b"blob":
            continue
        oid = path.replace(b"/", b"").decode("ascii", "replace")
        if oid in wanted:
            found[oid] = parts[2].decode("ascii")
    names = sorted(found)
    if note_ids is not None:
        note_ids.update(found)  # each object's note blob
    if mirror is None:
        bodies = repo.cat_file_batch([found[o] for o in names])
        return {o: b for o, b in zip(names, bodies, strict=True) if b is not None}
    from gitpilot.context.markdown import SectionMap

    notes = sorted(set(found.values()))
    packed = mirror.open_pack(notes)
    out: dict[str, Any] = {o: mirror.get(found[o]) for o in names}
    if not packed and all(out[o] is not None for o in names):
        mirror.save_pack(notes)  # (every copy read one by one: kept together for the next task)
    todo = [o for o in names if out[o] is None]
    for o, body in zip(todo, repo.cat_file_batch([found[o] for o in todo]), strict=True):
        if body is None:
            del out[o]
            continue
        out[o] = smap = SectionMap.from_json(body)
        if smap is not None:
            mirror.put(found[o], smap)
    return out


class NoteMirror:
    """Parsed section-map notes, machine-local, by the note's blob id
    (``<git common dir>/pilot/maps/``): a note is read and parsed from JSON once, then loaded as
    plain values. The note's id names its exact bytes, so a copy is what parsing them gives; a
    copy that does not load is ignored. What is read from it is checked against the file's
    lines as a note is (``_fits``)."""

    def __init__(self, pilot_dir: Path | None) -> None:
        from gitpilot.context.terms import ObjectFiles

        self.files = ObjectFiles(pilot_dir / "maps" if pilot_dir is not None else None)
        self.digests: dict[str, str] = {}  # note id -> crc32 of the copy read or written (``FittingNotes``)
        self.packed: dict[str, memoryview] = {}  # note id -> its copy, from the tree's pack
        self.read: dict[str, bytes | memoryview] = {}  # note id -> the copy's bytes, as read

    def _pack_path(self) -> str | None:
        base = self.files._base
        return os.path.join(base, f"pack-{code_id()[:16]}") if base else None

    def open_pack(self, notes: Sequence[str]) -> bool:
        """Read the copies of ``notes`` (sorted note ids, a tree's) from the one file they were
        kept together in (``save_pack``), when it holds exactly these notes: one read for a new
        task on the same tree, not one a note (vercel/ai: 750). Each copy is then checked as a copy
        read from its own file is (its crc32 against the entries known to fit; loaded or not)."""
        path = self._pack_path()
        if path is None or not notes:
            return False
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            return False
        head = _pack_head(notes)
        view = memoryview(data)
        n = len(notes)
        if data[: len(head)] != head or len(data) < len(head) + 4 * (n + 1):
            return False
        from array import array

        ends = array("I")
        if ends.itemsize != 4:
            return False
        ends.frombytes(view[len(head) : len(head) + 4 * (n + 1)])
        at = len(head) + 4 * (n + 1)
        listed = ends.tolist()
        if listed[0] != 0 or listed[-1] != len(data) - at or listed != sorted(listed):
            return False
        self.packed = {note: view[at + listed[i] : at + listed[i + 1]] for i, note in enumerate(notes)}
        return True

    def save_pack(self, notes: Sequence[str]) -> None:
        """Keep the copies of ``notes`` just read together in one file (best effort)."""
        path = self._pack_path()
        if path is None or not all(note in self.read for note in notes):
            return
        from array import array

        from gitpilot.fileio import atomic_write

        parts = [bytes(self.read[note]) for note in notes]
        ends = array("I", [0])
        for part in parts:
            ends.append(ends[-1] + len(part))
        try:
            atomic_write(path, b"".join([_pack_head(notes), ends.tobytes(), *parts]))
        except (OSError, ValueError, OverflowError):
            pass

    def get(self, oid: str) -> SectionMap | None:
        from gitpilot.context.markdown import map_from_marshal

        data: bytes | memoryview | None = self.packed.get(oid)
        if data is None:
            data = self.files.read(oid)
        # (its sections are checked when first looked at: ``FittingNotes.fits`` does unless these
        # exact bytes fit before)
        smap = None if data is None else map_from_marshal(data, check=False)
        if data is not None and smap is not None:
            self.digests[oid] = _crc(data)
            self.read[oid] = data
        return smap

    def put(self, oid: str, smap: SectionMap) -> None:
        """Keep ``smap`` (best effort: a copy that cannot be written is only slower)."""
        from gitpilot.context.markdown import map_to_marshal

        data = map_to_marshal(smap)
        self.digests[oid] = _crc(data)
        self.files.write(oid, data)


def _pack_head(notes: Sequence[str]) -> bytes:
    """A maps pack's head: its layout, and the digest of the note ids it holds, in order."""
    import blake3

    return b"maps-pack/1\0" + blake3.blake3("\n".join(notes).encode("ascii", "replace")).digest()


def _crc(data: bytes | memoryview) -> str:
    import zlib

    return format(zlib.crc32(data), "08x")


def refresh_maps(repo: Repo, old: str, new: str, *, patterns: Iterable[str] = ("*.md", "*.mdx")) -> int:
    """Section maps for the Markdown blobs that differ between two commits and have none yet.

    For the post-checkout hook: only changed blobs are read (from the object store, never the
    working tree), credential-named files are skipped, and a file holding a credential gets a
    map with its withheld flags. Returns how many files were parsed.
    """
    from gitpilot.context.markdown import parse, split_lines
    from gitpilot.context.sources import matches
    from gitpilot.errors import PilotError
    from gitpilot.redact import contains_secret, is_credential_filename
    from gitpilot.store.notes import NotesStore

    out = repo.git("diff-tree", "-r", "-z", "--no-renames", old, new)
    fields = out.split(b"\0")
    blobs: dict[str, str] = {}
    for meta, raw in zip(fields[0::2], fields[1::2], strict=False):
        parts = meta.decode("ascii", "replace").split()
        path = raw.decode("utf-8", "surrogateescape")
        if len(parts) < 5 or parts[3] == "0" * 40 or not parts[1].startswith("100"):
            continue
        if matches(path, patterns) and not is_credential_filename(path):
            blobs[parts[3]] = path
    have = read_notes(repo, blobs)
    todo = sorted(b for b in blobs if b not in have)
    fresh: dict[str, bytes] = {}
    for blob, data in zip(todo, repo.cat_file_batch(todo), strict=True):
        if data is None or len(data) > 1_000_000:
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        secret = contains_secret if contains_secret(text) else None
        fresh[blob] = parse(text, secret, split_lines(text)).to_json()
    if fresh:
        try:
            put_notes(
                repo, NotesStore(repo, SECTIONS_REF), fresh, f"pilot: section maps for {len(fresh)} file(s)"
            )
        except PilotError:
            return 0
    return len(fresh)


_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def refresh_section_maps(repo: Repo) -> int:
    """For the post-checkout and post-merge hooks: section maps for the new HEAD's Markdown.

    Every configured context file at HEAD whose blob has no map yet is parsed (from the
    object store); a blob that has one, in any branch or worktree, is never parsed again.
    Returns how many files were parsed.
    """
    head = repo.head()
    if head is None:
        return 0
    patterns: Iterable[str] = ("*.md", "*.mdx")
    if repo.root is not None:
        from gitpilot.config import load
        from gitpilot.errors import PilotError

        try:
            patterns = load(repo.root).get("leanloop.context.files")
        except PilotError:
            pass  # a broken config is reported by the commands, not by a background hook
    return refresh_maps(repo, _EMPTY_TREE, head, patterns=patterns)


class CleanBlobs:
    """Blob ids whose text holds no credential format, as ``redact.contains_secret`` says: a file
    whose blob is known clean is not scanned again. The verdict belongs to the redaction rules, so
    the list is kept per digest of ``gitpilot/redact.py`` (new rules, a new list), machine-local,
    beside the term statistics (``<git common dir>/pilot/terms/clean-<digest>``)."""

    def __init__(self, pilot_dir: Path | None) -> None:
        self.path: Path | None = None
        self.known: set[str] = set()
        if pilot_dir is None:
            return
        import hashlib

        from gitpilot import redact

        try:
            digest = hashlib.blake2b(Path(redact.__file__).read_bytes(), digest_size=8).hexdigest()
        except OSError:
            return
        self.path = pilot_dir / "terms" / f"clean-{digest}"
        try:
            self.known = set(self.path.read_text("ascii").split())
        except (OSError, UnicodeDecodeError):
            self.known = set()

    def holds(self, blob: str) -> bool:
        return bool(blob) and blob in self.known

    def add(self, blobs: Iterable[str]) -> None:
        """Remember these blobs as clean (written at once; best effort)."""
        fresh = {b for b in blobs if b and b not in self.known}
        if not fresh or self.path is None:
            return
        self.known |= fresh
        from gitpilot.fileio import atomic_write

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, ("\n".join(sorted(self.known)) + "\n").encode("ascii"))
        except OSError:
            pass
