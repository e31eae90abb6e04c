"""``Repo.update_ref_retrying``: the one compare-and-swap retry behind the notes and task stores.

A writer that loses the race builds again on the winner's value, so neither update is lost;
a lock left by a killed git is named at once instead of retried into a timeout.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO_ROOT, git, make_repo

from gitpilot.errors import StaleLock
from gitpilot.repo import EMPTY_TREE, Repo, TreeEntry
from gitpilot.store.tasks import TaskStore, task_id

REF = "refs/pilot/test-cas"


def _log(path: Path, ref: str) -> list[str]:
    return git(path, "log", "--format=%s", ref).split("\n")[:-1]


def test_a_writer_that_loses_the_race_builds_again_on_the_winners_update(tmp_path: Path) -> None:
    path = make_repo(tmp_path / "r")
    repo = Repo.discover(path)
    repo.update_ref_retrying(REF, lambda old: repo.commit_tree(EMPTY_TREE, [], "base"), "base")
    seen: list[str | None] = []

    def build(old: str | None) -> str:
        seen.append(old)
        if len(seen) == 1:  # another writer lands between our read and our swap
            theirs = git(path, "commit-tree", "-p", str(old), "-m", "theirs", EMPTY_TREE).strip()
            git(path, "update-ref", REF, theirs, str(old))
        assert old is not None
        return repo.commit_tree(EMPTY_TREE, [old], "mine")

    tip = repo.update_ref_retrying(REF, build, "mine")
    assert len(seen) == 2 and seen[1] != seen[0]  # built again, on the winner's commit
    assert tip == repo.rev_parse(REF)
    assert _log(path, REF) == ["mine", "theirs", "base"]


def test_a_record_said_absent_that_another_writer_made_meanwhile_is_built_on_not_replaced(tmp_path: Path) -> None:
    # a new task's capsule looked for its record and found none; another process wrote one
    # before the capsule's own write: that write must keep the other's files and history
    path = make_repo(tmp_path / "r")
    repo = Repo.discover(path)
    store = TaskStore(repo)
    tid = task_id("a task written twice at once\n")
    theirs = TaskStore(Repo.discover(path)).write(tid, {"session.json": b"{}\n"}, "pilot: session")
    mine = store.write(tid, {"capsule.md": b"# Capsule\n"}, "pilot: capsule", absent=True)
    ref = f"refs/pilot/tasks/{tid}"
    assert repo.rev_parse(ref) == mine != theirs
    assert _log(path, ref) == ["pilot: capsule", "pilot: session"]
    assert git(path, "ls-tree", "--name-only", ref).split() == ["capsule.md", "session.json"]
    # said absent and really absent: written at once, without a parent
    other = task_id("a task written once\n")
    store.write(other, {"capsule.md": b"# Other\n"}, "pilot: capsule", absent=True)
    assert _log(path, f"refs/pilot/tasks/{other}") == ["pilot: capsule"]


def test_nothing_to_change_leaves_the_ref_as_it_is(tmp_path: Path) -> None:
    path = make_repo(tmp_path / "r")
    repo = Repo.discover(path)
    assert repo.update_ref_retrying(REF, lambda old: None, "nothing") is None
    assert repo.rev_parse(REF) is None
    first = repo.update_ref_retrying(REF, lambda old: repo.commit_tree(EMPTY_TREE, [], "one"), "one")
    assert repo.update_ref_retrying(REF, lambda old: None, "nothing") == first == repo.rev_parse(REF)
    assert _log(path, REF) == ["one"]


TASK_WRITER = """
import sys
from pathlib import Path
from gitpilot.repo import Repo
from gitpilot.store.tasks import TaskStore
repo, tid, who, n, go = Repo.discover(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), Path(sys.argv[5])
while not go.exists():
    pass
for i in range(n):
    TaskStore(repo).write(tid, {f"{who}-{i}.txt": f"{who} {i}\\n".encode()}, f"{who} {i}")
