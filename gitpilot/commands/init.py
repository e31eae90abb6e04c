"""``git pilot init``: write a commented ``.gitpilot.toml`` with the checks the repository suggests."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from gitpilot import output
from gitpilot.errors import PilotError


def infer_checks(root: Path) -> list[tuple[str, str]]:
    """(name, command) for the test runners this repository visibly uses."""
    found: list[tuple[str, str]] = []
    if any((root / f).exists() for f in ("pytest.ini", "conftest.py", "tests/conftest.py")) or _pyproject_pytest(root):
        found.append(("tests", "python3 -m pytest -q"))
    pkg = root / "package.json"
    if pkg.is_file():
        try:
            scripts = json.loads(pkg.read_text("utf-8")).get("scripts", {})
        except (ValueError, UnicodeDecodeError, AttributeError):
            scripts = {}
        if isinstance(scripts, dict) and "test" in scripts:
            found.append(("npm-test", "npm test"))
    if (root / "Cargo.toml").is_file():
        found.append(("cargo-test", "cargo test"))
    if (root / "go.mod").is_file():
        found.append(("go-test", "go test ./..."))
    for name in ("Makefile", "makefile", "GNUmakefile"):
        mk = root / name
        if mk.is_file() and any(ln.startswith("test:") for ln in mk.read_text("utf-8", "replace").splitlines()):
            found.append(("make-test", "make test"))
            break
    names = [n for n, _ in found]
    return [(n if names.count(n) == 1 else f"{n}-{i}", c) for i, (n, c) in enumerate(found, 1)]


def _pyproject_pytest(root: Path) -> bool:
    p = root / "pyproject.toml"
    if not p.is_file():
        return False
    text = p.read_text("utf-8", "replace")
    return "[tool.pytest" in text or "pytest" in text and (root / "tests").is_dir()


def render_template(checks: list[tuple[str, str]]) -> str:
    tmpl = (Path(__file__).parent.parent / "templates" / "gitpilot.toml").read_text("utf-8")
    if checks:
        body = "\n".join(f'[[check]]\nname = {json.dumps(n)}\nrun = {json.dumps(c)}\n' for n, c in checks)
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
    # Written beside and renamed into place: a kill mid-write never leaves half a config,
    # and O_EXCL on the final link refuses a file that appeared meanwhile.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(render_template(checks), "utf-8")
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise PilotError(f"{path} exists already; not overwriting it (edit it, or remove it first)") from None
    finally:
        tmp.unlink(missing_ok=True)
    lines = [f"wrote {path}" + (f" with checks: {', '.join(n for n, _ in checks)}" if checks else " (no checks found: add [[check]] tables)")]
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
