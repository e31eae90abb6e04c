"""Learned command alternatives: narrow, confirmed facts about this repository's environment.

A fact reads: "bare ``pytest`` is not available here (command not found); ``python3 -m
pytest`` works". It is learned only for a small whitelist of test and build runners
(``events.LEARNABLE_RUNNERS``), and both sides are invocation *forms* built from a fixed
vocabulary (a launcher such as ``uv run`` or ``python3 -m`` plus the runner's name), never
text copied from a command line, its output or a prompt.

* Evidence within one session: a whitelisted form fails with a missing-command or
  missing-module message, and another form of the same runner passes. That session then
  confirms "form A -> form B". Ordinary failures (assertions, compile errors) teach nothing.
* Three independent sessions (distinct session ids) must confirm the same replacement before
  the fact is shown to a later session (at SessionStart, as ``additionalContext``).
* A contradicting result retires the fact: the replacement itself reports a missing command
  or module, or the "missing" form runs and passes. A retired fact is listed but never
  injected; new evidence after retirement starts a fresh count.
* git pilot never runs a learned command; it only tells the agent.

Facts live in ``<git common dir>/pilot/learned.json`` (written atomically, under a lock).
"""

from __future__ import annotations

import re
from typing import Any

from gitpilot.optimizer import events as ev_mod
from gitpilot.optimizer.events import PASS, TOOL, Event

CONFIRMATIONS = 3
STORE_VERSION = 1

MISSING_COMMAND = "command not found"
MISSING_MODULE = "module not found"


# ---------------------------------------------------------------------------------------
# classifying one command result
# ---------------------------------------------------------------------------------------

def _missing_patterns(name: str) -> list[re.Pattern[str]]:
    n = re.escape(name)
    return [
        re.compile(rf"(?:^|[\s:/'\"`]){n}: (?:command )?not found", re.M),
        re.compile(rf"command not found: {n}(?![\w.-])"),
        re.compile(rf"(?:^|[\s:/'\"`]){n}: No such file or directory", re.M),
        re.compile(rf"Command not found: {n}(?![\w.-])"),  # poetry run
        re.compile(rf"Failed to spawn: `{n}`"),  # uv run
        re.compile(rf"executable file not found.*\b{n}\b|\b{n}\b.*executable file not found"),
        re.compile(rf"'{n}' is not recognized as an internal or external command"),
    ]


def missing_kind(inv: ev_mod.RunnerCall, text: str) -> str:
    """``command not found`` / ``module not found`` when ``text`` says ``inv`` could not start."""
    if inv.module and re.search(rf"No module named '?{re.escape(inv.module)}'?(?![\w.])", text):
        return MISSING_MODULE
    for name in inv.names:
        if any(p.search(text) for p in _missing_patterns(name)):
            return MISSING_COMMAND
    if inv.names and inv.names[0] in ("npx", "bunx") and "could not determine executable to run" in text:
        return MISSING_COMMAND
    return ""


def classify(event: Event) -> tuple[list[tuple[str, str, str]], list[tuple[str, str]]]:
    """(missing, works) for one tool event: ``[(form, runner, kind)]`` and ``[(form, runner)]``."""
    if event.kind != TOOL or not event.is_shell:
        return [], []
    parsed = ev_mod.parse_command(event.command)
    learnable = [inv for inv in parsed.calls if inv.form]
    if not learnable:
        return [], []
    missing: list[tuple[str, str, str]] = []
    for inv in learnable:
        kind = missing_kind(inv, event.text) if event.text else ""
        if kind:
            missing.append((inv.form, inv.runner, kind))
    works: list[tuple[str, str]] = []
    if event.status == PASS and not parsed.masked and not event.background and not missing:
        works = [(inv.form, inv.runner) for inv in learnable]
    return missing, works


# ---------------------------------------------------------------------------------------
# per-session evidence (kept in the session state) and the changes it produces
# ---------------------------------------------------------------------------------------

class Change:
    """A change to the store: ``confirm`` missing->replacement, or ``contradict`` a form."""

    __slots__ = ("action", "form", "replacement", "runner", "kind")

    def __init__(self, action: str, form: str, replacement: str = "", runner: str = "",
                 kind: str = "") -> None:
        self.action = action
        self.form = form
        self.replacement = replacement
        self.runner = runner
        self.kind = kind

    def __repr__(self) -> str:
        return f"Change({self.action} {self.form!r} -> {self.replacement!r})"


