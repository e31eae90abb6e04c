"""Runs the real ``git`` binary with an environment cleaned of a calling hook's repository variables.

Hooks run with GIT_DIR, GIT_INDEX_FILE and friends set for the repository that fired them;
inheriting those would point our git calls at the wrong repository or index. This module is
cheap to import (no pygit2) so hot paths can use it.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from gitpilot.errors import PilotError
from gitpilot.gitenv import REPO_LOCATION_VARS as _REPO_LOCATION_VARS


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The process environment without repository-location variables, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in _REPO_LOCATION_VARS}
    if extra:
        env.update(extra)
    return env


def run_git(
    args: Sequence[str],
    cwd: str | Path | None,
    *,
    input: bytes | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git args`` in ``cwd``; with ``check``, a failure raises PilotError with git's message."""
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=cwd,
            input=input,
            env=clean_env(env),
            capture_output=True,
        )
    except FileNotFoundError as exc:
        raise PilotError("git is not installed or not on PATH") from exc
    if check and proc.returncode != 0:
        raise PilotError(f"git {args[0]} failed: {first_line(proc.stderr) or f'exit {proc.returncode}'}")
    return proc


def first_line(data: bytes) -> str:
    """The first non-empty line of git's stderr, without the ``fatal:``/``error:`` prefix."""
    for raw in data.decode("utf-8", "replace").splitlines():
        line = raw.strip()
        if line:
            for prefix in ("fatal: ", "error: "):
                if line.startswith(prefix):
                    line = line[len(prefix):]
            return line
    return ""


def start_git(args: Sequence[str], cwd: str | Path | None, *, env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Start ``git args`` in ``cwd`` without waiting (its stdout piped, stderr dropped): for a
    search that can run while Python does other work. The caller reads and waits."""
    try:
        return subprocess.Popen(["git", *args], cwd=cwd, env=clean_env(env), stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    except FileNotFoundError as exc:
        raise PilotError("git is not installed or not on PATH") from exc
