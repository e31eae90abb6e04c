"""Bounds on what an untrusted remote sends: per note, per tree, per pull; what was dropped is said.

A real fork (a bare remote) carries notes written with git pilot's own store: a note on the
victim's tree with more lines than a tree keeps, a note larger than a pull reads, and more
notes and lines than one pull takes.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import git, make_repo, run_pilot

from gitpilot.checks.records import Record, command_hash, key_hash, this_platform
from gitpilot.config import CheckSpec
from gitpilot.repo import Repo
from gitpilot.share import bounds
from gitpilot.store.notes import NotesStore

SPEC = CheckSpec(name="unit", run="true")


def line(i: int) -> str:
    return Record(check="unit", cmd=command_hash(SPEC), key=key_hash(SPEC, {}), result="pass", secs=0.1,
                  time=f"2024-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z", email=f"e{i}@example.com", host="h",
                  platform=this_platform(), version="0.5.0", exit=0).to_line()


def test_a_hostile_fork_is_taken_within_bounds_and_the_drops_are_reported(tmp_path: Path) -> None:
    fork = tmp_path / "fork.git"
    git(tmp_path, "init", "-q", "--bare", str(fork))
    evil = make_repo(tmp_path / "evil", {".gitpilot.toml": "[[check]]\nname = \"unit\"\nrun = \"true\"\n"})
    git(evil, "remote", "add", "origin", str(fork))
    git(evil, "push", "-q", "origin", "main")
    tree = git(evil, "rev-parse", "HEAD^{tree}").strip()
    per_tree = bounds.MAX_LINES_PER_TREE
    notes: dict[str, list[str]] = {tree: [line(i) for i in range(per_tree + 50)]}  # 50 past the tree bound
    big = "f" * 40
    pad = [line(i) for i in range(3000)]  # ~800 KB: past the note bound, never read
    notes[big] = pad
    many = bounds.MAX_LINES_PER_PULL // 5 + 100  # five lines each: the pull bound stops it first
    for n in range(many):
        notes[f"{n:040x}"] = [line(5 * n + k) for k in range(5)]
    NotesStore(Repo.discover(evil), "refs/notes/pilot/checks").add_lines(notes, "hostile notes")
    git(evil, "push", "-q", "origin", "refs/notes/pilot/checks")

    victim = tmp_path / "victim"
    git(tmp_path, "clone", "-q", str(fork), str(victim))
    res = run_pilot("share", "pull", "--json", cwd=victim, timeout=300)
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    taken_trees = 1 + (bounds.MAX_LINES_PER_PULL - per_tree) // 5  # the victim's own tree comes first
    assert data["merged_lines"] == bounds.MAX_LINES_PER_PULL
    assert data["merged_trees"] == taken_trees
    assert data["dropped"] == {"big_notes": 1, "notes": many - (taken_trees - 1), "lines": 50}
    # The victim's tree holds the newest lines the tree bound allows, tagged as the fork's.
    stored = git(victim, "notes", "--ref=pilot/checks", "show", tree).splitlines()
    assert len(stored) == per_tree and all('"remote":"origin"' in ln for ln in stored)
    assert sorted(json.loads(ln)["email"] for ln in stored) == sorted(f"e{i}@example.com"
                                                                      for i in range(50, per_tree + 50))
    assert run_pilot("share", "pull", cwd=victim).stdout.strip() == "pulled check notes from origin: nothing new"
    text = run_pilot("share", "pull", cwd=victim)
    assert "dropped" not in text.stdout
    # In words, the first time:
    again = tmp_path / "again"
    git(tmp_path, "clone", "-q", str(fork), str(again))
    out = run_pilot("share", "pull", cwd=again, timeout=300).stdout.splitlines()
    assert out[-1] == (f"dropped from origin (bounds on what one remote sends): 1 note(s) over 256 KiB; "
                       f"{many - (taken_trees - 1)} note(s) past the 5,000 trees one pull takes; "
                       f"50 line(s) past {per_tree} per tree from one remote or 20,000 per pull")
    # A second pull of a changed note cannot push the tree past its bound either.
    NotesStore(Repo.discover(evil), "refs/notes/pilot/checks").add_lines(
        {tree: [line(10_000 + i) for i in range(20)]}, "more")
    git(evil, "push", "-q", "origin", "refs/notes/pilot/checks")
    data = json.loads(run_pilot("share", "pull", "--json", cwd=victim, timeout=300).stdout)
    # dropped: the 20 new lines and, again, the 50 the first pull left out
    assert data["merged_lines"] == 0 and data["dropped"]["lines"] == 70
    assert len(git(victim, "notes", "--ref=pilot/checks", "show", tree).splitlines()) == per_tree
