"""What ``git pilot init`` proposes as checks: the commands a repository documents and configures.

Read, never run. The sources, most trusted first: commands in the instruction files and in
CONTRIBUTING (code blocks, and inline commands of two words or more, judged by the command
and by the heading, comment or sentence around it); Makefile and justfile targets;
``package.json`` scripts (run with the package manager the lockfile names); tox and nox;
``.pre-commit-config.yaml``; ``pyproject.toml`` tools; Cargo; Go. Each command is sorted
into a kind (tests, lint, typecheck, format check, an aggregate check, pre-commit) and the
most trusted source of each kind wins, so a repository whose docs say ``make test`` gets
that, not a guessed test runner. Commands that change the tree or do not check anything
(install, dev, serve, watch, build, clean, release, formatters without their check flag)
are never taken; a linter's fix flag is dropped and a formatter gets its check flag. A scope
(``files``) is proposed only where the repository's own config states one (pre-commit's
top-level ``files:``). Every proposal says where it came from.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import tomllib
from collections.abc import Iterable, Iterator
from pathlib import Path

KINDS = ("tests", "lint", "typecheck", "format-check", "check", "pre-commit")
_NAMES = {"tests": "tests", "lint": "lint", "typecheck": "typecheck", "format-check": "format-check",
          "check": "check", "pre-commit": "pre-commit"}

# Source ranks: a lower rank is preferred for the same kind.
DOCS, CONTRIB, MAKE, SCRIPTS, TOX, PRECOMMIT, PYPROJECT, TOOLCHAIN = range(8)

_SHELL_INFOS = {"", "sh", "bash", "shell", "console", "zsh", "shell-session", "shellsession", "terminal", "text",
                "cmd", "bash-session"}
_PLACEHOLDER = re.compile(r"<[^>]*>|\{[^}]*\}|\[[^\]]*\]|path/to|\.\.\.|…|\$\w|\$\{|\byour[_-]|XXX|\bfoo\b")
_CHECK_WORDS = re.compile(r"\b(test|tests|testing|lint|linting|linter|linters|check|checks|checking|type[- ]?check\w*|"
                          r"typing|verif\w*|quality|static analysis|ci)\b", re.IGNORECASE)

# Words in a target or script name. A name with one of _NEVER is not a check whatever else
# it says; the formatter words exclude only when no check word makes them a format check.
_NEVER = frozenset({"install", "setup", "dev", "develop", "serve", "server", "start", "watch", "clean", "release",
                    "publish", "deploy", "fix", "update", "upgrade", "sync", "bench", "benchmark", "docs", "doc",
                    "generate", "gen", "bootstrap", "prepare", "version", "changeset", "prettify", "build",
                    "run", "e2e", "snapshot", "snapshots", "record", "cov", "coverage", "html", "report", "help",
                    "all", "reset", "migrate", "seed", "download", "upload", "push", "tag", "hooks"})
_FORMATTER = frozenset({"format", "fmt", "style", "prettier", "black", "isort"})
_TEST = frozenset({"test", "tests", "unittest", "unittests", "unit", "spec", "specs", "pytest"})
_LINT = frozenset({"lint", "linting", "lints", "clippy", "vet", "quality", "ruff", "flake8", "pylint", "eslint"})
_TYPE = frozenset({"typecheck", "typechecks", "type", "types", "typing", "mypy", "pyright", "tsc"})
_CHECK = frozenset({"check", "checks", "verify", "ci"})


class Proposal:
    """One check ``init`` proposes."""

    __slots__ = ("kind", "run", "origin", "rank", "order", "files", "note", "body")

    def __init__(self, kind: str, run: str, origin: str, rank: int, order: int | tuple[int, ...] = 0,
                 files: tuple[str, ...] = (), note: str = "", body: str = "") -> None:
        self.kind = kind
        self.run = run
        self.origin = origin  # shown as "# from <origin>"
        self.rank = rank
        # within its source: documents list the usual command first, in a sentence about checking
        self.order = order if isinstance(order, tuple) else (order,)
        self.files = files
        self.note = note  # what was changed or left out, for the comment
        self.body = body  # what a target or script runs, when known

    def __repr__(self) -> str:
        return f"Proposal({self.kind!r}, {self.run!r}, from {self.origin!r})"


# -- classifying one command ------------------------------------------------------------------
def name_kind(name: str) -> str | None:
    """The kind of a target or script name (``lint``, ``test:unit``, ``format-check``), or None."""
    words = [w for w in re.split(r"[-_:./ ]+", name.lower()) if w]
    if not words or any(w in _NEVER for w in words):
        return None
    has_check = any(w in _CHECK for w in words)
    if any(w in _FORMATTER for w in words):
        return "format-check" if has_check else None
    for w in words:
        if w in _TEST or w.startswith("test"):
            return "tests"
        if w in _LINT:
            return "lint"
        if w in _TYPE or w.startswith("typecheck"):
            return "typecheck"
        if w in _CHECK:
            # "check:type", "check-lint": the word after says which check; "check" alone is the
            # repository's aggregate; "check-generated-parser" and the like are too particular
            rest = words[words.index(w) + 1:]
            named = next((k for k in (name_kind(r) for r in rest) if k and k != "check"), None)
            return named or ("check" if len(words) == 1 else None)
    return None


_RUNNERS = {"uv": ("run",), "pdm": ("run",), "poetry": ("run",), "hatch": ("run",), "pipenv": ("run",),
            "rye": ("run",)}
_OPTS_WITH_VALUE = frozenset({"--group", "--extra", "--with", "--python", "-p", "--package", "--env", "-e",
                              "--directory", "--project", "--frozen-lockfile"})


def _tool_kind(words: list[str]) -> tuple[str | None, list[str]]:
    """The kind of a tool invocation (``pytest -q``, ``ruff check``), and the words rewritten as a check."""
    if not words:
        return None, words
    tool = os.path.basename(words[0])
    sub = words[1] if len(words) > 1 else ""
    if tool in ("pytest", "py.test", "nox", "vitest", "jest", "ctest", "nextest"):
        return "tests", words
    if tool == "tox":
        if any(w in ("-l", "--listenvs", "-a", "--listenvs-all", "list") for w in words[1:]):
            return None, words
        return "tests", words
    if tool in ("mypy", "pyright", "basedpyright", "ty", "dmypy"):
        return "typecheck", words
    if tool == "tsc":
        return "typecheck", words if "--noEmit" in words or "-b" in words or "--build" in words else [*words, "--noEmit"]
    if tool in ("flake8", "pylint", "codespell", "bandit", "oxlint", "eslint", "golangci-lint", "shellcheck",
                "markdownlint", "yamllint", "knip"):
        return "lint", [w for w in words if w not in ("--fix", "--write", "-w")]
    if tool == "ruff":
        if sub == "format":
            rest = [w for w in words if w != "--fix"]
            return "format-check", rest if ("--check" in rest or "--diff" in rest) else [*rest[:2], "--check", *rest[2:]]
        if sub in ("check", "") or sub.startswith(("-", ".")) or "/" in sub:
            return "lint", [w for w in words if w not in ("--fix", "--unsafe-fixes")]
        return None, words
    if tool == "biome":
        if sub in ("ci", "lint", "check"):
            return "lint", [w for w in words if w not in ("--write", "--fix", "--unsafe", "--apply")]
        if sub == "format":
            return "format-check", [w for w in words if w not in ("--write", "--fix")]
        return None, words
    if tool in ("black", "isort", "prettier", "oxfmt", "dprint", "gofmt", "rustfmt", "clang-format"):
        flag = {"black": "--check", "isort": "--check-only", "prettier": "--check", "oxfmt": "--check",
                "dprint": "check", "rustfmt": "--check"}.get(tool)
        rest = [w for w in words if w not in ("--write", "-w", "--fix", "-i")]
        if flag is None:
            return None, words
        if tool == "dprint":
            return ("format-check", rest) if sub == "check" else ("format-check", [tool, "check", *rest[2:]])
        return "format-check", rest if flag in rest or "--diff" in rest else [tool, flag, *rest[1:]]
    if tool == "cargo":
        if sub in ("test", "nextest"):
            return "tests", words
        if sub == "clippy":
            return "lint", [w for w in words if w not in ("--fix", "--allow-dirty", "--allow-staged")]
        if sub == "fmt":
            if "--check" in words:
                return "format-check", words
            at = words.index("--") if "--" in words else len(words)  # cargo's own flag, before rustfmt's
            return "format-check", [*words[:at], "--check", *words[at:]]
        if sub == "check":
            return "typecheck", words
        return None, words
    if tool == "go":
        if sub == "test":
            return "tests", words
        if sub == "vet":
            return "lint", words
        return None, words
    if tool == "deno":
        if sub == "test":
            return "tests", words
        if sub == "lint":
            return "lint", words
        if sub == "check":
            return "typecheck", words
        if sub == "fmt":
            return "format-check", words if "--check" in words else [*words, "--check"]
        return None, words
    if tool in ("pre-commit", "prek"):
        return ("pre-commit", words) if sub == "run" else (None, words)
    if tool == "node" and sub == "--test":
        return "tests", words
    return None, words


def command_kind(cmd: str, scripts: dict[str, str] | None = None) -> tuple[str | None, str]:
    """The kind of a shell command and the command as a check runs it (fix flags dropped, check
    flags added), or (None, cmd) when it is not a check."""
    try:
        words = shlex.split(cmd, comments=False)
    except ValueError:
        return None, cmd
    if not words or any(w in ("|", ";", "||", ">", ">>", "&") for w in words):
        return None, cmd
    if "&&" in words:
        parts: list[list[str]] = [[]]
        for w in words:
            if w == "&&":
                parts.append([])
            else:
                parts[-1].append(w)
        kinds = [command_kind(shlex.join(p), scripts) for p in parts if p]
        if any(k is None and _never_words(p) for (k, _), p in zip(kinds, parts, strict=False)):
            return None, cmd
        last = kinds[-1][0] if kinds else None
        return (last, cmd) if last else (None, cmd)
    i = 0
    while i < len(words) and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[i]):
        i += 1  # leading VAR=value assignments stay in the command
    env, body = words[:i], words[i:]
    kind, rewritten = _body_kind(body, scripts)
    if kind is None or rewritten == body:
        return kind, cmd  # as written, quoting and all
    return kind, shlex.join([*env, *rewritten])


def _never_words(words: list[str]) -> bool:
    """A part of ``a && b`` that sets something up (``npm ci``, ``uv sync``, ``pip install``)."""
    return any(w.lower() in ("install", "i", "ci", "add", "sync", "clean", "dev", "serve", "start", "watch")
               for w in words[1:2])


def _body_kind(words: list[str], scripts: dict[str, str] | None) -> tuple[str | None, list[str]]:
    if not words:
        return None, words
    tool = os.path.basename(words[0])
    if tool in ("python", "python3") and len(words) > 2 and words[1] == "-m":
        kind, rest = _body_kind(words[2:], scripts)
        return kind, [words[0], "-m", *rest]
    if tool in _RUNNERS and len(words) > 1 and words[1] in _RUNNERS[tool]:
        j = 2
        while j < len(words) and words[j].startswith("-"):
            j += 2 if words[j] in _OPTS_WITH_VALUE else 1
        kind, rest = _body_kind(words[j:], scripts)
        if kind is None and j < len(words) and tool in ("pdm", "hatch", "poetry"):
            kind, rest = name_kind(words[j]), words[j:]  # a script of the project's own
        return kind, [*words[:j], *rest]
    if tool in ("uvx", "npx", "pipx", "bunx"):
        kind, rest = _body_kind(words[1:], scripts)
        return kind, [words[0], *rest]
    if tool in ("make", "just", "gmake"):
        targets = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        if len(targets) != 1:
            return None, words
        return name_kind(targets[0]), words
    if tool in ("npm", "pnpm", "yarn", "bun"):
        return _package_script_kind(tool, words, scripts)
    return _tool_kind(words)


_PM_BUILTINS = frozenset({"install", "i", "add", "remove", "update", "up", "exec", "dlx", "create", "init", "link",
                          "publish", "ci", "audit", "outdated", "why", "store", "config", "import", "rebuild",
                          "-r", "--recursive", "-F", "--filter", "-C", "--dir", "-w"})


def _package_script_kind(tool: str, words: list[str], scripts: dict[str, str] | None) -> tuple[str | None, list[str]]:
    rest = words[1:]
    while rest and rest[0].startswith("-"):
        rest = rest[2:] if rest[0] in ("-F", "--filter", "-C", "--dir", "--prefix", "--workspace", "-w") else rest[1:]
    if not rest:
        return None, words
    if rest[0] in ("test", "t", "tst") and tool != "bun":
        return "tests", words
    if tool == "bun" and rest[0] == "test":
        return "tests", words
    if rest[0] in ("run", "run-script"):
        rest = [w for w in rest[1:] if not w.startswith("-")]
        if not rest:
            return None, words
    elif tool == "npm" or rest[0] in _PM_BUILTINS:
        return None, words
    name = rest[0]
    body = (scripts or {}).get(name)
    if body is not None and _script_modifies(body, scripts):
        return None, words
    return name_kind(name), words


def _script_modifies(body: str, scripts: dict[str, str] | None = None, depth: int = 0) -> bool:
    """A script body that writes files or keeps running, itself or through the scripts it runs
    (``pnpm run format:code``): never a check."""
    if re.search(r"(^|\s)(--write|--fix|-w|--watch|--apply)(\s|=|$)|\bwatch\b|\bdev\b|\bserve\b", body):
        return True
    if scripts is None or depth > 3:
        return False
    for m in re.finditer(r"\b(?:npm|pnpm|yarn|bun)\s+(?:run\s+)?([A-Za-z0-9:_-]+)", body):
        inner = scripts.get(m.group(1))
        if inner is not None and _script_modifies(inner, scripts, depth + 1):
            return True
    return False


# -- documents --------------------------------------------------------------------------------
def doc_files(root: Path, instruction_files: Iterable[str]) -> list[tuple[Path, int]]:
    """The instruction files and CONTRIBUTING guides that exist, each once (symlinks resolved
    inside the repository), with their source rank."""
    found: list[tuple[Path, int]] = []
    seen: set[Path] = set()
    names = [(n, DOCS) for n in instruction_files]
    names += [(f"{d}{n}", CONTRIB) for d in ("", "docs/", ".github/")
              for n in ("CONTRIBUTING.md", "contributing.md", "CONTRIBUTING.rst")]
    top = root.resolve()
    for name, rank in names:
        path = root / name
        try:
            real = path.resolve(strict=True)
        except (OSError, RuntimeError):
            continue
        if not real.is_file() or not real.is_relative_to(top) or real in seen or not name.endswith(".md"):
            continue
        seen.add(real)
        found.append((root / real.relative_to(top), rank))  # a symlink is named by the file it leads to
    return found


def _heading_path(path: list[tuple[int, str]]) -> str:
    return path[-1][1] if path else ""


def doc_commands(path: Path, root: Path) -> Iterator[tuple[str, str, str]]:
    """(command, heading, context) for each command written in a Markdown document: the lines
    of shell code blocks and inline code of two words or more."""
    from markdown_it import MarkdownIt

    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return
    tokens = MarkdownIt("commonmark").parse(text)
    headings: list[tuple[int, str]] = []
    last_text = ""
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open":
            level = int(tok.tag[1:])
            headings = [h for h in headings if h[0] < level] + [(level, tokens[i + 1].content)]
            last_text = ""
        elif tok.type in ("fence", "code_block"):
            info = tok.info.strip().split(" ")[0].lower() if tok.type == "fence" else ""
            if info in _SHELL_INFOS:
                context = " ".join(h[1] for h in headings) + " " + last_text
                for cmd, comment in _block_commands(tok.content):
                    yield cmd, _heading_path(headings), context + " " + comment
        elif tok.type == "inline" and (i == 0 or tokens[i - 1].type != "heading_open"):
            children = tok.children or []
            # the sentence around an inline command, without the commands themselves
            last_text = "".join(c.content for c in children if c.type == "text")
            for child in children:
                if child.type == "code_inline" and len(child.content.split()) >= 2:
                    yield child.content.strip(), _heading_path(headings), " ".join(h[1] for h in headings) + " " + last_text


def _block_commands(body: str) -> Iterator[tuple[str, str]]:
    """The command lines of a shell block (continuations joined, prompts removed), each with
    the comment that introduces it; nothing after a ``cd`` (the commands run elsewhere)."""
    comment = ""
    pending = ""
    for raw in body.splitlines():
        line = pending + raw.strip()
        pending = ""
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        if not line:
            comment = ""
            continue
        if line.startswith("#"):
            comment = line.lstrip("#").strip()
            continue
        line = re.sub(r"^(\$|>|PS>|%)\s+", "", line)
        trailing = ""
        m = re.search(r"\s+#\s*(.*)$", line)
        if m:
            trailing, line = m.group(1), line[: m.start()]
        if re.match(r"^(cd|pushd)\s", line):
            return
        yield line.strip(), (comment + " " + trailing).strip()


def _context_kind(context: str) -> str | None:
    """A kind named by the words around a command whose own words do not say."""
    low = context.lower()
    if re.search(r"\bformat", low):
        return None  # "format the code": a formatter, which rewrites
    for kind, pattern in (("typecheck", r"type[- ]?check|typing"), ("lint", r"\blint"), ("tests", r"\btests?\b")):
        if re.search(pattern, low):
            return kind
    return None


def from_docs(root: Path, instruction_files: Iterable[str]) -> list[Proposal]:
    found: list[Proposal] = []
    scripts = _package_scripts(root)
    for path, rank in doc_files(root, instruction_files):
        rel = path.relative_to(root).as_posix()
        for order, (cmd, heading, context) in enumerate(doc_commands(path, root)):
            if _PLACEHOLDER.search(cmd) or len(cmd) > 200:
                continue
            kind, run = command_kind(cmd, scripts)
            note = "" if run == cmd else f"written there as `{cmd}`: a check must not edit files"
            if kind is None and _CHECK_WORDS.search(context) and _runs_repo_file(root, cmd):
                kind, run = _context_kind(context), cmd
            if kind is None or not _runnable_here(root, run):
                continue
            where = f'{rel}, "{heading}"' if heading else rel
            rank_in_doc = (
                0 if _CHECK_WORDS.search(context) else 1,  # said where the document talks about checking
                1 if re.search(r"\bexamples?\b|\be\.g\.", context, re.IGNORECASE) else 0,  # an example of a form
                1 if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", run) else 0,  # VAR=value: a variation on the plain one
                1 if note else 0,  # a check as written before one made from a fixing command
                len(run.split()),  # fewer arguments: the general form, not one case of it
                order,
            )
            found.append(Proposal(kind, run, where, rank, rank_in_doc, note=note))
    return found


def _runs_repo_file(root: Path, cmd: str) -> bool:
    first = cmd.split()[0] if cmd.split() else ""
    return "/" in first and _inside(root, first)


def _inside(root: Path, rel: str) -> bool:
    try:
        real = (root / rel).resolve(strict=True)
    except (OSError, RuntimeError):
        return False
    return real.is_file() and real.is_relative_to(root.resolve())


def _runnable_here(root: Path, cmd: str) -> bool:
    """False for a command that runs a program the repository does not hold (a build output)."""
    for part in cmd.split("&&")[:1]:
        words = [w for w in part.split() if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w)]
        if words and "/" in words[0] and not _inside(root, words[0]):
            return False
    return True


# -- Makefile and justfile -------------------------------------------------------------------
_TARGET = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.-]*)\s*:(?![=:])")
_RECIPE = re.compile(r"^@?([A-Za-z0-9][A-Za-z0-9_-]*)(?:\s+[^:=]*)?:(?!=)")


def make_targets(root: Path) -> dict[str, tuple[str, str]]:
    """target -> (file, recipe) of the Makefile, its included files and a ``%: prefix%``
    pattern's aliases (``%: common-%``: ``make lint`` runs ``common-lint``)."""
    for name in ("GNUmakefile", "makefile", "Makefile"):
        if (root / name).is_file():
            break
    else:
        return {}
    targets: dict[str, tuple[str, str]] = {}
    prefixes: list[str] = []
    files = [name]
    for fname in files:
        try:
            text = (root / fname).read_text("utf-8", "replace")
        except OSError:
            continue
        current: str | None = None
        for line in text.splitlines():
            if line.startswith("\t") and current is not None:
                file_, recipe = targets[current]
                targets[current] = (file_, recipe + line.strip() + "\n")
                continue
            current = None
            if m := re.match(r"^-?include\s+(\S+)\s*$", line):
                inc = m.group(1)
                if "$" not in inc and inc not in files and _inside(root, inc):
                    files.append(inc)
            elif m := re.match(r"^%\s*:\s*([A-Za-z0-9_-]+)%", line):
                prefixes.append(m.group(1))
            elif m := _TARGET.match(line):
                current = m.group(1)
                targets.setdefault(current, (fname, line.partition(":")[2].strip() + "\n"))
    for prefix in prefixes:
        for t, v in list(targets.items()):
            if t.startswith(prefix) and len(t) > len(prefix):
                targets.setdefault(t[len(prefix):], v)
    return targets


