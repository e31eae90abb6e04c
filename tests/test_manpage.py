"""The man page: ``git help pilot`` and ``git pilot --help`` (which git turns into ``git help pilot``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT, pilot_on_path  # noqa: F401

MAN_SOURCE = REPO_ROOT / "man" / "git-pilot.1"


def test_man_page_source_documents_every_command() -> None:
    from gitpilot.cli import COMMANDS

    text = MAN_SOURCE.read_text("utf-8")
    assert text.startswith(".TH GIT-PILOT 1")
    missing = [name for name in COMMANDS if name not in ("help", "hook") and f".B {name}" not in text
               and f"{name}," not in text and f", {name}" not in text]
    assert missing == []


def _installed_man() -> Path | None:
    # sys.prefix, not the interpreter's real path: in a venv the data files go under the venv
    page = Path(sys.prefix) / "share" / "man" / "man1" / "git-pilot.1"
    return page if page.exists() else None


@pytest.mark.skipif(shutil.which("man") is None, reason="man is not installed")
def test_git_help_pilot_shows_the_installed_page(tmp_path: Path) -> None:
    page = _installed_man()
    if page is None:
        pytest.skip("git pilot is not installed with its man page here (editable install)")
    bindir = str(Path(sys.prefix) / "bin")
    env = {**os.environ, "PATH": bindir + os.pathsep + os.environ["PATH"], "MANPAGER": "cat", "MANWIDTH": "80"}
    for argv in (["git", "help", "pilot"], ["git", "pilot", "--help"]):
        proc = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        text = " ".join(proc.stdout.replace("\u2010", "-").split())  # man justifies and wraps
        assert "git-pilot - decide, deterministically and locally, what reaches coding agents" in text
        assert "check [--force] [--only NAME|N]" in text
