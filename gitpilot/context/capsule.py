"""Assembly of the Context Capsule: a fresh build from the state ``warm.prepare`` made.

The capsule holds, in this order: the task verbatim; a summary of the configuration; the
agent's memory files listed by path and hash; the instruction files in full; the mandatory
sections (keyword-headed sections of rule files, ``always_include`` entries, ``pilot:always``
blocks, nested instruction files for the paths the task names); the relevant sections chosen
by ``select``; and what was left out, withheld or skipped. Every excerpt is the exact source
text with its path, heading, line range, sha256 and the signals that chose it. A file that
repeats another (a symlink, an ``@import``-only file, the same blob) is never a candidate
itself; a nested instruction file is taken whole when the best matches are about its directory,
and the budget its sections held is chosen again; when every candidate file in full costs no
more than the selection, the capsule holds them all and leaves nothing out. ``render`` writes
the capsule's text and its manifest from what was chosen here.

The capsule and its manifest go to ``<git dir>/pilot/capsule-<task>.md`` / ``.json`` and to the
task record ``refs/pilot/tasks/<task>``. ``warm.try_reuse`` serves an unchanged capsule without
parsing anything; ``runner.build_capsule`` is the entry point that tries the reuse paths first.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitpilot.context import safepaths, sources
from gitpilot.context.cache import CleanBlobs, code_id
from gitpilot.context.mandatory import (
    SKIP_STATUSES,
    Files,
    Piece,
    dir_of,
    instruction_pieces,
    is_candidate,
    mandatory_pieces,
    repeats_shown,
    rules_claude_would_load,
    whole_file,
    withhold,
)
from gitpilot.context.markdown import range_text
from gitpilot.context.render import STATUS_WORDS, build_manifest, manifest_bytes, render_capsule
from gitpilot.context.result import CapsuleResult, write_files
from gitpilot.repo import Repo

WHOLE_CONTEXT_EXTRA = 1024  # bytes more than the selection that showing every context file may cost


def build_from_state(repo: Repo, state: Any, *, use_cache: bool = True) -> CapsuleResult:
    """A fresh build from an already prepared state (the warm path missed)."""
    return _build(repo, state.task_text, state, use_cache=use_cache)


def _build(repo: Repo, task_text: str, state: Any, *, use_cache: bool) -> CapsuleResult:
    # Tens of thousands of small objects and no cycles: the cyclic collector only costs time here.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _build_capsule(repo, task_text, state, use_cache=use_cache)
    finally:
        if enabled:
            gc.enable()


# --- building ---------------------------------------------------------------------------------


@dataclass
class Prepared:
    """Everything the selection starts from: the sources read, what is shown whatever the task
    (instruction files, mandatory sections), the candidate documents and the task's code area."""

    srcs: dict[str, sources.Source]
    files: Files
    skipped: list[tuple[str, str]]
    shown: dict[str, list[tuple[int, int]]]
    withheld: list[Piece]
    instr: list[Piece]
    aliases: list[str]
    mandatory: list[Piece]
    docs: list[Any]
    area: Any


def prepare(repo: Repo, task_text: str, state: Any, *, use_cache: bool = True) -> Prepared:
    """Read the sources, cut the instruction files and mandatory sections, list the candidates."""
    from gitpilot.redact import contains_secret, is_credential_filename

    root: Path = state.root
    opts: sources.Options = state.options
    srcs: dict[str, sources.Source] = state.sources
    skipped: list[tuple[str, str]] = []
    files = Files()
    from gitpilot.context.area import TreeCache

    tree = TreeCache(repo.pilot_dir if use_cache else None)
    search = _start_area_search(root, state.inventory, task_text, is_credential_filename, tree)
    _expand_imports(root, state.inventory, srcs, is_credential_filename, files, skipped)
    _read_all(root, srcs, files, skipped)
    _load_maps(repo, srcs, files, contains_secret, use_cache)

    ids = _identifiers(task_text)
    shown: dict[str, list[tuple[int, int]]] = {}
    withheld: list[Piece] = []
    instr, aliases = instruction_pieces(srcs, files, opts, shown, withheld)
    copies = _copies(srcs, files, shown)
    mandatory = mandatory_pieces(root, srcs, files, opts, task_text, ids, shown, withheld, skipped, copies)
    docs = _candidates(repo, srcs, files, shown, copies, use_cache=use_cache)
    found = _area(search, state.inventory, docs, task_text, ids, tree)
    tree.save()
    if opts.agent != "claude":  # the rules Claude Code would have loaded, for an agent that does not
        mandatory += rules_claude_would_load(srcs, files, found.core, shown, withheld)
    return Prepared(srcs, files, skipped, shown, withheld, instr, aliases, mandatory, docs, found)


