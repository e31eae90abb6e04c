"""``git pilot ci workflow [--branch NAME]``: print a GitHub Actions workflow that records,
signs and pushes check passes (docs/ci.md explains the setup around it)."""

from __future__ import annotations

import click


def workflow_text(branch: str) -> str:
    """The workflow template with this version of git pilot and ``branch`` filled in."""
    from importlib.resources import files

    from gitpilot import __version__

    text = files("gitpilot").joinpath("templates/ci-github.yml").read_text("utf-8")
    return text.replace("@VERSION@", __version__).replace("@BRANCH@", branch)


@click.group("ci")
def command() -> None:
    """Templates for CI jobs that share signed check passes."""


@command.command("workflow")
@click.option("--branch", default="main", show_default=True, metavar="NAME",
              help="The branch whose pushes the workflow checks (the only one that may use the key).")
def workflow_command(branch: str) -> int:
    """Print a GitHub Actions workflow: fetch the notes, check with a signing key, push the notes."""
    from gitpilot import output
    from gitpilot.errors import UsageError
    from gitpilot.share.validate import valid_remote_name

    if not valid_remote_name(branch.replace("/", "-")):
        raise UsageError(f"--branch {branch!r} is not a branch name this template can hold")
    output.write(workflow_text(branch).encode("utf-8"))
    return 0
