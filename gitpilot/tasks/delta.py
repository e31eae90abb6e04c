"""Delta Resume: what a session was given, and what changed in its context since.

``session_manifest`` turns a capsule manifest into the record of what one session was given:
every source's path, roles, status and blob id, and for each Markdown source with sections the
*own part* of every section (its heading and body up to its first subsection) with a sha256.
Own parts, not subtrees, so that one edited subsection is one changed section, not also every
ancestor around it.

``compute`` compares two such records: sources whose status or blob changed, and within them
the sections whose own text changed, appeared or disappeared. ``render`` writes the delta
file: the exact new text of changed sections that are mandatory or relevant to the task (the
capsule's own instructions/mandatory/relevant pieces say which), line ranges for the other
changed sections, and the removed ones. Texts come from the working tree, checked against the
blob id the manifest recorded: stale text is never served.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gitpilot.repo import Repo

SESSION_MANIFEST_FORMAT = 1
# Statuses whose files are never opened (credentials, ignored, outside, unreadable).
_UNREADABLE = {"ignored", "credential", "outside", "missing", "not-utf8", "too-large"}
CONFIG_TEXT_LIMIT = 4000


@dataclass(frozen=True)
class Section:
    heading: str
    start: int
    end: int  # last line of the own part
    sha256: str  # of the own part's exact text


@dataclass
class SectionChange:
    kind: str  # "changed", "added", "removed", "withheld" (still there, now holds a credential)
    heading: str
    start: int
    end: int
    sha256: str = ""
    text: str | None = None  # exact new text, when the section is mandatory or relevant


@dataclass
class SourceChange:
    path: str
    kind: str  # "modified", "added", "removed", "status", "config"
    old_blob: str
    new_blob: str
    status: str
    roles: tuple[str, ...] = ()
    sections: list[SectionChange] = field(default_factory=list)
    text: str | None = None  # a whole small file (the config)
    note: str = ""


@dataclass
class Delta:
    changes: list[SourceChange]

    @property
    def empty(self) -> bool:
        return not self.changes

    def counts(self) -> tuple[int, int]:
        """(changed sources, changed or removed sections)."""
        return len(self.changes), sum(len(c.sections) for c in self.changes)


# -- what a session was given -----------------------------------------------------------------
def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _read_checked(root: Path, path: str, blob: str) -> str | None:
    """The working-tree text of ``path`` if it still is ``blob`` (never a credential file)."""
    from gitpilot.context.safepaths import read_text
    from gitpilot.context.sources import git_blob_id
    from gitpilot.redact import is_credential_filename

    if is_credential_filename(path):
        return None
    loaded = read_text(root, path)
    if loaded.text is None:
        return None
    if blob and git_blob_id(loaded.text.encode("utf-8")) != blob:
        return None
    return loaded.text


def own_sections(text: str, withheld: bool = False) -> list[Section]:
    """Own parts of every section that is not withheld (a credential in it); with ``withheld``,
    the withheld ones instead (their hash left empty: their text is never used)."""
    from gitpilot.context.markdown import parse, range_text, split_lines
    from gitpilot.redact import contains_secret

    smap = parse(text, contains_secret)
    lines = split_lines(text)
    out: list[Section] = []
    for i, s in enumerate(smap.sections):
        if bool(s.withheld) != withheld or s.body_end < s.start:
            continue
        heading = " › ".join(smap.heading_path(i)) or "(preamble)"
        out.append(Section(heading, s.start, s.body_end, "" if withheld else
                           _sha(range_text(lines, s.start, s.body_end))))
    return out


def session_manifest(root: Path, manifest: Mapping[str, Any]) -> dict[str, Any]:
    """What a session given this capsule manifest knows: sources, blob ids, own-part hashes."""
    sources = []
    for rec in manifest.get("sources", []):
        if not isinstance(rec, dict) or not isinstance(rec.get("path"), str):
            continue
        entry: dict[str, Any] = {"path": rec["path"], "roles": sorted(rec.get("roles") or []),
                                 "status": str(rec.get("status") or ""), "blob": str(rec.get("blob") or "")}
        if "sections" in rec and entry["status"] not in _UNREADABLE:
            text = _read_checked(root, entry["path"], entry["blob"])
            if text is not None:
                entry["sections"] = [[s.heading, s.start, s.end, s.sha256] for s in own_sections(text)]
        sources.append(entry)
    sources.sort(key=lambda e: e["path"])
    raw_config = manifest.get("config")
    config: Mapping[str, Any] = raw_config if isinstance(raw_config, dict) else {}
    return {
        "format": SESSION_MANIFEST_FORMAT,
        "task_id": manifest.get("task_id"),
        "fingerprint": manifest.get("fingerprint"),
        "capsule_sha256": manifest.get("capsule_sha256"),
        "config": {"path": config.get("path"), "blob": config.get("blob")},
        "sources": sources,
    }


# -- comparing -------------------------------------------------------------------------------
def _given_ranges(manifest: Mapping[str, Any]) -> dict[str, list[tuple[int, int]]]:
    """Line ranges per path that the capsule includes (instructions, mandatory, relevant)."""
    ranges: dict[str, list[tuple[int, int]]] = {}
    for key in ("instructions", "mandatory", "relevant"):
        for piece in manifest.get(key) or []:
            if isinstance(piece, dict) and isinstance(piece.get("path"), str):
                ranges.setdefault(piece["path"], []).append((int(piece["start"]), int(piece["end"])))
    return ranges


def _overlaps(ranges: Sequence[tuple[int, int]], a: int, b: int) -> bool:
    return any(s <= b and a <= e for s, e in ranges)


def _sections_of(entry: Mapping[str, Any]) -> list[Section] | None:
    raw = entry.get("sections")
    if not isinstance(raw, list):
        return None
    return [Section(str(h), int(a), int(b), str(x)) for h, a, b, x in raw]


def _section_changes(old: Sequence[Section], new: Sequence[Section]) -> list[tuple[str, Section]]:
    """New sections whose own text is not among the old ones under the same heading, then removals."""
    from collections import Counter

    old_by = Counter((s.heading, s.sha256) for s in old)
    old_headings = Counter(s.heading for s in old)
    changes: list[tuple[str, Section]] = []
    new_headings: Counter[str] = Counter()
    for s in new:
        new_headings[s.heading] += 1
        if old_by[(s.heading, s.sha256)] > 0:
            old_by[(s.heading, s.sha256)] -= 1
            continue
        kind = "changed" if new_headings[s.heading] <= old_headings[s.heading] else "added"
        changes.append((kind, s))
    removed_left = {h: n - new_headings[h] for h, n in old_headings.items() if n > new_headings[h]}
    for s in reversed(old):
        if removed_left.get(s.heading, 0) > 0:
            removed_left[s.heading] -= 1
            changes.append(("removed", s))
    return changes


def compute(old: Mapping[str, Any], new: Mapping[str, Any], manifest: Mapping[str, Any], repo: Repo) -> Delta:
    """The changes between the session's record ``old`` and the current record ``new`` in ``repo``.

    ``manifest`` is the current capsule manifest (which sections are mandatory or relevant).
    """
    given = _given_ranges(manifest)
    old_src = {e["path"]: e for e in old.get("sources", [])}
    new_src = {e["path"]: e for e in new.get("sources", [])}
    changes: list[SourceChange] = []
    for path in sorted(set(old_src) | set(new_src)):
        o, n = old_src.get(path), new_src.get(path)
        if o is not None and n is not None and (_kind(o), o["blob"]) == (_kind(n), n["blob"]):
            continue  # same text (committing a file changes its status, not what it says)
        change = _source_change(path, o, n, given.get(path, []), repo)
        if change.kind == "modified" and not change.sections and not change.note:
            continue  # a new blob with no section of different text (line endings at the end, say)
        changes.append(change)
    cfg = _config_change(old.get("config") or {}, new.get("config") or {}, repo.workdir)
    if cfg is not None:
        changes.insert(0, cfg)
    return Delta(changes)


def _kind(entry: Mapping[str, Any]) -> str:
    status = str(entry.get("status") or "")
    return status if status in _UNREADABLE else "readable"


def _source_change(path: str, o: Mapping[str, Any] | None, n: Mapping[str, Any] | None,
                   given: Sequence[tuple[int, int]], repo: Repo) -> SourceChange:
    root = repo.workdir
    if n is None or n["status"] in ("missing",):
        assert o is not None
        old_secs = _sections_of(o) or []
        return SourceChange(path, "removed", o["blob"], "", "missing", tuple(o.get("roles", [])),
                            [SectionChange("removed", s.heading, s.start, s.end, s.sha256) for s in old_secs])
    roles = tuple(n.get("roles", []))
    if n["status"] in _UNREADABLE:
        return SourceChange(path, "status", (o or {}).get("blob", ""), n["blob"], n["status"], roles,
                            note=f"now {n['status']}: not read")
    kind = "added" if o is None or o["status"] == "missing" or not o["blob"] else "modified"
    old_secs = (_sections_of(o) or []) if o is not None else []
    new_secs = _sections_of(n)
    text = None
    if new_secs is None and old_secs:
        # Given before, not sectioned now: read it again so the change is still described.
        text = _read_checked(root, path, n["blob"])
        new_secs = own_sections(text) if text is not None else None
    note = ""
    if new_secs is None:
        # Not in the session's context: say which sections changed (line ranges only).
        text = _read_checked(root, path, n["blob"])
        old_text = _read_blob(repo, str((o or {}).get("blob") or ""))
        if text is None or (o is not None and old_text is None):
            return SourceChange(path, kind, (o or {}).get("blob", ""), n["blob"], n["status"], roles,
                                note="not part of your context: open it only if you need it")
        new_secs = own_sections(text)
        old_secs = own_sections(old_text) if old_text is not None else []
        note = "not part of your context: the changed sections, to open only if you need them"
    pairs = _section_changes(old_secs, new_secs)
    if any(k == "removed" for k, _ in pairs):
        if text is None:
            text = _read_checked(root, path, n["blob"])
        pairs = _withheld_not_removed(pairs, own_sections(text, withheld=True) if text is not None else [])
    needs_text = [s for k, s in pairs if k not in ("removed", "withheld") and _overlaps(given, s.start, s.end)]
    if needs_text and text is None:
        text = _read_checked(root, path, n["blob"])
    lines = _lines(text) if text is not None else None
    out: list[SectionChange] = []
    for k, s in pairs:
        body = None
        if k not in ("removed", "withheld") and lines is not None and _overlaps(given, s.start, s.end):
            body = "".join(lines[s.start - 1 : s.end])
            if _sha(body) != s.sha256:
                body = None  # the file moved on since it was hashed: never serve stale text
        out.append(SectionChange(k, s.heading, s.start, s.end, s.sha256, body))
    out.sort(key=lambda c: (c.kind == "removed", c.start))
    return SourceChange(path, kind, (o or {}).get("blob", ""), n["blob"], n["status"], roles, out, note=note)


def _withheld_not_removed(pairs: list[tuple[str, Section]], withheld: list[Section]) -> list[tuple[str, Section]]:
    """A section that now holds a credential is still there: say it is withheld, not removed."""
    left = list(withheld)
    out: list[tuple[str, Section]] = []
    for kind, s in pairs:
        match = next((w for w in left if w.heading == s.heading), None) if kind == "removed" else None
        if match is None:
            out.append((kind, s))
        else:
            left.remove(match)
            out.append(("withheld", match))
    return out


def _read_blob(repo: Repo, blob: str) -> str | None:
    """An old version's text from the object database (None when git does not have it)."""
    data = repo.read_blob(blob) if blob else None
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _lines(text: str) -> list[str]:
    from gitpilot.context.markdown import split_lines

    return split_lines(text)


