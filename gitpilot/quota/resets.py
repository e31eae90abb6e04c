"""Reset times that an agent CLI *stated*, and only those.

A quota stop can be resumed automatically only when the CLI said when the limit resets.
This module reads the forms the CLIs print: an epoch after ``|`` (``limit reached|1759352400``),
epoch-second JSON fields (handed in by the classifier, or quoted in text: ``"resets_at": N``),
relative durations (``try again in
4 days 21 hours 35 minutes``, ``resets in 2h 15m``), and clock or date-and-time forms with an
explicit zone (``resets Dec 3, 2:26pm (Europe/London)``). A clock without a zone is read only
in a zone the caller pinned (the ``TZ`` git pilot gave a process it started itself); otherwise
it is ambiguous and ignored. Nothing is inferred: no plan types, no guessed weekly resets.

``decide`` rejects two different stated times, a time more than eight days away and a time in
the past. ``now`` is always injected so the rules are testable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

MAX_AHEAD = timedelta(days=8)

# Apostrophe-like characters CLIs print (Codex writes U+2019) folded to ASCII before matching.
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'"})

_MONTHS = {
    m: i
    for i, m in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), start=1
    )
}


@dataclass(frozen=True)
class StatedReset:
    """One reset time read from the output: when, how precisely, and the words it came from."""

    at: datetime  # timezone-aware, UTC
    precision: int  # seconds the statement can be off by (60 for a clock, 1 for an epoch)
    text: str


@dataclass(frozen=True)
class ResetDecision:
    """The reset time to schedule on, or why there is none."""

    at: datetime | None
    reason: str  # empty when ``at`` is set
    stated: tuple[StatedReset, ...] = ()
    ignored: tuple[str, ...] = ()  # statements that could not be used (zone-less clocks)


def normalize(text: str) -> str:
    """Text with typographic apostrophes folded to ``'``."""
    return text.translate(_APOSTROPHES)


