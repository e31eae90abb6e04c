"""``git pilot help [COMMAND]``: the same text as ``--help``."""

from __future__ import annotations

import click


@click.command("help")
@click.argument("topic", required=False)
@click.pass_context
def command(ctx: click.Context, topic: str | None) -> int:
    """Show help for git pilot or one of its commands."""
    group = ctx.parent.command if ctx.parent else None
    if not isinstance(group, click.Group):
        return 0
    if topic:
        sub = group.get_command(ctx, topic)
        if sub is None:
            raise click.UsageError(f"no such command: {topic}")
        with click.Context(sub, info_name=topic, parent=ctx.parent) as sub_ctx:
            click.echo(sub.get_help(sub_ctx))
        return 0
    click.echo(group.get_help(ctx.parent))  # type: ignore[arg-type]
    return 0
