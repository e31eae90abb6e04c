"""``optimize enable|disable AGENT``: git pilot's hooks in an agent's JSON hook settings file.

Claude Code (``.claude/settings.local.json``, ``claude_hooks``) and Codex (``.codex/hooks.json``,
``codex_hooks``) read the same shape: ``{"hooks": {EVENT: [{"matcher": ..., "hooks": [{"type":
"command", "command": ..., "timeout": ...}]}]}}``. Each agent is a :class:`Target` here.

Enabling merges one hook group per event into the file, next to whatever the user has
(their groups, even for the same events, are never touched), and keeps the file's JSON
indentation, key order and final newline. The groups added are recorded in
``<git common dir>/pilot/claude-hooks.json`` so that disabling removes exactly those, and
nothing the user wrote. The file is refused when git tracks it (it is meant to be personal)
or when it, or ``.claude``, is a symlink (we would be editing a file somewhere else). When
git does not already ignore it, enabling adds it to ``<git common dir>/info/exclude`` so it
is never committed by accident (and never counts as an untracked file of the checked
state); disabling takes that line out again.

Disabling gives the user's file back byte for byte when nothing else changed it: enabling
records a receipt (``<git common dir>/pilot/hook-receipts/``, the mechanism of ``optimize
apply``/``undo``) with the file's original bytes and the sha256 of what it wrote, and disabling
restores those bytes when the file still has exactly what enabling wrote. JSON rewritten by a
parser would lose CRLF line ends, the indentation, ``1e3``, ``\\u`` escapes and duplicate keys.
When the file was edited since, disabling removes only git pilot's groups (the edit is kept).

The hook command is the interpreter running git pilot now, by absolute path, with ``-m
gitpilot``: it works from the agent's shell whatever its PATH holds (a version-manager shim
on PATH would cost ~80 ms on every tool call).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitpilot.errors import PilotError
from gitpilot.fileio import atomic_write
from gitpilot.optimizer import statefile
from gitpilot.optimizer.receipts import APPLIED, UNDONE, Receipts, read_bytes, sha256

if TYPE_CHECKING:
    from gitpilot.repo import Repo

HOOK_TIMEOUT_SECONDS = 10
RECEIPTS = "hook-receipts"


@dataclass(frozen=True)
class Target:
    """One agent's hook settings file and the hook groups git pilot puts in it."""

    agent: str  # the name in ``git pilot hook AGENT`` and ``optimize enable AGENT``
    settings: Path  # relative to the worktree root
    manifest: str  # file name under ``<git common dir>/pilot/``
    events: tuple[tuple[str, str | None], ...]  # (event, matcher or None)
    reader: str  # who reads the file, for messages ("Claude Code")

    def ours(self) -> re.Pattern[str]:
        return re.compile(rf"(?:-m gitpilot|git-pilot|git pilot) hook {re.escape(self.agent)}\s*$")


def hook_command(agent: str) -> str:
    """The shell command the agent runs: this interpreter, ``-m gitpilot hook AGENT``."""
    python = shlex.quote(sys.executable)
    command = f"{python} -m gitpilot hook {agent}"
    package_parent = str(Path(__file__).resolve().parents[2])
    if not _importable_without(package_parent):
        command = f"PYTHONPATH={shlex.quote(package_parent)} {command}"
    return command


def _importable_without(path: str) -> bool:
    """Whether this very gitpilot (the package under ``path``) is what the interpreter imports from
    a neutral directory without PYTHONPATH: the installed copy of this code. Another installed
    copy (an older release in site-packages) would run instead, without the handlers this one
    writes into the agent's settings, so then the hook command gets PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", "import gitpilot; print(gitpilot.__file__)"], cwd="/",
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if proc.returncode != 0:
        return False
    installed = Path(proc.stdout.decode("utf-8", "replace").strip()).resolve().parent
    ours = Path(path).resolve() / "gitpilot"
    return installed == ours or _sources(installed) == _sources(ours)


def _sources(package: Path) -> list[tuple[str, bytes]]:
    """The package's Python sources (relative path, bytes), to tell a copy of this code from another."""
    return sorted((p.relative_to(package).as_posix(), p.read_bytes()) for p in package.rglob("*.py"))


