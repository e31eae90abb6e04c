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
more than the selection, the capsule holds them all and leaves nothing out.

The capsule and its manifest go to ``<git dir>/pilot/capsule-<task>.md`` / ``.json`` and to the
task record ``refs/pilot/tasks/<task>``. ``warm.try_reuse`` serves an unchanged capsule without
parsing anything; ``runner.build_capsule`` is the entry point that tries the reuse paths first.
"""

from __future__ import annotations

import gc
import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitpilot.context import sources
from gitpilot.context.cache import CleanBlobs, code_id, fingerprint
from gitpilot.context.mandatory import (
    SKIP_STATUSES,
    Files,
    Piece,
    dir_of,
    instruction_pieces,
    is_candidate,
    mandatory_pieces,
    repeats_shown,
    whole_file,
    withhold,
)
from gitpilot.context.markdown import range_text, sha256_text
from gitpilot.context.result import CapsuleResult, write_files
from gitpilot.repo import Repo

MANIFEST_FORMAT = 1
LEFT_OUT_SHOWN = 20
LEFT_OUT_FLOOR = 0.2  # of the best score: the left-out list shows near misses above it
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
    return Prepared(srcs, files, skipped, shown, withheld, instr, aliases, mandatory, docs, found)


def _build_capsule(repo: Repo, task_text: str, state: Any, *, use_cache: bool) -> CapsuleResult:
    from gitpilot.context.select import Ranking

    opts: sources.Options = state.options
    ignored = sources.ignored_context_files_later(repo, opts)  # git lists them meanwhile
    got = prepare(repo, task_text, state, use_cache=use_cache)
    srcs, files, skipped, shown, withheld = got.srcs, got.files, got.skipped, got.shown, got.withheld
    instr, aliases, mandatory, docs = got.instr, got.aliases, got.mandatory, got.docs
    from gitpilot.context.conventions import KeptPriors

    kept = KeptPriors(repo.pilot_dir if use_cache else None)
    ranking = Ranking(docs, task_text, shown, area=got.area.scores, area_files=got.area.files, kept=kept)
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
    area_files = got.area.files
    text = _render(state, repo, srcs, files, instr, aliases, mandatory, relevant, sel, withheld, skipped, area_files)
    every = _everything(docs, files, sel, shown, withheld, len(text.encode("utf-8")) + WHOLE_CONTEXT_EXTRA)
    if every is not None:
        full = _render(
            state, repo, srcs, files, instr, aliases, mandatory, every[0], every[2], every[1], skipped, area_files
        )
        if len(full.encode("utf-8")) <= len(text.encode("utf-8")) + WHOLE_CONTEXT_EXTRA:
            # The whole context costs (about) no more than a selection from it: every file in full.
            (relevant, withheld, sel), text = every, full
    manifest = _manifest(state, srcs, files, instr, mandatory, relevant, sel, withheld, skipped, text)
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
    from gitpilot.context.doctypes import frozen_copies, is_fragment, kind_of
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
            kind = "archive" if p in frozen else kind_of(p, "nested" in srcs[p].roles)
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
    named = [p for p in inv.entries if any(p == i or p.endswith("/" + i) for i in ids)]
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

    if sum(len(files.texts[d.path].encode("utf-8")) for d in docs) > capsule_bytes:
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
    """Files that repeat another source (a symlink, a file of ``@imports`` only, the same blob),
    each with the file it repeats.

    Their text is reached through the original, so they are never candidates themselves
    (neither for keyword-mandatory nor for relevant sections). Of identical files the one shown
    in full wins, else the first by path.
    """
    out = {p: s.alias_of for p, s in srcs.items() if s.alias_of}
    for path, text in files.texts.items():
        if path in srcs and path not in out and sources.only_imports(text):
            base = dir_of(path)
            targets = [t for t in (sources.normalize(base, i) for i in sources.imports_of(text)) if t]
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
            rel = sources.normalize(base, spec)
            if rel is None or not sources.inside(root, rel):
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
            target = sources.link_target(root, path)
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


def _read_one(root: Path, src: sources.Source, files: Files, reader: sources.Reader | None = None) -> str | None:
    if src.path in files.texts:
        return files.texts[src.path]
    if src.status in SKIP_STATUSES:
        return None
    loaded = sources.read_text(root, src.path, reader)
    if loaded.text is None:
        src.status = loaded.status
        src.blob = "" if loaded.status == "outside" else src.blob
        return None
    files.texts[src.path] = loaded.text
    return loaded.text


def _read_all(root: Path, srcs: dict[str, sources.Source], files: Files,
              skipped: list[tuple[str, str]]) -> None:
    with sources.Reader(root) as reader:
        for path, src in srcs.items():
            if src.alias_of:
                continue
            if src.status not in SKIP_STATUSES and (_markdownish(path) or "always" in src.roles):
                _read_one(root, src, files, reader)
            if src.status in SKIP_STATUSES and src.status != "missing":
                skipped.append((path, _STATUS_WORDS[src.status] + (f" ({src.note})" if src.note else "")))
            elif src.status == "missing" and src.roles & {"always", "import"}:
                skipped.append((path, "named in the configuration or an import, but missing"))


_STATUS_WORDS = {
    "ignored": "ignored by git: not read",
    "credential": "named like a credential file: never opened",
    "outside": "outside the repository: refused",
    "not-utf8": "not UTF-8 text: skipped",
    "too-large": f"larger than {sources.MAX_FILE_BYTES} bytes: skipped",
    "missing": "missing",
}


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


# --- instruction files and mandatory material -------------------------------------------------


def _fence(text: str) -> str:
    longest = max((len(m.group(1)) for m in re.finditer(r"^[ \t]*(`{3,})", text, re.MULTILINE)), default=0)
    return "`" * max(4, longest + 1)


def _excerpt(p: Piece) -> str:
    fence = _fence(p.text)
    label = f"`{p.path}`" + (f" § {p.heading}" if p.heading else "")
    body = p.text if p.text.endswith(("\n", "\r")) else p.text + "\n"
    return (
        f"#### {label}\nlines {p.start}-{p.end} · sha256 {p.sha256} · {p.why}\n\n"
        f"{fence}markdown\n{body}{fence}\n\n"
    )


def _render(
    state: Any,
    repo: Repo,
    srcs: Mapping[str, sources.Source],
    files: Files,
    instr: Sequence[Piece],
    aliases: Sequence[str],
    mandatory: Sequence[Piece],
    relevant: Sequence[Piece],
    sel: Any,
    withheld: Sequence[Piece],
    skipped: Sequence[tuple[str, str]],
    area_files: Sequence[str] = (),
) -> str:
    parts = [
        f"# Context capsule\n\n<!-- git pilot {state.version} · task {state.task_id[:16]} -->\n\n"
        "Everything below is quoted exactly from its source; the line ranges and sha256 let you check it.\n\n"
    ]
    parts.append("## Task\n\n" + state.task_text + ("" if state.task_text.endswith("\n") else "\n") + "\n")
    unread = sorted({p for p, why in skipped if why.startswith(_STATUS_WORDS["not-utf8"])})
    if unread:
        # Named first, not only among the skipped files: such a file may hold a rule the agent needs.
        parts.append(
            "## Not read\n\n"
            + "".join(f"- `{p}`: not UTF-8 text, so git pilot could not quote it; open it yourself, "
                      "it may hold a rule\n" for p in unread)
            + "\n"
        )
    parts.append("## Configuration\n\n" + _config_summary(state, repo) + "\n")
    parts.append(_memory_section(srcs, files, area_files))
    parts.append("## Instruction files\n\n")
    parts.extend(f"- {a}\n" for a in aliases)
    if aliases:
        parts.append("\n")
    parts.extend(_excerpt(p) for p in instr) if instr else parts.append("None found.\n\n")
    parts.append("## Mandatory sections\n\n")
    parts.extend(_excerpt(p) for p in mandatory) if mandatory else parts.append("None.\n\n")
    parts.append("## Relevant sections\n\n")
    parts.extend(_excerpt(p) for p in relevant) if relevant else parts.append("None matched the task.\n\n")
    parts.append(_left_out_section(sel, withheld, skipped, state))
    return "".join(parts)


def _config_summary(state: Any, repo: Repo) -> str:
    cfg = state.config
    lines = []
    base = cfg.get("base_branch") or _default_branch(repo) or "(not set)"
    lines.append(f"- base branch: `{base}`")
    if cfg.checks:
        lines.append("- checks (run them with `git pilot check`):")
        lines += [f"  - `{c.name}`: `{c.run}`" for c in cfg.checks]
    else:
        lines.append("- checks: none configured")
    for title, table in _tables_named(cfg.raw, ("plan", "review")):
        flat = ", ".join(f"{k} = {json.dumps(v, ensure_ascii=False)}" for k, v in _flat(table))
        lines.append(f"- {title}: {flat or '(empty)'}")
    gates = cfg.raw.get("safety", {}).get("human_gates") if isinstance(cfg.raw.get("safety"), dict) else None
    notes = cfg.raw.get("safety", {}).get("notes") if isinstance(cfg.raw.get("safety"), dict) else None
    if gates:
        lines.append("- human gates ([safety] human_gates, verbatim):")
        lines += [f"  - {g}" for g in (gates if isinstance(gates, list) else [gates])]
    if notes:
        text = str(notes) if str(notes).endswith("\n") else f"{notes}\n"
        fence = _fence(text)
        lines.append(f"- safety notes ([safety] notes, verbatim):\n\n{fence}text\n{text}{fence}\n")
    src = {"toml": ".gitpilot.toml", "v0.4": ".autopilot/config.json"}.get(
        cfg.source, "defaults (no config file)"
    )
    lines.append(f"- from: {src}")
    from gitpilot.redact import redact

    # Commands and notes are quoted from the config; a credential in them is not.
    return str(redact("\n".join(lines) + "\n"))


def _flat(table: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """A table's values with dotted keys (``adaptive.small_rounds = 1``), nested tables included."""
    out: list[tuple[str, Any]] = []
    for key in sorted(table):
        val = table[key]
        if isinstance(val, dict):
            out += _flat(val, f"{prefix}{key}.")
        else:
            out.append((f"{prefix}{key}", val))
    return out


