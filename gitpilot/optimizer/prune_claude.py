"""Claude Code proposals: unused deferred tools and unused MCP servers.

A tool is proposed when the transcripts declare it (``deferred_tools_delta``) and no session
called it; the change adds its bare name to ``permissions.deny`` in
``.claude/settings.local.json``. An MCP server configured for the repository (``.mcp.json``,
``~/.claude.json`` ``projects[path].mcpServers``, or the user scope) is proposed when none of
its ``mcp__<server>__*`` tools was called: ``.mcp.json`` servers go in
``disabledMcpjsonServers``, others are denied as ``mcp__<server>``. An ``allow`` rule for the
same tool, or an explicit approval of the server, is a conflict.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gitpilot.agents import claude_files
from gitpilot.optimizer import prune_json
from gitpilot.optimizer.prune_evidence import normalize_server
from gitpilot.optimizer.prune_types import CLAUDE_SETTINGS, Context, Proposal, load_json, plural, rel, strings

#: Claude Code tools never proposed: reading, editing, searching, the shell, asking the user,
#: loading deferred tools, plan mode, and delegating to subagents.
PROTECTED_CLAUDE_TOOLS = frozenset(
    "Read NotebookRead LS Glob Grep Edit MultiEdit Write NotebookEdit Bash BashOutput KillShell "
    "AskUserQuestion ToolSearch TodoWrite Task Agent EnterPlanMode ExitPlanMode Skill SlashCommand "
    "LSP".split()
)


def settings_files(ctx: Context) -> list[tuple[Path, dict[str, Any]]]:
    files = [
        ctx.root / CLAUDE_SETTINGS,
        ctx.root / ".claude" / "settings.json",
        claude_files.config_dir(ctx.home) / "settings.json",
    ]
    return [(f, load_json(f)) for f in files]


def permission_rules(settings: list[tuple[Path, dict[str, Any]]], which: str) -> list[tuple[Path, str]]:
    return [
        (f, rule) for f, doc in settings for rule in strings(prune_json.get_path(doc, ["permissions", which]))
    ]


def claude_tools(ctx: Context) -> list[Proposal]:
    settings = settings_files(ctx)
    denied = {rule for _, rule in permission_rules(settings, "deny")}
    allowed = permission_rules(settings, "allow")
    out: list[Proposal] = []
    sessions = plural(len(ctx.claude.sessions), "Claude session")
    for tool, declared_in in sorted(ctx.claude.declared.items()):
        if tool in PROTECTED_CLAUDE_TOOLS or tool.startswith("mcp__") or tool in denied:
            continue
        if ctx.claude.used.get(tool):
            continue
        conflict = _allowed(ctx, allowed, tool, "(")
        out.append(
            Proposal(
                name=f"claude-tool-{tool}",
                agent="claude",
                kind="tool",
                target=tool,
                file=ctx.root / CLAUDE_SETTINGS,
                change=f'add "{tool}" to permissions.deny',
                evidence=f"declared in {len(declared_in)} of {sessions}, used in 0",
                sessions=len(declared_in),
                required=ctx.required,
                conflict=conflict,
                keys=("permissions", "deny"),
                value=tool,
            )
        )
    return out


def mcp_servers(ctx: Context) -> dict[str, str]:
    """Configured Claude MCP servers -> scope ("project", "local" or "user")."""
    servers: dict[str, str] = {}
    user = load_json(claude_files.state_file(ctx.home))
    for name in (user.get("mcpServers") or {}) if isinstance(user.get("mcpServers"), dict) else {}:
        servers[name] = "user"
    project = prune_json.get_path(user, ["projects", str(ctx.root), "mcpServers"])
    for name in project if isinstance(project, dict) else {}:
        servers[name] = "local"
    mcp = load_json(ctx.root / ".mcp.json").get("mcpServers")
    for name in mcp if isinstance(mcp, dict) else {}:
        servers[name] = "project"
    return servers


def claude_servers(ctx: Context) -> list[Proposal]:
    settings = settings_files(ctx)
    denied = {rule for _, rule in permission_rules(settings, "deny")}
    allowed = permission_rules(settings, "allow")
    disabled = {s for _, doc in settings for s in strings(doc.get("disabledMcpjsonServers"))}
    user = load_json(claude_files.state_file(ctx.home))
    approvals = [(f, doc) for f, doc in settings] + [
        (claude_files.state_file(ctx.home), prune_json.get_path(user, ["projects", str(ctx.root)]) or {})
    ]
    out: list[Proposal] = []
    total = len(ctx.claude.sessions)
    if not total:
        return []  # no session of this agent here: nothing to judge by
    for server, scope in sorted(mcp_servers(ctx).items()):
        key = normalize_server(server)
        if ctx.claude.servers_used.get(key):
            continue
        declared = ctx.claude.servers_declared.get(key, set())
        span = len(declared) if declared else total
        seen = (
            f"its tools declared in {len(declared)} of {plural(total, 'Claude session')}"
            if declared
            else f"{plural(total, 'Claude session')} (its tools never appeared declared)"
        )
        keys: tuple[str, ...]
        if scope == "project":
            if server in disabled:
                continue
            change, keys, value = (
                f'add "{server}" to disabledMcpjsonServers',
                ("disabledMcpjsonServers",),
                server,
            )
            conflict = _mcpjson_conflict(ctx, approvals, server)
        else:
            rule = f"mcp__{key}"
            if rule in denied:
                continue
            change, keys, value = (
                f'add "{rule}" to permissions.deny ({scope}-scope server)',
                ("permissions", "deny"),
                rule,
            )
            conflict = _allowed(ctx, allowed, rule, "__")
        out.append(
            Proposal(
                name=f"claude-mcp-{server}",
                agent="claude",
                kind="mcp-server",
                target=server,
                file=ctx.root / CLAUDE_SETTINGS,
                change=change,
                evidence=f"{seen}, called in 0",
                sessions=span,
                required=ctx.required,
                conflict=conflict,
                keys=keys,
                value=value,
            )
        )
    return out


def _allowed(ctx: Context, allowed: list[tuple[Path, str]], rule: str, narrower: str) -> str:
    """The ``permissions.allow`` entry that allows ``rule`` (or a narrower form of it), if any."""
    for f, r in allowed:
        if r == rule or r.startswith(rule + narrower):
            return f"{rel(f, ctx.root)} allows {r!r} in permissions.allow"
    return ""


def _mcpjson_conflict(ctx: Context, approvals: list[tuple[Path, Any]], server: str) -> str:
    for f, doc in approvals:
        if not isinstance(doc, dict):
            continue
        if server in strings(doc.get("enabledMcpjsonServers")):
            return f"{rel(f, ctx.root)} lists {server!r} in enabledMcpjsonServers"
        if doc.get("enableAllProjectMcpServers") is True:
            return f"{rel(f, ctx.root)} sets enableAllProjectMcpServers = true"
    return ""