def _config_change(old: Mapping[str, Any], new: Mapping[str, Any], root: Path) -> SourceChange | None:
    if (old.get("path"), old.get("blob")) == (new.get("path"), new.get("blob")):
        return None
    path = str(new.get("path") or old.get("path") or "")
    text = None
    if new.get("path") and new.get("blob"):
        text = _read_checked(root, str(new["path"]), str(new["blob"]))
    note = ""
    if text is not None and len(text.encode("utf-8")) > CONFIG_TEXT_LIMIT:
        note = f"{len(text.splitlines())} lines: open it if a setting matters to you"
        text = None
    if text is not None:
        from gitpilot.redact import redact

        text = redact(text)
    return SourceChange(path, "config", str(old.get("blob") or ""), str(new.get("blob") or ""),
                        "removed" if not new.get("path") else "modified", ("config",), text=text, note=note)


# -- the delta file --------------------------------------------------------------------------
def _fence(text: str) -> str:
    import re

    longest = max((len(m) for m in re.findall(r"`{3,}", text)), default=2)
    return "`" * max(3, longest + 1)


def render(delta: Delta, task_id: str) -> str:
    """The delta file: a short header, then each changed source."""
    nsrc, nsec = delta.counts()
    out = [
        f"# Context delta for task {task_id[:12]}",
        "",
        f"{nsrc} source(s) changed since this session read its context. Everything not listed here is",
        "unchanged: what you read before stays authoritative. Changed sections that matter to the task",
        "are shown with their exact new text; open the others by line range only if you need them.",
        "",
    ]
    for c in delta.changes:
        out.append(_source_heading(c))
        if c.note:
            out.append(c.note)
        if c.text is not None:
            fence = _fence(c.text)
            out += [fence, c.text.rstrip("\n"), fence]
        for s in c.sections:
            out += _section_lines(c.path, s)
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def _short(blob: str) -> str:
    return blob[:10] if blob else "none"


