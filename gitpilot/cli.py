"""The command line: one entry point, one error handler, lazily registered subcommands.

``main(argv) -> int`` maps errors to the exit codes of docs/design.md: 0 success; 1 a check
failed or a PilotError (one line, no traceback); 2 usage; 3 unexpected (traceback to a log
file whose path is printed); 130 interrupted. Hot paths (a cache-hit ``check``, ``hook
claude``) are routed before click is imported.
"""

from __future__ import annotations

import os
import sys
import time

from gitpilot import __version__
from gitpilot.errors import PilotError

TYPE_CHECKING = False
if TYPE_CHECKING:  # collections.abc alone costs ~2 ms of every start (it pulls in collections)
    from collections.abc import Sequence
    from pathlib import Path
    from typing import Any

# name -> "module:attribute" of a click command; imported only when that command runs.
COMMANDS: dict[str, str] = {
    "check": "gitpilot.commands.check:command",
    "init": "gitpilot.commands.init:command",
    "config": "gitpilot.commands.config_cmd:command",
    "demo": "gitpilot.commands.demo:command",
    "help": "gitpilot.commands.help:command",
    "quota": "gitpilot.commands.quota:command",
    "run": "gitpilot.commands.run:command",
    "resume": "gitpilot.commands.resume:command",
    "stop": "gitpilot.commands.stop:command",
    "status": "gitpilot.commands.status:command",
    "state": "gitpilot.commands.state:command",
    "doctor": "gitpilot.commands.doctor:command",
    "capsule": "gitpilot.commands.capsule:command",
    "optimize": "gitpilot.commands.optimize:command",
    "share": "gitpilot.commands.share:command",
    "hooks": "gitpilot.commands.hooks:command",
    "hook": "gitpilot.commands.hook:command",
    "sourcemap": "gitpilot.commands.sourcemap:command",
    "review-budget": "gitpilot.commands.review_budget:command",
    "codex": "gitpilot.commands.codex:command",
    "efficiency": "gitpilot.commands.efficiency:command",
    "tasks": "gitpilot.commands.tasks:command",
    "ci": "gitpilot.commands.ci:command",
}


def _make_group() -> Any:
    import click

    class LazyGroup(click.Group):
        def list_commands(self, ctx: click.Context) -> list[str]:
            return sorted(COMMANDS)

        def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
            target = COMMANDS.get(name)
            if target is None:
                return None
            import importlib

            module, _, attr = target.partition(":")
            cmd = getattr(importlib.import_module(module), attr)
            assert isinstance(cmd, click.Command)
            return cmd

    @click.group(
        cls=LazyGroup,
        context_settings={"help_option_names": ["-h", "--help"]},
        help="git pilot: decides, deterministically and locally, what reaches coding agents.",
    )
    @click.version_option(__version__, "--version", prog_name="git pilot", message="%(prog)s %(version)s")
    def group() -> None:
        pass

    return group


def _fast_path(argv: list[str]) -> int | None:
    """Commands that run on every agent step or git operation, without importing click."""
    if argv[:2] in (["hook", "claude"], ["hook", "codex"]):
        try:
            from gitpilot.optimizer.hookfast import agent_hook
        except ImportError:
            return None
        return int(agent_hook(argv[1], sys.stdin.buffer.read()))
    if argv[:1] == ["capsule"]:
        from gitpilot.context.runner import fast

        return fast(argv[1:])
    if argv[:1] == ["check"] and set(argv[1:]) <= {"--json", "--explain", "--bail"}:
        from gitpilot.checks.engine import CheckOptions
        from gitpilot.checks.report import run_checks

        opts = CheckOptions(json=("--json" in argv), explain=("--explain" in argv), bail=("--bail" in argv))
        from pathlib import Path

        return run_checks(Path.cwd(), opts)
    return None


def _rearm_quota_helper() -> None:
    """A resume ticket outlives a reboot; any later command restarts its helper.

    Without a ticket this is a walk up to ``.git`` and one stat: no git process, no import.
    """
    try:
        from gitpilot.gitenv import find_git

        found = find_git(os.getcwd())
        if found is None or not os.path.exists(os.path.join(found[2], "pilot", "resume-ticket.json")):
            return
        from pathlib import Path

        from gitpilot.quota.helper import rearm_if_needed

        rearm_if_needed(Path(found[2]) / "pilot")
    except Exception:  # never let the re-arm get in the way of the command itself
        return


def _crash_log() -> Path:
    import tempfile
    import traceback
    from pathlib import Path
    try:
        from gitpilot.repo import Repo

        base = Repo.discover(Path.cwd()).pilot_dir / "logs"
    except Exception:
        base = Path(tempfile.gettempdir()) / "git-pilot-logs"
    base.mkdir(parents=True, exist_ok=True)
    path = base / f"crash-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.log"
    path.write_text(traceback.format_exc(), "utf-8")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        _rearm_quota_helper()
        fast = _fast_path(args)
        if fast is not None:
            return fast
        import click

        group = _make_group()
        try:
            result = group.main(args=args, prog_name="git pilot", standalone_mode=False)
        except click.exceptions.Exit as exc:
            return int(exc.exit_code)
        except click.exceptions.Abort:
            sys.stderr.write("interrupted\n")
            return 130
        except click.ClickException as exc:
            exc.show()
            return 2 if isinstance(exc, click.UsageError) else int(exc.exit_code or 1)
        return int(result or 0)
    except PilotError as exc:
        sys.stderr.write(f"git pilot: {exc}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # the one place an unexpected error is turned into exit 3
        path = _crash_log()
        sys.stderr.write(f"git pilot: unexpected error: {type(exc).__name__}: {exc} (traceback: {path})\n")
        return 3


def entry() -> None:
    """The console script: exit with ``main``'s code."""
    code = main()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        pass
    raise SystemExit(code)
