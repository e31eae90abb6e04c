"""Checks scoped to their files: ``files = [...]`` keys a check's results by the tree of the
matching files only, so an edit elsewhere reuses its pass; read back with stock git."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import git, make_repo, run_pilot

COUNT = "count.log"


def _repo(tmp_path: Path, files_line: str = 'files = ["src/**", "tests/**", "pyproject.toml"]',
          extra_checks: str = "") -> tuple[Path, Path]:
    counter = tmp_path / COUNT  # outside the repository: each real run appends a line
    cfg = (f'[[check]]\nname = "unit"\nrun = "test -f src/app.py && echo unit >> {counter}"\n{files_line}\n\n'
           + extra_checks)
    repo = make_repo(tmp_path / "p", {
        ".gitpilot.toml": cfg, "src/app.py": "x = 1\n", "tests/test_app.py": "def test(): pass\n",
        "pyproject.toml": "[project]\nname = 'p'\n", "docs/guide.md": "# Guide\n", "README.md": "# p\n",
    })
    return repo, counter


def _runs(counter: Path) -> int:
    return len(counter.read_text().splitlines()) if counter.exists() else 0


def _note(repo: Path, tree: str) -> list[dict[str, object]]:
    body = git(repo, "notes", "--ref=pilot/checks", "show", tree, check=False)
    return [json.loads(line) for line in body.splitlines() if line.strip()]


def _checked(repo: Path) -> dict[str, object]:
    res = run_pilot("check", "--json", cwd=repo)
    assert res.returncode in (0, 1), res.stderr
    data = json.loads(res.stdout)
    assert isinstance(data, dict)
    return data


def test_a_docs_edit_reuses_the_scoped_pass_and_a_source_edit_reruns_it(tmp_path: Path) -> None:
    repo, counter = _repo(tmp_path)
    first = run_pilot("check", "--explain", cwd=repo)
    assert first.returncode == 0, first.stdout + first.stderr
    assert _runs(counter) == 1
    # --explain names the scope and the subtree the pass is keyed by; stock git shows that
    # subtree holds exactly the matching files
    scope_line = next(ln for ln in first.stdout.splitlines() if "scope" in ln)
    assert "scope src/**, tests/**, pyproject.toml" in scope_line
    subtree = scope_line.rsplit(" ", 1)[1]
    assert git(repo, "ls-tree", "-r", "--name-only", subtree).split() == [
        "pyproject.toml", "src/app.py", "tests/test_app.py"]
    assert [(r["check"], r["result"]) for r in _note(repo, subtree)] == [("unit", "pass")]
    whole = run_pilot("check", "--tree", cwd=repo).stdout.strip()
    assert whole != subtree and _note(repo, whole) == []

    (repo / "docs/guide.md").write_text("# Guide\n\nMore words.\n")
    (repo / "NOTES.txt").write_text("an untracked file outside the scope\n")
    again = run_pilot("check", "--explain", cwd=repo)
    assert again.returncode == 0 and "(reused: passed" in again.stdout
    assert subtree in again.stdout and _runs(counter) == 1

    (repo / "src/app.py").write_text("x = 2\n")
    edited = run_pilot("check", cwd=repo)
    assert edited.returncode == 0 and "reused" not in edited.stdout
    assert _runs(counter) == 2
    (repo / "tests/test_new.py").write_text("def test_new(): pass\n")  # untracked, inside the scope
    added = run_pilot("check", cwd=repo)
    assert "reused" not in added.stdout and _runs(counter) == 3
    # back to the state that passed first: its pass counts again
    (repo / "tests/test_new.py").unlink()
    (repo / "src/app.py").write_text("x = 1\n")
    back = run_pilot("check", cwd=repo)
    assert "(reused: passed" in back.stdout and _runs(counter) == 3


def test_exclusions_and_ignored_files_stay_out_of_the_scope(tmp_path: Path) -> None:
    repo, counter = _repo(tmp_path, 'files = ["src/**", "!src/generated/**"]')
    (repo / ".gitignore").write_text("*.pyc\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore")
    assert run_pilot("check", cwd=repo).returncode == 0 and _runs(counter) == 1
    (repo / "src/generated").mkdir()
    (repo / "src/generated/out.py").write_text("made = True\n")
    (repo / "src/app.pyc").write_bytes(b"\0compiled")
    data = _checked(repo)
    assert data["checks"][0]["reused"] is True and data["checks"][0]["files"] == ["src/**", "!src/generated/**"]
    assert _runs(counter) == 1


def test_the_scope_is_part_of_the_key_but_not_its_order(tmp_path: Path) -> None:
    repo, counter = _repo(tmp_path)
    assert run_pilot("check", cwd=repo).returncode == 0
    cfg = repo / ".gitpilot.toml"
    cfg.write_text(cfg.read_text().replace('["src/**", "tests/**", "pyproject.toml"]',
                                           '["pyproject.toml", "tests/**", "src/**"]'))
    # .gitpilot.toml is outside the scope, so the same subtree and the same key: reused
    assert "(reused: passed" in run_pilot("check", cwd=repo).stdout and _runs(counter) == 1
    cfg.write_text(cfg.read_text().replace('"tests/**", ', ""))
    narrowed = _checked(repo)
    assert narrowed["checks"][0]["reused"] is False and _runs(counter) == 2


def test_a_scoped_pass_is_recorded_only_when_its_own_files_did_not_change(tmp_path: Path) -> None:
    repo, counter = _repo(tmp_path)
    (repo / ".gitpilot.toml").write_text(
        # unit writes a report outside its scope: its pass still belongs to the subtree it saw
        f'[[check]]\nname = "unit"\nrun = "echo unit >> {counter} && echo report > report.txt"\n'
        'files = ["src/**"]\n\n'
        # touch-src edits its own files: nothing recorded for it
        '[[check]]\nname = "touch-src"\nrun = "echo y = 2 >> src/app.py"\nfiles = ["src/**"]\n\n'
        '[[check]]\nname = "whole"\nrun = "true"\n')
    before_whole = run_pilot("check", "--tree", cwd=repo).stdout.strip()
    data = _checked(repo)
    by = {c["name"]: c for c in data["checks"]}
    assert by["unit"]["recorded"] is True
    assert by["touch-src"]["recorded"] is False and "not_recorded" in by["touch-src"]
    assert by["touch-src"]["tree"] == by["unit"]["tree"]
    # whole ran after both and is keyed by the tree it saw (report.txt and the edit included)
    assert by["whole"]["tree"] == data["final_tree"] != before_whole
    assert [r["check"] for r in _note(repo, str(by["unit"]["tree"]))] == ["unit"]
    # the next run: unit's subtree changed (touch-src's edit), so unit runs again
    again = _checked(repo)
    assert {c["name"]: c["reused"] for c in again["checks"]}["unit"] is False and _runs(counter) == 2


def test_bad_files_entries_get_a_clear_error_naming_the_file(tmp_path: Path) -> None:
    for bad, words in (('files = ["/src/**"]', "must be a glob relative to the repository root"),
                       ('files = ["../x/**"]', "must be a glob relative to the repository root"),
                       ('files = ["!docs/**"]', "has only exclusions"),
                       ('files = "src/**"', "must be a list of strings")):
        repo, counter = _repo(tmp_path / bad.replace("/", "_").replace('"', "").replace(" ", ""), bad)
        res = run_pilot("check", cwd=repo)
        assert res.returncode == 1, (bad, res.stdout, res.stderr)
        assert words in res.stderr and ".gitpilot.toml" in res.stderr and "Traceback" not in res.stderr
        assert _runs(counter) == 0
        assert git(repo, "notes", "--ref=pilot/checks", "list", check=False) == ""


def test_scoped_tree_ids_hashed_in_python_are_the_ids_git_writes(tmp_path: Path) -> None:
    from gitpilot.repo import Repo

    repo = make_repo(tmp_path / "ids", {
        "a.b": "2\n", "a-b/c": "3\n", "a/b": "4\n", "a/b.c": "5\n", "a0/x": "6\n",
        "deep/er/still/f.py": "7\n", "tool.sh": "#!/bin/sh\n", "docs/x.md": "# x\n",
    })
    (repo / "tool.sh").chmod(0o755)
    (repo / "link").symlink_to("a.b")
    sub = make_repo(tmp_path / "sub")
    git(repo, "add", "-A")
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{git(sub, 'rev-parse', 'HEAD').strip()},a/mod")
    git(repo, "commit", "-q", "-m", "tricky names")
    tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    r = Repo.discover(repo)
    scopes = [("a", "a.b", "a-b/**", "a0/**"), ("**/*.py", "tool.sh", "link"), ("a/**", "!a/b.c"), ("nothing/**",), ("**",)]
    hashed = r.tree_ids_of(tree, scopes)
    written = r.tree_ids_of(tree, scopes, write=True)
    assert hashed == written
    assert hashed[-1] == tree  # everything: the commit's own tree
    assert hashed[3] == "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # no file matches: the empty tree
    assert git(repo, "ls-tree", "-r", "--name-only", written[2]).split() == ["a/b", "a/mod"]
