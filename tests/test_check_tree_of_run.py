"""Each check's result belongs to the tree it ran on: a later check that changes the working
tree never moves an earlier pass onto a tree that pass never saw."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import git, make_repo, run_pilot


def _repo(tmp_path: Path, checks: list[tuple[str, str]], files: dict[str, str] | None = None) -> Path:
    cfg = "".join(f'[[check]]\nname = "{n}"\nrun = "{r}"\n\n' for n, r in checks)
    return make_repo(tmp_path / "p", {".gitpilot.toml": cfg, **(files or {"app.py": "x = 1\n"})})


def _note(repo: Path, tree: str) -> list[dict[str, object]]:
    body = git(repo, "notes", "--ref=pilot/checks", "show", tree, check=False)
    return [json.loads(line) for line in body.splitlines() if line.strip()]


def test_a_later_check_creating_an_untracked_file_leaves_the_earlier_pass_on_the_tree_it_saw(tmp_path: Path) -> None:
    repo = _repo(tmp_path, [("nogen", "test ! -f gen.txt"), ("mut", "echo x > gen.txt")])
    before = run_pilot("check", "--tree", cwd=repo).stdout.strip()
    first = run_pilot("check", cwd=repo)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "not recorded: the check changed the working tree (mut)" in first.stdout
    after = run_pilot("check", "--tree", cwd=repo).stdout.strip()
    assert after != before
    # read with stock git: nogen's pass is on the tree without gen.txt, nothing on the one with it
    assert [(r["check"], r["result"]) for r in _note(repo, before)] == [("nogen", "pass")]
    assert _note(repo, after) == []
    # the tree with gen.txt was never checked by nogen: it runs, and fails, as --force would
    second = run_pilot("check", cwd=repo)
    assert second.returncode == 1
    assert "FAIL test ! -f gen.txt exit 1" in second.stdout
    assert "reused" not in second.stdout.splitlines()[0]
    forced = run_pilot("check", "--force", "--only", "nogen", cwd=repo)
    assert forced.returncode == 1
    # the untracked file removed: the tree nogen passed on is back, and its pass counts again
    (repo / "gen.txt").unlink()
    back = run_pilot("check", "--only", "nogen", cwd=repo)
    assert back.returncode == 0 and "(reused: passed" in back.stdout


def test_a_later_check_deleting_a_tracked_file(tmp_path: Path) -> None:
    repo = _repo(tmp_path, [("has", "test -f victim.txt"), ("del", "rm victim.txt")],
                 {"victim.txt": "v\n"})
    tree0 = run_pilot("check", "--tree", cwd=repo).stdout.strip()
    first = run_pilot("check", "--json", cwd=repo)
    data = json.loads(first.stdout)
    assert data["tree"] == tree0 and data["final_tree"] != tree0
    by = {c["name"]: c for c in data["checks"]}
    assert by["has"]["tree"] == tree0 and by["has"]["recorded"] is True
    assert by["del"]["recorded"] is False
    assert [r["check"] for r in _note(repo, tree0)] == ["has"]
    assert _note(repo, data["final_tree"]) == []
    second = run_pilot("check", "--only", "has", cwd=repo)
    assert second.returncode == 1 and "FAIL test -f victim.txt" in second.stdout
    git(repo, "checkout", "--", "victim.txt")
    assert run_pilot("check", "--tree", cwd=repo).stdout.strip() == tree0
    assert "(reused: passed" in run_pilot("check", "--only", "has", cwd=repo).stdout


def test_a_later_check_editing_a_tracked_file(tmp_path: Path) -> None:
    repo = _repo(tmp_path, [("orig", "grep -q original data.txt"), ("edit", "echo changed > data.txt")],
                 {"data.txt": "original\n"})
    tree0 = run_pilot("check", "--tree", cwd=repo).stdout.strip()
    assert run_pilot("check", cwd=repo).returncode == 0
    assert (repo / "data.txt").read_text() == "changed\n"
    tree1 = run_pilot("check", "--tree", cwd=repo).stdout.strip()
    assert [r["check"] for r in _note(repo, tree0)] == ["orig"]
    second = run_pilot("check", cwd=repo)
    assert second.returncode == 1 and "FAIL grep -q original data.txt exit 1" in second.stdout
    # the edit check leaves data.txt as it found it this time, so both results land on tree1
    assert sorted((r["check"], r["result"]) for r in _note(repo, tree1)) == [("edit", "pass"), ("orig", "fail")]


def test_the_same_check_twice_in_one_run(tmp_path: Path) -> None:
    runs = tmp_path / "runs.txt"
    count = f"echo run >> {runs}; test ! -f gen.txt"
    # listed twice on one tree: it runs once, the second reuses the pass this run recorded
    repo = _repo(tmp_path, [("a", count), ("b", count)])
    res = run_pilot("check", cwd=repo)
    assert res.returncode == 0, res.stdout + res.stderr
    assert runs.read_text().count("run") == 1
    assert res.stdout.splitlines()[1].startswith("PASS ") and "(reused: passed" in res.stdout.splitlines()[1]


def test_the_same_check_before_and_after_a_check_that_changes_the_tree(tmp_path: Path) -> None:
    runs = tmp_path / "runs.txt"
    count = f"echo run >> {runs}; test ! -f gen.txt"
    repo = _repo(tmp_path, [("a", count), ("mut", "echo x > gen.txt"), ("b", count)])
    tree0 = run_pilot("check", "--tree", cwd=repo).stdout.strip()
    res = run_pilot("check", "--json", cwd=repo)
    data = json.loads(res.stdout)
    assert res.returncode == 1  # the second run of the command sees gen.txt
    assert runs.read_text().count("run") == 2
    by = {c["name"]: c for c in data["checks"]}
    assert by["a"]["result"] == "pass" and by["a"]["tree"] == tree0
    assert by["b"]["result"] == "fail" and by["b"]["tree"] == data["final_tree"] != tree0
    assert [(r["check"], r["result"]) for r in _note(repo, tree0)] == [("a", "pass")]
    assert [(r["check"], r["result"]) for r in _note(repo, data["final_tree"])] == [("b", "fail")]


def test_check_tree_names_the_checked_state_not_the_index(tmp_path: Path) -> None:
    repo = _repo(tmp_path, [("ok", "true")])
    clean = run_pilot("check", "--tree", cwd=repo)
    assert clean.returncode == 0 and clean.stdout.strip() == git(repo, "write-tree").strip()
    (repo / "new.txt").write_text("n\n")
    (repo / "app.py").write_text("x = 2\n")
    dirty = run_pilot("check", "--tree", cwd=repo).stdout.strip()
    assert dirty != git(repo, "write-tree").strip()  # the index's tree does not see the edits
    assert git(repo, "status", "--porcelain") == " M app.py\n?? new.txt\n"  # index untouched
    run_pilot("check", cwd=repo)
    # the README's command shows the records of what was checked
    assert [r["check"] for r in _note(repo, dirty)] == ["ok"]
    git(repo, "add", "-A")
    assert git(repo, "write-tree").strip() == dirty