def settings_path(target: Target, root: Path) -> Path:
    return root / target.settings


def _guard(target: Target, repo: Repo, path: Path) -> None:
    root = repo.workdir
    rel = path.relative_to(root).as_posix()
    for candidate in (path.parent, path):
        if candidate.is_symlink():
            raise PilotError(f"{candidate.relative_to(root).as_posix()} is a symlink; git pilot will not "
                             f"edit through it (point {target.reader} at a real file, or add the hooks by hand)")
    if repo.ls_files(rel):
        raise PilotError(f"{rel} is tracked by git; git pilot only edits an untracked, personal settings "
                         f"file (git rm --cached {rel} first, or add the hooks by hand)")


def _read_text(path: Path, reader: str) -> str:
    """The file's text, or one clear line saying why it cannot be read (the file is left alone)."""
    if path.is_dir():
        raise PilotError(f"{path}: is a directory, not a JSON settings file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise PilotError(f"{path}: cannot be read: {exc.strerror or exc}") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PilotError(f"{path}: not UTF-8 (byte {exc.start}); {reader} reads JSON as UTF-8") from exc


class JsonFile:
    """A JSON settings file with its formatting: indentation, separators, final newline."""

    def __init__(self, path: Path, reader: str) -> None:
        self.path = path
        self.existed = path.exists()
        text = _read_text(path, reader) if self.existed else ""
        self.mode = path.stat().st_mode & 0o777 if self.existed else 0o644
        if text.strip():
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise PilotError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from exc
        else:
            data = {}
        if not isinstance(data, dict):
            raise PilotError(f"{path}: the top level must be a JSON object")
        self.data: dict[str, Any] = data
        self.indent: str | None = "  "
        self.compact_separators = False
        self.final_newline = True
        if text.strip():
            m = re.search(r"\n([ \t]+)\S", text)
            self.indent = m.group(1) if m else None
            self.compact_separators = self.indent is None and '": ' not in text and '", "' not in text
            self.final_newline = text.endswith("\n")

    def render(self) -> str:
        if self.indent is None:
            seps = (",", ":") if self.compact_separators else (", ", ": ")
            text = json.dumps(self.data, ensure_ascii=False, separators=seps)
        else:
            text = json.dumps(self.data, ensure_ascii=False, indent=self.indent)
        return text + ("\n" if self.final_newline else "")

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # the user's own settings file, its mode kept: synced (its receipt is, too)
        atomic_write(self.path, self.render().encode("utf-8"), mode=self.mode, fsync=True)


def _manifest_path(target: Target, common: Path) -> str:
    return str(common / "pilot" / target.manifest)


def _receipts(common: Path) -> Receipts:
    return Receipts(common / "pilot" / RECEIPTS)


def _is_ours(target: Target, hook: Any, commands: set[str]) -> bool:
    if not isinstance(hook, dict) or not isinstance(hook.get("command"), str):
        return False
    return hook["command"] in commands or bool(target.ours().search(hook["command"]))


def _group(matcher: str | None, command: str) -> dict[str, Any]:
    group: dict[str, Any] = {}
    if matcher is not None:
        group["matcher"] = matcher
    group["hooks"] = [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT_SECONDS}]
    return group


def _hooks_table(doc: JsonFile) -> dict[str, Any]:
    hooks = doc.data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise PilotError(f"{doc.path}: 'hooks' must be a JSON object")
    return hooks


def _groups(doc: JsonFile, hooks: dict[str, Any], event: str) -> list[dict[str, Any]]:
    """The hook groups of ``event``, checked to be of the shape the agent reads: a list of
    objects whose ``hooks`` (when present) is a list. git pilot adds its group next to them
    and will not write beside ones it cannot read."""
    groups = hooks.get(event, [])
    if not isinstance(groups, list):
        raise PilotError(f"{doc.path}: 'hooks.{event}' must be a list")
    for i, group in enumerate(groups):
        if not isinstance(group, dict):
            raise PilotError(f"{doc.path}: 'hooks.{event}[{i}]' must be a JSON object")
        if not isinstance(group.get("hooks", []), list):
            raise PilotError(f"{doc.path}: 'hooks.{event}[{i}].hooks' must be a list")
    return groups


