"""``git pilot init``: write a commented ``.gitpilot.toml`` with the checks the repository documents (nothing is run)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from gitpilot import output
from gitpilot.errors import PilotError
from gitpilot.fileio import atomic_write

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gitpilot.checks.infer import Proposal


def infer_checks(root: Path) -> list[Proposal]:
    """The checks this repository documents and configures (see gitpilot/checks/infer.py)."""
    from gitpilot.checks.infer import infer
    from gitpilot.config import SCHEMA

    return infer(root, SCHEMA["leanloop.context.instruction_files"][1])


def _comment(text: str) -> str:
    return " ".join(text.split())  # one line: a heading or note never breaks out of the comment


def render_template(checks: list[Proposal]) -> str:
    tmpl = (Path(__file__).parent.parent / "templates" / "gitpilot.toml").read_text("utf-8")
    from gitpilot.checks.infer import check_name

    if checks:
        blocks = []
        for p in checks:
            lines = [f"# from {_comment(p.origin)}"]
            if p.note:
                lines.append(f"# ({_comment(p.note)})")
            lines += ["[[check]]", f"name = {json.dumps(check_name(p))}", f"run = {json.dumps(p.run, ensure_ascii=False)}"]
            if p.files:
                lines.append(f"files = {json.dumps(list(p.files), ensure_ascii=False)}  # the files pre-commit's files: selects, and the root configs")
            blocks.append("\n".join(lines) + "\n")
        body = "\n".join(blocks)
    else:
        body = '# [[check]]\n# name = "tests"\n# run = "make test"\n'
    return tmpl.replace("{checks}", body)


def init_repo(cwd: Path, hooks: bool = True) -> list[str]:
    from gitpilot.repo import Repo

    repo = Repo.discover(cwd)
    path = repo.workdir / ".gitpilot.toml"
    if path.exists() or path.is_symlink():
        raise PilotError(f"{path} exists already; not overwriting it (edit it, or remove it first)")
    checks = infer_checks(repo.workdir)
    # Written beside and linked into place: a kill mid-write never leaves half a config, and
    # the link refuses a file that appeared meanwhile. The user's config: synced.
    try:
        atomic_write(path, render_template(checks).encode("utf-8"), fsync=True, exclusive=True)
    except FileExistsError:
        raise PilotError(f"{path} exists already; not overwriting it (edit it, or remove it first)") from None
    from gitpilot.checks.infer import check_name

    if checks:
        lines = [f"wrote {path} with {len(checks)} check{'s' if len(checks) != 1 else ''} (none was run; "
                 "try them with git pilot check):"]
        lines += [f"  {check_name(p)}: {p.run}  (from {_comment(p.origin)})" for p in checks]
    else:
        lines = [f"wrote {path} (no checks found: add [[check]] tables)"]
    if hooks:
        try:
            from gitpilot.hooks.install import install  # the hooks capability, when present
        except ImportError:
            return lines
        lines += install(repo)
    return lines


@click.command("init")
@click.option("--no-hooks", is_flag=True, help="Do not install the git hooks.")
def command(no_hooks: bool) -> int:
    """Write a commented .gitpilot.toml template (and install the hooks)."""
    for line in init_repo(Path.cwd(), hooks=not no_hooks):
        output.out(line)
    return 0
