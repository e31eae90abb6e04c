"""Secret detection and redaction, shared by checks, the capsule and notes.

Responsible for two questions, answered deterministically and cheaply:

* which spans of a text hold a credential (`find_secrets`, `contains_secret`), and the
  same text with each such value replaced by `[REDACTED:<kind>]` (`redact`,
  `redact_lines`), keeping everything around the value (`password=[REDACTED:password]`);
* which files are credential stores that must never be opened (`is_credential_filename`).

Two tiers of detection:

* **known credential formats**: tokens whose shape alone identifies them (GitHub, GitLab,
  OpenAI, Anthropic, AWS, Slack, Google, npm, Stripe, PyPI, Hugging Face, JWTs) and
  private key blocks. Near-zero false positives.
* **generic assignments**: `password=...`, `api_key: ...`, `Authorization: Bearer ...`,
  `scheme://user:pass@host`, where the value is a literal (not `${VAR}`, `os.environ[...]`,
  `<password>`, `changeme`, `****`). Heuristic: good enough to scrub a log excerpt, too
  loose to decide whether a whole document is sensitive.

`contains_secret` answers for known formats only: it decides whether a section of a
Markdown document may reach an agent at all, and documentation routinely shows
`password = hunter2`-style examples; refusing every such section would drop useful
instructions for no security gain. `redact` scrubs both tiers.

str and bytes are both accepted; bytes are matched as Latin-1 so that offsets are byte
offsets and `redact(bytes)` preserves every byte it does not replace. All patterns are
ASCII-only (`re.ASCII`): the same input gives the same answer everywhere.
"""

from __future__ import annotations

import bisect
import posixpath
import re
import sys
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import overload

__all__ = [
    "Finding",
    "contains_secret",
    "find_secrets",
    "is_credential_filename",
    "redact",
    "redact_file_lines",
    "redact_lines",
    "redact_stream",
    "secret_kinds",
]


@dataclass(frozen=True, slots=True)
class Finding:
    """One secret value: its kind, its [start, end) offsets and its 1-based line."""

    kind: str
    start: int
    end: int
    line: int


_FLAGS = re.ASCII | re.MULTILINE


