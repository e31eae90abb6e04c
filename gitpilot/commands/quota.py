"""``git pilot quota classify [--json] [--tz ZONE]``: why an agent stopped, and when it may resume.

Reads agent output on stdin (Codex text or ``exec --json``, Claude json/stream-json, a
StopFailure hook input, a transcript) and prints its kind and the stated reset time.
"""

from __future__ import annotations

import json
import sys

import click

from gitpilot.errors import UsageError


@click.group("quota", help="Quota stops: classify agent output, resume tickets.")
def command() -> None:
    pass


@command.command("classify")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@click.option(
    "--tz",
    "pinned",
    metavar="ZONE",
    default=None,
    help="The TZ the agent process ran with; only then are zone-less clock times read.",
)
def classify_command(as_json: bool, pinned: str | None) -> int:
    """Read agent output on stdin; print its kind and stated reset time."""
    return run_classify(sys.stdin.buffer.read(), as_json=as_json, pinned=pinned)


def run_classify(data: bytes, *, as_json: bool, pinned: str | None) -> int:
    """Classify ``data`` and render it; returns the exit code (0: classified)."""
    from gitpilot.output import out
    from gitpilot.quota import clock
    from gitpilot.quota.classify import classify
    from gitpilot.quota.resets import pinned as load_zone

    if pinned:
        try:
            load_zone(pinned)
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
    try:
        now = clock.now()
    except ValueError as exc:
        raise UsageError(f"bad {clock.ENV}: {exc}") from exc
    verdict = classify(data.decode("utf-8", "replace"), now, pinned)
    report = verdict.to_json()
    if as_json:
        out(json.dumps(report, sort_keys=True, ensure_ascii=False))
        return 0
    out(f"kind: {report['kind']}")
    if report["reset_at"]:
        source = report["reset_stated"][0]["text"]
        out(f"reset: {report['reset_at']} (stated: {source})")
    else:
        out(f"reset: none ({report['reset_unavailable']})")
    if report["evidence"]:
        out(f"evidence: {report['evidence']}")
    if report["message"]:
        out(report["message"])
    return 0
