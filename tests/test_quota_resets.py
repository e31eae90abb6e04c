"""Reset times are read only when stated, in the forms the agent CLIs print, and rejected when
ambiguous (zone-less clock from an unpinned process), contradictory, far or past."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gitpilot.quota.classify import classify
from gitpilot.quota.resets import decide, find_in_text

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)  # London is on UTC in November
SUMMER = datetime(2026, 7, 1, 12, 0, 0, tzinfo=UTC)  # London is UTC+1, New York UTC-4


def reset(text: str, now: datetime = NOW, pinned: str | None = None) -> str:
    """The decided reset as ISO, or ``-`` plus the reason."""
    found, ignored = find_in_text(text, now, pinned)
    decision = decide(found, now, ignored)
    return decision.at.strftime("%Y-%m-%dT%H:%M:%SZ") if decision.at else "- " + decision.reason


ACCEPTED = [
    # epoch after "|"
    ("Claude AI usage limit reached|1796054400", None, NOW, "2026-11-30T16:00:00Z"),
    # relative durations
    ("try again in 4 days 21 hours 35 minutes", None, NOW, "2026-12-05T09:35:00Z"),
    (
        "You've hit your usage limit. Try again in 5 days 22 hours 11 minutes.",
        None,
        NOW,
        "2026-12-06T10:11:00Z",
    ),
    ("Session limit · resets in 2h 15m", None, NOW, "2026-11-30T14:15:00Z"),
    ("usage limit; retry after 90 seconds", None, NOW, "2026-11-30T12:01:30Z"),
    # clock or date-time with an explicit IANA zone
    ("5-hour limit reached · resets 3pm (Europe/London)", None, NOW, "2026-11-30T15:00:00Z"),
    ("5-hour limit reached · resets 3pm (Europe/London)", None, SUMMER, "2026-07-01T14:00:00Z"),
    (
        "Weekly limit reached ∙ resets Oct 6, 5pm (America/New_York)",
        None,
        datetime(2026, 10, 2, 12, 0, tzinfo=UTC),
        "2026-10-06T21:00:00Z",
    ),
    (
        "You've hit your weekly limit · resets Dec 3, 2:26pm (Europe/London)",
        None,
        NOW,
        "2026-12-03T14:26:00Z",
    ),
    ("Your limit will reset at 9am (Asia/Tokyo).", None, NOW, "2026-12-01T00:00:00Z"),
    ("resets 11am (UTC)", None, NOW, "2026-12-01T11:00:00Z"),  # next occurrence: tomorrow
    ("limit reached, resets at 2026-12-01T09:30:00Z", None, NOW, "2026-12-01T09:30:00Z"),
    # zone-less Codex clocks, read in the zone git pilot pinned for the process
    ("You’ve hit your usage limit. Try again at 3:42 PM.", "Europe/London", NOW, "2026-11-30T15:42:00Z"),
    ("You’ve hit your usage limit. Try again at 3:42 PM.", "America/New_York", NOW, "2026-11-30T20:42:00Z"),
    ("try again at Dec 4th, 2026 2:28 PM.", "Europe/London", NOW, "2026-12-04T14:28:00Z"),
    ("try again at Dec 4th, 2026 2:28 PM.", "Asia/Kolkata", NOW, "2026-12-04T08:58:00Z"),
    ("5-hour limit reached ∙ resets 9pm", "UTC", NOW, "2026-11-30T21:00:00Z"),
]


@pytest.mark.parametrize(("text", "pinned", "now", "expected"), ACCEPTED)
def test_stated_reset_forms(text: str, pinned: str | None, now: datetime, expected: str) -> None:
    assert reset(text, now, pinned) == expected


REJECTED = [
    # zone-less clocks from a process git pilot did not start with a pinned TZ
    ("You’ve hit your usage limit. Try again at 3:42 PM.", "clock time without a zone"),
    ("You've hit your usage limit. Try again at Dec 4th, 2026 2:28 PM.", "clock time without a zone"),
    ("5-hour limit reached ∙ resets 9pm", "clock time without a zone"),
    ("resets 3pm (PST)", "not an IANA zone"),
    ("resets 3pm (Mars/Olympus_Mons)", "not an IANA zone"),
    # two different reset times
    ("limit reached|1796054400 and later: resets in 5h", "two different reset times"),
    (
        "You've hit your session limit · resets 3pm (Europe/London)\n"
        "You've hit your weekly limit · resets Dec 3, 2:26pm (Europe/London)",
        "two different reset times",
    ),
    # too far away, or past
    ("try again in 9 days", "more than 8 days away"),
    ("You've hit your weekly limit · resets Dec 9, 2pm (Europe/London)", "more than 8 days away"),
    ("Claude AI usage limit reached|1796000000", "in the past"),
    ("resets Nov 28, 2pm (Europe/London)", "in the past"),
    # nothing stated: nothing inferred from a plan, no guessed weekly reset
    ("You've hit your weekly limit. Upgrade to Pro.", "no reset time stated"),
    ("Limits reset every 5h and every week.", "no reset time stated"),
    ("resets 3 times before giving up", "no reset time stated"),
]


@pytest.mark.parametrize(("text", "reason"), REJECTED)
def test_unusable_reset_statements(text: str, reason: str) -> None:
    result = reset(text)
    assert result.startswith("- ") and reason in result


def test_the_same_time_stated_twice_is_one_time() -> None:
    text = (
        "ERROR: You’ve hit your usage limit. Try again at 3:43 PM.\n"
        "ERROR: You’ve hit your usage limit. Try again at 3:43 PM."
    )
    assert reset(text, pinned="Europe/London") == "2026-11-30T15:43:00Z"


def test_a_clock_agrees_with_an_epoch_in_the_same_minute() -> None:
    # Codex truncates 15:42:11 to "3:42 PM"; the epoch is the precise statement.
    text = "usage limit reached|1796053331\nYou’ve hit your usage limit. Try again at 3:42 PM."
    assert reset(text, pinned="Europe/London") == "2026-11-30T15:42:11Z"


def test_a_clock_within_its_minute_is_now_not_tomorrow() -> None:
    now = datetime(2026, 11, 30, 15, 42, 30, tzinfo=UTC)
    assert reset("resets 3:42pm (Europe/London)", now) == "2026-11-30T15:42:00Z"


def test_json_resets_at_in_an_api_error_body() -> None:
    body = (
        '{"error": {"type": "usage_limit_reached", "message": "The usage limit has been reached",'
        ' "plan_type": "plus", "resets_at": 1796054400}}'
    )
    verdict = classify(body, NOW)
    assert verdict.kind == "quota"
    assert verdict.reset.at == datetime(2026, 11, 30, 16, 0, tzinfo=UTC)


def test_stream_json_rate_limit_event_rejected_gives_resets_at() -> None:
    stream = "\n".join(
        [
            '{"type":"system","subtype":"init","session_id":"s"}',
            '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1796054400,'
            '"rateLimitType":"five_hour"},"session_id":"s"}',
            '{"type":"result","subtype":"success","is_error":true,"api_error_status":429,'
            '"result":"You\'ve hit your session limit · resets 4pm (Europe/London)","session_id":"s"}',
        ]
    )
    verdict = classify(stream, NOW)
    assert (verdict.kind, verdict.reset.at) == ("quota", datetime(2026, 11, 30, 16, 0, tzinfo=UTC))


def test_allowed_rate_limit_event_states_nothing() -> None:
    stream = (
        '{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning",'
        '"resetsAt":1796054400,"rateLimitType":"seven_day"}}'
    )
    verdict = classify(stream, NOW)
    assert (verdict.kind, verdict.reset.at) == ("unknown", None)


def test_an_epoch_and_a_different_clock_are_two_times() -> None:
    stream = "\n".join(
        [
            '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1796054400}}',
            '{"type":"result","is_error":true,"api_error_status":429,'
            '"result":"You\'ve hit your session limit · resets 6pm (Europe/London)"}',
        ]
    )
    verdict = classify(stream, NOW)
    assert verdict.kind == "quota" and verdict.reset.at is None
    assert "two different reset times" in verdict.reset.reason
    assert verdict.stop_message.startswith("quota exhausted; reset time unavailable")
