"""``git pilot hooks install|uninstall|status``: the sh shims of ``git-hooks/`` in git's hooks directory.

The directory is the one git uses: ``core.hooksPath`` when set, else the common dir's
``hooks/``, which linked worktrees share (``git rev-parse --git-path hooks`` says which).
Each shim is written with LF endings and mode 0755, and records the absolute path of the
interpreter running this install (a version-manager shim on PATH can cost ~80 ms a call)
and, when that interpreter would not import this copy of git pilot by itself, where it is.
A hook git pilot did not write is kept as ``<hook>.legacy`` and still runs first;
``uninstall`` puts it back. Installing twice changes nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from gitpilot.errors import PilotError
from gitpilot.repo import Repo

EVENTS = ("post-checkout", "post-commit", "post-merge", "post-rewrite", "pre-push")
MARKER = b"# git-pilot-hook: "


@dataclass(frozen=True)
class HookState:
    event: str
    state: str  # "installed", "outdated", "missing", "foreign"
    legacy: bool  # a <hook>.legacy runs first

    def describe(self) -> str:
        words = {"installed": "installed", "outdated": "installed, but not by this git pilot (run: git pilot "
                 "hooks install)", "missing": "not installed", "foreign": "a hook git pilot did not write"}
        text = f"{self.event}: {words[self.state]}"
        return text + (f" (runs {self.event}.legacy first)" if self.legacy else "")


def hooks_dir(repo: Repo) -> Path:
    """The directory git runs hooks from (``core.hooksPath`` respected)."""
    out = repo.git("rev-parse", "--git-path", "hooks").decode("utf-8", "surrogateescape").strip()
    path = Path(out)
    if not path.is_absolute():
        path = (repo.root if repo.root is not None else repo.git_dir) / path
    return path


def is_ours(data: bytes) -> bool:
    return MARKER in data[:200]


def templates_dir() -> Path:
    """``git-hooks/`` of this checkout, or where a wheel installed it."""
    import sysconfig

    here = Path(__file__).resolve().parents[2] / "git-hooks"
    data_dirs = [sysconfig.get_path("data"), sys.prefix]
    if "posix_user" in sysconfig.get_scheme_names():
        data_dirs.append(sysconfig.get_path("data", "posix_user"))
    candidates = [here, *(Path(d) / "share" / "git-pilot" / "git-hooks" for d in data_dirs)]
    for c in candidates:
        if (c / "pre-push").is_file():
            return c
    raise PilotError(f"cannot find git pilot's hook scripts (looked in {', '.join(map(str, candidates))})")


def interpreter() -> tuple[str, str]:
    """(absolute interpreter path, directory to put on sys.path or "") for the shims."""
    import gitpilot

    exe = sys.executable if sys.executable and os.path.isabs(sys.executable) else ""
    lib = str(Path(gitpilot.__file__).resolve().parent.parent)
    if exe and _imports_same_copy(exe, lib):
        lib = ""
    return exe, lib


def _imports_same_copy(exe: str, lib: str) -> bool:
    """Would ``exe`` import this very gitpilot without help (site-packages, editable install)?"""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSAFEPATH")}
    try:
        proc = subprocess.run([exe, "-P", "-c", "import gitpilot; print(gitpilot.__file__)"], cwd="/",
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    found = proc.stdout.decode("utf-8", "surrogateescape").strip()
    return proc.returncode == 0 and bool(found) and str(Path(found).resolve().parent.parent) == lib


def render(event: str, exe: str, lib: str) -> bytes:
    text = (templates_dir() / event).read_text("utf-8").replace("\r\n", "\n")
    text = text.replace("'@PYTHON@'", _sh_quote(exe)).replace("'@LIB@'", _sh_quote(lib))
    return text.encode("utf-8")


def _sh_quote(value: str) -> str:
    return "'" + value.replace("'", "'\\''") + "'"


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.git-pilot-{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.chmod(tmp, 0o755)
    os.replace(tmp, path)


def install(repo: Repo) -> list[str]:
    """Write the shims; returns one line per change (or one saying nothing changed)."""
    directory = hooks_dir(repo)
    exe, lib = interpreter()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        lines, written = _install_into(directory, exe, lib)
    except OSError as exc:
        raise PilotError(f"cannot write git hooks in {directory}: {exc.strerror or exc}") from exc
    if written:
        lines.insert(0, f"hooks: installed {', '.join(written)} in {directory}")
    elif not lines:
        lines.append(f"hooks: already installed in {directory}")
    if not exe:
        lines.append("hooks: no absolute interpreter path known; the hooks will run git-pilot from PATH")
    return lines


def _install_into(directory: Path, exe: str, lib: str) -> tuple[list[str], list[str]]:
    lines: list[str] = []
    written: list[str] = []
    for event in EVENTS:
        path, legacy = directory / event, directory / f"{event}.legacy"
        want = render(event, exe, lib)
        current = _read(path)
        if current is not None and is_ours(current):
            if current != want or (path.stat().st_mode & 0o777) != 0o755:
                _write(path, want)
                written.append(event)
            continue
        if current is not None or path.is_symlink():
            if not _keep_as_legacy(path, legacy):
                lines.append(f"hooks: left {path} alone: it is not git pilot's and {legacy.name} exists too "
                             "(merge them by hand, then run git pilot hooks install)")
                continue
            lines.append(f"hooks: kept your {event} hook as {legacy.name}; it still runs first")
        _write(path, want)
        written.append(event)
    return lines, written


def _keep_as_legacy(path: Path, legacy: Path) -> bool:
    """Move the user's hook to ``legacy`` unless that exists; never overwrite a kept hook.

    A hard link claims the name atomically, so two installs at once cannot both move a hook
    there (the second would otherwise move our shim over the user's hook).
    """
    if legacy.exists() or legacy.is_symlink():
        return False
    try:
        os.link(path, legacy, follow_symlinks=False)
    except FileExistsError:
        return False
    except OSError:  # no hard links here: fall back to a rename
        os.replace(path, legacy)
        return True
    return True


def uninstall(repo: Repo) -> list[str]:
    """Remove git pilot's shims only, and put back the ``.legacy`` hooks."""
    directory = hooks_dir(repo)
    removed: list[str] = []
    lines: list[str] = []
    for event in EVENTS:
        path, legacy = directory / event, directory / f"{event}.legacy"
        current = _read(path)
        if current is None and not path.is_symlink() and (legacy.exists() or legacy.is_symlink()):
            os.replace(legacy, path)  # our shim was deleted by hand: the kept hook comes back
            lines.append(f"hooks: restored your {event} hook")
            continue
        if current is None or not is_ours(current):
            if current is not None and (legacy.exists() or legacy.is_symlink()):
                lines.append(f"hooks: {event} is not git pilot's; left it and {legacy.name} alone")
            continue
        if legacy.exists() or legacy.is_symlink():
            os.replace(legacy, path)
            lines.append(f"hooks: restored your {event} hook")
        else:
            path.unlink()
        removed.append(event)
    if removed:
        lines.insert(0, f"hooks: removed {', '.join(removed)} from {directory}")
    elif not lines:
        lines.append(f"hooks: none of git pilot's hooks are installed in {directory}")
    return lines


def status(repo: Repo) -> tuple[Path, list[HookState]]:
    directory = hooks_dir(repo)
    exe, lib = interpreter()
    states = []
    for event in EVENTS:
        path, legacy = directory / event, directory / f"{event}.legacy"
        current = _read(path)
        if current is None:
            state = "missing"
        elif not is_ours(current):
            state = "foreign"
        else:
            state = "installed" if current == render(event, exe, lib) else "outdated"
        ours = state in ("installed", "outdated")
        states.append(HookState(event, state, ours and os.access(legacy, os.X_OK)))
    return directory, states


def recorded_interpreter(data: bytes) -> str | None:
    """The interpreter path an installed shim calls."""
    for line in data.decode("utf-8", "replace").splitlines():
        if line.startswith("PILOT_PYTHON="):
            return line.partition("=")[2].strip("'")
    return None


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