class _Later:
    """A pattern compiled the first time it is used: most texts never reach the full patterns
    (the literals of the formats, or a quick pattern, find nothing in them), and compiling these
    three costs more than importing the rest of the module (~1, ~1 and ~4-8 ms): every command
    imports this module, a new capsule redacts its task with it."""

    __slots__ = ("pattern", "flags", "_rx")

    def __init__(self, pattern: str, flags: int) -> None:
        self.pattern, self.flags = pattern, flags
        self._rx: re.Pattern[str] | None = None

    def rx(self) -> re.Pattern[str]:
        got = self._rx
        if got is None:
            got = self._rx = re.compile(self.pattern, self.flags)
        return got

    def finditer(self, s: str, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[re.Match[str]]:
        return self.rx().finditer(s, pos, endpos)

    def fullmatch(self, s: str) -> re.Match[str] | None:
        return self.rx().fullmatch(s)

# --- private key blocks -----------------------------------------------------------------

_PEM_BEGIN = re.compile(r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----", _FLAGS)
_PEM_END = re.compile(r"-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----", _FLAGS)
# A real key has a base64 body; a sentence that merely names the header has none.
_PEM_BODY = re.compile(r"[A-Za-z0-9+/=]{16,}", _FLAGS)
_PEM_BODY_LONG = re.compile(r"[A-Za-z0-9+/=]{40,}", _FLAGS)
_PEM_BODY_LINE = re.compile(r"\s*(?:[A-Za-z0-9+/=]{16,}|[A-Za-z][A-Za-z-]*: \S.*)\s*$", _FLAGS)
_PEM_LOOKAHEAD = 240

# --- known credential formats ------------------------------------------------------------
# Each alternative is a named group: the group name (before any "__v") is the kind's key;
# an inner "<name>__v" group, when present, is the secret part of a longer match.

_W = r"A-Za-z0-9"
_FORMAT_PARTS = {
    "github_token": (
        rf"(?<![{_W}_])(?:gh[pousr]_[{_W}]{{36,251}}"
        rf"|github_pat_[{_W}]{{20,}}_[{_W}]{{20,}})(?![{_W}_])"
    ),
    "gitlab_token": rf"(?<![{_W}_-])glpat-[{_W}_-]{{20,}}(?![{_W}_-])",
    "anthropic_key": rf"(?<![{_W}_-])sk-ant-[{_W}_-]{{20,}}(?![{_W}_-])",
    "openai_key": (
        rf"(?<![{_W}_-])sk-(?:(?:proj|svcacct|admin)-[{_W}_-]{{20,}}(?![{_W}_-])"
        rf"|[{_W}]{{32,}}(?![{_W}_-]))"
    ),
    "aws_access_key_id": rf"(?<![{_W}])(?:AKIA|ASIA)[A-Z0-9]{{16}}(?![{_W}])",
    "aws_secret_key": (
        r"(?i:aws_?secret_?(?:access_?)?key|secret_?access_?key)"
        # `KEY=VALUE`, `KEY: VALUE`, and `aws configure set aws_secret_access_key VALUE`
        r"""(?:["']?\s*(?:=>|:=|[:=])\s*["']?|[ \t]+["']?)"""
        r"(?P<aws_secret_key__v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
    ),
    "slack_webhook": r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{10,}",
    "slack_token": (
        rf"(?<![{_W}_-])(?:xox[abeoprs](?:\.xox[a-z])?-[0-9]{{2,}}-[{_W}-]{{8,}}"
        rf"|xapp-[0-9]-[{_W}-]{{10,}})(?![{_W}_-])"
    ),
    "google_api_key": rf"(?<![{_W}_-])AIza[{_W}_-]{{35}}(?![{_W}_-])",
    "npm_token": rf"(?<![{_W}_])npm_[{_W}]{{36}}(?![{_W}_])",
    "stripe_key": (rf"(?<![{_W}_])(?:(?:sk|rk)_(?:live|test)_[{_W}]{{16,}}|whsec_[{_W}]{{24,}})(?![{_W}_])"),
    "pypi_token": rf"(?<![{_W}_-])pypi-AgEIcHlwaS5vcmc[{_W}_-]{{40,}}",
    "huggingface_token": rf"(?<![{_W}_])hf_[{_W}]{{34,}}(?![{_W}_])",
    "jwt": (rf"(?<![{_W}_-])eyJ[{_W}_-]{{8,}}\.eyJ[{_W}_-]{{8,}}\.[{_W}_-]{{8,}}(?![{_W}_-])"),
}
_FORMATS = _Later("|".join(f"(?P<{k}>{p})" for k, p in _FORMAT_PARTS.items()), _FLAGS)
# Every format match contains one of these literals ("secret" in any ASCII case), so the full
# patterns only run on the lines that hold one (no pattern spans lines). The lines are found by
# `bytes.find` over an ASCII copy of the text (`_hint_lines`), several times faster than `re`
# over the same literals; `_FORMATS_QUICK` is the same set as a pattern.
_FORMAT_HINTS = (
    "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "npm_", "sk_", "rk_", "whsec_", "hf_",
    "glpat-", "sk-", "xapp-", "pypi-", "AKIA", "ASIA", "AIza", "xox", "eyJ", "hooks.slack.com",
)
_FORMAT_HINTS_ANY_CASE = ("secret",)
_FORMATS_QUICK = re.compile(
    "|".join([*map(re.escape, _FORMAT_HINTS), *(f"(?i:{re.escape(h)})" for h in _FORMAT_HINTS_ANY_CASE)]),
    _FLAGS,
)

# --- generic assignments ------------------------------------------------------------------

_KEY_WORDS = (
    r"password|passwd|passphrase|secret|token|api[_-]?key|apikey"
    r"|(?:secret|access|auth|private|signing|encryption|master)[_-]?key"
)
_GENERIC_PARTS = {
    "url_password": (
        r"""(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@'"<>]+:"""
        r"""(?P<url_password__v>[^\s@/'"<>]+)@"""
    ),
    "auth_header": (
        r"""(?i:authorization)["']?\s*[:=]\s*["']?(?i:bearer|basic|token|bot)\s+"""
        r"(?P<auth_header__v>[A-Za-z0-9._~+/=-]{8,})"
    ),
    "assignment": (
        rf"(?<![A-Za-z0-9_.-])(?P<assignment__k>[A-Za-z0-9_.-]*?(?i:{_KEY_WORDS}))"
        r"""(?:\\?["'])?(?P<assignment__sep>\s*(?:=>|:=|[:=])\s*)"""
        r"""(?:"(?P<assignment__dq>[^"\n]*)"|'(?P<assignment__sq>[^'\n]*)'"""
        r"""|\\"(?P<assignment__eq>[^"\\\n]*)\\"|(?P<assignment__v>(?:[^\s"'`,;)\]}\\]|\\(?!["']))+))"""
    ),
    # A secret-named flag or argument, then its value after spaces: `--password VALUE`,
    # `aws configure set aws_session_token VALUE`, `git config pilot.token VALUE`.
    "spaced": (
        rf"(?<![A-Za-z0-9_.-])(?P<spaced__k>-{{0,2}}[A-Za-z0-9_.-]*?(?i:{_KEY_WORDS}))[ \t]+"
        r"""(?:"(?P<spaced__dq>[^"\n]*)"|'(?P<spaced__sq>[^'\n]*)'|(?P<spaced__v>[^\s"'`,;)\]}]+))"""
    ),
}
_GENERIC = _Later("|".join(f"(?P<{k}>{p})" for k, p in _GENERIC_PARTS.items()), _FLAGS)
_GENERIC_QUICK = re.compile(
    r"""(?i:pass(?:word|wd|phrase)|secret|token|key)(?:\\?["']?\s*[:=]|[ \t]+[^\s-])|://|(?i:authorization)""",
    _FLAGS,
)

_PLACEHOLDERS = frozenset(
    (
        "changeme change_me change-me changeit password passwd secret token none null nil"
        " true false undefined example redacted required optional string str empty todo tbd"
        " placeholder dummy notset not_set unset default pass pw pwd foo bar baz"
        # type annotations: `password: str`, `api_key: SecretStr`
        " bytes int bool any object number secretstr secretbytes"
        # what a log says about a secret it does not show: `DB_PASSWORD: missing`
        " missing invalid expired provided found ok valid present absent hidden masked configured"
        " ignored skipped not blank given supplied defined unavailable"
    ).split()
)
_PLACEHOLDER_SHAPE = _Later(
    r"your[_-].*|.*[_-]here|(.)\1*|<.*>|\[.*\]|\{.*\}|%\w+%|.*(?:\.\.\.|…)",
    re.ASCII | re.IGNORECASE | re.DOTALL,
)
# An unquoted value that reads like code rather than a literal: `self.token`,
# `process.env.TOKEN` (calls and subscripts are caught by their bracket).
_DOTTED_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+", re.ASCII)
_IDENTIFIER = re.compile(r"[A-Za-z]+_\w+|[a-z]+[A-Z]\w+", re.ASCII)
_VARIABLE_SUFFIXES = ("password", "passwd", "passphrase", "secret", "token", "key")
_VARIABLE_NAMES = frozenset("value val v pw pwd p s x data arg args new old result res".split())
_TYPE_NAME = re.compile(r"(?:[A-Z][a-z0-9]+){2,}", re.ASCII)  # `token: AccessToken`
_WORDS_NAME = re.compile(r"[a-z]+(?:[_.][a-z]+)+", re.ASCII)  # `"next_token"`, `"db.password"`
# After a colon ("token: expired" is prose) an unquoted value counts only when it looks
# random (letters and digits, at least 8) or when the line is a `key: value` line.
_SECRETISH = re.compile(r"(?=.*[A-Za-z])(?=.*[0-9]).{8,}", re.ASCII)
_REDACTED_PREFIX = "[REDACTED"
# A key written as a variable (`DB_PASSWORD`, `aws_secret_access_key`, `pilot.token`), not a word
# of prose (`token`, `Password`): after it, `:` or a space introduces a value.
_VARIABLE_KEY = re.compile(r"-*[A-Za-z0-9]+(?:[_.-]+[A-Za-z0-9]+)+|[A-Z0-9_]*[A-Z][A-Z0-9_]*", re.ASCII)
# A flag's documented argument (`--password TEXT`, `--token TOKEN`), not its value.
_METAVAR = re.compile(r"[A-Z][A-Z_-]*", re.ASCII)

_KIND_NAMES = {
    "github_token": "github-token",
    "gitlab_token": "gitlab-token",
    "anthropic_key": "anthropic-key",
    "openai_key": "openai-key",
    "aws_access_key_id": "aws-access-key-id",
    "aws_secret_key": "aws-secret-key",
    "slack_webhook": "slack-webhook",
    "slack_token": "slack-token",
    "google_api_key": "google-api-key",
    "npm_token": "npm-token",
    "stripe_key": "stripe-key",
    "pypi_token": "pypi-token",
    "huggingface_token": "huggingface-token",
    "jwt": "jwt",
    "url_password": "url-password",
    "auth_header": "auth-header",
}

_Span = tuple[int, int, str]


def find_secrets(text: str | bytes) -> list[Finding]:
    """Every secret in `text`, in order of position, non-overlapping.

    Offsets index `text` itself (byte offsets for bytes). Where two detections overlap,
    a private key block beats a known format, which beats a generic assignment.
    """
    s = _as_str(text)
    return _with_lines(s, _resolve(s, generic=True))


def contains_secret(text: str | bytes) -> bool:
    """True when `text` holds a private key block or a token in a known credential format.

    Generic `password=...` assignments do not count here (see the module docstring).
    """
    s = _as_str(text)
    if "PRIVATE KEY" in s and _pem_spans(s):
        return True
    return any(_format_spans(s))


def secret_kinds(text: str | bytes) -> list[str]:
    """The kinds (never the values) of the secrets `contains_secret` counts in `text`, sorted:
    what a withheld section can be named with."""
    s = _as_str(text)
    spans = (_pem_spans(s) if "PRIVATE KEY" in s else []) + _format_spans(s)
    return sorted({kind for _, _, kind in spans})


@overload
def redact(text: str) -> str: ...
@overload
def redact(text: bytes) -> bytes: ...
def redact(text: str | bytes) -> str | bytes:
    """`text` with every secret value replaced by `[REDACTED:<kind>]`; idempotent."""
    s = _as_str(text)
    spans = _resolve(s, generic=True)
    if not spans:
        return text
    parts: list[str] = []
    pos = 0
    for start, end, kind in spans:
        parts.append(s[pos:start])
        parts.append(f"[REDACTED:{kind}]")
        pos = end
    parts.append(s[pos:])
    out = "".join(parts)
    if isinstance(text, bytes):
        return out.encode("latin-1")
    return out


def redact_lines(lines: list[str]) -> list[str]:
    """Redact a list of lines, keeping one output line per input line.

    A private key block spread over lines becomes one `[REDACTED:private-key]` per line it
    covered, so that line numbers and counts stay true (a log excerpt relies on them).
    """
    return list(redact_stream(lines))


def redact_stream(lines: Iterable[str]) -> Iterator[str]:
    """`redact_lines` over any iterable, holding at most three lines at a time (a log of any size
    is shown in bounded memory). Lines come without their line endings."""
    it = iter(lines)
    window: deque[str] = deque(islice(it, 3))
    in_block = False
    while window:
        line = window.popleft()
        window.extend(islice(it, 2 - len(window)) if len(window) < 2 else ())
        if in_block:
            end = _PEM_END.search(line)
            if end is None:
                yield "[REDACTED:private-key]"
                continue
            in_block = False
            yield "[REDACTED:private-key]" + redact(line[end.end() :])
            continue
        begin = _PEM_BEGIN.search(line) if "PRIVATE KEY" in line else None
        if begin is not None and _PEM_END.search(line, begin.end()) is None:
            if _opens_key_block(line[begin.end() :], list(window)):
                in_block = True
                yield redact(line[: begin.start()]) + "[REDACTED:private-key]"
                continue
        yield redact(line)


def redact_file_lines(data: Iterable[bytes]) -> Iterator[bytes]:
    """The lines of a binary file (line endings kept), redacted; bytes that are no secret are
    kept exactly (matched as Latin-1)."""
    endings: deque[bytes] = deque()

    def texts() -> Iterator[str]:
        for raw in data:
            body = raw.rstrip(b"\r\n")
            endings.append(raw[len(body):])
            yield body.decode("latin-1")

    for text in redact_stream(texts()):
        yield text.encode("latin-1") + endings.popleft()


# --- credential file names ------------------------------------------------------------------

_CREDENTIAL_NAMES = frozenset(
    (
        ".envrc .netrc _netrc .npmrc .pypirc .git-credentials .pgpass .htpasswd .dockercfg"
        " .vault-token .s3cfg .boto .my.cnf credentials secring.gpg"
    ).split()
)
_CREDENTIAL_SUFFIXES = tuple(
    ".env .pem .key .p12 .pfx .jks .keystore .bks .p8 .ppk .kdbx .kdb .keychain .keychain-db".split()
)
_ENV_TEMPLATE_SUFFIXES = (".example", ".sample", ".template", ".dist", ".tmpl", ".tpl")
_DATA_EXTENSIONS = ("", *".json .yaml .yml .toml .ini .cfg .conf .xml .csv .txt .properties .env".split())
_SSH_KEY = re.compile(r"id_(?:rsa|dsa|ecdsa|ed25519)(?:_sk)?(?:[._-].*)?", re.ASCII)


def is_credential_filename(path: str) -> bool:
    """True for files that hold credentials by convention and must never be opened.

    Matches the base name, case-insensitively. Decisions: `.envrc` counts (direnv files
    export tokens); `.env.example`-style templates and `*.pub` public keys do not (they are
    meant to be shared, and their text still goes through `redact`); `credentials*` and
    `*secret*` count only with no extension or a data extension, so `credentials.py` and
    `test_secrets.py` (code about credentials) stay readable.
    """
    name = path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1].lower()
    if not name:
        return False
    if name in _CREDENTIAL_NAMES:
        return True
    if name == ".env" or name.startswith(".env."):
        return not name.endswith(_ENV_TEMPLATE_SUFFIXES)
    if name.endswith(_CREDENTIAL_SUFFIXES):
        return not name.endswith(_ENV_TEMPLATE_SUFFIXES)
    if _SSH_KEY.fullmatch(name):
        return not name.endswith(".pub")
    stem, ext = posixpath.splitext(name)
    if ext not in _DATA_EXTENSIONS:
        return False
    return (
        stem.startswith("credentials")
        or "secret" in stem
        or stem.startswith(("service-account", "service_account", "serviceaccount"))
    )


# --- internals --------------------------------------------------------------------------------


def _as_str(text: str | bytes) -> str:
    # Latin-1 maps each byte to one code point: byte offsets survive, and so do bytes
    # that are not UTF-8. Every pattern is ASCII, so matching is unaffected.
    return text.decode("latin-1") if isinstance(text, bytes) else text


def _resolve(s: str, *, generic: bool) -> list[_Span]:
    """Non-overlapping secret spans, higher tiers first, returned in position order."""
    taken: list[_Span] = []
    tiers: list[list[_Span]] = [_pem_spans(s) if "PRIVATE KEY" in s else [], _format_spans(s)]
    if generic:
        tiers.append(_generic_spans(s))
    for tier in tiers:
        for span in tier:
            i = bisect.bisect_left(taken, span)
            if i > 0 and taken[i - 1][1] > span[0]:
                continue
            if i < len(taken) and taken[i][0] < span[1]:
                continue
            taken.insert(i, span)
    return taken


def _pem_spans(s: str) -> list[_Span]:
    spans: list[_Span] = []
    pos = 0
    while (begin := _PEM_BEGIN.search(s, pos)) is not None:
        end = _PEM_END.search(s, begin.end())
        if end is not None and _PEM_BODY.search(s, begin.end(), end.start()):
            spans.append((begin.start(), end.end(), "private-key"))
            pos = end.end()
            continue
        if end is None and _PEM_BODY_LONG.search(s, begin.end(), begin.end() + _PEM_LOOKAHEAD):
            # A truncated block (a log cut short): everything after it may be key material.
            spans.append((begin.start(), len(s), "private-key"))
            break
        pos = begin.end()
    return spans


def _opens_key_block(rest: str, following: list[str]) -> bool:
    if _PEM_BODY_LONG.search(rest):
        return True
    return bool(following) and bool(_PEM_BODY_LINE.match(following[0]))


def _scan(s: str, quick: re.Pattern[str], full: _Later) -> Iterator[re.Match[str]]:
    """Matches of `full`, searched only on the lines where `quick` hits."""
    pos = 0
    while (hit := quick.search(s, pos)) is not None:
        start = s.rfind("\n", 0, hit.start()) + 1
        end = s.find("\n", hit.end())
        end = len(s) if end < 0 else end
        yield from full.finditer(s, start, end)
        pos = end + 1


def _hint_lines(s: str, hints: Iterable[str], any_case: Iterable[str]) -> Iterator[tuple[int, int]]:
    """(start, end) of each line of ``s`` that holds one of ``hints`` (or of ``any_case`` in any
    ASCII case), in order: the lines where ``_scan``'s quick pattern of these literals hits. The
    search runs over ``s`` as ASCII bytes, every other character a "?" (one byte for one
    character: the same offsets; no hint holds a "?"), and over their lower case."""
    raw = s.encode("ascii", "replace")
    low = raw.lower()
    starts: set[int] = set()
    searches = [(raw, w.encode("ascii")) for w in hints] + [(low, w.lower().encode("ascii")) for w in any_case]
    for text, needle in searches:
        at = text.find(needle)
        while at >= 0:
            starts.add(raw.rfind(b"\n", 0, at) + 1)
            end = raw.find(b"\n", at)
            if end < 0:
                break
            at = text.find(needle, end + 1)  # (the rest of this line is already taken)
    for start in sorted(starts):
        end = raw.find(b"\n", start)
        yield start, len(s) if end < 0 else end


def _format_spans(s: str) -> list[_Span]:
    spans: list[_Span] = []
    for line_start, line_end in _hint_lines(s, _FORMAT_HINTS, _FORMAT_HINTS_ANY_CASE):
        for m in _FORMATS.finditer(s, line_start, line_end):
            name = m.lastgroup or ""
            value = m.groupdict().get(f"{name}__v")
            start, end = m.span(f"{name}__v") if value is not None else m.span()
            spans.append((start, end, _KIND_NAMES[name]))
    return spans


def _generic_spans(s: str) -> list[_Span]:
    spans: list[_Span] = []
    for m in _scan(s, _GENERIC_QUICK, _GENERIC):
        name = m.lastgroup or ""
        if name in ("assignment", "spaced"):
            span = _assignment_span(m, s) if name == "assignment" else _spaced_span(m)
            if span is not None:
                spans.append(span)
            continue
        value = m.group(f"{name}__v")
        if _is_literal(value):
            start, end = m.span(f"{name}__v")
            spans.append((start, end, _KIND_NAMES[name]))
    return spans


def _assignment_span(m: re.Match[str], s: str) -> _Span | None:
    key = m.group("assignment__k")
    for group in ("assignment__dq", "assignment__sq", "assignment__eq"):
        quoted = m.group(group)
        if quoted is not None:
            if not _is_literal(quoted) or _names_a_value(quoted, key):
                return None
            start, end = m.span(group)
            return (start, end, _assignment_kind(key))
    value = m.group("assignment__v")
    spaced = m.group("assignment__sep") != m.group("assignment__sep").strip()
    if not _is_literal(value) or _looks_like_code(value, key, spaced):
        return None
    if m.group("assignment__sep").strip() == ":":
        if not (_SECRETISH.fullmatch(value) or _VARIABLE_KEY.fullmatch(key) or _is_key_value_line(s, m)):
            return None
    if value.startswith(("=", ">", "-", "&", "|")):
        return None
    start, end = m.span("assignment__v")
    return (start, end, _assignment_kind(key))


def _spaced_span(m: re.Match[str]) -> _Span | None:
    """A value after a secret-named flag or argument and spaces. After a flag (`--password`) any
    literal counts but a metavar; after a bare argument only one written as a variable
    (`aws_session_token`, not the word `token` in a sentence), with a value quoted or random-looking."""
    key = m.group("spaced__k")
    flag = key.startswith("-")
    if not flag and not _VARIABLE_KEY.fullmatch(key):
        return None
    for group in ("spaced__dq", "spaced__sq", "spaced__v"):
        value = m.group(group)
        if value is None:
            continue
        if not _is_literal(value) or _names_a_value(value, key.lstrip("-")) or value.startswith("-"):
            return None
        if group == "spaced__v" and ("(" in value or "[" in value or _DOTTED_NAME.fullmatch(value)):
            return None
        if flag and _METAVAR.fullmatch(value):
            return None
        if not flag and group == "spaced__v" and not _SECRETISH.fullmatch(value):
            return None
        start, end = m.span(group)
        return (start, end, _assignment_kind(key))
    return None


def _is_literal(value: str) -> bool:
    """False for empty values, variable references, placeholders and masks."""
    v = value.strip()
    if not v or v.startswith(_REDACTED_PREFIX):
        return False
    if v.startswith(("$", "${", "#{", "@{")):
        return False
    if v.casefold() in _PLACEHOLDERS:
        return False
    return _PLACEHOLDER_SHAPE.fullmatch(v) is None


def _looks_like_code(value: str, key: str, spaced: bool) -> bool:
    """True for an unquoted value that reads as code: a call, a subscript, an attribute, a
    type, or (around a spaced `=`) a variable name (`password = db_password`)."""
    if "(" in value or "[" in value:
        return True
    if _DOTTED_NAME.fullmatch(value) and not value[-1].isdigit():
        return True
    if _names_a_value(value, key) or _TYPE_NAME.fullmatch(value):
        return True
    if not spaced:  # `password=hunter2` on a command line or in an env file is a literal
        return False
    return _IDENTIFIER.fullmatch(value) is not None or value.casefold() in _VARIABLE_NAMES


def _names_a_value(value: str, key: str) -> bool:
    """`password = password`, `token: "next_token"`, `PASSWORD = "PASSWORD"`: a name, not a value."""
    v = value.strip().casefold().replace("-", "_")
    k = key.casefold().replace("-", "_")
    if v == k or v == k.rsplit(".", 1)[-1].lstrip("_") or _WORDS_NAME.fullmatch(v):
        return True
    return _IDENTIFIER.fullmatch(value) is not None and v.endswith(_VARIABLE_SUFFIXES)


def _is_key_value_line(s: str, m: re.Match[str]) -> bool:
    """True when the match is a whole `key: value` line (YAML, HTTP headers, INI-ish)."""
    line_start = s.rfind("\n", 0, m.start()) + 1
    line_end = s.find("\n", m.end())
    before = s[line_start : m.start()].strip(" \t-#\"'")
    after = s[m.end() : len(s) if line_end < 0 else line_end].strip()
    return before == "" and after == ""


def _assignment_kind(key: str) -> str:
    k = key.casefold()
    if k.endswith(("password", "passwd", "passphrase")):
        return "password"
    if k.endswith("token"):
        return "token"
    if k.endswith(("api_key", "api-key", "apikey")):
        return "api-key"
    if k.endswith("key"):
        return "secret-key"
    return "secret"


def _with_lines(s: str, spans: list[_Span]) -> list[Finding]:
    findings: list[Finding] = []
    line = 1
    pos = 0
    for start, end, kind in spans:
        line += s.count("\n", pos, start)
        pos = start
        findings.append(Finding(kind, start, end, line))
    return findings
