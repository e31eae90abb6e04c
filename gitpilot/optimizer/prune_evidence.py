"""What the agents' own records say about which capabilities a repository's sessions used.

The files are found and read by ``agents.claude_files`` and ``agents.codex_files``; this module
says what in them is evidence.

Claude Code: deferred tool declarations arrive as ``deferred_tools_delta`` attachments
(``addedNames``, including ``mcp__<server>__<tool>`` names and servers still pending or needing
auth) and every call is a ``tool_use`` block. Subagent transcripts count toward their session.

Codex: tools are declared in ``additional_tools`` records (namespaces of functions) and called
as ``function_call`` / ``custom_tool_call`` / ``*_call`` response items or ``mcp_tool_call_*``
events. A rollout of a subagent (``source: {"subagent": ...}``) adds calls but is not a
session of its own.

Only lines that can matter are decoded (a substring test before ``json.loads``), so long
histories are read quickly. Nothing from a transcript is stored: only names and counts.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitpilot.agents import claude_files, codex_files


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


# -- Claude ----------------------------------------------------------------------------------
_CLAUDE_NEEDLES = (b'"tool_use"', b"deferred_tools_delta")


def read_claude(home: Path, root: Path) -> Evidence:
    ev = Evidence("claude")
    for path in claude_files.transcripts(home, root):
        session = path.stem
        ev.sessions.add(session)
        ev.files += 1
        _claude_file(ev, path, session)
        for sub in claude_files.subagent_transcripts(path):
            ev.files += 1
            _claude_file(ev, sub, session)
    return ev


def _claude_file(ev: Evidence, path: Path, session: str) -> None:
    for rec in claude_files.records(path, _CLAUDE_NEEDLES):
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


def read_codex(home: Path, root: Path) -> Evidence:
    ev = Evidence("codex")
    for path, meta in codex_files.rollouts(home, root):
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
    for rec in codex_files.records(path, _CODEX_NEEDLES):
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
