"""What `git pilot check` shows of a failing check: the tool's closing summary is always there
(ruff's `Found 9 errors.` / `[*] 2 fixable`, `30 files would be reformatted`, pytest's final
counts), and a huge log is read in bounded memory. Real logs captured from real tools, printed
by real checks in real repositories."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT, make_repo, pilot_env, run_pilot

from gitpilot.checks import logscan
from gitpilot.checks.excerpt import _excerpt, count_passed, count_passed_file, make_excerpt

LOGS = REPO_ROOT / "fixtures" / "check-logs"


def repo_printing(tmp_path: Path, log: Path, code: int = 1) -> Path:
    cfg = f'[[check]]\nname = "lint"\nrun = "cat {log}; exit {code}"\n'
    return make_repo(tmp_path / "repo", {".gitpilot.toml": cfg})


@pytest.mark.parametrize(("log", "closing"), [
    ("ruff-check-9-errors.log", ["Found 9 errors.", "[*] 2 fixable with `--fix`."]),
    ("ruff-format-30-files.log", ["30 files would be reformatted"]),
    ("pytest-2-failed-40-passed.log",
     ["========================= 2 failed, 40 passed in 2.09s ========================="]),
])
def test_the_tools_closing_summary_is_in_the_excerpt(tmp_path: Path, log: str, closing: list[str]) -> None:
    repo = repo_printing(tmp_path, LOGS / log)
    res = run_pilot("check", cwd=repo)
    assert res.returncode == 1, res.stderr
    out = res.stdout.splitlines()
    assert out[0].startswith(f"FAIL cat {LOGS / log}; exit 1 exit 1 ")
    assert out[-len(closing) - 1 : -1] == closing, res.stdout  # right before git pilot's own summary line
    assert out[-1] == "checks: 0 passed, 1 failed · full log: git pilot check --log lint"
    shown = out[out.index(next(line for line in out if line.startswith("excerpt: "))) + 1 : -1]
    assert len(shown) <= 60 and len("\n".join(shown).encode()) <= 6000


def test_the_closing_summary_holds_on_a_tight_budget(tmp_path: Path) -> None:
    repo = repo_printing(tmp_path, LOGS / "ruff-check-9-errors.log")
    cfg = (repo / ".gitpilot.toml").read_text()
    (repo / ".gitpilot.toml").write_text("[leanloop.checks]\nfailure_excerpt_lines = 12\n"
                                         "failure_excerpt_bytes = 800\n\n" + cfg)
    res = run_pilot("check", cwd=repo)
    assert res.returncode == 1
    assert "[*] 2 fixable with `--fix`." in res.stdout.splitlines()
    assert "F821 Undefined name `price_of`" in res.stdout  # and still the errors themselves


def test_the_real_ruff_summary_reaches_the_agent(tmp_path: Path) -> None:
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed here")
    files = {f"shop/undefined{i}.py": "def total(cart):\n    return price_of(cart) * 2\n" for i in range(12)}
    files[".gitpilot.toml"] = '[[check]]\nname = "ruff"\nrun = "ruff check --no-cache shop"\n'
    repo = make_repo(tmp_path / "repo", files)
    res = run_pilot("check", cwd=repo)
    assert res.returncode == 1
    assert res.stdout.splitlines()[-2] == "Found 12 errors.", res.stdout


def big_log(path: Path, megabytes: int, passing: bool = False) -> None:
    """A pytest -v style log: passing lines, one failure in the middle, the verdict at the end."""
    block = "".join(f"tests/test_catalog.py::test_item_{i:06d} PASSED{' ' * 20}[ 42%]\n" for i in range(10_000))
    with open(path, "w") as fh:
        for n in range(megabytes * 1_000_000 // len(block)):
            fh.write(block)
            if n == 0 and not passing:
                fh.write("    def test_total():\n>       assert total(cart) == 30\nE       assert 29 == 30\n\n"
                         "tests/test_orders.py:41: AssertionError\n")
        if passing:
            fh.write("======================== 100000 passed in 812.31s ========================\n")
        else:
            fh.write("FAILED tests/test_orders.py::test_total - assert 29 == 30\n"
                     "======================== 1 failed, 99999 passed in 812.31s ========================\n")


# The measured process is started by a small helper, not by pytest: a child's peak memory
# counts what its parent held when it forked, and pytest's own memory would hide the check's.
_MEASURE = ("import os, subprocess, sys; p = subprocess.Popen(sys.argv[1:]); _, status, usage = os.wait4(p.pid, 0); "
            "sys.stderr.write(f'{usage.ru_maxrss} {os.waitstatus_to_exitcode(status)}\\n')")


def peak_rss_mib(repo: Path, code: int) -> tuple[int, str]:
    """Peak resident memory of one ``git pilot check --force`` (its own and its children's)."""
    proc = subprocess.run([sys.executable, "-c", _MEASURE, sys.executable, "-m", "gitpilot", "check", "--force"],
                          cwd=repo, env=pilot_env(), capture_output=True, text=True, timeout=300)
    rss, status = proc.stderr.split()[-2:]
    assert int(status) == code, proc.stdout
    return int(rss) // 1024, proc.stdout


def peaks(tmp_path: Path, passing: bool) -> tuple[list[int], list[str]]:
    """Peak memory of a check printing a 2 MB log, and one printing a 40 MB log."""
    found, outs = [], []
    for mb in (2, 40):
        log = tmp_path / f"{mb}.log"
        big_log(log, mb, passing)
        run = f"cat {log}" if passing else f"cat {log}; exit 1"
        repo = make_repo(tmp_path / f"repo{mb}", {".gitpilot.toml": f'[[check]]\nname = "t"\nrun = "{run}"\n'})
        rss, out = peak_rss_mib(repo, 0 if passing else 1)
        stored = next((repo / ".git" / "pilot" / "checks").rglob("01-t.log"))
        assert stored.stat().st_size == log.stat().st_size  # the whole log is still kept on disk
        found.append(rss)
        outs.append(out)
    return found, outs


def test_a_huge_failing_log_is_read_in_bounded_memory(tmp_path: Path) -> None:
    rss, outs = peaks(tmp_path, passing=False)
    for out in outs:
        assert "E       assert 29 == 30" in out and "1 failed, 99999 passed in 812.31s" in out
    # Read whole, the 40 MB log cost about three times its size more than the 2 MB one.
    assert rss[1] - rss[0] < 20, rss


def test_a_huge_passing_log_is_counted_in_bounded_memory(tmp_path: Path) -> None:
    rss, outs = peaks(tmp_path, passing=True)
    assert all(" · 100000 passed" in out for out in outs)
    assert rss[1] - rss[0] < 20, rss


# -- the same excerpt whatever the block boundaries -------------------------------------------------------
def _logs() -> list[bytes]:
    logs = [p.read_bytes() for p in sorted(LOGS.glob("*.log"))]
    key = "MIIEpAIBAAKCAQEA75Y2aS1lKx0abcdefghijklmnopqrstuvwxyz0123456789+/"
    logs.append(("noise\n" * 50 + "-----BEGIN RSA PRIVATE KEY-----\n" + (key + "\n") * 5
                 + "-----END RSA PRIVATE KEY-----\nerror: permission denied\n" + "noise\n" * 50).encode())
    logs.append(b"\x1b[31mError\x1b[0m: first\r\nprogress 10%\rprogress 100%\n" + b"x" * 300_000 + b"\nlast\n")
    return logs


@pytest.mark.parametrize("chunk", [7, 64, 4096])
def test_block_boundaries_change_nothing(chunk: int) -> None:
    for data in _logs():
        whole = make_excerpt(data, 30, 2500)
        split = _excerpt(logscan.byte_chunks(data, chunk), 30, 2500)
        assert split == whole
        passes = count_passed(data.decode("utf-8", "replace"))
        assert passes == count_passed_file_of(data, chunk)


def count_passed_file_of(data: bytes, chunk: int) -> int | None:
    from gitpilot.checks.ansi import strip_ansi
    from gitpilot.checks.passcount import _Passes

    passes = _Passes()
    for raw, _ in logscan.blocks(logscan.byte_chunks(data, chunk)):
        passes.feed(strip_ansi(raw.decode("utf-8", "replace")))
    return passes.result()


def test_a_private_key_split_across_blocks_stays_redacted() -> None:
    key = "MIIEpAIBAAKCAQEA75Y2aS1lKx0abcdefghijklmnopqrstuvwxyz0123456789+/"
    data = ("error: deploy failed\n-----BEGIN RSA PRIVATE KEY-----\n" + (key + "\n") * 4
            + "-----END RSA PRIVATE KEY-----\ndone\n").encode()
    for chunk in range(5, 120, 7):
        excerpt = _excerpt(logscan.byte_chunks(data, chunk), 60, 6000)
        assert not any(key[:20] in line for line in excerpt.lines), chunk
        assert excerpt.lines.count("[REDACTED:private-key]") == 6


def test_count_passed_file_reads_the_stored_log(tmp_path: Path) -> None:
    log = tmp_path / "unit.log"
    log.write_bytes(b"...\n" + b"-" * 70 + b"\nRan 12 tests in 0.4s\n\nOK (skipped=2)\n")
    assert count_passed_file(log) == 10
