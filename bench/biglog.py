"""A failing check with a huge log: time and peak memory of ``git pilot check`` for its excerpt.

The check ``cat``s a generated log (pytest ``-v`` style: passing lines, one failure with its
traceback in the middle, the short summary and the final verdict at the end) and exits 1.
``git pilot check`` stores the log and prints the bounded excerpt. Measured: the wall time of
that run beside ``cat log > copy`` (what storing the log alone costs), and the peak resident
memory of the git pilot process (``wait4``; ``cat`` is a few MB). Run with two log sizes to see
whether memory grows with the log. Target: peak memory independent of the log's size, and the
excerpt holds the failure and the final summary line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from bench.common import bench_env, git, installed_pilot

FAILURE = """\
=================================== FAILURES ===================================
_____________________________ test_checkout_total ______________________________

    def test_checkout_total():
        cart = make_cart(items=3)
>       assert checkout(cart) == 30
E       AssertionError: assert 29 == 30

tests/test_orders.py:41: AssertionError
"""


def write_log(path: Path, megabytes: int) -> int:
    """A pytest-like log of about ``megabytes`` MB; returns its line count."""
    target = megabytes * 1_000_000
    lines = 0
    with open(path, "w") as fh:
        written = 0
        block = "".join(f"tests/test_catalog.py::test_item_{i:07d} PASSED{' ' * 20}[ 42%]\n" for i in range(10_000))
        while written < target // 2:
            fh.write(block)
            written += len(block)
            lines += 10_000
        fh.write(FAILURE)
        lines += FAILURE.count("\n")
        while written < target:
            fh.write(block)
            written += len(block)
            lines += 10_000
        tail = ("=========================== short test summary info ============================\n"
                "FAILED tests/test_orders.py::test_checkout_total - AssertionError: assert 29 == 30\n"
                f"======================== 1 failed, {lines} passed in 812.31s ========================\n")
        fh.write(tail)
        lines += 3
    return lines


def measure(argv: list[str], cwd: Path, e: dict[str, str]) -> tuple[float, int, str]:
    """(seconds, peak RSS in MiB, stdout) of one run."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=e, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    out = proc.stdout.read().decode("utf-8", "replace")
    _, _, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0  # reaped by wait4
    return time.perf_counter() - start, usage.ru_maxrss // 1024, out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench biglog")
    ap.add_argument("--mb", type=int, nargs="+", default=[50, 200], help="log sizes in MB")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    python, pilot = installed_pilot()
    e = bench_env()
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-biglog-") as tmp:
        for mb in args.mb:
            repo = Path(tmp) / f"repo{mb}"
            repo.mkdir()
            git(repo, "init", "-q", "-b", "main")
            log = Path(tmp) / f"check{mb}.log"
            lines = write_log(log, mb)
            (repo / ".gitpilot.toml").write_text(f'[[check]]\nname = "tests"\nrun = "cat {log}; exit 1"\n')
            git(repo, "add", "-A")
            git(repo, "commit", "-q", "-m", "config")
            cat_s, _, _ = measure(["sh", "-c", f"cat {log} > {Path(tmp) / 'copy.log'}"], repo, e)
            seconds, rss, out = measure([*pilot, "check"], repo, e)
            ok = "AssertionError: assert 29 == 30" in out and "1 failed," in out
            results.append({"mb": mb, "lines": lines, "bytes": log.stat().st_size, "check_s": round(seconds, 2),
                            "cat_s": round(cat_s, 2), "peak_rss_mib": rss, "excerpt_ok": ok,
                            "output_bytes": len(out.encode())})
    if args.json:
        print(json.dumps({"pilot": " ".join(pilot), "runs": results}, sort_keys=True))
    else:
        print(f"git pilot: {' '.join(pilot)}")
        for r in results:
            print(f"{r['mb']:4d} MB log ({r['lines']:,} lines): git pilot check {r['check_s']:.2f} s "
                  f"(cat alone {r['cat_s']:.2f} s), peak RSS {r['peak_rss_mib']} MiB, "
                  f"{r['output_bytes']:,} bytes shown, failure and summary in the excerpt: {r['excerpt_ok']}")
    return 0 if all(r["excerpt_ok"] for r in results) else 1
