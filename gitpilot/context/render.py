"""The Context Capsule's text and its manifest, from what ``capsule`` chose.

``render_capsule`` writes the capsule in its fixed order (the task, the configuration, the agent's
memory files by path and hash, the instruction files, the mandatory and the relevant sections as
exact excerpts with path, lines, sha256 and signals, and what was left out, withheld or skipped);
``build_manifest`` records the same choice, every source and the reuse fingerprint as JSON
(``manifest_bytes``: sorted keys, the same bytes for the same choice).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from gitpilot.context import safepaths, sources
from gitpilot.context.cache import fingerprint
from gitpilot.context.mandatory import Files, Piece
from gitpilot.context.markdown import sha256_text
from gitpilot.repo import Repo

MANIFEST_FORMAT = 1
LEFT_OUT_SHOWN = 20
LEFT_OUT_FLOOR = 0.2  # of the best score: the left-out list shows near misses above it

# How a source that is not read is named in the capsule's list of skipped files.
STATUS_WORDS = {
    "ignored": "ignored by git: not read",
    "credential": "named like a credential file: never opened",
    "outside": "outside the repository: refused",
    "not-utf8": "not UTF-8 text: skipped",
    "too-large": f"larger than {safepaths.MAX_FILE_BYTES} bytes: skipped",
    "missing": "missing",
}


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


def render_capsule(
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
    unread = sorted({p for p, why in skipped if why.startswith(STATUS_WORDS["not-utf8"])})
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
    """The branch name of ``Repo.default_branch`` (``main`` for ``origin/main``), as review-budget
    takes it when the configuration names none."""
    rev = repo.default_branch()
    return rev.removeprefix("origin/") if rev else None


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
                if sources.first_covered(front.scopes, area_files) is not None:
                    extra += " · **applies to the files this task concerns**"
            rows.append(f"- `{path}` · sha256 {sha256_text(files.texts[path])} · {size} bytes{extra}")
        elif src.alias_of:
            rows.append(f"- `{path}` · symlink to `{src.alias_of}`")
        elif src.status != "missing":
            rows.append(f"- `{path}` · {STATUS_WORDS.get(src.status, src.status)}")
    return head + ("\n".join(rows) if rows else "None.") + "\n\n"


def _left_out_section(
    sel: Any, withheld: Sequence[Piece], skipped: Sequence[tuple[str, str]], state: Any
) -> str:
    parts = ["## Left out\n\n"]
    # Near misses only: a section far below the cut is noise here (the manifest lists them all).
    floor = LEFT_OUT_FLOOR * sel.best
    shown = _nested_once([x for x in sel.left_out if x.score >= floor], LEFT_OUT_SHOWN)
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


def _nested_once(entries: Sequence[Any], limit: int) -> list[Any]:
    """The first ``limit`` of the entries minus those inside, or around, a better one of the same
    file: a file's whole range and each of its subsections are one place to look, named once."""
    out: list[Any] = []
    for x in entries:
        if len(out) == limit:
            break
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


def build_manifest(
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
    """The manifest as ``json.dumps(manifest, sort_keys=True, ensure_ascii=False, indent=1)`` and a
    newline, byte for byte. Written here because ``json`` drops to its pure-Python encoder as soon
    as it indents: a manifest of a few hundred KB (every source, every left-out section; 315 KB on
    vercel/ai) took it 8-12 ms of a new task, this 5-6 ms. Anything it does not know goes to
    ``json`` itself."""
    parts: list[str] = []
    try:
        _indented(manifest, parts, "\n")
    except _NotPlain:
        return (json.dumps(manifest, sort_keys=True, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
    parts.append("\n")
    return "".join(parts).encode("utf-8")


class _NotPlain(Exception):
    """A value ``_indented`` leaves to ``json`` (a key that is not a string, a type of its own)."""


_quote = json.encoder.encode_basestring  # what json.dumps uses with ensure_ascii=False


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return _quote(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        if value != value:
            return "NaN"
        if value in (float("inf"), float("-inf")):
            return "Infinity" if value > 0 else "-Infinity"
        return float.__repr__(value)
    raise _NotPlain


def _indented(value: Any, out: list[str], newline: str) -> None:
    """Append ``value`` as json.dumps writes it with ``indent=1`` and sorted keys; ``newline`` is
    a line break and the indentation of the line ``value`` starts on."""
    if isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        inner = newline + " "
        sep = "{" + inner
        for key in sorted(value):
            if type(key) is not str:
                raise _NotPlain
            item = value[key]
            kind = type(item)
            if kind is str:
                out.append(sep + _quote(key) + ": " + _quote(item))
            elif kind is int:
                out.append(sep + _quote(key) + ": " + int.__repr__(item))
            else:
                out.append(sep + _quote(key) + ": ")
                _indented(item, out, inner)
            sep = "," + inner
        out.append(newline + "}")
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[]")
            return
        inner = newline + " "
        if all(type(item) is int for item in value):  # a line range, a list of sizes
            out.append("[" + inner + ("," + inner).join(map(int.__repr__, value)) + newline + "]")
            return
        sep = "[" + inner
        for item in value:
            kind = type(item)
            if kind is str:
                out.append(sep + _quote(item))
            elif kind is int:
                out.append(sep + int.__repr__(item))
            else:
                out.append(sep)
                _indented(item, out, inner)
            sep = "," + inner
        out.append(newline + "]")
    else:
        out.append(_scalar(value))
