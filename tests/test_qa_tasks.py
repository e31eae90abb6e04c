"""Broken task records under ``refs/pilot/tasks/``: a ref at a blob or a tree, a commit whose tree
misses blobs or holds a directory where a file belongs, files that are binary or not JSON, and
stray refs git pilot never wrote. Every task command answers in one line; the other tasks stay
visible; nothing is rewritten behind the user's back.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import git, make_repo, run_pilot
from test_qa_support import assert_clear_error, assert_no_crash, standard_files

TASK = "set up the widgets"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = make_repo(tmp_path / "repo", standard_files())
    assert run_pilot("run", "--dry-run", TASK, cwd=r).returncode == 0
    return r


def _good_id(repo: Path) -> str:
    ids = git(repo, "for-each-ref", "--format=%(refname:lstrip=3)", "refs/pilot/tasks/").split()
    assert len(ids) == 1
    return ids[0]


def _mktree(repo: Path, entries: list[str]) -> str:
    return git(repo, "mktree", "--missing", input="".join(e + "\n" for e in entries).encode()).strip()


def _blob(repo: Path, data: bytes) -> str:
    return git(repo, "hash-object", "-w", "--stdin", input=data).strip()


TASK_COMMANDS: tuple[tuple[str, ...], ...] = (("status",), ("status", "--json"), ("efficiency", "--task"))


def test_stray_refs_under_the_task_namespace_hide_no_task(repo: Path) -> None:
    good = _good_id(repo)
    git(repo, "update-ref", "refs/pilot/tasks/NOT-A-TASK", "HEAD")
    git(repo, "update-ref", f"refs/pilot/tasks/nested/{good[:12]}", "HEAD")
    status = run_pilot("status", cwd=repo)
    assert status.returncode == 0, status.stderr
    assert status.stdout.count("\n") == 1 and status.stdout.startswith(good[:12]) and TASK in status.stdout
    data = json.loads(run_pilot("status", "--json", cwd=repo).stdout)
    assert [t["task"] for t in data] == [good]
    for args in (("state", "--task", good[:8]), ("resume", "--dry-run", good[:8])):
        res = run_pilot(*args, cwd=repo)
        assert res.returncode == 0, res.stderr
    # The stray refs are the user's business: left exactly as they were.
    assert git(repo, "rev-parse", "refs/pilot/tasks/NOT-A-TASK") == git(repo, "rev-parse", "HEAD")


@pytest.mark.parametrize("target", ["blob", "tree"])
def test_a_task_ref_that_is_not_a_commit(repo: Path, target: str) -> None:
    tid = "deadbeef" * 8
    oid = _blob(repo, bytes(range(256))) if target == "blob" else git(repo, "rev-parse", "HEAD^{tree}").strip()
    git(repo, "update-ref", f"refs/pilot/tasks/{tid}", oid)
    for args in TASK_COMMANDS + (("state", "--task", "deadbeef"),):
        res = run_pilot(*args, cwd=repo)
        assert res.returncode == 0, res.stderr
    assert TASK in run_pilot("status", cwd=repo).stdout  # the good task is still listed
    for args in (("state", "--task", "deadbeef", "--status", "working"), ("stop", "deadbeef")):
        assert_clear_error(run_pilot(*args, cwd=repo), 1, f"refs/pilot/tasks/{tid} does not point at a commit")
    assert_clear_error(run_pilot("resume", "--dry-run", "deadbeef", cwd=repo), 1, "no task text")
    assert git(repo, "rev-parse", f"refs/pilot/tasks/{tid}").strip() == oid  # nothing written


def test_a_record_whose_tree_is_broken(repo: Path) -> None:
    """Missing blobs, a directory named like a file, binary state, session.json that is not JSON."""
    missing = "1" * 40
    tree = _mktree(repo, [
        f"100644 blob {missing}\tsession.json",
        f"100644 blob {_blob(repo, bytes(range(256)))}\tstate.json",
        f"040000 tree {git(repo, 'rev-parse', 'HEAD^{tree}').strip()}\tcapsule.md",
        f"100644 blob {_blob(repo, b'repair the broken widgets')}\ttask.md",
    ])
    commit = git(repo, "commit-tree", "-m", "broken", tree).strip()
    tid = "abad1dea" * 8
    git(repo, "update-ref", f"refs/pilot/tasks/{tid}", commit)
    for args in TASK_COMMANDS + (("state", "--task", tid[:8]), ("state", "--task", tid[:8], "--json")):
        res = run_pilot(*args, cwd=repo)
        assert_no_crash(res)
        assert res.returncode == 0, res.stderr
    status = run_pilot("status", cwd=repo).stdout
    assert "repair the broken widgets" in status and TASK in status
    res = run_pilot("resume", "--dry-run", tid[:8], cwd=repo)
    assert_clear_error(res, 1, "task abad1deaabad", "different task text")
    # An update of a broken record writes a new commit on top: the broken one stays in its history.
    upd = run_pilot("state", "--task", tid[:8], "--status", "blocked", "--blocker", "tree is broken", cwd=repo)
    assert upd.returncode == 0, upd.stderr
    assert git(repo, "rev-parse", f"refs/pilot/tasks/{tid}~1").strip() == commit
    state = json.loads(run_pilot("state", "--task", tid[:8], "--json", cwd=repo).stdout)
    assert state["status"] == "blocked" and state["blockers"] == ["tree is broken"]


@pytest.mark.parametrize("ident", ["", "   ", "zz", "a", "../../etc/passwd", "refs/heads/main", "-x"])
def test_odd_task_identifiers_are_refused_in_one_line(repo: Path, ident: str) -> None:
    for args in (("resume", "--dry-run", ident), ("stop", ident), ("state", "--task", ident, "--status", "ready")):
        res = run_pilot(*args, cwd=repo)
        assert res.returncode in (1, 2) and "Traceback" not in res.stderr, res.stderr
        assert res.stderr.strip(), args
    assert len(git(repo, "for-each-ref", "refs/pilot/tasks/").splitlines()) == 1


def test_state_with_bad_values_is_a_usage_error_and_writes_nothing(repo: Path) -> None:
    tid = _good_id(repo)
    tip = git(repo, "rev-parse", f"refs/pilot/tasks/{tid}")
    for args in (("--pr", "abc"), ("--pr", "-3"), ("--ci", "green"), ("--status", "done")):
        res = run_pilot("state", "--task", tid[:8], *args, cwd=repo)
        assert res.returncode == 2 and "Traceback" not in res.stderr, (args, res.stderr)
    assert git(repo, "rev-parse", f"refs/pilot/tasks/{tid}") == tip


def test_a_section_that_gains_a_credential_is_withheld_in_the_delta_not_called_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fake_agents import install

    r = make_repo(tmp_path / "repo", {**standard_files(),
                                       "GUIDE.md": "# Guide\n\n## Widgets\nWidgets spin at 100 rpm.\n"})
    install(tmp_path, monkeypatch)
    assert run_pilot("run", "raise the widget spin speed", cwd=r).returncode == 0
    secret = "ghp_" + "g" * 36
    (r / "GUIDE.md").write_text(f"# Guide\n\n## Widgets\nWidgets spin at 200 rpm with {secret}.\n\n## Other\nmore\n")
    tid = git(r, "for-each-ref", "--format=%(refname:lstrip=3)", "refs/pilot/tasks/").split()[0]
    res = run_pilot("resume", "--dry-run", tid[:8], cwd=r)
    assert res.returncode == 0, res.stderr
    delta = next((r / ".git" / "pilot").glob("delta-*.md")).read_text()
    assert "- withheld: Guide › Widgets — `GUIDE.md` lines 3-4 now hold a known credential format" in delta
    assert "removed" not in delta and secret not in delta and secret not in res.stdout
