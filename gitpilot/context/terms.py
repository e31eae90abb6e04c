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
a file with a credential in it is never cached at all.
"""

from __future__ import annotations

import marshal
import operator
import os
import sys
from array import array
from collections.abc import Iterable, Iterator, Sequence
from itertools import accumulate, chain
from pathlib import Path
from typing import overload

from gitpilot.context.markdown import SectionMap, range_text

FORMAT = 4  # 4: one index string and one buffer a file (3: a dict of packed postings; 2: lists)
TermCounts = dict[str, int]
# Four-byte unsigned integers in this machine's order (the cache is machine-local); a record of
# another layout is not read.
_CODE = next(c for c in "IL" if array(c).itemsize == 4)
_LAYOUT = (FORMAT, _CODE, sys.byteorder)
_PAIR = 8  # bytes of one (section, count) posting
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
        starts = array(_CODE, [0, *(n >> 1 for n in accumulate(map(len, postings.values())))])
        buffer = array(_CODE, chain.from_iterable(postings.values())).tobytes()
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
            got = array(_CODE)
            places = self._places
            i = (places if places is not None else self._where()).get(token)
            if i is not None:
                bounds = self._starts
                if bounds is None:
                    unpacked = array(_CODE)
                    unpacked.frombytes(self.starts)
                    bounds = self._starts = unpacked
                got.frombytes(self.buffer[bounds[i] * _PAIR : bounds[i + 1] * _PAIR])
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
        return marshal.dumps((_LAYOUT, self.index, self.starts, self.buffer, self.lengths, self.headings, self.plens,
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
        if layout != _LAYOUT or not (len(lengths) == len(headings) == len(plens)):
            return None
        if not (isinstance(index, str) and isinstance(starts, bytes) and isinstance(buffer, bytes)):
            return None
        if not index.startswith("\n") or not index.endswith("\n"):
            return None
        bounds = array(_CODE)
        try:
            bounds.frombytes(starts)
        except ValueError:
            return None
        # one bound a token and one more, rising from 0 to the buffer's last pair
        if len(bounds) != index.count("\n") or bounds[0] != 0 or bounds[-1] * _PAIR != len(buffer):
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
    with ``code`` (``cache.code_id()``), the tree's record by token (``TreeTerms``) too."""

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
        if layout != _LAYOUT or not isinstance(entries, dict):
            return {}
        return {k: v for k, v in entries.items() if isinstance(k, str) and isinstance(v, bytes)}

    def _packs(self) -> dict[str, bytes]:
        if self._packed is None:
            self._packed = {}
            for name in self._pack_names():
                self._packed.update(self._read_pack(name))
        return self._packed

    def _tree_path(self, key_parts: Sequence[str]) -> tuple[str, str] | None:
        """Where the tree's record is, and its key (of ``key_parts``, the blobs, and the code)."""
        code = self.code
        if self.root is None or not code:
            return None
        import blake3

        h = blake3.blake3()
        for blob in key_parts:
            h.update(blob.encode("ascii", "replace") + b"\n")
        h.update(code.encode("ascii", "replace"))
        return os.path.join(os.path.dirname(os.fspath(self.root)), "postings", f"tree-{code[:16]}"), h.hexdigest()

    def tree(self, blobs: Sequence[str], counts: Sequence[int]) -> TreeTerms | None:
        """The tree's record for exactly these blobs (in this order), whose documents have these
        section counts; None when there is none, or it is another's, or it does not hold together."""
        where = self._tree_path(blobs) if blobs else None
        if where is None:
            return None
        try:
            with open(where[0], "rb") as fh:
                data = fh.read()
        except OSError:
            return None
        return TreeTerms.read(data, where[1], counts)

    def put_tree(self, blobs: Sequence[str], docs: Sequence[DocTerms]) -> None:
        """Keep the tree's record of ``docs`` (the statistics of ``blobs``; best effort, one tree)."""
        where = self._tree_path(blobs) if blobs else None
        if where is None:
            return
        from gitpilot.fileio import atomic_write

        try:
            os.makedirs(os.path.dirname(where[0]), exist_ok=True)
            atomic_write(where[0], tree_record(where[1], docs))
        except (OSError, ValueError):
            pass

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

        data = marshal.dumps((_LAYOUT, body))
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


