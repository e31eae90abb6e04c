"""``git pilot doctor [--fix] [--json]``: what needs fixing, in a few lines; exit 0 when nothing does."""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.command("doctor")
@click.option("--fix", is_flag=True, help="Rewrite flat (un-fanned) notes trees; nothing else is changed.")
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
def command(fix: bool, as_json: bool) -> int:
    """Check PATH, agent CLIs and their features, hooks, config, notes refs, trust and signing."""
    from gitpilot.doctor import diagnose, fix_notes
    from gitpilot.output import out, paint
    from gitpilot.repo import Repo

    fixed: list[str] = []
    if fix:
        fixed = fix_notes(Repo.discover(Path.cwd()))
    findings = diagnose(Path.cwd())
    bad = [f for f in findings if f.needs_fix]
    if as_json:
        out(json.dumps({"ok": not bad, "fixed": fixed, "findings": [f.to_json() for f in findings]},
                       sort_keys=True, indent=1))
        return 1 if bad else 0
    for line in fixed:
        out(f"fixed  {line}")
    for f in findings:
        if f.needs_fix:
            out(paint("FIX", "red") + f"    {f.text}" + (f" — {f.fix}" if f.fix else ""))
        else:
            out(paint("ok", "green") + f"     {f.text}")
    out("nothing needs fixing" if not bad else f"{len(bad)} thing(s) need fixing")
    return 1 if bad else 0
