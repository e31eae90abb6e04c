"""Surgical edits of JSON settings files that keep the user's formatting.

Only one edit is needed by capability pruning: make sure a string is in an array at a path
of object keys (``permissions.deny``, ``disabledMcpjsonServers``), creating the missing
objects and the array. A small parser records where every value starts and ends; the edit
inserts text at one place and leaves every other byte alone (key order, indentation,
spacing, line endings, a missing or present final newline). Indentation for new lines is
copied from the neighbouring lines. The result is parsed again and compared with the
expected document, so a bug here can never write a file that means something else.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from gitpilot.errors import PilotError

_WS = re.compile(r"[ \t\n\r]*")
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\.)*"')
_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null")


@dataclass
class Node:
    """A JSON value and where it is: ``start`` is its first character, ``end`` one past its last."""

    kind: str  # "object", "array" or "scalar"
    start: int
    end: int = 0
    keys: list[str] = field(default_factory=list)
    key_starts: list[int] = field(default_factory=list)  # where each member's key (its quote) starts
    values: list[Node] = field(default_factory=list)  # object members' values, or array items

    def get(self, key: str) -> Node | None:
        """The value of the last member named ``key`` (JSON parsers keep the last duplicate)."""
        found = None
        for k, v in zip(self.keys, self.values, strict=True):
            if k == key:
                found = v
        return found


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text

    def ws(self, pos: int) -> int:
        m = _WS.match(self.text, pos)
        return m.end() if m else pos

    def string(self, pos: int) -> tuple[str, int]:
        m = _STRING.match(self.text, pos)
        if not m:
            raise ValueError(f"bad string at {pos}")
        return str(json.loads(m.group(0))), m.end()

    def value(self, pos: int) -> Node:
        pos = self.ws(pos)
        ch = self.text[pos : pos + 1]
        if ch == "{":
            return self.obj(pos)
        if ch == "[":
            return self.arr(pos)
        if ch == '"':
            return Node("scalar", pos, self.string(pos)[1])
        m = _SCALAR.match(self.text, pos)
        if not m:
            raise ValueError(f"unexpected character at {pos}")
        return Node("scalar", pos, m.end())

    def obj(self, pos: int) -> Node:
        node = Node("object", pos)
        pos = self.ws(pos + 1)
        if self.text.startswith("}", pos):
            node.end = pos + 1
            return node
        while True:
            if not self.text.startswith('"', pos):
                raise ValueError(f"expected a key at {pos}")
            node.key_starts.append(pos)
            key, pos = self.string(pos)
            pos = self.ws(pos)
            if not self.text.startswith(":", pos):
                raise ValueError(f"expected ':' at {pos}")
            val = self.value(pos + 1)
            node.keys.append(key)
            node.values.append(val)
            pos = self.ws(val.end)
            if self.text.startswith(",", pos):
                pos = self.ws(pos + 1)
                continue
            if self.text.startswith("}", pos):
                node.end = pos + 1
                return node
            raise ValueError(f"expected ',' or '}}' at {pos}")

    def arr(self, pos: int) -> Node:
        node = Node("array", pos)
        pos = self.ws(pos + 1)
        if self.text.startswith("]", pos):
            node.end = pos + 1
            return node
        while True:
            val = self.value(pos)
            node.values.append(val)
            pos = self.ws(val.end)
            if self.text.startswith(",", pos):
                pos = self.ws(pos + 1)
                continue
            if self.text.startswith("]", pos):
                node.end = pos + 1
                return node
            raise ValueError(f"expected ',' or ']' at {pos}")


def parse(text: str) -> Node:
    """The root node of ``text`` (which ``json.loads`` has accepted)."""
    return _Parser(text).value(0)


def _line_indent(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    m = re.match(r"[ \t]*", text[start:pos])
    return m.group(0) if m else ""


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _unit(text: str) -> str:
    """The file's indentation step (two spaces when it has none to copy)."""
    m = re.search(r"\n([ \t]+)\S", text)
    return m.group(1) if m else "  "


def _render(keys: list[str], value: str, indent: str, unit: str, nl: str, multiline: bool) -> str:
    """The value of member ``keys[0]`` (whose key sits at ``indent``): ``{"k1": ... [value]}``."""
    if not multiline:
        out = f"[{json.dumps(value)}]"
        for k in reversed(keys[1:]):
            out = f"{{{json.dumps(k)}: {out}}}"
        return out
    n = len(keys)
    out = f"[{nl}{indent + unit * n}{json.dumps(value)}{nl}{indent + unit * (n - 1)}]"
    for i in range(n - 1, 0, -1):
        out = f"{{{nl}{indent + unit * i}{json.dumps(keys[i])}: {out}{nl}{indent + unit * (i - 1)}}}"
    return out


