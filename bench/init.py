"""What ``git pilot init`` proposes on real repositories: ``python -m bench init DIR``.

DIR holds one checkout per repository (any commit). Each is cloned (``--shared``, so the
checkout itself is never written), ``git pilot init --no-hooks`` runs in the clone, and the
checks it wrote are printed with the comment saying where each came from. Whether they match
what each repository's docs and CI say is judged by reading those; bench/README.md has the
table for the capsule corpus at its pinned commits.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from bench.common import env, real_python


def proposals(checkout: Path, scratch: Path) -> list[dict[str, str]]:
    clone = scratch / checkout.name
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=checkout, env=env(), check=True, capture_output=True,
                          text=True).stdout.strip()
    subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", str(checkout), str(clone)], check=True,
                   env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # A snapshot may lack its largest blobs: git checks out everything else and says so; init
    # reads documents and configuration, which are all there.
    subprocess.run(["git", "checkout", "-q", "--detach", head], cwd=clone, env=env(),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    proc = subprocess.run([real_python(), "-m", "gitpilot", "init", "--no-hooks"], cwd=clone, env=env(),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{checkout.name}: git pilot init failed: {proc.stderr.strip()}")
    text = (clone / ".gitpilot.toml").read_text("utf-8")
    lines = text.splitlines()
    out = []
    for check in tomllib.loads(text).get("check", []):
        at = lines.index(f"run = {json.dumps(check['run'])}")
        origin = next(ln for ln in reversed(lines[:at]) if ln.startswith("# from "))
        out.append({"name": check["name"], "run": check["run"], "from": origin[len("# from "):],
                    "files": ", ".join(check.get("files", []))})
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench init")
    ap.add_argument("checkouts", help="a directory with one checkout per repository")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    base = Path(args.checkouts)
    repos = sorted(p for p in base.iterdir() if (p / ".git").exists())
    result: dict[str, list[dict[str, str]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-init-") as tmp:
        for repo in repos:
            result[repo.name] = proposals(repo, Path(tmp))
    if args.json:
        print(json.dumps(result, indent=1, sort_keys=True))
        return 0
    for name, checks in result.items():
        print(f"{name}:")
        for c in checks:
            scope = f"  files: {c['files']}" if c["files"] else ""
            print(f"  {c['name']:13} {c['run']}  ({c['from']}){scope}")
    sys.stdout.flush()
    return 0
