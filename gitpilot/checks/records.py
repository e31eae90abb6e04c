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
if TYPE_CHECKING:  # typing costs ~5 ms of a cache hit
    from typing import Any, Protocol

    class TrustPolicy(Protocol):
        """Whether a record counts here (gitpilot/share/trust.py has the clone's policy)."""

        def refusal(self, record: Record, tree: str) -> tuple[str, str] | None:
            """None when ``record`` (from the note of ``tree``) counts; else (where it came from, why not)."""

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
    """blake3 of the command line, of the values of the check's declared env variables and of
    its ``files`` scope (a scoped check's records sit on the tree of its files only; another
    scope on the same subtree must not reuse them).

    The values themselves are never stored (they may be secrets); only this hash is.
    """
    env = os.environ if environ is None else environ
    parts = ["key", check.run]
    for name in sorted(check.env):
        parts += [name, "set" if name in env else "unset", env.get(name, "")]
    if check.files:  # unscoped keys stay what they were, so earlier records keep counting
        parts += ["files", *sorted(set(check.files))]  # the same files in any order
    return _hash(*parts)


def this_platform() -> str:
    u = os.uname()
    return f"{u.sysname}-{u.machine}"


class Record:
    """One run of one check on one tree."""

    __slots__ = ("check", "cmd", "key", "result", "secs", "time", "email", "host", "platform", "version",
                 "exit", "remote", "tree", "sig")

    def __init__(self, check: str, cmd: str, key: str, result: str, secs: float, time: str, email: str,
                 host: str, platform: str, version: str, exit: int | None = None,
                 remote: str | None = None, tree: str | None = None, sig: str | None = None) -> None:
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
        # A signed record names the tree it was run on and carries the ssh signature (base64 of
        # the armored body) over ``signed_payload()``: the line itself, without sig and remote.
        self.tree = tree
        self.sig = sig

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Record) and self.to_line() == other.to_line()

    def __hash__(self) -> int:
        return hash(self.to_line())

    def __repr__(self) -> str:
        return f"Record({self.to_line()})"

    def to_line(self) -> str:
        return self._line(with_sig=True, with_remote=True)

    def signed_payload(self) -> bytes:
        """The bytes a signature covers: every field (the tree id, the key hash and the result
        among them) except the signature itself and the remote tag that a pull adds."""
        return self._line(with_sig=False, with_remote=False).encode("utf-8")

    def copy(self, **changes: Any) -> Record:
        fields = {name: getattr(self, name) for name in self.__slots__}
        fields.update(changes)
        return Record(**fields)

    def _line(self, with_sig: bool, with_remote: bool) -> str:
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
        if self.remote is not None and with_remote:
            data["remote"] = self.remote
        if self.tree is not None:
            data["tree"] = self.tree
        if self.sig is not None and with_sig:
            data["sig"] = self.sig
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
    tree = data.get("tree")
    sig = data.get("sig")
    if not isinstance(secs, int | float) or isinstance(secs, bool):
        return None
    if code is not None and (not isinstance(code, int) or isinstance(code, bool)):
        return None
    if any(v is not None and not isinstance(v, str) for v in (remote, tree, sig)):
        return None
    return Record(
        check=data["check"], cmd=data["cmd"], key=data["key"], result=data["result"],
        secs=float(secs), time=data["time"], email=data["email"], host=data["host"],
        platform=data["platform"], version=data["version"], exit=code, remote=remote, tree=tree, sig=sig,
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

    __slots__ = ("reusable", "flaky", "reason", "counted_fails")

    def __init__(self, reusable: Record | None, flaky: bool, reason: str, counted_fails: int = 0) -> None:
        self.reusable = reusable  # the pass that lets us skip the run
        self.flaky = flaky  # a pass and a fail for this key on this tree, both from records that count
        self.reason = reason  # why it will be reused or run (for --explain)
        self.counted_fails = counted_fails  # failures on this tree from records that count here


class RemoteTrust:
    """The plain policy: records made here count, and those from the named remotes."""

    def __init__(self, remotes: Iterable[str] = ()) -> None:
        self.remotes = frozenset(remotes)

    def refusal(self, record: Record, tree: str) -> tuple[str, str] | None:
        if record.remote is None or record.remote in self.remotes:
            return None
        return record.remote, UNTRUSTED


UNTRUSTED = "untrusted"


def judge(records: Iterable[Record], check: CheckSpec, key: str, platform: str,
          trust: TrustPolicy | None = None, tree: str = "") -> Verdict:
    """Decide whether a recorded pass may be reused for ``check`` on this tree.

    Only records that count here (made here, from a trusted remote, or signed by an allowed
    key) make a pass reusable or a check flaky: an untrusted pass beside a local failure is
    not a flaky check.
    """
    policy: TrustPolicy = trust if trust is not None else RemoteTrust()
    same_key = [r for r in records if r.key == key]
    refusals = {id(r): policy.refusal(r, tree) for r in same_key}
    passes = [r for r in same_key if r.result == "pass"]
    counted_passes = [r for r in passes if refusals[id(r)] is None]
    counted_fails = sum(1 for r in same_key if r.result == "fail" and refusals[id(r)] is None)
    flaky = bool(counted_passes and counted_fails)
    if not passes:
        if counted_fails:
            return Verdict(None, False, f"ran: it failed on this tree before ({counted_fails} recorded failure(s))",
                           counted_fails)
        return Verdict(None, False, "ran: no pass recorded for this tree and command")
    any_platform = check.reuse == "any-platform"
    usable = [r for r in passes if any_platform or r.platform == platform]
    if not usable:
        others = ", ".join(sorted({r.platform for r in passes}))
        return Verdict(None, flaky, f"ran: passes exist only on another platform ({others})", counted_fails)
    trusted_passes = [r for r in usable if refusals[id(r)] is None]
    if not trusted_passes:
        return Verdict(None, flaky, _refused_reason([refusals[id(r)] for r in usable]), counted_fails)
    # The earliest pass is the one reported; local passes before remote ones.
    best = sorted(trusted_passes, key=lambda r: (r.remote is not None, r.time, r.to_line()))[0]
    origin = "here" if best.remote is None else f"via remote {best.remote}"
    signed = " (signature verified)" if best.sig is not None and best.remote is not None else ""
    return Verdict(best, flaky, f"reused: pass recorded {origin} at {best.time} by {best.email} "
                                f"on {best.host} ({best.platform}), key {key[:12]}{signed}", counted_fails)


def _refused_reason(refusals: list[tuple[str, str] | None]) -> str:
    found = [r for r in refusals if r is not None]
    if all(why == UNTRUSTED for _, why in found):
        remotes = ", ".join(sorted({where for where, _ in found}))
        return f"ran: the only passes came from untrusted remote(s): {remotes}"
    counts: dict[tuple[str, str], int] = {}
    for where, why in found:
        counts[(where, why)] = counts.get((where, why), 0) + 1
    parts = [f"{n} from {where}: {why if why != UNTRUSTED else 'untrusted remote, unsigned'}"
             if n > 1 else f"from {where}: {why if why != UNTRUSTED else 'untrusted remote, unsigned'}"
             for (where, why), n in sorted(counts.items())]
    return "ran: no pass counts here: " + "; ".join(parts)
