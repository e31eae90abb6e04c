"""Codex proposals and validation: unused MCP servers and unused features.

Features come from the installed ``codex features list``, run with the repository as working
directory (``-C`` is not honoured there); only features whose tools are known
(``CODEX_FEATURE_TOOLS``) can be judged from the rollouts, and removed features are never
proposed. Changes go to the repository's ``.codex/config.toml`` (which Codex reads in trusted
projects); after writing, ``validate`` asks codex again whether the change took effect.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from gitpilot.agents.codex_files import user_config
from gitpilot.errors import PilotError
from gitpilot.gitrun import clean_env
from gitpilot.optimizer import prune_json
from gitpilot.optimizer.prune_evidence import normalize_server
from gitpilot.optimizer.prune_types import CODEX_PROJECT_CONFIG, Context, Proposal, load_toml, plural, rel

CODEX_TIMEOUT = 60

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


def config_files(ctx: Context) -> list[tuple[Path, dict[str, Any]]]:
    return [
        (ctx.root / CODEX_PROJECT_CONFIG, load_toml(ctx.root / CODEX_PROJECT_CONFIG)),
        (user_config(ctx.home), load_toml(user_config(ctx.home))),
    ]


def codex_servers(ctx: Context) -> list[Proposal]:
    configs = config_files(ctx)
    servers: dict[str, list[tuple[Path, dict[str, Any]]]] = {}
    for f, doc in configs:
        table = doc.get("mcp_servers")
        for name, spec in table.items() if isinstance(table, dict) else []:
            servers.setdefault(name, []).append((f, spec if isinstance(spec, dict) else {}))
    total = len(ctx.codex.sessions)
    if not total:
        return []  # no session of this agent here: nothing to judge by
    out: list[Proposal] = []
    for server, specs in sorted(servers.items()):
        if specs[0][1].get("enabled") is False:  # the project file comes first: it wins
            continue
        key = normalize_server(server)
        used = ctx.codex.servers_used.get(key) or any(
            n.startswith((f"{key}__", f"{key}.", f"mcp__{key}__", f"mcp__{key}.")) for n in ctx.codex.used
        )
        if used:
            continue
        conflict = next(
            (
                f"{rel(f, ctx.root)} sets enabled = true for mcp_servers.{server}"
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
                evidence=f"{plural(total, 'Codex session')}, called in 0",
                sessions=total,
                required=ctx.required,
                conflict=conflict,
                keys=("mcp_servers", server, "enabled"),
            )
        )
    return out


def feature_proposals(ctx: Context) -> list[Proposal]:
    if ctx.codex_features is None:
        return []
    configs = config_files(ctx)
    total = len(ctx.codex.sessions)
    if not total:
        return []  # no session of this agent here: nothing to judge by
    out: list[Proposal] = []
    for feature, tools in sorted(CODEX_FEATURE_TOOLS.items()):
        stage, enabled = ctx.codex_features.get(feature, ("", False))
        if not enabled or stage == "removed":
            continue
        if ctx.codex.used_any(set(tools)):
            continue
        conflict = next(
            (
                f"{rel(f, ctx.root)} sets [features] {feature} = true"
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
                evidence=f"enabled ({stage}); {plural(total, 'Codex session')}{seen}, its tools called in 0",
                sessions=total,
                required=ctx.required,
                conflict=conflict,
                keys=("features", feature),
            )
        )
    return out


def validate(root: Path, p: Proposal) -> str:
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
