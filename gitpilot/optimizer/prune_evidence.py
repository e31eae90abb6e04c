"""What the agents' own records say about which capabilities a repository's sessions used.

Claude Code keeps one transcript per session in ``~/.claude/projects/<cwd with every
non-alphanumeric character as "-">/<session>.jsonl``; deferred tool declarations arrive as
``deferred_tools_delta`` attachments (``addedNames``, including ``mcp__<server>__<tool>``
names and servers still pending or needing auth) and every call is a ``tool_use`` block.
Subagent transcripts (``<session>/subagents/*.jsonl``) count toward their session.

Codex keeps rollouts in ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`` (CODEX_HOME
defaults to ``~/.codex``); the first line (``session_meta``) names the working directory.
Tools are declared in ``additional_tools`` records (namespaces of functions) and called as
``function_call`` / ``custom_tool_call`` / ``*_call`` response items or ``mcp_tool_call_*``
events. A rollout of a subagent (``source: {"subagent": ...}``) adds calls but is not a
session of its own.

Only lines that can matter are decoded (a substring test before ``json.loads``), so long
histories are read quickly. Nothing from a transcript is stored: only names and counts.
"""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitpilot.agents.codex import codex_home, session_meta


@dataclass
class Evidence:
    """One agent's record for one repository: sessions, and per name the sessions that declared
    or used it (tool names; MCP server names)."""

    agent: str
    sessions: set[str] = field(default_factory=set)
    declared: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    used: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    servers_declared: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    servers_used: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    files: int = 0

    def used_any(self, names: set[str]) -> int:
        """In how many sessions any of ``names`` (or ``namespace.name`` forms of them) was used."""
        hit: set[str] = set()
        for name, sessions in self.used.items():
            if name in names or name.rsplit(".", 1)[-1] in names:
                hit |= sessions
        return len(hit)


def mcp_server_of(tool: str) -> str | None:
    """``mcp__<server>__<tool>`` -> server; a Codex namespaced name ``mcp__<server>.<tool>`` too."""
    if tool.startswith("mcp__"):
        head = tool[5:].split(".", 1)[0] if "." in tool else tool[5:]
        server, sep, _ = head.partition("__")
        return server if server and (sep or "." in tool) else None
    return None


def normalize_server(name: str) -> str:
    """A configured MCP server name as it appears in tool names."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)


def _inside(cwd: str, root: Path) -> bool:
    if not cwd:
        return False
    r = str(root).rstrip("/")
    return cwd == r or cwd.startswith(r + "/")


# -- Claude ----------------------------------------------------------------------------------
def claude_project_key(path: Path) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", str(path))


def claude_dir(home: Path) -> Path:
    """Claude Code's configuration directory: ``$CLAUDE_CONFIG_DIR`` or ``~/.claude``."""
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env) if env else home / ".claude"


def claude_json(home: Path) -> Path:
    """Claude Code's state file with per-project MCP servers: ``~/.claude.json`` (or inside
    ``$CLAUDE_CONFIG_DIR``)."""
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env) / ".claude.json" if env else home / ".claude.json"


def claude_transcripts(home: Path, root: Path) -> list[Path]:
    """Session transcripts of sessions started in ``root`` or below it."""
    base = claude_dir(home) / "projects"
    key = claude_project_key(root)
    if not base.is_dir():
        return []
    found: list[Path] = []
    for d in sorted(base.iterdir()):
        if d.name != key and not d.name.startswith(key + "-"):
            continue
        for f in sorted(d.glob("*.jsonl")):
            if d.name == key or _inside(_first_cwd(f), root):
                found.append(f)
    return found


def _first_cwd(path: Path) -> str:
    try:
        with open(path, "rb") as fh:
            for n, line in enumerate(fh):
                if b'"cwd"' in line:
                    rec = _loads(line)
                    if rec is not None and isinstance(rec.get("cwd"), str):
                        return str(rec["cwd"])
                if n > 50:
                    break
    except OSError:
        pass
    return ""


def _loads(line: bytes) -> dict[str, Any] | None:
    try:
        rec = json.loads(line)
    except ValueError:
        return None
    return rec if isinstance(rec, dict) else None


def _lines(path: Path, needles: tuple[bytes, ...]) -> Iterator[dict[str, Any]]:
    try:
        with open(path, "rb") as fh:
            for line in fh:
                if any(n in line for n in needles):
                    rec = _loads(line)
                    if rec is not None:
                        yield rec
    except OSError:
        return


_CLAUDE_NEEDLES = (b'"tool_use"', b"deferred_tools_delta")


