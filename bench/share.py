"""A hostile fork's check notes: what ``git pilot share pull`` and a later check cost.

The fork (issue 13, item 10) holds 330,000 valid check-record lines on 100,001 trees: one
note of about 50 MB on the victim's own tree and 100,000 one-line notes on other objects,
written with ``git fast-import``. A fresh clone pulls them (``git pilot share pull``), then runs
``git pilot check`` on that tree. Each is timed once, with its peak resident memory (the
largest process) and the loose objects the pull added; the same two checks run in a clone
that never pulled, for comparison. The fork
trusts nothing here, so every record is untrusted data.

``--src PATH`` runs the git pilot of another checkout (e.g. the commit before the bounds) for
the before/after figures in bench/README.md; by default this checkout's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from bench.common import env, git

CONFIG = '[[check]]\nname = "tests"\nrun = "true"\n'


def record(i: int, platform: str) -> bytes:
    data = {"check": "tests", "cmd": f"{i:032x}", "email": f"fork{i % 97}@example.com", "exit": 0,
            "host": "fork", "key": f"{i * 7919:032x}"[-32:], "platform": platform, "result": "pass",
            "secs": 0.5, "time": f"2024-01-{1 + i % 28:02d}T00:{i // 60 % 60:02d}:{i % 60:02d}Z", "v": 1,
            "version": "0.5.0"}
    return json.dumps(data, sort_keys=True, separators=(",", ":")).encode()


def hostile_fork(tmp: Path, big_lines: int, small_notes: int) -> tuple[Path, str]:
    seed = tmp / "seed"
    seed.mkdir()
    git(seed, "init", "-q", "-b", "main")
    (seed / ".gitpilot.toml").write_text(CONFIG)
    (seed / "app.py").write_text("x = 1\n")
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", "seed")
    tree = git(seed, "rev-parse", "HEAD^{tree}").decode().strip()
    fork = tmp / "fork.git"
    git(tmp, "clone", "-q", "--bare", str(seed), str(fork))
    platform = f"{os.uname().sysname}-{os.uname().machine}"
    stream = tmp / "notes.fi"
    with open(stream, "wb") as fh:
        fh.write(b"commit refs/notes/pilot/checks\ncommitter Fork <fork@example.com> 1700000000 +0000\n"
                 b"data 6\nnotes\n")

        def note(path: str, body: bytes) -> None:
            fh.write(f"M 100644 inline {path}\ndata {len(body)}\n".encode() + body + b"\n")

        note(f"{tree[:2]}/{tree[2:]}", b"".join(record(i, platform) + b"\n" for i in range(big_lines)))
        for n in range(small_notes):
            oid = f"{(n * 2654435761) % (1 << 160):040x}"
            note(f"{oid[:2]}/{oid[2:]}", record(big_lines + n, platform) + b"\n")
    with open(stream, "rb") as fh:
        subprocess.run(["git", "fast-import", "--quiet"], cwd=fork, stdin=fh, check=True, env=env())
    stream.unlink()
    return fork, tree


# A fresh process runs the command and reports the peak resident size of the largest of its
# descendants (RUSAGE_CHILDREN), so processes this benchmark ran before are not counted.
_PEAK = ("import resource, subprocess, sys\n"
         "code = subprocess.run(sys.argv[1:]).returncode\n"
         "sys.stderr.write(f'\\npeak-kib {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}\\n')\n"
         "raise SystemExit(code)\n")


def measured(argv: list[str], cwd: Path, e: dict[str, str]) -> tuple[float, float, str]:
    """Seconds, peak MiB of the largest process, stdout."""
    start = time.perf_counter()
    proc = subprocess.run([argv[0], "-c", _PEAK, *argv], cwd=cwd, env=e, capture_output=True)
    elapsed = time.perf_counter() - start
    errs = proc.stderr.decode()
    if proc.returncode not in (0, 1) or "peak-kib" not in errs:
        raise SystemExit(f"{argv} failed: {errs[:400]}")
    return elapsed, int(errs.rsplit("peak-kib ", 1)[1]) / 1024, proc.stdout.decode()


def loose_kib(repo: Path) -> int:
    out = git(repo, "count-objects", "-v").decode()
    return int(dict(ln.split(": ") for ln in out.splitlines())["size"])


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench share")
    ap.add_argument("--big-lines", type=int, default=230_000, help="lines of the note on the victim's tree")
    ap.add_argument("--small-notes", type=int, default=100_000, help="one-line notes on other objects")
    ap.add_argument("--src", type=Path, default=Path(__file__).resolve().parents[1])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    e = env()
    e["PYTHONPATH"] = str(args.src)
    pilot = [os.path.realpath(os.sys.executable), "-m", "gitpilot"]
    with tempfile.TemporaryDirectory(prefix="bench-share-") as tmpname:
        tmp = Path(tmpname)
        fork, tree = hostile_fork(tmp, args.big_lines, args.small_notes)
        note_mb = len(git(fork, "cat-file", "blob", f"refs/notes/pilot/checks:{tree[:2]}/{tree[2:]}")) / 1e6
        # The same check in a clone that never pulled: what a check costs without the fork's notes.
        control = tmp / "control"
        git(tmp, "clone", "-q", str(fork), str(control))
        control_s, control_mb, _ = measured([*pilot, "check"], control, e)
        control_hit_s, control_hit_mb, _ = measured([*pilot, "check"], control, e)
        victim = tmp / "victim"
        git(tmp, "clone", "-q", str(fork), str(victim))
        loose_before = loose_kib(victim)
        pull_s, pull_mb, pull_out = measured([*pilot, "share", "pull"], victim, e)
        loose_added = loose_kib(victim) - loose_before
        check_s, check_mb, _ = measured([*pilot, "check"], victim, e)
        again_s, again_mb, _ = measured([*pilot, "check"], victim, e)
        kept = git(victim, "notes", "--ref=pilot/checks", "show", tree).count(b"\n")
    result = {"src": str(args.src), "lines": args.big_lines + args.small_notes, "trees": args.small_notes + 1,
              "big_note_mb": round(note_mb, 1), "pull_s": round(pull_s, 2), "pull_peak_mib": round(pull_mb),
              "loose_added_mib": round(loose_added / 1024, 1), "check_s": round(check_s, 2),
              "check_peak_mib": round(check_mb), "second_check_s": round(again_s, 2),
              "second_check_peak_mib": round(again_mb), "lines_kept_on_tree": kept,
              "control_check_s": round(control_s, 2), "control_check_peak_mib": round(control_mb),
              "control_second_check_s": round(control_hit_s, 2), "control_second_check_peak_mib": round(control_hit_mb),
              "pull_said": pull_out.strip().splitlines()}
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        for k, v in result.items():
            print(f"{k:24} {v}")
    return 0
