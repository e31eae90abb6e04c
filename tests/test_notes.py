"""The notes store: fan-out trees, CAS writes that lose nothing, union merges like git's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import REPO_ROOT, git, make_repo

from gitpilot.repo import Repo
from gitpilot.store.notes import NotesStore
from gitpilot.store.tasks import TaskStore, task_id

REF = "refs/notes/pilot/test"


def blobs(repo: Path, n: int) -> list[str]:
    return [git(repo, "hash-object", "-w", "--stdin", input=f"object {i}\n".encode()).strip() for i in range(n)]


def test_add_lines_writes_two_hex_fanout_readable_by_git(tmp_path: Path) -> None:
    path = make_repo(tmp_path / "r")
    oids = blobs(path, 3)
    store = NotesStore(Repo.discover(path), REF)
    store.add_lines({oids[0]: ["b", "a"], oids[1]: ["x"]}, "first")
    store.add_lines({oids[0]: ["a", "c"]}, "second")
    assert git(path, "notes", f"--ref={REF}", "show", oids[0]) == "a\nb\nc\n"
    assert store.read(oids[1]) == b"x\n"
    assert store.read(oids[2]) is None
    top = git(path, "ls-tree", REF).split("\n")
    assert all(line.split("\t")[1] in {oids[0][:2], oids[1][:2]} for line in top if line)
    assert git(path, "log", "--format=%s", REF).split() == ["second", "first"]


def test_reads_flat_notes_written_by_git_and_migrates_them(tmp_path: Path) -> None:
    path = make_repo(tmp_path / "r")
    oids = blobs(path, 2)
    git(path, "notes", f"--ref={REF}", "add", "-m", "from git", oids[0])
    assert git(path, "ls-tree", "--name-only", REF).strip() == oids[0]  # git wrote it flat
    store = NotesStore(Repo.discover(path), REF)
    assert store.read(oids[0]) == b"from git\n"
    store.add_lines({oids[1]: ["new"]}, "add")
    assert sorted(git(path, "ls-tree", "--name-only", REF).split()) == sorted({oids[0][:2], oids[1][:2]})
    assert git(path, "notes", f"--ref={REF}", "show", oids[0]) == "from git\n"
    assert dict(store.items()) == {oids[0]: b"from git\n", oids[1]: b"new\n"}


def test_merge_union_matches_git_cat_sort_uniq(tmp_path: Path) -> None:
    path = make_repo(tmp_path / "r")
    oids = blobs(path, 3)
    repo = Repo.discover(path)
    mine, theirs = NotesStore(repo, REF), NotesStore(repo, "refs/notes/pilot/other")
    mine.add_lines({oids[0]: ["1", "3"], oids[1]: ["m"]}, "mine")
    theirs.add_lines({oids[0]: ["2", "3"], oids[2]: ["t"]}, "theirs")
    # git's own merge on a copy of our ref, for comparison
    git(path, "update-ref", "refs/notes/gitmerge", REF)
    git(path, "notes", "--ref=refs/notes/gitmerge", "merge", "-s", "cat_sort_uniq", "refs/notes/pilot/other")
    assert mine.merge_union("refs/notes/pilot/other", "merge") == 2
    for oid in oids:
        assert git(path, "notes", f"--ref={REF}", "show", oid) == git(path, "notes", "--ref=refs/notes/gitmerge", "show", oid)
    assert mine.merge_union("refs/notes/pilot/other", "again") == 0


WRITER = """
import sys
from gitpilot.repo import Repo
from gitpilot.store.notes import NotesStore
repo = Repo.discover(sys.argv[1])
store = NotesStore(repo, sys.argv[2])
for i in range(int(sys.argv[4])):
    store.add_lines({sys.argv[3]: [f"writer-{sys.argv[5]}-{i}"]}, f"w{sys.argv[5]}-{i}")
"""


def test_eight_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    path = make_repo(tmp_path / "r")
    oid = blobs(path, 1)[0]
    env = {**__import__("os").environ, "PYTHONPATH": str(REPO_ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), REF, oid, "5", str(w)], env=env)
             for w in range(8)]
    assert [p.wait(timeout=120) for p in procs] == [0] * 8
    lines = git(path, "notes", f"--ref={REF}", "show", oid).split()
    assert sorted(lines) == sorted(f"writer-{w}-{i}" for w in range(8) for i in range(5))
    git(path, "fsck", "--no-progress")


def test_task_store_keeps_history_and_files(tmp_path: Path) -> None:
    path = make_repo(tmp_path / "r")
    store = TaskStore(Repo.discover(path))
    tid = task_id("Fix the bug")
    assert len(tid) == 64 and store.read(tid) is None
    store.write(tid, {"state.json": b"{}", "capsule.md": b"# c\n"}, "create")
    store.write(tid, {"state.json": b'{"status":"working"}'}, "update")
    assert store.read(tid) == {"state.json": b'{"status":"working"}', "capsule.md": b"# c\n"}
    assert git(path, "log", "--format=%s", f"refs/pilot/tasks/{tid}").split() == ["update", "create"]
    assert store.list_ids() == [tid]
