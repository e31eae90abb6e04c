"""Shared helpers for the benchmarks: synthetic repositories and alternating timed runs."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

PINNED = {
    "GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_AUTHOR_DATE": "1700000000 +0000", "GIT_COMMITTER_DATE": "1700000000 +0000",
    "GIT_CONFIG_NOSYSTEM": "1", "NO_COLOR": "1",
}


def env(extra: dict[str, str] | None = None) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    e.update(PINNED)
    # Users' installs have compiled bytecode (pip compiles at install); this machine sets
    # PYTHONDONTWRITEBYTECODE, which would make every run recompile our modules.
    e.pop("PYTHONDONTWRITEBYTECODE", None)
    src = str(Path(__file__).resolve().parents[1])
    e["PYTHONPATH"] = src + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    if extra:
        e.update(extra)
    return e


def real_python() -> str:
    """The real interpreter (not a version-manager shim)."""
    return os.path.realpath(sys.executable)


def pilot_argv() -> list[str]:
    """How a user's installed git-pilot starts: the console script if installed, else -m."""
    script = Path(real_python()).parent / "git-pilot"
    if script.exists():
        return [str(script)]
    return [real_python(), "-m", "gitpilot"]


def git(repo: Path, *args: str, input: bytes | None = None) -> bytes:
    return subprocess.run(["git", *args], cwd=repo, env=env(), input=input, check=True,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout


def synthetic_repo(dest: Path, files: int = 20_000, dirs: int = 200) -> Path:
    """A repository of ``files`` small source files across ``dirs`` directories, committed."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    git(dest, "init", "-q", "-b", "main")
    for i in range(files):
        d = dest / f"pkg{i % dirs:03d}"
        d.mkdir(exist_ok=True)
        (d / f"mod{i:05d}.py").write_text(f'"""Module {i}."""\n\n\ndef f{i}(x):\n    return x + {i}\n')
    (dest / ".gitignore").write_text("build/\n")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "synthetic")
    return dest


def timed(argv: Sequence[str], cwd: Path, e: dict[str, str], stdin: bytes | None = None) -> float:
    start = time.perf_counter()
    proc = subprocess.run(list(argv), cwd=cwd, env=e, input=stdin, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{argv} failed ({proc.returncode}): {proc.stderr.decode()[:400]}")
    return elapsed


def alternate(cases: dict[str, tuple[Sequence[str], Path, dict[str, str]]], rounds: int,
              warmup: int = 3) -> dict[str, float]:
    """Median seconds of each case, the cases run in alternation so drift hits all alike."""
    samples: dict[str, list[float]] = {k: [] for k in cases}
    for r in range(warmup + rounds):
        for name, (argv, cwd, e) in cases.items():
            t = timed(argv, cwd, e)
            if r >= warmup:
                samples[name].append(t)
    return {k: statistics.median(v) for k, v in samples.items()}


def installed_pilot(refresh: bool = True) -> tuple[str, list[str]]:
    """A clean install of this checkout, as a user has it: (its python, argv of its git-pilot).

    A venv of its own (no editable-install finder, none of the base interpreter's .pth files,
    bytecode compiled by pip at install time), kept under ~/.cache/git-pilot-bench and
    refreshed with this checkout's code on every call. Falls back to ``real_python() -m
    gitpilot`` when a venv cannot be made (no network for the dependencies).
    """
    src = Path(__file__).resolve().parents[1]
    venv = Path.home() / ".cache" / "git-pilot-bench" / f"venv-{sys.version_info[0]}{sys.version_info[1]}"
    py = venv / "bin" / "python"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    try:
        if not py.exists():
            subprocess.run([real_python(), "-m", "venv", str(venv)], check=True, **quiet)
            subprocess.run([str(py), "-m", "pip", "install", "--quiet", str(src)], check=True, **quiet)
        elif refresh:
            subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall", str(src)],
                           check=True, **quiet)
    except (subprocess.CalledProcessError, OSError):
        return real_python(), [real_python(), "-m", "gitpilot"]
    return str(py), [str(venv / "bin" / "git-pilot")]


def bench_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for timing an installed git pilot: no PYTHONPATH into the checkout."""
    e = env(extra)
    e.pop("PYTHONPATH", None)
    return e
