"""The pre-push hook: review budgets of the pushed commits, the check gate, the notes push.

The gate (``[share] gate = ["tests"]``) runs the named checks on each pushed tree with
reuse: a tree that already passed here or on a trusted remote costs one notes lookup. A
tree that is not the working tree's is checked in a temporary detached worktree, so the
gate tests exactly what is pushed, never uncommitted edits. ``[share] push = true`` then
pushes the check notes to the same remote (``git push --no-verify``, so this hook does not
run again). Pushes of notes themselves and of deletions are let through untouched.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from gitpilot import output
from gitpilot.config import CheckSpec, Config, load
from gitpilot.errors import PilotError
from gitpilot.repo import ZERO_OID, Repo


@dataclass(frozen=True)
class Update:
    """One line of pre-push's stdin: a ref about to be pushed."""

    local_ref: str
    local_sha: str
    remote_ref: str
    remote_sha: str


def parse_updates(data: bytes) -> list[Update]:
    updates = []
    for line in data.decode("utf-8", "surrogateescape").splitlines():
        parts = line.split(" ")
        if len(parts) == 4 and all(len(p) == 40 for p in (parts[1], parts[3])):
            updates.append(Update(*parts))
    return updates


def run_pre_push(cwd: Path, args: Sequence[str], stdin: bytes) -> int:
    """0 lets the push go on; 1 refuses it (a gated check failed)."""
    remote = args[0] if args else ""
    updates = [u for u in parse_updates(stdin)
               if u.local_sha != ZERO_OID and not u.remote_ref.startswith("refs/notes/")]
    if not updates:
        return 0
    repo = Repo.discover(cwd)
    try:
        cfg = load(repo.workdir)
    except PilotError as exc:
        output.err(f"git pilot: pre-push: {exc}; the push is not gated")
        return 0
    from gitpilot.hooks import jobs

    for sha in sorted({u.local_sha for u in updates}):
        try:
            jobs.record_budget(repo, sha)
        except Exception:  # a budget that cannot be recorded never blocks a push; the log says why
            jobs.log_exception(repo, "pre-push")
            output.err(f"warning: pre-push: could not record the review budget of {sha[:12]} "
                       f"(see {repo.pilot_dir / 'logs' / 'hooks.log'})")
    gate = list(cfg.get("share.gate"))
    if gate and gate_updates(repo, cfg, updates, gate) != 0:
        return 1
    if cfg.get("share.push"):
        share_notes(repo, remote)
    return 0


def gate_updates(repo: Repo, cfg: Config, updates: Sequence[Update], names: Sequence[str]) -> int:
    try:
        specs = [cfg.check(n) for n in names]
    except PilotError as exc:  # a misnamed gate refuses the push rather than letting everything through
        raise PilotError(f"pre-push gate ([share] gate): {exc}") from exc
    done: set[str] = set()
    for u in updates:
        tree = repo.rev_parse(f"{u.local_sha}^{{tree}}")
        if tree is None or tree in done:
            continue
        done.add(tree)
        where = f"{_short_ref(u.local_ref)} ({u.local_sha[:12]})"
        pending = pending_checks(repo, cfg, specs, tree)
        if not pending:
            output.err(f"pre-push gate: {', '.join(names)} already passed on {where}; not run again")
            continue
        output.err(f"pre-push gate: running {', '.join(s.name for s in pending)} on {where}")
        failed = _run_on_tree(repo, u.local_sha, tree, pending)
        if failed is not None:
            output.err(f"git pilot: push refused: {failed} failed on {where} "
                       "(fix it, or skip the gate once with git push --no-verify)")
            return 1
    return 0


def pending_checks(repo: Repo, cfg: Config, specs: Sequence[CheckSpec], tree: str) -> list[CheckSpec]:
    """The gated checks that have no reusable pass on ``tree`` (here or from a trusted remote)."""
    from gitpilot.checks.engine import reused_outcomes
    from gitpilot.checks.scope import tree_snapshot

    snap = tree_snapshot(repo, tree, specs)  # a scoped check's pass sits on the tree of its files
    return [s for s in specs if reused_outcomes(repo, cfg, [s], snap) is None]


def _run_on_tree(repo: Repo, commit: str, tree: str, specs: Sequence[CheckSpec]) -> str | None:
    """Run ``specs`` on exactly ``tree``; the name of the first that fails, or None."""
    from gitpilot.checks.engine import CheckOptions
    from gitpilot.checks.report import run_checks

    with _checkout_of(repo, commit, tree) as cwd:
        for spec in specs:
            if run_checks(cwd, CheckOptions(only=spec.name)) != 0:
                return spec.name
    return None


@contextmanager
def _checkout_of(repo: Repo, commit: str, tree: str) -> Iterator[Path]:
    """The working tree when it holds exactly ``tree``, else a temporary detached worktree."""
    if repo.worktree_tree_id() == tree:
        yield repo.workdir
        return
    base = repo.pilot_dir / "tmp"
    base.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix="gate-", dir=base))
    try:
        # No hooks in the temporary worktree: neither ours nor the user's post-checkout.
        repo.git("-c", "core.hooksPath=/dev/null", "worktree", "add", "--quiet", "--detach", str(path),
                 commit, env={"GIT_PILOT_SKIP_HOOKS": "1"})
        yield path
    finally:
        repo.git_proc("worktree", "remove", "--force", str(path))
        shutil.rmtree(path, ignore_errors=True)
        repo.git_proc("worktree", "prune")


def share_notes(repo: Repo, remote: str) -> None:
    """Push the check notes along to ``remote``; a failure warns and never blocks the push."""
    from gitpilot.share import sync

    if remote not in sync.remotes(repo):
        output.err(f"pre-push: not sharing check notes: {remote or 'this target'} is not a named remote")
        return
    try:
        result = sync.push(repo, sync.resolve_remote(repo, remote, "push"))
    except PilotError as exc:
        output.err(f"warning: pre-push: check notes not shared: {exc}")
        return
    if result.pulled.skipped:
        output.err(f"warning: skipped {result.pulled.skipped} malformed or unknown check record line(s) "
                   f"from {remote}")
    if result.commit is not None:
        output.err(f"pre-push: shared {result.lines} check record(s) with {remote}")


def _short_ref(ref: str) -> str:
    for prefix in ("refs/heads/", "refs/tags/"):
        if ref.startswith(prefix):
            return ref[len(prefix):]
    return ref
