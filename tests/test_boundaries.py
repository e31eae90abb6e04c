"""docs/design.md's boundaries: one module owns each heavy library, and hot paths stay light."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT, make_repo, pilot_env

OWNERS = {"pygit2": "gitpilot/repo.py", "tomlkit": "gitpilot/config.py", "colorama": "gitpilot/output.py"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text("utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def test_each_heavy_library_is_imported_by_its_owner_only() -> None:
    offenders = []
    for path in sorted((REPO_ROOT / "gitpilot").rglob("*.py")):
        rel = path.relative_to(REPO_ROOT).as_posix()
        for lib in sorted(_imports(path) & OWNERS.keys()):
            if OWNERS[lib] != rel:
                offenders.append(f"{rel} imports {lib}")
    assert offenders == []


def test_only_fileio_renames_files_into_place() -> None:
    """One atomic write and one rename (``fileio``): every other module goes through them."""
    renames = {"replace", "rename", "renames"}
    offenders = []
    for path in sorted((REPO_ROOT / "gitpilot").rglob("*.py")):
        rel = path.relative_to(REPO_ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if (isinstance(node, ast.Attribute) and node.attr in renames and isinstance(node.value, ast.Name)
                    and node.value.id == "os") or (isinstance(node, ast.ImportFrom) and node.module == "os"
                                                   and {a.name for a in node.names} & renames):
                offenders.append(f"{rel}:{node.lineno}")
    assert offenders and all(o.startswith("gitpilot/fileio.py:") for o in offenders), offenders


PROBE = """
import sys, runpy
sys.argv = ["git-pilot"] + sys.argv[1:]
try:
    runpy.run_module("gitpilot", run_name="__main__")
except SystemExit:
    pass
heavy = sorted(m for m in ("click", "pygit2", "tomlkit", "markdown_it", "regex", "colorama", "dataclasses")
               if m in sys.modules)
sys.stderr.write("HEAVY=" + ",".join(heavy) + "\\n")
"""


def _heavy(args: list[str], cwd: Path) -> str:
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=cwd, env=pilot_env(), capture_output=True, text=True)
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("HEAVY=")]
    assert line, proc.stderr
    return line[0][6:]


@pytest.mark.parametrize("files", ["", 'files = ["src/**"]\n'])
def test_a_cache_hit_check_imports_no_heavy_library(tmp_path: Path, files: str) -> None:
    repo = make_repo(tmp_path / "r", {".gitpilot.toml": f'[[check]]\nname = "t"\nrun = "true"\n{files}',
                                      "src/a.py": "a = 1\n"})
    subprocess.run([sys.executable, "-m", "gitpilot", "check"], cwd=repo, env=pilot_env(), check=True,
                   capture_output=True)
    if files:  # outside the scope: a scoped hit on a whole tree never checked
        (repo / "NOTES.md").write_text("notes\n")
    assert _heavy(["check"], repo) == ""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _gitpilot_imports(path: Path, modules: set[str]) -> set[str]:
    """The gitpilot modules ``path`` imports anywhere in it: at the top, inside functions, or for
    types only (a module a type comes from is a module depended on)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:  # `from gitpilot.context import sources` imports a module
                found.add(f"{module}.{alias.name}" if f"{module}.{alias.name}" in modules else module)
    return {m for m in found if m in modules and m != name}


def test_no_two_modules_import_each_other() -> None:
    paths = {_module_name(p): p for p in sorted((REPO_ROOT / "gitpilot").rglob("*.py"))}
    imports = {name: _gitpilot_imports(path, set(paths)) for name, path in paths.items()}
    assert len(imports) > 100 and sum(map(len, imports.values())) > 300  # the walk sees the package
    mutual = sorted(f"{a} <-> {b}" for a, deps in imports.items() for b in deps if a < b and a in imports[b])
    assert mutual == []
