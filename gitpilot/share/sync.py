"""``share setup|pull|push``: the fetch refspec, the validated line-wise merge, the leased push.

See the package docstring for why the design is safe. Everything here is stock git
plus ``NotesStore`` writes (one commit, compare-and-swap); nothing is forced or pruned.
"""

from __future__ import annotations

import json
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from gitpilot.checks.records import CHECKS_REF, parse_line
from gitpilot.errors import PilotError
from gitpilot.fileio import atomic_write
from gitpilot.gitrun import first_line
from gitpilot.procs import alive
from gitpilot.repo import Repo
from gitpilot.share.bounds import (
    MAX_LINES_PER_PULL,
    MAX_LINES_PER_TREE,
    Dropped,
    choose_notes,
    chunks,
    recent_trees,
)
from gitpilot.share.validate import Accepted, accept_line, valid_remote_name
from gitpilot.store.notes import Mutation, NotesStore, union_lines

# Each lost race means another clone landed: with eight pushing at once the last one needs
# about eight attempts, so this leaves room for bursts well past that.
PUSH_ATTEMPTS = 40
_RETRYABLE = ("stale info", "fetch first", "non-fast-forward", "cannot lock", "failed to lock",
              "failed to update ref", "incorrect old value", "unable to lock", "atomic transaction failed")
# Commands git runs for us must not start maintenance in the middle of a hook.
_QUIET_GIT = ("-c", "gc.auto=0", "-c", "maintenance.auto=false")


def fetch_refspec(remote: str) -> str:
    return f"+refs/notes/pilot/*:refs/notes/remotes/{remote}/pilot/*"


def tracking_ref(remote: str) -> str:
    return f"refs/notes/remotes/{remote}/pilot/checks"


@dataclass(frozen=True)
class PullResult:
    remote: str
    present: bool  # the remote has check notes at all
    objects: int = 0  # trees whose local notes gained lines
    added: int = 0  # lines added to the local notes
    skipped: int = 0  # remote lines refused (malformed, unknown, unsafe)
    dropped: Dropped = field(default_factory=Dropped)  # valid notes and lines past the bounds
    lines: tuple[tuple[str, bytes], ...] = ()  # (annotated object, line) of every line added


@dataclass(frozen=True)
class PushResult:
    remote: str
    pulled: PullResult
    objects: int = 0  # trees whose records were sent
    lines: int = 0  # record lines sent
    attempts: int = 1
    commit: str | None = None  # the remote's new notes tip, when something was pushed
    notes: list[str] = field(default_factory=list)


# -- remotes -------------------------------------------------------------------------------
def remotes(repo: Repo) -> list[str]:
    out = repo.git("remote").decode("utf-8", "surrogateescape")
    return sorted(r for r in out.split() if r)


def resolve_remote(repo: Repo, name: str | None, verb: str = "pull") -> str:
    """The remote to share with: ``name``, else the branch's upstream remote, origin, or the only one
    (``verb``: the ``git pilot share`` command asking, named in the hint when there is none)."""
    known = remotes(repo)
    if name is None:
        branch = repo.current_branch()
        upstream = repo.config_get(f"branch.{branch}.remote") if branch else None
        if upstream and upstream in known:
            name = upstream
        elif "origin" in known:
            name = "origin"
        elif len(known) == 1:
            name = known[0]
        else:
            raise PilotError(f"no remote to share with: name one (git pilot share {verb} REMOTE)")
    if name not in known:
        listed = ", ".join(known) or "none"
        raise PilotError(f"no remote named {name!r} (remotes: {listed})")
    if not valid_remote_name(name):
        raise PilotError(f"remote name {name!r} is not supported by git pilot share "
                         "(use letters, digits, . _ -)")
    return name


# -- setup ---------------------------------------------------------------------------------
def setup(repo: Repo, remote: str) -> bool:
    """Add the notes fetch refspec to ``remote.<remote>.fetch``; False if it was there already.

    Never touches ``remote.<remote>.push``: a push refspec there would replace git's default
    push, and a plain ``git push`` would then push only notes.
    """
    key = f"remote.{remote}.fetch"
    spec = fetch_refspec(remote)
    have = repo.git_proc("config", "--get-all", key).stdout.decode("utf-8", "surrogateescape").splitlines()
    if spec in have:
        return False
    repo.git("config", "--add", key, spec)
    return True