def _default_branch(repo: Repo) -> str | None:
    ref = repo.git_proc("symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD")
    if ref.returncode == 0 and ref.stdout.strip():
        return ref.stdout.decode().strip().split("/", 1)[-1]
    for name in ("main", "master", "trunk"):
        if repo.rev_parse(f"refs/heads/{name}") is not None:
            return name
    return None


def _tables_named(
    doc: Mapping[str, Any], words: Sequence[str], prefix: str = ""
) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for key in sorted(doc):
        val = doc[key]
        if isinstance(val, dict):
            name = f"{prefix}{key}"
            if any(w in key.lower() for w in words):
                out.append((name, val))
            else:
                out += _tables_named(val, words, name + ".")
    return out


def _memory_section(srcs: Mapping[str, sources.Source], files: Files, area_files: Sequence[str] = ()) -> str:
    """What Claude Code loads itself, by path and hash; of its path-scoped rules (``paths:``), those
    whose paths hold files of the task's area are named as applying to it (Claude Code loads
    them when it works on those files)."""
    from gitpilot.context import frontmatter

    mem = [(p, s) for p, s in srcs.items() if "memory" in s.roles]
    head = (
        "## Agent memory\n\n"
        "Claude Code loads these itself; read one only if it is missing from your context.\n\n"
    )
    if not mem:
        return head + "None.\n\n"
    rows = []
    for path, src in mem:
        if path in files.texts:
            size = len(files.texts[path].encode("utf-8"))
            extra = " (also in full below)" if "instruction" in src.roles else ""
            front = frontmatter.parse(files.lines.get(path, ()))
            if front.scoped:
                extra += f" · paths {', '.join(f'`{g}`' for g in front.scopes)}"
                if any(sources.matches(f, front.scopes) for f in area_files):
                    extra += " · **applies to the files this task concerns**"
            rows.append(f"- `{path}` · sha256 {sha256_text(files.texts[path])} · {size} bytes{extra}")
        elif src.alias_of:
            rows.append(f"- `{path}` · symlink to `{src.alias_of}`")
        elif src.status != "missing":
            rows.append(f"- `{path}` · {_STATUS_WORDS.get(src.status, src.status)}")
    return head + ("\n".join(rows) if rows else "None.") + "\n\n"