def terms_for(
    cache: TermCache, blob: str, smap: SectionMap, lines: Sequence[str], *, cacheable: bool
) -> DocTerms:
    """The counts of one file: from the cache when its blob is known and the entry fits the map."""
    return terms_for_all(cache, [(blob, smap, lines, cacheable)])[0]


def terms_for_all(
    cache: TermCache, files: Sequence[tuple[str, SectionMap, Sequence[str], bool]]
) -> list[DocTerms]:
    """``terms_for`` of each (blob, map, lines, cacheable): those of the cacheable files from the
    tree's record (``TreeTerms``) when it holds exactly these blobs, else from the cache, those not
    in the cache counted side by side (``parallel``: each file's counts depend on it alone), then
    stored; when none had to be counted, the tree's record is made for the next task."""
    from gitpilot.context.parallel import map_all

    keyed = [i for i, (blob, _smap, _lines, cacheable) in enumerate(files) if cacheable and blob]
    tree = cache.tree([files[i][0] for i in keyed], [files[i][1].count for i in keyed])
    out: list[DocTerms | None] = [None] * len(files)
    if tree is not None:
        for j, i in enumerate(keyed):
            out[i] = tree.doc(j)
    else:
        for i in keyed:
            got = cache.get(files[i][0])
            out[i] = got if got is not None and len(got.lengths) == files[i][1].count else None
    todo = [i for i, got in enumerate(out) if got is None]

    def count(i: int) -> DocTerms:
        _blob, smap, lines, _cacheable = files[i]
        return compute(smap, lines)

    store: dict[str, DocTerms] = {}
    for i, fresh in zip(todo, map_all(count, todo, DocTerms.to_bytes, DocTerms.from_bytes), strict=True):
        out[i] = fresh
        blob, _smap, _lines, cacheable = files[i]
        if cacheable and blob:
            store[blob] = fresh
    cache.put_all(store, live=[blob for blob, _smap, _lines, _cacheable in files if blob])
    done = [t for t in out if t is not None]
    if tree is None and not store:
        # (made on the second look at a tree, when every statistic came from the cache: a build
        # that counted some just now, as a cold one, does not also pay for the tree's record)
        cache.put_tree([files[i][0] for i in keyed], [done[i] for i in keyed])
    return done


# --- the statistics of one tree's candidates, by token -----------------------------------------


def _rising(bounds: array[int] | memoryview, last: int) -> bool:
    """Bounds that start at 0, never fall, and end at ``last``."""
    if not (bounds and bounds[0] == 0 and bounds[-1] == last):
        return False
    listed = bounds.tolist()
    return listed == sorted(listed)  # (never falling: sorted already; a C pass, not a call a pair)


def _words(tokens: Sequence[str]) -> tuple[str, array[int]]:
    """Sorted tokens as one string, each ended by a newline, and where each one starts (one more
    bound at the end)."""
    text = "\n".join(tokens) + "\n" if tokens else ""
    return text, array(_CODE, accumulate(map(len, tokens), lambda at, n: at + n + 1, initial=0))


def _find(text: str, bounds: array[int] | memoryview, token: str) -> int | None:
    """The place of ``token`` among the sorted tokens of ``_words`` (None when it is not there)."""
    lo, hi = 0, len(bounds) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if text[bounds[mid] : bounds[mid + 1] - 1] < token:
            lo = mid + 1
        else:
            hi = mid
    return lo if lo < len(bounds) - 1 and text[bounds[lo] : bounds[lo + 1] - 1] == token else None


