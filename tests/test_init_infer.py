"""``git pilot init`` takes the checks a repository documents and configures: each source it
reads, each kind of target it must not take, where each check came from; nothing is run."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from conftest import git, make_repo, run_pilot


def _init(repo: Path) -> tuple[str, list[dict[str, object]]]:
    res = run_pilot("init", "--no-hooks", cwd=repo)
    assert res.returncode == 0, res.stdout + res.stderr
    text = (repo / ".gitpilot.toml").read_text()
    show = run_pilot("config", "show", cwd=repo)
    assert show.returncode == 0 and show.stderr == "", show.stderr  # the file it wrote is valid, no warnings
    checks = tomllib.loads(text).get("check", [])
    assert isinstance(checks, list)
    return text, checks


def _runs(checks: list[dict[str, object]]) -> dict[str, object]:
    return {str(c["name"]): c["run"] for c in checks}


def _origin(text: str, run: str) -> str:
    """The ``# from ...`` comment above the check that runs ``run``."""
    lines = text.splitlines()
    at = lines.index(f"run = {json.dumps(run)}")
    return next(ln for ln in reversed(lines[:at]) if ln.startswith("# from "))


MAKEFILE = """\
.PHONY: install dev lint format format-check mypy tests serve clean release docs
install:
\tuv sync --frozen
dev: install
\tuv run pre-commit install
lint:  ## lint the code
\tuv run ruff check .
format:
\tuv run ruff format .
format-check:
\tuv run ruff format --check .
mypy:
\tuv run mypy src
tests:
\tuv run pytest
serve:
\tpython -m http.server
clean:
\trm -rf build
release:
\ttwine upload dist/*
docs:
\tmkdocs build
"""


def test_docs_win_and_the_makefile_fills_the_other_kinds(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    repo = make_repo(tmp_path / "r", {
        "AGENTS.md": "# Agents\n\n## Running Tests\n\nRun the suite with the locked environment:\n\n"
                     "```bash\nuv run --frozen pytest\n```\n\nOne test: `uv run --frozen pytest path/to/test.py::test_x`\n",
        "Makefile": MAKEFILE.replace("\tuv run pytest", f"\ttouch {marker}"),
        "pyproject.toml": "[project]\nname = 'x'\n[tool.pytest.ini_options]\n[tool.ruff]\n",
        "uv.lock": "version = 1\n",
    })
    text, checks = _init(repo)
    assert _runs(checks) == {"tests": "uv run --frozen pytest", "lint": "make lint", "typecheck": "make mypy",
                             "format-check": "make format-check"}
    assert _origin(text, "uv run --frozen pytest") == '# from AGENTS.md, "Running Tests"'
    assert _origin(text, "make lint") == "# from Makefile, target `lint`"
    for never in ("make install", "make dev", "make format", "make serve", "make clean", "make release", "make docs",
                  "python3 -m pytest"):
        assert f'"{never}"' not in text
    assert not marker.exists()  # nothing was run


def test_contributing_code_blocks_under_check_headings(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {
        "CONTRIBUTING.md": (
            "# Contributing\n\n## Setup\n\n```sh\npip install -e '.[dev]'\npre-commit install\n```\n\n"
            "## Linting\n\n```console\n$ ruff check --fix src tests\n$ black src tests\n```\n\n"
            "## Testing\n\n```bash\n# the whole suite\npytest -q\n# one module\npytest tests/<module>.py\n"
            "cd docs && make html\n```\n\n## Type checking\n\n```\nmypy src\n```\n"
            "## Docs\n\n```python\nimport pytest\npytest.main()\n```\n"),
    })
    text, checks = _init(repo)
    assert _runs(checks) == {"tests": "pytest -q", "lint": "ruff check src tests", "typecheck": "mypy src",
                             "format-check": "black --check src tests"}
    assert _origin(text, "pytest -q") == '# from CONTRIBUTING.md, "Testing"'
    # the fix flag was dropped and said so
    assert "# (written there as `ruff check --fix src tests`: a check must not edit files)" in text
    assert "pip install" not in text and "pre-commit install" not in text and "make html" not in text


def test_instruction_file_symlink_and_inline_commands(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {
        "AGENTS.md": ("# Rules\n\n## Development workflow\n\n- `pytest` in `tests/`, via `make test`\n"
                      "- lint with `make lint` before you push; format with `make format`\n"),
        "Makefile": "test:\n\tpytest\nlint:\n\truff check .\nformat:\n\truff format .\n",
    })
    (repo / "CLAUDE.md").symlink_to("AGENTS.md")
    text, checks = _init(repo)
    assert _runs(checks) == {"tests": "make test", "lint": "make lint"}  # a bare `pytest` is a mention
    assert _origin(text, "make test") == '# from AGENTS.md, "Development workflow"'


def test_justfile_recipes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"justfile": "default:\n  just --list\n\ntest *args:\n  cargo nextest run\n\n"
                                                  "lint:\n  cargo clippy\n\ndev:\n  cargo watch\n\nbuild:\n  cargo build\n"})
    text, checks = _init(repo)
    assert _runs(checks) == {"tests": "just test", "lint": "just lint"}
    assert _origin(text, "just test") == "# from justfile, recipe `test`"


