"""The failure-loop detector: notice when an agent keeps failing the same check the same way.

Evidence is gathered per turn (from one user prompt to the Stop event) from normalized
events (``events.py``):

* a recognized check command (``pytest``, ``npm test``, ``cargo test``, the checks of
  ``.gitpilot.toml`` ...) that fails with the *same* error as its previous failure extends
  that check's streak, provided the agent either changed nothing in between or kept
  editing the same files. Edits only to files not touched earlier in the streak start a
  new hypothesis (the streak restarts), and an error that changes restarts it too: changing
  errors are progress, not a loop;
* a pass of a recognized check clears the evidence of every check it covers (``pytest``
  covers ``pytest tests/x.py``);
* anything whose outcome is not the check's (``pytest | tail``, ``pytest || true``, a
  background run, an interrupted call) is ambiguous and counts for nothing;
* other tool calls only make the turn longer, which on its own never triggers anything.

When a streak reaches the threshold the agent gets one short redirect (returned as
``redirect``, sent as the hook's ``additionalContext``). If the repetition continues for
``notice_after`` more failures, the user gets one notice (``systemMessage``). Both happen at
most once per turn; the turn is never stopped.

The threshold starts at ``optimizer.loop_threshold`` (3). Once the repository has
``optimizer.loop_learn_turns`` passing turns on record, it becomes one more than the streak
that 90% of those passing turns needed before their check passed (kept within 2..8): a
repository whose productive work often takes four tries gets more room, one where it never
takes more than one try gets less.

The state is a plain JSON-able dict so the hook can keep it in a file between processes.
"""

from __future__ import annotations

import math
import re
import zlib
from typing import Any

from gitpilot.optimizer import events as ev_mod
from gitpilot.optimizer.events import FAIL, PASS, PROMPT, STOP, TOOL, UNKNOWN, Event

STATE_VERSION = 1
SEEN_LIMIT = 512
MIN_THRESHOLD = 2
MAX_THRESHOLD = 8

# The defaults of the ``[optimizer]`` keys the hook reads are ``config.SCHEMA``'s. The hook cannot
# import ``gitpilot.config`` (pathlib and the validator would load on every tool call), so they
# are restated here, once: ``HOOK_DEFAULTS`` maps each key to its constant, and a test
# (tests/test_config_values.py) holds them equal to the schema.
DEFAULT_LOOP_DETECTION = True
DEFAULT_THRESHOLD = 3
DEFAULT_NOTICE_AFTER = 2
DEFAULT_LEARN_TURNS = 10
DEFAULT_LEARN = False
DEFAULT_SOURCEMAP_INJECT = False
HOOK_DEFAULTS: dict[str, bool | int] = {
    "optimizer.loop_detection": DEFAULT_LOOP_DETECTION,
    "optimizer.loop_threshold": DEFAULT_THRESHOLD,
    "optimizer.loop_notice_after": DEFAULT_NOTICE_AFTER,
    "optimizer.loop_learn_turns": DEFAULT_LEARN_TURNS,
    "optimizer.learn": DEFAULT_LEARN,
    "optimizer.sourcemap_inject": DEFAULT_SOURCEMAP_INJECT,
}


class Settings:
    """The ``[optimizer]`` values the detector uses."""

    __slots__ = ("loop_detection", "threshold", "notice_after", "learn_turns", "learn", "checks")

    def __init__(self, *, loop_detection: bool = DEFAULT_LOOP_DETECTION, threshold: int = DEFAULT_THRESHOLD,
                 notice_after: int = DEFAULT_NOTICE_AFTER, learn_turns: int = DEFAULT_LEARN_TURNS,
                 learn: bool = DEFAULT_LEARN, checks: tuple[tuple[str, str], ...] = ()) -> None:
        self.loop_detection = loop_detection
        self.threshold = max(1, threshold)
        self.notice_after = max(1, notice_after)
        self.learn_turns = max(1, learn_turns)
        self.learn = learn
        self.checks = checks


class Outcome:
    """What one event produced: a redirect for the agent and/or a notice for the user."""

    __slots__ = ("redirect", "notice")

    def __init__(self, redirect: str = "", notice: str = "") -> None:
        self.redirect = redirect
        self.notice = notice

    def __bool__(self) -> bool:
        return bool(self.redirect or self.notice)


# ---------------------------------------------------------------------------------------
# error fingerprints
# ---------------------------------------------------------------------------------------

_SALIENT = re.compile(
    r"error|fail|assert|panic|exception|traceback|expected|not found|cannot|undefined|mismatch|"
    r"denied|refused|timed? ?out|^E\s{2,}|^\s*-->|FAILED|ERR!", re.I)
