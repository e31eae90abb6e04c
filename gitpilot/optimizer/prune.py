"""Capability pruning: propose switching off what a repository's agent sessions never use.

Four kinds of named proposal, each backed by counted evidence from the agents' own records
(``prune_evidence``) and each a single surgical edit of a repository-local settings file:

- ``claude-tool-<Tool>``: a Claude Code tool declared in the transcripts but never called.
  Adds the bare name to ``permissions.deny`` in ``.claude/settings.local.json`` (a denied
  tool is removed from the session). Core reading, editing, search, shell and question tools
  are protected and never proposed.
- ``claude-mcp-<server>``: an MCP server configured for the repository (``.mcp.json``,
  ``~/.claude.json`` ``projects[path].mcpServers`` or the user scope) whose tools were never
  called. ``.mcp.json`` servers go in ``disabledMcpjsonServers``; others are denied as
  ``mcp__<server>``.
- ``codex-mcp-<server>``: a Codex ``[mcp_servers.<server>]`` never called: ``enabled = false``
  in the repository's ``.codex/config.toml``.
- ``codex-feature-<key>``: a Codex feature that the installed ``codex features list`` reports
  enabled (run in the repository: ``-C`` is not honoured there) and whose tools no session
  called: ``[features] <key> = false`` in ``.codex/config.toml``. Only features whose tools
  are known (``CODEX_FEATURE_TOOLS``) can be judged from the evidence.

A proposal is ready once the evidence spans ``[optimizer] prune_min_sessions`` sessions
(default 5). ``apply`` refuses a tracked or symlinked target, a conflicting setting and thin
evidence; it records a receipt before writing; after a Codex change it runs codex again in
the repository and rolls back if the change did not take effect.
"""

from __future__ import annotations

import json
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitpilot.errors import PilotError
from gitpilot.gitrun import clean_env, run_git
from gitpilot.optimizer import prune_json
from gitpilot.optimizer.prune_evidence import Evidence, normalize_server, read_claude, read_codex
from gitpilot.optimizer.receipts import (
    APPLIED,
    FAILED,
    ROLLED_BACK,
    Receipt,
    Receipts,
    read_bytes,
    write_atomic,
)

DEFAULT_MIN_SESSIONS = 5
CODEX_TIMEOUT = 60

#: Claude Code tools never proposed: reading, editing, searching, the shell, asking the user,
#: loading deferred tools, plan mode, and delegating to subagents.
PROTECTED_CLAUDE_TOOLS = frozenset(
    "Read NotebookRead LS Glob Grep Edit MultiEdit Write NotebookEdit Bash BashOutput KillShell "
    "AskUserQuestion ToolSearch TodoWrite Task Agent EnterPlanMode ExitPlanMode Skill SlashCommand "
    "LSP".split()
)