def from_make(root: Path) -> list[Proposal]:
    found = []
    for order, (target, (fname, recipe)) in enumerate(make_targets(root).items()):
        kind = name_kind(target)
        if kind:
            found.append(Proposal(kind, f"make {target}", f"{fname}, target `{target}`", MAKE, order, body=recipe))
    for name in ("justfile", "Justfile", ".justfile"):
        path = root / name
        if not path.is_file():
            continue
        for order, line in enumerate(path.read_text("utf-8", "replace").splitlines()):
            m = _RECIPE.match(line)
            if m and (kind := name_kind(m.group(1))):
                found.append(Proposal(kind, f"just {m.group(1)}", f"{name}, recipe `{m.group(1)}`", MAKE, order))
        break
    return found


# -- package.json -------------------------------------------------------------------------------
_LOCKS = (("pnpm-lock.yaml", "pnpm"), ("yarn.lock", "yarn"), ("bun.lockb", "bun"), ("bun.lock", "bun"),
          ("package-lock.json", "npm"), ("npm-shrinkwrap.json", "npm"))


def _package_json(root: Path) -> dict[str, object]:
    try:
        data = json.loads((root / "package.json").read_text("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _package_scripts(root: Path) -> dict[str, str]:
    scripts = _package_json(root).get("scripts")
    return {str(k): str(v) for k, v in scripts.items()} if isinstance(scripts, dict) else {}


def package_manager(root: Path) -> tuple[str, str]:
    """The package manager and why: the lockfile, else package.json's packageManager, else npm."""
    for lock, manager in _LOCKS:
        if (root / lock).is_file():
            return manager, lock
    declared = _package_json(root).get("packageManager")
    if isinstance(declared, str) and declared.split("@")[0] in ("npm", "pnpm", "yarn", "bun"):
        return declared.split("@")[0], "packageManager in package.json"
    return "npm", "no lockfile"


def from_scripts(root: Path) -> list[Proposal]:
    scripts = _package_scripts(root)
    if not scripts:
        return []
    manager, why = package_manager(root)
    found = []
    for order, (name, body) in enumerate(scripts.items()):
        kind = name_kind(name)
        if kind is None or _script_modifies(body, scripts) or body.strip().startswith("echo \"Error: no test"):
            continue
        run = f"{manager} test" if name == "test" and manager != "bun" else f"{manager} run {name}"
        found.append(Proposal(kind, run, f"package.json, script `{name}` ({manager}: {why})", SCRIPTS, order,
                              body=body))
    return found


def pdm_scripts(root: Path) -> dict[str, str]:
    """``[tool.pdm.scripts]``: name -> what it runs."""
    tool = _pyproject(root).get("tool")
    pdm = tool.get("pdm") if isinstance(tool, dict) else None
    scripts = pdm.get("scripts") if isinstance(pdm, dict) else None
    out: dict[str, str] = {}
    for name, value in (scripts or {}).items() if isinstance(scripts, dict) else ():
        if isinstance(value, str):
            out[str(name)] = value
        elif isinstance(value, dict):
            body = value.get("cmd") or value.get("shell") or value.get("composite") or ""
            out[str(name)] = " ".join(body) if isinstance(body, list) else str(body)
    return out


# -- Python ------------------------------------------------------------------------------------
def _pyproject(root: Path) -> dict[str, object]:
    try:
        return tomllib.loads((root / "pyproject.toml").read_text("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return {}


def python_runner(root: Path) -> tuple[list[str], str]:
    """How the project's own environment runs a tool (``uv run``), and why; [] for none."""
    for lock, prefix in (("uv.lock", ["uv", "run"]), ("pdm.lock", ["pdm", "run"]), ("poetry.lock", ["poetry", "run"])):
        if (root / lock).is_file():
            return prefix, lock
    tool = _pyproject(root).get("tool")
    if isinstance(tool, dict) and "uv" in tool:
        return ["uv", "run"], "[tool.uv] in pyproject.toml"
    return [], ""


def from_tox_nox(root: Path) -> list[Proposal]:
    found = []
    tool = _pyproject(root).get("tool")
    if (root / "tox.ini").is_file() or (root / "tox.toml").is_file() or (isinstance(tool, dict) and "tox" in tool):
        where = "tox.ini" if (root / "tox.ini").is_file() else "tox.toml" if (root / "tox.toml").is_file() else "pyproject.toml"
        found.append(Proposal("tests", "tox", f"{where} (tox)", TOX))
    if (root / "noxfile.py").is_file():
        found.append(Proposal("tests", "nox", "noxfile.py (nox)", TOX))
    return found


def from_pyproject(root: Path) -> list[Proposal]:
    doc = _pyproject(root)
    if not doc:
        return []
    tool = doc.get("tool") if isinstance(doc.get("tool"), dict) else {}
    assert isinstance(tool, dict)
    prefix, why = python_runner(root)
    via = f", run with {' '.join(prefix)} ({why})" if prefix else ""
    found = []
    if "pytest" in tool or (root / "pytest.ini").is_file() or (root / "conftest.py").is_file() \
            or (root / "tests" / "conftest.py").is_file():
        run = [*prefix, "pytest"] if prefix else ["python3", "-m", "pytest"]
        found.append(Proposal("tests", shlex.join([*run, "-q"]), f"pyproject.toml, pytest{via}", PYPROJECT, 0))
    if "ruff" in tool:
        found.append(Proposal("lint", shlex.join([*prefix, "ruff", "check"]), f"pyproject.toml, [tool.ruff]{via}",
                              PYPROJECT, 1))
        ruff = tool["ruff"]
        if isinstance(ruff, dict) and "format" in ruff:
            found.append(Proposal("format-check", shlex.join([*prefix, "ruff", "format", "--check"]),
                                  f"pyproject.toml, [tool.ruff.format]{via}", PYPROJECT, 2))
    if "mypy" in tool:
        mypy = tool["mypy"]
        target = [] if isinstance(mypy, dict) and mypy.get("files") else ["."]
        found.append(Proposal("typecheck", shlex.join([*prefix, "mypy", *target]), f"pyproject.toml, [tool.mypy]{via}",
                              PYPROJECT, 3))
    elif "pyright" in tool or (root / "pyrightconfig.json").is_file():
        found.append(Proposal("typecheck", shlex.join([*prefix, "pyright"]), f"pyproject.toml, [tool.pyright]{via}",
                              PYPROJECT, 3))
    return found


# -- pre-commit --------------------------------------------------------------------------------
# Hooks that judge the commit being made rather than the files: with --all-files on a
# protected branch they fail whatever the tree holds, so the proposed command skips them.
_COMMIT_HOOKS = ("no-commit-to-branch",)
_ROOT_CONFIGS = ("pyproject.toml", "setup.cfg", "tox.ini", ".flake8", "ruff.toml", ".ruff.toml", "mypy.ini",
                 "package.json", "tsconfig.json", "biome.json", "biome.jsonc", ".prettierrc", ".editorconfig")


def from_pre_commit(root: Path) -> list[Proposal]:
    path = root / ".pre-commit-config.yaml"
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    skip = [h for h in _COMMIT_HOOKS if re.search(rf"^\s*-?\s*id:\s*{re.escape(h)}\s*(#.*)?$", text, re.MULTILINE)]
    prefix, _why = python_runner(root)
    runner = " ".join(prefix) + " " if prefix and _declares(root, "pre-commit") else ""
    run = ("SKIP=" + ",".join(skip) + " " if skip else "") + runner + "pre-commit run --all-files"
    note = f"skips {', '.join(skip)}: it judges the branch, not the files" if skip else ""
    files: tuple[str, ...] = ()
    m = re.search(r"^files:\s*(.+?)\s*$", text, re.MULTILINE)
    if m:
        globs = regex_to_globs(_yaml_scalar(m.group(1)))
        if globs is None:
            note = (note + "; " if note else "") + f"its files: {m.group(1)} has no glob form, so no scope"
        else:
            configs = [c for c in _ROOT_CONFIGS if (root / c).is_file()]
            files = tuple([*globs, ".pre-commit-config.yaml", *configs])
    return [Proposal("pre-commit", run, ".pre-commit-config.yaml", PRECOMMIT, files=files, note=note)]


def _declares(root: Path, package: str) -> bool:
    """Whether pyproject.toml lists ``package`` among its dependencies (any group)."""
    try:
        text = (root / "pyproject.toml").read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return re.search(rf"""["']{re.escape(package)}(\[[^\]]*\])?\s*([<>=!~;"']|$)""", text, re.MULTILINE) is not None


def _yaml_scalar(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        inner = value[1:-1]
        return inner.replace("''", "'") if value[0] == "'" else inner.replace("\\\\", "\\")
    return value


def regex_to_globs(pattern: str) -> list[str] | None:
    """Globs for the plain forms of a pre-commit ``files:`` regex: ``^(src|tests)/``,
    ``^src/``, ``\\.(py|pyi)$``; None for anything else (no scope is better than a wrong one)."""
    name = r"[A-Za-z0-9_][A-Za-z0-9_.-]*"
    if m := re.fullmatch(rf"\^\(?((?:{name}\|)*{name})\)?/(\.\*)?", pattern):
        return [f"{d}/**" for d in m.group(1).split("|")]
    if m := re.fullmatch(r"\\\.\(?((?:[A-Za-z0-9]+\|)*[A-Za-z0-9]+)\)?\$", pattern):
        return [f"**/*.{e}" for e in m.group(1).split("|")]
    return None


# -- Cargo and Go ------------------------------------------------------------------------------
def from_toolchains(root: Path) -> list[Proposal]:
    found = []
    cargo = root / "Cargo.toml"
    if cargo.is_file():
        try:
            manifest = tomllib.loads(cargo.read_text("utf-8"))
        except (OSError, ValueError, UnicodeDecodeError):
            manifest = {}
        ws = ["--workspace"] if "workspace" in manifest else []
        found.append(Proposal("tests", shlex.join(["cargo", "test", *ws]), "Cargo.toml", TOOLCHAIN, 0))
        found.append(Proposal("lint", shlex.join(["cargo", "clippy", *ws, "--all-targets"]), "Cargo.toml", TOOLCHAIN, 1))
        if (root / "rustfmt.toml").is_file() or (root / ".rustfmt.toml").is_file():
            found.append(Proposal("format-check", "cargo fmt --all --check", "rustfmt.toml", TOOLCHAIN, 2))
    if (root / "go.mod").is_file():
        found.append(Proposal("tests", "go test ./...", "go.mod", TOOLCHAIN, 0))
        lint = next((n for n in (".golangci.yml", ".golangci.yaml", ".golangci.toml", ".golangci.json")
                     if (root / n).is_file()), None)
        if lint:
            found.append(Proposal("lint", "golangci-lint run", lint, TOOLCHAIN, 1))
        else:
            found.append(Proposal("lint", "go vet ./...", "go.mod", TOOLCHAIN, 1))
    return found


# -- choosing ----------------------------------------------------------------------------------
def infer(root: Path, instruction_files: Iterable[str] = ("CLAUDE.md", "AGENTS.md")) -> list[Proposal]:
    """The proposed checks, one per kind, in the order of KINDS."""
    stated = [*from_docs(root, instruction_files), *from_make(root), *from_scripts(root), *from_tox_nox(root),
              *from_pre_commit(root)]
    # A tool's configuration (pyproject's [tool.*], a Cargo.toml, a go.mod) says the tool is
    # used, not how the project runs it: a guess, made only where the repository states no
    # command of its own.
    candidates = stated or [*from_pyproject(root), *from_toolchains(root)]
    best: dict[str, Proposal] = {}
    for p in sorted(candidates, key=lambda p: (p.rank, p.order)):
        best.setdefault(p.kind, p)
    chosen = [best[k] for k in KINDS if k in best]
    _attach_bodies(root, chosen)
    chosen = _without_covered(chosen)
    runs: set[str] = set()
    unique = []
    for p in chosen:
        if p.run not in runs:
            runs.add(p.run)
            unique.append(p)
    return unique


def _script_name(run: str) -> str | None:
    """The target or script a command runs (``make lint``, ``pnpm run check:type``), if any."""
    words = run.split()
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        words = words[1:]
    if len(words) >= 2 and words[0] in ("make", "just", "npm", "pnpm", "yarn", "bun", "pdm"):
        rest = [w for w in words[1:] if not w.startswith("-")]
        if rest and rest[0] in ("run", "run-script"):
            rest = rest[1:]
        return rest[0] if rest else None
    return None


def _attach_bodies(root: Path, chosen: list[Proposal]) -> None:
    """What each chosen target or script runs, for the checks documents name by target."""
    bodies = {**{t: r for t, (_f, r) in make_targets(root).items()}, **_package_scripts(root), **pdm_scripts(root)}
    for p in chosen:
        name = _script_name(p.run)
        if not p.body and name in bodies:
            p.body = bodies[name]


def _without_covered(chosen: list[Proposal]) -> list[Proposal]:
    """Drop what another chosen check already runs: an aggregate (``pnpm run check``) covers its
    own sub-scripts (``check:lint``), and a target that runs pre-commit covers pre-commit."""
    aggregate = next((p for p in chosen if p.kind == "check"), None)
    stem = _script_name(aggregate.run) if aggregate else None
    out = []
    for p in chosen:
        name = _script_name(p.run)
        if stem and p is not aggregate and name and name.startswith((stem + ":", stem + "-")):
            continue
        if p.kind == "pre-commit" and any(re.search(r"\b(pre-commit|prek) run\b", o.body) for o in chosen):
            continue
        out.append(p)
    return out


def check_name(p: Proposal) -> str:
    return _NAMES[p.kind]
