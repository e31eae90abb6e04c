"""Declaration names and import targets of source files, by fast per-language regexes.

No parser: one compiled regex per language runs over a whole file (``finditer``, C speed), and
a small indentation stack turns the matches into top-level entries with their members
(``class A`` with methods, ``impl Foo`` blocks merged into ``struct Foo``). The rules:

- a declaration at indentation *i* closes every open scope at indentation >= *i*; so do
  closing lines (``}`` in brace languages, ``end`` in Ruby, compound statements at column 0
  in Python);
- a function inside a container (class, struct, impl, trait, module) is that container's
  member; a declaration inside a function is local and dropped;
- a container inside a container becomes its own entry with a qualified name (``Outer.Inner``).

Imports are reduced to path components (``pkg/mod``) so the source map can count how many
files refer to a module. Everything here is pure: text in, tuples out, deterministic.
"""

from __future__ import annotations

import functools
import posixpath
import re
from dataclasses import dataclass, field

# -- languages -------------------------------------------------------------------------------
LANG_BY_EXT: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "js",
    ".jsx": "js",
    ".mjs": "js",
    ".cjs": "js",
    ".ts": "js",
    ".tsx": "js",
    ".mts": "js",
    ".cts": "js",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".c++": "cpp",
    ".hh": "cpp",
    ".hpp": "cpp",
    ".hxx": "cpp",
    ".h++": "cpp",
    ".ipp": "cpp",
    ".rb": "ruby",
    ".rake": "ruby",
}
HEADER_EXTS = frozenset({".h", ".hh", ".hpp", ".hxx", ".h++"})


def language_of(path: str) -> str | None:
    """The language of a path by its extension, or None when it is not a source file we map."""
    dot = path.rfind(".")
    if dot <= path.rfind("/") + 0:
        return None
    return LANG_BY_EXT.get(path[dot:].lower())


# -- the result ------------------------------------------------------------------------------
@dataclass
class Entry:
    """One top-level declaration: a function, or a container with member names."""

    name: str
    kind: str  # "function", "class", "type"
    line: int
    members: list[str] = field(default_factory=list)

    def render(self) -> str:
        if self.kind == "function":
            return f"{self.name}()"
        if self.members:
            return f"{self.name}{{{', '.join(m + '()' for m in self.members)}}}"
        return self.name


@dataclass
class _Scope:
    indent: int
    entry: Entry | None  # None: a function body (declarations inside are local)


_KEYWORDS = frozenset(
    "if else elif for foreach while do switch case catch try finally return new delete throw "
    "throws yield await function sizeof typeof alignof decltype static_assert defined using "
    "namespace template typedef goto break continue assert match when with unless until "
    "operator super this self".split()
)

_IND = r"(?P<ind>[ \t]*)"

_PYTHON = re.compile(
    r"^(?P<ind>[ \t]*)(?:"
    r"(?:async[ \t]+)?def[ \t]+(?P<func>[^\W\d]\w*)"
    r"|class[ \t]+(?P<cls>[^\W\d]\w*)"
    r")"
    r"|^(?P<close>(?:if|elif|else|try|except|finally|with|for|while|match)\b)",
    re.M,
)

