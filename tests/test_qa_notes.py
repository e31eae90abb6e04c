"""Corrupt notes: a note body that is binary, not JSON, of the wrong shape or huge, under each of
git pilot's notes refs; a notes ref that points at a tree or a blob; and the same arriving from a
remote as ``refs/notes/remotes/origin/pilot/*``.

A reader skips what it does not understand and never crashes; a writer that cannot write says
so in one line and changes nothing; nothing already stored is lost.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import git, make_repo, pilot_env, run_pilot
from test_qa_support import Snapshot, assert_clear_error, assert_fsck_clean, assert_no_crash, standard_files

BINARY = bytes(range(256)) * 8
KINDS = ("checks", "sections", "review", "sourcemap")
BODIES: dict[str, bytes] = {
    "binary": BINARY,
    "not json": b"this is not json\n{\"v\": 1, \"check\": \n",
    "wrong shape": b'{"v": 1, "check": 5, "result": "pass"}\n[1, 2, 3]\n{"always": "x", "sections": 5, "v": 2}\n',
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = make_repo(tmp_path / "repo", standard_files())
    git(r, "checkout", "-q", "-b", "feature")
    (r / "app.py").write_text("def spin(speed):\n    return speed + 1\n")
    git(r, "commit", "-qam", "faster")
    return r


def _annotate_everything(repo: Path, kind: str, body: bytes) -> None:
    """Put ``body`` as the note of every object git pilot keys notes by: commits, trees, blobs."""
    path = repo.parent / f"{kind}.note"
    path.write_bytes(body)
    oids = {git(repo, "rev-parse", rev).strip()
            for rev in ("HEAD", "HEAD^{tree}", "HEAD:README.md", "HEAD:app.py", "main", "main^{tree}")}
    for oid in sorted(oids):
        git(repo, "notes", f"--ref=pilot/{kind}", "add", "-f", "-F", str(path), oid)


def _readers(repo: Path) -> dict[str, subprocess.CompletedProcess[str]]:
    out = {}
    for args in (("check",), ("check", "--explain"), ("check", "--json"), ("capsule", "--task", "set up the widgets",
                 "--print"), ("run", "--dry-run", "set up the widgets"), ("review-budget",), ("status",),
                 ("sourcemap",), ("doctor",), ("hook", "post-commit"), ("hook", "post-checkout")):
        res = run_pilot(*args, cwd=repo, env={"GIT_PILOT_HOOKS_SYNC": "1"})
        assert_no_crash(res)
        out[" ".join(args)] = res
    return out


def _twin(tmp_path: Path) -> Path:
    """The same repository (same object ids: dates are pinned), without any notes."""
    r = make_repo(tmp_path / "twin", standard_files())
    git(r, "checkout", "-q", "-b", "feature")
    (r / "app.py").write_text("def spin(speed):\n    return speed + 1\n")
    git(r, "commit", "-qam", "faster")
    return r


@pytest.mark.parametrize("body", sorted(BODIES))
def test_corrupt_note_bodies_under_every_ref_are_skipped_never_fatal(repo: Path, tmp_path: Path, body: str) -> None:
    for kind in KINDS:
        _annotate_everything(repo, kind, BODIES[body])
    tree = git(repo, "write-tree").strip()
    stored_before = _note_bytes(repo, tree)
    before = Snapshot.take(repo)
    res = _readers(repo)
    check = res["check"]
    assert check.returncode == 0 and "PASS true" in check.stdout
    assert "reused: pass recorded here" in res["check --explain"].stdout
    # The capsule, the source map and the review budget are what they are without the notes.
    twin = _twin(tmp_path)
    assert git(twin, "rev-parse", "HEAD") == git(repo, "rev-parse", "HEAD")
    for args in (("capsule", "--task", "set up the widgets", "--print"), ("sourcemap",), ("review-budget",)):
        clean = run_pilot(*args, cwd=twin)
        assert res[" ".join(args)].stdout == clean.stdout.replace(str(twin), str(repo)), args
    assert "Run make to set up the widgets." in res["capsule --task set up the widgets --print"].stdout
    before.assert_unchanged(repo)
    # The corrupt lines are still there beside the new record (notes are never pruned).
    lines = set(_note_bytes(repo, tree).split(b"\n"))
    assert any(b'"result":"pass"' in ln for ln in lines)
    assert all(ln in lines for ln in stored_before.split(b"\n") if ln.strip())


def _note_bytes(repo: Path, oid: str) -> bytes:
    return subprocess.run(["git", "notes", "--ref=pilot/checks", "show", oid], cwd=repo,
                          capture_output=True, check=True).stdout


def test_a_huge_checks_note_is_read_and_extended_in_reasonable_time(repo: Path) -> None:
    tree = git(repo, "write-tree").strip()
    junk = b"".join(b'{"v":1,"junk":%d,"pad":"%s"}\n' % (i, b"x" * 200) for i in range(60000))  # ~13 MB
    (repo.parent / "huge.note").write_bytes(junk)
    git(repo, "notes", "--ref=pilot/checks", "add", "-f", "-F", str(repo.parent / "huge.note"), tree)
    first = run_pilot("check", cwd=repo, timeout=60)
    assert first.returncode == 0 and "PASS true (" in first.stdout
    second = run_pilot("check", cwd=repo, timeout=60)
    assert "reused" in second.stdout
    assert git(repo, "notes", "--ref=pilot/checks", "show", tree).count("\n") == 60001


@pytest.mark.parametrize("target", ["tree", "blob"])
def test_a_checks_ref_that_is_not_a_commit_is_named_and_left_alone(repo: Path, target: str) -> None:
    oid = (git(repo, "rev-parse", "HEAD^{tree}") if target == "tree"
           else git(repo, "hash-object", "-w", "--stdin", input=BINARY)).strip()
    git(repo, "update-ref", "refs/notes/pilot/checks", oid)
    res = run_pilot("check", cwd=repo)
    # The check's result is still shown and counts; only its record could not be written.
    assert res.returncode == 0 and "PASS true" in res.stdout
    assert "Traceback" not in res.stderr
    assert "warning: check results not recorded: refs/notes/pilot/checks does not point at a commit" in res.stderr
    data = json.loads(run_pilot("check", "--json", cwd=repo).stdout)
    assert data["checks"][0]["recorded"] is False
    assert git(repo, "rev-parse", "refs/notes/pilot/checks").strip() == oid  # untouched
    doctor = run_pilot("doctor", cwd=repo)
    assert doctor.returncode == 1
    assert "refs/notes/pilot/checks is unreadable (not a commit with a tree)" in doctor.stdout
    fixed = run_pilot("doctor", "--fix", cwd=repo)
    assert "Traceback" not in fixed.stderr
    assert git(repo, "rev-parse", "refs/notes/pilot/checks").strip() == oid  # --fix only fans out trees


@pytest.mark.parametrize("kind", ["sections", "review", "sourcemap"])
def test_other_notes_refs_that_are_not_commits_never_crash_a_command(repo: Path, kind: str) -> None:
    tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    git(repo, "update-ref", f"refs/notes/pilot/{kind}", tree)
    res = _readers(repo)
    capsule = res["capsule --task set up the widgets --print"]
    assert capsule.returncode == 0 and "Run make to set up the widgets." in capsule.stdout
    assert res["sourcemap"].returncode == 0
    assert res["review-budget"].returncode == 0
    assert f"refs/notes/pilot/{kind} is unreadable" in res["doctor"].stdout
    assert git(repo, "rev-parse", f"refs/notes/pilot/{kind}").strip() == tree


def test_a_section_map_note_that_does_not_match_its_blob_is_not_trusted(repo: Path) -> None:
    blob = git(repo, "rev-parse", "HEAD:README.md").strip()
    assert run_pilot("capsule", "--task", "set up the widgets", cwd=repo).returncode == 0
    good = json.loads(git(repo, "notes", "--ref=pilot/sections", "show", blob))
    bad = dict(good, sections=[[1, "Widgets", None, 1, 7000, 1, "0" * 64, 0]])
    git(repo, "notes", "--ref=pilot/sections", "add", "-f", "-m", json.dumps(bad), blob)
    for ref in git(repo, "for-each-ref", "--format=%(refname)", "refs/pilot/tasks/").split():
        git(repo, "update-ref", "-d", ref)
    for f in (repo / ".git" / "pilot").glob("capsule-*"):
        f.unlink()
    res = run_pilot("capsule", "--task", "set up the widgets", "--print", cwd=repo)
    assert "Run make to set up the widgets." in res.stdout


# -- from a remote -------------------------------------------------------------------------------
def _remote_pair(tmp_path: Path) -> tuple[Path, Path]:
    """A bare remote with corrupt notes under every pilot ref, and a clone set up to share."""
    up = make_repo(tmp_path / "up", standard_files())
    tree = git(up, "rev-parse", "HEAD^{tree}").strip()
    good = {"v": 1, "check": "unit", "cmd": "a" * 32, "key": "b" * 32, "result": "pass", "secs": 0.1,
            "time": "2024-01-01T00:00:00Z", "email": "ci@example.com", "host": "ci", "platform": "Linux-x86_64",
            "version": "0.5.0"}
    lines = [
        json.dumps(good, sort_keys=True, separators=(",", ":")),
        json.dumps(dict(good, email="ghp_" + "a" * 36), sort_keys=True),  # a credential in a field
        json.dumps(dict(good, host="ci\x1b]0;pwned\x07"), sort_keys=True),  # terminal escape
        json.dumps(dict(good, check="x" * 5000), sort_keys=True),  # oversized
        json.dumps(dict(good, remote="someone-else"), sort_keys=True),  # forged origin tag
        "garbage line",
    ]
    body = ("\n".join(lines) + "\n").encode() + BINARY
    (tmp_path / "remote.note").write_bytes(body)
    git(up, "notes", "--ref=pilot/checks", "add", "-F", str(tmp_path / "remote.note"), tree)
    for kind in ("sections", "review", "sourcemap"):
        git(up, "notes", f"--ref=pilot/{kind}", "add", "-F", str(tmp_path / "remote.note"), tree)
        git(up, "notes", f"--ref=pilot/{kind}", "add", "-F", str(tmp_path / "remote.note"),
            git(up, "rev-parse", "HEAD:README.md").strip())
    remote = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--mirror", str(up), str(remote))
    down = tmp_path / "down"
    git(tmp_path, "clone", "-q", str(remote), str(down))
    assert run_pilot("share", "setup", cwd=down).returncode == 0
    git(down, "fetch", "-q", "origin")
    return remote, down


def test_corrupt_notes_from_a_remote_are_validated_tagged_and_never_read_raw(tmp_path: Path) -> None:
    remote, down = _remote_pair(tmp_path)
    copies = git(down, "for-each-ref", "--format=%(refname)", "refs/notes/remotes/origin/pilot/").split()
    assert copies == [f"refs/notes/remotes/origin/pilot/{k}" for k in sorted(KINDS)]
    before = Snapshot.take(down)
    pull = run_pilot("share", "pull", cwd=down)
    assert pull.returncode == 0, pull.stderr
    assert "1 record(s) on 1 tree(s)" in pull.stdout
    assert "warning: skipped" in pull.stderr and "Traceback" not in pull.stderr
    tree = git(down, "rev-parse", "HEAD^{tree}").strip()
    merged = git(down, "notes", "--ref=pilot/checks", "show", tree)
    assert merged.count("\n") == 1 and '"remote":"origin"' in merged  # tagged by us, not by them
    assert "ghp_" not in merged and "\x1b" not in merged and "someone-else" not in merged
    # The remote's pass is not trusted (no [share] trust), and the raw remote copies of the other
    # kinds are never read: the capsule, source map and review budget are as without them.
    check = run_pilot("check", "--explain", cwd=down)
    assert check.returncode == 0 and "ran: " in check.stdout
    capsule = run_pilot("capsule", "--task", "set up the widgets", "--print", cwd=down)
    assert "Run make to set up the widgets." in capsule.stdout and "garbage" not in capsule.stdout
    smap = run_pilot("sourcemap", cwd=down)
    assert smap.returncode == 0 and "app.py: spin()" in smap.stdout and "garbage" not in smap.stdout
    before.assert_unchanged(down)
    assert git(remote, "for-each-ref", "refs/notes/pilot/checks").strip()  # the remote's notes untouched


@pytest.mark.parametrize("target", ["tree", "blob"])
def test_a_remote_notes_ref_that_is_not_a_commit(tmp_path: Path, target: str) -> None:
    remote, down = _remote_pair(tmp_path)
    oid = (git(remote, "rev-parse", "main^{tree}") if target == "tree"
           else git(remote, "hash-object", "-w", "--stdin", input=b"junk")).strip()
    git(remote, "update-ref", "refs/notes/pilot/checks", oid)
    assert run_pilot("check", cwd=down).returncode == 0
    local = git(down, "rev-parse", "refs/notes/pilot/checks").strip()
    for args in (("share", "pull"), ("share", "push")):
        assert_clear_error(run_pilot(*args, cwd=down), 1, "origin's refs/notes/pilot/checks does not point at a commit")
    assert git(down, "rev-parse", "refs/notes/pilot/checks").strip() == local
    assert git(remote, "rev-parse", "refs/notes/pilot/checks").strip() == oid


def test_share_push_after_the_remote_deleted_its_notes(tmp_path: Path) -> None:
    remote, down = _remote_pair(tmp_path)
    assert run_pilot("share", "pull", cwd=down).returncode == 0
    git(remote, "update-ref", "-d", "refs/notes/pilot/checks")
    (down / "app.py").write_text("def spin(speed):\n    return 0\n")
    assert run_pilot("check", cwd=down).returncode == 0
    push = run_pilot("share", "push", cwd=down, timeout=30)
    assert push.returncode == 0, push.stderr
    assert "pushed 1 check record(s)" in push.stdout
    assert git(remote, "rev-parse", "refs/notes/pilot/checks").strip() == \
        git(down, "rev-parse", "refs/notes/remotes/origin/pilot/checks").strip()
    assert_fsck_clean(down)


def test_notes_written_concurrently_with_a_killed_writer_stay_valid(repo: Path) -> None:
    """A writer killed between writing objects and moving the ref leaves the ref as it was."""
    (repo / ".gitpilot.toml").write_text('[[check]]\nname = "unit"\nrun = "sleep 5"\n')
    proc = subprocess.Popen([sys.executable, "-m", "gitpilot", "check"], cwd=repo, env=pilot_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    time.sleep(1.0)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert git(repo, "for-each-ref", "refs/notes/pilot/checks") == ""
    (repo / ".gitpilot.toml").write_text('[[check]]\nname = "unit"\nrun = "true"\n')
    res = run_pilot("check", cwd=repo)
    assert res.returncode == 0 and "PASS" in res.stdout
    logs = list((repo / ".git" / "pilot" / "checks").rglob("*"))
    assert any(p.name.endswith(".log") for p in logs)
    assert_fsck_clean(repo)


def test_a_notes_tree_holding_gitlinks_and_symlinks_is_rewritten_without_crashing(repo: Path) -> None:
    (repo / ".gitpilot.toml").write_text('[[check]]\nname = "unit"\nrun = "true"\nenv = ["QA_X"]\n')
    first = json.loads(run_pilot("check", "--json", cwd=repo, env={"QA_X": "1"}).stdout)
    tree = first["tree"]
    tip = git(repo, "rev-parse", "refs/notes/pilot/checks").strip()
    root = git(repo, "rev-parse", f"{tip}^{{tree}}").strip()
    bucket = git(repo, "rev-parse", f"{root}:{tree[:2]}").strip()
    head = git(repo, "rev-parse", "HEAD").strip()
    link = git(repo, "hash-object", "-w", "--stdin", input=b"/etc/passwd").strip()
    odd_bucket = git(repo, "mktree", input=(git(repo, "ls-tree", bucket) +
                                            f"160000 commit {head}\t{'f' * 38}\n120000 blob {link}\t{'e' * 38}\n").encode())
    entries = [ln for ln in git(repo, "ls-tree", root).splitlines() if not ln.endswith(f"\t{tree[:2]}")]
    new_root = git(repo, "mktree", input=("\n".join(entries + [f"040000 tree {odd_bucket.strip()}\t{tree[:2]}",
                                                              f"160000 commit {head}\t{'7' * 40}"]) + "\n").encode())
    commit = git(repo, "commit-tree", "-p", tip, "-m", "hand-made entries", new_root.strip()).strip()
    git(repo, "update-ref", "refs/notes/pilot/checks", commit, tip)
    res = run_pilot("check", cwd=repo, env={"QA_X": "2"})  # another key: a new line on the same tree
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    assert "not recorded" not in res.stderr
    assert git(repo, "rev-parse", "refs/notes/pilot/checks^").strip() == commit  # written on top
    listing = git(repo, "ls-tree", "-r", "refs/notes/pilot/checks")
    assert f"160000 commit {head}\t{tree[:2]}/{'f' * 38}" in listing  # kept as they were
    assert f"120000 blob {link}\t{tree[:2]}/{'e' * 38}" in listing
    assert f"160000 commit {head}\t{'7' * 40}" in listing
    assert git(repo, "notes", "--ref=pilot/checks", "show", tree).count('"result":"pass"') == 2
    assert_fsck_clean(repo)


def test_a_huge_source_map_note_never_exceeds_the_budget(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", standard_files())
    assert run_pilot("sourcemap", cwd=repo).returncode == 0
    tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    header = "".join(git(repo, "notes", "--ref=pilot/sourcemap", "show", tree).splitlines(keepends=True)[:2])
    (tmp_path / "note").write_text(header + "".join(f"  junk{i}.py: x()\n" for i in range(200000)))
    git(repo, "notes", "--ref=pilot/sourcemap", "add", "-f", "-F", str(tmp_path / "note"), tree)
    res = run_pilot("sourcemap", cwd=repo)
    assert res.returncode == 0 and len(res.stdout) <= 6000 + 1000
