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

from pathlib import Path
from typing import Any

from gitpilot.errors import PilotError
from gitpilot.optimizer import prune_json
from gitpilot.optimizer.prune_claude import PROTECTED_CLAUDE_TOOLS, claude_servers, claude_tools
from gitpilot.optimizer.prune_codex import (
    codex_features,
    codex_servers,
    feature_proposals,
    run_codex,
    validate,
)
from gitpilot.optimizer.prune_evidence import read_claude, read_codex
from gitpilot.optimizer.prune_types import Context, Proposal, rel
from gitpilot.optimizer.receipts import (
    APPLIED,
    FAILED,
    ROLLED_BACK,
    Receipt,
    Receipts,
    read_bytes,
    write_atomic,
)


def gather(
    root: Path, home: Path | None = None, required: int | None = None, with_codex: bool = True
) -> Context:
    """Read the evidence (and, with ``with_codex``, the installed codex's features) for ``root``."""
    from gitpilot import config

    home = home or Path.home()
    if required is None:
        required = int(config.load(root).get("optimizer.prune_min_sessions"))
    claude = read_claude(home, root)
    codex = read_codex(home, root)
    notes: list[str] = []
    with_codex = with_codex and bool(codex.sessions)  # no Codex session here: no need to ask codex
    features = codex_features(root) if with_codex else None
    if with_codex and features is None:
        notes.append("codex is not installed (or `codex features list` failed): no Codex feature proposals")
    return Context(root, home, max(1, required), claude, codex, features, notes)


def proposals(ctx: Context) -> list[Proposal]:
    """Every candidate, ready or not, sorted by name."""
    found = claude_tools(ctx) + claude_servers(ctx) + codex_servers(ctx) + feature_proposals(ctx)
    return sorted(found, key=lambda p: p.name)


# -- applying --------------------------------------------------------------------------------
def receipts_of(root: Path) -> Receipts:
    from gitpilot.repo import Repo

    return Receipts(Repo.discover(root).pilot_dir / "receipts")


def check_target(root: Path, file: Path) -> None:
    """Refuse a target that git tracks or that is (or sits under) a symlink."""
    from gitpilot.repo import Repo

    inside = file.relative_to(root)
    walk = root
    for part in inside.parts:
        walk = walk / part
        if walk.is_symlink():
            raise PilotError(f"{rel(walk, root)} is a symlink; git pilot does not edit through symlinks")
    if Repo.discover(root).ls_files(str(inside)):
        raise PilotError(
            f"{inside} is tracked by git; a personal setting does not belong in a shared file "
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
        applied = [r for r in receipts_of(root).all() if r.name == name and r.state == APPLIED]
        if applied:
            raise PilotError(
                f"{name} is already applied (receipt {applied[-1].id}; "
                f"`git pilot optimize undo {applied[-1].id}` reverts it)"
            )
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
        raise PilotError(f"{name} is already in effect in {rel(p.file, root)}")
    store = receipts_of(root)
    receipt = store.record(
        name, p.file, original, new, f"{p.change} in {rel(p.file, root)}", _missing_dirs(root, p.file)
    )
    try:
        write_atomic(p.file, new)
    except OSError as exc:
        receipt.state, receipt.note = FAILED, f"could not write: {exc}"
        store.save(receipt)
        raise PilotError(f"could not write {rel(p.file, root)}: {exc}; nothing was changed") from exc
    if p.agent == "codex":
        problem = validate(root, p)
        if problem:
            store.restore(receipt, ROLLED_BACK, problem)
            undone = "restored" if original is not None else "removed again"
            raise PilotError(f"{problem}; the change was rolled back ({rel(p.file, root)} {undone})")
    return receipt


def undo(root: Path, ref: str) -> Receipt:
    return receipts_of(root).undo(ref)


__all__ = ["APPLIED", "PROTECTED_CLAUDE_TOOLS", "Context", "Proposal", "apply", "gather", "proposals", "undo"]