# -- pull ----------------------------------------------------------------------------------
def fetch(repo: Repo, remote: str) -> None:
    """Fetch the remote's ``refs/notes/pilot/*`` into ``refs/notes/remotes/<remote>/pilot/*``."""
    # --prune: a notes ref deleted on the remote must not live on here as a stale copy (a push
    # leased on that copy could never land).
    args = [*_QUIET_GIT, "fetch", "--quiet", "--prune", "--no-tags", "--no-write-fetch-head",
            "--recurse-submodules=no", remote, fetch_refspec(remote)]
    for attempt in range(5):
        proc = repo.git_proc(*args, env={"GIT_TERMINAL_PROMPT": "0"})
        if proc.returncode == 0:
            return
        msg = first_line(proc.stderr)
        if not any(word in msg for word in ("cannot lock", "unable to lock", "File exists")):
            why = msg or f"git fetch exit {proc.returncode}"
            raise PilotError(f"cannot fetch notes from {remote}: {why}")
        _backoff(attempt)  # a concurrent fetch holds the tracking ref's lock
    raise PilotError(f"cannot fetch notes from {remote}: another fetch keeps the refs locked, try again")


def pull(repo: Repo, remote: str) -> PullResult:
    fetch(repo, remote)
    return merge_remote(repo, remote)


def merge_remote(repo: Repo, remote: str) -> PullResult:
    """Merge the fetched copy of ``remote``'s check notes into ours: validated, tagged, bounded."""
    tip = _remote_tip(repo, remote)
    if tip is None:
        return PullResult(remote, present=False)
    dropped = Dropped()
    index = _notes_to_merge(repo, remote, tip)
    chosen = choose_notes({o: size for o, (_, _, size) in index.items()}, recent_trees(repo), dropped)
    incoming, skipped = _accepted_lines(repo, remote, tip, chosen, index, dropped)
    added: dict[str, list[bytes]] = {}
    capped: dict[str, int] = {}
    tag = b'"remote":' + json.dumps(remote).encode()

    def mutation(oid: str, accepted: list[Accepted]) -> Mutation:
        def apply(old: bytes | None) -> bytes | None:
            have = set(old.split(b"\n")) if old else set()
            room = MAX_LINES_PER_TREE - sum(1 for ln in have if tag in ln)
            new = sorted({a.tagged for a in accepted if a.tagged not in have and a.untagged not in have})
            newest = sorted(new, key=lambda ln: (_time_of(accepted, ln), ln), reverse=True)
            added[oid] = sorted(newest[: max(room, 0)])
            capped[oid] = len(new) - len(added[oid])  # recomputed if the write is retried
            return union_lines(old, b"\n".join(added[oid])) if added[oid] else old

        return apply

    mutations = {oid: mutation(oid, acc) for oid, acc in incoming.items()}
    if mutations:
        NotesStore(repo, CHECKS_REF).update(mutations, f"git pilot: merge check notes from {remote}")
    _write_marker(repo, remote, tip, repo.rev_parse(CHECKS_REF))
    dropped.lines += sum(capped.values())
    changed = sorted(o for o, lines in added.items() if lines)
    records = tuple((o, ln) for o in changed for ln in added[o])
    return PullResult(remote, True, objects=len(changed), added=len(records), skipped=skipped,
                      dropped=dropped, lines=records)


def _time_of(accepted: list[Accepted], line: bytes) -> str:
    for a in accepted:
        if a.tagged == line:
            return a.time
    return ""


def _remote_tip(repo: Repo, remote: str) -> str | None:
    """The fetched notes commit of ``remote``; None when it has none; an error when its ref is not a commit."""
    ref = tracking_ref(remote)
    if repo.rev_parse(ref) is None:
        return None
    tip = repo.rev_parse(f"{ref}^{{commit}}")
    if tip is None:
        raise PilotError(f"{remote}'s {CHECKS_REF} does not point at a commit, so its check notes cannot be "
                         f"merged; nothing was changed here (fix or delete that ref on {remote})")
    return tip


def _accepted_lines(
    repo: Repo, remote: str, tip: str, chosen: list[str], index: dict[str, tuple[str, str, int]],
    dropped: Dropped,
) -> tuple[dict[str, list[Accepted]], int]:
    """Validated lines per annotated object, the newest first (MAX_LINES_PER_PULL in all, counting
    at most MAX_LINES_PER_TREE a tree), and how many lines were refused as invalid."""
    incoming: dict[str, list[Accepted]] = {}
    skipped = total = 0
    sizes = {o: index[o][2] for o in chosen}
    for run in chunks(chosen, sizes):
        if total >= MAX_LINES_PER_PULL:
            dropped.notes += len(run)
            continue
        bodies = repo.cat_file_batch([index[o][1] for o in run])
        for oid, body in zip(run, bodies, strict=True):
            if total >= MAX_LINES_PER_PULL:
                dropped.notes += 1
                continue
            good = []
            for line in (body or b"").split(b"\n"):
                if not line.strip():
                    continue
                acc = accept_line(line, remote)
                if acc is None:
                    skipped += 1
                else:
                    good.append(acc)
            unique = {a.tagged: a for a in good}
            newest = sorted(unique.values(), key=lambda a: (a.time, a.tagged), reverse=True)
            # The tree bound is applied at the merge, where the lines already there are known.
            keep = newest[: MAX_LINES_PER_PULL - total]
            dropped.lines += len(newest) - len(keep)
            if keep:
                incoming[oid] = keep
                total += min(len(keep), MAX_LINES_PER_TREE)
    return incoming, skipped


