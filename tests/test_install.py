"""The README's first command on a clean install: `pip install .` then `git pilot demo` through git."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT


@pytest.mark.timeout(300)
def test_a_clean_install_runs_the_demo_through_git(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    # Dependencies come from where this interpreter finds them; the project itself is built and
    # installed as a user's `pip install .` would (no editable finder, no source tree on the path).
    # Not --system-site-packages: run inside a virtualenv, sys.executable is that venv's python,
    # and a venv made from it gets the *base* interpreter's site-packages, where `pip install
    # '.[test]'` put nothing. A .pth with this interpreter's own site-packages works in both.
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    inner = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                           capture_output=True, text=True, check=True).stdout.strip()
    ours = [p for p in sys.path if p.endswith(("site-packages", "dist-packages")) and Path(p).is_dir()]
    (Path(inner) / "outer-site-packages.pth").write_text("".join(f"{p}\n" for p in ours))
    src = tmp_path / "src"
    shutil.copytree(REPO_ROOT, src, ignore=shutil.ignore_patterns(".git", "__pycache__", "build", "*.egg-info"))
    pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-deps",
                          "--disable-pip-version-check", str(src)], capture_output=True, text=True)
    if pip.returncode != 0 and ("Could not find a version" in pip.stderr or "connection" in pip.stderr.lower()):
        pytest.skip("the build backend could not be fetched from the package index")
    assert pip.returncode == 0, pip.stderr
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    work = tmp_path / "elsewhere"
    work.mkdir()
    demo = subprocess.run(["git", "pilot", "demo"], cwd=work, env=env, capture_output=True, text=True, timeout=240)
    assert demo.returncode == 0, demo.stderr
    assert "PASS python3 tests/run_tests.py" in demo.stdout and "(reused: passed" in demo.stdout
    assert "not installed with this copy" not in demo.stdout + demo.stderr
    # what the installed copy ships besides the package: the man page; and the hook shims' template,
    # package data that `hooks install` finds in the installed copy: its shims run that copy
    assert (venv / "share" / "man" / "man1" / "git-pilot.1").is_file()
    repo = work / "hooked"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    hooks = subprocess.run(["git", "pilot", "hooks", "install"], cwd=repo, env=env, capture_output=True, text=True)
    assert hooks.returncode == 0 and "hooks: installed" in hooks.stdout, hooks.stderr
    shim = (repo / ".git" / "hooks" / "post-commit").read_text()
    assert f"PILOT_PYTHON='{venv / 'bin'}/" in shim and "PILOT_LIB=''" in shim  # the installed copy, by itself
    (repo / "a.txt").write_text("a\n")
    subprocess.run(["git", "add", "a.txt"], cwd=repo, check=True)
    commit = subprocess.run(["git", "-c", "user.name=A", "-c", "user.email=a@example.com", "commit", "-q", "-m", "a"],
                            cwd=repo, env={**env, "GIT_PILOT_HOOKS_SYNC": "1"}, capture_output=True, text=True)
    assert commit.returncode == 0 and commit.stderr == "", commit.stderr
    budget = subprocess.run(["git", "notes", "--ref=pilot/review", "show", "HEAD"], cwd=repo, capture_output=True,
                            text=True)
    assert budget.returncode == 0 and '"rounds"' in budget.stdout  # the post-commit hook recorded it
    version = subprocess.run(["git", "pilot", "--version"], cwd=work, env=env, capture_output=True, text=True)
    assert version.stdout.startswith("git pilot ")