_JS = re.compile(
    r"^" + _IND + r"(?:"
    r"(?:export[ \t]+)?(?:default[ \t]+)?(?:declare[ \t]+)?(?:async[ \t]+)?function\b[ \t]*\*?[ \t]*"
    r"(?P<func>[\w$]+)"
    r"|(?:export[ \t]+)?(?:default[ \t]+)?(?:declare[ \t]+)?(?:abstract[ \t]+)?class[ \t]+(?P<cls>[\w$]+)"
    r"|(?:export[ \t]+)?(?:declare[ \t]+)?(?:interface|enum|namespace|module)[ \t]+(?P<type>[\w$]+)"
    r"|(?:export[ \t]+)?(?:declare[ \t]+)?type[ \t]+(?P<alias>[\w$]+)[ \t]*(?:<[^>\n]*>)?[ \t]*="
    r"|(?:export[ \t]+)?(?:const|let|var)[ \t]+(?P<arrow>[\w$]+)[ \t]*(?::[^=\n]+)?=[ \t]*"
    r"(?:async[ \t]*)?(?:function\b|(?:\([^()\n]*\)|[\w$]+)[ \t]*(?::[^=\n]+)?=>)"
    r"|(?:(?:public|private|protected|static|async|readonly|abstract|override|get|set|declare)[ \t]+)*"
    r"(?P<member>#?[\w$]+)[ \t]*(?:<[^>\n]*>)?[ \t]*\([^;{}()]*(?:\([^;{}()]*\)[^;{}()]*)*\)"
    r"[ \t]*(?::[^{;=\n]+)?\{"
    r"|(?P<close>\}))",
    re.M,
)

_GO = re.compile(
    r"^func[ \t]*\([ \t]*(?:\w+[ \t]+)?\*?[ \t]*(?P<recv>\w+)(?:\[[^\]\n]*\])?[ \t]*\)[ \t]*(?P<method>\w+)"
    r"|^func[ \t]+(?P<func>\w+)"
    r"|^type[ \t]+(?P<type>\w+)"
    r"|^type[ \t]*\((?P<group>(?:[^\n]*\n)*?)\)",
    re.M,
)
_GO_GROUP_ITEM = re.compile(r"^[ \t]+(\w+)[ \t]+\S", re.M)

_RUST = re.compile(
    r"^" + _IND + r"(?:"
    r"(?:pub(?:[ \t]*\([^)\n]*\))?[ \t]+)?"
    r"(?:(?:default|const|async|unsafe|extern(?:[ \t]+\"[^\"\n]*\")?)[ \t]+)*"
    r"fn[ \t]+(?P<func>\w+)"
    r"|(?:pub(?:[ \t]*\([^)\n]*\))?[ \t]+)?(?:unsafe[ \t]+)?(?:struct|enum|union|type)[ \t]+(?P<type>\w+)"
    r"|(?:pub(?:[ \t]*\([^)\n]*\))?[ \t]+)?(?:unsafe[ \t]+)?trait[ \t]+(?P<cls>\w+)"
    r"|(?:pub(?:[ \t]*\([^)\n]*\))?[ \t]+)?mod[ \t]+(?P<mod>\w+)[ \t]*\{"
    r"|(?:unsafe[ \t]+)?impl\b(?:[ \t]*<[^{\n]*?>)?[ \t]+(?:[^{};\n]*?[ \t]for[ \t]+)?&?"
    r"(?:[\w]+::)*(?P<impl>\w+)[^{};\n]*\{"
    r"|(?P<close>\}))",
    re.M,
)

_JAVA_MODS = (
    r"(?:(?:public|protected|private|static|final|abstract|sealed|non-sealed|strictfp|synchronized"
    r"|native|default)[ \t]+)*"
)
_JAVA = re.compile(
    r"^" + _IND + r"(?:"
    r"(?:@\w+(?:\([^)\n]*\))?[ \t]+)*"
    + _JAVA_MODS
    + r"(?:class|interface|enum|record|@interface)[ \t]+(?P<cls>[\w$]+)"
    r"|" + _JAVA_MODS + r"(?:<[^>\n]*>[ \t]+)?(?P<rtype>[\w$][\w$.]*(?:<[^;{}()\n]*>)?(?:\[\])*)[ \t]+"
    r"(?P<member>[\w$]+)[ \t]*\([^;{}()]*\)[ \t]*(?:throws[ \t]+[\w$.,\s]+?)?\s*[{;]"
    r"|(?P<close>\}))",
    re.M,
)

