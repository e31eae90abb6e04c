"""``git pilot optimize propose [--json] | apply NAME | undo RECEIPT``: capability pruning.

Registered in the ``optimize`` group through its ``EXTRA_COMMANDS`` (gitpilot/commands/optimize.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import click


def _root() -> Path:
    from gitpilot.repo import Repo

    return Repo.discover(Path.cwd()).workdir


@click.command("propose")
@click.option("--json", "as_json", is_flag=True, help="Print every candidate, ready or not, as JSON.")
def propose(as_json: bool) -> int:
    """Propose switching off tools, MCP servers and Codex features the sessions never used."""
    from gitpilot import output
    from gitpilot.optimizer import prune

    root = _root()
    ctx = prune.gather(root)
    found = prune.proposals(ctx)
    if as_json:
        output.out(
            json.dumps(
                {
                    "required_sessions": ctx.required,
                    "sessions": {"claude": len(ctx.claude.sessions), "codex": len(ctx.codex.sessions)},
                    "protected_claude_tools": sorted(prune.PROTECTED_CLAUDE_TOOLS),
                    "proposals": [p.as_json(root) for p in found],
                    "notes": ctx.notes,
                },
                indent=2,
                sort_keys=True,
            )
        )
        return 0
    output.out(
        f"Evidence: {len(ctx.claude.sessions)} Claude and {len(ctx.codex.sessions)} Codex sessions in "
        f"this repository; a proposal needs {ctx.required} sessions ([optimizer] prune_min_sessions)."
    )
    ready = [p for p in found if p.ready]
    waiting = [p for p in found if not p.ready]
    if not found:
        output.out("Nothing to propose: every declared capability was used, or nothing is declared yet.")
    for p in ready:
        output.out(f"{output.paint(p.name, 'bold')}: {p.change} in {p.file.relative_to(root)}")
        output.out(f"    evidence: {p.evidence}")
    if waiting:
        output.out("Not ready:")
        for p in waiting:
            why = f"conflict: {p.conflict}" if p.conflict else f"{p.sessions} of {p.required} sessions"
            output.out(f"  {p.name} ({why}): {p.evidence}")
    for note in ctx.notes:
        output.out(f"Note: {note}")
    output.out("Core reading, editing, search, shell and question tools are never proposed.")
    if ready:
        output.out("Apply one with `git pilot optimize apply NAME`; every change gets a receipt for undo.")
    return 0


@click.command("apply")
@click.argument("name")
def apply(name: str) -> int:
    """Apply one proposal (a receipt is written first; undo restores the original bytes)."""
    from gitpilot import output
    from gitpilot.optimizer import prune

    receipt = prune.apply(_root(), name)
    output.out(f"Applied {name}: {receipt.change}.")
    output.out(f"Receipt {receipt.id}; undo with `git pilot optimize undo {receipt.id}`.")
    return 0


@click.command("undo")
@click.argument("receipt")
def undo(receipt: str) -> int:
    """Restore the bytes a receipt recorded, if the file was not edited since."""
    from gitpilot import output
    from gitpilot.optimizer import prune

    done = prune.undo(_root(), receipt)
    if done.note:
        output.out(f"Receipt {done.id}: {done.note}; marked undone.")
    elif done.existed:
        output.out(f"Restored {done.file} to its original bytes (receipt {done.id}).")
    else:
        output.out(f"Removed {done.file}, which {done.name} had created (receipt {done.id}).")
    return 0
