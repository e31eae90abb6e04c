"""Term statistics of the candidate documents, kept per blob so a new task tokenizes nothing again.

For every section of a file: the normalized tokens of its own text (``text.token_counts``) and
their number; for the file: the tokens of its headings. A task's score needs only these counts,
so a file whose blob id did not change is never tokenized twice, in any task, branch or worktree.
They are kept by token (which sections hold it, how often), so a task reads the counts of its
own few words and never walks every section of every file.

The statistics live in ``<git common dir>/pilot/terms/<2 hex>/<blob id>`` (``marshal``, one file a
blob, machine-local like the check logs), or, when a build counted many files at once (a cold
build), in one ``terms/pack-<digest>`` file for all of them: creating a file is the costly part of
storing (on ext4 right after a cache was wiped, a new inode each costs more than counting a file's
terms), and a new task reads one file instead of hundreds. They hold words of the documentation, so
they are never written to a note. A section withheld for a credential has no entry (nothing of it is stored), and
a file with a credential in it is never cached at all. ``treeterms.terms_for_all`` asks for them,
a tree's candidates at once.
"""

from __future__ import annotations

import marshal
import operator
import os
import sys
from array import array
from collections.abc import Iterable, Sequence
from itertools import accumulate, chain
from pathlib import Path

from gitpilot.context.markdown import SectionMap, range_text

FORMAT = 4  # 4: one index string and one buffer a file (3: a dict of packed postings; 2: lists)
TermCounts = dict[str, int]
# The array typecode of four-byte unsigned integers in this machine's order (the cache is
# machine-local, and ``treeterms`` writes its records in the same layout); a record of another
# layout is not read.
UINT32 = next(c for c in "IL" if array(c).itemsize == 4)
LAYOUT = (FORMAT, UINT32, sys.byteorder)
PAIR_BYTES = 8  # bytes of one (section, count) posting
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class DocTerms:
    """The counts of one file, arranged so that a task looks up only its own words.

    - ``post(token)``: the sections whose own text holds the token, as ``pos, count, pos,
      count, ...`` in section order. They are kept as loaded until a task asks: ``index`` is the
      file's tokens, one a line between newlines, and token ``i``'s postings are the pairs
      ``starts[i]`` to ``starts[i + 1]`` of ``buffer``; a task's few dozen words are found in the
      index string, and the hundreds of other tokens are never made into objects;
    - ``lengths``: each section's number of tokens (of its own text, below its heading line);
    - ``headings``: each section's title tokens;
    - ``plens``: each section's heading-path length (its title's tokens and its ancestors');
    - ``title_postings``: each title token -> the sections whose title holds it, once an occurrence.
    """

    __slots__ = ("index", "starts", "buffer", "lengths", "headings", "plens", "title_postings", "heads_total",
                 "length_total", "plen_total", "_open", "_starts", "_places")

    def __init__(
        self,
        index: str,
        starts: bytes,
        buffer: bytes,
        lengths: list[int],
        headings: list[list[str]],
        plens: list[int],
        title_postings: dict[str, list[int]],
    ) -> None:
        self.index = index
        self.starts = starts
        self.buffer = buffer
        self.lengths = lengths
        self.headings = headings  # each section's title tokens
        self.plens = plens
        self.title_postings = title_postings
        self.heads_total = sum(map(len, headings))
        self.length_total = sum(lengths)
        self.plen_total = sum(plens)
        self._open: dict[str, Sequence[int]] = {}
        self._starts: Sequence[int] | None = None
        self._places: dict[str, int] | None = None

    @classmethod
    def of(cls, postings: dict[str, list[int]], lengths: list[int], headings: list[list[str]], plens: list[int],
           title_postings: dict[str, list[int]]) -> DocTerms:
        """The counts from each token's postings (``pos, count, ...``)."""
        # (each posting list holds pairs: its running total of numbers, halved, is its start)
        starts = array(UINT32, [0, *(n >> 1 for n in accumulate(map(len, postings.values())))])
        buffer = array(UINT32, chain.from_iterable(postings.values())).tobytes()
        index = "\n" + "".join(t + "\n" for t in postings)
        return cls(index, starts.tobytes(), buffer, lengths, headings, plens, title_postings)

    def _where(self) -> dict[str, int]:
        """Each token's place in the index (one split a file: cheaper than a scan of the index a
        word), the first place of a token that is there twice; the empty strings the split gives at
        either end are not tokens."""
        places = self._places
        if places is None:
            names = self.index.split("\n")[1:-1]
            places = self._places = dict(zip(reversed(names), range(len(names) - 1, -1, -1), strict=True))
        return places

    def has(self, token: str) -> bool:
        places = self._places
        return bool(token) and token in (places if places is not None else self._where())

    def held(self, words: Iterable[str]) -> list[str]:
        """Those of ``words``, in their order, that a section's text holds (``has``)."""
        return [t for t in words if self.has(t)]

    def post(self, token: str) -> Sequence[int]:
        """The postings of ``token`` (empty when no section holds it)."""
        got = self._open.get(token)
        if got is None:
            got = array(UINT32)
            places = self._places
            i = (places if places is not None else self._where()).get(token)
            if i is not None:
                bounds = self._starts
                if bounds is None:
                    unpacked = array(UINT32)
                    unpacked.frombytes(self.starts)
                    bounds = self._starts = unpacked
                got.frombytes(self.buffer[bounds[i] * PAIR_BYTES : bounds[i + 1] * PAIR_BYTES])
            self._open[token] = got
        return got

    @property
    def postings(self) -> dict[str, list[int]]:
        """Every token's postings, unpacked (for tests and tools)."""
        return {t: list(self.post(t)) for t in self.index.split("\n") if t}

    def section_counts(self, pos: int) -> TermCounts:
        """The token counts of one section (a slow look-up over every posting: for tests and tools)."""
        out: TermCounts = {}
        for t, post in self.postings.items():
            for i in range(0, len(post), 2):
                if post[i] == pos:
                    out[t] = post[i + 1]
        return out

    def _state(self) -> tuple[object, ...]:
        return (self.index, self.starts, self.buffer, self.lengths, self.headings, self.plens, self.title_postings)

    def to_bytes(self) -> bytes:
        return marshal.dumps((LAYOUT, self.index, self.starts, self.buffer, self.lengths, self.headings, self.plens,
                              self.title_postings))

    def __getstate__(self) -> tuple[object, ...]:
        return self._state()

    def __setstate__(self, state: tuple[object, ...]) -> None:
        self.__init__(*state)  # type: ignore[misc]

    @classmethod
    def from_bytes(cls, data: bytes) -> DocTerms | None:
        try:
            layout, *rest = marshal.loads(data)
            index, starts, buffer, lengths, headings, plens, titles = rest
        except (ValueError, EOFError, TypeError):
            return None
        if layout != LAYOUT or not (len(lengths) == len(headings) == len(plens)):
            return None
        if not (isinstance(index, str) and isinstance(starts, bytes) and isinstance(buffer, bytes)):
            return None
        if not index.startswith("\n") or not index.endswith("\n"):
            return None
        bounds = array(UINT32)
        try:
            bounds.frombytes(starts)
        except ValueError:
            return None
        # one bound a token and one more, rising from 0 to the buffer's last pair
        if len(bounds) != index.count("\n") or bounds[0] != 0 or bounds[-1] * PAIR_BYTES != len(buffer):
            return None
        if not all(map(operator.le, bounds, bounds[1:])):
            return None
        return cls(index, starts, buffer, lengths, headings, plens, titles)