def _left_out_section(
    sel: Any, withheld: Sequence[Piece], skipped: Sequence[tuple[str, str]], state: Any
) -> str:
    parts = ["## Left out\n\n"]
    # Near misses only: a section far below the cut is noise here (the manifest lists them all).
    floor = LEFT_OUT_FLOOR * sel.best
    shown = _nested_once([x for x in sel.left_out if x.score >= floor])[:LEFT_OUT_SHOWN]
    if shown:
        parts.append("The closest sections not included (open one if you need it):\n\n")
        parts += [
            f"- `{x.path}` § {x.heading} · lines {x.start}-{x.end} · sha256 {x.sha256[:16]}\n" for x in shown
        ]
        more = sel.left_out_total - len(shown)
        if more > 0:
            parts.append(
                f"- … and {more} more matching sections, listed in `{state.json_name}` (`left_out`)\n"
            )
        parts.append("\n")
    elif getattr(sel, "complete", False):
        parts.append("Nothing: every context file is in full above.\n\n")
    else:
        parts.append("No other section matched the task.\n\n")
    if withheld:
        parts.append("Withheld (a known credential format is in the text; never copied anywhere):\n\n")
        parts += [f"- `{w.path}` § {w.heading} · lines {w.start}-{w.end} · {w.why}\n" for w in withheld]
        parts.append("\n")
    if skipped:
        parts.append("Skipped files:\n\n")
        parts += [f"- `{p}`: {why}\n" for p, why in sorted(set(skipped))]
        parts.append("\n")
    return "".join(parts)


