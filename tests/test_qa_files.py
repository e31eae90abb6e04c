"""Files git pilot must read carefully: Markdown and source that is not UTF-8, binary, huge (tens
of MB), symlinks that leave the repository or lead nowhere, paths from the config that point
outside, and file names that are not UTF-8.

Each is skipped or refused by name, never followed out of the repository, never crashes a
command, and is left byte-identical.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from conftest import git, make_repo, run_pilot
from test_qa_support import Snapshot, assert_no_crash, standard_files

MARKER = "OUTSIDE-THE-REPOSITORY-MARKER"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    d = tmp_path / "elsewhere"
    d.mkdir()
    (d / "notes.md").write_text(f"# Elsewhere\n\n## Set up\n{MARKER}: set up the widgets here\n")
    (d / "code.py").write_text(f"def {MARKER.lower().replace('-', '_')}():\n    pass\n")
    return d


@pytest.fixture
def awkward(tmp_path: Path, outside: Path) -> Path:
    """A repository holding every awkward kind of file, committed."""
    repo = make_repo(tmp_path / "repo", standard_files())
    (repo / "latin1.md").write_bytes(b"# Caf\xe9\n\n## Set up\nset up the widgets, ol\xe9\n")
    (repo / "binary.md").write_bytes(bytes(range(256)) * 16)
    (repo / "latin1.py").write_bytes(b"def caf\xe9():\n    pass\n")
    (repo / "binary.py").write_bytes(b"\x00\x01def x():\n" * 100)
    (repo / "outside.md").symlink_to(outside / "notes.md")
    (repo / "outside.py").symlink_to(outside / "code.py")
    (repo / "dangling.md").symlink_to(outside / "missing.md")
    (repo / "elsewhere").symlink_to(outside)
    (repo / "loop.md").symlink_to("loop.md")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "awkward files")
    return repo


def test_capsule_run_and_sourcemap_skip_what_they_cannot_read(awkward: Path) -> None:
    before = Snapshot.take(awkward)
    capsule = run_pilot("capsule", "--task", "set up the widgets", "--print", cwd=awkward)
    assert capsule.returncode == 0, capsule.stderr
    text = capsule.stdout
    assert "Run make to set up the widgets." in text
    assert MARKER not in text
    for name, why in (("latin1.md", "not UTF-8"), ("binary.md", "not UTF-8"),
                      ("outside.md", "outside the repository"), ("dangling.md", "")):
        line = next((ln for ln in text.splitlines() if ln.startswith(f"- `{name}`")), None)
        assert line is not None, f"{name} is not listed as skipped"
        assert why in line
    run = run_pilot("run", "--dry-run", "set up the widgets", cwd=awkward)
    assert run.returncode == 0 and MARKER not in run.stdout
    smap = run_pilot("sourcemap", cwd=awkward)
    assert smap.returncode == 0, smap.stderr
    assert "app.py: spin()" in smap.stdout and MARKER.lower().replace("-", "_") not in smap.stdout
    assert "symlink" in smap.stdout  # "Not mapped: ... symlink"
    for args in (("review-budget", "--base", "HEAD~1"), ("check",), ("status",), ("doctor",)):
        assert_no_crash(run_pilot(*args, cwd=awkward))
    budget = run_pilot("review-budget", "--base", "HEAD~1", cwd=awkward)
    assert "binary" in budget.stdout
    before.assert_unchanged(awkward)
    assert (awkward / "latin1.md").read_bytes().startswith(b"# Caf\xe9")


def test_config_paths_that_leave_the_repository_are_refused(awkward: Path, outside: Path) -> None:
    rel = os.path.relpath(outside / "notes.md", awkward)
    (awkward / ".gitpilot.toml").write_text(
        "[leanloop.context]\n"
        f'always_include = ["{rel}", "{outside / "notes.md"}", "elsewhere/notes.md", "outside.md#Set up"]\n'
        f'instruction_files = ["{rel}", "{outside / "notes.md"}", "elsewhere/notes.md", "outside.md"]\n'
        f'rule_files = ["{outside / "notes.md"}"]\n'
        f'files = ["*.md", "../**/*.md", "{outside}/*.md"]\n'
        '[[check]]\nname = "unit"\nrun = "true"\n')
    capsule = run_pilot("capsule", "--task", "set up the widgets", "--print", cwd=awkward)
    assert capsule.returncode == 0, capsule.stderr
    assert MARKER not in capsule.stdout
    assert f"`{rel}`: outside the repository: refused" in capsule.stdout
    assert "`elsewhere/notes.md`: outside the repository: refused" in capsule.stdout
    pilot_dir = awkward / ".git" / "pilot"
    assert not any(MARKER in p.read_text("utf-8", "replace") for p in pilot_dir.glob("capsule-*"))


def test_plain_mode_never_points_the_agent_outside_or_at_credentials(awkward: Path, outside: Path) -> None:
    (awkward / ".env").write_text("TOKEN=ghp_" + "a" * 36 + "\n")
    git(awkward, "add", "-f", ".env")
    rel = os.path.relpath(outside / "notes.md", awkward)
    (awkward / ".gitpilot.toml").write_text(
        "[leanloop]\nenabled = false\n[leanloop.context]\n"
        f'instruction_files = ["{rel}", "{outside / "notes.md"}", "elsewhere/notes.md", "outside.md", ".env",'
        ' "README.md"]\nfiles = ["*"]\n')
    res = run_pilot("run", "--dry-run", "set up the widgets", cwd=awkward)
    assert res.returncode == 0, res.stderr
    prompt = res.stdout
    assert "1. Read the project rules in README.md." in prompt  # the v0.4.0 wording (issue 11 item 3)
    for name in (rel, str(outside), "elsewhere/notes.md", "outside.md", ".env", "dangling.md", "loop.md"):
        assert name not in prompt, name


def test_a_huge_markdown_and_source_file_are_skipped_quickly(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", standard_files())
    block = "## Set up the widgets\n" + "Widgets are set up with make and then some more words.\n" * 40
    (repo / "huge.md").write_text(block * 12000)  # ~26 MB of sections that all match the task
    (repo / "huge.py").write_text("def widget_setup():\n    return 1\n" * 800000)  # ~26 MB
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "huge")
    for args in (("capsule", "--task", "set up the widgets", "--print"), ("sourcemap",),
                 ("review-budget", "--base", "HEAD~1"), ("check",)):
        started = time.monotonic()
        res = run_pilot(*args, cwd=repo, timeout=120)
        elapsed = time.monotonic() - started
        assert res.returncode == 0, (args, res.stderr)
        assert elapsed < 30, f"{args} took {elapsed:.1f}s"
        assert len(res.stdout) < 200_000, f"{args} printed {len(res.stdout)} bytes"
    capsule = run_pilot("capsule", "--task", "set up the widgets", "--print", cwd=repo).stdout
    assert "`huge.md`: larger than" in capsule


# -- file names that are not UTF-8 ---------------------------------------------------------------
@pytest.fixture
def non_utf8_names(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo", standard_files())
    base = os.fsencode(repo)
    with open(base + b"/caf\xe9.md", "wb") as f:
        f.write(b"# Caf\n\n## Set up\nset up the widgets in the cafe\n")
    with open(base + b"/mod\xff.py", "wb") as f:
        f.write(b"def widget():\n    pass\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "names that are not UTF-8")
    return repo


def test_non_utf8_file_names_in_check_and_review(non_utf8_names: Path) -> None:
    before = Snapshot.take(non_utf8_names)
    check = run_pilot("check", cwd=non_utf8_names)
    assert check.returncode == 0 and "PASS" in check.stdout
    budget = run_pilot("review-budget", "--base", "HEAD~1", cwd=non_utf8_names)
    assert budget.returncode == 0, budget.stderr
    assert "2 file(s) changed" in budget.stdout
    for args in (("status",), ("doctor",), ("optimize", "propose")):
        assert_no_crash(run_pilot(*args, cwd=non_utf8_names))
    before.assert_unchanged(non_utf8_names)


def test_non_utf8_file_names_in_the_capsule(non_utf8_names: Path) -> None:
    for args in (("capsule", "--task", "set up the widgets"), ("run", "--dry-run", "set up the widgets")):
        res = run_pilot(*args, cwd=non_utf8_names)
        assert res.returncode == 0, res.stderr


def test_non_utf8_file_names_in_the_sourcemap(non_utf8_names: Path) -> None:
    res = run_pilot("sourcemap", cwd=non_utf8_names)
    assert res.returncode == 0, res.stderr
