"""Cache-hit ``git pilot check`` vs ``git status --porcelain`` on a 20,000-file repository.

One configured check has passed on the tree; ``git pilot check`` runs again on the
unchanged tree (it must reuse the pass) and is timed in alternation with ``git status``
on the same repository in the same run. Target: median ratio at most 2.5.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from pathlib import Path

from bench.common import alternate, bench_env, git, installed_pilot, synthetic_repo

TARGET = 2.5


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench check")
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-check-") as tmp:
        repo = synthetic_repo(Path(tmp) / "repo", files=args.files)
        (repo / ".gitpilot.toml").write_text('[[check]]\nname = "tests"\nrun = "true"\n')
        git(repo, "add", ".gitpilot.toml")
        git(repo, "commit", "-q", "-m", "config")
        python, pilot = installed_pilot()
        e = bench_env()
        first = subprocess.run([*pilot, "check"], cwd=repo, env=e, capture_output=True, text=True)
        second = subprocess.run([*pilot, "check"], cwd=repo, env=e, capture_output=True, text=True)
        if "reused" not in second.stdout:
            raise SystemExit(f"the second run did not reuse the pass:\n{first.stdout}\n{second.stdout}")
        medians = alternate({
            "git status --porcelain": (["git", "status", "--porcelain"], repo, e),
            "git pilot check (cache hit)": ([*pilot, "check"], repo, e),
            "python -c pass": ([python, "-c", "pass"], repo, e),
        }, rounds=args.rounds)
    base = medians["git status --porcelain"]
    hit = medians["git pilot check (cache hit)"]
    result = {"files": args.files, "rounds": args.rounds, "git_status_ms": round(base * 1000, 1),
              "check_hit_ms": round(hit * 1000, 1), "ratio": round(hit / base, 2), "target": TARGET,
              "ok": hit / base <= TARGET, "pilot": " ".join(pilot),
              "python_pass_ms": round(medians["python -c pass"] * 1000, 1)}
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        print(f"repository: {args.files} files; medians of {args.rounds} alternating runs")
        print(f"git status --porcelain      {result['git_status_ms']:8.1f} ms")
        print(f"git pilot check (cache hit) {result['check_hit_ms']:8.1f} ms")
        print(f"python -c pass (same python) {result['python_pass_ms']:7.1f} ms")
        print(f"ratio {result['ratio']} (target <= {TARGET}): {'ok' if result['ok'] else 'OVER TARGET'}")
    return 0 if result["ok"] else 1