def _build_capsule(repo: Repo, task_text: str, state: Any, *, use_cache: bool) -> CapsuleResult:
    from gitpilot.context.select import Ranking

    opts: sources.Options = state.options
    ignored = sources.ignored_context_files_later(repo, opts)  # git lists them meanwhile
    got = prepare(repo, task_text, state, use_cache=use_cache)
    srcs, files, skipped, shown, withheld = got.srcs, got.files, got.skipped, got.shown, got.withheld
    instr, aliases, mandatory, docs = got.instr, got.aliases, got.mandatory, got.docs
    from gitpilot.context.candidates import KeptPriors

    kept = KeptPriors(repo.pilot_dir if use_cache else None)
    ranking = Ranking(docs, task_text, shown, area=got.area.scores, area_files=got.area.core, kept=kept)
    sel = ranking.choose(opts.max_excerpt_bytes, opts.max_section_bytes)
    relevant = [
        Piece(
            p.path,
            p.start,
            p.end,
            p.heading,
            "; ".join(p.signals),
            range_text(files.lines[p.path], p.start, p.end),
        )
        for p in sel.picks
    ]
    # Every candidate section withheld for a credential format is named, chosen or not: the
    # agent must know it exists and why it is not here (the ranking never sees its text).
    for d in docs:
        for sec in d.smap.sections if d.smap.any_withheld else ():
            if sec.withheld:
                withhold(d.path, d.smap, d.lines, sec, withheld)
    withheld.sort(key=lambda w: (w.path, w.start))
    for name in ignored():
        if not any(n == name for n, _ in skipped):
            skipped.append((name, "ignored by git: not read"))
    area_files = got.area.core
    text = render_capsule(state, repo, srcs, files, instr, aliases, mandatory, relevant, sel, withheld, skipped, area_files)
    every = _everything(docs, files, sel, shown, withheld, len(text.encode("utf-8")) + WHOLE_CONTEXT_EXTRA)
    if every is not None:
        full = render_capsule(
            state, repo, srcs, files, instr, aliases, mandatory, every[0], every[2], every[1], skipped, area_files
        )
        if len(full.encode("utf-8")) <= len(text.encode("utf-8")) + WHOLE_CONTEXT_EXTRA:
            # The whole context costs (about) no more than a selection from it: every file in full.
            (relevant, withheld, sel), text = every, full
    manifest = build_manifest(state, srcs, files, instr, mandatory, relevant, sel, withheld, skipped, text)
    return _write(repo, state, text, manifest)


