"""Validation of check-record lines that arrive from another clone.

A line from a remote is data written by someone else: it is parsed, bounded and rebuilt
from the fields git pilot knows, and tagged with the remote it came from by us. Anything
else (bad JSON, another record version, oversized or control-character fields, a
credential in a text field) is refused. Pure functions, no git.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from gitpilot.checks.records import Record, parse_line

MAX_LINE_BYTES = 4096
_HEX32 = re.compile(r"^[0-9a-f]{32}$")
_HEX40 = re.compile(r"^[0-9a-f]{40}$")
_SIG = re.compile(r"^[A-Za-z0-9+/]{1,4000}={0,2}$")  # base64 of an SSH SIGNATURE block's body
_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
# Control characters (C0, DEL, C1) would let a remote write escape sequences to a terminal
# through --explain; no honest field holds one.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_LIMITS = {"check": 200, "email": 320, "host": 255, "platform": 100, "version": 64}
_REMOTE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


@dataclass(frozen=True)
class Accepted:
    """A remote line as it will be stored (tagged), and the same record as a local line."""

    tagged: bytes
    untagged: bytes
    time: str  # when it was recorded: the newest lines are kept when a tree has too many


def valid_remote_name(name: str) -> bool:
    """A remote name we are willing to write into records and ref names."""
    return bool(_REMOTE_NAME.match(name)) and ".." not in name and not name.endswith((".lock", "."))


def accept_line(line: bytes, remote: str) -> Accepted | None:
    """The validated, re-serialized, remote-tagged form of ``line``; None to refuse it."""
    if len(line) > MAX_LINE_BYTES:
        return None
    rec = parse_line(line)
    if rec is None or not _fields_ok(rec):
        return None
    return Accepted(rec.copy(remote=remote).to_line().encode("utf-8"),
                    rec.copy(remote=None).to_line().encode("utf-8"), rec.time)


def _fields_ok(rec: Record) -> bool:
    if not (_HEX32.match(rec.cmd) and _HEX32.match(rec.key) and _TIME.match(rec.time)):
        return False
    if not math.isfinite(rec.secs) or rec.secs < 0 or rec.secs > 1e7:
        return False
    if rec.exit is not None and not -(2**31) <= rec.exit < 2**31:
        return False
    if rec.tree is not None and not _HEX40.match(rec.tree):
        return False
    if rec.sig is not None and not _SIG.match(rec.sig):
        return False
    for name, limit in _LIMITS.items():
        value = getattr(rec, name)
        if len(value) > limit or _CONTROL.search(value):
            return False
    if not rec.check.strip() or "/" in rec.check:
        return False
    from gitpilot.redact import contains_secret

    return not any(contains_secret(getattr(rec, name)) for name in _LIMITS)
