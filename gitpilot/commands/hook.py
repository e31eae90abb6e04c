"""``git pilot hook <event> [ARGS]...``: what installed git hooks (and agent hooks) call.

The git events go to ``gitpilot.hooks.run``; ``hook claude`` and ``hook codex`` belong to the
agent hooks and are normally answered by ``cli._fast_path`` before click loads; this command
forwards them there when they get here.
"""

from __future__ import annotations

import sys

import click


@click.command("hook", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("event")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def command(event: str, args: tuple[str, ...]) -> int:
    """Handle one hook EVENT (post-checkout, post-commit, post-merge, post-rewrite, pre-push, claude,
    codex)."""
    if event in ("claude", "codex"):
        try:
            from gitpilot.optimizer.hookfast import agent_hook
        except ImportError as exc:
            from gitpilot.errors import PilotError

            raise PilotError(f"the {event} hook handler is not part of this git pilot") from exc
        return int(agent_hook(event, sys.stdin.buffer.read()))
    from gitpilot.hooks.run import EVENTS, main

    if event not in EVENTS:
        raise click.UsageError(f"unknown hook event {event!r} (one of: {', '.join(EVENTS)}, claude, codex)")
    return main([event, *args])
