"""``git pilot demo``: a throwaway repository built from fixtures/, and each capability shown on it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import click

from gitpilot import output
from gitpilot.errors import PilotError
from gitpilot.gitrun import clean_env, run_git

# (title, argv after "git pilot", command registered in cli.COMMANDS that it needs, the exit
# code the step shows when it works: the first check fails on purpose, to show a failure excerpt)
STEPS: list[tuple[str, list[str], str, int]] = [
    ("Quiet checks: full logs stay on disk, the agent sees PASS lines and a bounded excerpt",
     ["check"], "check", 1),
    ("The same tree again: passes are reused from git notes, nothing reruns",
     ["check", "--only", "unit", "--explain"], "check", 0),
    ("Anyone can read the records with stock git", ["!git", "notes", "--ref=pilot/checks", "list"], "check", 0),
    ("Context Capsule: the task, the rules and only the sections that matter",
     ["capsule", "--task", "Make divide() return None instead of raising when b is zero"], "capsule", 0),
    ("Launching an agent: the short prompt and the exact command (dry run, nothing started)",
     ["run", "--dry-run", "Make divide() return None instead of raising when b is zero"], "run", 0),
    ("Review budget for the change", ["review-budget"], "review-budget", 0),
    ("Source map within a budget", ["sourcemap", "--budget", "1500"], "sourcemap", 0),
    ("Quota classification of a real Claude usage-limit message",
     ["quota", "classify"], "quota", 0),
    ("What stayed out of the agent's context so far", ["efficiency"], "efficiency", 0),
]

_QUOTA_SAMPLE = "You've hit your session limit · resets 3:43pm (Europe/London)\n"


def _fixture_dir() -> Path:
    here = Path(__file__).resolve()
    for base in (here.parents[2], Path(sys.prefix) / "share" / "git-pilot"):
        cand = base / "fixtures" / "demo" / "repo"
        if cand.is_dir():
            return cand
    raise PilotError("the demo fixture (fixtures/demo/repo) is not installed with this copy of git pilot")


def _git(args: list[str], cwd: Path) -> None:
    run_git(args, cwd, env={"GIT_AUTHOR_NAME": "Demo", "GIT_AUTHOR_EMAIL": "demo@example.com",
                            "GIT_COMMITTER_NAME": "Demo", "GIT_COMMITTER_EMAIL": "demo@example.com"})


def build(dest: Path) -> Path:
    repo = dest / "calc"
    shutil.copytree(_fixture_dir(), repo)
    _git(["init", "-q", "-b", "main"], repo)
    _git(["config", "user.email", "demo@example.com"], repo)
    _git(["config", "user.name", "Demo"], repo)
    _git(["add", "-A"], repo)
    _git(["commit", "-q", "-m", "calc: initial version"], repo)
    (repo / "calc.py").write_text((repo / "calc.py").read_text() + "\n\ndef sub(a: int, b: int) -> int:\n"
                                  "    return a - b\n")
    return repo


def _env() -> dict[str, str]:
    # Run the same copy of git pilot as this process, installed or from a source tree.
    src = str(Path(__file__).resolve().parents[2])
    path = os.environ.get("PYTHONPATH", "")
    return clean_env({"NO_COLOR": "1", "PYTHONPATH": src + (os.pathsep + path if path else "")})


def run_demo(keep: bool) -> int:
    """Run every step; 1 when a step did not end as it should (it crashed, or failed unexpectedly)."""
    from gitpilot.cli import COMMANDS

    tmp = Path(tempfile.mkdtemp(prefix="git-pilot-demo-"))
    failed: list[str] = []
    try:
        repo = build(tmp)
        output.out(f"demo repository: {repo}")
        for title, argv, needs, expected in STEPS:
            if needs not in COMMANDS:
                continue
            output.out("")
            output.out(output.paint(f"## {title}", "bold"))
            code = _step(repo, argv)
            if code != expected:
                failed.append(f"{title.split(':')[0]} (exit {code}, expected {expected})")
                output.out(f"[exit {code}] this step failed: it should end with exit {expected}")
            else:
                output.out(f"[exit {code}]")
        output.out("")
        output.out(f"kept: {repo}" if keep else "demo repository removed (use --keep to look around)")
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
    if failed:
        output.err(f"git pilot: demo: {len(failed)} step(s) failed: {'; '.join(failed)}")
        return 1
    return 0


def _step(repo: Path, argv: list[str]) -> int:
    if argv[0].startswith("!"):
        cmd = [argv[0][1:], *argv[1:]]
        shown = " ".join(cmd)
    else:
        cmd = [sys.executable, "-m", "gitpilot", *argv]
        shown = "git pilot " + " ".join(argv)
    output.out(f"$ {shown}")
    stdin = _QUOTA_SAMPLE.encode() if argv[0] == "quota" else b""
    if cmd[0] == "git":  # stock git, as a user would type it
        from gitpilot.gitrun import run_git

        got = run_git(cmd[1:], repo, input=stdin, env=_env(), check=False)
        output.write(got.stdout + got.stderr)
        return got.returncode
    proc = subprocess.run(cmd, cwd=repo, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=_env())
    output.write(proc.stdout)
    return proc.returncode


@click.command("demo")
@click.option("--keep", is_flag=True, help="Keep the throwaway repository.")
def command(keep: bool) -> int:
    """Build a throwaway repository from fixtures/ and show each capability on it."""
    os.environ.pop("GIT_PILOT_TASK", None)
    return run_demo(keep)
