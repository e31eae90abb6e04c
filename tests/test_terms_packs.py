"""Term statistics counted for many files at once are kept in one pack file, and read back from it
exactly: a build from the pack is the same bytes as a fresh one, a damaged pack is not trusted,
and packs do not pile up."""

from __future__ import annotations

from pathlib import Path

from conftest import capsule_text, forget_capsules, make_repo

from gitpilot.context import terms as T
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