def enable(target: Target, repo: Repo, command: str | None = None) -> list[str]:
    """Add git pilot's hooks; the events it added (empty when all were already there)."""
    common = repo.common_dir
    path = settings_path(target, repo.workdir)
    _guard(target, repo, path)
    command = command or hook_command(target.agent)
    with statefile.locked(_manifest_path(target, common)):
        original = read_bytes(path) if path.is_file() else None
        doc = JsonFile(path, target.reader)
        created_hooks = "hooks" not in doc.data
        hooks = _hooks_table(doc)
        added: list[dict[str, Any]] = []
        for event, matcher in target.events:
            groups = _groups(doc, hooks, event)
            if any(_is_ours(target, h, {command}) for g in groups for h in g.get("hooks", [])):
                continue
            group = _group(matcher, command)
            added.append({"event": event, "group": group, "created_event": event not in hooks})
            hooks[event] = [*groups, group]
        if not added:
            return []
        doc.data["hooks"] = hooks
        manifest = _read_manifest(target, common)
        key = str(path)
        entry = _entry(manifest, key)
        first = entry is None
        if entry is None:
            entry = {"created_file": not doc.existed, "created_dir": not path.parent.exists(),
                     "created_hooks": created_hooks, "added": []}
        entry["added"].extend(added)
        new = doc.render().encode("utf-8")
        entry["receipt"] = _record(target, common, first, entry.get("receipt"), path, original, new)
        manifest[key] = entry
        doc.save()
        if not entry.get("excluded"):
            entry["excluded"] = _exclude(target, repo)
        statefile.write_json(_manifest_path(target, common), manifest, indent=2, fsync=True)
    return [a["event"] for a in added]


def _record(target: Target, common: Path, first: bool, previous: Any, path: Path,
            original: bytes | None, new: bytes) -> str | None:
    """The receipt that lets ``disable`` give back the bytes the user had before ``enable``.

    A second ``enable`` (more events added) keeps the first receipt, whose original bytes are
    still the user's, when the file is exactly as the first one left it. When the user edited
    it in between there is no single original to go back to: no receipt (``disable`` then
    removes git pilot's groups and keeps the rest)."""
    receipts = _receipts(common)
    if not first and not isinstance(previous, str):
        return None  # the file already held git pilot's hooks before this enable: no original
    if isinstance(previous, str):
        try:
            receipt = receipts.load(previous)
        except PilotError:
            receipt = None
        if receipt is None or receipt.state != APPLIED or receipt.new_sha256 != sha256(original):
            return None
        receipt.new_sha256 = sha256(new)
        receipts.save(receipt)
        return receipt.id
    dirs = [] if path.parent.exists() else [str(path.parent)]
    return receipts.record(f"enable-{target.agent}-hooks", path, original, new,
                           f"git pilot hooks added to {target.settings.as_posix()}", dirs).id


def _exclude_block(target: Target) -> bytes:
    lines = (f"# added by git pilot optimize enable {target.agent} (removed by disable)",
             "/" + target.settings.as_posix())
    return ("\n".join(lines) + "\n").encode()


def _exclude(target: Target, repo: Repo) -> bool:
    """Keep the personal settings file out of commits (``info/exclude``) unless already ignored."""
    rel = target.settings.as_posix()
    if repo.ignored([rel]):
        return False
    path = repo.common_dir / "info" / "exclude"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = path.read_bytes() if path.exists() else b""  # bytes: patterns need not be UTF-8
    if data and not data.endswith(b"\n"):
        data += b"\n"
    atomic_write(path, data + _exclude_block(target), fsync=True)  # the user's own git file: synced
    return True


def _unexclude(target: Target, common: Path) -> None:
    path = common / "info" / "exclude"
    if not path.exists():
        return
    data = path.read_bytes()
    block = _exclude_block(target)
    if block in data:
        atomic_write(path, data.replace(block, b"", 1), fsync=True)