"""


def test_two_processes_writing_one_task_record_lose_no_file(tmp_path: Path) -> None:
    path = make_repo(tmp_path / "r")
    tid = task_id("Race on one record")
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    writers = [subprocess.Popen([sys.executable, "-c", TASK_WRITER, str(path), tid, who, "12", str(go)], env=env)
               for who in ("a", "b")]
    time.sleep(0.5)  # both are waiting: start them together
    go.touch()
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    files = TaskStore(Repo.discover(path)).read(tid)
    want = {f"{who}-{i}.txt": f"{who} {i}\n".encode() for who in ("a", "b") for i in range(12)}
    assert files == want
    assert sorted(_log(path, f"refs/pilot/tasks/{tid}")) == sorted(f"{who} {i}" for who in "ab" for i in range(12))


def test_a_stale_lock_on_a_task_ref_is_named_at_once_and_the_record_is_kept(tmp_path: Path) -> None:
    path = make_repo(tmp_path / "r")
    store = TaskStore(Repo.discover(path))
    tid = task_id("Locked record")
    before = store.write(tid, {"task.md": b"first\n"}, "first")
    lock = path / ".git" / "refs" / "pilot" / "tasks" / f"{tid}.lock"
    lock.write_text("")
    old = time.time() - 60
    os.utime(lock, (old, old))
    start = time.monotonic()
    with pytest.raises(StaleLock) as caught:
        store.write(tid, {"task.md": b"second\n"}, "second")
    assert time.monotonic() - start < 5
    assert str(caught.value).startswith(f"refs/pilot/tasks/{tid} is locked by {lock}, 60 s old: ")
    assert str(caught.value).endswith(f"if no git is running here, remove it (rm '{lock}')")
    assert store.tip(tid) == before and store.read(tid) == {"task.md": b"first\n"}


@pytest.mark.parametrize("date", ["1700000000 +0200", "@1700000000 -0130", None])
def test_a_task_record_is_the_commit_pygit2_would_write_with_the_users_identity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, date: str | None
) -> None:
    """The record is written with stock git (no pygit2 import on a capsule build): the same
    blobs, tree and commit, the configured identity, git's pinned date or now."""
    path = make_repo(tmp_path / "r")
    if date is None:
        monkeypatch.delenv("GIT_COMMITTER_DATE", raising=False)
    else:
        monkeypatch.setenv("GIT_COMMITTER_DATE", date)
    git(path, "config", "user.name", "Rec Order")  # the configured name, not GIT_AUTHOR_NAME
    repo = Repo.discover(path)
    files = {"capsule.md": b"# capsule\n", "manifest.json": b"{}\n", "task.md": "t\u00e9che\n".encode()}
    tid = task_id("a task")
    before = int(time.time())
    tip = TaskStore(repo).write(tid, files, "pilot: capsule")
    assert TaskStore(repo).read(tid) == files
    head = git(path, "cat-file", "commit", tip)
    assert "\nauthor Rec Order <ada@example.com> " in "\n" + head and head.endswith("\n\npilot: capsule")
    if date is not None:
        expected = Repo.discover(path)
        tree = expected.write_tree(
            TreeEntry(k.encode(), 0o100644, expected.create_blob(v)) for k, v in sorted(files.items()))
        assert tip == expected.commit_tree(tree, [], "pilot: capsule")
    else:
        when = int(head.split("\ncommitter ", 1)[1].split("\n", 1)[0].rsplit(" ", 2)[1])
        assert before <= when <= int(time.time()) + 1
    # A second write on top keeps the first as its parent; the same files again write nothing.
    again = TaskStore(repo).write(tid, {"state.json": b"{}"}, "pilot: state")
    assert git(path, "rev-parse", f"{again}^").strip() == tip
    assert TaskStore(repo).write(tid, {"state.json": b"{}"}, "pilot: state") == again


def test_a_record_write_stopped_part_way_leaves_no_git_waiting(tmp_path: Path) -> None:
    """The blobs are hashed by git processes started side by side; when one fails part-way (a
    Ctrl-C lands the same way) the ones still waiting for their input are ended, not left
    blocked on a pipe nobody will write to."""
    repo = Repo.discover(make_repo(tmp_path / "r"))

    def hash_objects() -> set[int]:
        me = str(os.getpid())
        found = set()
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if stat.rsplit(")", 1)[1].split()[1] == me and b"hash-object" in cmd:
                found.add(int(pid))
        return found

    files = [("a.md", b"first\n"), ("b.md", "not bytes"), ("c.md", b"third\n"), ("d.md", b"fourth\n")]
    with pytest.raises(TypeError):
        repo.commit_files(files, [], "pilot: test")  # type: ignore[arg-type]
    assert hash_objects() == set()
