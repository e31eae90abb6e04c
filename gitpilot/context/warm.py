"""The warm path: decide from index data alone whether the stored capsule is still right.

Runs on every ``git pilot capsule``, so it stays light: no pygit2, no markdown-it, no
parsing. It reads the index (``git ls-files -s``) and the stat-dirty list (``git diff-files``),
hashes only the dirty sources, computes the context fingerprint, and serves the stored capsule
when the fingerprint matches and the file on disk still has the hash its manifest recorded
(a hand-edited capsule is rebuilt). A capsule missing on disk but present in the task record
(another worktree, a cleaned git dir) is restored from the record.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitpilot import __version__
from gitpilot.context import sources
from gitpilot.context.cache import fingerprint
from gitpilot.context.result import CapsuleResult, write_files

if TYPE_CHECKING:  # pragma: no cover
    from gitpilot.config import Config
    from gitpilot.repo import Repo


@dataclass
class State:
    """Everything both paths share: options, sources as planned from the index, names."""

    root: Path
    task_text: str
    task_id: str
    config: Config
    options: sources.Options
    inventory: sources.Inventory
    sources: dict[str, sources.Source]
    fp_records: list[dict[str, Any]]
    config_rel: str
    config_blob: str
    config_bytes: int
    task_bytes: int
    version: str = __version__
    sources_at_plan: set[str] = field(default_factory=set)
    index_sig: list[int] = field(default_factory=list)
    started_ns: int = 0  # when the sources were first looked at: later mtimes are racy
    stamp_key: str = ""  # the name of the express path's stamp (of the exact task text)
    record_absent: bool = False  # the task has no record: seen when its capsule was looked for there

    @property
    def md_name(self) -> str:
        return f"capsule-{self.task_id}.md"

    @property
    def json_name(self) -> str:
        return f"capsule-{self.task_id}.json"


def options_from(cfg: Config, agent: str | None = None) -> sources.Options:
    def tup(key: str) -> tuple[str, ...]:
        return tuple(str(x) for x in cfg.get(key))

    return sources.Options(
        files=tup("leanloop.context.files"),
        files_configured=cfg.is_set("leanloop.context.files"),
        instruction_files=tup("leanloop.context.instruction_files"),
        rule_files=tup("leanloop.context.rule_files"),
        always_include=tup("leanloop.context.always_include"),
        always_include_headings=tup("leanloop.context.always_include_headings"),
        max_excerpt_bytes=int(cfg.get("leanloop.context.max_excerpt_bytes")),
        max_section_bytes=int(cfg.get("leanloop.context.max_section_bytes")),
        agent=agent or str(cfg.get("agent.default")),
    )


def prepare(repo: Repo, task_text: str, agent: str | None = None) -> State:
    from gitpilot import config as config_mod
    from gitpilot.context.stamp import signature, stamp_key
    from gitpilot.redact import is_credential_filename
    from gitpilot.store.tasks import task_id

    root = repo.workdir
    started_ns = time.time_ns()
    index_sig = signature(repo.git_dir / "index")  # before reading the index: a later change misses
    cfg = config_mod.load(root)
    opts = options_from(cfg, agent)
    inv = sources.inventory(repo)
    srcs = sources.plan(root, inv, opts, is_credential=is_credential_filename, roles=kept_index_roles)
    config_rel, config_blob, config_bytes = "", "", 0
    if cfg.path is not None:
        config_rel = str(Path(cfg.path).resolve().relative_to(root.resolve())).replace("\\", "/")
        data = Path(cfg.path).read_bytes()
        config_blob, config_bytes = sources.git_blob_id(data), len(data)
    records = [s.record() for s in srcs.values()]
    records.append(
        {"path": config_rel or "(no config)", "roles": ["config"], "status": "file", "blob": config_blob}
    )
    records.append({"path": "(tracked files)", "roles": ["area"], "status": "index", "blob": _tracked_digest(inv)})
    tid = task_id(task_text)
    from gitpilot.redact import redact

    # The task is quoted verbatim, except a credential in a known format: that never reaches
    # the capsule, its manifest or the task record (the id still hashes the exact text).
    return State(
        root,
        redact(task_text),
        tid,
        cfg,
        opts,
        inv,
        srcs,
        records,
        config_rel,
        config_blob,
        config_bytes,
        len(task_text.encode("utf-8")),
        sources_at_plan=set(srcs),
        index_sig=index_sig,
        started_ns=started_ns,
        stamp_key=stamp_key(task_text, agent or ""),
    )


_INDEX_ROLES = frozenset({"context", "memory", "rule", "nested"})


def kept_index_roles(inv: sources.Inventory, opts: sources.Options, memory: str) -> dict[str, list[str]]:
    """``sources.index_roles`` of the index's paths, kept on this machine for those paths
    (``<git common dir>/pilot/plan/tree-<code>``, one tree; best effort). They depend on the paths,
    the options and the code only: a new task on vercel/ai does not classify 8,066 paths again
    (~10 ms). A record for other paths, options or code, or one that does not hold together, is
    not used."""
    import blake3

    from gitpilot.context.cache import code_id
    from gitpilot.fileio import keep, read_kept

    paths = list(inv.entries)
    head = repr((opts.files, opts.files_configured, opts.rule_files, opts.instruction_files, memory))
    key = blake3.blake3((head + "\1" + "\0".join(paths)).encode("utf-8", "surrogateescape")).hexdigest()
    where = os.path.join(os.fspath(inv.repo.pilot_dir), "plan", f"tree-{code_id()[:16]}")
    got = read_kept(where)
    if isinstance(got, tuple) and len(got) == 2 and got[0] == key and isinstance(got[1], dict):
        kept: dict[str, list[str]] = got[1]
        entries = inv.entries
        if all(p in entries and type(r) is list and r and all(type(x) is str for x in r) and _INDEX_ROLES.issuperset(r)
               for p, r in kept.items()):
            return kept
    out = sources.index_roles(paths, opts, memory)
    keep(where, (key, out))
    return out


def _tracked_digest(inv: sources.Inventory) -> str:
    """blake3 over every index entry's path, mode and blob id: the task's code area is worked out
    from the tracked files (their paths, and the names found in them), so a file added, moved or
    changed in the index makes a stored capsule stale even where no context file changed. Over
    what git listed of the index, when the inventory has it (every entry's mode, blob id, stage
    and path, the same listing its entries come from: one hash of its bytes)."""
    import blake3

    if inv.listing:
        return "index:" + blake3.blake3(inv.listing).hexdigest()
    entries = inv.entries
    listing = "".join(f"{p}\0{entries[p].mode}\0{entries[p].oid}\n" for p in sorted(entries))
    return blake3.blake3(listing.encode("utf-8", "surrogateescape")).hexdigest()


def extra_records(
    state: State, paths: Iterable[str], roles: Mapping[str, Iterable[str]]
) -> list[dict[str, Any]]:
    """Sources found by reading (imports, symlink targets), re-derived from the index and stats."""
    from gitpilot.redact import is_credential_filename

    found = {path: sources.Source(path, set(roles.get(path, ())), "") for path in sorted(set(paths))}
    sources.settle(state.root, state.inventory, found, is_credential_filename)
    return [src.record() for src in found.values()]


def current_fingerprint(state: State, manifest: Mapping[str, Any]) -> str:
    extras = [str(p) for p in manifest.get("extra_sources", [])]
    roles = {
        str(r["path"]): r.get("roles", []) for r in manifest.get("sources", []) if r.get("path") in extras
    }
    return fingerprint(
        state.options.as_dict(), state.task_id, state.fp_records + extra_records(state, extras, roles)
    )


def try_reuse(repo: Repo, state: State) -> CapsuleResult | None:
    """The stored capsule when nothing it depends on changed; None to build afresh."""
    out_dir = repo.worktree_pilot_dir
    md_path, json_path = out_dir / state.md_name, out_dir / state.json_name
    try:
        manifest = json.loads(json_path.read_bytes())
        body = md_path.read_bytes()
    except (FileNotFoundError, ValueError):
        return _restore_from_record(repo, state, md_path, json_path)
    if not isinstance(manifest, dict) or manifest.get("fingerprint") != current_fingerprint(state, manifest):
        return None
    if hashlib.sha256(body).hexdigest() != manifest.get("capsule_sha256"):
        return None  # edited by hand: rebuild
    save_stamp(repo, state, manifest, body)
    return _result(state, manifest, body, md_path, json_path)


def probe_paths(state: State, extras: Iterable[str]) -> list[str]:
    """Files outside the index whose appearance or change the index cannot show."""
    probes = {p for p, s in state.sources.items() if p not in state.inventory.entries}
    probes.update(p for p in extras if p not in state.inventory.entries)
    probes.update(state.options.instruction_files)
    probes.update(sources.MEMORY_FILES)
    probes.update([".claude", sources.MEMORY_RULES_DIR])
    rules = state.root / sources.MEMORY_RULES_DIR
    if rules.is_dir():
        for dirpath, _dirs, _names in os.walk(rules):
            probes.add(os.path.relpath(dirpath, state.root).replace(os.sep, "/"))
    for entry in state.options.always_include:
        probes.add(entry.split("#", 1)[0])
    return sorted(probes)


def save_stamp(repo: Repo, state: State, manifest: Mapping[str, Any], body: bytes) -> None:
    """Write the express-path stamp for a capsule that the full check just accepted or built."""
    from gitpilot.context.stamp import write_stamp

    extras = [str(p) for p in manifest.get("extra_sources", [])]
    write_stamp(
        repo.git_dir,
        state.root,
        state.task_id,
        key=state.stamp_key,
        index_sig=state.index_sig,
        capsule=body,
        sources=set(state.sources) | set(extras),
        probes=probe_paths(state, extras),
        started_ns=state.started_ns,
        baseline_bytes=int(manifest.get("baseline_bytes", 0)),
    )


def _restore_from_record(repo: Repo, state: State, md_path: Path, json_path: Path) -> CapsuleResult | None:
    ref = f"refs/pilot/tasks/{state.task_id}"
    got = repo.cat_file_batch([f"{ref}:manifest.json", f"{ref}:capsule.md", ref])
    mbytes, body = got[0], got[1]
    state.record_absent = got[2] is None  # no record yet: writing one need not look again
    if mbytes is None or body is None:
        return None
    try:
        manifest = json.loads(mbytes)
    except ValueError:
        return None
    if manifest.get("fingerprint") != current_fingerprint(state, manifest):
        return None
    if hashlib.sha256(body).hexdigest() != manifest.get("capsule_sha256"):
        return None
    write_files(md_path, json_path, body, mbytes)
    save_stamp(repo, state, manifest, body)
    return _result(state, manifest, body, md_path, json_path)


def _result(
    state: State, manifest: dict[str, Any], body: bytes, md_path: Path, json_path: Path
) -> CapsuleResult:
    return CapsuleResult(
        body.decode("utf-8"),
        manifest,
        md_path,
        True,
        int(manifest.get("baseline_bytes", 0)),
        len(body),
        state.task_id,
        json_path,
    )
