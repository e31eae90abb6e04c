"""The cache hit of checks that are all scoped: worked out from the scopes' files alone.

``git add -A`` limited to the scopes' globs (in a private index) and the matching entries give
each scope's tree id without the whole tree's (``Repo.worktree_scoped_ids``). A pass must
never be reused on files that were not checked: every edit below is a real one, the check
reruns exactly when a file of its scope changed, and the id is the one the whole way gives.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import git, make_repo, run_pilot

from gitpilot.repo import Repo

SCOPE = ("src/**", "tests/**", "pyproject.toml")


def _repo(tmp_path: Path, files: tuple[str, ...] = SCOPE) -> tuple[Path, Path]:
    counter = tmp_path / "runs.log"  # outside the repository: each real run appends a line
    listed = ", ".join(f'"{g}"' for g in files)
    repo = make_repo(tmp_path / "p", {
        ".gitpilot.toml": f'[[check]]\nname = "unit"\nrun = "echo unit >> {counter}"\nfiles = [{listed}]\n',
        "src/app.py": "x = 1\n", "src/util.py": "y = 1\n", "tests/test_app.py": "def test(): pass\n",
        "pyproject.toml": "[project]\nname = 'p'\n", "docs/guide.md": "# Guide\n", "README.md": "# p\n",
        ".gitignore": "*.pyc\nbuild/\n",
    })
    return repo, counter


def _runs(counter: Path) -> int:
    return len(counter.read_text().splitlines()) if counter.exists() else 0


def _same_ids_both_ways(repo: Path, scopes: list[tuple[str, ...]]) -> list[str]:
    """The scoped ids the hit works out, asserted equal to those of the whole tree's way."""
    r = Repo.discover(repo)
    direct = r.worktree_scoped_ids(scopes)
    _full, whole_way = r.worktree_tree_ids(scopes)
    assert direct == whole_way
    return whole_way


def _git_calls(repo: Path, tmp_path: Path, *args: str) -> tuple[str, list[str]]:
    """Run ``git pilot ARGS``; its output and the git commands it started (GIT_TRACE)."""
    trace = tmp_path / "trace.log"
    trace.unlink(missing_ok=True)
    res = run_pilot(*args, cwd=repo, env={"GIT_TRACE": str(trace)})
    assert res.returncode == 0, res.stdout + res.stderr
    calls = [ln.split("trace: built-in: git ", 1)[1] for ln in trace.read_text().splitlines() if "built-in: git " in ln]
    return res.stdout, calls


def _write(rel: str, text: str) -> Callable[[Path], None]:
    def edit(repo: Path) -> None:
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    return edit


def _remove(rel: str) -> Callable[[Path], None]:
    return lambda repo: (repo / rel).unlink()


def _move(old: str, new: str) -> Callable[[Path], None]:
    def edit(repo: Path) -> None:
        (repo / new).parent.mkdir(parents=True, exist_ok=True)
        (repo / old).rename(repo / new)
    return edit


def _chmod(rel: str, mode: int) -> Callable[[Path], None]:
    return lambda repo: (repo / rel).chmod(mode)


def _git(*args: str) -> Callable[[Path], None]:
    def edit(repo: Path) -> None:
        git(repo, *args)
    return edit


def _then(*edits: Callable[[Path], None]) -> Callable[[Path], None]:
    def edit(repo: Path) -> None:
        for e in edits:
            e(repo)
    return edit


# (what the user does, whether the check must run again); applied in order to one repository.
STEPS: list[tuple[str, Callable[[Path], None], bool]] = [
    ("edit a tracked file outside the scope", _write("docs/guide.md", "# Guide\n\nMore.\n"), False),
    ("an untracked file outside the scope", _write("NOTES.txt", "notes\n"), False),
    ("delete a tracked file outside the scope", _remove("README.md"), False),
    ("an ignored file inside the scope", _write("src/app.pyc", "\0compiled"), False),
    ("an ignored directory inside the scope", _write("src/build/out.py", "made = 1\n"), False),
    ("edit a file in the scope", _write("src/app.py", "x = 2\n"), True),
    ("undo that edit: the passed state again", _write("src/app.py", "x = 1\n"), False),
    ("an edit of the same size right after a check", _write("src/app.py", "x = 3\n"), True),
    ("undo it", _write("src/app.py", "x = 1\n"), False),
    ("an untracked file in the scope", _write("tests/test_new.py", "def test_new(): pass\n"), True),
    ("remove it", _remove("tests/test_new.py"), False),
    ("an untracked file in a new directory of the scope", _write("src/sub/deep.py", "z = 1\n"), True),
    ("remove it", _remove("src/sub/deep.py"), False),
    ("delete a tracked file in the scope", _remove("tests/test_app.py"), True),
    ("restore it", _write("tests/test_app.py", "def test(): pass\n"), False),
    ("rename a file within the scope", _move("src/util.py", "src/helpers.py"), True),
    ("rename it back", _move("src/helpers.py", "src/util.py"), False),
    ("move a file from outside into the scope", _move("docs/guide.md", "src/guide.md"), True),
    ("move it back", _move("src/guide.md", "docs/guide.md"), False),
    ("make a file in the scope executable", _chmod("src/app.py", 0o755), True),
    ("and not executable again", _chmod("src/app.py", 0o644), False),
    ("the scope's single file", _write("pyproject.toml", "[project]\nname = 'q'\n"), True),
    ("undo", _write("pyproject.toml", "[project]\nname = 'p'\n"), False),
    ("git add of an in-scope edit (the user's index changes)",
     _then(_write("src/app.py", "x = 5\n"), _git("add", "src/app.py")), True),
    ("git reset: the index changes back, the files do not", _git("reset", "-q"), False),
    ("staged x = 5, but the file says x = 1 again: the working tree counts",
     _then(_write("src/app.py", "x = 5\n"), _git("add", "src/app.py"), _write("src/app.py", "x = 1\n")), False),
    ("git reset with the file at x = 1", _git("reset", "-q"), False),
    ("git add -A of everything, nothing in the scope changed", _git("add", "-A"), False),
    ("git rm --cached of a scoped file: still in the working tree", _git("rm", "-q", "--cached", "src/util.py"), False),
    ("git reset", _git("reset", "-q"), False),
]


