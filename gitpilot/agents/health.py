"""The agents' section of ``git pilot doctor``: each agent CLI git pilot can drive, its version
and the features git pilot uses that it supports, all read from its own ``--help``.

An installed agent gets one line; the default agent (``[agent] default``) missing needs a fix;
the other agents that are not installed share one line, so a user with one agent reads one
line about the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitpilot.finding import Finding
    from gitpilot.repo import Repo

FEATURE_WORDS = (
    ("print-resume", "resume (-p --resume)"),
    ("background-resume", "background resume"),
    ("list-sessions", "session list"),
    ("stop", "stop"),
    ("allowed-tools", "allow-list"),
    ("denied-tools", "deny-list"),
    ("session-id", "session ids"),
    ("json-output", "JSON output"),
    ("review", "review --base"),
    ("review-json", "review JSON"),
)


def agent_findings(repo: Repo | None, default_agent: str) -> list[Finding]:
    from gitpilot import agents
    from gitpilot.finding import Finding

    out: list[Finding] = []
    absent: list[str] = []
    for name in sorted(agents.ADAPTERS):
        adapter = agents.get(name)
        features = adapter.features(cache_dir=repo.pilot_dir / "agents" if repo is not None else None)
        if not features.installed:
            if name == default_agent:
                out.append(Finding("agent", f"{name}: not installed", True,
                                   f"install {name} or set [agent] default to an installed agent"))
            else:
                absent.append(name)
            continue
        have = [words for key, words in FEATURE_WORDS if features.has(key)]
        version = features.version or "(version unknown)"
        text = f"{name} {version}: " + (", ".join(have) or "no known features")
        if not adapter.resume_modes(features):
            text += "; cannot resume sessions (git pilot prints the command instead)"
        out.append(Finding("agent", text))
    if absent:
        out.append(Finding("agent", "not installed: " + ", ".join(absent)))
    return out
