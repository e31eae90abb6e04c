"""Agent output is sorted into quota / rate_limit / auth / network / refusal / bad_command /
unknown, by the forms in issue 6 and the messages the CLIs really print."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from gitpilot.quota.classify import classify

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)

TEXTS = [
    # quota: plan and credit limits, both apostrophes
    ("Claude AI usage limit reached|1796054400", "quota"),
    ("You've run out of credits.", "quota"),
    ("You are out of credits", "quota"),
    ('{"error":{"code":"insufficient_quota","message":"You exceeded your current quota"}}', "quota"),
    ("5-hour limit reached ∙ resets 9pm", "quota"),
    ("You've hit your session limit · resets 3:43pm (Europe/London)", "quota"),
    ("You’ve hit your session limit · resets 3:43pm (Europe/London)", "quota"),
    ("You’ve hit your usage limit. Try again at 3:42 PM.", "quota"),
    ("You've hit your usage limit. Try again at 3:42 PM.", "quota"),
    ("Opus weekly limit reached ∙ resets Oct 6, 5pm", "quota"),
    ("Credit balance is too low", "quota"),
    ("Extra Usage credits exhausted. Top up to continue.", "quota"),
    # rate limit: a short throttle without a plan-limit message
    (
        "API Error: Request rejected (429) · This request would exceed your account's rate limit.",
        "rate_limit",
    ),
    ("exceeded retry limit, last status: 429 Too Many Requests", "rate_limit"),
    ("Too many requests, slow down", "rate_limit"),
    ("API Error: Repeated 529 Overloaded errors", "rate_limit"),
    ('{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', "rate_limit"),
    (
        "API Error: Server is temporarily limiting requests (not your usage limit) · Rate limited",
        "rate_limit",
    ),
    # auth
    ("Not logged in · Please run /login", "auth"),
    ("exceeded retry limit, last status: 401 Unauthorized, request id: abc", "auth"),
    ("Invalid API key · Fix external API key", "auth"),
    ("OAuth token has expired. Please obtain a new token or refresh your existing token.", "auth"),
    # network
    ("Error: getaddrinfo ENOTFOUND api.anthropic.com", "network"),
    ("read ECONNRESET", "network"),
    ("stream disconnected before completion: error sending request", "network"),
    ("ERROR: Reconnecting... 5/5\nERROR: Reconnecting... waiting for network", "network"),
    ("Unable to connect to API (ConnectionRefused)", "network"),
    # refusal and bad command
    ("This request was blocked by our content policy.", "refusal"),
    ("Your request was flagged as potentially violating our usage policy.", "refusal"),
    ("error: unknown option '--bogus'", "bad_command"),
    ("error: unexpected argument '-C' found", "bad_command"),
    ("No conversation found with session ID: 9999", "bad_command"),
    # nothing recognisable
    ("Segmentation fault", "unknown"),
    ("", "unknown"),
]


@pytest.mark.parametrize(("text", "kind"), TEXTS)
def test_kinds(text: str, kind: str) -> None:
    assert classify(text, NOW).kind == kind


def test_a_plan_limit_wins_over_the_429_beside_it() -> None:
    text = "API Error: 429 · You've hit your session limit · resets 3pm (Europe/London)"
    verdict = classify(text, NOW)
    assert verdict.kind == "quota"
    assert verdict.reset.at == datetime(2026, 11, 30, 15, 0, tzinfo=UTC)


def test_reconnecting_that_recovered_is_not_a_failure() -> None:
    events = [
        {"type": "thread.started", "thread_id": "t"},
        {"type": "error", "message": "Reconnecting... 2/5 (stream disconnected before completion)"},
        {"type": "item.completed", "item": {"id": "i", "type": "agent_message", "text": "done"}},
        {"type": "turn.completed", "usage": {}},
    ]
    assert classify("\n".join(json.dumps(e) for e in events), NOW).kind == "unknown"


def test_reconnecting_that_ends_in_failure_is_network() -> None:
    events = [
        {"type": "error", "message": "Reconnecting... 5/5 (stream disconnected before completion)"},
        {"type": "turn.failed", "error": {"message": "stream disconnected before completion"}},
    ]
    assert classify("\n".join(json.dumps(e) for e in events), NOW).kind == "network"


def test_tool_output_and_prompts_decide_nothing() -> None:
    # A tool that printed "429" or "usage limit" is the agent's work, not the agent failing.
    records = [
        {"type": "user", "message": {"role": "user", "content": "why do we get 429 Too Many Requests?"}},
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {"type": "tool_result", "is_error": True, "content": "You've hit your usage limit; 401"}
                ],
            },
        },
        {"type": "result", "subtype": "success", "is_error": False, "result": "fixed the rate limit"},
    ]
    assert classify("\n".join(json.dumps(r) for r in records), NOW).kind == "unknown"


def test_an_earlier_limit_the_session_got_past_does_not_count() -> None:
    records = [
        {
            "type": "assistant",
            "error": "rate_limit",
            "isApiErrorMessage": True,
            "message": {
                "model": "<synthetic>",
                "content": [{"type": "text", "text": "You've hit your session limit"}],
            },
        },
        {"type": "assistant", "message": {"model": "claude", "content": [{"type": "text", "text": "ok"}]}},
        {
            "type": "assistant",
            "error": "authentication_failed",
            "message": {"model": "<synthetic>", "content": [{"type": "text", "text": "Not logged in"}]},
        },
    ]
    assert classify("\n".join(json.dumps(r) for r in records), NOW).kind == "auth"


@pytest.mark.parametrize(
    ("error", "message", "kind"),
    [
        ("rate_limit", "You've hit your weekly limit · resets Dec 3, 2:26pm (Europe/London)", "quota"),
        ("rate_limit", "", "quota"),
        ("rate_limit", "API Error: Request rejected (429) · Please try again later.", "rate_limit"),
        ("billing_error", "Credit balance is too low", "quota"),
        ("authentication_failed", "Invalid API key", "auth"),
    ],
)
def test_stop_failure_hook(error: str, message: str, kind: str) -> None:
    hook = {
        "session_id": "s",
        "hook_event_name": "StopFailure",
        "error": error,
        "last_assistant_message": message,
    }
    assert classify(json.dumps(hook, indent=2), NOW).kind == kind


def test_json_report_has_stable_keys_and_the_exact_stop_message() -> None:
    report = classify("You’ve hit your usage limit. Try again at 3:42 PM.", NOW).to_json()
    assert report["kind"] == "quota"
    assert report["reset_at"] is None
    assert report["message"] == (
        "quota exhausted; reset time unavailable for automatic scheduling. "
        "Run git pilot run once the limit has reset."
    )
    assert set(report) == {
        "kind",
        "evidence",
        "reset_at",
        "reset_epoch",
        "reset_stated",
        "reset_unavailable",
        "reset_ignored",
        "message",
    }
    assert report["reset_ignored"] == ["clock time without a zone: Try again at 3:42 PM."]


def test_a_27_mb_log_is_read_from_its_end_in_bounded_time() -> None:
    import time

    from gitpilot.quota.classify import SCAN_CHARS

    noise = "".join(f"line {i} of ordinary agent output, nothing to see\n" for i in range(540_000))
    assert len(noise) > 25 * SCAN_CHARS
    token = "ghp_" + "Q" * 36
    cases = {
        "text": (noise + "You've hit your usage limit · resets 5pm (UTC)\n", "quota"),
        "json lines": (noise + '{"type":"turn.failed","error":{"message":"stream disconnected before completion"}}\n',
                       "network"),
        "one huge line": ("x" * len(noise) + f" {token} Credit balance is too low", "quota"),
        "a huge json document": (json.dumps({"hook_event_name": "StopFailure", "error": "authentication_failed",
                                             "last_assistant_message": "y" * len(noise)}, indent=1), "auth"),
    }
    for name, (text, kind) in cases.items():
        # CPU time of this process, not the wall clock: the work done, whatever else the machine runs
        started = time.process_time()
        verdict = classify(text, NOW)
        elapsed = time.process_time() - started
        assert verdict.kind == kind, name
        assert elapsed < 8, f"{name}: {elapsed:.1f}s"  # reading all 27 MB line by line took 16-20 s
        assert token not in verdict.evidence
    assert classify(noise + "You've hit your usage limit · resets 5pm (UTC)\n", NOW).reset.at == \
        datetime(2026, 11, 30, 17, 0, tzinfo=UTC)
    # Only the end is read: a stop printed 2 MB before the end, with nothing after it, is past the window.
    early = "Credit balance is too low\n" + noise[: 2 * SCAN_CHARS]
    assert classify(early, NOW).kind == "unknown"