def test_a_scoped_hit_reruns_exactly_when_a_file_of_its_scope_changed(tmp_path: Path) -> None:
    repo, counter = _repo(tmp_path)
    assert run_pilot("check", cwd=repo).returncode == 0 and _runs(counter) == 1
    index = repo / ".git" / "index"
    for what, edit, reruns in STEPS:
        edit(repo)
        before, users_index = _runs(counter), (index.read_bytes(), index.stat().st_ino)
        res = run_pilot("check", "--explain", cwd=repo)
        assert (index.read_bytes(), index.stat().st_ino) == users_index, what  # never touched
        assert res.returncode == 0, (what, res.stdout, res.stderr)
        assert _runs(counter) == before + (1 if reruns else 0), (what, res.stdout)
        assert ("(reused: passed" in res.stdout) is not reruns, (what, res.stdout)
        [tree] = _same_ids_both_ways(repo, [SCOPE])
        assert f"keyed by the tree of those files, {tree}" in res.stdout, what
    assert git(repo, "status", "--porcelain").split() == ["D", "README.md", "M", "docs/guide.md", "??", "NOTES.txt"]


def test_a_scoped_hit_starts_no_whole_tree_work(tmp_path: Path) -> None:
    repo, _counter = _repo(tmp_path)
    assert run_pilot("check", cwd=repo).returncode == 0
    (repo / "NOTES.txt").write_text("outside the scope\n")
    out, calls = _git_calls(repo, tmp_path, "check")
    assert "(reused: passed" in out
    globs = "':(glob)pyproject.toml' ':(glob)src/**' ':(glob)tests/**'"
    assert calls[1:] == [f"add -A -- {globs}", f"ls-files -s -z -- {globs}", "cat-file --batch"], calls
    assert not any(c.startswith("write-tree") or c == "add -A -- ." for c in calls)
    # --json reports the whole tree's id, so it takes the whole way, and reuses the same pass
    res = run_pilot("check", "--json", cwd=repo)
    assert '"reused": true' in res.stdout and '"tree": "' in res.stdout


def test_a_check_without_files_still_keys_the_whole_tree(tmp_path: Path) -> None:
    repo, counter = _repo(tmp_path)
    cfg = repo / ".gitpilot.toml"
    cfg.write_text(cfg.read_text() + f'\n[[check]]\nname = "all"\nrun = "echo all >> {counter}"\n')
    git(repo, "commit", "-qam", "two checks")
    assert run_pilot("check", cwd=repo).returncode == 0 and _runs(counter) == 2
    (repo / "NOTES.txt").write_text("outside the scope\n")
    out, calls = _git_calls(repo, tmp_path, "check")
    assert _runs(counter) == 3 and "checks: 2 passed, 0 failed (1 reused)" in out
    assert "add -A -- ." in calls and "write-tree" in calls


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_killed_run_leaves_a_private_index_that_no_later_hit_reads(tmp_path: Path) -> None:
    repo, counter = _repo(tmp_path)
    assert run_pilot("check", cwd=repo).returncode == 0
    # a run killed mid-way left its private index (holding an in-scope edit) and git's lock on it
    (repo / "src/app.py").write_text("x = 9\n")
    tmpdir = repo / ".git" / "pilot" / "tmp"
    tmpdir.mkdir(parents=True, exist_ok=True)
    stale = tmpdir / f"index-{_dead_pid()}-1"
    shutil.copy2(repo / ".git" / "index", stale)
    subprocess.run(["git", "add", "-A"], cwd=repo, env={**os.environ, "GIT_INDEX_FILE": str(stale)}, check=True)
    (tmpdir / f"{stale.name}.lock").write_bytes(stale.read_bytes())
    (repo / "src/app.py").write_text("x = 1\n")
    res = run_pilot("check", cwd=repo)
    assert "(reused: passed" in res.stdout and _runs(counter) == 1
    assert not stale.exists() and not (tmpdir / f"{stale.name}.lock").exists()
    assert os.listdir(tmpdir) == []
    (repo / "src/app.py").write_text("x = 9\n")  # the stale copy's state: not passed, so it runs
    assert "reused" not in run_pilot("check", cwd=repo).stdout and _runs(counter) == 2


