"""``git pilot run [--task-file F | TEXT] [--agent NAME] [--dry-run]``: start or resume a task."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("run")
@click.argument("text", required=False)
@click.option("--task-file", type=click.Path(dir_okay=False, path_type=Path), help="The task file.")
@click.option("--agent", default=None, metavar="NAME", help="The agent CLI: claude (default), codex, copilot, pi or grok.")
@click.option("--dry-run", is_flag=True, help="Print the capsule path and the exact command; run nothing.")
def command(text: str | None, task_file: Path | None, agent: str | None, dry_run: bool) -> int:
    """Start the agent on a task with its Context Capsule, or resume its session (Delta Resume)."""
    from gitpilot.context.runner import read_task
    from gitpilot.repo import Repo
    from gitpilot.tasks.run import run

    task = read_task(None if task_file is None else str(task_file), text, stdin=False, text_name="TEXT")
    report = run(Repo.discover(Path.cwd()), task, agent=agent, dry_run=dry_run, task_file=task_file,
                 notify=_notify)
    return render(report)


def _notify(line: str) -> None:
    from gitpilot.output import err

    err(f"git pilot: {line}")


def render(report: object) -> int:
    """Print a run/resume report; the exit code is 0 unless the session failed or the agent CLI is
    not installed (then its one line goes to stderr, after the command to run once it is)."""

    from gitpilot.output import out
    from gitpilot.tasks.run import Report

    assert isinstance(report, Report)
    out(f"task {report.task_id}")
    for line in report.lines:
        out(line)
    if report.action in ("dry-run", "not-installed", "manual") and report.command:
        label = "would run" if report.action == "dry-run" else "command"
        out(f"{label}: {report.command}")
        if report.action == "not-installed":  # the one error line; the command stays on stdout
            _notify(str(report.failure))
            return 1
        return 0
    if report.session_id:
        out(f"session: {report.session_id}")
    # the final answer as the agent's adapter read it (Claude's result, Codex's last message);
    # plain text output as it came when the CLI printed no JSON
    shown = report.answer if report.answer is not None else report.agent_output.strip()
    if report.answer is None and shown.startswith("{"):
        shown = ""  # JSON events with no answer in them: nothing to show
    if shown and report.kind and report.action != "dry-run":
        out(shown)
    return 0 if report.exit_code == 0 else 1