def _candidates(
    repo: Repo,
    srcs: Mapping[str, sources.Source],
    files: Files,
    shown: Mapping[str, Sequence[tuple[int, int]]],
    copies: Mapping[str, str],
    *,
    use_cache: bool = True,
) -> list[Any]:
    """The candidate documents: each readable source that may give relevant sections, with its
    kind, front matter, whether a rule file links to it, and its (cached) term counts."""
    from gitpilot.context import frontmatter
    from gitpilot.context.candidates import KeptCandidates
    from gitpilot.context.doctypes import frozen_copies, is_fragment, kind_of, log_word
    from gitpilot.context.features import path_counts
    from gitpilot.context.links import linked_documents
    from gitpilot.context.select import Doc
    from gitpilot.context.terms import TermCache
    from gitpilot.context.text import tokens
    from gitpilot.context.treeterms import terms_for_all

    paths = [
        p
        for p, s in srcs.items()
        if p in files.maps
        and is_candidate(s)
        and p not in copies
        and not is_fragment(p)
        and not repeats_shown(p, srcs, files, shown, copies)
    ]
    pointers = {
        p: files.texts[p]
        for p, s in srcs.items()
        if p in files.texts and (s.roles & {"instruction", "nested"} or "rule" in s.roles)
    }
    linked = linked_documents(pointers, paths)
    frozen = frozen_copies(paths)
    cache = TermCache(repo.pilot_dir, code_id())
    counts = terms_for_all(cache, [
        (srcs[p].blob, files.maps[p], files.lines[p],
         srcs[p].status == "clean" and not files.maps[p].any_withheld)
        for p in paths
    ])
    kept = KeptCandidates(repo.pilot_dir if use_cache else None)
    key = kept.key([(p, srcs[p].blob, "nested" in srcs[p].roles) for p in paths])
    known = kept.get(key, len(paths))
    if known is None:
        known = []
        for p in paths:
            front = frontmatter.parse(files.lines[p])
            heads = [sec.title for sec in files.maps[p].sections if sec.level] if log_word(p) else None
            kind = "archive" if p in frozen else kind_of(p, "nested" in srcs[p].roles, heads)
            known.append((kind, front, tuple(tokens(front.text)), path_counts(p)))
        kept.put(key, known)
    docs = []
    for p, terms, (kind, front, front_tokens, path_bag) in zip(paths, counts, known, strict=True):
        src, smap, lines = srcs[p], files.maps[p], files.lines[p]
        docs.append(
            Doc(
                p,
                smap,
                lines,
                rule="rule" in src.roles,
                nested="nested" in src.roles,
                kind=kind,
                linked=p in linked,
                front=front,
                terms=terms,
                text=files.texts[p],
                blob=src.blob,
                front_tokens=front_tokens,
                path_bag=path_bag,
            )
        )
    return docs


def _start_area_search(
    root: Path, inv: sources.Inventory, task: str, cred: Callable[[str], bool], tree: Any
) -> Any:
    """The search for the task's names in the code, started before the documents are read."""
    from gitpilot.context import area

    links = [p for p, e in inv.entries.items() if e.mode == "120000"]
    code = tree.code_files(list(inv.entries), cred, links)
    return area.start(root, code, _task_ids(task), tree.within()), code


def _area(
    search: Any, inv: sources.Inventory, docs: Sequence[Any], task: str, ids: Sequence[str], tree: Any
) -> Any:
    from gitpilot.context import area
    from gitpilot.context.query import query_weights

    proc, code = search
    found = proc.result()
    dirs = area.doc_dirs(d.path for d in docs)
    exact, tails = set(ids), tuple("/" + i for i in ids)
    named = [p for p in inv.entries if p in exact or p.endswith(tails)] if ids else []
    query = query_weights(task)
    return area.scores(tree.word_bags(code, dirs), query, found, named, area.common_words(query, docs))


def _task_ids(task: str) -> list[Any]:
    from gitpilot.context.text import identifiers

    return identifiers(task)


def _everything(
    docs: Sequence[Any],
    files: Files,
    sel: Any,
    shown: Mapping[str, Sequence[tuple[int, int]]],
    withheld: Sequence[Piece],
    capsule_bytes: int,
) -> tuple[list[Piece], list[Piece], Any] | None:
    """Every candidate file in full (minus what is shown already), nothing left out: the capsule
    for a repository whose whole context is small (a selection and its left-out list can cost
    more than the files). Files with chosen excerpts come first, in the selection's order."""
    from dataclasses import replace

    total = 0
    for d in docs:  # (added up only until they exceed it: on a large tree, after a few files)
        total += len(files.texts[d.path].encode("utf-8"))
        if total > capsule_bytes:
            return None  # the files alone exceed the selective capsule
    order: dict[str, int] = {}
    for i, pick in enumerate(sel.picks):
        order.setdefault(pick.path, i)
    paths = sorted((d.path for d in docs), key=lambda p: (order.get(p, len(order)), p))
    seen = {k: list(v) for k, v in shown.items()}
    held = list(withheld)
    pieces = [pc for p in paths for pc in whole_file(p, files, "", "context file, in full", seen, held)]
    return pieces, held, replace(sel, picks=[], left_out=[], left_out_total=0, complete=True)


