"""Check records: the JSON lines kept in ``refs/notes/pilot/checks`` on a checked tree.

A line is one run of one check on that tree. Lines are compact JSON with sorted keys, so
the same record is the same bytes everywhere and a line-wise union merges any two clones.
A reader skips lines it does not understand; it never crashes on them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable

from gitpilot import __version__
from gitpilot.config import CheckSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CHECKS_REF = "refs/notes/pilot/checks"
RECORD_VERSION = 1


def _hash(*parts: str) -> str:
    import blake3

    h = blake3.blake3()
    for p in parts:
        h.update(p.encode("utf-8", "surrogateescape"))
        h.update(b"\0")
    return h.hexdigest()[:32]


def command_hash(check: CheckSpec) -> str:
    return _hash("cmd", check.run)


def key_hash(check: CheckSpec, environ: dict[str, str] | None = None) -> str:
    """blake3 of the command line and of the values of the check's declared env variables.

    The values themselves are never stored (they may be secrets); only this hash is.
    """
    env = os.environ if environ is None else environ
    parts = ["key", check.run]
    for name in sorted(check.env):
        parts += [name, "set" if name in env else "unset", env.get(name, "")]
    return _hash(*parts)


def this_platform() -> str:
    u = os.uname()
    return f"{u.sysname}-{u.machine}"


class Record:
    """One run of one check on one tree."""

    __slots__ = ("check", "cmd", "key", "result", "secs", "time", "email", "host", "platform", "version",
                 "exit", "remote")

    def __init__(self, check: str, cmd: str, key: str, result: str, secs: float, time: str, email: str,
                 host: str, platform: str, version: str, exit: int | None = None,
                 remote: str | None = None) -> None:
        self.check = check
        self.cmd = cmd
        self.key = key
        self.result = result  # "pass" or "fail"
        self.secs = secs
        self.time = time
        self.email = email
        self.host = host
        self.platform = platform
        self.version = version
        self.exit = exit
        self.remote = remote  # set on lines that arrived from another clone

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Record) and self.to_line() == other.to_line()

    def __hash__(self) -> int:
        return hash(self.to_line())

    def __repr__(self) -> str:
        return f"Record({self.to_line()})"

    def to_line(self) -> str:
        data: dict[str, Any] = {
            "v": RECORD_VERSION,
            "check": self.check,
            "cmd": self.cmd,
            "key": self.key,
            "result": self.result,
            "secs": round(self.secs, 3),
            "time": self.time,
            "email": self.email,
            "host": self.host,
            "platform": self.platform,
            "version": self.version,
        }
        if self.exit is not None:
            data["exit"] = self.exit
        if self.remote is not None:
            data["remote"] = self.remote
        return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


_STR_FIELDS = ("check", "cmd", "key", "result", "time", "email", "host", "platform", "version")


def parse_line(line: bytes | str) -> Record | None:
    """A record, or None for a line we do not understand (skipped, never fatal)."""
    try:
        data = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict) or data.get("v") != RECORD_VERSION:
        return None
    if not all(isinstance(data.get(f), str) for f in _STR_FIELDS):
        return None
    if data["result"] not in ("pass", "fail"):
        return None
    secs = data.get("secs")
    code = data.get("exit")
    remote = data.get("remote")
    if not isinstance(secs, int | float) or isinstance(secs, bool):
        return None
    if code is not None and (not isinstance(code, int) or isinstance(code, bool)):
        return None
    if remote is not None and not isinstance(remote, str):
        return None
    return Record(
        check=data["check"], cmd=data["cmd"], key=data["key"], result=data["result"],
        secs=float(secs), time=data["time"], email=data["email"], host=data["host"],
        platform=data["platform"], version=data["version"], exit=code, remote=remote,
    )


def parse_body(body: bytes | None) -> list[Record]:
    if not body:
        return []
    out = []
    for line in body.split(b"\n"):
        if line.strip():
            rec = parse_line(line)
            if rec is not None:
                out.append(rec)
    return out


def new_record(check: CheckSpec, key: str, result: str, secs: float, exit_code: int | None,
               email: str, when: str) -> Record:
    return Record(
        check=check.name, cmd=command_hash(check), key=key, result=result, secs=secs, time=when,
        email=email, host=os.uname().nodename, platform=this_platform(), version=__version__,
        exit=exit_code,
    )


class Verdict:
    """What the records of a tree say about one check."""

    __slots__ = ("reusable", "flaky", "reason")

    def __init__(self, reusable: Record | None, flaky: bool, reason: str) -> None:
        self.reusable = reusable  # the pass that lets us skip the run
        self.flaky = flaky  # both a pass and a fail for this key on this tree
        self.reason = reason  # why it will be reused or run (for --explain)


def judge(records: Iterable[Record], check: CheckSpec, key: str, platform: str,
          trusted: frozenset[str] = frozenset()) -> Verdict:
    """Decide whether a recorded pass may be reused for ``check`` on this tree."""
    same_key = [r for r in records if r.key == key]
    passes = [r for r in same_key if r.result == "pass"]
    fails = [r for r in same_key if r.result == "fail"]
    flaky = bool(passes and fails)
    if not passes:
        if fails:
            return Verdict(None, False, f"ran: it failed on this tree before ({len(fails)} recorded failure(s))")
        return Verdict(None, False, "ran: no pass recorded for this tree and command")
    any_platform = check.reuse == "any-platform"
    usable = [r for r in passes if any_platform or r.platform == platform]
    if not usable:
        others = ", ".join(sorted({r.platform for r in passes}))
        return Verdict(None, flaky, f"ran: passes exist only on another platform ({others})")
    trusted_passes = [r for r in usable if r.remote is None or r.remote in trusted]
    if not trusted_passes:
        remotes = ", ".join(sorted({r.remote or "" for r in usable}))
        return Verdict(None, flaky, f"ran: the only passes came from untrusted remote(s): {remotes}")
    # The earliest pass is the one reported; local passes before remote ones.
    best = sorted(trusted_passes, key=lambda r: (r.remote is not None, r.time, r.to_line()))[0]
    origin = "here" if best.remote is None else f"via remote {best.remote}"
    return Verdict(best, flaky, f"reused: pass recorded {origin} at {best.time} by {best.email} "
                                f"on {best.host} ({best.platform}), key {key[:12]}")
