"""``git pilot share setup|pull|push [REMOTE]``: check-pass notes shared between clones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from gitpilot import output

if TYPE_CHECKING:  # pragma: no cover
    from gitpilot.repo import Repo
    from gitpilot.share.sync import PullResult, PushResult
    from gitpilot.share.trust import Trust


@click.group("share")
def command() -> None:
    """Share check passes between clones through git notes (trust: git config pilot.trust)."""


@command.command("setup")
@click.argument("remote", required=False)
def setup_command(remote: str | None) -> int:
    """Make plain `git fetch REMOTE` fetch git pilot's notes too (no push refspec is added)."""
    from gitpilot.repo import Repo
    from gitpilot.share import sync

    repo = Repo.discover(Path.cwd())
    name = sync.resolve_remote(repo, remote, "setup")
    spec = sync.fetch_refspec(name)
    if sync.setup(repo, name):
        output.out(f"remote {name}: added fetch refspec {spec}")
    else:
        output.out(f"remote {name}: already fetches git pilot's notes ({spec})")
    output.out(f"share passes with: git pilot share push {name}; "
               f"trust them with git config --add pilot.trust {name}")
    return 0


@command.command("pull")
@click.argument("remote", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def pull_command(remote: str | None, as_json: bool) -> int:
    """Fetch REMOTE's check notes and merge them into ours, line by line."""
    from gitpilot.repo import Repo
    from gitpilot.share import sync

    repo = Repo.discover(Path.cwd())
    result = sync.pull(repo, sync.resolve_remote(repo, remote, "pull"))
    trust = _trust(repo)
    if as_json:
        output.out(json.dumps(_pull_json(result, trust), indent=2, sort_keys=True))
    else:
        for line in render_pull(result, trust):
            output.out(line)
    _warn_skipped(result)
    return 0


@command.command("push")
@click.argument("remote", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def push_command(remote: str | None, as_json: bool) -> int:
    """Pull and merge REMOTE's check notes, then push the passes recorded here (never forced)."""
    from gitpilot.repo import Repo
    from gitpilot.share import sync

    repo = Repo.discover(Path.cwd())
    result = sync.push(repo, sync.resolve_remote(repo, remote, "push"))
    trust = _trust(repo)
    if as_json:
        data = _pull_json(result.pulled, trust)
        data.update({"pushed_lines": result.lines, "pushed_trees": result.objects,
                     "attempts": result.attempts, "commit": result.commit})
        output.out(json.dumps(data, indent=2, sort_keys=True))
    else:
        for line in render_push(result, trust):
            output.out(line)
    _warn_skipped(result.pulled)
    return 0


def _trust(repo: Repo) -> Trust:
    from gitpilot.config import load
    from gitpilot.share.trust import load_trust

    return load_trust(repo, load(repo.workdir))


def render_pull(result: PullResult, trust: Trust) -> list[str]:
    from gitpilot.share.report import pull_lines

    return pull_lines(result, trust)


def render_push(result: PushResult, trust: Trust) -> list[str]:
    lines = render_pull(result.pulled, trust)
    if result.commit is None:
        lines.append(f"{result.remote} already has every check record made here")
    else:
        retried = f" after {result.attempts} attempts" if result.attempts > 1 else ""
        lines.append(f"pushed {result.lines} check record(s) on {result.objects} tree(s) to "
                     f"{result.remote}{retried}")
    return lines


def _pull_json(result: PullResult, trust: Trust) -> dict[str, Any]:
    from gitpilot.share.report import standing

    st = standing(result, trust)
    d = result.dropped
    return {"remote": result.remote, "present": result.present, "merged_lines": result.added,
            "merged_trees": result.objects, "skipped_lines": result.skipped,
            "recorded_by": st.authors, "count_here": st.counted, "not_counted": st.refused,
            "unverified": st.unverified,
            "dropped": {"big_notes": d.big_notes, "notes": d.notes, "lines": d.lines}}


def _warn_skipped(result: PullResult) -> None:
    if result.skipped:
        output.err(f"warning: skipped {result.skipped} malformed or unknown check record line(s) "
                   f"from {result.remote}")
