"""Every failure message in the captured CLI samples is classified, with its stated reset time.

The samples are what Claude Code 2.1.197 and codex-cli 0.171.0 printed (fixtures/agent-cli-samples/). ``NOW`` is the moment they were captured; ``London`` is the ``TZ`` the
Codex processes ran with, which git pilot would have pinned itself.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from gitpilot.quota.classify import classify

SAMPLES = Path(__file__).resolve().parents[1] / "fixtures" / "agent-cli-samples"
pytestmark = pytest.mark.skipif(
    not SAMPLES.is_dir(), reason=f"the agent-cli samples are missing ({SAMPLES})"
)

NOW = datetime(2026, 11, 30, 12, 28, 20, tzinfo=UTC)
LONDON = "Europe/London"

# file -> (kind, reset read without a pinned zone, reset read with TZ pinned to Europe/London)
CLI_HELP = {
    "claude-p-mock-429-apikey.txt": ("rate_limit", None, None),
    "claude-p-mock-429-oauth-five_hour.txt": ("quota", "2026-11-30T15:43:00Z", "2026-11-30T15:43:00Z"),
    "claude-p-mock-429-text-stdout.txt": ("quota", "2026-12-03T14:26:00Z", "2026-12-03T14:26:00Z"),
    "claude-p-mock-429-text-stderr.txt": ("unknown", None, None),
    "claude-p-noauth-json.txt": ("auth", None, None),
    "claude-p-noauth-stream-json.txt": ("auth", None, None),
    "claude-p-resume-missing.txt": ("bad_command", None, None),
    "claude-p-resume-existing.txt": ("unknown", None, None),
    "claude-p-continue.txt": ("unknown", None, None),
    "claude-p-mock-posttoolusefailure-ctx.txt": ("unknown", None, None),
    "claude-p-mock-pretooluse-exit2.txt": ("unknown", None, None),
    "claude-p-mock-toolfail-stream-json.txt": ("unknown", None, None),
    "claude-p-mock-tools-stream-json.txt": ("unknown", None, None),
    "codex-exec-json-mock-usage-limit.txt": ("quota", None, "2026-11-30T15:42:00Z"),
    # Copilot CLI 1.0.102 and Pi 0.73.1: their JSON events are not a shape the classifier reads
    # (the adapters turn them into plain lines: tests/test_run_more_agents.py); their text is.
    "copilot-p-json-mock-429-quota.txt": ("unknown", None, None),
    "copilot-p-text-mock-429-quota.txt": ("quota", None, None),
    "pi-p-json-mock-429-quota.txt": ("unknown", None, None),
    "pi-p-text-mock-429-quota.txt": ("quota", None, None),
    "codex-exec-json-mock-usage-limit-free.txt": ("quota", None, "2026-11-30T14:28:00Z"),
    "codex-exec-json-mock-usage-limit-team.txt": ("quota", None, "2026-11-30T14:28:00Z"),
    "codex-exec-review-json-mock-usage-limit.txt": ("quota", None, "2026-11-30T15:43:00Z"),
    "codex-review-base-mock-usage-limit.txt": ("quota", None, "2026-11-30T15:43:00Z"),
    "codex-exec-json-run.txt": ("network", None, None),
    "codex-review-base-run.txt": ("network", None, None),
    "codex-features-list-C.txt": ("bad_command", None, None),
    "codex-review-C.txt": ("bad_command", None, None),
    "codex-review-base-mock-success.txt": ("unknown", None, None),
    "codex-exec-review-json-mock-success.txt": ("unknown", None, None),
}

HOOKS_429 = {
    "StopFailure": ("quota", "2026-12-03T14:26:00Z"),
    "SessionStart": ("unknown", None),
    "SessionEnd": ("unknown", None),
    "UserPromptSubmit": ("unknown", None),
}

TRANSCRIPTS = {
    "01826823": ("rate_limit", None),  # API key: "Request rejected (429)", no plan limit
    "038d291c": ("auth", None),
    "0e4b53fb": ("quota", "2026-11-30T15:43:00Z"),
    "33333333": ("quota", "2026-12-03T14:26:00Z"),
    "ec29fd0b": ("quota", "2026-12-03T14:26:00Z"),
    "531de40f": ("auth", None),
    "ba6a2df1": ("auth", None),
    "11111111": ("unknown", None),  # tool failures are not agent failures
    "22222222": ("unknown", None),
    "4c9178d4": ("unknown", None),
    "b13762de": ("unknown", None),
}

# Rollouts carry the exhausted window's resets_at (epoch seconds) beside the zone-less message.
ROLLOUTS = {
    "ee576a": ("quota", "2026-11-30T15:42:11Z"),
    "709e3a": ("quota", "2026-12-04T14:28:20Z"),
    "f3baaf": ("quota", "2026-12-04T14:28:20Z"),
    "e69012": ("quota", "2026-12-04T14:28:20Z"),
    "06fe61": ("quota", "2026-12-04T14:28:20Z"),
    "7015bb": ("quota", "2026-12-04T14:28:20Z"),
    "23cf4a": ("quota", "2026-11-30T14:28:36Z"),
    "c11d36": ("quota", "2026-11-30T14:28:37Z"),
    "0d5551": ("quota", "2026-11-30T14:28:39Z"),
    "ee39ba": ("quota", "2026-12-04T14:28:40Z"),
    "b1a386": ("quota", "2026-11-30T15:43:48Z"),
    "5c6325": ("quota", "2026-11-30T15:43:48Z"),
    "acf47c": ("quota", None),  # review child without the rate_limits event: only a zone-less clock
    "8ce929": ("quota", None),
    "f63c6": ("unknown", None),
    "134": ("unknown", None),
    "d9e60": ("unknown", None),
    "41e": ("unknown", None),
    "7a3b": ("unknown", None),
    "a93": ("unknown", None),
    "7c3": ("unknown", None),
    "b14": ("unknown", None),
}


def body(path: Path) -> str:
    """A cli-help capture without its ``$ command`` line, ``[exit N]`` and stream markers."""
    lines = path.read_text(encoding="utf-8").splitlines()
    keep = [ln for ln in lines[1:] if not ln.startswith(("[exit ", "--- stdout:", "--- stderr:"))]
    return "\n".join(keep)


def at(verdict_reset: datetime | None) -> str | None:
    return verdict_reset.strftime("%Y-%m-%dT%H:%M:%SZ") if verdict_reset else None


@pytest.mark.parametrize("name", sorted(CLI_HELP))
def test_cli_output_samples(name: str) -> None:
    kind, unpinned, pinned = CLI_HELP[name]
    text = body(SAMPLES / "cli-help" / name)
    verdict = classify(text, NOW)
    assert verdict.kind == kind
    assert at(verdict.reset.at) == unpinned
    assert at(classify(text, NOW, pinned_zone=LONDON).reset.at) == pinned


def test_every_429_and_usage_limit_capture_is_in_the_table() -> None:
    names = {
        p.name
        for p in (SAMPLES / "cli-help").iterdir()
        if "429" in p.name or "usage-limit" in p.name or p.name.startswith("claude-p-")
    }
    assert names <= set(CLI_HELP)


@pytest.mark.parametrize("event", sorted(HOOKS_429))
def test_hook_inputs_of_a_limited_session(event: str) -> None:
    (path,) = (SAMPLES / "claude-hook-inputs-429").glob(f"{event}.*.json")
    verdict = classify(path.read_text(encoding="utf-8"), NOW)
    assert (verdict.kind, at(verdict.reset.at)) == HOOKS_429[event]


def test_hook_inputs_of_a_healthy_session_say_nothing() -> None:
    for path in sorted((SAMPLES / "claude-hook-inputs").glob("*.json")):
        assert classify(path.read_text(encoding="utf-8"), NOW).kind == "unknown", path.name


def _one(directory: str, key: str) -> Path:
    matches = [
        p for p in (SAMPLES / directory).iterdir() if p.stem.split("-", 1)[0] == key or p.stem.endswith(key)
    ]
    assert len(matches) == 1, (key, matches)
    return matches[0]


@pytest.mark.parametrize("key", sorted(TRANSCRIPTS))
def test_transcripts_of_failed_sessions(key: str) -> None:
    verdict = classify(_one("claude-transcripts-2.1.197", key).read_text(encoding="utf-8"), NOW)
    assert (verdict.kind, at(verdict.reset.at)) == TRANSCRIPTS[key]


@pytest.mark.parametrize("key", sorted(ROLLOUTS))
def test_codex_rollouts(key: str) -> None:
    verdict = classify(_one("codex-rollouts-0.171.0", key).read_text(encoding="utf-8"), NOW)
    assert (verdict.kind, at(verdict.reset.at)) == ROLLOUTS[key]


def test_every_rollout_is_in_the_table() -> None:
    for path in (SAMPLES / "codex-rollouts-0.171.0").iterdir():
        assert sum(path.stem.endswith(k) for k in ROLLOUTS) == 1, path.name


def test_quota_without_a_usable_reset_says_exactly_what_to_do() -> None:
    verdict = classify(body(SAMPLES / "cli-help" / "codex-exec-json-mock-usage-limit.txt"), NOW)
    assert verdict.stop_message == (
        "quota exhausted; reset time unavailable for automatic scheduling. "
        "Run git pilot run once the limit has reset."
    )
    assert "clock time without a zone" in verdict.reset.reason