_C_FUNC_PREFIX = r"(?:[A-Za-z_][\w:<>,*&~\[\] \t]*?[ \t*&])?"
_C_ARGS = r"\([^;{}()]*(?:\([^;{}()]*\)[^;{}()]*)*\)"
_C = re.compile(
    r"^" + _IND + r"(?:"
    r"(?:template[ \t]*<[^>\n]*>\s*)?(?:typedef[ \t]+)?(?:class|struct|union)[ \t]+"
    r"(?:[A-Z_][A-Z0-9_]*[ \t]+)?(?P<cls>[A-Za-z_]\w*)[ \t]*(?:final[ \t]*)?(?::[^;{]*)?\{"
    r"|(?:typedef[ \t]+)?enum(?:[ \t]+(?:class|struct))?[ \t]+(?P<type>[A-Za-z_]\w*)[^;{\n]*\{"
    r"|(?:(?:virtual|static|inline|explicit|constexpr|friend|extern)[ \t]+)*"
    + _C_FUNC_PREFIX
    + r"(?P<func>~?[A-Za-z_]\w*(?:::~?[A-Za-z_]\w*)*|operator[^\s(]+)[ \t]*"
    + _C_ARGS
    + r"[ \t]*(?:const[ \t]*)?(?:noexcept[ \t]*)?(?:override[ \t]*)?(?:final[ \t]*)?"
    r"(?:->[^{;\n]+)?(?:=[ \t]*(?:0|default|delete)[ \t]*)?\s*(?::[^;{]*)?(?P<end>[{;])"
    r"|(?P<close>\}))",
    re.M,
)

_RUBY = re.compile(
    r"^" + _IND + r"(?:"
    r"(?:class|module)[ \t]+(?P<cls>[A-Z][\w:]*)"
    r"|def[ \t]+(?:self\.)?(?P<func>[^\W\d][\w]*[?!=]?)"
    r"|(?P<close>end)\b)",
    re.M,
)


def _indent(s: str) -> int:
    return len(s.expandtabs(4))