# -- which notes changed since the last merge -------------------------------------------------
def note_index(repo: Repo, commit: str) -> dict[str, tuple[str, str]]:
    """Annotated object id -> (path, blob id) of its note in ``commit``'s tree, any fan-out."""
    return {o: (path, blob) for o, (path, blob, _) in _note_listing(repo, commit, sizes=False).items()}


def _note_listing(repo: Repo, commit: str, sizes: bool) -> dict[str, tuple[str, str, int]]:
    """Annotated object id -> (path, blob id, size or -1) of every note in ``commit``'s tree."""
    out = repo.git("ls-tree", "-r", "-z", "--full-tree", *(["--long"] if sizes else []), commit)
    result: dict[str, tuple[str, str, int]] = {}
    for rec in out.split(b"\0"):
        meta, _, raw = rec.partition(b"\t")
        parts = meta.split()
        if len(parts) != (4 if sizes else 3) or parts[1] != b"blob":
            continue
        path = raw.decode("ascii", "replace")
        oid = path.replace("/", "")
        if len(oid) == 40 and all(c in "0123456789abcdef" for c in oid):
            result[oid] = (path, parts[2].decode(), int(parts[3]) if sizes else -1)
    return result


def _notes_to_merge(repo: Repo, remote: str, tip: str) -> dict[str, tuple[str, str, int]]:
    """The notes of ``tip`` that may hold lines we have not merged yet, with their sizes.

    After a merge we remember (remote tip, local tip). If our notes still descend from that
    local tip, only the notes that changed between the two remote tips need reading;
    otherwise (first pull, or the local notes were replaced) every note is read.
    """
    marker = _read_marker(repo, remote)
    local = repo.rev_parse(CHECKS_REF)
    if marker is not None and marker == (tip, local):
        return {}
    index = _note_listing(repo, tip, sizes=True)
    if marker is None or local is None:
        return index
    old_remote, old_local = marker
    if not _is_ancestor(repo, old_local, local) or repo.rev_parse(f"{old_remote}^{{commit}}") is None:
        return index
    before = note_index(repo, old_remote)
    return {o: entry for o, entry in index.items() if before.get(o, ("", ""))[1] != entry[1]}


def _is_ancestor(repo: Repo, old: str, new: str) -> bool:
    return repo.git_proc("merge-base", "--is-ancestor", old, new).returncode == 0


def _marker_path(repo: Repo, remote: str) -> Path:
    return repo.pilot_dir / "share" / f"{remote}.merged"


def _read_marker(repo: Repo, remote: str) -> tuple[str, str] | None:
    try:
        parts = _marker_path(repo, remote).read_text("ascii").split()
    except (OSError, UnicodeDecodeError):
        return None
    if len(parts) != 2 or not all(len(p) == 40 for p in parts):
        return None
    return parts[0], parts[1]


def _write_marker(repo: Repo, remote: str, remote_tip: str, local_tip: str | None) -> None:
    if local_tip is None:
        return
    path = _marker_path(repo, remote)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, f"{remote_tip} {local_tip}\n".encode("ascii"))  # a shortcut (lost: every note is read): not synced


# -- push ----------------------------------------------------------------------------------
def push(repo: Repo, remote: str, attempts: int = PUSH_ATTEMPTS) -> PushResult:
    """Pull and merge, then push the passes recorded here on top of the remote's notes."""
    pulled = PullResult(remote, present=False)
    for attempt in range(1, attempts + 1):
        pulled = pull(repo, remote)
        base = _remote_tip(repo, remote)
        missing = local_lines_missing(repo, base)
        if not missing:
            return PushResult(remote, pulled, attempts=attempt)
        commit = _commit_on(repo, base, missing, remote)
        outcome = _push_commit(repo, remote, commit, base)
        if outcome is None:
            repo.update_ref(tracking_ref(remote), commit, base, "git pilot share push")
            lines = sum(len(v) for v in missing.values())
            return PushResult(remote, pulled, objects=len(missing), lines=lines, attempts=attempt,
                              commit=commit)
        if attempt < attempts:
            _backoff(attempt)
    raise PilotError(f"could not push check notes to {remote}: other pushes kept landing first "
                     f"({attempts} attempts); try again")


