"""Test fixtures: real git repositories in tmp_path, with a pinned, hermetic environment.

HOME, git's global and system config, identities, dates and the editor are pinned so no
test reads the user's ~/.gitconfig and every run is the same. git is never mocked.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
# What the real claude and codex CLIs printed, kept in the repository so the suite needs
# nothing beside the clone.
SAMPLES = REPO_ROOT / "fixtures" / "agent-cli-samples"

_PINNED = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Ada Tester",
    "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Ada Tester",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
    "GIT_AUTHOR_DATE": "1700000000 +0000",
    "GIT_COMMITTER_DATE": "1700000000 +0000",
    "GIT_EDITOR": "true",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "NO_COLOR": "1",
    "LC_ALL": "C.UTF-8",
    "TZ": "UTC",
}


@pytest.fixture(autouse=True)
def _hermetic(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    for k, v in _PINNED.items():
        monkeypatch.setenv(k, v)
    for k in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PILOT_TASK", "GIT_PILOT_SKIP_HOOKS",
              "GIT_PREFIX", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY"):
        monkeypatch.delenv(k, raising=False)
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n[user]\n\tname = Ada Tester\n"
                                     "\temail = ada@example.com\n[advice]\n\tdetachedHead = false\n")
    yield


def git(cwd: Path, *args: str, input: bytes | None = None, check: bool = True) -> str:
    """Run real git in ``cwd`` and return its stdout as text."""
    proc = subprocess.run(["git", *args], cwd=cwd, input=input, capture_output=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr.decode()}")
    return proc.stdout.decode()


def make_repo(path: Path, files: dict[str, str] | None = None) -> Path:
    """A new repository at ``path`` with ``files`` committed (one commit)."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    for name, text in (files or {"README.md": "# demo\n"}).items():
        f = path / name
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


def pilot_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if extra:
        env.update(extra)
    return env


def as_in_a_terminal() -> None:
    """``preexec_fn`` of a process a test interrupts as a terminal's Ctrl-C would: SIGINT at its
    default, as a terminal's foreground command has it, whatever the test run inherited (a shell
    without job control starts a background job with SIGINT ignored, the ignoring is inherited,
    and Python then never raises KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_pilot(*args: str, cwd: Path, input: bytes | None = None, env: dict[str, str] | None = None,
              timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``git pilot ARGS`` from this checkout as a real process."""
    proc = subprocess.run([sys.executable, "-m", "gitpilot", *args], cwd=cwd, input=input,
                          capture_output=True, env=pilot_env(env), timeout=timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode("utf-8", "replace"),
                                       proc.stderr.decode("utf-8", "replace"))


@pytest.fixture
def pilot_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``git-pilot`` shim first on PATH, so ``git pilot ...`` runs this checkout through git."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    shim = bindir / "git-pilot"
    shim.write_text(f"#!/bin/sh\nPYTHONPATH={REPO_ROOT} exec {sys.executable} -m gitpilot \"$@\"\n")
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return shim


# A small tree whose code area decides the capsule: RefreshInterval is defined under discovery/,
# whose README says how a mechanism is written; storage/ is another area.
DISCOVERY_FILES = {
    "AGENTS.md": "# Guide\n\nKeep diffs small.\n",
    "discovery/README.md": "# Service discovery\n\n## Writing a mechanism\n\nEvery mechanism implements "
    "the Discoverer interface and registers its config type.\n",
    "discovery/consul/consul.go": "package consul\n\ntype SDConfig struct { RefreshInterval int }\n",
    "discovery/file/file.go": "package file\n\nfunc NewDiscovery() {}\n",
    "storage/README.md": "# Storage\n\n## Blocks\n\nBlocks are two hours long.\n",
    "storage/block.go": "package storage\n\nfunc Compact() {}\n",
}


def capsule_text(root: Path, task: str, *, use_cache: bool = True) -> str:
    """The capsule ``git pilot capsule`` gives for ``task`` in the repository at ``root``."""
    from gitpilot.context.runner import build_capsule
    from gitpilot.repo import Repo

    return build_capsule(Repo.discover(root), task, use_cache=use_cache).text


def forget_capsules(root: Path) -> None:
    """Remove the stored capsules and task records (the machine-local caches stay)."""
    for f in (root / ".git" / "pilot").glob("capsule-*"):
        f.unlink()
    for ref in git(root, "for-each-ref", "--format=%(refname)", "refs/pilot/tasks/").split():
        git(root, "update-ref", "-d", ref)
