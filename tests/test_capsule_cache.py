"""The context cache: reuse only on an unchanged fingerprint, section maps in notes, identical bytes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import DISCOVERY_FILES, REPO_ROOT, git, make_repo, run_pilot

from gitpilot.context.runner import build_capsule
from gitpilot.repo import Repo

FILES = {
    "AGENTS.md": "# Guide\n\nUse tabs.\n\n## Never\n\nNever force-push.\n",
    ".claude/rules/testing.md": "# Testing\n\nRun the fast suite first.\n",
    "CLAUDE.md": "# Memory\n\nKeep diffs small.\n\n@docs/imported.md\n",
    "docs/imported.md": "# Imported\n\nImported rule one.\n",
    "docs/cache.md": "# Cache\n\nThe cache keeps entries for ten minutes.\n\n"
    "## Eviction\n\nLeast recently used.\n",
    "CONTRIBUTING.md": "# Contributing\n\n## Tests\n\nRun `make test`.\n",
}
TASK = "Make cache entries expire after five minutes"


def _repo(tmp_path: Path) -> Repo:
    return Repo.discover(make_repo(tmp_path / "repo", FILES))


def test_an_unchanged_repository_reuses_the_capsule(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    first = build_capsule(repo, TASK)
    again = build_capsule(repo, TASK)
    assert not first.reused and again.reused
    assert again.text == first.text and again.path == first.path
    assert again.baseline_bytes == first.baseline_bytes


def test_a_changed_rule_is_never_reported_unchanged(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    root = repo.workdir
    build_capsule(repo, TASK)
    (root / "AGENTS.md").write_text(FILES["AGENTS.md"] + "\nUse spaces now.\n")  # dirty, unstaged
    res = build_capsule(repo, TASK)
    assert not res.reused and "Use spaces now." in res.text
    git(root, "commit", "-qam", "rule")  # committed: the index changes too
    (root / "AGENTS.md").write_text(FILES["AGENTS.md"] + "\nUse spaces now!\n")
    res = build_capsule(repo, TASK)
    assert not res.reused and "Use spaces now!" in res.text
    (root / "docs" / "imported.md").write_text("# Imported\n\nImported rule two.\n")  # an import changed
    res = build_capsule(repo, TASK)
    assert not res.reused
    (root / ".claude" / "rules" / "new.md").write_text(
        "# New\n\nA new untracked rule.\n"
    )  # a new memory file
    res = build_capsule(repo, TASK)
    assert not res.reused and "`.claude/rules/new.md`" in res.text
    (root / ".gitpilot.toml").write_text('[safety]\nnotes = "New note."\n')  # the config
    res = build_capsule(repo, TASK)
    assert not res.reused and "New note." in res.text
    assert build_capsule(repo, TASK).reused


def test_a_hand_edited_capsule_is_rebuilt(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    first = build_capsule(repo, TASK)
    assert first.path is not None
    first.path.write_text(first.text.replace("Use tabs.", "Use anything."))
    res = build_capsule(repo, TASK)
    assert not res.reused and res.text == first.text
    assert first.path.read_text() == first.text


def test_the_cli_warm_path_serves_and_notices_changes(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    root = repo.workdir
    assert "capsule built" in run_pilot("capsule", "--task", TASK, cwd=root).stdout
    assert "capsule reused" in run_pilot("capsule", "--task", TASK, cwd=root).stdout
    git(root, "status")  # refreshes and rewrites the index: the stamp misses, the full check still reuses
    assert "capsule reused" in run_pilot("capsule", "--task", TASK, cwd=root).stdout
    (root / ".claude" / "rules" / "testing.md").write_text("# Testing\n\nRun the slow suite too.\n")
    assert "capsule built" in run_pilot("capsule", "--task", TASK, cwd=root).stdout
    printed = run_pilot("capsule", "--task", TASK, "--print", cwd=root).stdout
    assert printed.startswith("# Context capsule") and TASK in printed


def test_section_maps_are_notes_on_blob_ids_and_are_not_parsed_again(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    root = repo.workdir
    first = build_capsule(repo, TASK)
    assert first.manifest["parsed_files"] > 0
    blob = git(root, "rev-parse", "HEAD:docs/cache.md").strip()
    note = json.loads(git(root, "notes", "--ref=pilot/sections", "show", blob))
    assert [s[1] for s in note["sections"]] == ["Cache", "Eviction"]
    assert "ten minutes" not in json.dumps(note)
    other = build_capsule(repo, "Document the eviction policy")
    assert other.manifest["parsed_files"] == 0
    git(root, "checkout", "-qb", "other")  # another branch, same blobs: still no parse
    third = build_capsule(repo, "Explain eviction to users")
    assert third.manifest["parsed_files"] == 0


def test_output_is_byte_identical_under_any_hash_seed(tmp_path: Path) -> None:
    src = make_repo(tmp_path / "src", FILES)
    script = (
        "import sys\nfrom gitpilot.context.runner import build_capsule\nfrom gitpilot.repo import Repo\n"
        "r = build_capsule(Repo.discover(sys.argv[1]), sys.argv[2])\n"
        "sys.stdout.buffer.write(r.text.encode() + b'\\0' + r.json_path.read_bytes())\n"
    )
    outputs = []
    for seed in ("1", "4242", "random"):
        clone = tmp_path / f"clone-{seed}"
        shutil.copytree(src, clone)
        env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), PYTHONHASHSEED=seed)
        proc = subprocess.run([sys.executable, "-c", script, str(clone), TASK], capture_output=True, env=env)
        assert proc.returncode == 0, proc.stderr.decode()
        outputs.append(proc.stdout.replace(str(clone).encode(), b"<root>"))
    assert outputs[0] == outputs[1] == outputs[2]
    assert b"Use tabs." in outputs[0]


def test_the_task_record_holds_the_capsule_and_manifest(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    res = build_capsule(repo, TASK)
    root = repo.workdir
    assert git(root, "show", f"refs/pilot/tasks/{res.task_id}:capsule.md") == res.text
    manifest = json.loads(git(root, "show", f"refs/pilot/tasks/{res.task_id}:manifest.json"))
    assert manifest["fingerprint"] == res.manifest["fingerprint"]
    roles = {s["path"]: s["roles"] for s in manifest["sources"]}
    assert "instruction" in roles["AGENTS.md"] and "memory" in roles[".claude/rules/testing.md"]
    assert "import" in roles["docs/imported.md"]
    # a fresh worktree without the files on disk restores the capsule from the record
    assert res.path is not None and res.json_path is not None
    res.path.unlink()
    res.json_path.unlink()
    again = build_capsule(repo, TASK)
    assert again.reused and again.text == res.text


def test_refresh_maps_parses_only_changed_markdown_blobs(tmp_path: Path) -> None:
    from gitpilot.context.cache import read_notes, refresh_maps

    repo = _repo(tmp_path)
    root = repo.workdir
    old = git(root, "rev-parse", "HEAD").strip()
    (root / "docs" / "cache.md").write_text("# Cache\n\n## TTL\n\nFive minutes.\n")
    (root / "docs" / "new.md").write_text("# New\n\nText.\n")
    (root / "src.py").write_text("x = 1\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "change")
    new = git(root, "rev-parse", "HEAD").strip()
    assert refresh_maps(repo, old, new) == 2
    blob = git(root, "rev-parse", "HEAD:docs/cache.md").strip()
    note = json.loads(read_notes(repo, [blob])[blob])
    assert [s[1] for s in note["sections"]] == ["Cache", "TTL"]
    assert refresh_maps(repo, old, new) == 0  # already there
    assert build_capsule(repo, "cache ttl").manifest["parsed_files"] < len(FILES)


def test_many_section_maps_land_as_one_notes_commit_that_stock_git_reads(tmp_path: Path) -> None:
    files = {f"docs/page{i}.md": f"# Page {i}\n\nTopic {i} explained.\n" for i in range(60)}
    root = make_repo(tmp_path / "repo", files)
    repo = Repo.discover(root)
    before = git(root, "rev-list", "--all", "--count")
    build_capsule(repo, "Explain topic 7")
    assert int(git(root, "rev-list", "--count", "refs/notes/pilot/sections")) == 1
    blob = git(root, "rev-parse", "HEAD:docs/page7.md").strip()
    note = json.loads(git(root, "notes", "--ref=pilot/sections", "show", blob))
    assert note["sections"][0][1] == "Page 7"
    assert len(git(root, "notes", "--ref=pilot/sections", "list").splitlines()) == 60
    assert before  # the repository's own history is untouched
    assert build_capsule(repo, "Explain topic 8").manifest["parsed_files"] == 0


def test_the_express_path_never_serves_a_capsule_after_a_same_size_edit(tmp_path: Path) -> None:
    import time

    from gitpilot.context import stamp

    repo = _repo(tmp_path)
    root = repo.workdir
    run_pilot("capsule", "--task", TASK, cwd=root)
    time.sleep(stamp.RACY_NS / 1e9 + 0.2)  # out of the racy window: the next full check writes a digest
    assert "capsule reused" in run_pilot("capsule", "--task", TASK, cwd=root).stdout
    assert stamp.express(str(root), TASK) is not None  # the stamp now serves warm runs alone
    doc = root / "docs" / "cache.md"
    old = doc.read_text()
    doc.write_text(old.replace("ten minutes", "six minutes"))  # same size, same second
    assert stamp.express(str(root), TASK) is None
    build_started = time.time_ns()  # what the next build takes as its start (not after it: a slow build)
    printed = run_pilot("capsule", "--task", TASK, "--print", cwd=root).stdout
    assert "six minutes" in printed and "ten minutes" not in printed
    # an edit made while the capsule was being built is never trusted by its signature
    sigs, missing, racy = stamp.take_sigs(str(root), ["docs/cache.md"], racy_after=build_started - stamp.RACY_NS)
    assert racy and sigs and not missing


def test_the_express_path_steps_aside_when_a_missing_file_appears_or_a_source_goes(tmp_path: Path) -> None:
    import time

    from gitpilot.context import stamp

    repo = _repo(tmp_path)
    root = repo.workdir
    run_pilot("capsule", "--task", TASK, cwd=root)
    time.sleep(stamp.RACY_NS / 1e9 + 0.2)
    run_pilot("capsule", "--task", TASK, cwd=root)
    assert stamp.express(str(root), TASK) is not None
    # a config that did not exist when the capsule was built: its [safety] notes must show
    (root / ".gitpilot.toml").write_text('[safety]\nnotes = "never touch billing"\n')
    assert stamp.express(str(root), TASK) is None
    assert "never touch billing" in run_pilot("capsule", "--task", TASK, "--print", cwd=root).stdout
    time.sleep(stamp.RACY_NS / 1e9 + 0.2)
    run_pilot("capsule", "--task", TASK, cwd=root)
    assert stamp.express(str(root), TASK) is not None
    (root / "docs" / "imported.md").unlink()  # an import the capsule was built from is gone
    assert stamp.express(str(root), TASK) is None
    assert "Imported rule one" not in run_pilot("capsule", "--task", TASK, "--print", cwd=root).stdout



def test_a_capsule_chosen_by_other_code_is_never_served(tmp_path: Path) -> None:
    """Same version number, different selection code (a development build, an upgrade that kept the
    number): neither the stamp, the stored files nor the task record serve the old capsule; the
    same code reinstalled (new file times, same bytes) still reuses it."""
    repo = _repo(tmp_path)
    root = repo.workdir
    code = tmp_path / "code"
    shutil.copytree(REPO_ROOT / "gitpilot", code / "gitpilot", ignore=shutil.ignore_patterns("__pycache__"))
    env = {"PYTHONPATH": str(code)}

    def capsule() -> str:
        proc = subprocess.run([sys.executable, "-m", "gitpilot", "capsule", "--task", TASK], cwd=root,
                              capture_output=True, text=True, env={**os.environ, **env}, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    assert "capsule built" in capsule()
    assert "capsule reused" in capsule()
    weights = code / "gitpilot" / "context" / "weights.py"
    weights.write_text(weights.read_text() + "\n# a changed line of selection code\n")
    assert "capsule built" in capsule()  # the stamp and the stored capsule were both refused
    assert "capsule reused" in capsule()
    for stored in (root / ".git" / "pilot").glob("capsule-*"):
        stored.unlink()  # only the task record is left
    weights.write_text(weights.read_text() + "# another\n")
    assert "capsule built" in capsule()
    before = weights.read_bytes()
    weights.unlink()
    weights.write_bytes(before)  # reinstalled: a new file, the same bytes
    assert "capsule reused" in capsule()


def _discovery_repo(tmp_path: Path) -> Path:
    """DISCOVERY_FILES with unrelated pages enough that the capsule is a selection."""
    files = dict(DISCOVERY_FILES)
    files.update({
        f"docs/guide/page{i}.md": f"# Page {i}\n\n## Overview {i}\n\n"
        + "".join(f"Paragraph {j} of page {i} describes the dashboard layout and colours.\n" for j in range(12))
        for i in range(30)
    })
    return make_repo(tmp_path / "repo", files)


def test_a_stored_capsule_is_not_served_after_the_code_it_chose_by_moved(tmp_path: Path) -> None:
    """The task's area comes from the tracked code: the same context files with the code that
    defines the task's name moved into another directory give another area, so the capsule is
    built again (and equals a fresh build), not reused from the tree before the move."""
    root = _discovery_repo(tmp_path)
    task = "Add a `RefreshInterval` option to our new inventory source"
    first = build_capsule(Repo.discover(root), task)
    assert "Every mechanism implements the Discoverer interface" in first.text
    assert "Blocks are two hours long." not in first.text
    git(root, "mv", "discovery/consul/consul.go", "storage/consul.go")
    git(root, "commit", "-qm", "move")
    after = build_capsule(Repo.discover(root), task)
    assert not after.reused
    assert "Blocks are two hours long." in after.text
    assert after.text == build_capsule(Repo.discover(root), task, use_cache=False).text


def test_an_unstaged_edit_to_the_code_does_not_move_the_area_until_it_is_staged(tmp_path: Path) -> None:
    """The task's area is read from the index, as every other input of the capsule is keyed: an
    unstaged edit that moves the task's name into another directory leaves the capsule as it
    was (a fresh build gives the same bytes the stored one has, so serving it is right); once
    the edit is staged the capsule is built again and brings the new directory's README."""
    root = _discovery_repo(tmp_path)
    task = "Add a `RefreshInterval` option to our new inventory source"
    first = build_capsule(Repo.discover(root), task)
    assert "Every mechanism implements the Discoverer interface" in first.text
    (root / "discovery/consul/consul.go").write_text("package consul\n\ntype SDConfig struct {}\n")
    (root / "storage/block.go").write_text("package storage\n\ntype Config struct { RefreshInterval int }\n")
    fresh = build_capsule(Repo.discover(root), task, use_cache=False)
    assert fresh.text == first.text
    assert build_capsule(Repo.discover(root), task).text == first.text
    git(root, "add", "-A")
    staged = build_capsule(Repo.discover(root), task)
    assert not staged.reused
    assert "Blocks are two hours long." in staged.text
    assert staged.text == build_capsule(Repo.discover(root), task, use_cache=False).text
