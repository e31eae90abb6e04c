"""Codex's files on this machine: where they are, and reading its session rollouts.

Codex keeps its configuration (``config.toml``) and sessions in ``$CODEX_HOME``, else
``~/.codex``. Each session is one rollout, ``sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``
(the local date it started), whose first line is a ``session_meta`` record: the session id, the
working directory, and ``source`` (``{"subagent": ...}`` for a subagent's rollout). Every reader
of these files in git pilot goes through here: the id of an interactive session just launched
(``agents.codex``), capability pruning (``optimizer.prune_evidence``), and the exit code of a
shell call, which Codex's hook payload lacks (``optimizer.codex_events``).

That last one runs in ``git pilot hook codex`` on every tool call: this module imports only
``os`` and ``json`` at load (``pathlib`` where a function needs it) and reads only a rollout's
tail for it.
"""

from __future__ import annotations

import json
import os
import time

from gitpilot.agents import sessionfiles

TYPE_CHECKING = False
if TYPE_CHECKING:  # pathlib and typing cost import time on the hook's hot path
    from collections.abc import Iterator, Mapping
    from pathlib import Path
    from typing import Any

ROLLOUT_SLACK = 2.0  # seconds: a rollout file's clock may run a little behind the launch's
ROLLOUT_TAIL = 256 * 1024  # bytes of a rollout's end searched for a call's record


def home_dir(home: Path | None = None, env: Mapping[str, str] | None = None) -> Path:
    """Where Codex keeps its config and sessions: ``$CODEX_HOME``, else ``~/.codex`` (``home``
    given, or ``$HOME``)."""
    from pathlib import Path

    source = env if env is not None else os.environ
    if source.get("CODEX_HOME"):
        return Path(source["CODEX_HOME"])
    base = home if home is not None else Path(source.get("HOME") or os.path.expanduser("~"))
    return base / ".codex"


def user_config(home: Path | None = None) -> Path:
    """The user's ``config.toml`` (under ``home_dir``)."""
    return home_dir(home) / "config.toml"


def session_meta(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The ``session_meta`` payload a rollout starts with (id, cwd, source); None if not one."""
    try:
        with open(path, "rb") as fh:
            rec = json.loads(fh.readline(1 << 20))
    except (OSError, ValueError):
        return None
    if not isinstance(rec, dict) or rec.get("type") != "session_meta" or not isinstance(rec.get("payload"), dict):
        return None
    payload: dict[str, Any] = rec["payload"]
    return payload


def rollouts(home: Path, root: Path) -> list[tuple[Path, dict[str, Any]]]:
    """(rollout, its session_meta payload) for every rollout whose cwd is ``root`` or below, in
    path order."""
    base = home_dir(home) / "sessions"
    if not base.is_dir():
        return []
    found: list[tuple[Path, dict[str, Any]]] = []
    for path in sorted(base.rglob("rollout-*.jsonl")):
        meta = session_meta(path)
        if meta is not None and sessionfiles.inside(str(meta.get("cwd") or ""), root):
            found.append((path, meta))
    return found


def records(path: Path, needles: tuple[bytes, ...]) -> Iterator[dict[str, Any]]:
    """A rollout's records whose line contains any of ``needles``."""
    return sessionfiles.records(path, needles)


def _day_dirs(sessions: Path, since: float) -> list[Path]:
    """``sessions/YYYY/MM/DD`` for every local day from ``since`` to now (one or two, usually)."""
    out: list[Path] = []
    now = time.time()
    day = min(since, now)
    while True:
        path = sessions / time.strftime("%Y/%m/%d", time.localtime(day))
        if path not in out:
            out.append(path)
        if day >= now:
            return out
        day = min(day + 86400, now)


def rollout_session(home: Path, since: float, cwd: Path) -> str | None:
    """The id of the newest Codex session recorded under ``home/sessions`` since ``since`` whose
    working directory is ``cwd`` (``home`` is the Codex home, ``home_dir``)."""
    want = os.path.realpath(cwd)
    best: tuple[float, str] | None = None
    for day in _day_dirs(home / "sessions", since - ROLLOUT_SLACK):
        try:
            names = sorted(os.listdir(day))
        except OSError:
            continue
        for name in names:
            if not (name.startswith("rollout-") and name.endswith(".jsonl")):
                continue
            path = day / name
            try:
                mtime = path.stat().st_mtime
            except OSError:
                continue
            payload = session_meta(path) if mtime >= since - ROLLOUT_SLACK else None
            if payload is None:
                continue
            sid = payload.get("id") or payload.get("session_id")
            where = payload.get("cwd")
            if not isinstance(sid, str) or not isinstance(where, str) or os.path.realpath(where) != want:
                continue
            if best is None or (mtime, sid) > best:
                best = (mtime, sid)
    return best[1] if best else None


def completed_item(rollout: str, call: str) -> dict[str, Any] | None:
    """The item of call ``call``'s ``item_completed`` record near the end of ``rollout`` (its
    ``exit_code`` and ``status``), or None when it is not there.

    Only the last ``ROLLOUT_TAIL`` bytes are read, and only a line that names the call is parsed:
    Codex writes the record just before it runs the hook that asks.
    """
    if not rollout or not call:
        return None
    tail = sessionfiles.tail(rollout, ROLLOUT_TAIL)
    if tail is None:
        return None
    needle = json.dumps(call).encode()
    for line in reversed(tail.split(b"\n")):
        if needle not in line or b"item_completed" not in line:
            continue
        rec = sessionfiles.loads(line)
        payload = rec.get("payload") if rec is not None else None
        item = payload.get("item") if isinstance(payload, dict) else None
        if isinstance(item, dict) and item.get("id") == call:
            return item
    return None