_COLOUR = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_VOLATILE = (
    (re.compile(r"\d{4}-\d\d-\d\d[T ][\d:.,]+(?:Z|[+-]\d\d:?\d\d)?"), "<time>"),
    (re.compile(r"\b\d\d:\d\d:\d\d(?:[.,]\d+)?\b"), "<time>"),
    (re.compile(r"0x[0-9a-fA-F]+"), "<addr>"),
    (re.compile(r"(?:/private)?/(?:tmp|var/folders)/[^\s:'\"()]+"), "<tmp>"),
    (re.compile(r"\b\d+(?:\.\d+)?\s*(?:s|ms|us|µs|ns|sec|secs|seconds|minutes?)\b"), "<dur>"),
    (re.compile(r"\bline \d+"), "line <n>"),
    (re.compile(r"(\.[A-Za-z0-9]{1,5})([:(])\d+(?:[:,]\d+)?"), r"\1\2<n>"),  # file.py:123:4, File(12)
    (re.compile(r"\b[0-9a-f]{12,64}\b"), "<hash>"),
    (re.compile(r"\bpid[ =:]*\d+", re.I), "pid <n>"),
    (re.compile(r"[ \t]+"), " "),
)


def error_signature(text: str) -> str:
    """A fingerprint of a failure that ignores what changes between identical failures.

    The lines that describe the failure (errors, assertions, FAILED lines, the exit code)
    are normalized: timestamps, durations, temporary paths, addresses, hashes and line
    numbers are blanked, so a rerun of the same failure has the same signature while a
    different error, test or message does not.
    """
    lines = [ln.strip() for ln in _COLOUR.sub("", text).splitlines() if ln.strip()]
    salient = [ln for ln in lines if _SALIENT.search(ln) or ln.startswith("Exit code")]
    chosen = salient[-40:] if salient else lines[-10:]
    norm: list[str] = []
    for ln in chosen:
        for pattern, repl in _VOLATILE:
            ln = pattern.sub(repl, ln)
        norm.append(ln.strip())
    data = "\n".join(norm).encode("utf-8", "replace")
    # two 32-bit checksums: enough to tell consecutive failures apart, and zlib is already loaded
    # at startup where hashlib would load OpenSSL (~2 ms on every hook call)
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


# ---------------------------------------------------------------------------------------
# state
# ---------------------------------------------------------------------------------------

def new_state(session: str) -> dict[str, Any]:
    return {"v": STATE_VERSION, "session": session, "seen": [], "turns": 0, "turn": None}


def seen_before(state: dict[str, Any], event_id: str) -> bool:
    """Whether ``event_id`` was already counted (and remember it if not)."""
    if not event_id:
        return False
    seen: list[str] = state.setdefault("seen", [])
    if event_id in seen:
        return True
    seen.append(event_id)
    if len(seen) > SEEN_LIMIT:
        del seen[: len(seen) - SEEN_LIMIT]
    return False


def learned_threshold(streaks: list[int], settings: Settings) -> tuple[int, str]:
    """The threshold for a new turn, from the streaks earlier passing turns needed."""
    if len(streaks) < settings.learn_turns:
        return settings.threshold, "default"
    ordered = sorted(max(0, s) for s in streaks)
    p90 = ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]
    value = min(MAX_THRESHOLD, max(MIN_THRESHOLD, p90 + 1))
    return value, f"learned from {len(ordered)} passing turns"


def begin_turn(state: dict[str, Any], threshold: int, source: str, turn_id: str = "") -> None:
    state["turns"] = int(state.get("turns", 0)) + 1
    state["turn"] = {
        "n": state["turns"], "id": turn_id, "threshold": threshold, "threshold_source": source,
        "tools": 0, "checks": {}, "cleared": [], "last": "", "redirected": False, "noticed": False,
    }


def end_turn(state: dict[str, Any]) -> dict[str, Any] | None:
    """Close the running turn; its summary when it was a passing turn (for learning), else None."""
    turn = state.get("turn")
    state["turn"] = None
    if not turn or turn.get("last") != PASS:
        return None
    cleared = [int(c) for c in turn.get("cleared", [])]
    return {"streak": max(cleared, default=0), "tools": int(turn.get("tools", 0))}


def _turn(state: dict[str, Any], settings: Settings) -> dict[str, Any]:
    if not state.get("turn"):
        begin_turn(state, settings.threshold, "default")
    turn: dict[str, Any] = state["turn"]
    return turn


# ---------------------------------------------------------------------------------------
# observing events
# ---------------------------------------------------------------------------------------

def on_prompt(state: dict[str, Any], settings: Settings, history: list[int], turn_id: str = "") -> \
        dict[str, Any] | None:
    """A user prompt: close any open turn (its summary if it passed) and begin a new one.

    ``history`` are the streaks of the repository's passing turns on record; the new turn's
    threshold is learned from them (and from the turn just closed) once there are enough.
    """
    summary = end_turn(state)
    streaks = history + ([int(summary["streak"])] if summary is not None else [])
    threshold, source = learned_threshold(streaks, settings)
    begin_turn(state, threshold, source, turn_id)
    return summary


def on_stop(state: dict[str, Any]) -> dict[str, Any] | None:
    """The Stop event: close the turn; its summary when it was a passing turn."""
    return end_turn(state)