def disable(target: Target, repo: Repo) -> list[str]:
    """Remove what ``enable`` added; the events it removed hooks from."""
    common = repo.common_dir
    path = settings_path(target, repo.workdir)
    if not path.exists() and not path.is_symlink():
        return []
    _guard(target, repo, path)
    with statefile.locked(_manifest_path(target, common)):
        manifest = _read_manifest(target, common)
        entry = _entry(manifest, str(path)) or {"created_file": False, "created_hooks": False, "added": []}
        manifest.pop(str(path), None)
        if entry.get("excluded"):
            others = sorted(k for k in manifest if _entry(manifest, k) is not None)
            if others:  # another worktree's file still relies on the exclude line
                manifest[others[0]]["excluded"] = True
            else:
                _unexclude(target, common)
        restored = _restore(common, entry.get("receipt"), path)
        if restored:
            statefile.write_json(_manifest_path(target, common), manifest, indent=2, fsync=True)
            return sorted({a["event"] for a in entry["added"]}, key=_event_order(target))
        removed = _remove_groups(target, path, entry)
        if removed:
            statefile.write_json(_manifest_path(target, common), manifest, indent=2, fsync=True)
    return removed


def _event_order(target: Target) -> Any:
    order = [e for e, _ in target.events]
    return lambda e: (order.index(e) if e in order else len(order), e)


def _restore(common: Path, rid: Any, path: Path) -> bool:
    """Put back the bytes the file had before ``enable`` when nothing else changed it since."""
    if not isinstance(rid, str):
        return False
    receipts = _receipts(common)
    try:
        receipt = receipts.load(rid)
        if receipt.state != APPLIED or receipt.file != str(path) or \
                sha256(read_bytes(path)) != receipt.new_sha256:
            return False
        receipts.restore(receipt, UNDONE, "git pilot optimize disable")
    except PilotError:  # a damaged receipt: fall back to removing our groups
        return False
    return True


def _remove_groups(target: Target, path: Path, entry: dict[str, Any]) -> list[str]:
    """Take git pilot's groups out of a file that was edited since ``enable`` (keeping the edit)."""
    commands = {h["command"] for a in entry["added"] for h in a["group"]["hooks"]
                if isinstance(h, dict) and isinstance(h.get("command"), str)}
    created_events = {a["event"] for a in entry["added"] if a.get("created_event")}
    doc = JsonFile(path, target.reader)
    if "hooks" not in doc.data:
        return []
    hooks = _hooks_table(doc)
    removed: list[str] = []
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept, hit = _without_ours(target, groups, commands)
        if hit:
            removed.append(event)
            if kept or event not in created_events:
                hooks[event] = kept
            else:
                del hooks[event]
    if not removed:
        return []
    if not hooks and entry.get("created_hooks"):
        del doc.data["hooks"]
    if not doc.data and entry.get("created_file"):
        path.unlink()
        if entry.get("created_dir") and not any(path.parent.iterdir()):
            path.parent.rmdir()
    else:
        doc.save()
    return removed


def _without_ours(target: Target, groups: list[Any], commands: set[str]) -> tuple[list[Any], bool]:
    kept: list[Any] = []
    hit = False
    for group in groups:
        inner = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(inner, list) or not any(_is_ours(target, h, commands) for h in inner):
            kept.append(group)
            continue
        hit = True
        rest = [h for h in inner if not _is_ours(target, h, commands)]
        if rest:  # the user added their own hook to our group: keep theirs
            kept.append({**group, "hooks": rest})
    return kept, hit


def _read_manifest(target: Target, common: Path) -> dict[str, Any]:
    data = statefile.read_json(_manifest_path(target, common))
    return data if isinstance(data, dict) else {}


def _entry(manifest: dict[str, Any], key: str) -> dict[str, Any] | None:
    """The manifest's record for one settings file, keeping only the added groups it can read.

    The manifest is machine-local state a crash or a hand edit can damage; a damaged record
    loses nothing that matters: ``disable`` also knows git pilot's hooks by their command."""
    entry = manifest.get(key)
    if not isinstance(entry, dict):
        return None
    added = entry.get("added")
    entry["added"] = [
        a for a in (added if isinstance(added, list) else [])
        if isinstance(a, dict) and isinstance(a.get("event"), str) and isinstance(a.get("group"), dict)
        and isinstance(a["group"].get("hooks"), list)
    ]
    return entry