def _nested_once(entries: Sequence[Any]) -> list[Any]:
    """The entries minus those inside, or around, a better one of the same file: a file's whole
    range and each of its subsections are one place to look, named once."""
    out: list[Any] = []
    for x in entries:
        if not any(
            y.path == x.path
            and (y.start <= x.start <= x.end <= y.end or x.start <= y.start <= y.end <= x.end)
            for y in out
        ):
            out.append(x)
    return out


# --- manifest and files -----------------------------------------------------------------------


def _piece_rec(p: Piece) -> dict[str, Any]:
    return {
        "path": p.path,
        "heading": p.heading,
        "start": p.start,
        "end": p.end,
        "sha256": p.sha256,
        "why": p.why,
    }


def _manifest(
    state: Any,
    srcs: Mapping[str, sources.Source],
    files: Files,
    instr: Sequence[Piece],
    mandatory: Sequence[Piece],
    relevant: Sequence[Piece],
    sel: Any,
    withheld: Sequence[Piece],
    skipped: Sequence[tuple[str, str]],
    text: str,
) -> dict[str, Any]:
    used = {p.path for p in (*instr, *mandatory, *relevant)}
    records = []
    for path, src in srcs.items():
        rec = src.record()
        smap = files.maps.get(path)
        if smap is not None and (
            path in used or src.roles & {"instruction", "memory", "rule", "always", "nested"}
        ):
            rec["sections"] = [
                {
                    "heading": " › ".join(smap.heading_path(s.pos)) or "(preamble)",
                    "level": s.level,
                    "start": s.start,
                    "end": s.end,
                    "sha256": s.sha256,
                }
                for s in smap.sections
                if not s.withheld
            ]
        records.append(rec)
    from gitpilot.context.warm import extra_records

    extras = sorted(p for p in srcs if p not in state.sources_at_plan)
    fp = fingerprint(
        state.options.as_dict(),
        state.task_id,
        state.fp_records + extra_records(state, extras, {p: srcs[p].roles for p in extras}),
    )
    # "Read every context file": the context files themselves (the config is not one).
    baseline = sum(len(files.texts[p].encode("utf-8")) for p in sorted(files.texts) if p in srcs)
    body = text.encode("utf-8")
    return {
        "format": MANIFEST_FORMAT,
        "version": state.version,
        "task_id": state.task_id,
        "fingerprint": fp,
        "extra_sources": extras,
        "capsule_sha256": hashlib.sha256(body).hexdigest(),
        "capsule_bytes": len(body),
        "baseline_bytes": baseline,
        "options": state.options.as_dict(),
        "config": {"path": state.config_rel, "blob": state.config_blob},
        "sources": records,
        "instructions": [_piece_rec(p) for p in instr],
        "mandatory": [_piece_rec(p) for p in mandatory],
        "relevant": [_piece_rec(p) for p in relevant],
        "left_out": [
            {
                "path": x.path,
                "heading": x.heading,
                "start": x.start,
                "end": x.end,
                "sha256": x.sha256,
                "reason": x.reason,
            }
            for x in sel.left_out
        ],
        "left_out_total": sel.left_out_total,
        "withheld": [
            {"path": w.path, "heading": w.heading, "start": w.start, "end": w.end, "why": w.why}
            for w in withheld
        ],
        "skipped": [{"path": p, "why": why} for p, why in sorted(set(skipped))],
        "parsed_files": files.parsed,
        "query": {"terms": sel.query_terms, "identifiers": sel.identifiers},
    }


def manifest_bytes(manifest: Mapping[str, Any]) -> bytes:
    return (json.dumps(manifest, sort_keys=True, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


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
    )
    from gitpilot.context.warm import save_stamp

    save_stamp(repo, state, manifest, body)
    return CapsuleResult(
        text, manifest, md_path, False, manifest["baseline_bytes"], len(body), state.task_id, json_path
    )
