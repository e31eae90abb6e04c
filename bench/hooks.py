"""The added cost of git pilot's installed git hooks on ``git checkout`` and ``git commit``.

A 20,000-file repository with two branches that differ in 200 files (and a few Markdown
context files). The same repository is timed with the hooks installed (``.git/hooks``) and
with no hooks (``-c core.hooksPath=<empty dir>``), in alternation, both checkout directions
in every round, so load drift hits both sides alike. Targets (issue 3): median added cost
at most +30 ms on checkout and +60 ms on commit. The installed shims must call the real
interpreter by absolute path (a pyenv shim on PATH costs ~80 ms a call); this is checked.
The detached job a hook starts (post-checkout: cache refresh) runs after git returns; its
own duration is measured separately, and each timed run waits for the previous one's job.
``--husky`` times husky v9's layout instead: git pilot's own hooks directory, which runs
``.husky/_``'s hooks first and forwards the others, against husky alone.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench.common import env, git, real_python, synthetic_repo

CHECKOUT_TARGET_MS = 30.0
COMMIT_TARGET_MS = 60.0


HUSKY_NAMES = ("pre-commit", "pre-merge-commit", "prepare-commit-msg", "commit-msg", "post-commit",
               "applypatch-msg", "pre-applypatch", "post-applypatch", "pre-rebase", "post-rewrite",
               "post-checkout", "post-merge", "pre-push", "pre-auto-gc")


def husky_layout(repo: Path) -> None:
    """husky v9's layout (its dispatcher from fixtures/, no user scripts): core.hooksPath=.husky/_."""
    underscore = repo / ".husky" / "_"
    underscore.mkdir(parents=True)
    (underscore / ".gitignore").write_text("*")
    runner = Path(__file__).resolve().parents[1] / "fixtures" / "hook-managers" / "husky-v9-h"
    (underscore / "h").write_bytes(runner.read_bytes())
    for name in HUSKY_NAMES:
        (underscore / name).write_text('#!/usr/bin/env sh\n. "$(dirname "$0")/h"')
        (underscore / name).chmod(0o755)
    git(repo, "config", "core.hooksPath", ".husky/_")