def local_lines_missing(repo: Repo, base: str | None) -> dict[str, list[bytes]]:
    """Lines recorded here (no ``remote`` tag) that ``base``'s notes do not hold, per object."""
    local_tip = repo.rev_parse(f"{CHECKS_REF}^{{commit}}")
    if local_tip is None:
        return {}
    mine = {o: b for o, (_, b) in note_index(repo, local_tip).items()}
    theirs = {o: b for o, (_, b) in note_index(repo, base).items()} if base else {}
    oids = sorted(o for o, blob in mine.items() if theirs.get(o) != blob)
    if not oids:
        return {}
    specs = [mine[o] for o in oids] + [theirs.get(o, "0" * 40) for o in oids]
    bodies = repo.cat_file_batch(specs)
    missing: dict[str, list[bytes]] = {}
    for i, oid in enumerate(oids):
        ours, remote_body = bodies[i] or b"", bodies[len(oids) + i] or b""
        have = set(remote_body.split(b"\n"))
        lines = sorted({ln for ln in ours.split(b"\n") if ln.strip() and ln not in have and _is_local(ln)})
        if lines:
            missing[oid] = lines
    return missing


def _is_local(line: bytes) -> bool:
    rec = parse_line(line)
    return rec is not None and rec.remote is None


_SCRATCH = "refs/notes/pilot-tmp/share-"


def _commit_on(repo: Repo, base: str | None, lines: dict[str, list[bytes]], remote: str) -> str:
    """A notes commit whose parent is ``base`` (the remote's tip) with ``lines`` added."""
    _drop_stale_scratch(repo)
    scratch = f"{_SCRATCH}{os.getpid()}-{random.randrange(1 << 30):08x}"
    try:
        if base is not None and not repo.update_ref(scratch, base, None, "git pilot share: scratch"):
            raise PilotError(f"cannot create the scratch ref {scratch}")
        count = sum(len(v) for v in lines.values())
        NotesStore(repo, scratch).add_lines(lines, f"git pilot: share {count} check record(s) to {remote}")
        commit = repo.rev_parse(scratch)
        if commit is None:
            raise PilotError(f"cannot build the notes commit to push to {remote}")
        return commit
    finally:
        repo.git_proc("update-ref", "-d", scratch)


def _drop_stale_scratch(repo: Repo) -> None:
    """Delete scratch refs left by a push that was killed (their process is gone)."""
    out = repo.git("for-each-ref", "--format=%(refname)", _SCRATCH.rsplit("/", 1)[0] + "/")
    for ref in out.decode("utf-8", "replace").split():
        pid = ref[len(_SCRATCH):].split("-")[0]
        if ref.startswith(_SCRATCH) and pid.isdigit() and not alive(int(pid)):
            repo.git_proc("update-ref", "-d", ref)




def _push_commit(repo: Repo, remote: str, commit: str, base: str | None) -> str | None:
    """Push ``commit`` to the remote's checks ref if it still holds ``base``; None on success.

    Returns git's reason when another pusher won the race (retry); raises on other errors.
    """
    lease = f"--force-with-lease={CHECKS_REF}:{base or ''}"
    # --no-verify and GIT_PILOT_SKIP_HOOKS: this push may run inside our own pre-push hook.
    env = {"GIT_PILOT_SKIP_HOOKS": "1", "GIT_TERMINAL_PROMPT": "0"}
    proc = repo.git_proc(*_QUIET_GIT, "push", "--porcelain", "--no-verify", lease, remote,
                         f"{commit}:{CHECKS_REF}", env=env)
    text = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    if proc.returncode == 0:
        return None
    reasons = [ln for ln in text.splitlines() if ln.startswith("!") or "rejected" in ln or "lock" in ln]
    if any(word in ln for ln in reasons for word in _RETRYABLE):
        return reasons[0]
    why = first_line(proc.stderr) or text.strip() or "git push failed"
    raise PilotError(f"cannot push check notes to {remote}: {why}")


def _backoff(attempt: int) -> None:
    # Exponential with full jitter: pushers that collided spread out instead of colliding again.
    time.sleep(random.uniform(0.05, min(2.0, 0.1 * 2 ** min(attempt, 5))))