def from_epoch(value: object, text: str) -> StatedReset | None:
    """An epoch-seconds value (int, float or digit string) as a stated reset; None if not one.

    Values that can only be milliseconds (13 digits) are scaled, since some APIs send them.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and re.fullmatch(r"\d{9,13}(?:\.\d+)?", value.strip()):
        value = float(value)
    if not isinstance(value, int | float) or value <= 0:
        return None
    seconds = float(value) / 1000 if value >= 1e12 else float(value)
    try:
        at = datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return StatedReset(at=at, precision=1, text=text)


# --- text forms ---------------------------------------------------------------------------

_EPOCH_AFTER_BAR = re.compile(r"\blimit\b[^|\n]{0,60}\|\s*(\d{10}(?:\d{3})?)(?!\d)", re.I)
# An epoch field quoted in text (a JSON body inside a log line, or JSON that does not parse):
# ``"resets_at": 1759352400``, ``resetsAt=1759352400``.
EPOCH_FIELD = re.compile(r"\bresets?_?at[\"']?\s*[:=]\s*[\"']?(\d{10}(?:\d{3})?)(?![\d.])", re.I)

_UNIT_SECONDS = {
    "w": 604800,
    "week": 604800,
    "weeks": 604800,
    "d": 86400,
    "day": 86400,
    "days": 86400,
    "h": 3600,
    "hr": 3600,
    "hrs": 3600,
    "hour": 3600,
    "hours": 3600,
    "m": 60,
    "min": 60,
    "mins": 60,
    "minute": 60,
    "minutes": 60,
    "s": 1,
    "sec": 1,
    "secs": 1,
    "second": 1,
    "seconds": 1,
    "ms": 1,  # rounded up to a second below
}
_UNIT = r"(?:weeks?|w|days?|d|hours?|hrs?|h|minutes?|mins?|ms|m|seconds?|secs?|s)"
_AMOUNT = rf"\d+(?:\.\d+)?\s*{_UNIT}(?![a-z])"
_DURATION = re.compile(
    r"\b(?:try(?:ing)?\s+again|resets?|retry|available(?:\s+again)?|refresh(?:es)?)\s+(?:in|after)\s+"
    rf"(?P<dur>{_AMOUNT}(?:\s*,?\s*(?:and\s+)?{_AMOUNT})*)",
    re.I,
)
_PART = re.compile(rf"(\d+(?:\.\d+)?)\s*({_UNIT})(?![a-z])", re.I)

_TRIGGER = r"\b(?:resets?|try\s+again|available(?:\s+again)?|retry)(?:\s+(?:at|on))?\s+"
_DATE = (
    r"(?:(?P<mon>jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+"
    r"(?P<day>\d{1,2})(?:st|nd|rd|th)?(?:,?\s+(?P<year>\d{4}))?,?\s+(?:at\s+)?)?"
)
_TIME = r"(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?\s*(?P<ampm>[ap]\.?\s?m\b\.?)?"
_ZONE = (
    r"(?:\s*\((?P<pzone>[A-Za-z][A-Za-z0-9_+\-]*(?:/[A-Za-z0-9_+\-]+)*)\)"
    r"|\s+(?P<bzone>[A-Z][A-Za-z_]+/[A-Za-z0-9_+\-]+(?:/[A-Za-z0-9_+\-]+)?|UTC|GMT)\b)?"
)
_CLOCK = re.compile(_TRIGGER + _DATE + _TIME + _ZONE, re.I)
_ISO = re.compile(
    _TRIGGER
    + r"(?P<iso>\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?(?:\.\d+)?)\s*(?P<off>Z|[+-]\d{2}:?\d{2}|UTC)?",
    re.I,
)


def find_in_text(
    text: str, now: datetime, pinned_zone: str | None = None
) -> tuple[list[StatedReset], list[str]]:
    """Every reset time stated in ``text``, and the statements that had to be ignored."""
    text = normalize(text)
    found: list[StatedReset] = []
    ignored: list[str] = []
    for pattern in (_EPOCH_AFTER_BAR, EPOCH_FIELD):
        for m in pattern.finditer(text):
            stated = from_epoch(int(m.group(1)), m.group(0).strip())
            if stated:
                found.append(stated)
    for m in _DURATION.finditer(text):
        stated = _duration(m, now)
        if stated:
            found.append(stated)
    iso_spans: list[tuple[int, int]] = []
    for m in _ISO.finditer(text):
        iso_spans.append(m.span())
        _collect(_iso(m, pinned_zone), m.group(0), found, ignored)
    for m in _CLOCK.finditer(text):
        if any(a <= m.start() < b for a, b in iso_spans) or not _is_clock(m):
            continue
        _collect(_clock(m, now, pinned_zone), m.group(0), found, ignored)
    return found, ignored


def _collect(
    result: StatedReset | str | None, words: str, found: list[StatedReset], ignored: list[str]
) -> None:
    if isinstance(result, StatedReset):
        found.append(result)
    elif isinstance(result, str):
        ignored.append(f"{result}: {words.strip()}")


def _duration(m: re.Match[str], now: datetime) -> StatedReset | None:
    total = 0.0
    precision = 86400 * 7
    for amount, unit in _PART.findall(m.group("dur")):
        unit_key = unit.lower()
        seconds = _UNIT_SECONDS.get(unit_key)
        if seconds is None:
            return None
        value = float(amount) / 1000 if unit_key == "ms" else float(amount) * seconds
        total += value
        precision = min(precision, seconds)
    # Tolerance stays at a minute even for "in 5h": a coarser unit must not merge two statements.
    return StatedReset(
        at=_utc(now) + timedelta(seconds=total), precision=min(max(precision, 1), 60), text=m.group(0).strip()
    )


def _is_clock(m: re.Match[str]) -> bool:
    """A time needs minutes or am/pm, so ``resets 3 times`` is not a clock."""
    hour = int(m.group("hour"))
    if m.group("minute") is None and m.group("ampm") is None:
        return False
    limit = 12 if m.group("ampm") else 23
    minute = int(m.group("minute") or 0)
    return (1 if m.group("ampm") else 0) <= hour <= limit and minute < 60


def _zone(name: str | None) -> ZoneInfo | None:
    """An explicit IANA zone (``Area/City``, ``UTC`` or ``GMT``); abbreviations like EST are ambiguous."""
    if not name or ("/" not in name and name.upper() not in ("UTC", "GMT")):
        return None
    try:
        return ZoneInfo("UTC" if name.upper() in ("UTC", "GMT") else name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def pinned(name: str) -> ZoneInfo:
    """The zone git pilot pinned for a process it started (any name zoneinfo knows)."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone: {name}") from exc


