"""The term statistics of one tree's candidate documents: ``terms_for_all``.

``terms.TermCache`` keeps each document's statistics (``terms.DocTerms``) by blob; a new task on
the same tree reads them all back from one record instead (``TreeTerms``, in
``<git common dir>/pilot/postings/tree-<code>``), asks it for its own few dozen words, and makes
no object of the rest. ``tree_record`` writes the record from the documents' own statistics;
``TreeTerms.read`` checks it before any of it is used; ``TreeTerms.doc`` answers as a document's
own ``DocTerms`` does.
"""

from __future__ import annotations

import marshal
import os
import sys
from array import array
from collections.abc import Iterable, Iterator, Sequence
from itertools import accumulate, chain
from typing import overload

from gitpilot.context.markdown import SectionMap
from gitpilot.context.terms import LAYOUT, PAIR_BYTES, UINT32, DocTerms, TermCache, compute


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
    return text, array(UINT32, accumulate(map(len, tokens), lambda at, n: at + n + 1, initial=0))


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
            blocks.append(view if i in (5, 13) else view.cast("I" if UINT32 == "I" else "L") if length % 4 == 0 else None)
        if at != len(body) or any(v is None for v in blocks):
            return None
        vo, ts, en, gb, nt, postings, to, tp, ns, ln, pl, totals, ho, heads = blocks
        assert vo is not None and ts is not None and en is not None and gb is not None and nt is not None
        assert postings is not None and to is not None and tp is not None and ns is not None
        assert ln is not None and pl is not None and totals is not None and ho is not None and heads is not None
        if not (_rising(vo, len(vocab)) and len(ts) == len(vo) and len(en) % 2 == 0 and _rising(ts, len(en) // 2)
                and len(postings) % PAIR_BYTES == 0):
            return None
        if not (ns.tolist() == list(counts) and len(nt) == n and len(gb) == sum(nt) + n):
            return None
        if not (len(ln) == len(pl) == sum(ns) and len(totals) == 3 * n and _rising(to, len(tp))
                and len(to) == sum(map(len, tkeys)) + 1 and len(ho) == n + 1 and _rising(ho, len(heads))):
            return None
        tree = cls(vocab, tkeys, [vo, ts, en, gb, nt, postings, to, tp, ns, ln, pl, totals, ho, heads])
        if tree.pbase[-1] != len(postings) // PAIR_BYTES:
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
        got = array(UINT32)
        if place < self.ntoks[d]:
            at, base = self.bbase[d] + place, self.pbase[d]
            got.frombytes(self.postings[(base + self.gbounds[at]) * PAIR_BYTES : (base + self.gbounds[at + 1]) * PAIR_BYTES])
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
    ntoks, n_secs, lengths, plens = array(UINT32), array(UINT32), array(UINT32), array(UINT32)
    totals = array(UINT32)
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
        array(UINT32, [0, *accumulate(len(by_token[t]) // 2 for t in vocab)]).tobytes(),
        array(UINT32, chain.from_iterable(map(by_token.__getitem__, vocab))).tobytes(),
        b"".join(dt.starts for dt in docs), ntoks.tobytes(), b"".join(dt.buffer for dt in docs),
        array(UINT32, accumulate(chain.from_iterable(map(len, dt.title_postings.values()) for dt in docs),
                                initial=0)).tobytes(),
        array(UINT32, chain.from_iterable(chain.from_iterable(dt.title_postings.values()) for dt in docs)).tobytes(),
        n_secs.tobytes(), lengths.tobytes(), plens.tobytes(), totals.tobytes(),
        array(UINT32, accumulate(map(len, heads), initial=0)).tobytes(), b"".join(heads),
    ]
    # (the words, the title tokens and each block's size, then the blocks, from a four-byte bound)
    meta = marshal.dumps((words, [list(dt.title_postings) for dt in docs], [len(b) for b in blocks]))
    pad = b"\0" * ((-(4 + len(meta))) % 4)
    payload = b"".join([len(meta).to_bytes(4, sys.byteorder), meta, pad, *blocks])
    return _tree_head(key) + blake3.blake3(payload).digest() + payload


def _tree_head(key: str) -> bytes:
    """What a tree's record starts with: its layout and key (then the digest of its contents)."""
    return marshal.dumps(((*LAYOUT, "tree"), key))


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
            got = self._open[token] = array(UINT32) if place is None else self.tree.post(self.d, place)
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


def read_tree(cache: TermCache, blobs: Sequence[str], counts: Sequence[int]) -> TreeTerms | None:
    """The tree's record for exactly these blobs (in this order), whose documents have these
    section counts; None when there is none, or it is another's, or it does not hold together."""
    where = cache.tree_place(blobs) if blobs else None
    if where is None:
        return None
    try:
        with open(where[0], "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    return TreeTerms.read(data, where[1], counts)


def keep_tree(cache: TermCache, blobs: Sequence[str], docs: Sequence[DocTerms]) -> None:
    """Keep the tree's record of ``docs`` (the statistics of ``blobs``; best effort, one tree)."""
    where = cache.tree_place(blobs) if blobs else None
    if where is None:
        return
    from gitpilot.fileio import atomic_write

    try:
        os.makedirs(os.path.dirname(where[0]), exist_ok=True)
        atomic_write(where[0], tree_record(where[1], docs))
    except (OSError, ValueError):
        pass


def terms_for_all(
    cache: TermCache, files: Sequence[tuple[str, SectionMap, Sequence[str], bool]]
) -> list[DocTerms]:
    """The statistics of each file (blob, map, lines, cacheable): those of the cacheable files from
    the tree's record (``TreeTerms``) when it holds exactly these blobs, else from ``cache`` when
    its blob is known and the entry fits the map; the others counted side by side (``parallel``:
    each file's counts depend on it alone), then stored; when none had to be counted, the tree's
    record is made for the next task."""
    from gitpilot.context.parallel import map_all

    keyed = [i for i, (blob, _smap, _lines, cacheable) in enumerate(files) if cacheable and blob]
    tree = read_tree(cache, [files[i][0] for i in keyed], [files[i][1].count for i in keyed])
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
        keep_tree(cache, [files[i][0] for i in keyed], [done[i] for i in keyed])
    return done
