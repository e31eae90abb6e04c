"""Shared helpers of the QA tests (``tests/test_qa_*.py``): what "a clear error that loses
nothing" means, as assertions.

* ``assert_clear_error``: the exit code DESIGN.md demands and one line on stderr naming the
  problem; no Python traceback for 1 and 2; for 3, the crash log's path, which must exist.
* ``Snapshot``: the user's refs, index entries and working-tree bytes, plus ``git fsck``, taken
  before a command and compared after it.

No tests here; the module is imported by the others.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from conftest import git

# Every subcommand with arguments that make it do its real work (not --help).
SUBCOMMANDS: tuple[tuple[str, ...], ...] = (
    ("check",),
    ("check", "--force"),
    ("check", "--json"),
    ("check", "--log", "unit"),
    ("capsule", "--task", "set up the widgets"),
    ("run", "--dry-run", "set up the widgets"),
    ("resume", "--dry-run", "abcd1234"),
    ("stop", "abcd1234"),
    ("status",),
    ("status", "--json"),
    ("state", "--task", "abcd1234"),
    ("review-budget",),
    ("review-budget", "--json"),
    ("codex", "review"),
    ("codex", "plan"),
    ("efficiency",),
    ("efficiency", "--json"),
    ("share", "setup"),
    ("share", "pull"),
    ("share", "push"),
    ("hooks", "status"),
    ("sourcemap",),
    ("sourcemap", "--json"),
    ("optimize", "propose"),
    ("optimize", "learned"),
    ("optimize", "undo", "no-such-receipt"),
    ("optimize", "apply", "no-such-proposal"),
    ("optimize", "forget", "no-such-fact"),
    ("config", "show"),
    ("config", "migrate"),
    ("doctor",),
    ("doctor", "--json"),
)


def one_line(stderr: str) -> str:
    """The single non-warning line of ``stderr`` (warnings may precede it)."""
    lines = [ln for ln in stderr.splitlines() if ln.strip() and not ln.startswith("warning: ")]
    assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}:\n{stderr}"
    return lines[0]


def assert_clear_error(res: subprocess.CompletedProcess[str], code: int, *needles: str) -> str:
    """``res`` failed with ``code`` and one clear stderr line holding every needle; returns it."""
    where = f"{' '.join(map(str, res.args[3:]))}: exit {res.returncode}\nstdout: {res.stdout}\nstderr: {res.stderr}"
    assert res.returncode == code, where
    assert "Traceback" not in res.stderr, where
    line = one_line(res.stderr)
    for needle in needles:
        assert needle.lower() in line.lower(), f"{needle!r} not in {line!r}"
    if code == 3:
        m = re.search(r"\(traceback: (.+)\)$", line)
        assert m and Path(m.group(1)).is_file(), where
    return line


def assert_no_crash(res: subprocess.CompletedProcess[str]) -> None:
    """Whatever the outcome, not an unexpected error: no exit 3, no traceback anywhere."""
    where = f"{' '.join(map(str, res.args[3:]))}: exit {res.returncode}\nstdout: {res.stdout}\nstderr: {res.stderr}"
    assert res.returncode in (0, 1, 2), where
    assert "Traceback" not in res.stderr + res.stdout, where
    if res.returncode in (1, 2):
        assert res.stderr.strip() or res.stdout.strip(), where


def _tree_bytes(root: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if rel == ".git" or rel.startswith(".git/"):
            continue
        if p.is_symlink():
            out[rel] = "link:" + str(p.readlink())
        elif p.is_file():
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@dataclass(frozen=True)
class Snapshot:
    """What the user owns in a repository: refs outside git pilot's namespaces, index, files."""

    refs: str
    index: str
    files: dict[str, str]

    @classmethod
    def take(cls, root: Path) -> Snapshot:
        refs = git(root, "for-each-ref", "--format=%(objectname) %(objecttype) %(refname)")
        mine = "\n".join(ln for ln in refs.splitlines()
                         if not ln.split(" ")[-1].startswith(("refs/pilot/", "refs/notes/")))
        head = git(root, "rev-parse", "--verify", "--quiet", "HEAD", check=False).strip()
        symbolic = git(root, "symbolic-ref", "--quiet", "HEAD", check=False).strip()
        return cls(f"{mine}\nHEAD {head} {symbolic}", git(root, "ls-files", "-s", "--debug"), _tree_bytes(root))

    def assert_unchanged(self, root: Path, allow: Iterable[str] = ()) -> None:
        """Same user refs, index and bytes (paths in ``allow`` may change); fsck clean."""
        now = Snapshot.take(root)
        assert now.refs == self.refs
        assert _entries(now.index) == _entries(self.index)
        allowed = set(allow)
        before = {k: v for k, v in self.files.items() if k not in allowed}
        after = {k: v for k, v in now.files.items() if k not in allowed}
        assert after == before
        assert_fsck_clean(root)


def _entries(ls_files_debug: str) -> list[str]:
    # Staged content (mode, blob, stage, path); the stat cache may be refreshed by `git status`.
    return [ln for ln in ls_files_debug.splitlines() if not ln.startswith(" ")]


def assert_fsck_clean(root: Path) -> None:
    proc = subprocess.run(["git", "fsck", "--no-dangling", "--no-progress"], cwd=root,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.returncode == 0, proc.stdout.decode("utf-8", "replace")
    refs = git(root, "for-each-ref", "--format=%(objecttype) %(refname)", "refs/pilot/", "refs/notes/")
    for line in refs.splitlines():
        kind, name = line.split(" ", 1)
        assert kind == "commit", f"{name} points at a {kind}"


WIDGETS_MD = "# Widgets\n\n## Setup\nRun make to set up the widgets.\n\n## Safety\nNever push to main.\n"
CONFIG = '[[check]]\nname = "unit"\nrun = "true"\n'


def standard_files() -> dict[str, str]:
    return {"README.md": WIDGETS_MD, "app.py": "def spin(speed):\n    return speed\n", ".gitpilot.toml": CONFIG}