def _copies(
    srcs: Mapping[str, sources.Source], files: Files, shown: Mapping[str, Sequence[tuple[int, int]]]
) -> dict[str, str]:
    """Files that repeat another source (a symlink, a file of ``@imports`` only, a site's page
    that only includes another file, the same blob), each with the file it repeats.

    Their text is reached through the original, so they are never candidates themselves
    (neither for keyword-mandatory nor for relevant sections). Of identical files the one shown
    in full wins, else the first by path.
    """
    out = {p: s.alias_of for p, s in srcs.items() if s.alias_of}
    for path, text in files.texts.items():
        if path in srcs and path not in out and sources.only_imports(text):
            base = dir_of(path)
            targets = [t for t in (safepaths.normalize(base, i) for i in sources.imports_of(text)) if t]
            out[path] = targets[0] if targets else ""
        elif path in srcs and path not in out and (included := sources.snippet_targets(text)) is not None:
            targets = [t for t in (safepaths.normalize("", i) for i in included) if t]
            out[path] = targets[0] if targets else ""
    first: dict[str, str] = {}
    for path in sorted(srcs, key=lambda p: (p not in shown, p)):
        blob = srcs[path].blob
        if path in out or path not in files.texts or not blob:
            continue
        if blob in first:
            out[path] = first[blob]
        else:
            first[blob] = path
    return out


def _expand_imports(
    root: Path,
    inv: sources.Inventory,
    srcs: dict[str, sources.Source],
    cred: Callable[[str], bool],
    files: Files,
    skipped: list[tuple[str, str]],
) -> None:
    """Follow ``@imports`` of memory and instruction files (depth 5), adding them as sources."""
    queue = [(p, 0) for p, s in srcs.items() if s.roles & {"memory", "instruction"}]
    seen = {p for p, _ in queue}
    while queue:
        path, depth = queue.pop(0)
        src = srcs[path]
        if src.status in SKIP_STATUSES or depth >= sources.IMPORT_DEPTH:
            continue
        loaded = _read_one(root, src, files)
        if loaded is None:
            continue
        base = path.rsplit("/", 1)[0] if "/" in path else ""
        for spec in sources.imports_of(loaded):
            rel = safepaths.normalize(base, spec)
            if rel is None or not safepaths.inside(root, rel):
                skipped.append((spec, f"imported by {path}: outside the repository, refused"))
                continue
            if rel not in srcs:
                srcs[rel] = sources.Source(rel, {"import", "memory", "rule"}, "")
                sources.settle(root, inv, {rel: srcs[rel]}, cred)
            else:
                srcs[rel].roles.update({"import", "memory", "rule"})
            if rel not in seen and srcs[rel].status not in SKIP_STATUSES and _markdownish(rel):
                seen.add(rel)
                queue.append((rel, depth + 1))
    for path in sorted(srcs):
        src = srcs[path]
        target: str | None = None
        ent = inv.entries.get(path)
        if src.status == "clean" and ent is not None and ent.mode in ("100644", "100755"):
            pass  # git says it is the regular file the index holds (a link there would be a change)
        elif src.status not in ("credential", "outside"):
            target = safepaths.link_target(root, path)
        if target == "":
            src.status = "outside"
            src.note = "a symlink that leaves the repository"
        elif target:
            src.alias_of = target
            if target not in srcs:
                srcs[target] = sources.Source(target, set(), "")
                sources.settle(root, inv, {target: srcs[target]}, cred)
            srcs[target].roles.update(r for r in src.roles if r in ("instruction", "memory", "rule"))


