"""git hooks: installed shims, legacy hooks kept and chained, cheap exits, hooksPath and worktrees."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
from conftest import git, make_repo, run_pilot

EVENTS = ("post-checkout", "post-commit", "post-merge", "post-rewrite", "pre-push")


def install(cwd: Path) -> str:
    res = run_pilot("hooks", "install", cwd=cwd)
    assert res.returncode == 0, res.stderr
    return res.stdout


def sh(cwd: Path, *args: str, env: dict[str, str] | None = None, input: bytes | None = None
       ) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(list(args), cwd=cwd, input=input, capture_output=True,
                          env={**os.environ, **(env or {})}, timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def recorder(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A stand-in interpreter that logs the event and arguments the shim would give Python.

    The shims run it in the foreground (GIT_PILOT_HOOKS_SYNC=1) so the log is complete when git returns.
    """
    monkeypatch.setenv("GIT_PILOT_HOOKS_SYNC", "1")
    log = tmp / "calls.log"
    script = tmp / "fake-python"
    # The shim calls: PYTHON -P -c BOOT LIB EVENT ARGS...
    script.write_text(f'#!/bin/sh\nshift 4\necho "$*" >> {log}\n')
    script.chmod(0o755)
    return script, log


def point_hooks_at(hooks: Path, python: Path) -> None:
    for event in EVENTS:
        path = hooks / event
        text = path.read_text()
        lines = [f"PILOT_PYTHON='{python}'" if ln.startswith("PILOT_PYTHON=") else ln
                 for ln in text.split("\n")]
        path.write_text("\n".join(lines))


def calls(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def two_branches(path: Path) -> Path:
    repo = make_repo(path, {"a.txt": "a\n"})
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "b.txt").write_text("b\n")
    git(repo, "add", "b.txt")
    git(repo, "commit", "-q", "-m", "b")
    git(repo, "checkout", "-q", "main")
    return repo