def _clock(m: re.Match[str], now: datetime, pinned_zone: str | None) -> StatedReset | str | None:
    zone_name = m.group("pzone") or m.group("bzone")
    if zone_name:
        zone = _zone(zone_name)
        if zone is None:
            return "not an IANA zone"
    elif pinned_zone:
        zone = pinned(pinned_zone)
    else:
        return "clock time without a zone"
    hour = int(m.group("hour")) % 12 if m.group("ampm") else int(m.group("hour"))
    if m.group("ampm") and m.group("ampm").lower().startswith("p"):
        hour += 12
    minute = int(m.group("minute") or 0)
    local_now = _utc(now).astimezone(zone)
    words = m.group(0).strip()
    if m.group("mon"):
        return _dated(m, hour, minute, zone, local_now, words)
    today = local_now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    # A bare clock names its next occurrence; within the stated minute it is "now".
    at = today if today >= local_now - timedelta(seconds=60) else _next_day(today, zone)
    return StatedReset(at=at.astimezone(UTC), precision=60, text=words)


def _next_day(moment: datetime, zone: ZoneInfo) -> datetime:
    day = moment.date() + timedelta(days=1)
    return datetime(day.year, day.month, day.day, moment.hour, moment.minute, tzinfo=zone)


def _dated(
    m: re.Match[str], hour: int, minute: int, zone: ZoneInfo, local_now: datetime, words: str
) -> StatedReset | None:
    month = _MONTHS[m.group("mon").lower()[:3]]
    day = int(m.group("day"))
    years = [int(m.group("year"))] if m.group("year") else [local_now.year + d for d in (-1, 0, 1)]
    options = []
    for year in years:
        try:
            options.append(datetime(year, month, day, hour, minute, tzinfo=zone))
        except ValueError:
            continue
    if not options:
        return None
    # Without a year, the statement means the date nearest to now (a past one is then rejected).
    at = min(options, key=lambda d: abs((d - local_now).total_seconds()))
    return StatedReset(at=at.astimezone(UTC), precision=60, text=words)


def _iso(m: re.Match[str], pinned_zone: str | None) -> StatedReset | str | None:
    raw = m.group("iso").replace(" ", "T")
    off = m.group("off")
    try:
        naive = datetime.fromisoformat(raw)
    except ValueError:
        return None
    if off:
        tz = UTC if off.upper() in ("Z", "UTC") else datetime.strptime(off.replace(":", ""), "%z").tzinfo
        at = naive.replace(tzinfo=tz)
    elif pinned_zone:
        at = naive.replace(tzinfo=pinned(pinned_zone))
    else:
        return "date-time without a zone"
    precision = 1 if raw.count(":") >= 2 else 60
    return StatedReset(at=at.astimezone(UTC), precision=precision, text=m.group(0).strip())


# --- the decision -------------------------------------------------------------------------


def decide(
    stated: list[StatedReset], now: datetime, ignored: list[str] | tuple[str, ...] = ()
) -> ResetDecision:
    """The one reset time to schedule on, or the reason there is none."""
    distinct = _distinct(stated)
    ignored_t = tuple(ignored)
    if not distinct:
        reason = "no reset time stated"
        if ignored_t:
            reason = f"no usable reset time ({ignored_t[0]})"
        return ResetDecision(None, reason, (), ignored_t)
    if len(distinct) > 1:
        times = " and ".join(iso(s.at) for s in distinct[:2])
        return ResetDecision(None, f"two different reset times stated: {times}", tuple(distinct), ignored_t)
    only = distinct[0]
    now = _utc(now)
    if only.at < now - timedelta(seconds=only.precision):
        return ResetDecision(None, f"stated reset time is in the past: {iso(only.at)}", (only,), ignored_t)
    if only.at - now > MAX_AHEAD:
        return ResetDecision(
            None, f"stated reset time is more than 8 days away: {iso(only.at)}", (only,), ignored_t
        )
    return ResetDecision(only.at, "", (only,), ignored_t)


def _distinct(stated: list[StatedReset]) -> list[StatedReset]:
    """Statements grouped when they agree within their precision; the most precise one kept."""
    groups: list[StatedReset] = []
    for s in sorted(stated, key=lambda s: (s.at, s.precision, s.text)):
        for i, g in enumerate(groups):
            if abs((s.at - g.at).total_seconds()) <= max(s.precision, g.precision):
                if s.precision < g.precision:
                    groups[i] = s
                break
        else:
            groups.append(s)
    return groups


def iso(at: datetime) -> str:
    """A UTC time as ``2026-11-30T15:43:00Z``."""
    return _utc(at).strftime("%Y-%m-%dT%H:%M:%SZ")


def _utc(at: datetime) -> datetime:
    if at.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    return at.astimezone(UTC)
