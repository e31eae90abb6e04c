"""What ``share pull`` says: how many records came, from whom, whether they count here.

Whether a record counts is asked of the same policy ``check`` uses (gitpilot/share/trust.py),
so the pull's answer is the check's. Signatures are verified (and the answers cached for the
check) for at most ``MAX_VERIFY`` records of one pull; any others are verified when a check
needs them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gitpilot.checks.records import UNTRUSTED, parse_line
from gitpilot.share.sync import PullResult
from gitpilot.share.trust import Trust

MAX_VERIFY = 50
_SHOWN_AUTHORS = 3


@dataclass
class Standing:
    """Whether the records a pull added count here."""

    counted: int = 0
    refused: dict[str, int] = field(default_factory=dict)  # reason -> how many
    unverified: int = 0  # signed records left for the check to verify
    authors: dict[str, int] = field(default_factory=dict)  # who recorded them -> how many


def standing(result: PullResult, trust: Trust) -> Standing:
    st = Standing()
    verified = 0
    for tree, line in result.lines:
        rec = parse_line(line)
        if rec is None:
            continue
        who = rec.email or rec.host
        st.authors[who] = st.authors.get(who, 0) + 1
        needs_signature = rec.remote not in trust.remotes and trust.signed and rec.sig is not None
        if needs_signature and verified >= MAX_VERIFY:
            st.unverified += 1
            continue
        verified += needs_signature
        refusal = trust.refusal(rec, tree)
        if refusal is None:
            st.counted += 1
        else:
            why = refusal[1]
            st.refused[why] = st.refused.get(why, 0) + 1
    return st


def authors_text(authors: dict[str, int]) -> str:
    ranked = sorted(authors.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = ", ".join(f"{who} ({n})" if len(ranked) > 1 else who for who, n in ranked[:_SHOWN_AUTHORS])
    rest = len(ranked) - _SHOWN_AUTHORS
    return shown + (f" and {rest} other(s)" if rest > 0 else "")


def pull_lines(result: PullResult, trust: Trust) -> list[str]:
    if not result.present:
        return [f"{result.remote} has no check notes yet"]
    lines = []
    if not result.added:
        lines.append(f"pulled check notes from {result.remote}: nothing new")
    else:
        st = standing(result, trust)
        lines.append(f"pulled check notes from {result.remote}: {result.added} record(s) on {result.objects} "
                     f"tree(s), recorded by {authors_text(st.authors)}")
        lines.append(_counts_line(result.remote, st, result.added))
    if result.dropped.any():
        lines.append(f"dropped from {result.remote} (bounds on what one remote sends): {result.dropped.describe()}")
    return lines


def _counts_line(remote: str, st: Standing, total: int) -> str:
    if st.counted == total:
        return "they count here: git pilot check reuses them on the same tree"
    many = len(st.refused) + bool(st.unverified) > 1 or st.counted
    parts = [f"{_reason(remote, why)} ({n})" if many else _reason(remote, why)
             for why, n in sorted(st.refused.items())]
    if st.unverified:
        parts.append(f"signed, not verified yet: a check verifies them when it needs them ({st.unverified})")
    head = "they do not count here" if not st.counted else f"{st.counted} of them count here; the others do not"
    return f"{head}: {'; '.join(parts)}"


def _reason(remote: str, why: str) -> str:
    if why == UNTRUSTED:
        return (f"this clone does not trust {remote} (git config --add pilot.trust {remote}, "
                "or pilot.trust signed for signed records)")
    return why
