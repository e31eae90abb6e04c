"""Term statistics counted for many files at once are kept in one pack file, and read back from it
exactly: a build from the pack is the same bytes as a fresh one, a damaged pack is not trusted,
and packs do not pile up."""

from __future__ import annotations

import pickle
from pathlib import Path

from conftest import capsule_text, forget_capsules, git, make_repo

from gitpilot.context import terms as T
from gitpilot.context import treeterms as TT
from gitpilot.context.markdown import parse, split_lines

DOCS = {f"docs/topic{i:03d}.md": f"# Topic {i}\n\nThe cache of topic {i} expires.\n\n## Part\n\nMore on {i}.\n"
        for i in range(T.PACK_MIN + 8)}
FILES = {"AGENTS.md": "# Rules\n\nKeep changes small.\n", **DOCS, "src/cache.py": "def expire_entries():\n    pass\n"}
TASK = "Entries of topic 7 should expire after five minutes: change `expire_entries`"


_capsule = capsule_text
_forget_capsules = forget_capsules


def _stored(root: Path) -> dict[str, int]:
    terms = root / ".git" / "pilot" / "terms"
    return {str(p.relative_to(terms)): p.stat().st_mtime_ns for p in terms.rglob("*")
            if p.is_file() and not p.name.startswith("clean-")}


