"""Words and identifiers: the token normalization the selector scores with, and what a task names.

Tokens are lowercase, split at camelCase and snake/kebab boundaries, lightly stemmed
("running" -> "run", "configuration" -> "configur") and stripped of stop words; a compound
identifier also yields itself whole ("build_capsule"). Task identifiers are the exact names a
task gives: backticked spans, CamelCase, snake_case, ``call()`` forms, paths, flags and
numbered references ("Phase 5", "D12", "#123"), each with the pattern that finds it in a
section.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from itertools import chain

_WORD = re.compile(r"\w+(?:['’]\w+)*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_STOP = frozenset(
    """a an and are as at be been being but by can could did do does doing done for from had has
    have having he her here hers him his how i if in into is it its itself just let me more most my
    no nor not of off on once only or other our ours out over own same she should so some such than
    that the their theirs them then there these they this those through to too under until up very
    was we were what when where which while who whom why will with would you your yours also any
    all each few both either may might must shall us via per etc eg ie e.g i.e get got gets make
    makes made use used uses using need needs needed want wants please like way ways thing things
    something anything now still already currently instead rather whether within without across
    about above after again against before below between during further s t don doesn isn aren
    wasn weren won wouldn shouldn couldn can't don't doesn't isn't it's i'm we're they're
    one two new old""".split()
)
# Common suffixes, longest first; the stem keeps at least three letters.
_SUFFIXES = (
    ("ational", "ate"),
    ("ization", "ize"),
    ("isation", "ize"),
    ("fulness", "ful"),
    ("iveness", "ive"),
    ("ations", "at"),
    ("ation", "at"),
    ("ments", ""),
    ("ment", ""),
    ("ness", ""),
    ("ingly", ""),
    ("edly", ""),
    ("ings", ""),
    ("ing", ""),
    ("ies", "y"),
    ("ied", "y"),
    ("ers", "er"),
    ("ed", ""),
    ("es", ""),
    ("ly", ""),
    ("s", ""),
)
_KEEP_ENDINGS = ("ss", "us", "is")


def stem(word: str) -> str:
    """A light, deterministic stem: enough to match "tests"/"testing"/"tested" to "test"."""
    if len(word) <= 3 or not word.isalpha():
        return word
    for suffix, repl in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) + len(repl) >= 3:
            if suffix == "s" and word.endswith(_KEEP_ENDINGS):
                return word
            if suffix == "es" and not word.endswith(("ches", "shes", "sses", "xes", "zes")):
                continue
            base = word[: -len(suffix)] + repl
            if (
                suffix in ("ing", "ings", "ed")
                and len(base) > 3
                and base[-1] == base[-2]
                and base[-1] not in "lsz"
            ):
                base = base[:-1]
            return _strip_e(base)
    return _strip_e(word)


def _strip_e(word: str) -> str:
    # "configure"/"configur(ation)", "cache"/"cach(ing)", "validat(e)"/"valid(ation)".
    if len(word) > 4 and word.endswith("e"):
        word = word[:-1]
    if len(word) > 5 and word.endswith("at"):
        word = word[:-2]
    return word


class _Memo(dict[str, tuple[str, ...]]):
    """The tokens of the words seen so far; looking up another word tokenizes it (and keeps it
    while the memo is not full)."""

    def __missing__(self, word: str) -> tuple[str, ...]:
        return word_tokens(word)


_CACHE = _Memo()


def word_tokens(word: str) -> tuple[str, ...]:
    """The tokens of one word-like run (memoised: the same words recur across a documentation tree)."""
    got = _CACHE.get(word)
    if got is not None:
        return got
    parts = [p for p in re.split(r"[_'’]+", word) if p]
    pieces: list[str] = []
    for part in parts:
        pieces.extend(_CAMEL.findall(part) or [part])
    out: list[str] = []
    for piece in pieces:
        low = piece.lower()
        if low in _STOP or (len(low) < 2 and not low.isdigit()):
            continue
        out.append(stem(low))
    if len(pieces) > 1:
        out.append(word.lower().strip("_"))
    result = tuple(out)
    if len(_CACHE) < 200_000:
        _CACHE[word] = result
    return result


# Abbreviations that documentation and tasks use both ways ("E2E tests", "end-to-end tests"):
# the spelled-out form also counts as the abbreviation, so either side matches the other.
_LONG_FORMS = (
    ("e2e", r"end[- ]to[- ]end"),
    ("ci", r"continuous[- ]integration"),
    ("i18n", r"internationali[sz]ation"),
    ("l10n", r"locali[sz]ation"),
    ("a11y", r"accessibility"),
    ("k8s", r"kubernetes"),
)
_LONG_RX = re.compile("|".join(rf"(?P<{abbr}>\b{rx}\b)" for abbr, rx in _LONG_FORMS), re.I)


# A word every spelled-out form holds: an ASCII text whose lower case has none has none of them
# (outside ASCII, case-insensitive matching is wider than ``str.lower``: "ı" matches "i").
_LONG_HINTS = ("end", "continuous", "internationali", "locali", "accessibility", "kubernetes")


def long_form_words(text: str) -> list[str]:
    """The abbreviation of every spelled-out form in ``text`` ("end-to-end" gives "e2e")."""
    if text.isascii():  # (a look at the string's kind; the hints are much cheaper than the pattern)
        low = text.lower()
        if not any(hint in low for hint in _LONG_HINTS):
            return []
    return [str(m.lastgroup) for m in _LONG_RX.finditer(text)]


def tokens(text: str) -> list[str]:
    """Every normalized token of ``text``, in order (abbreviations of spelled-out forms last)."""
    out: list[str] = []
    for word in _WORD.findall(text):
        out.extend(word_tokens(word))
    for word in long_form_words(text):
        out.extend(word_tokens(word))
    return out


def token_counts(text: str) -> Counter[str]:
    """How often each normalized token occurs in ``text``, in the order of first occurrence (the
    tokens of each word looked up in the memo, which tokenizes a word it does not hold, and
    counted in one pass of C code)."""
    return Counter(chain.from_iterable(map(_CACHE.__getitem__, _WORD.findall(text))))


# --- identifiers a task names ----------------------------------------------------------------


@dataclass(frozen=True)
class Identifier:
    """Something the task names exactly, and the pattern that finds it in a section."""

    kind: str  # "code", "camel", "snake", "call", "path", "flag", "ref"
    text: str
    pattern: str  # a regex, compiled case-insensitively

    def regex(self) -> re.Pattern[str]:
        return re.compile(self.pattern, re.IGNORECASE)


_BACKTICK = re.compile(r"`([^`\n]{1,120})`")
_CAMEL_ID = re.compile(
    r"(?<![\w./-])(?:[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+)(?![\w])"
)
_SNAKE_ID = re.compile(r"(?<![\w./-])[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+(?![\w])")
_CALL = re.compile(r"(?<![\w.])([A-Za-z_][\w.]*)\((?:[^()\n]{0,60})\)")
_PATH = re.compile(
    r"(?<![\w@:/.-])(?:\.{0,2}/)?(?:[\w.-]+/)+[\w.-]*|(?<![\w/.-])[\w-]+\.[A-Za-z][A-Za-z0-9]{0,5}(?![\w/])"
)
_FLAG = re.compile(r"(?<![\w-])--[A-Za-z][\w-]*(?:=\S+)?")
_REF_WORD = re.compile(
    r"\b(phase|step|stage|milestone|part|chapter|task|issue|pr|pull request|rfc|adr|decision|level|tier|"
    r"version|requirement|req|story|epic|ticket|bug|item|rule)\s*#?\s*(\d+(?:\.\d+)*[a-z]?)\b",
    re.IGNORECASE,
)
_REF_CODE = re.compile(r"(?<![\w#/.-])([A-Z]{1,5})-?(\d{1,5})(?![\w])")
_REF_HASH = re.compile(r"(?<![\w&])#(\d{1,6})\b")
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE)
FILE_EXTENSIONS = frozenset(
    """md mdx rst txt py pyi js mjs cjs ts tsx jsx json jsonc toml yaml yml ini cfg conf lock html
    css scss c h cc cpp hpp rs go java kt kts swift rb php sh bash zsh ps1 sql xml gradle proto
    tf lua ex exs erl hs ml scala cs fs vue svelte dart r jl nix env example tmpl tpl""".split()
)
_COMMON_EXT_WORDS = frozenset({"e.g", "i.e", "etc", "vs", "a.k.a"})


def literal(text: str) -> str:
    """A pattern for ``text`` as a whole name: not part of a longer identifier."""
    head = r"(?<![\w])" if re.match(r"\w", text) else ""
    tail = r"(?![\w])" if re.search(r"\w$", text) else ""
    return head + re.escape(text) + tail


# Names that stand for any name in an example ("a call like `foo()`"): they name nothing.
_PLACEHOLDER_NAMES = frozenset("foo bar baz qux quux corge foobar spam eggs ham xyz".split())


def identifiers(task: str) -> list[Identifier]:
    """What the task names exactly, deduplicated (case-insensitively), in a stable order."""
    found: dict[str, Identifier] = {}

    def add(kind: str, text: str, pattern: str | None = None) -> None:
        text = text.strip()
        if len(text) < 2 or text.lower() in found or text.lower() in _PLACEHOLDER_NAMES:
            return
        found[text.lower()] = Identifier(kind, text, pattern or literal(text))

    plain = _URL.sub(" ", task)
    for m in _BACKTICK.finditer(plain):
        _add_code(add, m.group(1))
    for m in _CALL.finditer(plain):
        add("call", m.group(1).rsplit(".", 1)[-1])
    for m in _FLAG.finditer(plain):
        add("flag", m.group(0).split("=", 1)[0])
    for m in _PATH.finditer(plain):
        text = m.group(0)
        if "/" in text or text.rsplit(".", 1)[-1].lower() in FILE_EXTENSIONS:
            _add_path(add, text)
    for m in _CAMEL_ID.finditer(plain):
        add("camel", m.group(0))
    for m in _SNAKE_ID.finditer(plain):
        add("snake", m.group(0))
    for m in _REF_WORD.finditer(plain):
        word, num = m.group(1), m.group(2)
        add(
            "ref",
            f"{word} {num}",
            r"\b" + re.escape(word).replace(r"\ ", r"\s+") + r"\s*#?\s*" + re.escape(num) + r"(?![\w.]*\d)",
        )
    for m in _REF_CODE.finditer(plain):
        add(
            "ref",
            m.group(0),
            r"(?<![\w])" + re.escape(m.group(1)) + r"-?" + re.escape(m.group(2)) + r"(?![\w])",
        )
    for m in _REF_HASH.finditer(plain):
        add("ref", m.group(0), r"#" + m.group(1) + r"(?!\d)")
    return list(found.values())


_Add = Callable[..., None]


def _add_code(fn: _Add, span: str) -> None:
    span = span.strip()
    call = re.fullmatch(r"([A-Za-z_][\w.:]*)\(.*\)", span)
    if call:
        fn("call", call.group(1).replace("::", ".").rsplit(".", 1)[-1])
        return
    dotted = re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+", span)
    if dotted and span.rsplit(".", 1)[-1].lower() not in FILE_EXTENSIONS:
        # a dotted module or attribute: itself, its path form and its last part
        fn("code", span)
        fn("path", span.replace(".", "/"))
        fn("code", span.rsplit(".", 1)[-1])
        return
    if "/" in span or re.fullmatch(r"[\w.-]+\.[A-Za-z][A-Za-z0-9]{0,5}", span):
        _add_path(fn, span)
        return
    if span.startswith("-"):
        fn("flag", span.split("=", 1)[0].split()[0])
        return
    fn("code", span)


def _add_path(fn: _Add, raw: str) -> None:
    path = raw.strip().strip(".,;:'\"()[]")
    while path.startswith("./"):
        path = path[2:]
    if path.lower() in _COMMON_EXT_WORDS or len(path) < 3 or path.startswith("../"):
        return
    if re.fullmatch(r"\d+(\.\d+)+", path):  # a version number, not a file
        return
    fn("path", path.rstrip("/") if path.endswith("/") and len(path) > 1 else path)
    base = path.rstrip("/").rsplit("/", 1)[-1]
    if base and base != path.rstrip("/") and len(base) >= 3:
        fn("path", base)


def named_paths(ids: list[Identifier]) -> list[str]:
    """The path-like names among the identifiers (paths, dotted modules as paths)."""
    return sorted({i.text.strip("/") for i in ids if i.kind == "path" and i.text.strip("/")})
