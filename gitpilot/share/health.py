"""What ``git pilot doctor`` says about sharing: trust, signing, refspecs, stale ref locks.

Each function returns ``doctor.Finding``s. Nothing here changes the repository: the signing
probe signs a throwaway message in a temporary directory.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from gitpilot.errors import PilotError
from gitpilot.finding import Finding
from gitpilot.repo import STALE_LOCK_SECONDS, Repo
from gitpilot.share.settings import Settings, read_settings
from gitpilot.share.trust import Trust, load_trust

_OURS = "refs/notes/pilot/"


def share_findings(repo: Repo) -> list[Finding]:
    """Trust, signing and refspecs; nothing at all for a clone that shares nothing."""
    settings = read_settings(repo)
    remotes = repo.git("remote").decode("utf-8", "replace").split()
    if not remotes and not settings.trust and not settings.sign:
        return []
    out = refspec_findings(repo)
    trust = _trust(repo, settings)
    if trust is not None:
        out.append(Finding("trust", "counts here: " + trust.describe()))
    if settings.sign:
        out.append(_signing_finding(settings))
    if trust is not None and trust.signed:
        out += _verify_findings(repo, trust)
    return out


def _trust(repo: Repo, settings: Settings) -> Trust | None:
    from gitpilot.config import load

    try:
        cfg = load(repo.workdir)
    except PilotError:
        return None  # the config section already says what is wrong with it
    return load_trust(repo, cfg, settings)


def writes_into_ours(refspec: str) -> bool:
    """Whether a fetch refspec's destination can be a ref under ``refs/notes/pilot/``."""
    spec = refspec.strip().lstrip("+")
    if spec.startswith("^") or ":" not in spec:
        return False
    dst = spec.split(":", 1)[1]
    if "*" not in dst:
        return dst.startswith(_OURS)
    prefix = dst.split("*", 1)[0]
    return _OURS.startswith(prefix) or prefix.startswith(_OURS)


def refspec_findings(repo: Repo) -> list[Finding]:
    """A remote whose fetch writes into refs/notes/pilot/* makes its records look made here."""
    proc = repo.git_proc("config", "-z", "--get-regexp", r"^remote\..*\.(fetch|mirror)$")
    out = []
    for item in proc.stdout.split(b"\0"):
        key, _, value = item.decode("utf-8", "replace").partition("\n")
        if not key:
            continue
        remote = key[len("remote."):].rsplit(".", 1)[0]
        if key.endswith(".mirror") and value.strip().lower() in ("", "true", "yes", "on", "1"):
            bad = f"remote {remote} is a mirror (remote.{remote}.mirror): a fetch writes into {_OURS}*"
        elif key.endswith(".fetch") and writes_into_ours(value):
            bad = f"remote.{remote}.fetch {value} writes into {_OURS}*"
        else:
            continue
        out.append(Finding("share", bad + ": records fetched that way count as made here, trusted or not", True,
                           f"git config --unset-all remote.{remote}.fetch '^[+]?{_escape(value)}$' "
                           f"(git pilot share setup {remote} fetches notes safely)"))
    return out


def _escape(value: str) -> str:
    return "".join("\\" + c if c in ".*+?[](){}^$|\\" else c for c in value.lstrip("+"))


def _signing_finding(settings: Settings) -> Finding:
    from gitpilot.share.signing import SigningError, sign_payloads

    try:
        sign_payloads(settings, [b"git pilot doctor: can this clone sign?"])
    except SigningError as exc:
        return Finding("signing", f"pilot.sign is true but records cannot be signed: {exc}", True,
                       "set gpg.format ssh and user.signingkey to a usable ssh key, or unset pilot.sign")
    return Finding("signing", f"records made here are signed with {settings.signing_key} (namespace git-pilot)")


def _verify_findings(repo: Repo, trust: Trust) -> list[Finding]:
    from gitpilot.checks.engine import load_records

    verifier = trust.verifier()
    if verifier.problem is not None:
        return [Finding("trust", verifier.problem.replace("signed, but ", "pilot.trust signed: "), True,
                        "git config gpg.ssh.allowedSignersFile PATH (a file outside the work tree: "
                        'principal namespaces="git-pilot" ssh-ed25519 AAAA...)')]
    try:
        tree = repo.worktree_tree_id()
    except PilotError:
        return []
    signed = [r for r in load_records(repo, tree) if r.sig is not None]
    good = sum(1 for r in signed if verifier.why_not(r, tree) is None)
    return [Finding("trust", f"allowed signers: {verifier.signers}; {good} of {len(signed)} signed record(s) "
                             f"on the current tree verify")]


def lock_findings(repo: Repo) -> list[Finding]:
    """Ref locks left by a killed git under git pilot's refs: every later write to them fails."""
    candidates = [repo.common_dir / "packed-refs.lock"]
    for top in ("refs/notes/pilot", "refs/pilot"):
        base = repo.common_dir / top
        if base.is_dir():
            candidates += sorted(Path(d) / f for d, _, files in os.walk(base) for f in files if f.endswith(".lock"))
    now = time.time()
    out = []
    for lock in candidates:
        try:
            age = now - lock.stat().st_mtime
        except OSError:
            continue
        if age >= STALE_LOCK_SECONDS:
            out.append(Finding("notes", f"stale lock {lock} ({age:.0f} s old): git pilot cannot record there", True,
                               f"if no git is running here, remove it (rm '{lock}')"))
    return out