def _prepare(root: Path, files: int, husky: bool = False) -> Path:
    repo = synthetic_repo(root / "repo", files=files)
    if husky:
        husky_layout(repo)
    for i in range(5):
        (repo / f"doc{i}.md").write_text(f"# Doc {i}\n\n## Rules\n\nText {i}.\n")
    (repo / ".gitpilot.toml").write_text('[[check]]\nname = "tests"\nrun = "true"\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "docs and config")
    git(repo, "checkout", "-q", "-b", "other")
    for i in range(0, files, max(1, files // 200)):
        path = repo / f"pkg{i % 200:03d}" / f"mod{i:05d}.py"
        path.write_text(path.read_text() + f"# changed on other {i}\n")
    (repo / "doc0.md").write_text("# Doc 0\n\n## Rules\n\nChanged on other.\n")
    git(repo, "commit", "-q", "-am", "other")
    git(repo, "checkout", "-q", "main")
    proc = subprocess.run([real_python(), "-m", "gitpilot", "hooks", "install"], cwd=repo, env=env(),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"hooks install failed: {proc.stderr}")
    return repo


def _interpreter(repo: Path) -> str:
    hooks = git(repo, "rev-parse", "--git-path", "hooks").decode().strip()
    text = (repo / hooks / "post-checkout").read_text()
    line = next(ln for ln in text.splitlines() if ln.startswith("PILOT_PYTHON="))
    exe = line.partition("=")[2].strip("'")
    if not os.path.isabs(exe) or "shims" in exe.split(os.sep):
        raise SystemExit(f"the hooks call {exe!r}, not a real interpreter by absolute path")
    return exe


def _run(argv: list[str], repo: Path, e: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=repo, env=e, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{argv} failed: {proc.stderr.decode()[:300]}")
    return took


def _settle(repo: Path) -> None:
    """Give the detached job of the previous hook time to finish, before either side is timed."""
    time.sleep(0.3)


def measure(repo: Path, rounds: int, warmup: int, husky: bool = False) -> dict[str, list[float]]:
    empty = repo.parent / "no-hooks"
    empty.mkdir(exist_ok=True)
    e = env()
    # With --husky the other side is husky alone: what git pilot adds on top of it.
    plain = ["git", "-c", "core.hooksPath=.husky/_" if husky else f"core.hooksPath={empty}"]
    samples: dict[str, list[float]] = {"checkout_hooks": [], "checkout_plain": [], "commit_hooks": [],
                                       "commit_plain": []}
    target = repo / "pkg000" / "mod00000.py"
    for r in range(warmup + rounds):
        order = [("checkout_hooks", ["git"], "other"), ("checkout_plain", plain, "main"),
                 ("checkout_plain", plain, "other"), ("checkout_hooks", ["git"], "main")]
        if r % 2:
            order = [("checkout_plain", plain, "other"), ("checkout_hooks", ["git"], "main"),
                     ("checkout_hooks", ["git"], "other"), ("checkout_plain", plain, "main")]
        for name, base, branch in order:
            _settle(repo)
            t = _run([*base, "checkout", "-q", branch], repo, e)
            if r >= warmup:
                samples[name].append(t)
        for name, base in (("commit_hooks", ["git"]), ("commit_plain", plain))[:: 1 if r % 2 == 0 else -1]:
            target.write_text(target.read_text() + f"# {name} {r}\n")
            _settle(repo)
            t = _run([*base, "commit", "-q", "-am", f"{name} {r}"], repo, e)
            if r >= warmup:
                samples[name].append(t)
    return samples


def detached_job(repo: Path, exe: str, rounds: int) -> float:
    """Median duration of the post-checkout job itself (what runs in the background)."""
    old = git(repo, "rev-parse", "main").decode().strip()
    new = git(repo, "rev-parse", "other").decode().strip()
    boot = ("import sys\nif sys.argv[1]: sys.path.insert(0, sys.argv[1])\n"
            "from gitpilot.hooks.run import main\nsys.exit(main(sys.argv[2:]))")
    lib = str(Path(__file__).resolve().parents[1])
    e = env({"GIT_PILOT_HOOKS_SYNC": "1"})
    argv = [exe, "-P", "-c", boot, lib, "post-checkout", old, new, "1"]
    times = [_run(argv, repo, e) for _ in range(rounds)]
    return statistics.median(times)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench hooks")
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--husky", action="store_true",
                    help="husky v9's layout: git pilot's own hooks directory, chained to .husky/_, "
                         "against husky alone")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-hooks-") as tmp:
        repo = _prepare(Path(tmp), args.files, args.husky)
        exe = _interpreter(repo)
        samples = measure(repo, args.rounds, args.warmup, args.husky)
        job = detached_job(repo, exe, max(5, args.rounds // 2))
    med = {k: statistics.median(v) * 1000 for k, v in samples.items()}
    checkout_added = med["checkout_hooks"] - med["checkout_plain"]
    commit_added = med["commit_hooks"] - med["commit_plain"]
    result = {
        "files": args.files, "rounds": args.rounds, "interpreter": exe, "husky": args.husky,
        "checkout_plain_ms": round(med["checkout_plain"], 1),
        "checkout_hooks_ms": round(med["checkout_hooks"], 1),
        "checkout_added_ms": round(checkout_added, 1), "checkout_target_ms": CHECKOUT_TARGET_MS,
        "commit_plain_ms": round(med["commit_plain"], 1), "commit_hooks_ms": round(med["commit_hooks"], 1),
        "commit_added_ms": round(commit_added, 1), "commit_target_ms": COMMIT_TARGET_MS,
        "detached_post_checkout_job_ms": round(job * 1000, 1),
        "ok": checkout_added <= CHECKOUT_TARGET_MS and commit_added <= COMMIT_TARGET_MS,
        "load_average": round(os.getloadavg()[0], 1),
    }
    if args.json:
        print(json.dumps(result, sort_keys=True))
        return 0 if result["ok"] else 1
    print(f"repository: {args.files} files, branches differing in 200 files; medians of {args.rounds} rounds "
          f"(each: 2 checkouts per side, 1 commit per side, alternating)")
    print(f"hooks call {exe}")
    if args.husky:
        print("layout: husky v9 (.husky/_); 'no hooks' is husky alone, 'hooks' is git pilot's directory chained to it")
    for what, target in (("checkout", CHECKOUT_TARGET_MS), ("commit", COMMIT_TARGET_MS)):
        print(f"git {what:<10} no hooks {med[what + '_plain']:7.1f} ms   hooks {med[what + '_hooks']:7.1f} ms"
              f"   added {med[what + '_hooks'] - med[what + '_plain']:+6.1f} ms (target <= +{target:.0f})")
    print(f"detached post-checkout job (after git returns, niced): {job * 1000:.1f} ms")
    print(f"load average {result['load_average']}: {'ok' if result['ok'] else 'OVER TARGET'}")
    return 0 if result["ok"] else 1
