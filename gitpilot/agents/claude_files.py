"""Claude Code's files on this machine: where they are, and reading its session transcripts.

Claude Code keeps its configuration in ``$CLAUDE_CONFIG_DIR``, else ``~/.claude`` (its
``settings.json``), per-project state with MCP servers in ``~/.claude.json`` (inside
``$CLAUDE_CONFIG_DIR`` when that is set), and one transcript per session in
``projects/<cwd with every non-alphanumeric character as "-">/<session>.jsonl``; a subagent's
transcript is ``<session>/subagents/*.jsonl`` beside it. Every reader of these files in git
pilot goes through here: capability pruning (``optimizer.prune_evidence``: which tools the
sessions declared and used) and the quota check before a resume (``quota.background``: the end
of a failed background session's transcript).

Nothing is written here, and nothing from a transcript is kept by this module.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gitpilot.agents import sessionfiles

TRANSCRIPT_TAIL = 256 * 1024  # bytes of a transcript's end read for a failure


def config_dir(home: Path) -> Path:
    """Claude Code's configuration directory: ``$CLAUDE_CONFIG_DIR`` or ``~/.claude``."""
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env) if env else home / ".claude"


def state_file(home: Path) -> Path:
    """Claude Code's state file with per-project MCP servers: ``~/.claude.json`` (or inside
    ``$CLAUDE_CONFIG_DIR``)."""
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env) / ".claude.json" if env else home / ".claude.json"


def project_key(path: Path) -> str:
    """The directory name Claude Code files a working directory's transcripts under."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(path))


def transcript(home: Path, cwd: Path, session: str) -> Path:
    """Where the transcript of ``session``, started in ``cwd``, is."""
    return config_dir(home) / "projects" / project_key(cwd) / f"{session}.jsonl"


def transcripts(home: Path, root: Path) -> list[Path]:
    """Transcripts of the sessions started in ``root`` or below it (in path order)."""
    base = config_dir(home) / "projects"
    key = project_key(root)
    if not base.is_dir():
        return []
    found: list[Path] = []
    for d in sorted(base.iterdir()):
        if d.name != key and not d.name.startswith(key + "-"):
            continue
        for f in sorted(d.glob("*.jsonl")):
            if d.name == key or sessionfiles.inside(first_cwd(f), root):
                found.append(f)
    return found


def subagent_transcripts(path: Path) -> list[Path]:
    """The transcripts of the subagents of the session whose transcript is ``path``."""
    return sorted((path.parent / path.stem / "subagents").glob("*.jsonl"))


def first_cwd(path: Path) -> str:
    """The working directory a transcript records first (within its first 50 lines), or ""."""
    try:
        with open(path, "rb") as fh:
            for n, line in enumerate(fh):
                if b'"cwd"' in line:
                    rec = sessionfiles.loads(line)
                    if rec is not None and isinstance(rec.get("cwd"), str):
                        return str(rec["cwd"])
                if n > 50:
                    break
    except OSError:
        pass
    return ""


def records(path: Path, needles: tuple[bytes, ...]) -> Iterator[dict[str, Any]]:
    """A transcript's records whose line contains any of ``needles``."""
    return sessionfiles.records(path, needles)


def transcript_tail(home: Path, cwd: Path, session: str) -> str:
    """The end of a session's transcript (its last ``TRANSCRIPT_TAIL`` bytes, from a whole line),
    or "" when there is none."""
    data = sessionfiles.tail(transcript(home, cwd, session), TRANSCRIPT_TAIL)
    return "" if data is None else data.decode("utf-8", "replace")