def test_install_writes_marked_lf_0755_shims_with_the_real_interpreter(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r")
    out = install(repo)
    assert "installed post-checkout, post-commit, post-merge, post-rewrite, pre-push" in out
    for event in EVENTS:
        path = repo / ".git" / "hooks" / event
        data = path.read_bytes()
        assert data.startswith(b"#!/bin/sh\n# git-pilot-hook: " + event.encode())
        assert b"\r" not in data
        assert stat.S_IMODE(path.stat().st_mode) == 0o755
        python = next(ln for ln in data.decode().splitlines() if ln.startswith("PILOT_PYTHON="))
        recorded = python.partition("=")[2].strip("'")
        assert os.path.isabs(recorded) and os.access(recorded, os.X_OK)
        assert "shims" not in recorded  # the real interpreter, not a version manager's shim
        assert subprocess.run(["sh", "-n", str(path)]).returncode == 0
    before = {e: (repo / ".git" / "hooks" / e).read_bytes() for e in EVENTS}
    again = install(repo)
    assert again.strip() == f"hooks: already installed in {repo / '.git' / 'hooks'}"
    assert {e: (repo / ".git" / "hooks" / e).read_bytes() for e in EVENTS} == before
    status = run_pilot("hooks", "status", cwd=repo).stdout
    assert "pre-push: installed" in status and "not installed" not in status


def test_init_installs_the_hooks(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r")
    res = run_pilot("init", cwd=repo)
    assert res.returncode == 0, res.stderr
    assert "hooks: installed" in res.stdout
    assert all((repo / ".git" / "hooks" / e).exists() for e in EVENTS)


def test_existing_hook_is_kept_runs_first_with_args_and_its_exit_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = two_branches(tmp_path / "r")
    hooks = repo / ".git" / "hooks"
    log = tmp_path / "legacy.log"
    mine = f'#!/bin/sh\necho "legacy $*" >> {log}\nexit 3\n'
    (hooks / "post-checkout").write_text(mine)
    (hooks / "post-checkout").chmod(0o755)
    out = install(repo)
    assert "kept your post-checkout hook as post-checkout.legacy" in out
    assert (hooks / "post-checkout.legacy").read_text() == mine
    python, calls_log = recorder(tmp_path, monkeypatch)
    point_hooks_at(hooks, python)
    old = git(repo, "rev-parse", "HEAD").strip()
    res = sh(repo, "git", "checkout", "-q", "other", env={"GIT_PILOT_HOOKS_SYNC": "1"})
    new = git(repo, "rev-parse", "HEAD").strip()
    assert res.returncode != 0  # the user's hook failed: git checkout reports it, as without git pilot
    assert log.read_text() == f"legacy {old} {new} 1\n"
    assert calls(calls_log) == [f"post-checkout {old} {new} 1"]  # and git pilot's part still ran
    # uninstall puts the user's hook back, byte for byte, and removes only ours
    res2 = run_pilot("hooks", "uninstall", cwd=repo)
    assert "restored your post-checkout hook" in res2.stdout
    assert (hooks / "post-checkout").read_text() == mine
    assert not (hooks / "post-checkout.legacy").exists()
    assert not any((hooks / e).exists() for e in EVENTS if e != "post-checkout")


def test_legacy_pre_push_and_post_rewrite_get_the_same_stdin(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    config = "[[check]]\nname = \"t\"\nrun = \"true\"\n[share]\npush = true\n"
    repo = make_repo(tmp_path / "r", {"a.txt": "a\n", ".gitpilot.toml": config})
    git(repo, "remote", "add", "origin", str(remote))
    hooks = repo / ".git" / "hooks"
    log = tmp_path / "legacy.log"
    for event in ("pre-push", "post-rewrite"):
        (hooks / event).write_text(f'#!/bin/sh\necho "{event} $*" >> {log}\ncat >> {log}\n')
        (hooks / event).chmod(0o755)
    install(repo)
    assert run_pilot("check", cwd=repo).returncode == 0
    head = git(repo, "rev-parse", "HEAD").strip()
    res = sh(repo, "git", "push", "-q", "origin", "main")
    assert res.returncode == 0, res.stderr
    assert log.read_text() == f"pre-push origin {remote}\nrefs/heads/main {head} refs/heads/main {'0' * 40}\n"
    # git pilot's part read the same stdin: it saw a branch push and shared the notes along
    assert git(remote, "notes", "--ref=pilot/checks", "list").strip()
    log.unlink()
    git(repo, "commit", "-q", "--amend", "-m", "amended")
    new = git(repo, "rev-parse", "HEAD").strip()
    assert log.read_text() == f"post-rewrite amend\n{head} {new}\n"


def test_legacy_failure_refuses_the_push_before_git_pilot_runs(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    repo = make_repo(tmp_path / "r")
    git(repo, "remote", "add", "origin", str(remote))
    hooks = repo / ".git" / "hooks"
    (hooks / "pre-push").write_text("#!/bin/sh\necho 'policy says no' >&2\nexit 7\n")
    (hooks / "pre-push").chmod(0o755)
    install(repo)
    res = sh(repo, "git", "push", "origin", "main")
    assert res.returncode != 0 and "policy says no" in res.stderr
    assert git(remote, "for-each-ref").strip() == ""


def test_cheap_exits_never_start_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = two_branches(tmp_path / "r")
    install(repo)
    python, log = recorder(tmp_path, monkeypatch)
    point_hooks_at(repo / ".git" / "hooks", python)
    env = {"GIT_PILOT_HOOKS_SYNC": "1"}
    (repo / "a.txt").write_text("changed\n")
    sh(repo, "git", "checkout", "--", "a.txt", env=env)  # a file checkout: flag 0
    sh(repo, "git", "checkout", "-q", "-b", "same-head", env=env)  # same old and new HEAD
    sh(repo, "git", "checkout", "-q", "other", env={**env, "GIT_PILOT_SKIP_HOOKS": "1"})
    assert calls(log) == []
    sh(repo, "git", "checkout", "-q", "main", env=env)
    assert [c.split()[0] for c in calls(log)] == ["post-checkout"]
    log.unlink()
    # a rebase: post-checkout and per-commit post-commit are skipped; post-rewrite does the batch
    git(repo, "checkout", "-q", "other")
    (repo / "c.txt").write_text("c\n")
    git(repo, "add", "c.txt")
    git(repo, "commit", "-q", "-m", "c")
    log.unlink()
    git(repo, "checkout", "-q", "main")
    (repo / "d.txt").write_text("d\n")
    git(repo, "add", "d.txt")
    git(repo, "commit", "-q", "-m", "d")
    git(repo, "checkout", "-q", "other")
    log.unlink()
    res = sh(repo, "git", "rebase", "-q", "main", env=env)
    assert res.returncode == 0, res.stderr
    assert [c.split()[:2] for c in calls(log)] == [["post-rewrite", "rebase"]]
    log.unlink()
    sh(repo, "git", "commit", "-q", "--amend", "-m", "amend", env=env)
    assert [c.split()[0] for c in calls(log)] == ["post-commit"]  # post-rewrite amend exits in sh


def test_core_hooks_path_is_respected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = two_branches(tmp_path / "r")
    # Outside the work tree (a directory in it is a hook manager's: see test_hooks_managers.py).
    git(repo, "config", "core.hooksPath", str(tmp_path / "team-hooks"))
    out = install(repo)
    assert f"in {tmp_path / 'team-hooks'}" in out
    assert not (repo / ".git" / "hooks" / "post-checkout").exists()
    python, log = recorder(tmp_path, monkeypatch)
    point_hooks_at(tmp_path / "team-hooks", python)
    sh(repo, "git", "checkout", "-q", "other", env={"GIT_PILOT_HOOKS_SYNC": "1"})
    assert [c.split()[0] for c in calls(log)] == ["post-checkout"]


def test_linked_worktrees_share_the_common_hooks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = two_branches(tmp_path / "r")
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "wt-branch", str(wt), "main")
    out = install(wt)  # installed from the linked worktree: into the common dir's hooks
    assert f"in {repo / '.git' / 'hooks'}" in out
    python, log = recorder(tmp_path, monkeypatch)
    point_hooks_at(repo / ".git" / "hooks", python)
    env = {"GIT_PILOT_HOOKS_SYNC": "1"}
    sh(wt, "git", "checkout", "-q", "other", env=env)
    assert [c.split()[0] for c in calls(log)] == ["post-checkout"]
    # a rebase in the linked worktree is seen through its .git file
    log.unlink()
    git(wt, "checkout", "-q", "-b", "topic", "main")
    (wt / "t.txt").write_text("t\n")
    git(wt, "add", "t.txt")
    git(wt, "commit", "-q", "-m", "t")
    log.unlink()
    res = sh(wt, "git", "rebase", "-q", "other", env=env)
    assert res.returncode == 0, res.stderr
    assert [c.split()[0] for c in calls(log)] == ["post-rewrite"]


def test_interpreter_gone_falls_back_to_path_then_says_one_line(tmp_path: Path, pilot_on_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    repo = make_repo(tmp_path / "r", {".gitpilot.toml": "[[check]]\nname = \"t\"\nrun = \"true\"\n"
                                      "[share]\ngate = [\"t\"]\n"})
    git(repo, "remote", "add", "origin", str(remote))
    install(repo)
    point_hooks_at(repo / ".git" / "hooks", tmp_path / "no-such-python")
    res = sh(repo, "git", "push", "origin", "main")
    assert res.returncode == 0, res.stderr
    assert "pre-push gate: running t on main" in res.stderr  # git-pilot from PATH ran the gate
    path_without = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                                   if not (Path(p) / "git-pilot").exists())
    git(repo, "commit", "-q", "--allow-empty", "-m", "more")
    res = sh(repo, "git", "push", "origin", "main", env={"PATH": path_without})
    assert res.returncode == 0
    mentions = [ln for ln in res.stderr.splitlines() if "git pilot" in ln]
    assert mentions == [f"git pilot: {tmp_path / 'no-such-python'} is gone and git-pilot is not on PATH; "
                        "skipping its pre-push hook"]


def test_hooks_do_not_leak_git_dir_or_index_into_what_they_run(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    dump = tmp_path / "env.txt"
    repo = make_repo(tmp_path / "r", {".gitpilot.toml": f"[[check]]\nname = \"t\"\nrun = \"env > {dump}\"\n"
                                      "[share]\ngate = [\"t\"]\n"})
    git(repo, "remote", "add", "origin", str(remote))
    install(repo)
    git(repo, "branch", "side")
    (repo / "dirty.txt").write_text("not committed\n")  # so the gate checks `side` in a temporary worktree
    env = {"GIT_DIR": str(repo / ".git"), "GIT_INDEX_FILE": str(repo / ".git" / "index"),
           "GIT_WORK_TREE": str(repo)}
    res = sh(repo, "git", "push", "origin", "side", env=env)
    assert res.returncode == 0, res.stderr
    seen = dump.read_text()
    assert "GIT_DIR=" not in seen and "GIT_INDEX_FILE=" not in seen and "GIT_WORK_TREE=" not in seen
    assert git(repo, "worktree", "list").count("\n") == 1  # the temporary worktree is gone


def test_detached_refresh_never_slows_or_fails_the_checkout(tmp_path: Path) -> None:
    repo = two_branches(tmp_path / "r")
    install(repo)
    plug = tmp_path / "plug"
    plug.mkdir()
    done = tmp_path / "refreshed.txt"
    # A stand-in for the context capability's refresh: slow, then it fails.
    (plug / "sitecustomize.py").write_text(
        "import time\n"
        "def refresh_section_maps(repo):\n"
        "    time.sleep(3)\n"
        f"    open({str(done)!r}, 'a').write(repo.head() + '\\n')\n"
        "    raise RuntimeError('refresh broke')\n"
        "import gitpilot.context.cache as cache\n"
        "cache.refresh_section_maps = refresh_section_maps\n"
    )
    env = {"PYTHONPATH": f"{plug}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    import time

    start = time.monotonic()
    res = sh(repo, "git", "checkout", "-q", "other", env=env)
    took = time.monotonic() - start
    assert res.returncode == 0 and res.stderr == ""
    assert took < 2.0, took  # a refresh in the foreground would take 3 s and more
    head = git(repo, "rev-parse", "HEAD").strip()
    for _ in range(300):
        if done.exists() and (repo / ".git" / "pilot" / "logs" / "hooks.log").exists():
            break
        time.sleep(0.05)
    assert done.read_text() == head + "\n"
    for _ in range(40):
        if "refresh broke" in (repo / ".git" / "pilot" / "logs" / "hooks.log").read_text():
            break
        time.sleep(0.05)
    assert "RuntimeError: refresh broke" in (repo / ".git" / "pilot" / "logs" / "hooks.log").read_text()


def test_hook_command_rejects_unknown_events(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r")
    res = run_pilot("hook", "post-nothing", cwd=repo)
    assert res.returncode == 2 and "unknown hook event" in res.stderr


def test_a_pre_commit_managed_hook_gets_git_pilot_as_its_legacy_hook(tmp_path: Path) -> None:
    # pre-commit's script runs <hook>.legacy first itself: git pilot's shim goes there (issue 13, item 2
    # changes the earlier behaviour, which left the event without git pilot's hook).
    repo = make_repo(tmp_path / "r")
    hooks = repo / ".git" / "hooks"
    theirs = ("#!/usr/bin/env bash\n# File generated by pre-commit: https://pre-commit.com\n"
              "# ID: 138fd403232d2ddd5efb44317e38bf03\nexit 0\n")
    (hooks / "pre-push").write_text(theirs)
    (hooks / "pre-push").chmod(0o755)
    out = install(repo)
    assert "pre-push is pre-commit's: git pilot's hook is pre-push.legacy, which pre-commit runs first" in out
    assert (hooks / "pre-push").read_text() == theirs
    assert (hooks / "pre-push.legacy").read_bytes().startswith(b"#!/bin/sh\n# git-pilot-hook: pre-push")
    assert (hooks / "post-checkout").exists()
    status = run_pilot("hooks", "status", cwd=repo).stdout
    assert "pre-push: installed (as pre-push.legacy, which pre-commit's script runs first)" in status
    assert install(repo).strip() == f"hooks: already installed in {hooks}"
    run_pilot("hooks", "uninstall", cwd=repo)
    assert (hooks / "pre-push").read_text() == theirs and not (hooks / "pre-push.legacy").exists()


def test_pre_commit_with_the_users_legacy_hook_is_refused_in_one_line(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r")
    hooks = repo / ".git" / "hooks"
    (hooks / "pre-push").write_text("#!/usr/bin/env bash\n# File generated by pre-commit: x\nexit 0\n")
    (hooks / "pre-push.legacy").write_text("#!/bin/sh\nexit 0\n")
    for name in ("pre-push", "pre-push.legacy"):
        (hooks / name).chmod(0o755)
    out = install(repo)
    lines = [ln for ln in out.splitlines() if "pre-push" in ln and "left" in ln]
    assert lines == ["hooks: left pre-push alone: pre-commit manages it and runs your pre-push.legacy first; "
                     "git pilot's pre-push hook is not installed (add `git pilot hook pre-push \"$@\"` to "
                     "pre-push.legacy to run it)"]
    assert (hooks / "pre-push.legacy").read_text() == "#!/bin/sh\nexit 0\n"
    assert "pre-push: a hook git pilot did not write" in run_pilot("hooks", "status", cwd=repo).stdout


def test_shims_an_earlier_git_pilot_wrote_keep_working_and_install_refreshes_them(tmp_path: Path) -> None:
    """Users' repositories hold the per-event shims of git pilot 0.5.0 (fixtures/hooks-0.5.0, as
    its install filled them in): they still run this git pilot, ``hooks status`` says they are not
    this git pilot's, and ``hooks install`` writes the current ones over them."""
    import sys

    from conftest import REPO_ROOT

    repo = two_branches(tmp_path / "r")
    hooks = repo / ".git" / "hooks"
    for event in EVENTS:
        text = (REPO_ROOT / "fixtures" / "hooks-0.5.0" / event).read_text()
        text = text.replace("'@PYTHON@'", f"'{sys.executable}'").replace("'@LIB@'", f"'{REPO_ROOT}'")
        (hooks / event).write_text(text.replace("'@CHAIN@'", "''"))
        (hooks / event).chmod(0o755)
    (repo / "c.txt").write_text("c\n")
    git(repo, "add", "c.txt")
    res = sh(repo, "git", "commit", "-q", "-m", "c", env={"GIT_PILOT_HOOKS_SYNC": "1"})
    assert res.returncode == 0 and res.stderr == "", res.stderr
    assert '"rounds"' in git(repo, "notes", "--ref=pilot/review", "show", "HEAD")  # post-commit ran git pilot
    status = run_pilot("hooks", "status", cwd=repo).stdout
    assert all(f"{e}: installed, but not by this git pilot (run: git pilot hooks install)" in status for e in EVENTS)
    out = install(repo)
    assert f"hooks: installed {', '.join(EVENTS)} in {hooks}" in out
    assert not any((hooks / f"{e}.legacy").exists() for e in EVENTS)  # replaced, not kept as the user's
    for event in EVENTS:
        assert f"PILOT_EVENT={event}\n" in (hooks / event).read_text()
    status = run_pilot("hooks", "status", cwd=repo).stdout
    assert "not by this git pilot" not in status and status.count(": installed") == len(EVENTS)
