"""Why an agent run stopped: quota, rate limit, auth, network, refusal, bad command or unknown.

Reads what the agent CLIs print: Codex command output (plain text and ``exec --json``
events), Codex session rollouts, Claude ``-p --output-format json`` results and stream-json
events (``rate_limit_event``), the StopFailure hook's JSON, and the recent output or
transcript lines of a failed session. JSON lines are read by their known error fields only,
so a tool's output or a user's prompt that happens to say "429" decides nothing; other lines
are read as text. A later success (``turn.completed``, a result without error, an ordinary
assistant message) clears what came before it, so a reconnect that recovered is no failure.

Only the end of a long output is read line by line: its last ``SCAN_CHARS`` characters (from
the first whole line in them). Why a run stopped is printed last, and a success clears what
came before it anyway; the text rules cost about half a second per megabyte, so reading all
of a 27 MB log took 20 s. A single pretty-printed JSON document is still parsed whole (JSON
parsing is fast); of a message longer than that, too, only the end is read.

The kinds, strongest first when one output shows several: quota, auth, refusal, bad_command,
rate_limit, network, unknown. ``rate_limit`` is a short throttle without a plan-limit message;
``quota`` is a plan or credit limit, the only kind whose stated reset time is scheduled on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from gitpilot.agents.sessionfiles import loads
from gitpilot.quota import resets
from gitpilot.quota.resets import ResetDecision, StatedReset

KINDS = ("quota", "auth", "refusal", "bad_command", "rate_limit", "network", "unknown")
_RANK = {kind: i for i, kind in enumerate(KINDS)}
SCAN_CHARS = 1024 * 1024  # of the output's end, read line by line

NO_RESET_MESSAGE = (
    "quota exhausted; reset time unavailable for automatic scheduling. "
    "Run git pilot run once the limit has reset."
)

# "not your usage limit" (Claude's server-side throttle) must not read as a plan limit.
_NOT_A_PLAN_LIMIT = re.compile(r"\bnot\s+(?:your|a|the)\s+(?:usage|plan)\s+limit", re.I)

_TEXT_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile("|".join(patterns), re.I))
    for kind, patterns in (
        (
            "quota",
            (
                r"\busage[ _]limit",
                r"\bout of (?:credits|extra usage|usage)\b",
                r"insufficient_quota",
                r"exceeded your current quota",
                r"exhausted your (?:\w+ )?quota",
                r"\b\d+[- ]hour limit (?:reached|exceeded|hit)",
                r"\b(?:session|weekly|daily|monthly|opus|sonnet|plan) limit (?:reached|exceeded|hit)",
                r"\byou'?ve (?:hit|reached|exceeded|used up) your [\w -]{0,30}\blimit",
                r"credit balance is too low",
                r"\bcredits? (?:exhausted|depleted|used up)",
                r"\bbilling_error\b",
            ),
        ),
        (
            "auth",
            (
                r"\bnot logged in\b",
                r"\b401\b",
                r"please run /login",
                r"\brun [`']?codex login",
                r"invalid (?:api[ _-]?key|x-api-key|bearer token|authentication)",
                r"incorrect api key",
                r"\bauthentication[_ ](?:failed|error)",
                r"\bunauthori[sz]ed\b",
                r"oauth token (?:has expired|expired|revoked|is invalid)",
                r"organization has been disabled",
                r"\bauthentication_failed\b",
            ),
        ),
        (
            "refusal",
            (
                r"content (?:management |filtering )?polic(?:y|ies)",
                r"\busage polic(?:y|ies)",
                r"\bstop_reason\W+refusal\b",
                r"flagged (?:as|for) (?:potentially )?(?:harmful|unsafe)",
                r"\brefused to (?:answer|help|comply|respond)",
            ),
        ),
        (
            "bad_command",
            (
                r"\bunknown (?:option|command|subcommand|flag|argument)",
                r"\bunexpected argument",
                r"\bunrecognized (?:option|arguments?)",
                r"\bno such (?:option|command)",
                r"\binvalid (?:value|choice) for\b",
                r"\ba value is required for\b",
                r"\bmissing required argument",
                r"no conversation found with session id",
                r": command not found\b",
            ),
        ),
        (
            "rate_limit",
            (
                r"\b429\b",
                r"\btoo many requests\b",
                r"\boverloaded",
                r"\b529\b",
                r"\brate[ _-]?limit",
                r"temporarily limiting requests",
            ),
        ),
        (
            "network",
            (
                r"\bE(?:NOTFOUND|CONNRESET|CONNREFUSED|TIMEDOUT|AI_AGAIN|HOSTUNREACH|NETUNREACH|PIPE)\b",
                r"stream disconnected",
                r"\breconnecting\b",
                r"failed to lookup address",
                r"name (?:does not|did not|could not) resolve",
                r"could not resolve host",
                r"connection (?:failed|refused|reset|timed out|closed)",
                r"error sending request",
                r"unable to connect to api",
                r"\bfetch failed\b",
                r"network (?:error|is unreachable)",
                r"waiting for network",
                r"ssl certificate verification failed",
                r"\bfailed to connect\b",
                r"\bsocket hang up\b",
            ),
        ),
    )
)

# Structured error codes the CLIs attach to a failure.
_CLAUDE_ERRORS = {  # assistant-record ``error`` and StopFailure ``error``
    "rate_limit": "quota",  # refined by its message: a plain 429 is a rate limit
    "billing_error": "quota",
    "authentication_failed": "auth",
}
_CODEX_ERRORS = {  # rollout ``codex_error_info``
    "usage_limit_exceeded": "quota",
    "unauthorized": "auth",
    "http_connection_failed": "network",
    "response_stream_connection_failed": "network",
    "response_stream_disconnected": "network",
    "server_overloaded": "rate_limit",
}

_HTTP_STATUS = {401: "auth", 429: "rate_limit", 529: "rate_limit"}


@dataclass(frozen=True)
class Signal:
    """One failure message found in the output, with any reset times it states."""

    kind: str | None  # None: carries a reset time only (a full rate-limit window)
    text: str
    structured: tuple[StatedReset, ...] = ()


@dataclass(frozen=True)
class Verdict:
    """The classification of one output: its kind, the message that decided it, its reset."""

    kind: str
    evidence: str
    reset: ResetDecision
    signals: tuple[Signal, ...] = field(default=(), repr=False)

    @property
    def stop_message(self) -> str:
        """What a quota stop without a usable reset time tells the user, exactly."""
        return NO_RESET_MESSAGE if self.kind == "quota" and self.reset.at is None else ""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict with stable keys."""
        at = self.reset.at
        return {
            "kind": self.kind,
            "evidence": self.evidence,
            "reset_at": resets.iso(at) if at else None,
            "reset_epoch": int(at.timestamp()) if at else None,
            "reset_stated": [{"at": resets.iso(s.at), "text": s.text} for s in self.reset.stated],
            "reset_unavailable": self.reset.reason or None,
            "reset_ignored": list(self.reset.ignored),
            "message": self.stop_message or None,
        }