def observe(state: dict[str, Any], event: Event, settings: Settings, root: str = "") -> Outcome:
    """Feed one tool event (already de-duplicated) into the session state."""
    if event.kind != TOOL:
        return Outcome()
    turn = _turn(state, settings)
    turn["tools"] = int(turn.get("tools", 0)) + 1
    if event.is_edit:
        if event.status != FAIL:  # a failed edit changed nothing
            _record_edit(turn, [ev_mod.relative_path(p, root) for p in event.paths])
        return Outcome()
    if not event.is_shell:
        return Outcome()
    parsed = ev_mod.parse_command(event.command, settings.checks)
    checks = parsed.checks
    if not checks:
        return Outcome()
    status = UNKNOWN if event.background else parsed.check_status(event.status)
    if status == PASS:
        for inv in checks:
            _clear(turn, inv)
        turn["last"] = PASS
        return Outcome()
    if status != FAIL:
        return Outcome()  # ambiguous: neither evidence of a loop nor of progress
    turn["last"] = FAIL
    return _failure(turn, checks[0], error_signature(event.text), settings)


def _record_edit(turn: dict[str, Any], paths: list[str]) -> None:
    for rec in turn["checks"].values():
        rec["gap"] = sorted(set(rec["gap"]) | set(paths))


def _covers(inv: ev_mod.RunnerCall, rec: dict[str, Any]) -> bool:
    if inv.base != rec["base"]:
        return False
    return not inv.targets or set(rec["targets"]) <= set(inv.targets)


def _clear(turn: dict[str, Any], inv: ev_mod.RunnerCall) -> None:
    for key in sorted(turn["checks"]):
        rec = turn["checks"][key]
        if key == inv.check or _covers(inv, rec):
            turn["cleared"].append(int(rec["streak"]))
            del turn["checks"][key]


def _failure(turn: dict[str, Any], inv: ev_mod.RunnerCall, sig: str, settings: Settings) -> Outcome:
    rec = turn["checks"].get(inv.check)
    if rec is not None and rec["sig"] == sig:
        gap, files = set(rec["gap"]), set(rec["files"])
        if not gap or not files or gap & files:
            rec["streak"] += 1
            rec["files"] = sorted(files | gap)
        else:  # the agent moved on to other files: a new hypothesis
            rec["streak"] = 1
            rec["files"] = sorted(gap)
    else:
        rec = {"sig": sig, "streak": 1, "files": [], "base": inv.base, "targets": list(inv.targets)}
        turn["checks"][inv.check] = rec
    rec["gap"] = []
    streak, threshold = int(rec["streak"]), int(turn["threshold"])
    if streak >= threshold and not turn["redirected"]:
        turn["redirected"] = True
        turn["redirect_key"] = inv.check
        return Outcome(redirect=redirect_text(inv.check, streak, rec["files"]))
    if turn["redirected"] and not turn["noticed"] and streak >= threshold + settings.notice_after:
        turn["noticed"] = True
        return Outcome(notice=notice_text(inv.check, streak))
    return Outcome()


def _files(files: list[str]) -> str:
    shown = ", ".join(files[:3])
    return shown + (f" and {len(files) - 3} more" if len(files) > 3 else "")


def redirect_text(check: str, streak: int, files: list[str]) -> str:
    head = f"git pilot: `{check}` has now failed {streak} times in a row in this turn with the same error"
    if files:
        return (f"{head}, with edits to {_files(files)} in between. Before editing again, revisit your "
                f"hypothesis: re-read the whole failure output and the code it points to, and check the "
                f"assumption behind your last edits.")
    return (f"{head} and no change in between; rerunning it will not change the result. Revisit your "
            f"hypothesis: re-read the whole failure output and the code it points to.")


def notice_text(check: str, streak: int) -> str:
    return (f"git pilot: the agent has run `{check}` {streak} times this turn with the same failure, "
            f"even after a redirect. It may be stuck in a loop; consider stepping in.")


def replay(events_: list[Event], settings: Settings, root: str = "",
           streaks: list[int] | None = None) -> list[tuple[int, Outcome]]:
    """Run events through a fresh session state; the (index, outcome) of each non-empty outcome.

    ``streaks`` are the passing-turn streaks on record (for the learned threshold); turns
    that pass during the replay are added to it.
    """
    history = [] if streaks is None else streaks
    state: dict[str, Any] = new_state(events_[0].session if events_ else "")
    out: list[tuple[int, Outcome]] = []
    for i, event in enumerate(events_):
        summary = None
        if event.kind == PROMPT:
            summary = on_prompt(state, settings, history, event.event_id)
        elif event.kind == STOP:
            summary = on_stop(state)
        elif event.kind == TOOL and not seen_before(state, event.event_id):
            result = observe(state, event, settings, root)
            if result:
                out.append((i, result))
        if summary is not None:
            history.append(int(summary["streak"]))
    return out
