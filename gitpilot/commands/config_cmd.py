"""``git pilot config show|migrate``: the effective configuration, and v0.4 JSON to TOML."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from gitpilot import output
from gitpilot.errors import PilotError
from gitpilot.fileio import atomic_write


@click.group("config")
def command() -> None:
    """Show or migrate the configuration."""


@command.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def show(as_json: bool) -> int:
    """Print every setting with its effective value."""
    from gitpilot.config import SCHEMA, load
    from gitpilot.repo import Repo

    repo = Repo.discover(Path.cwd())
    cfg = load(repo.workdir)
    for w in cfg.warnings:
        output.err(f"warning: {w}")
    data: dict[str, Any] = {
        "source": cfg.source,
        "path": str(cfg.path) if cfg.path else None,
        "settings": {k: cfg.get(k) for k in sorted(SCHEMA)},
        "checks": [{"name": c.name, "run": c.run, "timeout_minutes": c.timeout_minutes, "env": list(c.env),
                    "reuse": c.reuse} for c in cfg.checks],
    }
    if as_json:
        output.out(json.dumps(data, indent=2, sort_keys=True))
        return 0
    output.out(f"source: {cfg.source}" + (f" ({cfg.path})" if cfg.path else " (defaults)"))
    for k, v in data["settings"].items():
        mark = "" if cfg.is_set(k) else "  (default)"
        output.out(f"{k} = {json.dumps(v)}{mark}")
    for c in cfg.checks:
        output.out(f"check {c.index}: {c.name}: {c.run}")
    return 0


@command.command("migrate")
def migrate() -> int:
    """Convert a v0.4 .autopilot/config.json into .gitpilot.toml (the JSON file is kept)."""
    from gitpilot.config import LEGACY_NAME, TOML_NAME, load, migrated_doc, toml_dumps
    from gitpilot.repo import Repo

    repo = Repo.discover(Path.cwd())
    target = repo.workdir / TOML_NAME
    if target.exists():
        raise PilotError(f"{target} exists already; nothing to migrate")
    legacy = repo.workdir / LEGACY_NAME
    if not legacy.exists():
        raise PilotError(f"no {LEGACY_NAME} to migrate")
    load(repo.workdir)  # validates, with file/line errors
    doc = migrated_doc(json.loads(legacy.read_text("utf-8")))
    header = f"# Migrated from {LEGACY_NAME} by git pilot config migrate.\n"
    text = header + toml_dumps(doc)
    atomic_write(target, text.encode("utf-8"), fsync=True)  # the user's config: synced
    output.out(f"wrote {target} (from {legacy}; the JSON file is kept, and no longer read)")
    return 0