#: Codex feature key -> the tool names its use shows up as (``namespace.tool`` also matches).
#: Only features listed here are judged: for others the rollouts cannot show use.
CODEX_FEATURE_TOOLS: dict[str, frozenset[str]] = {
    "multi_agent": frozenset(
        {
            "spawn_agent",
            "send_message",
            "wait_agent",
            "list_agents",
            "interrupt_agent",
            "followup_task",
            "close_agent",
            "resume_agent",
            "send_input",
        }
    ),
    "multi_agent_v2": frozenset(
        {
            "spawn_agent",
            "send_message",
            "wait_agent",
            "list_agents",
            "interrupt_agent",
            "followup_task",
            "close_agent",
            "resume_agent",
            "send_input",
        }
    ),
    "goals": frozenset({"get_goal", "create_goal", "update_goal"}),
    "view_image": frozenset({"view_image"}),
    "image_generation": frozenset({"image_generation", "image_gen"}),
    "web_search_request": frozenset({"web_search"}),
    "web_search_cached": frozenset({"web_search"}),
    "standalone_web_search": frozenset({"web_search"}),
    "sleep_tool": frozenset({"sleep"}),
    "request_permissions_tool": frozenset({"request_permissions"}),
}

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
            "file": _rel(self.file, root),
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


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def _load_json(path: Path) -> dict[str, Any]:
    data = read_bytes(path)
    if not data:
        return {}
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _load_toml(path: Path) -> dict[str, Any]:
    data = read_bytes(path)
    if not data:
        return {}
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _strings(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


# -- codex -----------------------------------------------------------------------------------
def run_codex(root: Path, *args: str) -> subprocess.CompletedProcess[str] | None:
    """``codex ARGS`` with the repository as working directory; None when codex is not installed."""
    try:
        return subprocess.run(
            ["codex", *args],
            cwd=root,
            env=clean_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=CODEX_TIMEOUT,
        )
    except FileNotFoundError:
        return None
    except subprocess.TimeoutExpired as exc:
        raise PilotError(f"codex {' '.join(args)} did not answer within {CODEX_TIMEOUT} s") from exc


def parse_features(text: str) -> dict[str, tuple[str, bool]]:
    """``codex features list`` output: name, stage (may contain spaces), enabled."""
    out: dict[str, tuple[str, bool]] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[-1] in ("true", "false"):
            out[parts[0]] = (" ".join(parts[1:-1]), parts[-1] == "true")
    return out


def codex_features(root: Path) -> dict[str, tuple[str, bool]] | None:
    proc = run_codex(root, "features", "list")
    if proc is None or proc.returncode != 0:
        return None
    return parse_features(proc.stdout)


# -- gathering -------------------------------------------------------------------------------
def gather(
    root: Path, home: Path | None = None, required: int | None = None, with_codex: bool = True
) -> Context:
    from gitpilot import config

    home = home or Path.home()
    if required is None:
        required = int(config.load(root).get("optimizer.prune_min_sessions"))
    claude = read_claude(home, root)
    codex = read_codex(home, root)
    notes: list[str] = []
    features = codex_features(root) if with_codex else None
    if with_codex and features is None:
        notes.append("codex is not installed (or `codex features list` failed): no Codex feature proposals")
    return Context(root, home, max(1, required), claude, codex, features, notes)


def proposals(ctx: Context) -> list[Proposal]:
    """Every candidate, ready or not, sorted by name."""
    found = _claude_tools(ctx) + _claude_servers(ctx) + _codex_servers(ctx) + _codex_features(ctx)
    return sorted(found, key=lambda p: p.name)


def _claude_settings(ctx: Context) -> list[tuple[Path, dict[str, Any]]]:
    files = [
        ctx.root / CLAUDE_SETTINGS,
        ctx.root / ".claude" / "settings.json",
        ctx.home / ".claude" / "settings.json",
    ]
    return [(f, _load_json(f)) for f in files]


def _permission_list(settings: list[tuple[Path, dict[str, Any]]], which: str) -> list[tuple[Path, str]]:
    return [
        (f, rule)
        for f, doc in settings
        for rule in _strings(prune_json.get_path(doc, ["permissions", which]))
    ]


def _claude_tools(ctx: Context) -> list[Proposal]:
    settings = _claude_settings(ctx)
    denied = {rule for _, rule in _permission_list(settings, "deny")}
    allowed = _permission_list(settings, "allow")
    out: list[Proposal] = []
    sessions = _n(len(ctx.claude.sessions), "Claude session")
    for tool, declared_in in sorted(ctx.claude.declared.items()):
        if tool in PROTECTED_CLAUDE_TOOLS or tool.startswith("mcp__") or tool in denied:
            continue
        if ctx.claude.used.get(tool):
            continue
        conflict = next(
            (
                f"{_rel(f, ctx.root)} allows {rule!r} in permissions.allow"
                for f, rule in allowed
                if rule == tool or rule.startswith(tool + "(")
            ),
            "",
        )
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


def _claude_mcp_config(ctx: Context) -> dict[str, str]:
    """Configured Claude MCP servers -> scope ("project", "local" or "user")."""
    servers: dict[str, str] = {}
    user = _load_json(ctx.home / ".claude.json")
    for name in (user.get("mcpServers") or {}) if isinstance(user.get("mcpServers"), dict) else {}:
        servers[name] = "user"
    project = prune_json.get_path(user, ["projects", str(ctx.root), "mcpServers"])
    for name in project if isinstance(project, dict) else {}:
        servers[name] = "local"
    mcp = _load_json(ctx.root / ".mcp.json").get("mcpServers")
    for name in mcp if isinstance(mcp, dict) else {}:
        servers[name] = "project"
    return servers


def _claude_servers(ctx: Context) -> list[Proposal]:
    settings = _claude_settings(ctx)
    denied = {rule for _, rule in _permission_list(settings, "deny")}
    allowed = _permission_list(settings, "allow")
    disabled = {s for _, doc in settings for s in _strings(doc.get("disabledMcpjsonServers"))}
    user = _load_json(ctx.home / ".claude.json")
    approvals = [(f, doc) for f, doc in settings] + [
        (ctx.home / ".claude.json", prune_json.get_path(user, ["projects", str(ctx.root)]) or {})
    ]
    out: list[Proposal] = []
    total = len(ctx.claude.sessions)
    for server, scope in sorted(_claude_mcp_config(ctx).items()):
        key = normalize_server(server)
        if ctx.claude.servers_used.get(key):
            continue
        declared = ctx.claude.servers_declared.get(key, set())
        span = len(declared) if declared else total
        seen = (
            f"its tools declared in {len(declared)} of {_n(total, 'Claude session')}"
            if declared
            else f"{_n(total, 'Claude session')} (its tools never appeared declared)"
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
            conflict = next(
                (
                    f"{_rel(f, ctx.root)} allows {r!r} in permissions.allow"
                    for f, r in allowed
                    if r == rule or r.startswith(rule + "__")
                ),
                "",
            )
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


def _mcpjson_conflict(ctx: Context, approvals: list[tuple[Path, Any]], server: str) -> str:
    for f, doc in approvals:
        if not isinstance(doc, dict):
            continue
        if server in _strings(doc.get("enabledMcpjsonServers")):
            return f"{_rel(f, ctx.root)} lists {server!r} in enabledMcpjsonServers"
        if doc.get("enableAllProjectMcpServers") is True:
            return f"{_rel(f, ctx.root)} sets enableAllProjectMcpServers = true"
    return ""


def _codex_configs(ctx: Context) -> list[tuple[Path, dict[str, Any]]]:
    from gitpilot.optimizer.prune_evidence import codex_home

    return [
        (ctx.root / CODEX_PROJECT_CONFIG, _load_toml(ctx.root / CODEX_PROJECT_CONFIG)),
        (codex_home(ctx.home) / "config.toml", _load_toml(codex_home(ctx.home) / "config.toml")),
    ]


def _codex_servers(ctx: Context) -> list[Proposal]:
    configs = _codex_configs(ctx)
    servers: dict[str, list[tuple[Path, dict[str, Any]]]] = {}
    for f, doc in configs:
        table = doc.get("mcp_servers")
        for name, spec in table.items() if isinstance(table, dict) else []:
            servers.setdefault(name, []).append((f, spec if isinstance(spec, dict) else {}))
    total = len(ctx.codex.sessions)
    out: list[Proposal] = []
    for server, specs in sorted(servers.items()):
        if specs[0][1].get("enabled") is False:  # the project file comes first: it wins
            continue
        key = normalize_server(server)
        used = ctx.codex.servers_used.get(key) or any(
            n.startswith((f"{key}__", f"mcp__{key}__")) for n in ctx.codex.used
        )
        if used:
            continue
        conflict = next(
            (
                f"{_rel(f, ctx.root)} sets enabled = true for mcp_servers.{server}"
                for f, spec in specs
                if spec.get("enabled") is True
            ),
            "",
        )
        out.append(
            Proposal(
                name=f"codex-mcp-{server}",
                agent="codex",
                kind="mcp-server",
                target=server,
                file=ctx.root / CODEX_PROJECT_CONFIG,
                change=f"set [mcp_servers.{server}] enabled = false",
                evidence=f"{_n(total, 'Codex session')}, called in 0",
                sessions=total,
                required=ctx.required,
                conflict=conflict,
                keys=("mcp_servers", server, "enabled"),
            )
        )
    return out


def _codex_features(ctx: Context) -> list[Proposal]:
    if ctx.codex_features is None:
        return []
    configs = _codex_configs(ctx)
    total = len(ctx.codex.sessions)
    out: list[Proposal] = []
    for feature, tools in sorted(CODEX_FEATURE_TOOLS.items()):
        stage, enabled = ctx.codex_features.get(feature, ("", False))
        if not enabled or stage == "removed":
            continue
        if ctx.codex.used_any(set(tools)):
            continue
        conflict = next(
            (
                f"{_rel(f, ctx.root)} sets [features] {feature} = true"
                for f, doc in configs
                if prune_json.get_path(doc, ["features", feature]) is True
            ),
            "",
        )
        declared = {s for n, ss in ctx.codex.declared.items() if n.rsplit(".", 1)[-1] in tools for s in ss}
        seen = f", its tools declared in {len(declared)}" if declared else ""
        out.append(
            Proposal(
                name=f"codex-feature-{feature}",
                agent="codex",
                kind="feature",
                target=feature,
                file=ctx.root / CODEX_PROJECT_CONFIG,
                change=f"set [features] {feature} = false",
                evidence=f"enabled ({stage}); {_n(total, 'Codex session')}{seen}, its tools called in 0",
                sessions=total,
                required=ctx.required,
                conflict=conflict,
                keys=("features", feature),
            )
        )
    return out


# -- applying --------------------------------------------------------------------------------
def receipts_of(root: Path) -> Receipts:
    from gitpilot.repo import Repo

    return Receipts(Repo.discover(root).pilot_dir / "receipts")


def check_target(root: Path, file: Path) -> None:
    """Refuse a target that git tracks or that is (or sits under) a symlink."""
    rel = file.relative_to(root)
    walk = root
    for part in rel.parts:
        walk = walk / part
        if walk.is_symlink():
            raise PilotError(f"{_rel(walk, root)} is a symlink; git pilot does not edit through symlinks")
    if run_git(["ls-files", "--", str(rel)], root).stdout.strip():
        raise PilotError(
            f"{rel} is tracked by git; a personal setting does not belong in a shared file "
            "(untrack it or make the change by hand)"
        )


def _edit(p: Proposal, original: bytes | None) -> bytes:
    if p.agent == "claude":
        try:
            return prune_json.ensure_in_array(original, list(p.keys), p.value)
        except PilotError as exc:
            raise PilotError(f"{p.file}: {exc}") from exc
    from gitpilot.config import edit_toml_file

    keys = list(p.keys)

    def mutate(doc: Any) -> None:
        table = doc
        for k in keys[:-1]:
            if k not in table:
                table[k] = {}
            table = table[k]
        table[keys[-1]] = False

    return edit_toml_file(p.file, mutate)


def _missing_dirs(root: Path, file: Path) -> list[str]:
    missing: list[str] = []
    d = file.parent
    while d != root and not d.exists():
        missing.append(str(d))
        d = d.parent
    return list(reversed(missing))


def apply(root: Path, name: str, home: Path | None = None) -> Receipt:
    """Apply one proposal; returns its receipt. Raises PilotError on every refusal."""
    ctx = gather(root, home, with_codex=name.startswith("codex-feature-"))
    found = {p.name: p for p in proposals(ctx)}
    p = found.get(name)
    if p is None:
        names = ", ".join(sorted(found)) or "none"
        raise PilotError(f"no proposal named {name!r} (current proposals: {names})")
    if p.sessions < p.required:
        raise PilotError(
            f"not enough evidence for {name}: {p.evidence}; {p.required} sessions are required "
            f"([optimizer] prune_min_sessions), the evidence spans {p.sessions}"
        )
    check_target(root, p.file)
    if p.conflict:
        raise PilotError(f"{name} conflicts with an existing setting: {p.conflict}")
    if p.agent == "codex" and run_codex(root, "--version") is None:
        raise PilotError("codex is not installed: the change could not be validated, so it is not made")
    original = read_bytes(p.file)
    new = _edit(p, original)
    if new == original:
        raise PilotError(f"{name} is already in effect in {_rel(p.file, root)}")
    store = receipts_of(root)
    receipt = store.record(
        name, p.file, original, new, f"{p.change} in {_rel(p.file, root)}", _missing_dirs(root, p.file)
    )
    try:
        write_atomic(p.file, new)
    except OSError as exc:
        receipt.state, receipt.note = FAILED, f"could not write: {exc}"
        store.save(receipt)
        raise PilotError(f"could not write {_rel(p.file, root)}: {exc}; nothing was changed") from exc
    if p.agent == "codex":
        problem = validate_codex(root, p)
        if problem:
            store.restore(receipt, ROLLED_BACK, problem)
            undone = "restored" if original is not None else "removed again"
            raise PilotError(f"{problem}; the change was rolled back ({_rel(p.file, root)} {undone})")
    return receipt


def validate_codex(root: Path, p: Proposal) -> str:
    """Ask the installed codex, from the repository, whether the change took effect ("" if so)."""
    if p.kind == "feature":
        proc = run_codex(root, "features", "list")
        if proc is None or proc.returncode != 0:
            return f"`codex features list` failed after the change ({_first(proc)})"
        state = parse_features(proc.stdout).get(p.target)
        if state is None or state[1]:
            return (
                f"`codex features list` still reports {p.target} enabled (Codex reads "
                f"{CODEX_PROJECT_CONFIG} only in trusted projects)"
            )
        return ""
    proc = run_codex(root, "mcp", "list", "--json")
    if proc is None or proc.returncode != 0:
        return f"`codex mcp list --json` failed after the change ({_first(proc)})"
    try:
        listed = json.loads(proc.stdout)
    except ValueError:
        return "`codex mcp list --json` printed something that is not JSON"
    entry = (
        next((s for s in listed if isinstance(s, dict) and s.get("name") == p.target), None)
        if isinstance(listed, list)
        else None
    )
    if entry is None or entry.get("enabled") is not False:
        return f"`codex mcp list` still reports {p.target} enabled"
    return ""


def _first(proc: subprocess.CompletedProcess[str] | None) -> str:
    if proc is None:
        return "codex not found"
    lines = [ln for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()]
    return lines[0].strip() if lines else f"exit {proc.returncode}"


def undo(root: Path, ref: str) -> Receipt:
    return receipts_of(root).undo(ref)


__all__ = ["APPLIED", "Context", "Proposal", "apply", "gather", "proposals", "undo"]