class TreeTerms:
    """The term statistics of one tree's candidate documents in one record, by token
    (``<git common dir>/pilot/postings/tree-<code>``): which documents hold each token and at which
    place of their own statistics, and their postings; each document's section columns (tokens,
    heading-path length), each section's title tokens and each document's title postings.

    A new task asks a few dozen words of every document: read document by document (``DocTerms``)
    that is every document's whole vocabulary made into objects (vercel/ai: 750 files, 188,000
    token places, ~75 ms); here it is one read and the words asked. ``doc(d)`` answers as the
    document's own ``DocTerms`` does (the same postings, columns, titles and totals), each part
    made when first asked. The record is kept for exactly the documents' blobs, in their order,
    and the code (``cache.code_id``); it is made from the documents' own statistics and holds the
    digest of its contents, and its counts and bounds are checked when it is read: one that does
    not hold together is not used."""

    def __init__(self, vocab: str, tkeys: list[list[str]], blocks: Sequence[memoryview]) -> None:
        (self.voffs, self.tok_starts, self.entries, self.gbounds, self.ntoks, self.postings, self.tofs, self.tpos,
         self.counts, self.lengths, self.plens, self.totals, self.hofs, self.heads) = blocks
        self.vocab, self.tkeys = vocab, tkeys
        self.tbase = [0, *accumulate(map(len, tkeys))]
        # (totals: each document's title tokens, section tokens and heading-path lengths)
        self.sbase = [0, *accumulate(self.counts)]
        self.bbase = [0, *accumulate(n + 1 for n in self.ntoks)]
        self.pbase = [0, *accumulate(self.gbounds[b - 1] for b in self.bbase[1:])]
        self.tokens: dict[str, dict[int, int]] = {}  # token -> {document: its place there}
        self._held: dict[tuple[str, ...], dict[int, list[str]]] = {}

    @classmethod
    def read(cls, data: bytes, key: str, counts: Sequence[int]) -> TreeTerms | None:
        """The record in ``data`` when it is this layout's, for ``key``, its digest is its
        contents', it holds documents with these section counts, and it holds together; else None.
        Its columns are read where they lie in ``data`` (views of it), not copied."""
        import blake3

        head = _tree_head(key)
        body = memoryview(data)[len(head) + 32 :]
        if data[: len(head)] != head or blake3.blake3(body).digest() != data[len(head) : len(head) + 32]:
            return None
        try:
            size = int.from_bytes(body[:4], sys.byteorder)
            meta = marshal.loads(body[4 : 4 + size])
        except (ValueError, EOFError, TypeError):
            return None
        if not (isinstance(meta, tuple) and len(meta) == 3):
            return None
        vocab, tkeys, sizes = meta
        n = len(counts)
        if not (isinstance(vocab, str) and isinstance(tkeys, list) and len(tkeys) == n
                and all(type(k) is list for k in tkeys) and isinstance(sizes, list) and len(sizes) == 14
                and all(type(x) is int and x >= 0 for x in sizes)):
            return None
        at = 4 + size + (-(4 + size)) % 4
        blocks = []
        for i, length in enumerate(sizes):
            view = body[at : at + length]
            at += length
            blocks.append(view if i in (5, 13) else view.cast("I" if _CODE == "I" else "L") if length % 4 == 0 else None)
        if at != len(body) or any(v is None for v in blocks):
            return None
        vo, ts, en, gb, nt, postings, to, tp, ns, ln, pl, totals, ho, heads = blocks
        assert vo is not None and ts is not None and en is not None and gb is not None and nt is not None
        assert postings is not None and to is not None and tp is not None and ns is not None
        assert ln is not None and pl is not None and totals is not None and ho is not None and heads is not None
        if not (_rising(vo, len(vocab)) and len(ts) == len(vo) and len(en) % 2 == 0 and _rising(ts, len(en) // 2)
                and len(postings) % _PAIR == 0):
            return None
        if not (ns.tolist() == list(counts) and len(nt) == n and len(gb) == sum(nt) + n):
            return None
        if not (len(ln) == len(pl) == sum(ns) and len(totals) == 3 * n and _rising(to, len(tp))
                and len(to) == sum(map(len, tkeys)) + 1 and len(ho) == n + 1 and _rising(ho, len(heads))):
            return None
        tree = cls(vocab, tkeys, [vo, ts, en, gb, nt, postings, to, tp, ns, ln, pl, totals, ho, heads])
        if tree.pbase[-1] != len(postings) // _PAIR:
            return None
        return tree

    def doc(self, d: int) -> TreeDocTerms:
        return TreeDocTerms(self, d)

    def token_docs(self, token: str) -> dict[int, int]:
        """The documents whose sections' text holds ``token``, each with the token's place in its
        own statistics (the first, as ``DocTerms`` finds it)."""
        got = self.tokens.get(token)
        if got is None:
            i = _find(self.vocab, self.voffs, token)
            if i is None:
                got = {}
            else:
                pairs = self.entries[2 * self.tok_starts[i] : 2 * self.tok_starts[i + 1]]
                got = dict(zip(reversed(pairs[0::2]), reversed(pairs[1::2]), strict=True))
            self.tokens[token] = got
        return got

    def held(self, words: tuple[str, ...]) -> dict[int, list[str]]:
        """For each document, those of ``words``, in their order, that its sections' text holds
        (worked out once for these words, from the documents of each)."""
        got = self._held.get(words)
        if got is None:
            got = self._held[words] = {}
            for t in words:
                for d in self.token_docs(t):
                    found = got.get(d)
                    if found is None:
                        got[d] = [t]
                    else:
                        found.append(t)
        return got

    def title_sections(self, entry: int) -> list[int]:
        """The sections of a title postings entry (``tkeys``' tokens, one after the other)."""
        return self.tpos[self.tofs[entry] : self.tofs[entry + 1]].tolist()

    def post(self, d: int, place: int) -> array[int]:
        """The postings of the token at ``place`` of document ``d``'s statistics."""
        got = array(_CODE)
        if place < self.ntoks[d]:
            at, base = self.bbase[d] + place, self.pbase[d]
            got.frombytes(self.postings[(base + self.gbounds[at]) * _PAIR : (base + self.gbounds[at + 1]) * _PAIR])
        return got

    def headings(self, d: int) -> list[list[str]]:
        """Each section's title tokens, of document ``d``."""
        try:
            got = marshal.loads(self.heads[self.hofs[d] : self.hofs[d + 1]])
        except (ValueError, EOFError, TypeError):
            got = None
        if not (isinstance(got, list) and len(got) == self.counts[d]):
            raise ValueError("a machine-local record of term statistics does not load")
        return got


def tree_record(key: str, docs: Sequence[DocTerms]) -> bytes:
    """The ``TreeTerms`` record of ``docs`` (each one's own statistics) for ``key``."""
    import blake3

    by_token: dict[str, list[int]] = {}
    get = by_token.get
    ntoks, n_secs, lengths, plens = array(_CODE), array(_CODE), array(_CODE), array(_CODE)
    totals = array(_CODE)
    for d, dt in enumerate(docs):
        names = dt.index.split("\n")[1:-1]
        for place, token in enumerate(names):
            got = get(token)
            if got is None:
                by_token[token] = [d, place]
            else:
                got += (d, place)
        ntoks.append(len(names))
        n_secs.append(len(dt.lengths))
        lengths.extend(dt.lengths)
        plens.extend(dt.plens)
        totals.extend((dt.heads_total, dt.length_total, dt.plen_total))
    vocab = sorted(by_token)
    words, voffs = _words(vocab)
    heads = [marshal.dumps(dt.headings) for dt in docs]
    blocks = [
        voffs.tobytes(),
        array(_CODE, [0, *accumulate(len(by_token[t]) // 2 for t in vocab)]).tobytes(),
        array(_CODE, chain.from_iterable(map(by_token.__getitem__, vocab))).tobytes(),
        b"".join(dt.starts for dt in docs), ntoks.tobytes(), b"".join(dt.buffer for dt in docs),
        array(_CODE, accumulate(chain.from_iterable(map(len, dt.title_postings.values()) for dt in docs),
                                initial=0)).tobytes(),
        array(_CODE, chain.from_iterable(chain.from_iterable(dt.title_postings.values()) for dt in docs)).tobytes(),
        n_secs.tobytes(), lengths.tobytes(), plens.tobytes(), totals.tobytes(),
        array(_CODE, accumulate(map(len, heads), initial=0)).tobytes(), b"".join(heads),
    ]
    # (the words, the title tokens and each block's size, then the blocks, from a four-byte bound)
    meta = marshal.dumps((words, [list(dt.title_postings) for dt in docs], [len(b) for b in blocks]))
    pad = b"\0" * ((-(4 + len(meta))) % 4)
    payload = b"".join([len(meta).to_bytes(4, sys.byteorder), meta, pad, *blocks])
    return _tree_head(key) + blake3.blake3(payload).digest() + payload


def _tree_head(key: str) -> bytes:
    """What a tree's record starts with: its layout and key (then the digest of its contents)."""
    return marshal.dumps(((*_LAYOUT, "tree"), key))


class _Column(Sequence[int]):
    """One document's slice of a column of the tree's sections (``lengths``, ``plens``)."""

    __slots__ = ("col", "base", "size", "_own")

    def __init__(self, col: array[int] | memoryview, base: int, size: int) -> None:
        self.col, self.base, self.size = col, base, size
        self._own: list[int] | None = None

    def all(self) -> list[int]:
        got = self._own
        if got is None:
            got = self._own = self.col[self.base : self.base + self.size].tolist()
        return got

    def __len__(self) -> int:
        return self.size

    @overload
    def __getitem__(self, i: int) -> int: ...

    @overload
    def __getitem__(self, i: slice) -> list[int]: ...

    def __getitem__(self, i: int | slice) -> int | list[int]:
        return self.all()[i]

    def __iter__(self) -> Iterator[int]:
        return iter(self.all())


class _Headings(Sequence[list[str]]):
    """One document's sections' title tokens, split from the tree's record when first asked; the
    list then takes this one's place in the document's statistics (``headings``)."""

    __slots__ = ("owner", "size")

    def __init__(self, owner: TreeDocTerms, size: int) -> None:
        self.owner, self.size = owner, size

    def all(self) -> list[list[str]]:
        got = self.owner.tree.headings(self.owner.d)
        self.owner.headings = got
        return got

    def __len__(self) -> int:
        return self.size

    @overload
    def __getitem__(self, i: int) -> list[str]: ...

    @overload
    def __getitem__(self, i: slice) -> list[list[str]]: ...

    def __getitem__(self, i: int | slice) -> list[str] | list[list[str]]:
        return self.all()[i]

    def __iter__(self) -> Iterator[list[str]]:
        return iter(self.all())


class _Titles(dict[str, list[int]]):
    """One document's title postings (title token -> its sections, once an occurrence), a dict
    whose sections are read from the tree's record when a token's are first asked: whether a
    token is there is the dict's own look-up (every query word of every document asks), the
    sections only for the few that are. Every other way to its values reads them all first."""

    __slots__ = ("tree",)

    def __init__(self, tree: TreeTerms, d: int) -> None:
        keys = tree.tkeys[d]
        # (each token's entry, until its sections are read)
        super().__init__(zip(keys, range(tree.tbase[d], tree.tbase[d] + len(keys)), strict=True))  # type: ignore[arg-type]
        self.tree = tree

    def __getitem__(self, token: str) -> list[int]:
        got: list[int] | int = dict.__getitem__(self, token)
        if type(got) is int:
            got = self.tree.title_sections(got)
            dict.__setitem__(self, token, got)
        return got  # type: ignore[return-value]

    def _read(self) -> None:
        for token in dict.__iter__(self):
            self[token]

    def get(self, token: str, default: object = None) -> object:  # type: ignore[override]
        return self[token] if token in self else default

    def __iter__(self) -> Iterator[str]:  # (not dict's: a copy then reads each value through __getitem__)
        return dict.__iter__(self)

    def items(self):  # type: ignore[no-untyped-def]
        self._read()
        return dict.items(self)

    def values(self):  # type: ignore[no-untyped-def]
        self._read()
        return dict.values(self)

    def copy(self) -> dict[str, list[int]]:
        self._read()
        return dict(dict.items(self))

    def __eq__(self, other: object) -> bool:
        self._read()
        if isinstance(other, _Titles):
            other._read()
        return dict.__eq__(self, other)

    def __repr__(self) -> str:
        self._read()
        return dict.__repr__(self)


class TreeDocTerms(DocTerms):
    """One document's statistics from the tree's record (``TreeTerms.doc``): what its own
    ``DocTerms`` answers, each part made when first asked."""

    __slots__ = ("tree", "d", "_tokens")

    def __init__(self, tree: TreeTerms, d: int) -> None:  # (not DocTerms.__init__: nothing to unpack)
        self.tree, self.d = tree, d
        self._tokens = tree.tokens.get
        a, b = tree.sbase[d], tree.sbase[d + 1]
        self.lengths = _Column(tree.lengths, a, b - a)  # type: ignore[assignment]
        self.plens = _Column(tree.plens, a, b - a)  # type: ignore[assignment]
        self.headings = _Headings(self, b - a)  # type: ignore[assignment]
        self.title_postings = _Titles(tree, d)
        self.heads_total, self.length_total, self.plen_total = tree.totals[3 * d : 3 * d + 3]
        self._open = {}

    def has(self, token: str) -> bool:
        docs = self._tokens(token)
        return self.d in (docs if docs is not None else self.tree.token_docs(token))

    def held(self, words: Iterable[str]) -> list[str]:
        return list(self.tree.held(tuple(words)).get(self.d, ()))

    def post(self, token: str) -> Sequence[int]:
        got = self._open.get(token)
        if got is None:
            place = self.tree.token_docs(token).get(self.d)
            got = self._open[token] = array(_CODE) if place is None else self.tree.post(self.d, place)
        return got

    def own(self) -> DocTerms:
        """The document's statistics as its own ``DocTerms`` (for tools and tests)."""
        tree, d = self.tree, self.d
        held = []
        for i in range(len(tree.voffs) - 1):
            token = tree.vocab[tree.voffs[i] : tree.voffs[i + 1] - 1]
            place = tree.token_docs(token).get(d)
            if place is not None:
                held.append((place, token))
        postings = {t: list(self.post(t)) for _place, t in sorted(held)}
        return DocTerms.of(postings, list(self.lengths), [list(h) for h in self.headings], list(self.plens),
                           dict(self.title_postings))

    @property
    def postings(self) -> dict[str, list[int]]:
        return self.own().postings

    def to_bytes(self) -> bytes:
        return self.own().to_bytes()

    def _state(self) -> tuple[object, ...]:
        return self.own()._state()

    def __reduce__(self) -> tuple[object, ...]:
        """Pickled as the document's own ``DocTerms`` (another process has no tree record): the
        inherited state would be handed to this class's constructor, which takes the tree."""
        return (DocTerms, self._state())


class CleanBlobs:
    """Blob ids whose text holds no credential format, as ``redact.contains_secret`` says: a file
    whose blob is known clean is not scanned again. The verdict belongs to the redaction rules, so
    the list is kept per digest of ``gitpilot/redact.py`` (new rules, a new list)."""

    def __init__(self, pilot_dir: Path | None) -> None:
        self.path: Path | None = None
        self.known: set[str] = set()
        self.new: set[str] = set()
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