def test_a_cold_build_keeps_its_statistics_in_one_pack_and_a_new_task_reads_them(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", FILES)
    fresh = _capsule(root, TASK, use_cache=False)
    cold = _capsule(root, TASK)
    assert cold == fresh
    stored = _stored(root)
    assert len(stored) == 1 and next(iter(stored)).startswith("pack-")  # one file, not one a document
    _forget_capsules(root)
    assert _capsule(root, TASK) == fresh  # from the pack: the same bytes
    assert _stored(root) == stored  # read, nothing written again
    pack = root / ".git" / "pilot" / "terms" / next(iter(stored))
    pack.write_bytes(pack.read_bytes()[:100])  # damaged: not trusted, counted again
    _forget_capsules(root)
    assert _capsule(root, TASK) == fresh


def _docterms(n: int) -> dict[str, T.DocTerms]:
    out = {}
    for i in range(n):
        text = f"# Doc {i}\n\nWords of doc {i}, and caching.\n"
        lines = split_lines(text)
        out[f"{i:040x}"] = T.compute(parse(text, None, lines), lines)
    return out


def _fields(t: T.DocTerms) -> tuple[object, ...]:
    return (t.index, t.starts, t.buffer, t.lengths, t.headings, t.plens, t.title_postings)


def test_packs_are_merged_before_they_pile_up(tmp_path: Path) -> None:
    cache = T.TermCache(tmp_path / "pilot")
    batches = [dict(list(_docterms(T.PACK_MIN * (T.MAX_PACKS + 2)).items())[i::T.MAX_PACKS + 2])
               for i in range(T.MAX_PACKS + 2)]
    for batch in batches:
        cache.put_all(batch)
    packs = sorted((tmp_path / "pilot" / "terms").glob("pack-*"))
    assert 1 <= len(packs) <= T.MAX_PACKS
    reader = T.TermCache(tmp_path / "pilot")  # a new reader: everything from the files
    for batch in batches:
        for blob, want in batch.items():
            got = reader.get(blob)
            assert got is not None and _fields(got) == _fields(want)
    # a merge with the build's own files named keeps theirs (and the new ones), not the others'
    other = T.TermCache(tmp_path / "other")
    for batch in batches[: T.MAX_PACKS]:
        other.put_all(batch)
    other.put_all(batches[T.MAX_PACKS], live=list(batches[0]))
    assert len(list((tmp_path / "other" / "terms").glob("pack-*"))) == 1
    reader = T.TermCache(tmp_path / "other")
    assert all(reader.get(blob) is not None for blob in [*batches[0], *batches[T.MAX_PACKS]])
    assert all(reader.get(blob) is None for blob in batches[1])
    few = _docterms(3)
    cache.put_all({b: t for b, t in few.items()})  # a few: one file each, as before
    assert sorted(p.name for p in (tmp_path / "pilot" / "terms").glob("??") if p.is_dir())


# --- the tree's record: every candidate's statistics by token, in one file -----------------------

TREE_DOCS = {
    "AGENTS.md": "# Rules\n\nKeep changes small.\n",
    "docs/cache.md": "---\ntitle: Cache\n---\n# Cache expiry\n\nEntries expire. The `expire_entries` job runs.\n\n"
    "## Expiry of entries\n\nFive minutes by default; entries entries.\n\n### Tuning expiry\n\nSet it.\n",
    "docs/naïve.md": "Préambule sans titre, expiry.\n\n# Über expiry\n\nTexte: entries, caché.\n",
    "docs/empty.md": "",
    "docs/only-text.md": "No heading here, only entries and a cache.\n",
    "CHANGELOG.md": "# Changelog\n\n" + "".join(f"## 1.{i}.0\n\n- Cache entries expire {i}.\n\n" for i in range(40)),
    **{f"docs/topic{i:02d}.md": f"# Topic {i}\n\nThe cache of topic {i} expires.\n\n## Part\n\nMore on {i}.\n"
       for i in range(40)},
    "src/cache.py": "def expire_entries():\n    pass\n",
}


def _tree_file(root: Path) -> Path:
    kept = sorted((root / ".git" / "pilot" / "postings").glob("tree-*"))
    assert len(kept) == 1
    return kept[0]


def test_a_tree_record_answers_as_each_document_does(tmp_path: Path) -> None:
    docs = list(_docterms(5).values())
    for text in TREE_DOCS.values():
        lines = split_lines(text)
        docs.append(T.compute(parse(text, None, lines), lines))
    docs.append(T.DocTerms.from_bytes(docs[6].to_bytes()))  # as read back from the cache
    tree = TT.TreeTerms.read(TT.tree_record("key", docs), "key", [len(d.lengths) for d in docs])
    assert tree is not None
    words = {w for d in docs for w in d.postings} | {"", "nowhere", "a", "zzzz"}
    for d, want in enumerate(docs):
        got = tree.doc(d)
        assert all(got.has(w) == want.has(w) and list(got.post(w)) == list(want.post(w)) for w in words)
        asked = sorted(words) + ["nowhere", "a"]  # (in this order, a word twice)
        assert got.held(asked) == want.held(asked) == [w for w in asked if want.has(w)]
        assert (list(got.lengths), list(got.plens), got.title_postings) == (want.lengths, want.plens,
                                                                             want.title_postings)
        assert len(got.lengths) == len(want.lengths) and len(got.headings) == len(want.headings)
        assert [got.headings[i] for i in range(len(want.headings))] == want.headings
        assert (got.heads_total, got.length_total, got.plen_total) == (want.heads_total, want.length_total,
                                                                       want.plen_total)
        assert _fields(got.own()) == _fields(want) and got.postings == want.postings
        copied = pickle.loads(pickle.dumps(got))  # (bench fit --jobs sends cases to worker processes)
        assert _fields(copied) == _fields(want) and copied.held(asked) == want.held(asked)
    # another key, another layout, other section counts, damaged bytes: not used
    record = TT.tree_record("key", docs)
    counts = [len(d.lengths) for d in docs]
    assert TT.TreeTerms.read(record, "other", counts) is None
    assert TT.TreeTerms.read(record, "key", [*counts[:-1], counts[-1] + 1]) is None
    assert TT.TreeTerms.read(record, "key", counts[:-1]) is None
    assert TT.TreeTerms.read(record[: len(record) // 2], "key", counts) is None
    flipped = bytearray(record)
    flipped[len(record) // 2] ^= 0x01  # one bit of the contents: its digest no longer holds
    assert TT.TreeTerms.read(bytes(flipped), "key", counts) is None


def _fresh(root: Path, task: str) -> str:
    """The capsule a build with nothing kept on this machine gives."""
    import shutil

    kept, away = root / ".git" / "pilot", root / ".git" / "pilot-away"
    kept.mkdir(exist_ok=True)
    kept.rename(away)
    try:
        return _capsule(root, task, use_cache=False)
    finally:
        shutil.rmtree(kept, ignore_errors=True)
        away.rename(kept)


def test_a_new_task_reads_the_tree_record_and_a_changed_tree_makes_it_again(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", TREE_DOCS)
    tasks = [TASK, "The changelog should say when cache entries expire (`expire_entries`)"]
    fresh = {t: _fresh(root, t) for t in tasks}
    assert _capsule(root, tasks[0]) == fresh[tasks[0]]  # cold: counted, kept by blob
    assert not (root / ".git" / "pilot" / "postings").exists()  # (no tree record yet)
    for t in tasks:  # the second look: every statistic from the cache, the tree's record made
        _forget_capsules(root)
        assert _capsule(root, t) == fresh[t]
    kept = _tree_file(root)
    made = kept.stat().st_mtime_ns
    for t in tasks:  # read back, not written again
        _forget_capsules(root)
        assert _capsule(root, t) == fresh[t]
    assert kept.stat().st_mtime_ns == made
    # an edited document, committed (the same sections: only its blob tells the records apart):
    # another tree; its document counted, then its record made again; the capsule follows the edit
    (root / "docs" / "cache.md").write_text(TREE_DOCS["docs/cache.md"].replace("Set it.", "Set it in the changelog."))
    git(root, "commit", "-qam", "edit")
    edited = _fresh(root, tasks[1])
    assert edited != fresh[tasks[1]]
    _forget_capsules(root)
    assert _capsule(root, tasks[1]) == edited
    assert _tree_file(root).stat().st_mtime_ns == made
    _forget_capsules(root)
    assert _capsule(root, tasks[1]) == edited
    assert _tree_file(root).stat().st_mtime_ns != made
    _forget_capsules(root)
    assert _capsule(root, tasks[1]) == edited
    # edited again in the working tree only: not kept by blob, counted afresh
    (root / "docs" / "cache.md").write_text(TREE_DOCS["docs/cache.md"])
    _forget_capsules(root)
    assert _capsule(root, tasks[1]) == fresh[tasks[1]]
    (root / "docs" / "cache.md").write_text(TREE_DOCS["docs/cache.md"].replace("Set it.", "Set it in the changelog."))
    # damaged or foreign records are not used: the capsule is what a fresh build gives
    for damaged in (b"", b"\x00garbage", _tree_file(root).read_bytes()[:-10]):
        _tree_file(root).write_bytes(damaged)
        _forget_capsules(root)
        assert _capsule(root, tasks[1]) == edited

