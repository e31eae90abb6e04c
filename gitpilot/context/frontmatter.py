"""The front matter of agent-facing rule and skill files: the author's own statement of what a
file is for (``description``, ``name``) and where it applies (``paths``, ``globs``, ``applyTo``).

Claude Code rules scope themselves with ``paths:``, Cursor rules with ``globs:`` (and
``alwaysApply:``), Copilot's ``*.instructions.md`` with ``applyTo:``; skills describe when to use
them in ``description:``. Only that small subset of YAML is read: ``key: value`` scalars (plain,
quoted, or ``>``/``|`` blocks), flow lists (``[a, b]``), block lists (``- a``) and comma-separated
glob strings. Anything else is ignored; a file without front matter has none of it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

_KEY = re.compile(r"^([A-Za-z_][\w-]*)\s*:\s*(.*?)\s*$")
_SCOPE_KEYS = ("paths", "globs", "applyto", "files")
_TEXT_KEYS = ("description", "name", "title", "summary", "when_to_use", "when-to-use")


@dataclass(frozen=True)
class FrontMatter:
    """What a file's front matter says about it."""

    text: str = ""  # its name and description, as words to score
    scopes: tuple[str, ...] = ()  # the globs it applies to (empty: unscoped)
    always: bool = False  # ``alwaysApply: true``

    @property
    def scoped(self) -> bool:
        return bool(self.scopes)


NONE = FrontMatter()
_FIRST, _LAST = 32, 200  # front matter closes by line _LAST (the first lines read first)


def parse(lines: Sequence[str]) -> FrontMatter:
    """The front matter of a file given as its lines (``---`` first, up to the closing ``---``)."""
    if not lines or lines[0].strip().lstrip("\ufeff") != "---":
        return NONE
    body: list[str] = []
    # (lines 2-200, the first few asked for first: a file's lines may be split only as far as
    # they are read, ``lines.Lines``, and front matter is mostly short)
    for line in _after_first(lines):
        if line.strip() in ("---", "..."):
            break
        body.append(line.rstrip("\r\n"))
    else:
        return NONE
    values = _values(body)
    text = " ".join(" ".join(values[k]) for k in _TEXT_KEYS if k in values)
    scopes: list[str] = []
    for k in _SCOPE_KEYS:
        for item in values.get(k, ()):
            scopes.extend(g.strip().strip("'\"") for g in item.split(",") if g.strip().strip("'\""))
    always = any(v.strip().lower() == "true" for v in values.get("alwaysapply", ()))
    return FrontMatter(" ".join(text.split()), tuple(scopes), always)


def _after_first(lines: Sequence[str]) -> Iterator[str]:
    """Lines 2 to ``_LAST``, the first ``_FIRST`` asked for before the others."""
    yield from lines[1:_FIRST]
    yield from lines[_FIRST:_LAST]


def _values(body: Sequence[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    key: str | None = None
    block = False
    for raw in body:
        m = _KEY.match(raw)
        if m and not raw[:1].isspace():
            key = m.group(1).lower()
            value = m.group(2)
            block = value in (">", "|", ">-", "|-", ">+", "|+")
            out[key] = []
            if value and not block:
                out[key].extend(_scalar_or_list(value))
            continue
        if key is None:
            continue
        item = raw.strip()
        if item.startswith("- "):
            out[key].append(_unquote(item[2:].strip()))
        elif item and (block or raw[:1].isspace()):
            out[key].append(item)
    return out


def _scalar_or_list(value: str) -> list[str]:
    if value.startswith("[") and value.endswith("]"):
        return [_unquote(v.strip()) for v in value[1:-1].split(",") if v.strip()]
    return [_unquote(value)]


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value