def classify(text: str, now: datetime, pinned_zone: str | None = None) -> Verdict:
    """Classify an agent's output and read the reset time it states.

    ``pinned_zone`` is the ``TZ`` git pilot gave the process that printed ``text``; only then
    are zone-less clock times (Codex's ``try again at 3:42 PM``) read.
    """
    signals = list(_signals(text))
    kinds = [s.kind for s in signals if s.kind is not None]
    kind = min(kinds, key=_RANK.__getitem__, default="unknown")
    evidence = next((s.text for s in signals if s.kind == kind), "")
    stated: list[StatedReset] = []
    ignored: list[str] = []
    for s in signals:
        if s.kind in ("quota", "rate_limit", None):
            stated.extend(s.structured)
            found, skipped = resets.find_in_text(_tail(s.text), now, pinned_zone)
            stated.extend(found)
            ignored.extend(skipped)
    decision = resets.decide(stated, now, sorted(set(ignored)))
    return Verdict(kind, _one_line(_redact(_tail(evidence))), decision, tuple(signals))


def classify_text(text: str) -> str | None:
    """The kind one message names by its words alone (the end of a huge one), or None."""
    text = _NOT_A_PLAN_LIMIT.sub(" ", resets.normalize(_tail(text)))
    for kind, pattern in _TEXT_RULES:
        if pattern.search(text):
            return kind
    return None