def observe(session_learn: dict[str, Any], event: Event) -> list[Change]:
    """Update one session's evidence with ``event``; the store changes it implies."""
    missing, works = classify(event)
    if not missing and not works:
        return []
    seen_missing: dict[str, list[str]] = session_learn.setdefault("missing", {})
    seen_works: dict[str, str] = session_learn.setdefault("works", {})
    confirmed: list[str] = session_learn.setdefault("confirmed", [])
    changes: list[Change] = []
    for form, runner, kind in missing:
        changes.append(Change("missing", form, runner=runner, kind=kind))
        seen_missing[form] = [runner, kind]
    for form, runner in works:
        changes.append(Change("works", form, runner=runner))
        seen_works[form] = runner
    for form, (runner, kind) in sorted(seen_missing.items()):
        for good, good_runner in sorted(seen_works.items()):
            pair = f"{form}\n{good}"
            if good_runner == runner and good != form and form not in seen_works and pair not in confirmed:
                confirmed.append(pair)
                changes.append(Change("confirm", form, good, runner, kind))
    return changes


# ---------------------------------------------------------------------------------------
# the store (learned.json)
# ---------------------------------------------------------------------------------------

def empty_store() -> dict[str, Any]:
    return {"v": STORE_VERSION, "facts": {}}


def apply(store: dict[str, Any], changes: list[Change], session: str, when: str) -> bool:
    """Apply ``changes`` observed in ``session`` at ``when`` (ISO time); whether anything changed."""
    facts: dict[str, Any] = store.setdefault("facts", {})
    changed = False
    for ch in changes:
        if ch.action == "confirm":
            changed |= _confirm(facts, ch, session, when)
        elif ch.action == "missing":
            # the replacement of a fact turned out to be missing too
            for _name, fact in sorted(facts.items()):
                if not fact.get("retired") and ch.form in fact.get("candidates", {}):
                    fact["retired"] = {"session": session, "at": when,
                                       "reason": f"`{ch.form}` was not available either ({ch.kind})"}
                    changed = True
        elif ch.action == "works":
            fact = facts.get(ch.form)
            if fact is not None and not fact.get("retired"):
                fact["retired"] = {"session": session, "at": when, "reason": f"`{ch.form}` ran and passed"}
                changed = True
    return changed


def _confirm(facts: dict[str, Any], ch: Change, session: str, when: str) -> bool:
    fact = facts.get(ch.form)
    if fact is None or fact.get("retired"):
        fact = {"runner": ch.runner, "kind": ch.kind, "candidates": {}, "retired": None}
        facts[ch.form] = fact
    cand = fact["candidates"].setdefault(ch.replacement, {"sessions": {}})
    if session in cand["sessions"]:
        return False
    cand["sessions"][session] = when
    fact["kind"] = ch.kind
    return True


def safe_form(form: str, runner: str) -> bool:
    """Whether ``form`` is exactly a whitelisted invocation form of ``runner`` (guards hand edits)."""
    if not isinstance(form, str) or len(form) > 80 or runner not in ev_mod.LEARNABLE_RUNNERS:
        return False
    parsed = ev_mod.parse_command(form)
    return len(parsed.calls) == 1 and parsed.calls[0].form == form and \
        parsed.calls[0].runner == runner


def best_candidate(fact: dict[str, Any]) -> tuple[str, int]:
    """The replacement most sessions confirmed (ties: alphabetical) and its session count."""
    ranked = sorted(((-len(c.get("sessions", {})), r) for r, c in fact.get("candidates", {}).items()))
    if not ranked:
        return "", 0
    return ranked[0][1], -ranked[0][0]


def status(name: str, fact: dict[str, Any]) -> str:
    if fact.get("retired"):
        return "retired"
    replacement, count = best_candidate(fact)
    runner = str(fact.get("runner", ""))
    if count >= CONFIRMATIONS and safe_form(name, runner) and safe_form(replacement, runner):
        return "confirmed"
    return "candidate"


def listing(store: dict[str, Any]) -> list[dict[str, Any]]:
    """Every fact with its evidence, sorted by name (for ``optimize learned``)."""
    rows = []
    for name, fact in sorted(store.get("facts", {}).items()):
        replacement, count = best_candidate(fact)
        sessions = fact.get("candidates", {}).get(replacement, {}).get("sessions", {})
        rows.append({
            "name": name,
            "status": status(name, fact),
            "runner": fact.get("runner", ""),
            "unavailable": fact.get("kind", ""),
            "replacement": replacement,
            "sessions": [{"session": s, "at": sessions[s]}
                         for s in sorted(sessions, key=lambda s: (sessions[s], s))],
            "confirmations": count,
            "needed": CONFIRMATIONS,
            "retired": fact.get("retired"),
        })
    return rows


def forget(store: dict[str, Any], name: str) -> bool:
    return store.get("facts", {}).pop(name, None) is not None


def startup_context(store: dict[str, Any]) -> str:
    """The text injected at SessionStart: confirmed facts only, built from fixed templates."""
    lines = []
    for row in listing(store):
        if row["status"] != "confirmed":
            continue
        lines.append(f"- `{row['name']}` is not available here ({row['unavailable']}); "
                     f"use `{row['replacement']}` instead.")
    if not lines:
        return ""
    return ("git pilot learned these facts about this repository's environment from earlier sessions "
            f"(each confirmed by at least {CONFIRMATIONS} sessions):\n" + "\n".join(lines))