@pytest.mark.parametrize(("lock", "manager"), [
    ("pnpm-lock.yaml", "pnpm"), ("yarn.lock", "yarn"), ("bun.lock", "bun"), ("package-lock.json", "npm")])
def test_package_json_scripts_with_the_lockfiles_manager(tmp_path: Path, lock: str, manager: str) -> None:
    scripts = {"dev": "vite", "start": "node server.js", "build": "tsc -b", "watch": "tsc -w",
               "test": "vitest run", "test:watch": "vitest", "lint": "eslint .", "lint:fix": "eslint --fix .",
               "typecheck": "tsc --noEmit", "format": "prettier --write .", "format:check": "prettier --check .",
               "prepare": "husky"}
    repo = make_repo(tmp_path / "r", {"package.json": json.dumps({"name": "x", "scripts": scripts}), lock: "{}\n"})
    text, checks = _init(repo)
    test_cmd = "bun run test" if manager == "bun" else f"{manager} test"
    assert _runs(checks) == {"tests": test_cmd, "lint": f"{manager} run lint", "typecheck": f"{manager} run typecheck",
                             "format-check": f"{manager} run format:check"}
    assert _origin(text, f"{manager} run lint") == f"# from package.json, script `lint` ({manager}: {lock})"


def test_pre_commit_with_a_files_scope_and_a_branch_hook(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {
        ".pre-commit-config.yaml": ("files: ^(src|tests)/\nrepos:\n  - repo: https://github.com/pre-commit/pre-commit-hooks\n"
                                    "    rev: v4.3.0\n    hooks:\n      - id: no-commit-to-branch  # not on main\n"
                                    "      - id: check-yaml\n"),
        "pyproject.toml": "[project]\nname = 'x'\n",
        "src/a.py": "x = 1\n",
    })
    text, checks = _init(repo)
    assert checks == [{"name": "pre-commit", "run": "SKIP=no-commit-to-branch pre-commit run --all-files",
                       "files": ["src/**", "tests/**", ".pre-commit-config.yaml", "pyproject.toml"]}]
    assert "# (skips no-commit-to-branch: it judges the branch, not the files)" in text


def test_pre_commit_files_without_a_glob_form_gets_no_scope(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {".pre-commit-config.yaml": "files: '^src/(?!vendor/).*\\.py$'\nrepos: []\n"})
    text, checks = _init(repo)
    assert checks == [{"name": "pre-commit", "run": "pre-commit run --all-files"}]
    assert "has no glob form, so no scope" in text


def test_tox_and_nox(tmp_path: Path) -> None:
    tox = make_repo(tmp_path / "t", {"tox.ini": "[tox]\nenv_list = py311\n", "pyproject.toml": "[tool.ruff]\n"})
    _, checks = _init(tox)
    assert _runs(checks) == {"tests": "tox"}  # a stated runner: pyproject's tools are not guessed beside it
    nox = make_repo(tmp_path / "n", {"noxfile.py": "import nox\n"})
    assert _runs(_init(nox)[1]) == {"tests": "nox"}


@pytest.mark.parametrize(("lock", "prefix"), [("uv.lock", "uv run "), ("pdm.lock", "pdm run "),
                                              ("poetry.lock", "poetry run "), (None, "")])
