"""``git pilot sourcemap [--budget N] [--json]``: the repository's declarations within a budget."""

from __future__ import annotations

import json
from pathlib import Path

import click

from gitpilot.context.sourcemap import MIN_BUDGET


@click.command("sourcemap")
@click.option(
    "--budget",
    type=click.IntRange(min=MIN_BUDGET),
    default=None,
    metavar="N",
    help="Characters the map may use (default: [optimizer] sourcemap_budget, 6000).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the map and its structure as JSON.")
def command(budget: int | None, as_json: bool) -> int:
    """Tracked source files and their declarations, ranked, within a budget; cached per tree."""
    return run(Path.cwd(), budget, as_json)


def run(cwd: Path, budget: int | None, as_json: bool) -> int:
    from gitpilot import output
    from gitpilot.context.sourcemap import source_map

    result = source_map(cwd, budget)
    if as_json:
        output.out(json.dumps(result.as_json(), indent=2, sort_keys=True))
    else:
        output.out(result.text.rstrip("\n"))
    return 0