def _insert_member(text: str, obj: Node, keys: list[str], value: str) -> str:
    """Add ``keys[0]: ...`` as the last member of ``obj``."""
    nl, unit = _newline(text), _unit(text)
    inside = text[obj.start : obj.end]
    multiline = "\n" in inside or (not obj.keys and "\n" in text)
    own = _line_indent(text, obj.start) if obj.start else ""
    if obj.keys:
        last = obj.values[-1]
        member_indent = _line_indent(text, obj.key_starts[-1]) if multiline else ""
        body = _render(keys, value, member_indent, unit, nl, multiline)
        sep = f",{nl}{member_indent}" if multiline else ", "
        return f"{text[: last.end]}{sep}{json.dumps(keys[0])}: {body}{text[last.end :]}"
    member_indent = own + unit
    body = _render(keys, value, member_indent, unit, nl, multiline)
    close = obj.end - 1
    if multiline:
        return (
            f"{text[: obj.start + 1]}{nl}{member_indent}{json.dumps(keys[0])}: {body}{nl}{own}{text[close:]}"
        )
    return f"{text[: obj.start + 1]}{json.dumps(keys[0])}: {body}{text[close:]}"


def _append_item(text: str, arr: Node, value: str) -> str:
    nl, unit = _newline(text), _unit(text)
    item = json.dumps(value)
    if arr.values:
        last = arr.values[-1]
        if "\n" in text[arr.start : arr.end]:
            return f"{text[: last.end]},{nl}{_line_indent(text, last.start)}{item}{text[last.end :]}"
        return f"{text[: last.end]}, {item}{text[last.end :]}"
    if "\n" in text:
        own = _line_indent(text, arr.start)
        return f"{text[: arr.start]}[{nl}{own}{unit}{item}{nl}{own}]{text[arr.end :]}"
    return f"{text[: arr.start]}[{item}]{text[arr.end :]}"


def ensure_in_array(data: bytes | None, keys: list[str], value: str) -> bytes:
    """``data`` (a JSON object, or None for a new file) with ``value`` in the array at ``keys``.

    Raises PilotError when the file is not a JSON object or something on the path has the
    wrong type (that is a conflict a person must look at).
    """
    if data is None or not data.strip():
        doc: dict[str, Any] = {}
        _set_in(doc, keys, value)
        return (json.dumps(doc, indent=2) + "\n").encode("utf-8")
    try:
        text = data.decode("utf-8")
        old = json.loads(text)
    except (UnicodeDecodeError, ValueError) as exc:
        raise PilotError(f"not valid JSON ({exc}); fix it first") from exc
    if not isinstance(old, dict):
        raise PilotError("the top level is not a JSON object")
    expected = json.loads(text)
    _set_in(expected, keys, value)
    if expected == old:
        return data
    node = parse(text)
    for i, key in enumerate(keys):
        child = node.get(key)
        if child is None:
            new = _insert_member(text, node, keys[i:], value)
            break
        node = child
    else:
        new = _append_item(text, node, value)
    if json.loads(new) != expected:  # never write a file that means something else
        raise PilotError("could not edit the JSON without changing its meaning; edit it by hand")
    return new.encode("utf-8")


def _set_in(doc: dict[str, Any], keys: list[str], value: str) -> None:
    cur: Any = doc
    for i, key in enumerate(keys):
        last = i == len(keys) - 1
        if key not in cur:
            cur[key] = [] if last else {}
        nxt = cur[key]
        if last and not isinstance(nxt, list):
            raise PilotError(f"'{'.'.join(keys)}' is not a list")
        if not last and not isinstance(nxt, dict):
            raise PilotError(f"'{'.'.join(keys[: i + 1])}' is not an object")
        cur = nxt
    if value not in cur:
        cur.append(value)


def get_path(doc: Any, keys: list[str]) -> Any:
    """``doc[k1][k2]...`` or None when any step is missing or not an object."""
    cur = doc
    for key in keys:
        if not isinstance(cur, dict) or key not in cur:
            return None
        cur = cur[key]
    return cur