# --- reading the output -------------------------------------------------------------------


def _signals(text: str) -> Iterator[Signal]:
    """Signals in output order; a success clears the ones before it."""
    pending: list[Signal] = []
    for item in _items(text):
        if item is _SUCCESS:
            pending.clear()
        elif isinstance(item, Signal):
            pending.append(item)
    yield from pending


_SUCCESS = object()


def _items(text: str) -> Iterator[object]:
    stripped = text.strip()
    if stripped.startswith("{") and "\n" in stripped:
        whole = loads(stripped)
        if whole is not None:  # one pretty-printed JSON document (a hook input, an API body)
            yield from _from_json(whole)
            return
    for line in _tail(text).splitlines():
        line = line.strip()
        if not line:
            continue
        obj = loads(line) if line.startswith("{") else None
        if obj is not None:
            yield from _from_json(obj)
        else:
            kind = classify_text(line)
            if kind:
                yield Signal(kind, line)
            elif resets.EPOCH_FIELD.search(line):  # a reset time on a line of its own
                yield Signal(None, line)


def _tail(text: str, limit: int = SCAN_CHARS) -> str:
    """The last ``limit`` characters of ``text``, from the first whole line in them (or, in one
    huge line, the first whole word: half a word is neither a rule's word nor a credential)."""
    if len(text) <= limit:
        return text
    tail = text[-limit:]
    if text[-limit - 1] == "\n":
        return tail
    cut = tail.find("\n")
    if cut == -1 and not text[-limit - 1].isspace():
        cut = next((i for i, ch in enumerate(tail[:4096]) if ch.isspace()), -1)
    return tail[cut + 1 :] if cut != -1 else tail


def _from_json(obj: dict[str, Any]) -> Iterator[object]:
    kind = obj.get("type")
    if obj.get("hook_event_name") == "StopFailure":
        yield _claude_error(obj.get("error"), _text(obj.get("last_assistant_message")))
    elif kind == "rate_limit_event":
        yield from _rate_limit_event(obj)
    elif kind == "result" and "is_error" in obj:
        yield from _claude_result(obj)
    elif kind == "assistant" and isinstance(obj.get("message"), dict):
        yield from _claude_assistant(obj)
    elif kind in ("event_msg", "response_item") and isinstance(obj.get("payload"), dict):
        yield from _codex_rollout(obj["payload"])
    elif kind in ("error", "turn.failed", "turn.completed", "item.completed", "stream_error"):
        yield from _codex_event(obj)
    elif isinstance(obj.get("error"), dict | str) or obj.get("type") == "error":
        yield from _api_error(obj)


def _claude_error(code: object, message: str) -> Signal:
    words = classify_text(message) if message else None
    mapped = _CLAUDE_ERRORS.get(code) if isinstance(code, str) else None
    if mapped == "quota" and code == "rate_limit":
        kind = "rate_limit" if words == "rate_limit" else "quota"
    else:
        kind = words or mapped or "unknown"
    return Signal(kind, message or f"error: {code}")


def _rate_limit_event(obj: dict[str, Any]) -> Iterator[object]:
    info = obj.get("rate_limit_info")
    if not isinstance(info, dict) or info.get("status") != "rejected":
        return
    kind = info.get("rateLimitType") or "limit"
    reset = resets.from_epoch(info.get("resetsAt"), f"rate_limit_event resetsAt ({kind})")
    yield Signal("quota", f"rate_limit_event: {kind} rejected", (reset,) if reset else ())


