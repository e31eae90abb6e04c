"""Cache-hit ``git pilot check`` vs ``git status --porcelain`` on a 20,000-file repository.

Two variants, timed in alternation in the same run:

* plain: one configured check has passed on the tree here; ``git pilot check`` runs again on
  the unchanged tree (it must reuse the pass);
* signed: a "CI" clone signs its record (``pilot.sign true``, an ed25519 key made by
  ssh-keygen) and pushes it to a bare remote; a teammate clone with ``pilot.trust signed``
  and an allowed-signers file pulls it and checks once (the signature is verified and the
  answer cached); the timed hit must reuse CI's pass with no ssh-keygen started;
* scoped: a clone whose check has ``files`` globs matching 3,000 of the files, and a file
  outside them edited after the pass, so each hit is a scoped reuse on a tree never checked
  whole; also timed right after a fresh edit outside the scope in every round (a hit of
  scoped checks works out the scopes' trees only, so neither edit should cost it anything).

Target: each variant's median at most 2.5 times ``git status --porcelain`` in its repository.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
from pathlib import Path

from bench.common import alternate, bench_env, git, installed_pilot, synthetic_repo, timed

TARGET = 2.5
CONFIG = '[[check]]\nname = "tests"\nrun = "true"\n'
SCOPE = '[[check]]\nname = "tests"\nrun = "true"\nfiles = ["pkg00*/**", "pkg01*/**", "pkg02*/**"]\n'


def _run(argv: list[str], cwd: Path, e: dict[str, str]) -> str:
    proc = subprocess.run(argv, cwd=cwd, env=e, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed in {cwd}:\n{proc.stdout}{proc.stderr}")
    return proc.stdout


def signed_teammate(tmp: Path, repo: Path, pilot: list[str], e: dict[str, str]) -> tuple[Path, Path]:
    """A teammate clone of ``repo`` that reuses a signed pass pulled from CI; and the call log."""
    key = tmp / "ci-key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ci", "-f", str(key)], check=True)
    signers = tmp / "allowed_signers"
    signers.write_text(f'ci namespaces="git-pilot" {key.with_suffix(".pub").read_text()}')
    calls = tmp / "ssh-keygen.calls"
    program = tmp / "logged-ssh-keygen"
    program.write_text(f"#!/bin/sh\necho \"$2\" >> '{calls}'\nexec ssh-keygen \"$@\"\n")
    program.chmod(0o755)
    remote = tmp / "remote.git"
    git(tmp, "clone", "-q", "--bare", str(repo), str(remote))
    ci, mate = tmp / "ci", tmp / "mate"
    for clone in (ci, mate):
        git(tmp, "clone", "-q", str(remote), str(clone))
        git(clone, "config", "gpg.ssh.program", str(program))
    for k, v in (("gpg.format", "ssh"), ("user.signingkey", str(key)), ("pilot.sign", "true")):
        git(ci, "config", k, v)
    git(mate, "config", "pilot.trust", "signed")
    git(mate, "config", "gpg.ssh.allowedSignersFile", str(signers))
    _run([*pilot, "check"], ci, e)
    _run([*pilot, "share", "push"], ci, e)
    _run([*pilot, "share", "pull"], mate, e)
    out = _run([*pilot, "check", "--explain"], mate, e)
    if "(signature verified)" not in out:
        raise SystemExit(f"the teammate did not reuse CI's signed pass:\n{out}")
    return mate, calls


def scoped_clone(tmp: Path, repo: Path, pilot: list[str], e: dict[str, str]) -> Path:
    """A clone whose check is scoped, passed, then edited outside the scope: the hit is a scoped reuse."""
    clone = tmp / "scoped"
    git(tmp, "clone", "-q", str(repo), str(clone))
    (clone / ".gitpilot.toml").write_text(SCOPE)
    git(clone, "commit", "-q", "-am", "scoped")
    _run([*pilot, "check"], clone, e)
    (clone / "NOTES.md").write_text("edited after the pass\n")
    out = _run([*pilot, "check", "--explain"], clone, e)
    if "reused" not in out or "scope pkg00*/**" not in out:
        raise SystemExit(f"the scoped check did not reuse its pass:\n{out}")
    return clone


def after_fresh_edits(repo: Path, pilot: list[str], e: dict[str, str], rounds: int) -> dict[str, float]:
    """Medians of git status and of the scoped hit, each right after a new edit outside the scope."""
    samples: dict[str, list[float]] = {"status": [], "check": []}
    for r in range(rounds + 3):
        for name, argv in (("status", ["git", "status", "--porcelain"]), ("check", [*pilot, "check"])):
            (repo / "NOTES.md").write_text(f"edit {r} {name}\n")
            t = timed(argv, repo, e)
            if r >= 3:
                samples[name].append(t)
    return {k: statistics.median(v) for k, v in samples.items()}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench check")
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--no-signed", action="store_true", help="leave out the signed variant")
    ap.add_argument("--no-scoped", action="store_true", help="leave out the scoped variant")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-check-") as tmpname:
        tmp = Path(tmpname)
        repo = synthetic_repo(tmp / "repo", files=args.files)
        (repo / ".gitpilot.toml").write_text(CONFIG)
        git(repo, "add", ".gitpilot.toml")
        git(repo, "commit", "-q", "-m", "config")
        python, pilot = installed_pilot()
        e = bench_env()
        first = _run([*pilot, "check"], repo, e)
        second = _run([*pilot, "check"], repo, e)
        if "reused" not in second:
            raise SystemExit(f"the second run did not reuse the pass:\n{first}\n{second}")
        cases = {
            "git status --porcelain": (["git", "status", "--porcelain"], repo, e),
            "git pilot check (cache hit)": ([*pilot, "check"], repo, e),
            "python -c pass": ([python, "-c", "pass"], repo, e),
        }
        calls_before = None
        if not args.no_signed:
            mate, calls = signed_teammate(tmp, repo, pilot, e)
            calls_before = calls.read_text()
            cases["git status --porcelain (teammate)"] = (["git", "status", "--porcelain"], mate, e)
            cases["git pilot check (signed cache hit)"] = ([*pilot, "check"], mate, e)
        if not args.no_scoped:
            scoped = scoped_clone(tmp, repo, pilot, e)
            cases["git status --porcelain (scoped clone)"] = (["git", "status", "--porcelain"], scoped, e)
            cases["git pilot check (scoped cache hit)"] = ([*pilot, "check"], scoped, e)
        medians = alternate(cases, rounds=args.rounds)
        if calls_before is not None and calls.read_text() != calls_before:
            raise SystemExit("a signed cache hit started ssh-keygen")
        fresh = after_fresh_edits(scoped, pilot, e, args.rounds) if not args.no_scoped else None
    base = medians["git status --porcelain"]
    hit = medians["git pilot check (cache hit)"]
    result: dict[str, object] = {
        "files": args.files, "rounds": args.rounds, "git_status_ms": round(base * 1000, 1),
        "check_hit_ms": round(hit * 1000, 1), "ratio": round(hit / base, 2), "target": TARGET,
        "pilot": " ".join(pilot), "python_pass_ms": round(medians["python -c pass"] * 1000, 1)}
    ok = hit / base <= TARGET
    if calls_before is not None:
        sbase = medians["git status --porcelain (teammate)"]
        shit = medians["git pilot check (signed cache hit)"]
        result.update({"teammate_git_status_ms": round(sbase * 1000, 1), "signed_hit_ms": round(shit * 1000, 1),
                       "signed_ratio": round(shit / sbase, 2)})
        ok = ok and shit / sbase <= TARGET
    if fresh is not None:
        cbase = medians["git status --porcelain (scoped clone)"]
        chit = medians["git pilot check (scoped cache hit)"]
        result.update({"scoped_git_status_ms": round(cbase * 1000, 1), "scoped_hit_ms": round(chit * 1000, 1),
                       "scoped_ratio": round(chit / cbase, 2),
                       "fresh_edit_git_status_ms": round(fresh["status"] * 1000, 1),
                       "fresh_edit_scoped_hit_ms": round(fresh["check"] * 1000, 1),
                       "fresh_edit_ratio": round(fresh["check"] / fresh["status"], 2)})
        ok = ok and chit / cbase <= TARGET and fresh["check"] / fresh["status"] <= TARGET
    result["ok"] = ok
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        print(f"repository: {args.files} files; medians of {args.rounds} alternating runs")
        print(f"git status --porcelain      {result['git_status_ms']:8.1f} ms")
        print(f"git pilot check (cache hit) {result['check_hit_ms']:8.1f} ms   ratio {result['ratio']}")
        if calls_before is not None:
            print(f"teammate: git status        {result['teammate_git_status_ms']:8.1f} ms")
            print(f"teammate: signed cache hit  {result['signed_hit_ms']:8.1f} ms   ratio {result['signed_ratio']}"
                  " (no ssh-keygen started)")
        if fresh is not None:
            print(f"scoped: git status          {result['scoped_git_status_ms']:8.1f} ms")
            print(f"scoped: cache hit           {result['scoped_hit_ms']:8.1f} ms   ratio {result['scoped_ratio']}")
            print(f"scoped, after a fresh edit outside the scope each round: git status "
                  f"{result['fresh_edit_git_status_ms']:.1f} ms, hit {result['fresh_edit_scoped_hit_ms']:.1f} ms, "
                  f"ratio {result['fresh_edit_ratio']}")
        print(f"python -c pass (same python) {result['python_pass_ms']:7.1f} ms")
        print(f"target <= {TARGET}: {'ok' if ok else 'OVER TARGET'}")
    return 0 if ok else 1
