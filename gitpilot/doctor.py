"""``git pilot doctor``: what a user needs to fix, in a few lines.

Checks, each one ``Finding``: git pilot reachable on PATH (agent sessions call ``git pilot
check``/``state``), which agent CLIs are installed with their versions and which of the
features git pilot uses they support (from their own ``--help``; gitpilot/agents/health.py), whether the git hooks are
installed and current, whether the configuration is valid, whether the notes refs are
readable (and whether a flat, un-fanned notes tree needs rewriting; ``fix_notes`` rewrites it
into git's two-hex fan-out), stale ref locks, and sharing: whom this clone trusts, whether
it can sign, how many signed records of the current tree verify, and refspecs that write
into ``refs/notes/pilot/*`` (gitpilot/share/health.py). ``needs_fix`` findings make the
command exit 1. ``repo_sections`` is where a capability adds its section.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

from gitpilot.errors import PilotError
from gitpilot.finding import Finding
from gitpilot.repo import Repo

# git itself fans a notes tree out only past a few hundred notes; a flat tree that large is slow.
FLAT_NOTES_LIMIT = 256
_HEX40 = re.compile(r"^[0-9a-f]{40}$")


def diagnose(cwd: Path) -> list[Finding]:
    """Every finding, in a fixed order. Outside a repository only PATH and agents are checked."""
    findings = [_path_finding()]
    try:
        repo: Repo | None = Repo.discover(cwd)
    except PilotError as exc:
        repo = None
        repo_error = str(exc)
    default_agent = "claude"
    cfg_findings: list[Finding] = []
    if repo is not None and repo.root is not None:
        cfg_findings, default_agent = _config_findings(repo.root)
    findings += _agent_findings(repo, default_agent)
    if repo is None:
        findings.append(Finding("repository", repo_error, True, "run git pilot doctor inside a repository"))
        return findings
    findings += _hook_findings(repo)
    findings += cfg_findings
    for section in repo_sections():
        findings += section(repo)
    return findings


def repo_sections() -> list[Callable[[Repo], list[Finding]]]:
    """The sections that look at a repository, after hooks and config, in the order shown.

    A capability adds its own section here: a function from the repository to findings.
    """
    from gitpilot.share.health import lock_findings, share_findings

    return [notes_findings, lock_findings, _worktree_only(share_findings)]


def _worktree_only(section: Callable[[Repo], list[Finding]]) -> Callable[[Repo], list[Finding]]:
    def run(repo: Repo) -> list[Finding]:
        return section(repo) if repo.root is not None else []

    return run


def _path_finding() -> Finding:
    exe = shutil.which("git-pilot")
    if exe:
        return Finding("path", f"git pilot on PATH: {exe}")
    return Finding("path", "git-pilot is not on PATH: agent sessions cannot run git pilot check/state", True,
                   "install it (python3 -m pip install git-pilot, or pip install . in its checkout) "
                   "or put its bin directory on PATH")


def _agent_findings(repo: Repo | None, default_agent: str) -> list[Finding]:
    from gitpilot.agents.health import agent_findings

    return agent_findings(repo, default_agent)


def _hook_findings(repo: Repo) -> list[Finding]:
    try:
        from gitpilot.hooks.install import status
    except ImportError:
        return []
    if repo.root is None:
        return []
    directory, states = status(repo)
    missing = [s.event for s in states if s.state == "missing"]
    outdated = [s.event for s in states if s.state == "outdated"]
    foreign = [s.event for s in states if s.state == "foreign"]
    if not missing and not outdated and not foreign:
        return [Finding("hooks", f"hooks installed and current ({directory})")]
    parts = []
    if missing:
        parts.append("not installed: " + ", ".join(missing))
    if outdated:
        parts.append("outdated: " + ", ".join(outdated))
    if foreign:
        parts.append("not git pilot's: " + ", ".join(foreign))
    return [Finding("hooks", "hooks " + "; ".join(parts), True, "run git pilot hooks install")]


def _config_findings(root: Path) -> tuple[list[Finding], str]:
    from gitpilot.config import load

    try:
        cfg = load(root)
    except PilotError as exc:
        return [Finding("config", f"config invalid: {exc}", True, "fix the file named above")], "claude"
    where = cfg.path.name if cfg.path else "no config file (defaults)"
    agent = str(cfg.get("agent.default"))
    if cfg.warnings:
        return [Finding("config", w, True, "remove or correct the key") for w in cfg.warnings], agent
    label = f"config valid: {where}" + (" (v0.4 JSON: git pilot config migrate converts it)"
                                         if cfg.source == "v0.4" else "")
    return [Finding("config", label)], agent


def notes_findings(repo: Repo) -> list[Finding]:
    """Each notes ref readable; a large flat (un-fanned) tree of our own notes needs rewriting."""
    refs = repo.git("for-each-ref", "--format=%(refname)", "refs/notes/pilot/", "refs/notes/remotes/")
    names = sorted(r for r in refs.decode("utf-8", "replace").splitlines() if r.strip())
    out: list[Finding] = []
    flat_refs = []
    for ref in names:
        tree = repo.rev_parse(f"{ref}^{{commit}}^{{tree}}")
        if tree is None:
            out.append(Finding("notes", f"{ref} is unreadable (not a commit with a tree)", True,
                               f"inspect it with git log {ref}; delete it with git update-ref -d {ref}"))
            continue
        proc = repo.git_proc("ls-tree", tree)
        if proc.returncode != 0:
            out.append(Finding("notes", f"{ref} is unreadable: its tree is missing", True,
                               f"delete it with git update-ref -d {ref}"))
            continue
        flat = sum(1 for ln in proc.stdout.decode().splitlines() if ln.split("\t")[-1] and
                   _HEX40.match(ln.split("\t")[-1]) and " blob " in ln)
        if flat > FLAT_NOTES_LIMIT and ref.startswith("refs/notes/pilot/"):
            flat_refs.append(ref)
            out.append(Finding("notes", f"{ref}: {flat} notes in a flat, un-fanned tree (slow lookups)", True,
                               "run git pilot doctor --fix to rewrite it with git's two-hex fan-out"))
    if not any(f.needs_fix for f in out):
        out.insert(0, Finding("notes", f"notes refs readable ({len(names)})" if names else "no notes yet"))
    return out


def fix_notes(repo: Repo) -> list[str]:
    """Rewrite every flat notes tree of ours into the fan-out (one CAS commit per ref)."""
    from gitpilot.store.notes import NotesStore

    done = []
    refs = repo.git("for-each-ref", "--format=%(refname)", "refs/notes/pilot/")
    for ref in sorted(r for r in refs.decode().splitlines() if r.strip()):
        tree = repo.rev_parse(f"{ref}^{{commit}}^{{tree}}")
        if tree is None:
            continue
        listing = repo.git("ls-tree", tree).decode().splitlines()
        flat = sorted(name for ln in listing
                      if " blob " in ln and _HEX40.match(name := ln.split("\t")[-1]))
        if not flat:
            continue
        # Any update moves flat entries into the fan-out; an identity change keeps every body.
        NotesStore(repo, ref).update({flat[0]: lambda body: body}, "pilot: doctor: fan out notes")
        done.append(f"{ref}: {len(flat)} notes moved into the two-hex fan-out")
    return done