def _claude_result(obj: dict[str, Any]) -> Iterator[object]:
    if obj.get("is_error") is not True:
        yield _SUCCESS
        return
    message = _text(obj.get("result")) or _text(obj.get("errors")) or str(obj.get("subtype", ""))
    kind = classify_text(message)
    if kind is None and obj.get("stop_reason") == "refusal":
        kind = "refusal"
    if kind is None:
        status = obj.get("api_error_status")
        kind = _HTTP_STATUS.get(status, "unknown") if isinstance(status, int) else "unknown"
    yield Signal(kind, message)


def _claude_assistant(obj: dict[str, Any]) -> Iterator[object]:
    message = obj["message"]
    if obj.get("error") or obj.get("isApiErrorMessage"):
        yield _claude_error(obj.get("error"), _text(message.get("content")))
    elif message.get("stop_reason") == "refusal":
        yield Signal("refusal", _text(message.get("content")) or "stop_reason: refusal")
    elif message.get("model") != "<synthetic>":
        yield _SUCCESS


def _codex_event(obj: dict[str, Any]) -> Iterator[object]:
    kind = obj.get("type")
    if kind == "turn.completed":
        yield _SUCCESS
        return
    if kind == "item.completed":
        item = obj.get("item")
        if not isinstance(item, dict) or item.get("type") != "error":
            return
        message = _text(item.get("message"))
    elif kind == "turn.failed":
        error = obj.get("error")
        message = _text(error.get("message") if isinstance(error, dict) else error)
    elif "message" not in obj and isinstance(obj.get("error"), dict):
        yield from _api_error(obj)  # an API error body: {"type": "error", "error": {...}}
        return
    else:
        message = _text(obj.get("message"))
    yield Signal(classify_text(message) or "unknown", message)


def _codex_rollout(payload: dict[str, Any]) -> Iterator[object]:
    kind = payload.get("type")
    if kind == "token_count":
        yield from _full_windows(payload.get("rate_limits"))
    elif kind == "task_complete":
        error = payload.get("error")
        if isinstance(error, dict):
            yield _codex_error(error)
        else:
            yield _SUCCESS
    elif kind in ("error", "stream_error"):
        yield _codex_error(payload)


def _codex_error(error: dict[str, Any]) -> Signal:
    message = _text(error.get("message"))
    info = error.get("codex_error_info")
    code = info if isinstance(info, str) else next(iter(info), None) if isinstance(info, dict) else None
    mapped = _CODEX_ERRORS.get(code) if isinstance(code, str) else None
    return Signal(mapped or classify_text(message) or "unknown", message)


def _full_windows(limits: object) -> Iterator[object]:
    """A rate-limit window at 100 % states when it resets; windows with room left do not."""
    if not isinstance(limits, dict):
        return
    for name in sorted(limits):
        window = limits[name]
        if not isinstance(window, dict) or not _number(window.get("used_percent")) >= 100:
            continue
        reset = resets.from_epoch(window.get("resets_at"), f"rate_limits.{name}.resets_at")
        if reset:
            yield Signal(None, "", (reset,))


def _api_error(obj: dict[str, Any]) -> Iterator[object]:
    """A raw API error body: ``{"error": {"type"|"code", "message", "resets_at"...}}``, or flat:
    ``{"error": "usage_limit_reached", "resets_at": N}``."""
    inner = obj.get("error")
    error: dict[str, Any] = inner if isinstance(inner, dict) else obj
    parts = [_text(error.get(k)) for k in ("type", "code", "error", "message")]
    message = " ".join(p for p in parts if p)
    stated: list[StatedReset] = []
    for source in (error, obj):
        for key in ("resets_at", "resetsAt"):
            reset = resets.from_epoch(source.get(key), key)
            if reset:
                stated.append(reset)
    kind = classify_text(message) or "unknown"
    yield Signal(kind, message or json.dumps(error, sort_keys=True)[:200], tuple(stated))


def _text(value: object) -> str:
    """The text of a message field: a string, or the text parts of a content list."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [_text(v.get("text") if isinstance(v, dict) else v) for v in value]
        return "\n".join(p for p in parts if p)
    return ""


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else -1.0


def _redact(text: str) -> str:
    """Credentials in a known format never reach a report (an auth error may quote a key)."""
    from gitpilot.redact import redact

    return redact(text)


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
