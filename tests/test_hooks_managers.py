"""git hooks beside the hook managers people use: husky (v9 and a tracked v8-style directory),
hand-made dispatchers that read their own name, lefthook and the pre-commit framework.

Every hook fires from a real git command. The user's hooks must still run under their own
name with their exit status standing, git pilot's part must run too, nothing in the work
tree may change, and ``hooks status`` must say what really runs. Real husky and lefthook
are used where they are on PATH (``npm install --prefix DIR husky lefthook``, then
``DIR/node_modules/.bin`` on PATH), real pre-commit where Python can import it (the ``test``
extra installs it); those tests skip elsewhere.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT, git, make_repo, run_pilot
from test_hooks import EVENTS, calls, install, point_hooks_at, recorder, sh

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))
from bench.hooks import husky_layout  # noqa: E402  (husky v9's layout, shared with the benchmark)

HUSKY_HOOK = '#!/usr/bin/env sh\n. "$(dirname "$0")/h"'  # what husky writes for every hook


def bare_remote(tmp_path: Path, repo: Path) -> Path:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    return remote


def snapshot(repo: Path) -> dict[str, bytes]:
    """Every file of the work tree outside .git, ignored ones included, by content."""
    out = {}
    for path in sorted(repo.rglob("*")):
        rel = path.relative_to(repo)
        if rel.parts[0] != ".git" and path.is_file():
            out[str(rel)] = path.read_bytes()
    return out


def own_hooks(repo: Path) -> Path:
    return repo / ".git" / "pilot" / "hooks"


def tree_id(repo: Path) -> str:
    res = run_pilot("check", "--tree", cwd=repo)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


def test_husky_v9_hooks_keep_running_under_their_own_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    log = tmp_path / "husky.log"
    repo = make_repo(tmp_path / "r", {
        "a.txt": "a\n",
        ".husky/pre-push": f'echo "husky pre-push $*" >> {log}\necho "no pushing today" >&2\nexit 1\n',
        ".husky/post-checkout": f'echo "husky post-checkout $*" >> {log}\n',
        ".husky/commit-msg": 'grep -q "^feat" "$1" || { echo "not a feat" >&2; exit 1; }\n',
    })
    husky_layout(repo)
    remote = bare_remote(tmp_path, repo)
    before, tree_before = snapshot(repo), tree_id(repo)
    out = install(repo)
    assert "core.hooksPath was .husky/_, in the work tree: git pilot writes nothing there" in out
    assert snapshot(repo) == before and tree_id(repo) == tree_before
    assert git(repo, "config", "core.hooksPath").strip() == str(own_hooks(repo))
    status = run_pilot("hooks", "status", cwd=repo).stdout
    assert f"hooks directory: {own_hooks(repo)}" in status
    assert "pre-push: installed (runs .husky/_/pre-push first, under its own name)" in status
    assert install(repo).strip() == f"hooks: already installed in {own_hooks(repo)} (running .husky/_'s hooks first)"

    # The push husky refuses is refused, by husky's own script, with husky's words.
    res = sh(repo, "git", "push", "origin", "main")
    assert res.returncode != 0
    assert "no pushing today" in res.stderr and "husky - pre-push script failed (code 1)" in res.stdout + res.stderr
    assert git(remote, "for-each-ref").strip() == ""
    assert log.read_text() == f"husky pre-push origin {remote}\n"
    # A hook git pilot has no part in (commit-msg) still runs, through its forwarder.
    (repo / "a.txt").write_text("b\n")
    git(repo, "add", "a.txt")
    refused = sh(repo, "git", "commit", "-q", "-m", "fix: b")
    assert refused.returncode != 0 and "not a feat" in refused.stderr
    assert git(repo, "commit", "-q", "-m", "feat: b") == ""
    # post-checkout: husky's script and git pilot's part both run, with git's arguments.
    python, calls_log = recorder(tmp_path, monkeypatch)
    point_hooks_at(own_hooks(repo), python)
    log.unlink()
    old = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "-b", "side", "HEAD~1")
    new = git(repo, "rev-parse", "HEAD").strip()
    assert log.read_text() == f"husky post-checkout {old} {new} 1\n"
    assert calls(calls_log) == [f"post-checkout {old} {new} 1"]

    res = run_pilot("hooks", "uninstall", cwd=repo)
    assert res.returncode == 0 and "core.hooksPath is .husky/_" in res.stdout
    assert git(repo, "config", "core.hooksPath").strip() == ".husky/_"
    assert not any((own_hooks(repo) / e).exists() for e in EVENTS)
    assert snapshot(repo) == {**before, "a.txt": b"a\n"}


def test_a_tracked_hooks_directory_is_never_written(tmp_path: Path) -> None:
    # husky 8 and hand-made setups: core.hooksPath names a tracked directory.
    repo = make_repo(tmp_path / "r", {
        "a.txt": "a\n",
        ".githooks/pre-push": "#!/bin/sh\necho 'team policy: no pushes to main' >&2\nexit 3\n",
        ".githooks/dispatch": ('#!/bin/sh\ncase "$(basename "$0")" in\n'
                               '  pre-commit) echo "dispatch saw pre-commit" >&2; exit 4 ;;\n'
                               '  *) echo "dispatch: unknown hook $0" >&2; exit 9 ;;\nesac\n'),
    })
    (repo / ".githooks" / "pre-push").chmod(0o755)
    (repo / ".githooks" / "dispatch").chmod(0o755)
    os.symlink("dispatch", repo / ".githooks" / "pre-commit")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "hooks")
    git(repo, "config", "core.hooksPath", ".githooks")
    remote = bare_remote(tmp_path, repo)
    before = snapshot(repo)
    install(repo)
    assert snapshot(repo) == before
    assert git(repo, "status", "--porcelain", "--ignored") == ""
    res = sh(repo, "git", "push", "origin", "main")
    assert res.returncode != 0 and "team policy: no pushes to main" in res.stderr
    assert git(remote, "for-each-ref").strip() == ""
    (repo / "a.txt").write_text("b\n")
    git(repo, "add", "a.txt")
    res = sh(repo, "git", "commit", "-q", "-m", "b")
    assert res.returncode != 0 and "dispatch saw pre-commit" in res.stderr
    status = run_pilot("hooks", "status", cwd=repo).stdout
    assert "pre-push: installed (runs .githooks/pre-push first, under its own name)" in status
    assert "post-checkout: installed\n" in status  # nothing of the user's runs first there
    # A hook whose mere presence changes git's behaviour is forwarded only where it exists: one
    # added later is named by status until the next install.
    (repo / ".githooks" / "reference-transaction").write_text("#!/bin/sh\nexit 0\n")
    (repo / ".githooks" / "reference-transaction").chmod(0o755)
    status = run_pilot("hooks", "status", cwd=repo).stdout
    assert (".githooks/reference-transaction does not run: it came after git pilot's install "
            "(run: git pilot hooks install)") in status
    assert "updated reference-transaction" in install(repo)
    assert "reference-transaction" not in run_pilot("hooks", "status", cwd=repo).stdout


def test_an_earlier_install_inside_the_work_tree_is_taken_out(tmp_path: Path) -> None:
    """A git pilot before this one renamed husky's hooks to <hook>.legacy in .husky/_: the new
    install puts them back and runs them from its own directory."""
    repo = make_repo(tmp_path / "r", {".husky/pre-push": "echo refused >&2\nexit 1\n"})
    husky_layout(repo)
    underscore = repo / ".husky" / "_"
    shutil.copy(underscore / "pre-push", underscore / "pre-push.legacy")
    (underscore / "pre-push").write_text("#!/bin/sh\n# git-pilot-hook: pre-push. an old install\n"
                                         'if [ -x "$0.legacy" ]; then "$0.legacy" "$@" || exit $?; fi\n')
    bare_remote(tmp_path, repo)
    assert sh(repo, "git", "push", "origin", "main").returncode == 0  # the bug: husky's refusal was lost
    out = install(repo)
    assert "took git pilot's hooks out of .husky/_ and put yours back" in out
    assert (underscore / "pre-push").read_text() == HUSKY_HOOK
    assert not (underscore / "pre-push.legacy").exists()
    git(repo, "commit", "-q", "--allow-empty", "-m", "more")
    res = sh(repo, "git", "push", "origin", "main")
    assert res.returncode != 0 and "refused" in res.stderr


def test_a_dispatcher_in_the_git_dir_is_not_renamed(tmp_path: Path) -> None:
    """A hook in .git/hooks that reads its own name (husky v4, overcommit, a symlinked dispatcher)."""
    repo = make_repo(tmp_path / "r")
    hooks = repo / ".git" / "hooks"
    (hooks / "dispatch").write_text('#!/bin/sh\nname=${0##*/}\n[ "$name" = pre-push ] || '
                                    '{ echo "dispatch: no hook $name" >&2; exit 0; }\n'
                                    'echo "dispatch refuses the push" >&2\nexit 5\n')
    (hooks / "dispatch").chmod(0o755)
    os.symlink("dispatch", hooks / "pre-push")
    remote = bare_remote(tmp_path, repo)
    out = install(repo)
    assert "git pilot writes nothing there" in out
    assert os.readlink(hooks / "pre-push") == "dispatch" and not (hooks / "pre-push.legacy").exists()
    res = sh(repo, "git", "push", "origin", "main")
    assert res.returncode != 0 and "dispatch refuses the push" in res.stderr
    assert git(remote, "for-each-ref").strip() == ""
    run_pilot("hooks", "uninstall", cwd=repo)
    assert git(repo, "config", "--get", "core.hooksPath", check=False) == ""
    assert sorted(p.name for p in own_hooks(repo).iterdir()) == []


# --- real hook managers ---------------------------------------------------------------------------

def _which(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not on PATH (npm install --prefix DIR {name}; put DIR/node_modules/.bin on PATH)")
    return found


def test_real_husky(tmp_path: Path) -> None:
    husky = _which("husky")
    repo = make_repo(tmp_path / "r", {"a.txt": "a\n", ".husky/pre-push": "echo 'husky says no' >&2\nexit 1\n"})
    res = subprocess.run([husky], cwd=repo, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert git(repo, "config", "core.hooksPath").strip() == ".husky/_"
    remote = bare_remote(tmp_path, repo)
    before = snapshot(repo)
    install(repo)
    assert snapshot(repo) == before
    res = sh(repo, "git", "push", "origin", "main")
    assert res.returncode != 0 and "husky says no" in res.stderr
    assert git(remote, "for-each-ref").strip() == ""
    # `npm install` runs husky again: it points core.hooksPath back at .husky/_. status says so.
    subprocess.run([husky], cwd=repo, capture_output=True, check=True)
    status = run_pilot("hooks", "status", cwd=repo).stdout
    assert f"hooks directory: {repo / '.husky' / '_'}" in status
    assert "pre-push: a hook git pilot did not write" in status
    assert f"git pilot's hooks in {own_hooks(repo)} do not run: core.hooksPath is .husky/_ now" in status
    install(repo)
    assert "pre-push: installed (runs .husky/_/pre-push first" in run_pilot("hooks", "status", cwd=repo).stdout
    assert sh(repo, "git", "push", "origin", "main").returncode != 0


def test_real_lefthook(tmp_path: Path) -> None:
    lefthook = _which("lefthook")
    mark = tmp_path / "lefthook-post-checkout"
    config = ("pre-push:\n  commands:\n    policy:\n      run: echo 'lefthook refuses' >&2; exit 1\n"
              f"post-checkout:\n  commands:\n    mark:\n      run: echo ran >> {mark}\n")
    repo = make_repo(tmp_path / "r", {"a.txt": "a\n", "lefthook.yml": config})
    subprocess.run([lefthook, "install"], cwd=repo, capture_output=True, check=True)
    remote = bare_remote(tmp_path, repo)
    before = snapshot(repo)
    out = install(repo)
    assert "kept your pre-push hook as pre-push.legacy; it still runs first" in out
    assert snapshot(repo) == before
    res = sh(repo, "git", "push", "origin", "main")
    assert res.returncode != 0 and "lefthook refuses" in res.stdout + res.stderr
    assert git(remote, "for-each-ref").strip() == ""
    git(repo, "checkout", "-q", "-b", "side")
    git(repo, "commit", "-q", "--allow-empty", "-m", "side")
    git(repo, "checkout", "-q", "main")
    assert mark.read_text() == "ran\nran\n"  # both checkouts (git runs post-checkout for -b too)
    status = run_pilot("hooks", "status", cwd=repo).stdout
    assert "pre-push: installed (runs pre-push.legacy first, under its own name)" in status


def _pre_commit() -> list[str]:
    if subprocess.run([sys.executable, "-c", "import pre_commit"], capture_output=True).returncode == 0:
        return [sys.executable, "-m", "pre_commit"]
    return [_which("pre-commit")]


def test_real_pre_commit_framework(tmp_path: Path) -> None:
    pre_commit = _pre_commit()
    verdict = tmp_path / "verdict"
    verdict.write_text("1")
    config = ("repos:\n- repo: local\n  hooks:\n  - id: policy\n    name: policy\n"
              f"    entry: sh -c 'echo pre-commit policy ran >&2; exit $(cat {verdict})'\n"
              "    language: system\n    always_run: true\n    pass_filenames: false\n    stages: [pre-push]\n")
    pilot = '[[check]]\nname = "t"\nrun = "true"\n[share]\ngate = ["t"]\n'
    repo = make_repo(tmp_path / "r", {"a.txt": "a\n", ".pre-commit-config.yaml": config, ".gitpilot.toml": pilot})
    res = subprocess.run([*pre_commit, "install", "-t", "pre-push"], cwd=repo, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    theirs = (repo / ".git" / "hooks" / "pre-push").read_bytes()
    remote = bare_remote(tmp_path, repo)
    out = install(repo)
    assert "pre-push is pre-commit's: git pilot's hook is pre-push.legacy, which pre-commit runs first" in out
    assert (repo / ".git" / "hooks" / "pre-push").read_bytes() == theirs
    res = sh(repo, "git", "push", "origin", "main")
    assert res.returncode != 0 and "pre-commit policy ran" in res.stdout + res.stderr
    assert "pre-push gate: running t on main" in res.stderr  # git pilot's gate ran, as pre-commit's legacy hook
    assert git(remote, "for-each-ref").strip() == ""
    verdict.write_text("0")
    res = sh(repo, "git", "push", "origin", "main")
    assert res.returncode == 0, res.stderr
    assert "policy....." in res.stdout and "Passed" in res.stdout
    assert "pre-push gate: t already passed on main" in res.stderr
    # pre-commit's own uninstall puts its .legacy back under the hook's name: git pilot's shim, which
    # then runs alone.
    subprocess.run([*pre_commit, "uninstall", "-t", "pre-push"], cwd=repo, capture_output=True, check=True)
    assert "pre-push: installed\n" in run_pilot("hooks", "status", cwd=repo).stdout
