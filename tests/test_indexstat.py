"""``indexstat``: the tracked files the index's stat data shows unchanged, so a capsule over many
files does not make git match every index entry against every path. It may only spare git calls:
whatever it calls unchanged, git calls unchanged too, for every index version, and an edit that
keeps the size still reaches the capsule."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from conftest import git, make_repo, run_pilot

from gitpilot.indexstat import read_stats, unchanged

N = 40  # more than sources.STAT_CHECK_MIN


def _repo(tmp_path: Path) -> tuple[Path, list[str]]:
    files = {f"docs/page{i:02d}.md": f"# Page {i}\n\nAbout widget {i}.\n" for i in range(N)}
    files["docs/empty.md"] = ""
    files["README.md"] = "# Demo\n\nWidgets.\n"
    repo = make_repo(tmp_path / "repo", files)
    (repo / "LINK.md").symlink_to("README.md")
    git(repo, "add", "LINK.md")
    git(repo, "commit", "-q", "-m", "link")
    past = time.time() - 100
    for name in [*files, "LINK.md"]:
        os.utime(repo / name, (past, past), follow_symlinks=False)
    git(repo, "update-index", "--refresh")  # the index now newer than every file
    return repo, sorted([*files, "LINK.md"])


def _git_changed(repo: Path, paths: list[str]) -> set[str]:
    out = git(repo, "--literal-pathspecs", "diff-files", "--name-only", "-z", "--", *paths)
    return {p for p in out.split("\0") if p}


@pytest.mark.parametrize("version", ["2", "3", "4"])
def test_what_it_calls_unchanged_git_calls_unchanged(tmp_path: Path, version: str) -> None:
    repo, paths = _repo(tmp_path)
    git(repo, "update-index", "--index-version", version)
    if version == "3":
        git(repo, "update-index", "--skip-worktree", "docs/page03.md")  # an entry with extended flags
    # An edit that keeps the size and puts the old modification time back: only the ctime tells.
    page = repo / "docs/page01.md"
    st = page.stat()
    page.write_text(page.read_text().replace("widget", "gadget"))
    os.utime(page, ns=(st.st_atime_ns, st.st_mtime_ns))
    (repo / "docs/page02.md").write_text("# Page 2\n\nchanged and longer\n")
    (repo / "docs/page04.md").chmod(0o755)
    same = unchanged(str(repo), str(repo / ".git" / "index"), paths)
    changed = _git_changed(repo, paths)
    assert same and not same & changed
    assert {"docs/page02.md", "docs/page04.md"} <= changed
    assert "docs/page01.md" not in same  # (git may call it unchanged: it can compare whole seconds only)
    assert "docs/page05.md" in same
    # not proven here, so asked of git: the empty file, the symlink, the skip-worktree entry
    assert not same & {"docs/empty.md", "LINK.md"}
    assert ("docs/page03.md" in same) == (version != "3")


def test_racily_clean_files_are_left_to_git(tmp_path: Path) -> None:
    repo, paths = _repo(tmp_path)
    now = time.time() + 5  # a file changed in (or after) the second the index was written
    os.utime(repo / "docs/page07.md", (now, now))
    git(repo, "update-index", "--refresh")
    assert "docs/page07.md" not in unchanged(str(repo), str(repo / ".git" / "index"), paths)


def test_a_file_that_is_not_an_index_proves_nothing(tmp_path: Path) -> None:
    repo, paths = _repo(tmp_path)
    index = repo / ".git" / "index"
    data = index.read_bytes()
    for bad in (b"", b"DIRC\0\0\0\x09" + data[8:], data[: len(data) // 3]):
        fake = tmp_path / "index"
        fake.write_bytes(bad)
        assert read_stats(str(fake), paths) is None or not unchanged(str(repo), str(fake), paths)


def test_a_capsule_over_many_files_quotes_an_edit_of_the_same_size(tmp_path: Path) -> None:
    repo, _paths = _repo(tmp_path)
    task = "what does page 1 say about the widget"
    assert run_pilot("capsule", "--task", task, cwd=repo).returncode == 0
    page = repo / "docs/page01.md"
    page.write_text(page.read_text().replace("widget", "gizmos"))  # the same size
    out = run_pilot("capsule", "--task", task + " or the gizmos", "--print", cwd=repo)
    assert out.returncode == 0, out.stderr
    assert "About gizmos 1." in out.stdout and "About widget 1." not in out.stdout
    manifest = json.loads(run_pilot("capsule", "--task", task + " or the gizmos", "--json", cwd=repo).stdout)
    rec = next(r for r in manifest["manifest"]["sources"] if r["path"] == "docs/page01.md")
    assert rec["status"] == "modified" and rec["blob"] == git(repo, "hash-object", "docs/page01.md").strip()
