"""What capability pruning works with: a named proposal, the evidence context, small readers.

Shared by ``prune`` (gathering, applying) and the per-agent modules ``prune_claude`` and
``prune_codex`` that turn evidence into proposals.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitpilot.optimizer.prune_evidence import Evidence
from gitpilot.optimizer.receipts import read_bytes

CLAUDE_SETTINGS = Path(".claude") / "settings.local.json"
CODEX_PROJECT_CONFIG = Path(".codex") / "config.toml"


@dataclass
class Proposal:
    """One named change with its evidence."""

    name: str
    agent: str  # "claude" | "codex"
    kind: str  # "tool" | "mcp-server" | "feature"
    target: str  # the tool, server or feature
    file: Path
    change: str
    evidence: str
    sessions: int  # the sessions the evidence spans
    required: int
    conflict: str = ""
    keys: tuple[str, ...] = ()  # JSON array path (Claude) or TOML table path (Codex)
    value: str = ""  # the JSON array entry to add (Claude)

    @property
    def ready(self) -> bool:
        return self.sessions >= self.required and not self.conflict

    def as_json(self, root: Path) -> dict[str, Any]:
        return {
            "name": self.name,
            "agent": self.agent,
            "kind": self.kind,
            "target": self.target,
            "file": rel(self.file, root),
            "change": self.change,
            "evidence": self.evidence,
            "sessions": self.sessions,
            "required": self.required,
            "ready": self.ready,
            "conflict": self.conflict or None,
        }


@dataclass
class Context:
    """Everything proposals are computed from."""

    root: Path
    home: Path
    required: int
    claude: Evidence
    codex: Evidence
    codex_features: dict[str, tuple[str, bool]] | None  # key -> (stage, enabled); None: no codex
    notes: list[str]


def rel(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def load_json(path: Path) -> dict[str, Any]:
    data = read_bytes(path)
    if not data:
        return {}
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def load_toml(path: Path) -> dict[str, Any]:
    data = read_bytes(path)
    if not data:
        return {}
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def strings(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
