"""``git pilot quota classify`` reads agent output on stdin and prints kind and reset time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CODEX_LIMIT = (
    '{"type":"turn.failed","error":{"message":"You’ve hit your usage limit. Upgrade to Pro '
    '(https://chatgpt.com/explore/pro) or try again at 3:42 PM."}}\n'
)


def classify(stdin: str, *args: str, now: str = "2026-11-30T12:28:20Z") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GIT_PILOT_NOW": now, "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "gitpilot", "quota", "classify", *args],
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        cwd=ROOT,
        check=False,
    )


def test_zone_less_codex_clock_without_a_pin_gives_the_exact_stop_message() -> None:
    proc = classify(CODEX_LIMIT)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "kind: quota"
    assert lines[1].startswith("reset: none (no usable reset time (clock time without a zone")
    assert lines[-1] == (
        "quota exhausted; reset time unavailable for automatic scheduling. "
        "Run git pilot run once the limit has reset."
    )


def test_pinned_zone_reads_the_clock_and_json_reports_it() -> None:
    proc = classify(CODEX_LIMIT, "--json", "--tz", "Europe/London")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["kind"] == "quota"
    assert report["reset_at"] == "2026-11-30T15:42:00Z"
    assert report["reset_epoch"] == 1796053320
    assert report["message"] is None


def test_claude_stated_zone_needs_no_pin() -> None:
    text = "You've hit your session limit · resets 3:43pm (Europe/London)\n"
    proc = classify(text)
    assert proc.stdout.splitlines()[:2] == [
        "kind: quota",
        "reset: 2026-11-30T15:43:00Z (stated: resets 3:43pm (Europe/London))",
    ]


def test_credentials_in_the_output_never_reach_the_report() -> None:
    key = "sk-ant-api03-" + "A" * 93 + "AA"
    proc = classify(f"Invalid API key {key}\n", "--json")
    report = json.loads(proc.stdout)
    assert report["kind"] == "auth"
    assert key not in proc.stdout


def test_unknown_pinned_zone_is_a_usage_error() -> None:
    proc = classify("x\n", "--tz", "Nowhere/Atlantis")
    assert proc.returncode == 2
    assert "unknown time zone: Nowhere/Atlantis" in proc.stderr