def _markdownish(path: str) -> bool:
    return path.lower().endswith((".md", ".mdx", ".markdown", ".txt"))


def _read_one(root: Path, src: sources.Source, files: Files, reader: safepaths.Reader | None = None) -> str | None:
    if src.path in files.texts:
        return files.texts[src.path]
    if src.status in SKIP_STATUSES:
        return None
    loaded = safepaths.read_text(root, src.path, reader)
    if loaded.text is None:
        src.status = loaded.status
        src.blob = "" if loaded.status == "outside" else src.blob
        return None
    files.texts[src.path] = loaded.text
    return loaded.text


def _read_all(root: Path, srcs: dict[str, sources.Source], files: Files,
              skipped: list[tuple[str, str]]) -> None:
    with safepaths.Reader(root) as reader:
        for path, src in srcs.items():
            if src.alias_of:
                continue
            if src.status not in SKIP_STATUSES and (_markdownish(path) or "always" in src.roles):
                _read_one(root, src, files, reader)
            if src.status in SKIP_STATUSES and src.status != "missing":
                skipped.append((path, STATUS_WORDS[src.status] + (f" ({src.note})" if src.note else "")))
            elif src.status == "missing" and src.roles & {"always", "import"}:
                skipped.append((path, "named in the configuration or an import, but missing"))


def _load_maps(
    repo: Repo,
    srcs: Mapping[str, sources.Source],
    files: Files,
    contains_secret: Callable[[str], bool],
    use_cache: bool,
) -> None:
    from gitpilot.context import markdown
    from gitpilot.context.cache import load_maps
    from gitpilot.context.lines import Lines

    for path, text in files.texts.items():
        files.lines[path] = Lines(text)  # (split when first read: most files' lines never are)
    md = {
        p: (srcs[p].blob, t, files.lines[p]) for p, t in files.texts.items() if _markdownish(p) or p in srcs
    }
    from gitpilot.context.parallel import map_all

    known = CleanBlobs(repo.pilot_dir if use_cache else None)
    unknown = [p for p, v in md.items() if not known.holds(v[0])]
    # (scanned side by side on a cold build: each verdict depends on its file alone)
    secret = dict(zip(unknown, map_all(lambda p: contains_secret(md[p][1]), unknown, _flag, _unflag), strict=True))
    clean = {p: v for p, v in md.items() if not secret.get(p, False)}
    known.add(v[0] for v in clean.values())
    maps, parsed = load_maps(
        repo, clean, lambda text, lines: markdown.parse(text, None, list(lines)), use_cache=use_cache
    )
    for path in sorted(set(md) - set(clean)):
        # A file with a credential in it: parsed fresh so the withheld flags are current.
        maps[path] = markdown.parse(md[path][1], contains_secret, list(md[path][2]))
        parsed += 1
    files.maps = maps
    files.parsed = parsed


def _flag(value: bool) -> bytes:
    return b"1" if value else b"0"


def _unflag(data: bytes) -> bool | None:
    return {b"1": True, b"0": False}.get(data)


def _identifiers(task: str) -> list[str]:
    from gitpilot.context.text import identifiers, named_paths

    return named_paths(identifiers(task))


def _write(repo: Repo, state: Any, text: str, manifest: dict[str, Any]) -> CapsuleResult:
    from gitpilot.store.tasks import TaskStore

    body = text.encode("utf-8")
    mbytes = manifest_bytes(manifest)
    out_dir = repo.worktree_pilot_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    md_path, json_path = out_dir / state.md_name, out_dir / state.json_name
    write_files(md_path, json_path, body, mbytes)
    TaskStore(repo).write(
        state.task_id,
        {"capsule.md": body, "manifest.json": mbytes, "task.md": state.task_text.encode("utf-8")},
        "pilot: capsule",
        absent=state.record_absent,
    )
    from gitpilot.context.warm import save_stamp

    save_stamp(repo, state, manifest, body)
    return CapsuleResult(
        text, manifest, md_path, False, manifest["baseline_bytes"], len(body), state.task_id, json_path
    )