@pytest.mark.parametrize("extra, make", [
    ("nothing/**", None),  # a glob that matches no file: git refuses the pathspec
    ("linkdir/**", "symlink"),  # a path beyond a symbolic link
    ("build/**", "ignored"),  # only ignored files
])
def test_scopes_git_refuses_as_pathspecs_take_the_whole_way_with_the_same_ids(
        tmp_path: Path, extra: str, make: str | None) -> None:
    scope = ("src/**", extra)
    repo, counter = _repo(tmp_path, scope)
    if make == "symlink":
        (repo / "linkdir").symlink_to("docs")
        git(repo, "add", "linkdir")
        git(repo, "commit", "-qm", "link")
    elif make == "ignored":
        (repo / "build").mkdir()
        (repo / "build/out.txt").write_text("made\n")
    assert Repo.discover(repo).worktree_scoped_ids([scope]) is None
    assert run_pilot("check", cwd=repo).returncode == 0 and _runs(counter) == 1
    (repo / "NOTES.txt").write_text("outside the scope\n")
    out, calls = _git_calls(repo, tmp_path, "check")
    assert "(reused: passed" in out and _runs(counter) == 1
    # the refusal is remembered while the user's index stays the same: no second attempt
    assert "add -A -- ." in calls and not any(c.startswith("add -A -- ':(glob)") for c in calls), calls
    (repo / "src/app.py").write_text("x = 2\n")
    assert "reused" not in run_pilot("check", cwd=repo).stdout and _runs(counter) == 2
    git(repo, "add", "src/app.py")  # the index changed: the scoped way is tried again (and refused)
    out, calls = _git_calls(repo, tmp_path, "check")
    assert "(reused: passed" in out and _runs(counter) == 2
    assert any(c.startswith("add -A -- ':(glob)") for c in calls) and "add -A -- ." in calls, calls


def test_two_scopes_each_get_the_id_the_whole_way_gives(tmp_path: Path) -> None:
    repo, counter = _repo(tmp_path)
    cfg = repo / ".gitpilot.toml"
    cfg.write_text(cfg.read_text() + f'\n[[check]]\nname = "docs"\nrun = "echo docs >> {counter}"\n'
                   'files = ["docs/**", "!docs/drafts/**"]\n')
    git(repo, "commit", "-qam", "two scopes")
    assert run_pilot("check", cwd=repo).returncode == 0 and _runs(counter) == 2
    scopes = [SCOPE, ("!docs/drafts/**", "docs/**")]
    (repo / "docs/drafts").mkdir()
    (repo / "docs/drafts/idea.md").write_text("# later\n")  # excluded from the docs scope
    out, calls = _git_calls(repo, tmp_path, "check")
    assert "checks: 2 passed, 0 failed (2 reused)" in out and _runs(counter) == 2
    assert not any(c.startswith("write-tree") for c in calls)
    _same_ids_both_ways(repo, scopes)
    (repo / "docs/guide.md").write_text("# Guide, edited\n")
    assert "checks: 2 passed, 0 failed (1 reused)" in run_pilot("check", cwd=repo).stdout and _runs(counter) == 3
    _same_ids_both_ways(repo, scopes)


def test_a_repository_nested_in_the_scope_reruns_the_check_when_its_commit_moves(tmp_path: Path) -> None:
    repo, counter = _repo(tmp_path)
    nested = make_repo(repo / "src" / "vendor", {"lib.py": "v = 1\n"})
    git(repo, "add", "src/vendor")  # an embedded repository: a gitlink entry, its commit id
    git(repo, "commit", "-qm", "vendor")
    assert run_pilot("check", cwd=repo).returncode == 0 and _runs(counter) == 1
    (nested / "lib.py").write_text("v = 2\n")  # edited but not committed there: the gitlink is the same
    assert "(reused: passed" in run_pilot("check", cwd=repo).stdout and _runs(counter) == 1
    git(nested, "commit", "-qam", "v2")
    assert "reused" not in run_pilot("check", cwd=repo).stdout and _runs(counter) == 2
    _same_ids_both_ways(repo, [SCOPE])
    git(nested, "reset", "-q", "--hard", "HEAD~1")
    assert "(reused: passed" in run_pilot("check", cwd=repo).stdout and _runs(counter) == 2