def read_claude(home: Path, root: Path) -> Evidence:
    ev = Evidence("claude")
    for path in claude_transcripts(home, root):
        session = path.stem
        ev.sessions.add(session)
        ev.files += 1
        _claude_file(ev, path, session)
        for sub in sorted((path.parent / session / "subagents").glob("*.jsonl")):
            ev.files += 1
            _claude_file(ev, sub, session)
    return ev


def _claude_file(ev: Evidence, path: Path, session: str) -> None:
    for rec in _lines(path, _CLAUDE_NEEDLES):
        att = rec.get("attachment")
        if (
            rec.get("type") == "attachment"
            and isinstance(att, dict)
            and att.get("type") == "deferred_tools_delta"
        ):
            for name in _strings(att.get("addedNames")) + _strings(att.get("readdedNames")):
                ev.declared[name].add(session)
                server = mcp_server_of(name)
                if server:
                    ev.servers_declared[server].add(session)
            for server in _strings(att.get("pendingMcpServers")) + _strings(att.get("needsAuthMcpServers")):
                ev.servers_declared[normalize_server(server)].add(session)
            continue
        msg = rec.get("message")
        if (
            rec.get("type") != "assistant"
            or not isinstance(msg, dict)
            or not isinstance(msg.get("content"), list)
        ):
            continue
        for block in msg["content"]:
            if (
                isinstance(block, dict)
                and block.get("type") == "tool_use"
                and isinstance(block.get("name"), str)
            ):
                name = block["name"]
                ev.used[name].add(session)
                server = mcp_server_of(name)
                if server:
                    ev.servers_used[server].add(session)


def _strings(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


# -- Codex -----------------------------------------------------------------------------------
_CODEX_NEEDLES = (
    b'"function_call"',
    b'"custom_tool_call"',
    b'_call"',
    b"mcp_tool_call",
    b'"additional_tools"',
)
_CALL_TYPES = {
    "local_shell_call": "local_shell",
    "web_search_call": "web_search",
    "image_generation_call": "image_generation",
    "tool_search_call": "tool_search",
}


def codex_rollouts(home: Path, root: Path) -> list[tuple[Path, dict[str, Any]]]:
    """(rollout, its session_meta payload) for every rollout whose cwd is ``root`` or below."""
    base = codex_home(home) / "sessions"
    if not base.is_dir():
        return []
    found: list[tuple[Path, dict[str, Any]]] = []
    for path in sorted(base.rglob("rollout-*.jsonl")):
        meta = session_meta(path)
        if meta is not None and _inside(str(meta.get("cwd") or ""), root):
            found.append((path, meta))
    return found


def read_codex(home: Path, root: Path) -> Evidence:
    ev = Evidence("codex")
    for path, meta in codex_rollouts(home, root):
        ev.files += 1
        source = meta.get("source")
        subagent = isinstance(source, dict) and "subagent" in source
        session = (
            str(meta.get("parent_thread_id") or meta.get("session_id") or meta.get("id") or path.stem)
            if subagent
            else str(meta.get("id") or path.stem)
        )
        if not subagent:
            ev.sessions.add(session)
        _codex_file(ev, path, session)
    return ev


def _codex_file(ev: Evidence, path: Path, session: str) -> None:
    for rec in _lines(path, _CODEX_NEEDLES):
        payload = rec.get("payload")
        if not isinstance(payload, dict):
            continue
        ptype = payload.get("type")
        if ptype == "additional_tools" and isinstance(payload.get("tools"), list):
            for name in _declared_tools(payload["tools"]):
                ev.declared[name].add(session)
                server = mcp_server_of(name)
                if server:
                    ev.servers_declared[server].add(session)
        elif ptype in ("function_call", "custom_tool_call") and isinstance(payload.get("name"), str):
            name = payload["name"]
            ns = payload.get("namespace")
            full = f"{ns}.{name}" if isinstance(ns, str) and ns else name
            ev.used[full].add(session)
            server = mcp_server_of(full) or mcp_server_of(name)
            if server:
                ev.servers_used[server].add(session)
        elif ptype in _CALL_TYPES:
            ev.used[_CALL_TYPES[ptype]].add(session)
        elif isinstance(ptype, str) and ptype.startswith("mcp_tool_call"):
            inv = payload.get("invocation")
            if isinstance(inv, dict) and isinstance(inv.get("server"), str):
                ev.servers_used[normalize_server(inv["server"])].add(session)
                if isinstance(inv.get("tool"), str):
                    ev.used[f"mcp__{inv['server']}__{inv['tool']}"].add(session)


def _declared_tools(tools: list[Any]) -> list[str]:
    names: list[str] = []
    for tool in tools:
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            continue
        inner = tool.get("tools")
        if isinstance(inner, list):
            for t in inner:
                if isinstance(t, dict) and isinstance(t.get("name"), str):
                    names.append(f"{tool['name']}.{t['name']}")
        else:
            names.append(tool["name"])
    return names
