"""``git pilot capsule [--task-file F | --task TEXT] [--print] [--json]``: the Context Capsule.

Prints the capsule's size and path (``--print``: the capsule itself; ``--json``: the manifest
and sizes). The task comes from ``--task``, ``--task-file`` (``-`` for stdin) or stdin.
"""

from __future__ import annotations

from pathlib import Path

import click

from gitpilot.context.runner import AGENTS, read_task, run


@click.command("capsule", help="Build (or reuse) the Context Capsule for a task.")
@click.option(
    "--task-file", "task_file", metavar="F", default=None, help="Read the task from F ('-': stdin)."
)
@click.option("--task", "task", metavar="TEXT", default=None, help="The task text.")
@click.option("--print", "print_", is_flag=True, help="Print the capsule itself.")
@click.option("--json", "as_json", is_flag=True, help="Print the manifest and sizes as JSON.")
@click.option("--agent", type=click.Choice(AGENTS), default=None,
              help="The agent it is for (default: [agent] default). Only Claude Code loads .claude/rules itself.")
def command(task_file: str | None, task: str | None, print_: bool, as_json: bool, agent: str | None) -> int:
    return run(Path.cwd(), read_task(task_file, task), print_=print_, as_json=as_json, agent=agent)
