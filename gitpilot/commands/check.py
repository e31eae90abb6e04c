"""``git pilot check``: quiet checks with passes reused by tree id."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("check")
@click.option("--force", is_flag=True, help="Run every check, even those that passed on this tree.")
@click.option("--only", metavar="NAME|N", help="Run one check, by name or number.")
@click.option("--bail", is_flag=True, help="Stop after the first failing check.")
@click.option("--log", "log", metavar="NAME|N",
              help="Print the full stored log of a check's latest run, with secrets redacted.")
@click.option("--raw", is_flag=True, help="With --log: print the log's exact bytes, secrets included.")
@click.option("--tree", "tree", is_flag=True,
              help="Print the checked state's tree id (what the records are keyed by) and run nothing.")
@click.option("--range", "range_", metavar="A..B",
              help="Check the tree of each commit of the range (in a temporary worktree; yours is untouched).")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.option("--explain", is_flag=True, help="Say why each check was reused or run, and what it is keyed by.")
def command(force: bool, only: str | None, bail: bool, log: str | None, raw: bool, tree: bool, range_: str | None,
            as_json: bool, explain: bool) -> int:
    """Run the configured checks quietly; full logs stay on disk."""
    from gitpilot.checks.engine import CheckOptions
    from gitpilot.checks.report import run_checks

    if range_ is not None and (log is not None or tree):
        raise click.UsageError("--range cannot be combined with --log or --tree")
    if log is not None:
        return show_log(log, raw)
    if raw:
        from gitpilot.errors import UsageError

        raise UsageError("--raw goes with --log NAME (the log to print exactly)")
    if tree:
        return show_tree()
    return run_checks(Path.cwd(), CheckOptions(force=force, only=only, bail=bail, json=as_json, explain=explain,
                                               range=range_))


def show_tree() -> int:
    """The tree id of tracked and untracked-not-ignored files as the working tree holds them:
    on a dirty tree this differs from ``git write-tree`` (the index's tree)."""
    from gitpilot import output
    from gitpilot.repo import Repo

    output.out(Repo.discover(Path.cwd()).worktree_tree_id())
    return 0


def show_log(selector: str, raw: bool = False) -> int:
    """The stored log, as the agent that the summary line points here may read it: tokens,
    private keys and secret assignments redacted (``--raw``: the exact bytes). The file on
    disk is never changed. Streamed, so a log of any size prints in bounded memory."""
    from gitpilot import output
    from gitpilot.checks.engine import latest_log
    from gitpilot.config import load
    from gitpilot.redact import redact_file_lines
    from gitpilot.repo import Repo

    repo = Repo.discover(Path.cwd())
    path = latest_log(repo, load(repo.workdir), selector)
    if path.name.endswith(".interrupted.log"):
        output.err(f"note: the latest run of this check was interrupted; its log is partial ({path})")
    with open(path, "rb") as fh:
        if raw:
            while chunk := fh.read(1 << 16):
                output.write(chunk)
            return 0
        batch: list[bytes] = []
        for line in redact_file_lines(fh):
            batch.append(line)
            if len(batch) >= 512:
                output.write(b"".join(batch))
                batch.clear()
        output.write(b"".join(batch))
    return 0