def _source_heading(c: SourceChange) -> str:
    if c.kind == "removed":
        return f"## `{c.path}`: removed"
    if c.kind == "added":
        return f"## `{c.path}`: new ({', '.join(c.roles) or 'context'}, blob {_short(c.new_blob)})"
    if c.kind == "config":
        return f"## `{c.path}`: configuration {c.status} (blob {_short(c.old_blob)} → {_short(c.new_blob)})"
    if c.kind == "status":
        return f"## `{c.path}`: {c.status}"
    return f"## `{c.path}`: modified (blob {_short(c.old_blob)} → {_short(c.new_blob)})"


def _section_lines(path: str, s: SectionChange) -> list[str]:
    if s.kind == "removed":
        return [f"- removed: {s.heading} (was lines {s.start}-{s.end})"]
    if s.kind == "withheld":
        return [f"- withheld: {s.heading} — `{path}` lines {s.start}-{s.end} now hold a known credential "
                "format; not shown, never copied"]
    label = f"{s.kind}: {s.heading} — `{path}` lines {s.start}-{s.end}, sha256 {s.sha256[:12]}"
    if s.text is None:
        return [f"- {label} (not shown)"]
    fence = _fence(s.text)
    return ["", f"### {label}", fence, s.text.rstrip("\n"), fence]