def test_pyproject_tools_run_in_the_projects_environment(tmp_path: Path, lock: str | None, prefix: str) -> None:
    files = {"pyproject.toml": ("[project]\nname = 'x'\n[tool.pytest.ini_options]\ntestpaths = ['tests']\n"
                                "[tool.ruff]\nline-length = 100\n[tool.ruff.format]\n[tool.mypy]\nfiles = ['src']\n")}
    if lock:
        files[lock] = "# lock\n"
    text, checks = _init(make_repo(tmp_path / "r", files))
    pytest_cmd = f"{prefix}pytest -q" if prefix else "python3 -m pytest -q"
    assert _runs(checks) == {"tests": pytest_cmd, "lint": f"{prefix}ruff check", "typecheck": f"{prefix}mypy",
                             "format-check": f"{prefix}ruff format --check"}
    if lock:
        assert f"run with {prefix.strip()} ({lock})" in _origin(text, pytest_cmd)


def test_cargo_and_go(tmp_path: Path) -> None:
    cargo = make_repo(tmp_path / "c", {"Cargo.toml": "[workspace]\nmembers = ['a']\n", "rustfmt.toml": "edition = '2021'\n"})
    assert _runs(_init(cargo)[1]) == {"tests": "cargo test --workspace", "lint": "cargo clippy --workspace --all-targets",
                                      "format-check": "cargo fmt --all --check"}
    go = make_repo(tmp_path / "g", {"go.mod": "module x\n"})
    assert _runs(_init(go)[1]) == {"tests": "go test ./...", "lint": "go vet ./..."}
    golangci = make_repo(tmp_path / "gl", {"go.mod": "module x\n", ".golangci.yml": "linters: {}\n"})
    assert _runs(_init(golangci)[1]) == {"tests": "go test ./...", "lint": "golangci-lint run"}


def test_an_aggregate_covers_its_parts_and_a_target_running_pre_commit_covers_it(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {
        "package.json": json.dumps({"scripts": {"check": "pnpm check:lint && pnpm check:type", "check:lint": "oxlint",
                                                "check:type": "tsc --noEmit", "test": "vitest run"}}),
        "pnpm-lock.yaml": "{}\n",
        "Makefile": "lint:\n\tpre-commit run --all-files\n",
        ".pre-commit-config.yaml": "repos: []\n",
    })
    assert _runs(_init(repo)[1]) == {"tests": "pnpm test", "lint": "make lint", "check": "pnpm run check"}


def test_a_scoped_check_from_init_reuses_its_pass_after_a_docs_edit(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {".pre-commit-config.yaml": "files: ^src/\nrepos: []\n", "src/a.py": "x = 1\n"})
    _init(repo)
    cfg = repo / ".gitpilot.toml"
    cfg.write_text(cfg.read_text().replace('run = "pre-commit run --all-files"', 'run = "test -f src/a.py"'))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "config")
    assert run_pilot("check", cwd=repo).returncode == 0
    (repo / "README.md").write_text("# changed\n")
    again = run_pilot("check", "--explain", cwd=repo)
    assert "(reused: passed" in again.stdout and "scope src/**, .pre-commit-config.yaml" in again.stdout


@pytest.mark.parametrize(("written", "kind", "check"), [
    ("cargo fmt --all", "format-check", "cargo fmt --all --check"),
    ("cargo fmt --all -- --config x=1", "format-check", "cargo fmt --all --check -- --config x=1"),
    ("cargo clippy --fix --allow-dirty", "lint", "cargo clippy"),
    ("prettier --write .", "format-check", "prettier --check ."),
    ("eslint --fix .", "lint", "eslint ."),
    ("uv run --group typing mypy src", "typecheck", "uv run --group typing mypy src"),
    ("python -m pytest -x", "tests", "python -m pytest -x"),
    ('pytest -m "not slow"', "tests", 'pytest -m "not slow"'),  # kept as written, quoting and all
    ("tox -l", None, "tox -l"),
    ("npm ci && npm test", None, "npm ci && npm test"),
    ("make test | tee log", None, "make test | tee log"),
    ("pnpm install", None, "pnpm install"),
    ("cargo build --release", None, "cargo build --release"),
])
def test_a_command_as_written_and_as_a_check_runs_it(written: str, kind: str | None, check: str) -> None:
    from gitpilot.checks.infer import command_kind

    assert command_kind(written) == (kind, check)