_TITLE_TOKENS: dict[str, tuple[str, ...]] = {}  # (titles recur: "Parameters", "Example", "Usage")


def compute(smap: SectionMap, lines: Sequence[str]) -> DocTerms:
    """The counts of a file from its section map and exact lines (withheld sections count nothing)."""
    from gitpilot.context.text import token_counts, tokens

    postings: dict[str, list[int]] = {}
    lengths: list[int] = []
    headings: list[list[str]] = []
    plens: list[int] = []
    titles: dict[str, list[int]] = {}
    for pos, sec in enumerate(smap.sections):
        if sec.title:
            known = _TITLE_TOKENS.get(sec.title)
            if known is None:
                known = tuple(tokens(sec.title))
                if len(_TITLE_TOKENS) < 100_000:
                    _TITLE_TOKENS[sec.title] = known
            own = list(known)
        else:
            own = []
        headings.append(own)
        for t in own:
            titles.setdefault(t, []).append(pos)
        plens.append((plens[sec.parent] if sec.parent is not None else 0) + len(own))
        if sec.withheld:
            lengths.append(0)
            continue
        counts = token_counts(range_text(lines, sec.start + (1 if sec.level else 0), sec.body_end))
        for t, n in counts.items():
            post = postings.get(t)
            if post is None:
                postings[t] = [pos, n]
            else:
                post += (pos, n)
        lengths.append(sum(counts.values()))
    return DocTerms.of(postings, lengths, headings, plens, titles)


class ObjectFiles:
    """Machine-local files named by a git object id, ``<dir>/<2 hex>/<the rest>``, read and
    written best effort (a store that cannot be written is only slower)."""

    def __init__(self, root: Path | None) -> None:
        self.root = root
        self._base = os.fspath(root) if root is not None else ""

    def _path(self, oid: str) -> Path | None:
        if self.root is None or len(oid) < 3 or not all(c in "0123456789abcdef" for c in oid):
            return None
        return self.root / oid[:2] / oid[2:]

    def read(self, oid: str) -> bytes | None:
        # (a string path and os calls: hundreds of reads a capsule, pathlib's costs add up)
        if not self._base or len(oid) < 3 or oid.strip("0123456789abcdef"):
            return None
        try:
            fd = os.open(f"{self._base}/{oid[:2]}/{oid[2:]}", os.O_RDONLY | _CLOEXEC)
        except OSError:
            return None
        try:
            chunks: list[bytes] = []
            while True:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    return b"".join(chunks)
                chunks.append(chunk)
        except OSError:
            return None
        finally:
            os.close(fd)

    def write(self, oid: str, data: bytes) -> None:
        path = self._path(oid)
        if path is None:
            return
        from gitpilot.fileio import atomic_write

        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, data)
        except OSError:
            pass


