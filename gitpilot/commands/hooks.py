"""``git pilot hooks install|uninstall|status``: git pilot's git hooks in this repository."""

from __future__ import annotations

import json
from pathlib import Path

import click

from gitpilot import output


@click.group("hooks")
def command() -> None:
    """Install, remove or inspect git pilot's git hooks."""


@command.command("install")
def install_command() -> int:
    """Install the hooks; a hook already there keeps running first, under its own name."""
    from gitpilot.hooks.install import install
    from gitpilot.repo import Repo

    for line in install(Repo.discover(Path.cwd())):
        output.out(line)
    return 0


@command.command("uninstall")
def uninstall_command() -> int:
    """Remove git pilot's hooks only, and restore the .legacy hooks."""
    from gitpilot.hooks.install import uninstall
    from gitpilot.repo import Repo

    for line in uninstall(Repo.discover(Path.cwd())):
        output.out(line)
    return 0


@command.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the state as JSON.")
def status_command(as_json: bool) -> int:
    """Say which hooks are installed, where, what runs first, and which interpreter they call."""
    from gitpilot.hooks.install import recorded_interpreter, status, status_notes
    from gitpilot.repo import Repo

    repo = Repo.discover(Path.cwd())
    directory, states = status(repo)
    notes = status_notes(repo)
    pythons = sorted({p for s in states if s.state in ("installed", "outdated")
                      if (p := recorded_interpreter((directory / (s.event + (".legacy" if s.via else "")))
                                                    .read_bytes()))})
    if as_json:
        data = {"directory": str(directory), "interpreters": pythons, "notes": notes,
                "hooks": [{"event": s.event, "state": s.state, "legacy": s.legacy, "runs_first": s.first,
                           "via": s.via} for s in states]}
        output.out(json.dumps(data, indent=2, sort_keys=True))
        return 0
    output.out(f"hooks directory: {directory}")
    for s in states:
        output.out(s.describe())
    for p in pythons:
        found = "found" if Path(p).exists() else "missing: the hooks fall back to git-pilot on PATH"
        output.out(f"interpreter: {p} ({found})")
    for note in notes:
        output.out(note)
    return 0
