"""``git pilot optimize``: agent hooks, learned command alternatives (and capability pruning).

``enable|disable claude`` edits ``.claude/settings.local.json``, ``enable|disable codex`` the
project's ``.codex/hooks.json``; ``learned [--json]`` lists
what the learner knows with its evidence; ``forget NAME`` drops one fact.

Subcommands defined in other modules are listed in ``EXTRA_COMMANDS`` (one line each,
``"name": "module:attribute"``) and imported only when they run, like the top-level
``COMMANDS`` of ``gitpilot/cli.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from gitpilot.errors import PilotError

#: Other modules' ``git pilot optimize`` subcommands: name -> "module:attribute" of a click.Command.
EXTRA_COMMANDS: dict[str, str] = {
    "propose": "gitpilot.commands.optimize_prune:propose",
    "apply": "gitpilot.commands.optimize_prune:apply",
    "undo": "gitpilot.commands.optimize_prune:undo",
}


class _OptimizeGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        names = set(super().list_commands(ctx))
        names.update(n for n in EXTRA_COMMANDS if self._load(n) is not None)
        return sorted(names)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        return super().get_command(ctx, name) or self._load(name)

    @staticmethod
    def _load(name: str) -> click.Command | None:
        target = EXTRA_COMMANDS.get(name)
        if target is None:
            return None
        import importlib

        module, _, attr = target.partition(":")
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name == module:  # not written yet: the command simply does not exist
                return None
            raise
        cmd = getattr(mod, attr, None)
        return cmd if isinstance(cmd, click.Command) else None


@click.group("optimize", cls=_OptimizeGroup,
             help="Repository optimizer: agent hooks, learned command alternatives, pruning.")
def command() -> None:
    pass


AGENTS = click.Choice(["claude", "codex"])


def _repo() -> Any:
    from gitpilot.repo import Repo

    repo = Repo.discover(Path.cwd())
    if repo.root is None:
        raise PilotError("this is a bare repository; run git pilot optimize inside a worktree")
    return repo


@command.command("enable")
@click.argument("agent", type=AGENTS)
def enable_command(agent: str) -> int:
    """Add git pilot's hooks to the agent's hook settings (Claude: .claude/settings.local.json,
    Codex: .codex/hooks.json)."""
    return run_enable(agent)


@command.command("disable")
@click.argument("agent", type=AGENTS)
def disable_command(agent: str) -> int:
    """Remove exactly the hooks that enable added."""
    return run_disable(agent)


@command.command("learned")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
def learned_command(as_json: bool) -> int:
    """List learned command alternatives with their evidence."""
    return run_learned(as_json=as_json)


@command.command("forget")
@click.argument("name")
def forget_command(name: str) -> int:
    """Drop the learned fact NAME (as `learned` lists it)."""
    return run_forget(name)


def _settings(root: Path) -> tuple[bool, bool]:
    """(loop detection, learning) as configured, read strictly: a broken ``.gitpilot.toml`` stops
    the command with the config's one-line error, as it stops every other command. (The hook
    itself, ``hookfast``, reads the file leniently and falls back to the defaults: a config
    error must never break the agent's tool calls.)"""
    from gitpilot import config

    cfg = config.load(root)
    return bool(cfg.get("optimizer.loop_detection")), bool(cfg.get("optimizer.learn"))


def _target(agent: str) -> Any:
    from gitpilot.optimizer import claude_hooks, codex_hooks

    return codex_hooks if agent == "codex" else claude_hooks


def run_enable(agent: str = "claude") -> int:
    from gitpilot.optimizer import agent_hooks
    from gitpilot.output import out

    module = _target(agent)
    repo = _repo()
    loop_detection, learn = _settings(repo.root)  # before the edit: a broken config changes nothing
    added = agent_hooks.enable(module.TARGET, repo)
    rel = module.SETTINGS.as_posix()
    if added:
        out(f"added git pilot hooks to {rel}: {', '.join(added)}")
    else:
        out(f"git pilot hooks are already in {rel}")
    if getattr(module, "TRUST_NOTE", ""):
        out(module.TRUST_NOTE)
    out(f"failure-loop detection: {'on' if loop_detection else 'off'} "
        f"([optimizer] loop_detection in .gitpilot.toml)")
    out(f"learned command alternatives: {'on' if learn else 'off'} ([optimizer] learn)")
    return 0


def run_disable(agent: str = "claude") -> int:
    from gitpilot.optimizer import agent_hooks
    from gitpilot.output import out

    module = _target(agent)
    repo = _repo()
    removed = agent_hooks.disable(module.TARGET, repo)
    rel = module.SETTINGS.as_posix()
    if removed:
        out(f"removed git pilot hooks from {rel}: {', '.join(removed)}")
    else:
        out(f"no git pilot hooks in {rel}")
    return 0


def _store(repo: Any) -> dict[str, Any]:
    from gitpilot.optimizer import hookfast, learn, statefile

    data = statefile.read_json(hookfast.learned_path(str(repo.common_dir)))
    return data if isinstance(data, dict) else learn.empty_store()


def run_learned(*, as_json: bool) -> int:
    from gitpilot.optimizer import learn
    from gitpilot.output import out

    repo = _repo()
    enabled = _settings(repo.root)[1]
    rows = learn.listing(_store(repo))
    if as_json:
        out(json.dumps({"learn": enabled, "facts": rows}, indent=2, sort_keys=True, ensure_ascii=False))
        return 0
    if not enabled:
        out("learning is off ([optimizer] learn = false); facts below are kept but not injected")
    if not rows:
        out("no learned facts")
        return 0
    for row in rows:
        out(f"{row['name']}  [{row['status']}]  {row['unavailable'] or 'unavailable'}; "
            f"use {row['replacement'] or '?'} ({row['confirmations']}/{row['needed']} sessions)")
        for s in row["sessions"]:
            out(f"    confirmed by session {s['session']} at {s['at']}")
        if row["retired"]:
            r = row["retired"]
            out(f"    retired at {r['at']} by session {r['session']}: {r['reason']}")
    return 0


def run_forget(name: str) -> int:
    from gitpilot.optimizer import hookfast, learn, statefile
    from gitpilot.output import out

    repo = _repo()
    path = hookfast.learned_path(str(repo.common_dir))
    with statefile.locked(path):
        store = _store(repo)
        if not learn.forget(store, name):
            known = ", ".join(sorted(store.get("facts", {}))) or "none"
            raise PilotError(f"no learned fact named {name!r} (known: {known})")
        statefile.write_json(path, store, indent=2, fsync=True)
    out(f"forgot {name}")
    return 0