PACK_MIN = 32  # the statistics of at least this many files counted together go to one pack
MAX_PACKS = 8  # with this many packs, the next one holds them all and they go


class TermCache:
    """Per-blob term statistics under ``<git common dir>/pilot/terms/``: one file a blob, or packs
    of many (``pack-<digest>``: marshal of the layout and a dict of blob -> ``DocTerms.to_bytes``);
    with ``code`` (``cache.code_id()``), the place of the tree's record by token (``treeterms``) too."""

    def __init__(self, pilot_dir: Path | None, code: str = "") -> None:
        self.files = ObjectFiles(pilot_dir / "terms" if pilot_dir is not None else None)
        self.root = self.files.root
        self.code = code
        self._packed: dict[str, bytes] | None = None

    def _pack_names(self) -> list[str]:
        if self.root is None:
            return []
        try:
            return sorted(n for n in os.listdir(self.root) if n.startswith("pack-"))
        except OSError:
            return []

    def _read_pack(self, name: str) -> dict[str, bytes]:
        """A pack's entries (none when it cannot be read or is not one this layout wrote)."""
        try:
            with open(os.path.join(os.fspath(self.root or ""), name), "rb") as f:
                layout, entries = marshal.loads(f.read())
        except (OSError, ValueError, EOFError, TypeError):
            return {}
        if layout != LAYOUT or not isinstance(entries, dict):
            return {}
        return {k: v for k, v in entries.items() if isinstance(k, str) and isinstance(v, bytes)}

    def _packs(self) -> dict[str, bytes]:
        if self._packed is None:
            self._packed = {}
            for name in self._pack_names():
                self._packed.update(self._read_pack(name))
        return self._packed

    def tree_place(self, key_parts: Sequence[str]) -> tuple[str, str] | None:
        """Where the tree's record (``treeterms``) is kept, and its key (of ``key_parts``, the
        blobs, and the code); None without a place or a code."""
        code = self.code
        if self.root is None or not code:
            return None
        import blake3

        h = blake3.blake3()
        for blob in key_parts:
            h.update(blob.encode("ascii", "replace") + b"\n")
        h.update(code.encode("ascii", "replace"))
        return os.path.join(os.path.dirname(os.fspath(self.root)), "postings", f"tree-{code[:16]}"), h.hexdigest()

    def get(self, blob: str) -> DocTerms | None:
        data = self._packs().get(blob)
        got = None if data is None else DocTerms.from_bytes(data)
        if got is None:
            data = self.files.read(blob)
            got = None if data is None else DocTerms.from_bytes(data)
        return got

    def put(self, blob: str, terms: DocTerms) -> None:
        """Store ``terms`` (best effort: a cache that cannot be written is only slower)."""
        self.files.write(blob, terms.to_bytes())

    def put_all(self, entries: dict[str, DocTerms], live: Iterable[str] | None = None) -> None:
        """Store many: a file each when they are few, else one pack (best effort). When the packs
        are merged, only the entries of ``live`` blobs (the build's files) are kept, so the one
        pack a new task reads holds one tree's documents, not every version ever counted."""
        if self.root is None or not entries:
            return
        if len(entries) < PACK_MIN:
            for blob, terms in entries.items():
                self.put(blob, terms)
            return
        body = {blob: entries[blob].to_bytes() for blob in sorted(entries)}
        old = self._pack_names()
        if len(old) >= MAX_PACKS:  # one pack for all: the reader's file count stays small
            merged: dict[str, bytes] = {}
            for name in old:
                merged.update(self._read_pack(name))
            if live is not None:
                keep = set(live)
                merged = {blob: data for blob, data in merged.items() if blob in keep}
            merged.update(body)
            body = {blob: merged[blob] for blob in sorted(merged)}
        else:
            old = []
        import hashlib

        from gitpilot.fileio import atomic_write

        data = marshal.dumps((LAYOUT, body))
        name = "pack-" + hashlib.blake2b(data, digest_size=12).hexdigest()
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            atomic_write(self.root / name, data)
        except OSError:
            return
        for gone in old:
            if gone != name:
                try:
                    os.unlink(self.root / gone)
                except OSError:
                    pass
        if self._packed is not None:
            if old:
                self._packed = dict(body)
            else:
                self._packed.update(body)