class _Builder:
    """Turns declaration events, in file order, into entries with members."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.entries: dict[str, Entry] = {}
        self.order: list[str] = []
        self.stack: list[_Scope] = []
        self._line = 1
        self._pos = 0

    def line_at(self, pos: int) -> int:
        self._line += self.text.count("\n", self._pos, pos)
        self._pos = pos
        return self._line

    def opens_block(self, end: int) -> bool:
        """Whether the declaration ending at ``end`` opens a body (``{`` before ``;`` on its line)."""
        eol = self.text.find("\n", end)
        rest = self.text[end : eol if eol >= 0 else len(self.text)]
        brace, semi = rest.find("{"), rest.find(";")
        return brace >= 0 and (semi < 0 or brace < semi)

    def close(self, indent: int) -> None:
        while self.stack and self.stack[-1].indent >= indent:
            self.stack.pop()

    def _top(self) -> _Scope | None:
        return self.stack[-1] if self.stack else None

    def _entry(self, name: str, kind: str, line: int) -> Entry:
        found = self.entries.get(name)
        if found is None:
            found = Entry(name, kind, line)
            self.entries[name] = found
            self.order.append(name)
        elif found.kind == "type" and kind == "class":
            found.kind = "class"
        return found

    def container(self, indent: int, name: str, kind: str, line: int, opens: bool = True) -> None:
        """A class, struct, trait, impl or module; nested ones get a qualified name."""
        self.close(indent)
        top = self._top()
        if top is not None and top.entry is None:  # local to a function body: not mapped
            if opens:
                self.stack.append(_Scope(indent, None))
            return
        qual = f"{top.entry.name}.{name}" if top is not None and top.entry is not None else name
        entry = self._entry(qual, kind, line)
        if opens:
            self.stack.append(_Scope(indent, entry))

    def function(self, indent: int, name: str, line: int, opens: bool = True) -> None:
        """A function: top level, a member of the enclosing container, or local (dropped)."""
        self.close(indent)
        top = self._top()
        if top is None:
            self._entry(name, "function", line)
        elif top.entry is not None:
            self.member_of(top.entry, name)
        if opens:
            self.stack.append(_Scope(indent, None))

    def member(self, indent: int, name: str, opens: bool) -> None:
        """A method-shaped line: a member inside a container; anywhere else just a block."""
        self.close(indent)
        top = self._top()
        if top is not None and top.entry is not None:
            self.member_of(top.entry, name)
        if opens:
            self.stack.append(_Scope(indent, None))

    def method_of(self, owner: str, name: str, line: int, opens: bool) -> None:
        """An out-of-line method (``Type::name`` in C++, a Go receiver)."""
        self.close(0)
        self.member_of(self._entry(owner, "class", line), name)
        if opens:
            self.stack.append(_Scope(0, None))

    @staticmethod
    def member_of(entry: Entry, name: str) -> None:
        short = entry.name.rsplit(".", 1)[-1]
        if name == short or name.startswith(("~", "__")) or name == "constructor":
            return  # constructors, destructors and dunders say nothing the type name does not
        if name not in entry.members:
            entry.members.append(name)

    def result(self) -> list[Entry]:
        return [self.entries[n] for n in self.order]


def _python(text: str) -> list[Entry]:
    b = _Builder(text)
    for m in _PYTHON.finditer(text):
        if m.group("close"):
            b.close(0)
            continue
        ind = _indent(m.group("ind"))
        line = b.line_at(m.start())
        if m.group("cls"):
            b.container(ind, m.group("cls"), "class", line)
        else:
            b.function(ind, m.group("func"), line)
    return b.result()


def _braces(text: str, rx: re.Pattern[str], lang: str, header: bool) -> list[Entry]:
    """JavaScript/TypeScript, Rust, Java, C and C++: declarations plus closing-brace lines."""
    b = _Builder(text)
    for m in rx.finditer(text):
        g = m.groupdict()
        ind = _indent(g.get("ind") or "")
        if g.get("close"):
            b.close(ind)
            continue
        line = b.line_at(m.start())
        opens = b.opens_block(m.end()) or m.group(0).endswith("{")
        if g.get("cls"):
            b.container(ind, g["cls"].replace("::", "."), "class", line, opens)
        elif g.get("type") or g.get("mod") or g.get("impl") or g.get("alias"):
            name = g.get("type") or g.get("mod") or g.get("impl") or g["alias"]
            b.container(ind, name, "type", line, opens and not g.get("alias"))
        elif g.get("func") or g.get("arrow"):
            name = g.get("func") or g["arrow"]
            if lang in ("c", "cpp"):
                if name in _KEYWORDS:
                    continue  # `if (...)`, `while (...)` look like calls
                _c_function(b, ind, name, line, g.get("end") == "{", header)
            else:
                b.function(ind, name, line, opens or g.get("arrow") is not None or lang == "js")
        elif g.get("member"):
            if g["member"] in _KEYWORDS or (g.get("rtype") or "") in _KEYWORDS:
                continue
            b.member(ind, g["member"], opens)
    return b.result()


def _c_function(b: _Builder, ind: int, name: str, line: int, opens: bool, header: bool) -> None:
    if ind > 0:
        b.member(ind, name, opens)  # a method declared in a class body (or a statement: dropped)
    elif "::" in name:
        owner, _, meth = name.rpartition("::")
        b.method_of(owner.replace("::", "."), meth, line, opens)
    elif opens or header:
        b.function(0, name, line, opens)  # definitions; prototypes only in headers


def _go(text: str) -> list[Entry]:
    b = _Builder(text)
    for m in _GO.finditer(text):
        line = b.line_at(m.start())
        if m.group("recv"):
            b.method_of(m.group("recv"), m.group("method"), line, False)
        elif m.group("func"):
            b.function(0, m.group("func"), line, False)
        elif m.group("type"):
            b.container(0, m.group("type"), "type", line, False)
        elif m.group("group") is not None:
            for item in _GO_GROUP_ITEM.finditer(m.group("group")):
                b.container(0, item.group(1), "type", line, False)
    return b.result()


def _ruby(text: str) -> list[Entry]:
    b = _Builder(text)
    for m in _RUBY.finditer(text):
        ind = _indent(m.group("ind"))
        if m.group("close"):
            b.close(ind)
            continue
        line = b.line_at(m.start())
        if m.group("cls"):
            b.container(ind, m.group("cls").replace("::", "."), "class", line)
        else:
            b.function(ind, m.group("func"), line)
    return b.result()


def extract(path: str, text: str) -> list[Entry]:
    """The declarations of one source file, in file order (empty for unknown languages)."""
    lang = language_of(path)
    if lang == "python":
        return _python(text)
    if lang == "go":
        return _go(text)
    if lang == "ruby":
        return _ruby(text)
    if lang == "js":
        return _braces(text, _JS, lang, False)
    if lang == "rust":
        return _braces(text, _RUST, lang, False)
    if lang == "java":
        return _braces(text, _JAVA, lang, False)
    if lang in ("c", "cpp"):
        ext = path[path.rfind(".") :].lower()
        return _braces(text, _C, lang, ext in HEADER_EXTS)
    return []


# -- imports ---------------------------------------------------------------------------------
_PY_IMPORT = re.compile(
    r"^[ \t]*from[ \t]+(?P<from>\.*[\w.]*)[ \t]+import[ \t]+(?P<names>\([^)]*\)|[^\n#;]+)"
    r"|^[ \t]*import[ \t]+"
    r"(?P<mods>[\w.]+(?:[ \t]+as[ \t]+\w+)?(?:[ \t]*,[ \t]*[\w.]+(?:[ \t]+as[ \t]+\w+)?)*)",
    re.M,
)
_JS_IMPORT = re.compile(
    r"""(?:\bfrom[ \t]*|\bimport[ \t]*\(?[ \t]*|\brequire[ \t]*\([ \t]*|^[ \t]*import[ \t]+)"""
    r"""['"]([^'"\n]+)['"]""",
    re.M,
)
_GO_IMPORT = re.compile(r'^import[ \t]+(?:[\w.]+[ \t]+)?"([^"\n]+)"|^import[ \t]*\(([^)]*)\)', re.M)
_GO_QUOTED = re.compile(r'"([^"\n]+)"')
_RUST_IMPORT = re.compile(
    r"^[ \t]*(?:pub(?:\([^)\n]*\))?[ \t]+)?(?:use[ \t]+([\w:]+)|mod[ \t]+(\w+)[ \t]*;)", re.M
)
_JAVA_IMPORT = re.compile(r"^import[ \t]+(?:static[ \t]+)?([\w.]+(?:\.\*)?)[ \t]*;", re.M)
_C_IMPORT = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"\n]+)[>"]', re.M)
_RUBY_IMPORT = re.compile(
    r"""^[ \t]*(require_relative|require|load)[ \t]*\(?[ \t]*['"]([^'"\n]+)['"]""", re.M
)
_STRIP_EXT = re.compile(
    r"\.(?:py|pyi|js|jsx|mjs|cjs|ts|tsx|mts|cts|go|rs|java|c|h|cc|cpp|cxx|hh|hpp|hxx|rb)$"
)


@functools.lru_cache(maxsize=65536)
def _parts(path: str) -> tuple[str, ...]:
    return tuple(p for p in _STRIP_EXT.sub("", path).split("/") if p and p != ".")


@functools.lru_cache(maxsize=65536)
def _joined(base: str, target: str) -> tuple[str, ...]:
    return _parts(posixpath.normpath(posixpath.join(base, target)))


def _relative(importer: str, target: str) -> tuple[str, ...]:
    return _joined(posixpath.dirname(importer), target)


_IMPORT_WORDS: dict[str, tuple[bytes, ...]] = {
    "python": (b"import",),
    "js": (b"import", b"require", b"from"),
    "go": (b"import",),
    "rust": (b"use ", b"mod "),
    "java": (b"import",),
    "c": (b"include",),
    "cpp": (b"include",),
    "ruby": (b"require", b"load"),
}


def import_region(path: str, head: bytes, lang: str | None = None) -> bytes:
    """The part of a file's head that can hold its imports: up to the line of the last import word.

    Imports sit at the top of a file, so this is usually a few hundred bytes; scanning it
    instead of the whole head makes the import pass over a large repository several times faster.
    """
    lang = lang or language_of(path)
    words = _IMPORT_WORDS.get(lang or "")
    if not words:
        return b""
    last = max(head.rfind(w) for w in words)
    if last < 0:
        return b""
    if lang == "go":
        block = head.find(b"import (")
        if block >= 0:
            close = head.find(b"\n)", block)
            last = max(last, close if close >= 0 else len(head))
    eol = head.find(b"\n", last)
    return head if eol < 0 else head[: eol + 1]


_NAME = re.compile(r"[^\W\d]\w*")
Targets = list[tuple[str, ...]]


def _py_imports(path: str, text: str) -> Targets:
    found: Targets = []
    package = tuple(path.split("/")[:-1])
    for m in _PY_IMPORT.finditer(text):
        if m.group("mods"):
            found.extend(
                tuple(mod.split()[0].split(".")) for mod in m.group("mods").split(",") if mod.strip()
            )
            continue
        src = m.group("from")
        dots = len(src) - len(src.lstrip("."))
        parts = tuple(p for p in src[dots:].split(".") if p)
        if dots:
            parts = package[: len(package) - (dots - 1)] + parts
        found.append(parts)
        # `from pkg import mod` names a module as often as a function: both are tried
        found.extend(parts + (name,) for name in _NAME.findall(m.group("names").replace(" as ", " , ")))
    return found


def _js_imports(path: str, text: str) -> Targets:
    return [_relative(path, t) if t.startswith(".") else _parts(t) for t in _JS_IMPORT.findall(text)]


def _go_imports(path: str, text: str) -> Targets:
    found: Targets = []
    for single, block in _GO_IMPORT.findall(text):
        found.extend(_parts(q) for q in ([single] if single else _GO_QUOTED.findall(block)))
    return found


def _rust_imports(path: str, text: str) -> Targets:
    found: Targets = []
    for use, mod in _RUST_IMPORT.findall(text):
        if mod:
            found.append(_relative(path, mod))
            continue
        segs = [s for s in use.split("::") if s]
        while segs and segs[0] in ("crate", "self", "super"):
            segs.pop(0)
        found.extend(tuple(segs[:i]) for i in range(1, len(segs) + 1))
    return found


def _java_imports(path: str, text: str) -> Targets:
    return [tuple(p for p in t.split(".") if p != "*") for t in _JAVA_IMPORT.findall(text)]


def _c_imports(path: str, text: str) -> Targets:
    return [_parts(t) for t in _C_IMPORT.findall(text)]


def _ruby_imports(path: str, text: str) -> Targets:
    return [
        _relative(path, t) if how == "require_relative" or t.startswith(".") else _parts(t)
        for how, t in _RUBY_IMPORT.findall(text)
    ]


_IMPORTERS = {
    "python": _py_imports,
    "js": _js_imports,
    "go": _go_imports,
    "rust": _rust_imports,
    "java": _java_imports,
    "c": _c_imports,
    "cpp": _c_imports,
    "ruby": _ruby_imports,
}


def imports(path: str, text: str, lang: str | None = None) -> Targets:
    """Import targets of a file as path components (``("pkg", "mod")``), unique, in order."""
    reader = _IMPORTERS.get(lang or language_of(path) or "")
    if reader is None:
        return []
    return [t for t in dict.fromkeys(reader(path, text)) if t]


_DIR_MODULE_STEMS = {"python": "__init__", "js": "index", "rust": "mod"}


def module_parts(path: str) -> tuple[str, ...]:
    """The components other files use to name this file's module (Go: its package directory)."""
    lang = language_of(path)
    parts = _parts(path)
    if lang == "go":
        return parts[:-1]
    if lang is not None and parts and parts[-1] == _DIR_MODULE_STEMS.get(lang):
        return parts[:-1]
    return parts
